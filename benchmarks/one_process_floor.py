"""The floor's reads and writes without a Spark job: what a merge costs in one process.

``merge_cost``'s ``floor`` does the reads and writes a merge with icetide's answers needs, each as
the plainest Spark statement. The recent pattern's targets ask for less time than that floor takes
(a tenth of a full reload's time, which a run of Spark jobs on 2 cores does not reach). This
reference, ``arrow``, does the same reads and writes in the driver's own process with pyarrow,
so the benchmark measures, side by side, what leaving Spark's jobs out for a small batch would
buy before anyone builds it:

- the batch's DMS files read, and each key's latest change kept (sort by key, change time newest
  first; the first row of each key);
- silver's rows in the batch's lowest to highest key, as the round found them: the data files and
  their delete files planned by Iceberg's Java API on the driver (its column bounds skip files),
  each file's row groups skipped by their key statistics, its deleted positions left out, then
  the same columns the floor reads (key, change time and sequence, value columns, file and
  position) joined with the latest changes;
- the rows the changes leave written as one Parquet file with Iceberg's field ids and appended to
  a table of silver's source columns (``arrow_<size>``) with Iceberg's ``AppendFiles``;
- the found rows' positions written as Parquet (not committed), as the floor does.

No values hash, checks, counts, tombstones, delete-file bookkeeping or run records, exactly as
the floor: a reference, not a candidate. An engine built on it would be a second implementation of
the merge's semantics (DMS's types, the values hash, schema changes, soft deletes, the order
guard), which is why this measures before anything is built. ``merge_cost.check_arrow_floor``
checks after each round, untimed, that it found the same positions as the Spark floor and that
its table holds the floor table's rows.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from pyiceberg.io.pyarrow import schema_to_pyarrow
from pyiceberg.schema import Schema
from pyspark.sql import SparkSession

from icetide_glue.driver.commit import parquet_codec
from icetide_glue.driver.files import local_path
from icetide_glue.iceberg_tables import iceberg_table, jvm
from icetide_glue.merge.planned_scan import plan_tasks


@dataclass(frozen=True)
class PlannedFile:
    """A data file Iceberg's planning kept for the key range, and its position delete files."""

    path: str
    delete_files: tuple[str, ...]


def latest_changes(changes: pa.Table, key: str, change_time: str) -> pa.Table:
    """Each key's latest change: the rows sorted by key, newest change first, and the first of each
    key kept (DMS's change time strings sort as times: fixed width, largest unit first)."""
    ordered = changes.sort_by([(key, "ascending"), (change_time, "descending")])
    keys = ordered.column(key).to_numpy()
    first = np.ones(len(keys), dtype=bool)
    first[1:] = keys[1:] != keys[:-1]
    return ordered.filter(pa.array(first))


def planned_files(
    spark: SparkSession, table: str, snapshot_id: int, key: str, low: int, high: int
) -> list[PlannedFile]:
    """The data files of ``table`` in ``snapshot_id`` that may hold a key from ``low`` to ``high``,
    with their delete files, as Iceberg's planning answers on the driver (no Spark job): the
    job's own planning of a batch's key ranges (icetide_glue.merge.planned_scan)."""
    tasks, _ = plan_tasks(spark, iceberg_table(spark, table), table, key, [(low, high)], snapshot_id)
    return [
        PlannedFile(str(task.file().location()), tuple(str(delete.location()) for delete in task.deletes()))
        for task in tasks
    ]


def live_rows(planned: PlannedFile, rows: int) -> np.ndarray:
    """Which of ``planned``'s ``rows`` positions its delete files leave live (a mask by position)."""
    live = np.ones(rows, dtype=bool)
    for delete_file in planned.delete_files:
        deletes = pq.read_table(local_path(delete_file), columns=["file_path", "pos"])
        mine = deletes.filter(pc.equal(deletes.column("file_path"), planned.path))
        live[mine.column("pos").to_numpy()] = False
    return live


def leaf_index(parquet: pq.ParquetFile, column: str) -> int:
    """The Parquet leaf column of top-level ``column`` (row-group statistics are per leaf, which
    is not the Arrow field index once a nested column comes first)."""
    schema = parquet.metadata.schema
    for index in range(len(schema)):
        if schema.column(index).path == column:
            return index
    raise KeyError(f"{column} is not a flat column of the data file")


def rows_in_range(
    planned: PlannedFile, file_index: int, columns: Sequence[str], key: str, low: int, high: int
) -> Iterator[pa.Table]:
    """``planned``'s live rows with a key from ``low`` to ``high``: ``columns`` plus ``_file_index``
    (``file_index``, the file's place in the run's list: a path string per row would cost more
    than the read) and ``_pos``, reading only the row groups whose key statistics overlap the range."""
    parquet = pq.ParquetFile(local_path(planned.path))
    key_leaf = leaf_index(parquet, key)
    live = live_rows(planned, parquet.metadata.num_rows)
    start = 0
    for group in range(parquet.metadata.num_row_groups):
        rows = parquet.metadata.row_group(group).num_rows
        stats = parquet.metadata.row_group(group).column(key_leaf).statistics
        overlaps = stats is None or not stats.has_min_max or (stats.min <= high and stats.max >= low)
        if overlaps:
            read = parquet.read_row_group(group, columns=list(columns))
            keys = read.column(key).to_numpy()
            keep = (keys >= low) & (keys <= high) & live[start : start + rows]
            chosen = read.filter(pa.array(keep))
            yield chosen.append_column(
                "_file_index", pa.array(np.full(len(chosen), file_index, dtype=np.int32))
            ).append_column("_pos", pa.array(np.arange(start, start + rows, dtype=np.int64)[keep]))
        start += rows


