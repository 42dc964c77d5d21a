"""Silver's Iceberg tables through Iceberg's Java API, where Spark SQL has no statement for the job
or answers it with a Spark job: a row delta of delete files the job wrote itself and of data files
Spark wrote without a commit (icetide_glue.position_deletes, icetide_glue.unpublished_files), a
walk up main's snapshots for a run's commit (icetide_glue.silver.find_committed_run), and main's
head (icetide_glue.silver.main_snapshot_id).

The table comes from the session's catalog (``Spark3Util.loadIcebergTable``), the one every Spark
read and write of the table goes through, so both see the same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import SparkSession

from icetide_glue.errors import IcetideJobError


def jvm(spark: SparkSession) -> Any:
    """The session's JVM (py4j's view of it)."""
    java = spark.sparkContext._jvm
    if java is None:
        raise IcetideJobError("the Spark session has no JVM")
    return java


def iceberg_table(spark: SparkSession, sql_name: str, refreshed: bool = False) -> Any:
    """The Iceberg ``Table`` behind ``sql_name`` (catalog.database.table, quoted as in SQL).
    ``refreshed``: re-read its metadata first, as the catalog may hold it as it was before another
    process committed."""
    table = jvm(spark).org.apache.iceberg.spark.Spark3Util.loadIcebergTable(spark._jsparkSession, sql_name)
    if refreshed:
        table.refresh()
    return table


def java_list(spark: SparkSession, values: Sequence[str]) -> Any:
    """``values`` as a ``java.util.List`` of strings, for Java API arguments."""
    listed = jvm(spark).java.util.ArrayList()
    for value in values:
        listed.add(value)
    return listed
