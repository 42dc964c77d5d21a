"""Remove silver rows by position: the run's classification already found them, so no MERGE reads
silver a second time.

The classification reads each matched silver row's data file and row position (Iceberg's ``_file``
and ``_pos`` metadata columns). Those positions are written as Iceberg position delete files, one
per data file (file-scoped, the layout Iceberg's own merge-on-read writes by default), and committed
with Iceberg's ``RowDelta``, which also adds the files of the rows that replace them
(icetide_glue.merge.apply, icetide_glue.commit.unpublished_files). A MERGE
would find the same rows again by joining the changes with silver: a second read of every file
the batch touches, which costs as much as the classification itself.

A data file keeps at most ``MAX_DELETE_FILES_PER_DATA_FILE`` delete files. Otherwise every hourly
run would add a delete file to each file it touches, and every read of silver (the next run's
classification included) would load them all until maintenance: a read of silver's keys slows
down with each delete file per data file, against one file holding the same positions.
A run that would go past the limit writes the positions of the delete files it replaces into its
new one and removes them in the same commit. It replaces the smaller ones and keeps the largest
unless that holds fewer positions than the others together (size-tiered, as an LSM tree merges):
replacing every delete file at every touch would make a batch of recent keys, which touches the
same data files each hour, rewrite all the positions deleted from them since the last compaction
every run (millions of positions a run after a few hours of the benchmark's recent pattern).

Spark writes the files (its Parquet writer keeps the Iceberg field ids set in the columns'
metadata, which is how Iceberg's readers find ``file_path`` and ``pos``); Iceberg's Java API, the
one Iceberg's procedures use, registers them (icetide_glue.iceberg_tables, also used to find a
run's snapshot).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from icetide_glue.bronze.read import hadoop_path
from icetide_glue.columns import SILVER_FILE, SILVER_POS
from icetide_glue.errors import IcetideJobError
from icetide_glue.iceberg_tables import every_spec_unpartitioned, iceberg_table, java_list, jvm
from icetide_glue.session import session_settings
from icetide_glue.silver import SilverTable
from icetide_glue.table_sql import MAIN_BRANCH

# Iceberg's reserved field ids of a position delete file's columns (its
# MetadataColumns.DELETE_FILE_PATH and DELETE_FILE_POS; a test checks them against the jar).
DELETE_FILE_PATH_ID = 2147483546
DELETE_FILE_POS_ID = 2147483545
PARQUET_FIELD_ID = "parquet.field.id"
# The two columns of a position delete file, as read back (Iceberg's spec; a file may add ``row``).
_DELETE_FILE_SCHEMA = "file_path string, pos bigint"
# The working column the write is partitioned by: one folder, so one file, per data file.
_DATA_FILE_INDEX = "data_file_index"
_FOLDER_PREFIX = f"{_DATA_FILE_INDEX}="
# Spark's default, set anyway: without the ids Iceberg's readers would not find the columns.
FIELD_ID_WRITE = "spark.sql.parquet.fieldId.write.enabled"
# Live file-scoped delete files a data file may have after a run (more cost every reader more).
MAX_DELETE_FILES_PER_DATA_FILE = 4
# The only table format whose row removals are Parquet position delete files (v3 wants deletion
# vectors, v1 has no delete files); icetide creates every silver table in it.
POSITION_DELETES_FORMAT = 2
# The snapshot summary property Spark's Iceberg commits carry (SparkWrite): the writing application.
SPARK_APP_ID_PROPERTY = "spark.app.id"


@dataclass(frozen=True)
class PositionDeleteFile:
    """One position delete file: where it is, its size, and the data file it removes rows of."""

    path: str
    size_bytes: int
    data_file: str


@dataclass(frozen=True)
class LiveDeleteFile(PositionDeleteFile):
    """A file-scoped position delete file live in the snapshot a run read, with its ``record_count``
    positions: when :func:`files_to_replace` picks it, the run's new delete file of its data file
    takes those over and the commit removes it."""

    record_count: int


def data_file_of(path: str, data_files: Sequence[str]) -> str:
    """The data file a written delete file belongs to, from its ``data_file_index=N`` folder."""
    for part in reversed(path.split("/")[:-1]):
        if part.startswith(_FOLDER_PREFIX):
            index = part[len(_FOLDER_PREFIX) :]
            if index.isdigit() and int(index) < len(data_files):
                return data_files[int(index)]
            break
    raise IcetideJobError(f"position delete file {path} is not in a data file's folder")


def data_file_index(spark: SparkSession, data_files: Sequence[str]) -> DataFrame:
    """``data_files`` as rows of ``file_path`` and its index in the list (``data_file_index``).

    Built from one JSON literal, one expression however many paths, which Spark's optimizer
    folds into a constant. The write joins it by broadcast. Side by side (180k positions, the
    join and a no-op write per call), an index made with ``createDataFrame`` from a Python list
    costs more per call at a few paths and about the same at tens of thousands; a literal per path
    (an expression each) costs far more than either at thousands of paths.
    """
    paths = F.from_json(F.lit(json.dumps(list(data_files))), "array<string>")
    return spark.range(1).select(F.posexplode(paths).alias(_DATA_FILE_INDEX, "file_path"))


def position_delete_rows(removed: DataFrame) -> DataFrame:
    """``file_path`` and ``pos`` of the silver rows to remove, with Iceberg's field ids."""
    return removed.select(
        F.col(SILVER_FILE).alias("file_path", metadata={PARQUET_FIELD_ID: DELETE_FILE_PATH_ID}),
        F.col(SILVER_POS).alias("pos", metadata={PARQUET_FIELD_ID: DELETE_FILE_POS_ID}),
    )


