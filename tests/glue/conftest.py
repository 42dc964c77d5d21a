"""Fixtures of the Glue job tests: ONE local SparkSession with Iceberg for the whole session.

Each test writes its own tiny bronze folder and uses its own silver table, so tests share the
session and the warehouse without sharing state.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from glue.names import CATALOG, SILVER_DATABASE
from icetide_glue.arguments import JobArguments, LoadMode
from icetide_glue.job import run_job

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
def load_run(spark: SparkSession) -> LoadRun:
    """Run the job on a bronze folder into ``silver.<table>`` of the test warehouse."""

    def load(
        table: str,
        run_id: str,
        bronze: Path,
        keys: tuple[str, ...] = ("id",),
        load_mode: LoadMode = LoadMode.MERGE,
        watermark_column: str | None = None,
        manifest_uri: str | None = None,
    ) -> dict[str, Any]:
        arguments = JobArguments(
            target_table=f"{SILVER_DATABASE}.{table}",
            run_id=run_id,
            bronze_uri=str(bronze),
            primary_keys=keys,
            load_mode=load_mode,
            watermark_column=watermark_column,
            manifest_uri=manifest_uri,
            catalog=CATALOG,
        )
        return run_job(spark, arguments)

    return load
