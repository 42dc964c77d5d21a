"""A run that both removes silver rows and appends is published whole: staged on a branch, then
one fast-forward.

The rows the changes replace or delete are removed by position (found by the classification);
the rows the changes leave are appended. Readers of main must never see one without the other, a
failure in between must leave main as it was, and the rerun must land the run exactly once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import icetide_glue.apply as apply_module
import icetide_glue.staging as staging_module
from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import silver_table
from glue.sql_plans import plans_of
from icetide_glue.maintenance import maintain_table
from icetide_glue.silver import SilverTable
from icetide_glue.sql import STAGING_BRANCH

pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)
FIRST = [("I", "2026-11-21 06:00:00", key, key * 10) for key in range(1, 7)]
# Updates 1 and 2, deletes 3, inserts 7 and 8: both a removal (1, 2, 3) and an append (1, 2, 7, 8).
SECOND = [
    ("U", "2026-11-21 07:00:00", 1, 11),
    ("U", "2026-11-21 07:00:00", 2, 21),
    ("D", "2026-11-21 07:00:00", 3, 30),
    ("I", "2026-11-21 07:00:00", 7, 70),
    ("I", "2026-11-21 07:00:00", 8, 80),
]
AFTER_FIRST = {1: 10, 2: 20, 3: 30, 4: 40, 5: 50, 6: 60}
AFTER_SECOND = {1: 11, 2: 21, 4: 40, 5: 50, 6: 60, 7: 70, 8: 80}


class InjectedFailure(RuntimeError):
    pass


def _rows(spark: SparkSession, table: str) -> dict[int, int]:
    return {row["id"]: row["v"] for row in spark.table(silver_table(table)).select("id", "v").collect()}


def _tombstones(spark: SparkSession, table: str) -> list[tuple[int, str, str]]:
    """The tombstone entries as (key, op, change time as UTC text: PySpark hands timestamps back in
    the machine's local time)."""
    at_utc = F.date_format(
        F.to_utc_timestamp("_icetide_change_ts", F.current_timezone()), "yyyy-MM-dd HH:mm:ss"
    )
    rows = (
        spark.table(f"{silver_table(table)}__icetide_tombstones")
        .select("id", "_icetide_op", at_utc)
        .collect()
    )
    return sorted((row[0], row[1], row[2]) for row in rows)


def _current_snapshot(spark: SparkSession, table: str) -> int:
    row = spark.sql(f"SELECT snapshot_id FROM {silver_table(table)}.refs WHERE name = 'main'").first()  # noqa: S608
    assert row is not None
    return int(row[0])


def _branches(spark: SparkSession, table: str) -> list[str]:
    return sorted(row[0] for row in spark.table(f"{silver_table(table)}.refs").select("name").collect())


def _two_batches(tmp_path: Path) -> tuple[Path, Path]:
    first, second = tmp_path / "first", tmp_path / "second"
    write_dms_file(first, "LOAD00000001.parquet", BRONZE, FIRST)
    write_dms_file(second, "20261121-070000000.parquet", BRONZE, SECOND)
    return first, second


def _three_batches(tmp_path: Path, third_rows: list[tuple[str, str, int, int]]) -> tuple[Path, Path, Path]:
    """The two batches, then a third of ``third_rows`` (changes at 08:00)."""
    third = tmp_path / "third"
    write_dms_file(third, "20261121-080000000.parquet", BRONZE, third_rows)
    return (*_two_batches(tmp_path), third)


@pytest.fixture
def append_hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[str], None]], None]]:
    """``append_hook(before)``: call ``before(target)`` ahead of every append the job makes (a
    later call replaces the earlier hook)."""
    real = apply_module.append_changes

    def install(before: Callable[[str], None]) -> None:
        def append(target: str, *args: Any, **kwargs: Any) -> None:
            before(target)
            real(target, *args, **kwargs)

        monkeypatch.setattr(apply_module, "append_changes", append)

    yield install