def remove_rows(
    spark: SparkSession,
    table: SilverTable,
    removed: DataFrame,
    data_files: Sequence[str],
    positions: int,
    base_snapshot_id: int,
    snapshot_properties: Mapping[str, str],
    added_data_files: Callable[[], Sequence[Any]] | None = None,
) -> None:
    """Commit the removal of ``removed``'s ``positions`` silver rows (their ``SILVER_FILE`` and
    ``SILVER_POS``, in ``data_files``: the classification finds both with its counts) to main
    as one Iceberg commit carrying ``snapshot_properties``; with
    ``added_data_files`` (called once the delete files are written: it may wait for another write,
    icetide_glue.commit.unpublished_files) the same commit adds the data files it returns.

    The delete files written must hold exactly those positions plus the ones of the delete files
    they replace, or nothing is committed: a row left out would stay beside its key's new row.

    The commit is validated against ``base_snapshot_id``, main's snapshot noted just before the
    classification read silver (which may have read a later one): it fails if a data file the
    positions point into was removed since (a compaction), if a delete file it replaces was
    removed since (a compaction of delete files), or if another writer added a data or delete
    file since (the positions, and the run's labels, may be stale; a compaction's rewritten
    delete files hold positions already deleted, and meet a run that only adds one). The checks
    look at the snapshots committed since the base, never at this commit's own files.
    """
    if not data_files or not all(data_files):
        raise IcetideJobError(
            f"{table}: rows to remove, but no data file named for them ({len(data_files)} given)"
        )
    data_files = sorted(data_files)
    iceberg = require_position_deletes(spark, table)
    replaced = files_to_replace(_live_delete_files(spark, table, iceberg, base_snapshot_id, data_files))
    delete_rows = _with_replaced_positions(spark, removed, replaced)
    written = _write_delete_files(spark, iceberg, delete_rows, data_files)
    if not written:
        raise IcetideJobError(f"{table}: the position deletes were written as no file")
    expected = positions + sum(file.record_count for file in replaced)
    commit_row_delta(
        spark,
        iceberg,
        written,
        replaced,
        expected,
        data_files,
        base_snapshot_id,
        snapshot_properties,
        added_data_files() if added_data_files is not None else (),
    )


def require_position_deletes(spark: SparkSession, table: SilverTable) -> Any:
    """``table``'s Iceberg ``Table``, or a clear refusal when its format has no position delete
    files (v3 wants deletion vectors, v1 has no delete files)."""
    iceberg = iceberg_table(spark, table.sql_name)
    version = int(iceberg.operations().current().formatVersion())
    if version != POSITION_DELETES_FORMAT:
        raise IcetideJobError(
            f"{table} is an Iceberg format v{version} table: icetide removes rows with position "
            f"delete files, which need format v{POSITION_DELETES_FORMAT} (the format it creates)"
        )
    return iceberg


