"""A keyed table's rows in the data files a batch's key ranges can touch, planned by Iceberg on the
driver and read by Spark with no filter in its plan.

Why not a ``WHERE`` on the ranges: Spark keeps a filter it pushed to Iceberg in its plan and tests
every row read against it (Iceberg does not promise to filter rows), and it compiles the filter's
numbers into the stage's generated Java code. Each batch has other ranges, so each run of a
process that runs several compiled the stage that reads silver anew and ran it slowly until the
JVM had compiled it again, a cost paid on every read of silver by a process that runs many merges
(docs/benchmarks/merge-cost.md). Here Iceberg plans the scan with the ranges (the
same skipping of files by their key bounds), the planned tasks are staged under an id (Iceberg's
``ScanTaskSetManager``, which its own rewrite procedures use the same way) and Spark reads exactly
those (read option ``scan-task-set-id``): a plan without the ranges, the same code every run.
No row filter is lost: the classification's semi join with the batch's keys drops every row
outside the batch (icetide_glue.merge.sql.rows_of_batch).

What Iceberg planned is logged (data and delete files, bytes, files skipped): a staged read
reports none of Iceberg's scan metrics to Spark.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.iceberg_tables import iceberg_table, jvm

logger = logging.getLogger(__name__)

# Iceberg's read option naming staged tasks (SparkReadOptions.SCAN_TASK_SET_ID).
SCAN_TASK_SET_ID = "scan-task-set-id"
# Iceberg's metadata columns a removal by position needs: the row's data file and position in it.
ROW_POSITION_COLUMNS = ("_file", "_pos")


@dataclass(frozen=True)
class PlannedScan:
    """What Iceberg planned for one read (its scan report): logged as the log record's ``scan``."""

    table: str
    data_files: int
    data_bytes: int
    skipped_data_files: int
    delete_files: int
    delete_bytes: int


@contextmanager
def rows_in_key_ranges(
    spark: SparkSession,
    sql_name: str,
    key: str,
    key_ranges: Sequence[tuple[int, int]],
    row_positions: bool = False,
    snapshot_id: int | None = None,
) -> Iterator[DataFrame]:
    """Every column of ``sql_name``'s rows (in ``snapshot_id``, by default the table's newest
    snapshot, the table refreshed first) in the data files whose bounds
    of ``key`` meet one of ``key_ranges`` (closed ranges; none: every file); with
    ``row_positions`` also ``_file`` and ``_pos``. Files are chosen, not rows: a row outside the
    ranges may be read too. The frame is valid inside the ``with`` only: the staged
    tasks are dropped on leaving it, so compute (checkpoint) what needs them inside.

    Each planned task keeps the filters as its residual, which Iceberg's reader tests Parquet row
    groups with, as in any scan of the table: a query of the frame must read ``key``, as every
    join on the key does.
    """
    table = iceberg_table(spark, sql_name, refreshed=True)
    tasks, _ = plan_tasks(spark, table, sql_name, key, key_ranges, snapshot_id)
    positions = list(ROW_POSITION_COLUMNS) if row_positions else []
    if tasks.isEmpty():
        # Iceberg stages no empty task set: no file to read is no row (Spark reads nothing).
        frame = spark.read.table(sql_name)
        yield frame.select("*", *positions).where(F.lit(False))
        return
    manager = jvm(spark).org.apache.iceberg.spark.ScanTaskSetManager.get()
    set_id = f"icetide-{uuid.uuid4()}"
    manager.stageTasks(table, set_id, tasks)
    try:
        frame = spark.read.option(SCAN_TASK_SET_ID, set_id).table(sql_name)
        yield frame.select("*", *positions)
    finally:
        manager.removeTasks(table, set_id)


