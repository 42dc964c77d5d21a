"""Fixtures of the Glue job tests: ONE local SparkSession with Iceberg for the whole session.

Each test writes its own tiny bronze folder and uses its own silver table, so tests share the
session and the warehouse without sharing state.
"""

from __future__ import annotations

import functools
import importlib
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import SparkSession

from glue.awsglue_fake import awsglue_installed
from glue.silver_tables import CATALOG, load_into_silver

LoadRun = Callable[..., dict[str, Any]]


@pytest.fixture(scope="session")
def warehouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("warehouse")


@pytest.fixture(scope="session")
def spark(warehouse: Path) -> Iterator[SparkSession]:
    from icetide_local.spark import local_spark_session

    session = local_spark_session(warehouse, catalog=CATALOG, app_name="icetide-tests")
    yield session
    session.stop()


@pytest.fixture
def load_run(spark: SparkSession, request: pytest.FixtureRequest) -> LoadRun:
    """``load_run(table, run_id, bronze, keys=..., ...)``: the job into the test warehouse, with
    the test module's ``MERGE_PLAN`` (``--merge_plan``; default auto) unless a call names one: a
    module testing the Spark path's own mechanics (its writes, threads, Spark jobs) says "spark",
    which a small batch would otherwise skip by merging on the driver."""
    return functools.partial(
        load_into_silver, spark, merge_plan=getattr(request.module, "MERGE_PLAN", "auto")
    )


@pytest.fixture
def glue_entrypoint() -> Iterator[ModuleType]:
    """``bronze_to_silver`` imported as on Glue, where ``awsglue`` exists."""
    with awsglue_installed():
        sys.modules.pop("bronze_to_silver", None)
        yield importlib.import_module("bronze_to_silver")
    sys.modules.pop("bronze_to_silver", None)


@pytest.fixture
def maintenance_entrypoint() -> Iterator[ModuleType]:
    """``maintain_silver`` imported as on Glue, where ``awsglue`` exists."""
    with awsglue_installed():
        sys.modules.pop("maintain_silver", None)
        yield importlib.import_module("maintain_silver")
    sys.modules.pop("maintain_silver", None)