def _live_delete_files(
    spark: SparkSession, table: SilverTable, iceberg: Any, snapshot_id: int, data_files: Sequence[str]
) -> list[LiveDeleteFile]:
    """The file-scoped position delete files of ``data_files`` live in ``snapshot_id`` (none without
    a metadata query when the snapshot has no delete file at all, as after a compaction).

    File-scoped as Iceberg reads it (``ContentFileUtil.referencedDataFile``): the file names its
    data file, or its ``file_path`` column's lower and upper bounds are that one path (what
    Iceberg's own v2 writers and ``rewrite_position_delete_files`` leave). Delete files spanning
    several data files (partition-scoped) stay as they are.
    """
    summary = iceberg.snapshot(snapshot_id).summary()
    if str(summary.getOrDefault("total-delete-files", "1")) == "0":
        return []
    lowest, highest = (F.col(bounds)[DELETE_FILE_PATH_ID] for bounds in ("lower_bounds", "upper_bounds"))
    data_file = F.coalesce(F.col("referenced_data_file"), F.when(lowest == highest, lowest.cast("string")))
    rows = (
        # Through the session's catalogs, as every other read of silver (a path given to the
        # Iceberg source would resolve in its own default catalog instead).
        spark.read.option("snapshot-id", str(snapshot_id))
        .table(f"{table.sql_name}.delete_files")
        .where((F.col("content") == 1) & data_file.isin(list(data_files)))
        .select("file_path", "file_size_in_bytes", data_file, "record_count")
        .collect()
    )
    return [LiveDeleteFile(str(row[0]), int(row[1]), str(row[2]), int(row[3])) for row in rows]


def files_to_replace(live: Sequence[LiveDeleteFile], limit: int | None = None) -> list[LiveDeleteFile]:
    """Of the ``live`` delete files of the data files a run removes rows from, those its new delete
    files take over: none for a data file with fewer than ``limit`` (default
    ``MAX_DELETE_FILES_PER_DATA_FILE``), the run's new file makes one more; otherwise all but the
    largest, or all when the largest holds fewer positions than the others together."""
    limit = MAX_DELETE_FILES_PER_DATA_FILE if limit is None else limit
    if limit < 1:
        raise ValueError(f"a data file needs room for at least one delete file, got {limit}")
    by_data_file: dict[str, list[LiveDeleteFile]] = {}
    for file in live:
        by_data_file.setdefault(file.data_file, []).append(file)
    replaced = []
    for files in by_data_file.values():
        if len(files) < limit:
            continue
        largest = max(files, key=lambda file: (file.record_count, file.path))
        others = [file for file in files if file is not largest]
        keeps_largest = largest.record_count >= sum(file.record_count for file in others) and limit > 1
        replaced.extend(others if keeps_largest else files)
    return replaced


def _with_replaced_positions(
    spark: SparkSession, removed: DataFrame, replaced: Sequence[LiveDeleteFile]
) -> DataFrame:
    """``removed``'s positions as delete rows, plus those of the delete files they replace (a live
    row's position is never among them: the classification read silver with them applied)."""
    rows = removed.select(SILVER_FILE, SILVER_POS)
    if not replaced:
        return rows
    # The schema is given: Spark would otherwise open a footer to infer what the spec fixes.
    previous = (
        spark.read.schema(_DELETE_FILE_SCHEMA)
        .parquet(*[file.path for file in replaced])
        .select(F.col("file_path").alias(SILVER_FILE), F.col("pos").alias(SILVER_POS))
    )
    return rows.unionByName(previous)


def _write_delete_files(
    spark: SparkSession, iceberg: Any, removed: DataFrame, data_files: Sequence[str]
) -> list[PositionDeleteFile]:
    """Write the positions sorted by (file_path, pos), as Iceberg requires, one folder per data
    file under a fresh folder in the table's data location; list what was written.

    The sort leads with the folder's column: a partitioned write sorts by it itself, and Spark
    then drops any sort that does not start with it (the positions would come in shuffle order).
    """
    folder = str(iceberg.locationProvider().newDataLocation(f"icetide-position-deletes-{uuid.uuid4()}"))
    rows = position_delete_rows(removed).join(F.broadcast(data_file_index(spark, data_files)), "file_path")
    with session_settings(spark, {FIELD_ID_WRITE: "true"}):
        (
            rows.repartition(_DATA_FILE_INDEX)
            .sortWithinPartitions(_DATA_FILE_INDEX, "file_path", "pos")
            .write.partitionBy(_DATA_FILE_INDEX)
            # No _SUCCESS marker: orphan removal skips names starting with _, so it would stay.
            .option("mapreduce.fileoutputcommitter.marksuccessfuljobs", "false")
            .parquet(folder)
        )
    return [
        PositionDeleteFile(path, size, data_file_of(path, data_files))
        for path, size in _parquet_files(spark, folder)
    ]


