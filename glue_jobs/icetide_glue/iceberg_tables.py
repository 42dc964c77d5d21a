"""Silver's Iceberg tables through Iceberg's Java API, where Spark SQL has no statement for the job
or answers it with a Spark job: a row delta of delete files the job wrote itself and of data files
Spark wrote without a commit (icetide_glue.merge.position_deletes, icetide_glue.commit.unpublished_files), a
walk up main's snapshots for a run's commit (icetide_glue.silver.find_committed_run), main's
head (icetide_glue.silver.main_snapshot_id), and whether any data file may hold rows of a kind
(:func:`data_files_may_hold`).

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


def branch_snapshot_id(iceberg: Any, branch: str) -> int | None:
    """The snapshot id at the head of ``branch`` of an Iceberg table (None: no such branch yet)."""
    ref = iceberg.refs().get(branch)
    return None if ref is None else int(ref.snapshotId())


def every_spec_unpartitioned(iceberg: Any) -> bool:
    """Whether every partition spec the table has had is unpartitioned (its files may be written
    under any of them): the table's one spec asked alone when it has only one, as every table
    icetide creates does (walking the specs' map is ~5 calls to the JVM a spec)."""
    specs = iceberg.specs()
    if int(specs.size()) == 1:
        return bool(iceberg.spec().isUnpartitioned())
    return all(specs.get(spec_id).isUnpartitioned() for spec_id in specs.keySet())


def java_list(spark: SparkSession, values: Sequence[str]) -> Any:
    """``values`` as a ``java.util.List`` of strings, for Java API arguments."""
    listed = jvm(spark).java.util.ArrayList()
    for value in values:
        listed.add(value)
    return listed


def data_files_may_hold(
    spark: SparkSession, sql_name: str, condition: Any, snapshot_id: int | None = None
) -> bool:
    """Whether a live data file of ``sql_name`` in ``snapshot_id`` (None: its newest, the table
    refreshed first; no snapshot: False) may hold a row matching ``condition`` (an Iceberg
    ``Expression``), as its column bounds and null counts say: Iceberg's ``FindFiles``, a question
    to the data manifests on the driver (not the delete manifests a scan's planning also reads), no
    Spark job, stopping at the first such file. Delete files are not consulted: a file whose
    matching rows are all deleted still counts, so the answer may say yes needlessly, never no
    wrongly. A file without metrics for a column (written before it existed) counts as holding
    its nulls."""
    table = iceberg_table(spark, sql_name, refreshed=True)
    if snapshot_id is None:
        current = table.currentSnapshot()
        if current is None:
            return False
        snapshot_id = int(current.snapshotId())
    api = jvm(spark).org.apache.iceberg
    # ``in`` is a Python keyword: FindFiles.in(table) by name.
    finder = getattr(api.FindFiles, "in")(table).inSnapshot(snapshot_id)
    files = finder.withRecordsMatching(condition).collect()
    try:
        return bool(files.iterator().hasNext())
    finally:
        files.close()


def java_long(spark: SparkSession, value: int) -> Any:
    """``value`` as a ``java.lang.Long``: py4j sends an int within 32 bits as an ``Integer``, which
    Iceberg cannot take as a literal of a timestamp column (microseconds)."""
    return jvm(spark).java.lang.Long.valueOf(str(int(value)))