def plan_tasks(
    spark: SparkSession,
    table: Any,
    sql_name: str,
    key: str,
    key_ranges: Sequence[tuple[int, int]],
    snapshot_id: int | None,
    *,
    residuals: bool = True,
) -> tuple[Any, PlannedScan]:
    """The file scan tasks of ``snapshot_id`` (None: the newest, or none for a table without a
    snapshot) that the filters can touch (a Java list), and Iceberg's report of that planning
    (logged, for the merge-cost benchmark's figures).
    (The merge-cost benchmark's one-process floor plans its read of silver with it too.)

    ``residuals=False``: the tasks carry no residual filter (Iceberg's ``ignoreResiduals``; the
    files are chosen by the filters all the same), for a caller that reads the files itself.
    Spark's reader skips row groups by a task's residual, so its scans keep them; a task's
    residual is computed when it is asked for, and its JSON (``ScanTaskParser``) asks for it: with
    many key ranges that costs more than the rest of the task's JSON."""
    api = jvm(spark).org.apache.iceberg
    reporter = api.metrics.InMemoryMetricsReporter()
    scan = table.newScan().caseSensitive(False).metricsReporter(reporter)
    if not residuals:
        scan = scan.ignoreResiduals()
    if snapshot_id is None:
        current = table.currentSnapshot()
        snapshot_id = None if current is None else int(current.snapshotId())
    if snapshot_id is not None:
        scan = scan.useSnapshot(snapshot_id)
    if key_ranges:
        scan = scan.filter(_ranges_expression(spark, table, key, key_ranges))
    planned = scan.planFiles()
    try:
        tasks = api.relocated.com.google.common.collect.Lists.newArrayList(planned)
    finally:
        planned.close()
    report = reporter.scanReport()
    metrics = report.scanMetrics() if report is not None else None

    def counted(name: str) -> int:
        counter = getattr(metrics, name)() if metrics is not None else None
        return int(counter.value()) if counter is not None else 0

    planned = PlannedScan(
        table=sql_name,
        data_files=counted("resultDataFiles"),
        data_bytes=counted("totalFileSizeInBytes"),
        skipped_data_files=counted("skippedDataFiles"),
        delete_files=counted("resultDeleteFiles"),
        delete_bytes=counted("totalDeleteFileSizeInBytes"),
    )
    logger.info("planned read of %s", sql_name, extra={"scan": asdict(planned)})
    return tasks, planned


def _ranges_expression(
    spark: SparkSession, table: Any, key: str, key_ranges: Sequence[tuple[int, int]]
) -> Any:
    """Iceberg's expression for ``key_ranges`` (:func:`ranges_filter_json`), parsed by Iceberg in
    one call to the JVM (built call by call it takes several calls a range)."""
    field = _field(table, key)
    decimal = field.type().typeId().toString() == "DECIMAL"
    parser = jvm(spark).org.apache.iceberg.expressions.ExpressionParser
    return parser.fromJson(ranges_filter_json(str(field.name()), key_ranges, decimal))


def ranges_filter_json(name: str, key_ranges: Sequence[tuple[int, int]], decimal: bool) -> str:
    """``low <= name <= high OR ...`` (``name = low`` for a range of one key) as Iceberg's
    expression JSON (its ExpressionParser). Unbound: Iceberg binds the literals to the column when
    it plans, a whole number to an integral column as a long (one out of an int's range turns the
    predicate always true or false, as Iceberg decides), to a decimal column as text of scale 0,
    which binds to it exactly."""
    if not key_ranges:
        return json.dumps(False)

    def literal(value: int) -> int | str:
        return str(value) if decimal else value

    def in_range(low: int, high: int) -> dict[str, Any]:
        if low == high:
            return {"type": "eq", "term": name, "value": literal(low)}
        return {
            "type": "and",
            "left": {"type": "gt-eq", "term": name, "value": literal(low)},
            "right": {"type": "lt-eq", "term": name, "value": literal(high)},
        }

    combined = in_range(*key_ranges[0])
    for low, high in key_ranges[1:]:
        combined = {"type": "or", "left": combined, "right": in_range(low, high)}
    return json.dumps(combined)


def _field(table: Any, name: str) -> Any:
    """``table``'s column ``name`` (any case), as Iceberg knows it."""
    field = table.schema().caseInsensitiveFindField(name)
    if field is None:
        raise ValueError(f"{name!r} is not a column of {table.name()}")
    return field