def commit_row_delta(
    spark: SparkSession,
    iceberg: Any,
    written: Sequence[PositionDeleteFile],
    replaced: Sequence[LiveDeleteFile],
    expected_positions: int,
    data_files: Sequence[str],
    base_snapshot_id: int,
    snapshot_properties: Mapping[str, str],
    added_data_files: Sequence[Any] = (),
) -> None:
    """One ``RowDelta``: the new delete files in, the ones they replace out, ``added_data_files``
    (Iceberg ``DataFile`` objects) in.

    ``validateDeletedFiles`` also fails it when a replaced delete file left since the run's
    snapshot (a compaction of delete files): the run built on a state of silver that is gone.
    """
    api = jvm(spark).org.apache.iceberg
    partitions = _partitions_of(iceberg, base_snapshot_id, data_files)
    metrics_config = api.MetricsConfig.forPositionDelete(iceberg)
    delta = (
        iceberg.newRowDelta()
        .toBranch(MAIN_BRANCH)
        .validateFromSnapshot(base_snapshot_id)
        .conflictDetectionFilter(api.expressions.Expressions.alwaysTrue())
        .validateNoConflictingDataFiles()
        .validateNoConflictingDeleteFiles()
        .validateDeletedFiles()
        .validateDataFilesExist(java_list(spark, data_files))
    )
    written_positions = 0
    for file in written:
        builder = _delete_file_builder(api, partitions, file)
        metrics = api.parquet.ParquetUtil.fileMetrics(iceberg.io().newInputFile(file.path), metrics_config)
        written_positions += int(metrics.recordCount())
        delta = delta.addDeletes(builder.withMetrics(metrics).build())
    if written_positions != expected_positions:
        raise IcetideJobError(
            f"{iceberg.name()}: the delete files hold {written_positions} position(s), not the "
            f"{expected_positions} to remove (with those of the delete files they replace); nothing committed"
        )
    for old in replaced:
        builder = _delete_file_builder(api, partitions, old)
        delta = delta.removeDeletes(builder.withRecordCount(old.record_count).build())
    for data_file in added_data_files:
        delta = delta.addRows(data_file)
    # As Spark's own commits of the table record it.
    delta = delta.set(SPARK_APP_ID_PROPERTY, spark.sparkContext.applicationId)
    for key, value in snapshot_properties.items():
        delta = delta.set(key, value)
    delta.commit()


def _delete_file_builder(
    api: Any, partitions: Mapping[str, tuple[Any, Any]], file: PositionDeleteFile
) -> Any:
    """Iceberg's description of ``file`` so far: file-scoped, in its data file's partition."""
    spec, partition = partitions[file.data_file]
    builder = (
        api.FileMetadata.deleteFileBuilder(spec)
        .ofPositionDeletes()
        .withPath(file.path)
        .withFormat(api.FileFormat.PARQUET)
        .withFileSizeInBytes(file.size_bytes)
        .withReferencedDataFile(file.data_file)
    )
    return builder if partition is None else builder.withPartition(partition)


def _partitions_of(iceberg: Any, snapshot_id: int, data_files: Sequence[str]) -> dict[str, tuple[Any, Any]]:
    """Each data file's partition spec and partition: None, since every table icetide creates is
    unpartitioned (a file-scoped delete file then needs no partition). A partitioned table was
    not made by icetide: refused by name before anything is committed."""
    if not every_spec_unpartitioned(iceberg):
        raise IcetideJobError(
            f"silver is partitioned (snapshot {snapshot_id}): icetide merges into the unpartitioned "
            "tables it creates"
        )
    return {path: (iceberg.spec(), None) for path in data_files}


def _parquet_files(spark: SparkSession, folder: str) -> list[tuple[str, int]]:
    """Every Parquet file below ``folder`` and its size (Spark's own markers left out), named as
    ``folder`` names it (a listing spells paths qualified, e.g. ``file:/`` for ``/``)."""
    file_system, root = hadoop_path(spark, folder)
    root_text = file_system.makeQualified(root).toString().rstrip("/")
    listing = file_system.listFiles(root, True)
    files = []
    while listing.hasNext():
        status = listing.next()
        listed = str(status.getPath().toString())
        if listed.endswith(".parquet"):
            files.append((folder.rstrip("/") + listed[len(root_text) :], int(status.getLen())))
    return files