def _fail_between_removal_and_append(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    append_hook: Callable[[Callable[[str], None]], None],
    table: str,
) -> tuple[int, Path]:
    """Load the first batch into ``table``, then run ``<table>-2`` on the second with its append
    into the staging branch failing; returns main's snapshot before it and the second batch."""
    first, second = _two_batches(tmp_path)
    load_run(table, f"{table}-1", first)
    before = _current_snapshot(spark, table)

    def fail(target: str) -> None:
        raise InjectedFailure(f"append into {target} failed")

    append_hook(fail)
    with pytest.raises(InjectedFailure, match=f"branch_{STAGING_BRANCH}"):
        load_run(table, f"{table}-2", second)
    return before, second


def test_removal_and_append_reach_main_in_one_step_with_the_run_id_on_its_head(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    first, second = _two_batches(tmp_path)
    load_run("staged_ok", "staged-1", first)
    before = _current_snapshot(spark, "staged_ok")
    manifest = load_run("staged_ok", "staged-2", second)

    assert _rows(spark, "staged_ok") == AFTER_SECOND
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 2, 1)
    head = _current_snapshot(spark, "staged_ok")
    assert manifest["snapshotId"] == head
    # Main moved from the first run's snapshot to the append on top of the removal: no state of
    # main ever held the removal without the append.
    history = [
        row["snapshot_id"]
        for row in spark.table(f"{silver_table('staged_ok')}.history").orderBy("made_current_at").collect()
    ]
    assert history[-2:] == [before, head]
    operations = {
        row["snapshot_id"]: (row["operation"], row["run_id"])
        for row in spark.table(f"{silver_table('staged_ok')}.snapshots")
        .select("snapshot_id", "operation", F.col("summary")["icetide.run-id"].alias("run_id"))
        .collect()
    }
    assert operations[head] == ("append", "staged-2")
    staged_removal = [snapshot for snapshot, (operation, _) in operations.items() if operation == "delete"]
    assert len(staged_removal) == 1 and operations[staged_removal[0]] == ("delete", None)
    assert _branches(spark, "staged_ok") == ["main"]


def test_a_failure_between_removal_and_append_leaves_main_and_the_rerun_lands_once(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    append_hook: Callable[[Callable[[str], None]], None],
) -> None:
    before, second = _fail_between_removal_and_append(spark, load_run, tmp_path, append_hook, "staged_fail")
    # The removal committed on the branch only: main and its readers saw nothing.
    assert _current_snapshot(spark, "staged_fail") == before
    assert _rows(spark, "staged_fail") == AFTER_FIRST
    assert _branches(spark, "staged_fail") == [STAGING_BRANCH, "main"]

    append_hook(lambda target: None)
    manifest = load_run("staged_fail", "staged_fail-2", second)
    assert not manifest.get("alreadyCommitted")
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 2, 1)
    assert _rows(spark, "staged_fail") == AFTER_SECOND
    assert _branches(spark, "staged_fail") == ["main"]
    # The first attempt remembered the delete of 3 before it failed; the rerun found that entry.
    tombstones = spark.table(f"{silver_table('staged_fail')}__icetide_tombstones").collect()
    assert [(row["id"], row["_icetide_op"]) for row in tombstones] == [(3, "D")]
    again = load_run("staged_fail", "staged_fail-2", second)
    assert again["alreadyCommitted"] is True and again["snapshotId"] == manifest["snapshotId"]