def iceberg_arrow_schema(spark: SparkSession, iceberg: Any) -> pa.Schema:
    """``iceberg``'s schema as Arrow types with each column's field id, as pyiceberg maps them
    (a Spark ``timestamp`` is Iceberg's ``timestamptz``: microseconds, adjusted to UTC; the batch's
    DMS files hold it as INT96, which Arrow reads without a zone)."""
    as_json = jvm(spark).org.apache.iceberg.SchemaParser.toJson(iceberg.schema())
    return schema_to_pyarrow(Schema.model_validate_json(str(as_json)))


def append_rows(spark: SparkSession, table: str, rows: pa.Table) -> None:
    """``rows`` written as one Parquet file in ``table``'s data location and appended (one commit)."""
    iceberg = iceberg_table(spark, table)
    api = jvm(spark).org.apache.iceberg
    path = str(iceberg.locationProvider().newDataLocation(f"arrow-floor-{uuid.uuid4()}.parquet"))
    target = Path(local_path(path))
    target.parent.mkdir(parents=True, exist_ok=True)
    # The table's codec (zstd unless the table says otherwise), at pyarrow's level and row-group
    # size, not parquet-java's: the file is about 1.3-1.8x the size Spark's writer makes.
    schema = iceberg_arrow_schema(spark, iceberg)
    typed = rows.select(schema.names).cast(schema)
    pq.write_table(typed, target, compression=parquet_codec(iceberg))
    metrics = api.parquet.ParquetUtil.fileMetrics(
        iceberg.io().newInputFile(path), api.MetricsConfig.forTable(iceberg)
    )
    data_file = (
        api.DataFiles.builder(iceberg.spec())
        .withPath(path)
        .withFormat(api.FileFormat.PARQUET)
        .withFileSizeInBytes(target.stat().st_size)
        .withMetrics(metrics)
        .build()
    )
    iceberg.newAppend().appendFile(data_file).commit()


@dataclass(frozen=True)
class FloorRun:
    """What one run of the floor in one process reads and writes (merge_cost names the places)."""

    batch_files: Path  # the batch's DMS folder of Parquet files
    silver: str  # silver's SQL name, read as of ``silver_snapshot``
    silver_snapshot: int
    target: str  # the table the rows the changes leave are appended to
    positions: Path  # where the found rows' positions go (a folder, as Spark's writes make)
    key: str
    change_time: str  # DMS's change time column
    source_names: tuple[str, ...]  # the source's columns, the key first
    silver_columns: tuple[str, ...]  # silver's columns the floor reads besides the source's


@dataclass(frozen=True)
class FloorResult:
    """What a run found and appended, and the columns its join of silver's rows carried (so the
    benchmark can check the floor's columns were read, not only the keys)."""

    found: int
    appended: int
    joined_columns: tuple[str, ...]


def run(spark: SparkSession, floor: FloorRun) -> FloorResult:
    """The floor's reads and writes in this process (module docstring)."""
    latest = latest_changes(pq.read_table(floor.batch_files), floor.key, floor.change_time)
    keys = latest.column(floor.key)
    low, high = pc.min(keys).as_py(), pc.max(keys).as_py()
    columns = (*floor.source_names, *floor.silver_columns)
    files = planned_files(spark, floor.silver, floor.silver_snapshot, floor.key, low, high)
    parts = [
        part
        for index, planned in enumerate(files)
        for part in rows_in_range(planned, index, columns, floor.key, low, high)
    ]
    positions = pa.table({"file_path": pa.array([], pa.string()), "pos": pa.array([], pa.int64())})
    joined_columns: tuple[str, ...] = ()
    if parts:
        silver = pa.concat_tables(parts)
        silver = silver.rename_columns([f"silver_{name}" for name in silver.column_names])
        # As the floor's join: silver's rows with the change each meets (inner: pyarrow's default
        # join is a left outer one).
        joined = silver.join(latest, f"silver_{floor.key}", floor.key, join_type="inner")
        joined_columns = tuple(joined.column_names)
        paths = pc.take(
            pa.array([planned.path for planned in files], pa.string()), joined["silver__file_index"]
        )
        positions = pa.table({"file_path": paths, "pos": joined["silver__pos"]})
        positions = positions.sort_by([("file_path", "ascending"), ("pos", "ascending")])
    appended = latest.filter(pc.not_equal(latest.column("Op"), "D")).select(list(floor.source_names))
    if len(appended):
        append_rows(spark, floor.target, appended)
    floor.positions.mkdir(parents=True, exist_ok=True)
    pq.write_table(positions, floor.positions / "positions.parquet")
    return FloorResult(len(positions), len(appended), joined_columns)
