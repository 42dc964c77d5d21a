"""Silver rows removed by position: the run writes Iceberg position delete files for the rows its
classification found, and commits them validated against the snapshot it read.

A position is only true in the snapshot it was read from: a commit by another writer or a data
file compaction since that read must fail the run with main untouched, and the rerun must
classify again and land; a compaction of delete files fails it only when the run replaces one of
the files it rewrote. Tables from before the sorted layout are bucketed: their delete files
must sit in their data files' partitions.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

import icetide_glue.job as job_module
import icetide_glue.merge.apply as apply_module
import icetide_glue.merge.position_deletes as position_deletes_module
from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, LoadedTable, silver_table
from icetide_glue.columns import SILVER_FILE, SILVER_POS
from icetide_glue.errors import IcetideJobError
from icetide_glue.merge.position_deletes import (
    DELETE_FILE_PATH_ID,
    DELETE_FILE_POS_ID,
    LiveDeleteFile,
    data_file_index,
    data_file_of,
    files_to_replace,
    remove_rows,
)
from icetide_glue.silver import SilverTable

# These tests are of the Spark path's commit mechanics (the driver's: test_driver_merge.py).
pytestmark = pytest.mark.spark
# Every run on the Spark path: its own mechanics are tested here (conftest.load_run).
MERGE_PLAN = "spark"

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)
FIRST = [("I", "2026-11-21 06:00:00", key, key * 10) for key in range(1, 9)]
# Only changes of keys silver holds: one commit straight to main, no append, no branch.
ONLY_REMOVALS = [("D", "2026-11-21 07:00:00", 2, 20), ("D", "2026-11-21 07:00:00", 5, 50)]
INSERT_9 = ("I", "2026-11-21 07:00:00", 9, 90)
AFTER_REMOVALS = {1: 10, 3: 30, 4: 40, 6: 60, 7: 70, 8: 80}


def _rows(spark: SparkSession, table: str) -> dict[int, int]:
    return {row["id"]: row["v"] for row in spark.table(silver_table(table)).select("id", "v").collect()}


def _main(spark: SparkSession, table: str) -> int:
    row = spark.sql(f"SELECT snapshot_id FROM {silver_table(table)}.refs WHERE name = 'main'").first()  # noqa: S608
    assert row is not None
    return int(row[0])


def _branches_besides_main(spark: SparkSession, table: str) -> list[str]:
    refs = spark.table(f"{silver_table(table)}.refs").select("name").collect()
    return sorted(row[0] for row in refs if row[0] != "main")


def _batches(tmp_path: Path, second_rows: list[tuple[str, str, int, int]]) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    write_dms_file(first, "LOAD00000001.parquet", BRONZE, FIRST)
    write_dms_file(second, "20261121-070000000.parquet", BRONZE, second_rows)
    return first, second


@pytest.fixture(scope="module")
def first_loaded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> LoadedTable:
    """``FIRST``, loaded once: the tests of a run after it each start from this load."""
    first, _ = _batches(tmp_path_factory.mktemp("pos"), [])
    return LoadedTable.load(spark, "pos_first", first, merge_plan=MERGE_PLAN)


def _before_removal(monkeypatch: pytest.MonkeyPatch, action: Callable[[], object]) -> None:
    """Run ``action`` just before the run writes its position deletes (after it read silver)."""
    real = apply_module.remove_rows

    def remove(*args: Any, **kwargs: Any) -> None:
        action()
        real(*args, **kwargs)

    monkeypatch.setattr(apply_module, "remove_rows", remove)


def _compaction_before_removal(
    monkeypatch: pytest.MonkeyPatch, spark: SparkSession, procedure: str, table: str
) -> None:
    """Iceberg's ``procedure`` rewrites every file it compacts of ``table`` just before the removal."""
    _before_removal(
        monkeypatch,
        lambda: spark.sql(
            f"CALL local.system.{procedure}(table => 'silver.{table}', options => map('rewrite-all', 'true'))"
        ).collect(),
    )