@pytest.mark.parametrize("when", ["before the branch is made", "while the run stages"])
def test_a_commit_to_main_after_the_run_read_it_fails_the_run_and_the_rerun_builds_on_it(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    append_hook: Callable[[Callable[[str], None]], None],
    when: str,
) -> None:
    name = "staged_race_" + when.split()[0]
    first, second = _two_batches(tmp_path)
    load_run(name, "race-1", first)

    def someone_else_commits(*_: Any) -> None:
        spark.sql(f"DELETE FROM {silver_table(name)} WHERE id = 6")  # noqa: S608

    if when == "while the run stages":
        append_hook(someone_else_commits)
    else:
        real = apply_module.staged_commit

        def commit_first(*args: Any) -> None:
            someone_else_commits()
            real(*args)

        monkeypatch.setattr(apply_module, "staged_commit", commit_first)
    with pytest.raises(Exception, match=r"(?i)fast.?forward|ancestor"):
        load_run(name, "race-2", second)
    # The other commit stays; the run's labels were made before it, so none of the run landed.
    assert _rows(spark, name) == {key: value for key, value in AFTER_FIRST.items() if key != 6}

    monkeypatch.undo()
    manifest = load_run(name, "race-2", second)
    assert not manifest.get("alreadyCommitted")
    assert _rows(spark, name) == {key: value for key, value in AFTER_SECOND.items() if key != 6}
    assert _branches(spark, name) == ["main"]


