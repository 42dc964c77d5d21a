"""Fixtures of the benchmark tests: the benchmark module, and the process's one Spark session.

``benchmarks/`` is a folder of scripts, not a package: the module is loaded from its file. The
benchmark reuses an active session (``getOrCreate``) and leaves it running, so these tests share
the JVM with every other Spark test of the run instead of starting a second one.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pyspark.sql import SparkSession

BENCHMARK = Path(__file__).resolve().parents[2] / "benchmarks" / "merge_cost.py"


@pytest.fixture(scope="session")
def merge_cost() -> ModuleType:
    spec = importlib.util.spec_from_file_location("merge_cost", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from icetide_local.spark import local_spark_session

    session = local_spark_session(tmp_path_factory.mktemp("bench-warehouse"), catalog="bench_session")
    yield session
    session.stop()