def test_a_run_of_removals_only_commits_once_to_main_with_its_run_id(
    spark: SparkSession, load_run: LoadRun, first_loaded: LoadedTable, tmp_path: Path
) -> None:
    table = first_loaded.restore()
    _, second = _batches(tmp_path, ONLY_REMOVALS)
    before = _main(spark, table)
    manifest = load_run(table, "only-2", second)
    assert (manifest["rowsDeleted"], manifest["rowsUpdated"], manifest["rowsInserted"]) == (2, 0, 0)
    assert _rows(spark, table) == AFTER_REMOVALS
    head = spark.sql(
        f"SELECT parent_id, operation, summary['icetide.run-id'] AS run_id, "  # noqa: S608
        f"summary['added-position-deletes'] AS removed FROM {silver_table(table)}.snapshots "
        f"WHERE snapshot_id = {manifest['snapshotId']}"
    ).first()
    assert head is not None
    assert (head["parent_id"], head["operation"], head["run_id"], head["removed"]) == (
        before,
        "delete",
        "only-2",
        "2",
    )
    assert manifest["snapshotId"] == _main(spark, table)
    # A rerun finds the run on main and rebuilds its manifest from the removal's summary.
    again = load_run(table, "only-2", second)
    assert again["alreadyCommitted"] is True
    assert (again["snapshotId"], again["rowsDeleted"], again["rowsRead"]) == (manifest["snapshotId"], 2, 2)
    assert _main(spark, table) == manifest["snapshotId"]


RACES = [
    # (the run's batch, what the other writer does, when it does it)
    pytest.param(
        ONLY_REMOVALS, "insert", "before the removal", "Found conflicting files", id="removal-insert"
    ),
    pytest.param(
        ONLY_REMOVALS,
        "delete",
        "before the removal",
        "Found new conflicting delete files",
        id="removal-delete",
    ),
    pytest.param(
        ONLY_REMOVALS, "insert", "before the classification", "Found conflicting files", id="read-insert"
    ),
    pytest.param(
        [*ONLY_REMOVALS, INSERT_9],
        "insert",
        "before the removal",
        "Found conflicting files",
        id="both-insert",
    ),
    pytest.param(
        [*ONLY_REMOVALS, INSERT_9],
        "delete",
        "before the classification",
        "Found new conflicting delete files",
        id="both-delete",
    ),
]


@pytest.mark.parametrize(("second_rows", "other", "when", "refusal"), RACES)
def test_a_commit_by_another_writer_after_the_run_noted_main_fails_the_run_and_the_rerun_lands(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    second_rows: list[tuple[str, str, int, int]],
    other: str,
    when: str,
    refusal: str,
) -> None:
    """Another writer commits (a row of key 20, or a delete of key 8) after the run noted main's
    snapshot, before its classification read silver or after: the positions or the labels may be
    stale, so the run fails (the validation of its one commit, with or without appended rows) and
    main keeps only the other writer's commit."""
    name = first_loaded.restore()
    run_id = f"race_{len(second_rows)}_{other}_{when.split()[-1]}-2"
    _, second = _batches(tmp_path, second_rows)
    other_row = (
        spark.table(silver_table(name)).where("id = 1").withColumns({"id": F.lit(20), "v": F.lit(200)})
    )

    def other_writer() -> None:
        if other == "insert":
            other_row.writeTo(silver_table(name)).append()
        else:
            spark.sql(f"DELETE FROM {silver_table(name)} WHERE id = 8")  # noqa: S608

    if when == "before the removal":
        _before_removal(monkeypatch, other_writer)
    else:
        real = job_module.main_snapshot_id

        def noted_then_other_writer(*args: Any) -> int | None:
            noted = real(*args)
            other_writer()
            return noted

        monkeypatch.setattr(job_module, "main_snapshot_id", noted_then_other_writer)
    with pytest.raises(Exception, match=refusal):
        load_run(name, run_id, second)
    after_other = {key: key * 10 for key in range(1, 9)}
    if other == "insert":
        after_other[20] = 200
    else:
        del after_other[8]
    assert _rows(spark, name) == after_other
    assert _branches_besides_main(spark, name) == []

    monkeypatch.undo()
    load_run(name, run_id, second)
    inserted = {9: 90} if INSERT_9 in second_rows else {}
    assert _rows(spark, name) == {
        **{key: value for key, value in after_other.items() if key not in (2, 5)},
        **inserted,
    }