def test_a_branch_that_cannot_be_dropped_leaves_the_run_committed_and_the_next_run_replaces_it(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first, second, third = _three_batches(
        tmp_path, [("U", "2026-11-21 08:00:00", 4, 41), ("I", "2026-11-21 08:00:00", 9, 90)]
    )
    load_run("staged_drop", "drop-1", first)
    monkeypatch.setattr(staging_module, "drop_branch_sql", lambda table, branch: "NOT SQL AT ALL")
    manifest = load_run("staged_drop", "drop-2", second)
    # Housekeeping after the fast-forward: logged, and the run stands.
    assert manifest["snapshotId"] == _current_snapshot(spark, "staged_drop")
    assert _rows(spark, "staged_drop") == AFTER_SECOND
    assert _branches(spark, "staged_drop") == [STAGING_BRANCH, "main"]

    monkeypatch.undo()
    load_run("staged_drop", "drop-3", third)
    assert _rows(spark, "staged_drop") == {**AFTER_SECOND, 4: 41, 9: 90}
    assert _branches(spark, "staged_drop") == ["main"]


def test_maintenance_drops_a_staging_branch_a_failed_run_left(
    spark: SparkSession,
    load_run: LoadRun,
    tmp_path: Path,
    append_hook: Callable[[Callable[[str], None]], None],
) -> None:
    _fail_between_removal_and_append(spark, load_run, tmp_path, append_hook, "staged_left")
    assert _branches(spark, "staged_left") == [STAGING_BRANCH, "main"]
    maintain_table(spark, SilverTable("local", "silver", "staged_left"))
    assert _branches(spark, "staged_left") == ["main"]
    assert _rows(spark, "staged_left") == AFTER_FIRST


def test_a_run_reads_silver_s_data_once_and_removes_rows_by_file_scoped_position_deletes(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    """The classification is the only read of silver's rows: the commit removes the rows it found
    by position, one new delete file per data file touched (Iceberg applies it to that file alone).
    A MERGE would scan silver a second time (a ``WriteDelta`` plan over silver's scan)."""
    first, second = _two_batches(tmp_path)
    load_run("staged_reads", "reads-1", first)
    _, plans = plans_of(spark, lambda: load_run("staged_reads", "reads-2", second))
    silver_scan = f"BatchScan {silver_table('staged_reads')} ("  # not its metadata tables
    reads = [plan for plan in plans if silver_scan in plan]
    assert len(reads) == 1, [line for plan in plans for line in plan.splitlines() if "BatchScan" in line]
    assert "_file" in reads[0] and "_pos" in reads[0]
    assert not [plan for plan in plans if "WriteDelta" in plan or "ReplaceData" in plan]
    deletes = spark.sql(
        f"SELECT content, record_count, referenced_data_file FROM {silver_table('staged_reads')}.delete_files"  # noqa: S608
    ).collect()
    data_files = {
        row[0]
        for row in spark.sql(f"SELECT file_path FROM {silver_table('staged_reads')}.data_files").collect()  # noqa: S608
    }
    assert [(row[0], row[1]) for row in deletes] == [(1, 3)]  # position deletes of 1, 2 and 3
    assert deletes[0][2] in data_files
    assert _rows(spark, "staged_reads") == AFTER_SECOND


@pytest.mark.parametrize("moved", [False, True], ids=["before main moved", "after main moved"])
def test_a_fast_forward_that_fails_leaves_main_whole_and_the_rerun_knows_whether_it_landed(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, moved: bool
) -> None:
    """The branch's head carries the run id either way; only main's ancestors count as committed."""
    name = "staged_ff_" + ("after" if moved else "before")
    first, second = _two_batches(tmp_path)
    load_run(name, "ff-1", first)
    before = _current_snapshot(spark, name)
    real = staging_module.fast_forward_sql

    def fast_forward_fails(*args: str) -> str:
        if moved:  # the procedure committed, then the call failed (a lost response)
            spark.sql(real(*args))
        raise InjectedFailure("fast-forward failed")

    monkeypatch.setattr(staging_module, "fast_forward_sql", fast_forward_fails)
    with pytest.raises(InjectedFailure):
        load_run(name, "ff-2", second)
    assert _branches(spark, name) == [STAGING_BRANCH, "main"]
    assert _rows(spark, name) == (AFTER_SECOND if moved else AFTER_FIRST)
    assert (_current_snapshot(spark, name) == before) is not moved

    monkeypatch.undo()
    manifest = load_run(name, "ff-2", second)
    assert bool(manifest.get("alreadyCommitted")) is moved
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 2, 1)
    assert manifest["snapshotId"] == _current_snapshot(spark, name)
    assert _rows(spark, name) == AFTER_SECOND
    main_runs = [
        row[0]
        for row in spark.sql(
            f"SELECT s.summary['icetide.run-id'] FROM {silver_table(name)}.snapshots s "  # noqa: S608
            f"JOIN {silver_table(name)}.history h ON s.snapshot_id = h.snapshot_id "
            "WHERE h.is_current_ancestor"
        ).collect()
    ]
    assert sorted(run for run in main_runs if run is not None) == ["ff-1", "ff-2"]


def test_a_failure_between_the_tombstone_merge_and_append_is_mended_by_the_rerun(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that both moves an existing tombstone entry (a MERGE) and adds new ones (an append)
    fails in between: silver is untouched, and the rerun leaves exactly one entry per key."""
    first, second, third = _three_batches(
        tmp_path,
        [
            ("D", "2026-11-21 08:00:00", 3, 30),  # deleted again: its entry moves forward
            ("D", "2026-11-21 08:00:00", 4, 40),  # a new entry
            ("U", "2026-11-21 08:00:00", 1, 12),
        ],
    )
    load_run("staged_memory", "memory-1", first)
    load_run("staged_memory", "memory-2", second)  # remembers the delete of 3
    real = apply_module.memory_merge_sql

    def merge_then_fail(*args: Any) -> str:
        spark.sql(real(*args))
        raise InjectedFailure("the tombstone append never ran")

    monkeypatch.setattr(apply_module, "memory_merge_sql", merge_then_fail)
    with pytest.raises(InjectedFailure):
        load_run("staged_memory", "memory-3", third)
    assert _rows(spark, "staged_memory") == AFTER_SECOND
    # The MERGE moved 3's entry forward; the new entry of 4 never arrived.
    assert _tombstones(spark, "staged_memory") == [(3, "D", "2026-11-21 08:00:00")]

    monkeypatch.undo()
    manifest = load_run("staged_memory", "memory-3", third)
    counts = ("rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")
    # Unchanged: the delete of 3, a key silver no longer holds (still remembered).
    assert tuple(manifest[name] for name in counts) == (0, 1, 1, 1)
    assert _rows(spark, "staged_memory") == {1: 12, 2: 21, 5: 50, 6: 60, 7: 70, 8: 80}
    assert _tombstones(spark, "staged_memory") == [
        (3, "D", "2026-11-21 08:00:00"),
        (4, "D", "2026-11-21 08:00:00"),
    ]
