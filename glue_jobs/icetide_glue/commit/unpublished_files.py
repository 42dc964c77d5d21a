"""Data files written into a table's location by Spark's Iceberg writer but not committed: the job
commits them itself, in the same Iceberg commit as its position deletes (icetide_glue.merge.position_deletes).

A run that both removes rows and appends rows must publish the two as one new state of main. A
Spark append commits on its own; staging both commits on a branch and publishing the branch by
a fast-forward would cost three more metadata commits, and the append could start only after the
delete files were written. Iceberg's Spark writer can instead hand its files to Iceberg's
``FileRewriteCoordinator`` (the write option ``rewritten-file-scan-task-set-id``, which Iceberg's own
``rewrite_data_files`` uses): the files are written exactly as an append writes them (the table's
schema, sort order, file size and metrics), nothing is committed, and the job adds them to its
``RowDelta``. So the append can be written while the delete files are, and one commit publishes
both. Files written by a run that then fails are in no snapshot: orphans, which maintenance's
orphan removal deletes.
"""

from __future__ import annotations

import uuid
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.readwriter import DataFrameWriterV2

from icetide_glue.errors import IcetideJobError
from icetide_glue.iceberg_tables import iceberg_table, jvm

# Iceberg's Spark write option (SparkWriteOptions.REWRITTEN_FILE_SCAN_TASK_SET_ID): the write's
# files go to the coordinator under this id instead of a commit.
UNCOMMITTED_FILE_SET_OPTION = "rewritten-file-scan-task-set-id"


def write_unpublished_data_files(
    spark: SparkSession, table_sql_name: str, writer: DataFrameWriterV2
) -> list[Any]:
    """Run ``writer`` (a ``writeTo`` of ``table_sql_name``, options set) without committing, and
    return the Iceberg ``DataFile`` objects it wrote, for the caller's own commit."""
    file_set = f"icetide-unpublished-{uuid.uuid4()}"
    coordinator = jvm(spark).org.apache.iceberg.spark.FileRewriteCoordinator.get()
    table = iceberg_table(spark, table_sql_name)
    try:
        writer.option(UNCOMMITTED_FILE_SET_OPTION, file_set).append()
        written = coordinator.fetchNewFiles(table, file_set)
        return list(written.toArray())
    finally:
        coordinator.clearRewrite(table, file_set)


def rows_of_data_files(data_files: list[Any]) -> int:
    """The rows ``data_files`` hold, by their metrics."""
    return sum(int(data_file.recordCount()) for data_file in data_files)


def check_rows_written(table_sql_name: str, data_files: list[Any], expected_rows: int) -> None:
    """Fail when the written files do not hold exactly ``expected_rows`` rows: nothing is
    committed then (a row lost between the labels and the write would vanish from silver)."""
    written = rows_of_data_files(data_files)
    if written != expected_rows:
        raise IcetideJobError(
            f"{table_sql_name}: the data files written hold {written} row(s), not the {expected_rows} "
            "the run's changes leave; nothing committed"
        )