def test_a_compaction_after_the_read_fails_the_removal_and_the_rerun_lands(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A compaction replaces the data files the positions point into (same rows, new files)."""
    table = first_loaded.restore()
    _, second = _batches(tmp_path, ONLY_REMOVALS)
    before = _main(spark, table)
    _compaction_before_removal(monkeypatch, spark, "rewrite_data_files", table)
    with pytest.raises(Exception, match="Cannot commit, missing data files"):
        load_run(table, "compact-2", second)
    assert _main(spark, table) != before  # the compaction stands
    assert _rows(spark, table) == {key: key * 10 for key in range(1, 9)}

    monkeypatch.undo()
    manifest = load_run(table, "compact-2", second)
    assert manifest["rowsDeleted"] == 2
    assert _rows(spark, table) == AFTER_REMOVALS


def test_a_partitioned_table_icetide_did_not_create_is_refused_and_left_as_it_was(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    first, second = _batches(tmp_path, ONLY_REMOVALS)
    load_run("pos_partitioned", "partitioned-1", first)
    spark.sql(f"ALTER TABLE {silver_table('pos_partitioned')} ADD PARTITION FIELD bucket(4, id)")
    before = _rows(spark, "pos_partitioned")
    with pytest.raises(IcetideJobError, match="silver is partitioned"):
        load_run("pos_partitioned", "partitioned-2", second, merge_plan="spark")
    assert _rows(spark, "pos_partitioned") == before


def test_a_written_delete_file_is_matched_to_its_data_file_by_its_folder() -> None:
    data_files = ["s3://b/t/data/a.parquet", "s3://b/t/data/b.parquet"]
    folder = "s3://b/t/data/icetide-position-deletes-1"
    assert data_file_of(f"{folder}/data_file_index=1/part-0.parquet", data_files) == data_files[1]
    assert data_file_of(f"{folder}/data_file_index=0/part-7.parquet", data_files) == data_files[0]
    for stray in (
        f"{folder}/part-0.parquet",
        f"{folder}/data_file_index=2/p.parquet",
        f"{folder}/data_file_index=x/p.parquet",
    ):
        with pytest.raises(IcetideJobError, match="not in a data file's folder"):
            data_file_of(stray, data_files)


def test_the_data_file_index_numbers_every_path_as_listed_hostile_ones_too(spark: SparkSession) -> None:
    hostile = [
        's3://b/t/data/quote"d.parquet',
        "s3://b/t/data/back\\slash.parquet",
        "s3://b/t/data/new\nline.parquet",
        "s3://b/t/data/comma,],[bracket.parquet",
        "s3://b/t/data/ünï cödé 😀.parquet",
        "file:/tmp/w h/data/%2F.parquet",
        "s3://b/t/data/null.parquet",
        "",
    ]
    data_files = hostile + [f"s3://b/t/data/{n:05d}-0-f.parquet" for n in range(1500)]
    rows = data_file_index(spark, data_files).collect()
    assert len(rows) == len(data_files)
    assert {row["file_path"]: row["data_file_index"] for row in rows} == {
        path: i for i, path in enumerate(data_files)
    }
    assert [row["data_file_index"] for row in data_file_index(spark, ["a", "b"]).collect()] == [0, 1]


def _table_of_two_files(spark: SparkSession, name: str, version: int = 2) -> SilverTable:
    spark.sql(
        f"CREATE TABLE {silver_table(name)} (id bigint, v bigint) USING iceberg "
        f"TBLPROPERTIES ('format-version' = '{version}')"
    )
    spark.range(0, 1000).select("id", (F.col("id") * 10).alias("v")).repartition(2, "id").writeTo(
        silver_table(name)
    ).append()
    return SilverTable(CATALOG, SILVER_DATABASE, name)


def _rows_to_remove(spark: SparkSession, name: str) -> DataFrame:
    """Every third row's position, spread over four partitions in no order (as a shuffle leaves them)."""
    return (
        spark.table(silver_table(name))
        .where("id % 3 = 0")
        .select(F.col("_file").alias(SILVER_FILE), F.col("_pos").alias(SILVER_POS))
        .repartition(4)
    )


def _data_files(removed: DataFrame) -> list[str]:
    return sorted(row[0] for row in removed.select(SILVER_FILE).distinct().collect())


def test_delete_files_hold_their_positions_sorted_with_iceberg_s_field_ids(spark: SparkSession) -> None:
    table = _table_of_two_files(spark, "pos_sorted")
    base = _main(spark, "pos_sorted")
    removed = _rows_to_remove(spark, "pos_sorted")
    remove_rows(
        spark,
        table,
        removed,
        _data_files(removed),
        removed.count(),
        base,
        {"icetide.run-id": "sorted"},
    )

    assert sorted(row[0] for row in spark.table(silver_table("pos_sorted")).collect()) == [
        key for key in range(1000) if key % 3
    ]
    deletes = spark.sql(
        f"SELECT file_path, record_count, referenced_data_file FROM {silver_table('pos_sorted')}.delete_files"  # noqa: S608
    ).collect()
    assert len(deletes) == 2 and sum(row[1] for row in deletes) == 334
    for delete_file in deletes:
        written = spark.read.parquet(delete_file[0]).collect()
        assert {row["file_path"] for row in written} == {delete_file[2]}
        positions = [row["pos"] for row in written]
        assert positions == sorted(positions) and len(positions) == delete_file[1]
    assert not [path for path in _files_below(deletes[0][0]) if "_SUCCESS" in path]
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    columns = jvm.org.apache.iceberg.MetadataColumns
    ids = (columns.DELETE_FILE_PATH.fieldId(), columns.DELETE_FILE_POS.fieldId())
    assert ids == (DELETE_FILE_PATH_ID, DELETE_FILE_POS_ID)


def _files_below(delete_file: str) -> list[str]:
    root = Path(delete_file.removeprefix("file:")).parent.parent
    return [str(path) for path in root.rglob("*")]


@pytest.mark.parametrize("version", [1, 3])
def test_a_table_of_another_format_version_is_refused_before_anything_is_written(
    spark: SparkSession, version: int
) -> None:
    name = f"pos_v{version}"
    table = _table_of_two_files(spark, name, version)
    before = _main(spark, name)
    with pytest.raises(IcetideJobError, match=f"format v{version} table: .* need format v2"):
        removed = _rows_to_remove(spark, name)
        remove_rows(spark, table, removed, _data_files(removed), removed.count(), before, {})
    assert _main(spark, name) == before
    assert spark.table(silver_table(name)).count() == 1000


def _live_delete_files(spark: SparkSession, table: str) -> dict[str | None, list[int]]:
    """Per data file, the record counts of the live delete files that name it (None: no file)."""
    files: dict[str | None, list[int]] = {}
    for row in spark.table(f"{silver_table(table)}.delete_files").collect():
        files.setdefault(row["referenced_data_file"], []).append(row["record_count"])
    return files


def _delete_files_after_a_run(files: list[int], new_positions: int, limit: int) -> tuple[list[int], str]:
    """The oracle of one data file's delete files (their position counts) after a run that removes
    ``new_positions`` more of its rows, and which way the rule went: below the limit a file is
    added; at it the run's file takes over all but the largest, or all when the largest holds
    fewer than the others together."""
    if new_positions == 0:
        return files, "no new position"
    if len(files) < limit:
        return sorted([*files, new_positions]), "added"
    largest, others = max(files), sorted(files)[:-1]
    if limit > 1 and largest >= sum(others):
        return sorted([largest, sum(others) + new_positions]), "kept the largest"
    return [sum(files) + new_positions], "took over all"


# A limit that a few runs fill and pass each way of the rule. The limit of one, where the run's
# file always takes over, is committed by the test of a compaction of delete files after the read.
FEW_FILES_LIMIT = 3


def test_a_data_file_keeps_few_delete_files_holding_every_run_s_removals(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seeded runs of updates and deletes: after each, silver holds what a dictionary replaying the
    changes holds, no data file has more than the limit's live delete files, and the first data
    file's are the ones an independent replay of the size-tiered rule expects (their positions:
    one per key ever changed, its row of that key left at the key's first change)."""
    limit = FEW_FILES_LIMIT
    monkeypatch.setattr(position_deletes_module, "MAX_DELETE_FILES_PER_DATA_FILE", limit)
    table = "pos_few_files"
    rng = random.Random(5)
    oracle = {key: key * 10 for key in range(1, 61)}
    start = tmp_path / "start"
    write_dms_file(
        start, "LOAD00000001.parquet", BRONZE, [("I", "2026-11-21 06:00:00", k, v) for k, v in oracle.items()]
    )
    load_run(table, "few-0", start)
    (original,) = spark.table(f"{silver_table(table)}.data_files").select("file_path").collect()
    changed_ever: set[int] = set()
    expected: list[int] = []
    ways = []
    for run in range(1, 8):
        at = f"2026-11-21 {6 + run:02d}:00:00"
        rows = []
        keys = rng.sample(sorted(oracle), rng.choice([2, 4, 8]))
        if run == 2:
            # Only keys changed before, whose rows are in later files: no new position here.
            keys = rng.sample(sorted(changed_ever & oracle.keys()), 2)
        for key in keys:
            if rng.random() < 0.3:
                rows.append(("D", at, key, oracle.pop(key)))
            else:
                oracle[key] = rng.randrange(1_000_000)
                rows.append(("U", at, key, oracle[key]))
        expected, way = _delete_files_after_a_run(expected, len(set(keys) - changed_ever), limit)
        ways.append(way)
        changed_ever.update(keys)
        folder = tmp_path / f"run-{run}"
        write_dms_file(folder, f"20261121-{6 + run:02d}0000000.parquet", BRONZE, rows)
        load_run(table, f"few-{run}", folder)
        assert _rows(spark, table) == oracle
        live = _live_delete_files(spark, table)
        assert all(len(counts) <= limit for counts in live.values()), live
        assert sorted(live[original[0]]) == expected, (run, way, live[original[0]], expected)
        assert sum(live[original[0]]) == len(changed_ever)
    # The seed is picked so that the runs go every way of the rule.
    assert set(ways) == {"no new position", "added", "kept the largest", "took over all"}, ways


def test_the_size_tiered_rule_replaces_the_smaller_delete_files_at_the_limit() -> None:
    def live(*counts: int, data_file: str = "a") -> list[LiveDeleteFile]:
        return [LiveDeleteFile(f"{data_file}-{i}", 1, data_file, count) for i, count in enumerate(counts)]

    def replaced(files: list[LiveDeleteFile], limit: int) -> list[str]:
        return sorted(file.path for file in files_to_replace(files, limit))

    assert replaced(live(100, 5, 5), 4) == []
    assert replaced(live(100, 5, 5, 5), 4) == ["a-1", "a-2", "a-3"]
    assert replaced(live(10, 5, 5, 5), 4) == ["a-0", "a-1", "a-2", "a-3"]
    assert replaced(live(15, 5, 5, 5), 4) == ["a-1", "a-2", "a-3"]  # a tie keeps the largest
    assert replaced(live(7), 1) == ["a-0"]
    assert replaced([*live(9, 1), *live(3, data_file="b")], 2) == ["a-1"]
    with pytest.raises(ValueError, match="at least one delete file"):
        files_to_replace(live(1), 0)


def test_a_compaction_of_delete_files_after_the_read_fails_the_removal_and_the_rerun_lands(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The run replaces the data file's delete file; a compaction that rewrote that delete file
    since the run's snapshot must fail the commit (its positions would be kept twice or lost)."""
    monkeypatch.setattr(position_deletes_module, "MAX_DELETE_FILES_PER_DATA_FILE", 1)
    table = first_loaded.restore()
    _, second = _batches(tmp_path, ONLY_REMOVALS)
    third = tmp_path / "third"
    write_dms_file(third, "20261121-080000000.parquet", BRONZE, [("D", "2026-11-21 08:00:00", 7, 70)])
    load_run(table, "deletes-2", second)
    _compaction_before_removal(monkeypatch, spark, "rewrite_position_delete_files", table)
    with pytest.raises(Exception, match="Missing required files to delete"):
        load_run(table, "deletes-3", third)
    assert _rows(spark, table) == AFTER_REMOVALS

    monkeypatch.setattr(apply_module, "remove_rows", remove_rows)  # the compaction no more
    manifest = load_run(table, "deletes-3", third)
    assert manifest["rowsDeleted"] == 1
    assert _rows(spark, table) == {key: v for key, v in AFTER_REMOVALS.items() if key != 7}
    # The compaction's delete file covers one data file (its path bounds), so the rerun replaced it.
    assert list(_live_delete_files(spark, table).values()) == [[3]]


def test_a_compaction_of_delete_files_meets_a_run_that_adds_a_delete_file_without_conflict(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Below the limit the run replaces no delete file: the compaction's file and the run's hold
    different positions, so both stand and nothing is lost or kept twice."""
    table = first_loaded.restore()
    _, second = _batches(tmp_path, ONLY_REMOVALS)
    load_run(table, "room-2", second)
    third = tmp_path / "third"
    write_dms_file(third, "20261121-080000000.parquet", BRONZE, [("D", "2026-11-21 08:00:00", 7, 70)])
    _compaction_before_removal(monkeypatch, spark, "rewrite_position_delete_files", table)
    manifest = load_run(table, "room-3", third)
    assert manifest["rowsDeleted"] == 1
    assert _rows(spark, table) == {key: v for key, v in AFTER_REMOVALS.items() if key != 7}
    live = _live_delete_files(spark, table)
    assert sorted(count for counts in live.values() for count in counts) == [1, 2]
    snapshots = spark.sql(f"SELECT operation FROM {silver_table(table)}.snapshots")  # noqa: S608
    assert [row[0] for row in snapshots.collect()][-2:] == ["replace", "delete"]  # compaction, run


def test_delete_files_that_do_not_hold_every_position_are_not_committed(spark: SparkSession) -> None:
    """The count the classification made must be what the files hold: a position lost between the
    classification and the write would leave a second row for its key."""
    table = _table_of_two_files(spark, "pos_counted")
    before = _main(spark, "pos_counted")
    removed = _rows_to_remove(spark, "pos_counted")
    with pytest.raises(IcetideJobError, match=r"hold 334 position\(s\), not the 335 to remove"):
        remove_rows(spark, table, removed, _data_files(removed), 335, before, {})
    assert _main(spark, "pos_counted") == before
    assert spark.table(silver_table("pos_counted")).count() == 1000
