"""Fixtures of the benchmark tests: the benchmark modules, and the process's one Spark session.

Only test_smoke.py, the Spark tier's one benchmark test, uses the session; the other files test the
benchmarks' pieces without Spark.

``benchmarks/`` is a folder of scripts, not a package: each module is loaded from its file. The
benchmark reuses an active session (``getOrCreate``) and leaves it running, so these tests share
the JVM with every other Spark test of the worker process instead of starting a second one.
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from pyspark.sql import SparkSession

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"
# As when a benchmark runs as a script: its folder first on the path, for the modules it imports
# from beside it (merge_cost imports one_process_floor).
if str(BENCHMARKS) not in sys.path:
    sys.path.insert(0, str(BENCHMARKS))


def load_benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as a module."""
    spec = importlib.util.spec_from_file_location(name, BENCHMARKS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is built
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def merge_cost() -> ModuleType:
    return load_benchmark("merge_cost")


@pytest.fixture(scope="session")
def one_process_floor() -> ModuleType:
    """Imported, not loaded from its file: the module merge_cost imports, one copy of it."""
    return importlib.import_module("one_process_floor")


@pytest.fixture(scope="session")
def values_hash_benchmark() -> ModuleType:
    return load_benchmark("values_hash")


@pytest.fixture(scope="session")
def table_maintenance() -> ModuleType:
    return load_benchmark("table_maintenance")


@pytest.fixture(scope="session")
def spark(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkSession]:
    from icetide_local.spark import local_spark_session

    session = local_spark_session(tmp_path_factory.mktemp("bench-warehouse"), catalog="bench_session")
    yield session
    session.stop()
