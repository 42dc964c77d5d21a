"""Rows of an Iceberg table read on the driver with pyarrow: the files Iceberg's planning keeps for
a batch's key ranges (icetide_glue.merge.planned_scan, its Java API on the driver), their columns found
by Iceberg field id (a file written before a column was added lacks it: null; before a widening it
holds the narrower type: cast), their deleted positions left out, each row with its file and
position (what the Spark path reads as ``_file`` and ``_pos``).

Only what a file-scoped or partition-scoped position delete file describes is applied; a planned
file with an equality delete or a deletion vector, or a planned part of a file, is
:class:`icetide_glue.driver.arrow_types.NotEligible` (icetide writes none; the Spark path reads them).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from py4j.protocol import Py4JJavaError
from pyspark.sql import SparkSession
from pyspark.sql.types import StructType

from icetide_glue.driver.arrow_types import NotEligible, arrow_type
from icetide_glue.driver.files import open_input
from icetide_glue.iceberg_tables import jvm
from icetide_glue.merge.planned_scan import plan_tasks
from icetide_glue.merge.position_deletes import DELETE_FILE_PATH_ID, LiveDeleteFile

# How Parquet files (Iceberg's, pyarrow's) carry a column's Iceberg field id.
FIELD_ID_KEY = b"PARQUET:field_id"
# The working columns of rows read here: the row's data file (its index in the planned list) and
# its position in that file.
FILE_INDEX = "_icetide_file_index"
POSITION = "_icetide_pos"
# Files read at once (a Glue driver has 4 cores, G.1X and G.2X workers 4 and 8).
MAX_READERS = 4


def iceberg_arrow_schema(spark: SparkSession, iceberg: Any, schema: StructType) -> pa.Schema:
    """``schema`` (the table's, as Spark reads it) as Arrow fields carrying each column's Iceberg
    field id, as a Parquet file of the table must. The table's schema is read as Iceberg's JSON of
    it, one call to the JVM, not a lookup per column."""
    as_json = json.loads(str(jvm(spark).org.apache.iceberg.SchemaParser.toJson(iceberg.schema())))
    by_name = {str(field["name"]).lower(): field for field in as_json["fields"]}
    fields = []
    for field in schema.fields:
        iceberg_field = by_name.get(field.name.lower())
        if iceberg_field is None:
            raise NotEligible(f"column {field.name} is not in the table's Iceberg schema")
        metadata = {FIELD_ID_KEY: str(int(iceberg_field["id"])).encode()}
        nullable = not bool(iceberg_field["required"])
        fields.append(pa.field(field.name, arrow_type(field.dataType), nullable=nullable, metadata=metadata))
    return pa.schema(fields)


@dataclass(frozen=True)
class PlannedDataFile:
    """A data file Iceberg's planning kept, and the position delete files that apply to it."""

    path: str
    size_bytes: int
    delete_files: tuple[LiveDeleteFile, ...]


def planned_data_files(
    spark: SparkSession,
    iceberg: Any,
    sql_name: str,
    key: str,
    key_ranges: Sequence[tuple[int, int]],
    snapshot_id: int | None,
) -> list[PlannedDataFile]:
    """The data files of ``snapshot_id`` that may hold a key of ``key_ranges`` ([]: every file),
    with their delete files (a delete file's data file: the one it names, or None for one that
    spans several).

    Each planned task is read as Iceberg's own JSON of it (``ScanTaskParser``), one call to the
    JVM per task: asking the task for each field takes several calls per delete file, which adds
    up once silver's recent files have their four delete files each (over a thousand calls)."""
    parser = jvm(spark).org.apache.iceberg.ScanTaskParser
    tasks, _ = plan_tasks(spark, iceberg, sql_name, key, key_ranges, snapshot_id, residuals=False)
    planned = []
    # An iterator asks the JVM twice a task; a for loop over the Java list asked it about six times.
    iterator = tasks.iterator()
    while iterator.hasNext():
        task = iterator.next()
        try:
            described = json.loads(str(parser.toJson(task)))
        except Py4JJavaError as error:
            # The parser checks what the task's own getters do not (a delete file's spec id).
            raise NotEligible(
                f"a planned task Iceberg does not describe as JSON: {error.java_exception}"
            ) from None
        planned.append(planned_file(described))
    return planned


def planned_file(task: dict[str, Any]) -> PlannedDataFile:
    """One task's data file and delete files, from its JSON (Iceberg's ContentFileParser names)."""
    try:
        data_file = task["data-file"]
        if int(task["start"]) != 0 or int(task["length"]) != int(data_file["file-size-in-bytes"]):
            raise NotEligible("a planned task covers part of a data file")
        if _spelled(data_file["file-format"]) != "PARQUET":
            raise NotEligible("a data file that is not Parquet")
        deletes = []
        for delete in task.get("delete-files") or ():
            # A deletion vector is a PUFFIN file (Iceberg's ContentFileUtil.isDV); an Avro or ORC
            # position delete file is not read here either.
            if (
                _spelled(delete["content"]) != "POSITION_DELETES"
                or _spelled(delete["file-format"]) != "PARQUET"
            ):
                raise NotEligible(
                    "an equality delete file, a deletion vector or a delete file not in Parquet"
                )
            deletes.append(
                LiveDeleteFile(
                    path=delete["file-path"],
                    size_bytes=int(delete["file-size-in-bytes"]),
                    data_file=referenced_data_file(delete) or "",
                    record_count=int(delete["record-count"]),
                )
            )
        return PlannedDataFile(data_file["file-path"], int(data_file["file-size-in-bytes"]), tuple(deletes))
    except KeyError as missing:
        raise NotEligible(f"a planned task's JSON without {missing}") from None


def _spelled(value: object) -> str:
    """An enum value of Iceberg's JSON as 1.10 spells it (``POSITION_DELETES``, ``PARQUET``); later
    versions write ``position-deletes`` and ``parquet``."""
    return str(value).upper().replace("-", "_")


def referenced_data_file(delete: dict[str, Any]) -> str | None:
    """The one data file a position delete file's JSON says it removes rows of, or None: as
    Iceberg's ``ContentFileUtil.referencedDataFile``, its ``referenced-data-file``, else its
    ``file_path`` column's bounds when the lower equals the upper (older writers set no field)."""
    named = delete.get("referenced-data-file")
    if named is not None:
        return str(named)
    bounds = [_bound(delete.get(side)) for side in ("lower-bounds", "upper-bounds")]
    if bounds[0] is None or bounds[0] != bounds[1]:
        return None
    return bytes.fromhex(bounds[0]).decode("utf-8")


def _bound(bounds: dict[str, list[Any]] | None) -> str | None:
    """The ``file_path`` column's bound (hexadecimal bytes) in a JSON bounds map."""
    if not bounds:
        return None
    by_id = dict(zip(bounds["keys"], bounds["values"], strict=True))
    value = by_id.get(DELETE_FILE_PATH_ID)
    return None if value is None else str(value)


def _live_positions(planned: PlannedDataFile, rows: int) -> np.ndarray:
    """Which of the file's ``rows`` positions its delete files leave live."""
    live = np.ones(rows, dtype=bool)
    for delete_file in planned.delete_files:
        # A delete file of this data file alone (icetide writes only those) is read without its
        # file_path column: the same path on every row, decoded again for each.
        scoped = delete_file.data_file == planned.path
        with open_input(delete_file.path) as source:
            deletes = pq.read_table(source, columns=["pos"] if scoped else ["file_path", "pos"])
        if not scoped:
            deletes = deletes.filter(pc.equal(deletes.column("file_path"), planned.path))
        live[deletes.column("pos").to_numpy()] = False
    return live


def _field_ids(schema: pa.Schema) -> dict[int, str]:
    """A Parquet file's top-level columns by Iceberg field id."""
    found = {}
    for field in schema:
        if field.metadata and FIELD_ID_KEY in field.metadata:
            found[int(field.metadata[FIELD_ID_KEY])] = field.name
    return found


def rows_of_keys(
    planned: PlannedDataFile, file_index: int, columns: pa.Schema, key: str, wanted_keys: pa.Array
) -> pa.Table | None:
    """The live rows of ``planned`` whose ``key`` is one of ``wanted_keys`` (ascending, distinct):
    ``columns`` (Arrow fields with their field ids, :func:`iceberg_arrow_schema`), ``FILE_INDEX``
    (``file_index``) and ``POSITION``.

    Each row group is tested only against the wanted keys within its key statistics: one whose
    range holds none is not read, and the others hash a slice of the keys, not all of them (a
    batch's keys hashed again for each of a dozen row groups would cost more than the read). Its key
    column is read first, the other columns only where a wanted key is live."""
    ordered = wanted_keys.to_numpy(zero_copy_only=False)
    with open_input(planned.path) as source:
        parquet = pq.ParquetFile(source)
        by_id = _field_ids(parquet.schema_arrow)
        key_field = columns.field(key)
        key_name = by_id.get(int(key_field.metadata[FIELD_ID_KEY]))
        if key_name is None:
            raise NotEligible(f"data file {planned.path} has no key column")
        key_leaf = next(
            (
                i
                for i in range(len(parquet.metadata.schema))
                if parquet.metadata.schema.column(i).path == key_name
            ),
            None,
        )
        present = [(field, by_id.get(int(field.metadata[FIELD_ID_KEY]))) for field in columns]
        other_names = [name for _, name in present if name is not None and name != key_name]
        live: np.ndarray | None = None
        parts, start = [], 0
        for group in range(parquet.metadata.num_row_groups):
            rows = parquet.metadata.row_group(group).num_rows
            stats = (
                parquet.metadata.row_group(group).column(key_leaf).statistics
                if key_leaf is not None
                else None
            )
            first, last = 0, len(ordered)
            bounds = key_bounds(stats)
            if bounds is not None:
                first = int(np.searchsorted(ordered, bounds[0], side="left"))
                last = int(np.searchsorted(ordered, bounds[1], side="right"))
            if first < last:
                if live is None:
                    live = _live_positions(planned, parquet.metadata.num_rows)
                # A file written before the key was widened holds the narrower type.
                found = pc.cast(parquet.read_row_group(group, columns=[key_name]).column(0), key_field.type)
                keep = _among(found, wanted_keys.slice(first, last - first), ordered[first:last])
                keep &= live[start : start + rows]
                if keep.any():
                    mask = pa.array(keep)
                    read = parquet.read_row_group(group, columns=other_names) if other_names else None
                    arrays = [
                        found.filter(mask)
                        if name == key_name
                        else pc.cast(read.column(name).filter(mask), field.type)
                        if name is not None and read is not None
                        else pa.nulls(int(keep.sum()), field.type)
                        for field, name in present
                    ]
                    positions = np.arange(start, start + rows, dtype=np.int64)[keep]
                    parts.append(
                        pa.Table.from_arrays(
                            [
                                *arrays,
                                pa.array(np.full(len(positions), file_index, dtype=np.int32)),
                                pa.array(positions),
                            ],
                            names=[*columns.names, FILE_INDEX, POSITION],
                        )
                    )
            start += rows
    return pa.concat_tables(parts) if parts else None


def _among(found: pa.ChunkedArray, wanted: pa.Array, ordered: np.ndarray) -> np.ndarray:
    """Which of ``found`` are among ``wanted`` (ascending, distinct; ``ordered`` is it in numpy).

    Whole numbers are looked up by binary search in the sorted keys: ``pc.is_in`` hashes its value
    set at each call, and a row group of a file holding the batch's band of keys (each run's file
    holds its changes across that band) hashed ~180,000 keys again, a dozen times a run."""
    if ordered.dtype.kind not in "iu" or found.null_count or not len(ordered):
        return np.asarray(pc.is_in(found, value_set=wanted).to_numpy(zero_copy_only=False), dtype=bool)
    _, hit = found_in_sorted(ordered, found.to_numpy())
    return hit


def found_in_sorted(ordered: np.ndarray, values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Where each of ``values`` is in ``ordered`` (ascending, not empty) and whether it is there
    at all (``at`` is a valid index either way), by binary search."""
    at = np.minimum(np.searchsorted(ordered, values), len(ordered) - 1)
    return at, np.asarray(ordered[at] == values, dtype=bool)


def key_bounds(stats: Any) -> tuple[Any, Any] | None:
    """A row group's lowest and highest key from its statistics, or None (then every wanted key is
    tested): none kept, or of a type pyarrow does not extract (a decimal stored as INT32 or
    INT64, as Iceberg writes one of precision 18 or less)."""
    if stats is None or not stats.has_min_max:
        return None
    try:
        low, high = stats.min, stats.max
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        return None
    return (low, high) if isinstance(low, int | Decimal) and isinstance(high, int | Decimal) else None


def read_rows_of_keys(
    spark: SparkSession,
    iceberg: Any,
    sql_name: str,
    columns: pa.Schema,
    key: str,
    key_ranges: Sequence[tuple[int, int]],
    wanted_keys: pa.Array,
    snapshot_id: int | None,
    max_bytes: int | None = None,
) -> tuple[list[PlannedDataFile], pa.Table]:
    """The planned files of the table and the live rows of ``wanted_keys`` in them
    (:func:`rows_of_keys`; ``FILE_INDEX`` indexes the returned list); :class:`NotEligible` when
    the planned data files hold more than ``max_bytes``."""
    planned = planned_data_files(spark, iceberg, sql_name, key, key_ranges, snapshot_id)
    if max_bytes is not None and sum(data_file.size_bytes for data_file in planned) > max_bytes:
        raise NotEligible(f"the planned read of {sql_name} is more than {max_bytes} bytes")
    if not len(wanted_keys):
        return planned, empty_rows(columns)
    ordered = wanted_keys.take(pc.array_sort_indices(wanted_keys))
    # Several files at a time (_readers): a file's key column is one column to decode (one core),
    # and pyarrow and numpy leave Python's lock while they decode and search. Results keep the
    # planned order.
    with ThreadPoolExecutor(max_workers=_readers(len(planned)), thread_name_prefix="icetide-read") as pool:
        found = pool.map(
            lambda item: rows_of_keys(item[1], item[0], columns, key, ordered), enumerate(planned)
        )
        parts = [part for part in found if part is not None]
    return planned, pa.concat_tables([empty_rows(columns), *parts])


def _readers(files: int) -> int:
    """How many of a table's files are read at once: as many as the machine's cores
    (``os.cpu_count``, not a container's CPU quota; a Glue driver is a whole VM), at most
    :data:`MAX_READERS`. The driver path reads silver and its tombstone table side by side
    (icetide_glue.beside), each with its own readers."""
    return max(1, min(files, os.cpu_count() or 1, MAX_READERS))


def empty_rows(columns: pa.Schema) -> pa.Table:
    """No rows, shaped as :func:`rows_of_keys`' are."""
    return pa.Table.from_arrays(
        [pa.array([], field.type) for field in columns]
        + [pa.array([], pa.int32()), pa.array([], pa.int64())],
        names=[*columns.names, FILE_INDEX, POSITION],
    )
