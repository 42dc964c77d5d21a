"""A run that both removes silver rows and appends is published whole: ONE Iceberg commit.

The rows the changes replace or delete are removed by position (found by the classification); the
rows the changes leave are written, without a commit of their own, while the delete files are
(icetide_glue.commit.unpublished_files), and one ``RowDelta`` commits both. Readers of main must never see
one without the other, a failure of either write must leave main as it was, and the rerun must
land the run exactly once.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

import icetide_glue.job as job_module
import icetide_glue.merge.apply as apply_module
import icetide_glue.merge.position_deletes as position_deletes_module
from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import LoadedTable, load_into_silver, silver_table
from glue.sql_plans import plans_of
from icetide_glue.errors import IcetideJobError
from icetide_glue.merge.planned_scan import ROW_POSITION_COLUMNS

# These tests are of the Spark path's commit mechanics (the driver's: test_driver_merge.py).
pytestmark = pytest.mark.spark
# Every run on the Spark path: its own mechanics are tested here (conftest.load_run).
MERGE_PLAN = "spark"

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
# Iceberg's metadata column of a row's data file, as the classification reads it.
DATA_FILE = ROW_POSITION_COLUMNS[0]
# How long a test waits for the other write before it calls the writes not concurrent.
WAIT_SECONDS = 120


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


def _snapshots(spark: SparkSession, table: str) -> int:
    return spark.table(f"{silver_table(table)}.snapshots").count()


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


# The writes as the job has them, before any hook: a hook wraps these, so a later hook replaces an
# earlier one instead of wrapping it.
REAL_WRITE_APPENDED_ROWS = apply_module.write_appended_rows
REAL_WRITE_DELETE_FILES = position_deletes_module._write_delete_files


def _hook_appends(
    patch: pytest.MonkeyPatch, before: Callable[[str], None], after: Callable[[str], None] | None = None
) -> None:
    """Call ``before(target)`` ahead of every write of a run's appended rows that commits with the
    removal, ``after(target)`` once it wrote them (a later call replaces the earlier hook)."""

    def write(spark: SparkSession, target: str, *args: Any, **kwargs: Any) -> Any:
        before(target)
        written = REAL_WRITE_APPENDED_ROWS(spark, target, *args, **kwargs)
        if after is not None:
            after(target)
        return written

    patch.setattr(apply_module, "write_appended_rows", write)


def _hook_delete_writes(patch: pytest.MonkeyPatch, before: Callable[[], None]) -> None:
    """Call ``before()`` ahead of every write of position delete files (a later call replaces the
    earlier hook)."""

    def write(*args: Any, **kwargs: Any) -> Any:
        before()
        return REAL_WRITE_DELETE_FILES(*args, **kwargs)

    patch.setattr(position_deletes_module, "_write_delete_files", write)


@pytest.fixture
def append_hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., None]]:
    """``append_hook(before, after=None)``: :func:`_hook_appends` for the test."""
    yield lambda before, after=None: _hook_appends(monkeypatch, before, after)


@pytest.fixture
def delete_write_hook(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[[Callable[[], None]], None]]:
    """``delete_write_hook(before)``: :func:`_hook_delete_writes` for the test."""
    yield lambda before: _hook_delete_writes(monkeypatch, before)


@pytest.fixture(scope="module")
def first_loaded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> LoadedTable:
    """The first batch, loaded once: the tests of a second run each start from it."""
    first, _ = _two_batches(tmp_path_factory.mktemp("one_commit"))
    return LoadedTable.load(spark, "one_commit", first, merge_plan=MERGE_PLAN)


def _load_first(spark: SparkSession, first_loaded: LoadedTable, tmp_path: Path) -> tuple[str, int, int, Path]:
    """The table holding the first batch (:meth:`LoadedTable.restore`); main's snapshot and the
    snapshot count after it, and the second batch."""
    table = first_loaded.restore()
    _, second = _two_batches(tmp_path)
    return table, _current_snapshot(spark, table), _snapshots(spark, table), second


def _assert_untouched(spark: SparkSession, table: str, before: int, snapshots: int) -> None:
    """Main still at ``before``, no snapshot added anywhere, no branch."""
    assert _current_snapshot(spark, table) == before
    assert _snapshots(spark, table) == snapshots
    assert _rows(spark, table) == AFTER_FIRST
    assert _branches(spark, table) == ["main"]


def _rerun_lands_once(spark: SparkSession, load_run: LoadRun, table: str, run_id: str, second: Path) -> None:
    manifest = load_run(table, run_id, second)
    assert not manifest.get("alreadyCommitted")
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 2, 1)
    assert _rows(spark, table) == AFTER_SECOND
    again = load_run(table, run_id, second)
    assert again["alreadyCommitted"] is True and again["snapshotId"] == manifest["snapshotId"]


@dataclass(frozen=True)
class Landed:
    """A second run that landed, as the tests of a landed run look at it."""

    table: str
    before: int  # main's snapshot after the first run
    snapshots: int  # the table's snapshots after the first run
    manifest: dict[str, Any]
    events: list[tuple[str, str]]  # (what started or was written, on which thread)
    caller: str  # the thread that ran the job
    plans: list[str]  # the physical plans of the second run's SQL executions


@pytest.fixture(scope="module")
def landed(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Landed:
    """One table and its second run, for the tests of a run that removes and appends: each write
    waits at a barrier for the other to start (written one after the other, the first would wait
    in vain and the run fail), the thread of each write and of the tombstones is noted, and the
    run's plans are kept."""
    table = "one_commit_landed"
    first, second = _two_batches(tmp_path_factory.mktemp(table))
    load_into_silver(spark, table, f"{table}-1", first, merge_plan=MERGE_PLAN)
    before, snapshots = _current_snapshot(spark, table), _snapshots(spark, table)
    both_started = threading.Barrier(2, timeout=WAIT_SECONDS)
    events: list[tuple[str, str]] = []

    def note(what: str) -> None:
        events.append((what, threading.current_thread().name))

    def append_starts(_: str) -> None:
        note("append")
        both_started.wait()

    def delete_write_starts() -> None:
        note("deletes")
        both_started.wait()

    real_write_tombstones = job_module.write_tombstones

    def remember(*args: Any) -> bool:
        note("tombstones")
        return real_write_tombstones(*args)

    with pytest.MonkeyPatch.context() as patch:
        _hook_appends(patch, append_starts, lambda _: note("append written"))
        _hook_delete_writes(patch, delete_write_starts)
        patch.setattr(job_module, "write_tombstones", remember)
        manifest, plans = plans_of(
            spark, lambda: load_into_silver(spark, table, f"{table}-2", second, merge_plan=MERGE_PLAN)
        )
    return Landed(table, before, snapshots, manifest, events, threading.current_thread().name, plans)


def test_removal_and_append_reach_main_in_one_commit_with_the_run_id_on_it(
    spark: SparkSession, landed: Landed
) -> None:
    table, before, manifest = landed.table, landed.before, landed.manifest
    assert _rows(spark, table) == AFTER_SECOND
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 2, 1)
    head = _current_snapshot(spark, table)
    assert manifest["snapshotId"] == head
    # One new snapshot, the child of the first run's: no state of main, and no snapshot anywhere,
    # ever held the removal without the append.
    assert _snapshots(spark, table) == landed.snapshots + 1
    history = [
        row["snapshot_id"]
        for row in spark.table(f"{silver_table(table)}.history").orderBy("made_current_at").collect()
    ]
    assert history[-2:] == [before, head]
    summary = (
        spark.table(f"{silver_table(table)}.snapshots")
        .where(F.col("snapshot_id") == head)
        .select("parent_id", "operation", "summary")
        .first()
    )
    assert summary is not None
    assert (summary["parent_id"], summary["operation"]) == (before, "overwrite")
    figures = summary["summary"]
    assert figures["icetide.run-id"] == f"{table}-2"
    # The rows of 1, 2, 7 and 8 added; the positions of 1, 2 and 3 deleted.
    assert (figures["added-records"], figures["added-position-deletes"]) == ("4", "3")
    assert _branches(spark, table) == ["main"]


def test_the_appended_rows_and_the_tombstones_are_written_while_the_delete_files_are(
    spark: SparkSession, landed: Landed
) -> None:
    """The run landed although each write waited for the other to start; the tombstones follow
    the append on its thread."""
    threads = dict(landed.events)
    assert threads["append"] != threads["deletes"] == landed.caller
    assert threads["tombstones"] == threads["append"]
    beside = [what for what, thread in landed.events if thread == threads["append"]]
    assert beside == ["append", "append written", "tombstones"]
    assert _rows(spark, landed.table) == AFTER_SECOND
    assert _tombstones(spark, landed.table) == [(3, "D", "2026-11-21 07:00:00")]


def test_a_run_reads_silver_s_data_once_and_removes_rows_by_file_scoped_position_deletes(
    spark: SparkSession, landed: Landed
) -> None:
    """The classification is the only read of silver's rows: the commit removes the rows it found
    by position, one new delete file per data file touched (Iceberg applies it to that file alone).
    A MERGE would scan silver a second time (a ``WriteDelta`` plan over silver's scan)."""
    table, plans = landed.table, landed.plans
    silver_scan = f"BatchScan {silver_table(table)} ("  # not its metadata tables
    reads = [plan for plan in plans if silver_scan in plan]
    assert len(reads) == 1, [line for plan in plans for line in plan.splitlines() if "BatchScan" in line]
    assert "_file" in reads[0] and "_pos" in reads[0]
    assert not [plan for plan in plans if "WriteDelta" in plan or "ReplaceData" in plan]
    deletes = (
        spark.table(f"{silver_table(table)}.delete_files")
        .select("content", "record_count", "referenced_data_file")
        .collect()
    )
    data_files = {
        row[0]
        for row in spark.sql(f"SELECT file_path FROM {silver_table(table)}.data_files").collect()  # noqa: S608
    }
    assert [(row[0], row[1]) for row in deletes] == [(1, 3)]  # position deletes of 1, 2 and 3
    assert deletes[0][2] in data_files
    assert _rows(spark, table) == AFTER_SECOND


def test_a_failed_append_write_commits_nothing_and_the_rerun_lands_once(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    append_hook: Callable[..., None],
    caplog: pytest.LogCaptureFixture,
) -> None:
    table, before, snapshots, second = _load_first(spark, first_loaded, tmp_path)

    def fail(target: str) -> None:
        raise InjectedFailure(f"append into {target} failed")

    append_hook(fail)
    with pytest.raises(InjectedFailure, match="append into"):
        load_run(table, "append_fails-2", second)
    # The run raises the append's error, once: not logged again as a second failure.
    assert "failed too" not in caplog.text
    _assert_untouched(spark, table, before, snapshots)
    # The tombstones follow the append on its thread: the failed run remembered nothing.
    assert _tombstones(spark, table) == []
    append_hook(lambda target: None)
    _rerun_lands_once(spark, load_run, table, "append_fails-2", second)
    assert _tombstones(spark, table) == [(3, "D", "2026-11-21 07:00:00")]


def test_a_failed_delete_write_waits_for_the_append_write_and_commits_nothing(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    append_hook: Callable[..., None],
    delete_write_hook: Callable[[Callable[[], None]], None],
) -> None:
    """The run fails only once the append's write is over: no write of it runs on afterwards."""
    table, before, snapshots, second = _load_first(spark, first_loaded, tmp_path)
    append_started = threading.Event()
    append_done = threading.Event()

    def fail() -> None:
        append_started.wait(WAIT_SECONDS)
        raise InjectedFailure("the delete files were not written")

    append_hook(lambda target: append_started.set(), lambda target: append_done.set())
    delete_write_hook(fail)
    with pytest.raises(InjectedFailure):
        load_run(table, "deletes_fail-2", second)
    assert append_started.is_set() and append_done.is_set()
    _assert_untouched(spark, table, before, snapshots)
    # The tombstones do not wait for the delete files: the failed run remembered the delete of 3,
    # as a run whose silver commit fails always could (a delete equal to its entry still lands).
    assert _tombstones(spark, table) == [(3, "D", "2026-11-21 07:00:00")]
    delete_write_hook(lambda: None)
    _rerun_lands_once(spark, load_run, table, "deletes_fail-2", second)


@dataclass(frozen=True)
class Loaded:
    """A table holding the first batch, main's snapshot and the snapshot count after it, and the
    second batch's folder."""

    table: str
    before: int
    snapshots: int
    second: Path


@pytest.fixture
def loaded(spark: SparkSession, first_loaded: LoadedTable, tmp_path: Path) -> Loaded:
    """The table holding the first batch, for the tests whose second run fails before its commit:
    each asserts that the run left the table as it found it. (A rerun after a failure that wrote
    files is the append's and the delete files' tests'.)"""
    return Loaded(*_load_first(spark, first_loaded, tmp_path))


def test_when_both_writes_fail_the_run_raises_the_removal_s_error_and_logs_the_other(
    spark: SparkSession,
    load_run: LoadRun,
    loaded: Loaded,
    append_hook: Callable[..., None],
    delete_write_hook: Callable[[Callable[[], None]], None],
    caplog: pytest.LogCaptureFixture,
) -> None:

    def append_fails(_: str) -> None:
        raise InjectedFailure("the append's write failed")

    def deletes_fail() -> None:
        raise InjectedFailure("the delete files were not written")

    append_hook(append_fails)
    delete_write_hook(deletes_fail)
    with pytest.raises(InjectedFailure, match="delete files were not written"):
        load_run(loaded.table, f"{loaded.table}-2", loaded.second)
    assert "the writes beside the removal failed too: " in caplog.text
    assert "the append's write failed" in caplog.text
    _assert_untouched(spark, loaded.table, loaded.before, loaded.snapshots)


def test_a_table_that_cannot_take_position_deletes_is_refused_before_anything_is_written(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, append_hook: Callable[..., None]
) -> None:
    # Its own table: a rollback keeps the format version (LoadedTable).
    first, second = _two_batches(tmp_path)
    load_run("one_commit_v3", "one_commit_v3-1", first)
    before, snapshots = _current_snapshot(spark, "one_commit_v3"), _snapshots(spark, "one_commit_v3")
    spark.sql(f"ALTER TABLE {silver_table('one_commit_v3')} SET TBLPROPERTIES ('format-version' = '3')")
    format_commit = _current_snapshot(spark, "one_commit_v3")
    writes: list[str] = []
    append_hook(writes.append)
    with pytest.raises(IcetideJobError, match=r"format v3 table: .* need format v2"):
        load_run("one_commit_v3", "one_commit_v3-2", second)
    assert writes == []
    assert (_current_snapshot(spark, "one_commit_v3"), _snapshots(spark, "one_commit_v3")) == (
        format_commit,
        snapshots,
    )
    assert format_commit == before and _rows(spark, "one_commit_v3") == AFTER_FIRST


def test_appended_rows_the_files_do_not_hold_commit_nothing(
    spark: SparkSession, load_run: LoadRun, loaded: Loaded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The files written must hold exactly the rows the labels leave (counted from their metrics)."""
    real = apply_module.rows_to_write
    monkeypatch.setattr(apply_module, "rows_to_write", lambda *args: real(*args).where(F.col("id") != 7))
    with pytest.raises(IcetideJobError, match=r"hold 3 row\(s\), not the 4"):
        load_run(loaded.table, f"{loaded.table}-2", loaded.second)
    _assert_untouched(spark, loaded.table, loaded.before, loaded.snapshots)


def test_a_row_to_remove_read_without_its_data_file_stops_the_run_before_any_write(
    spark: SparkSession, load_run: LoadRun, loaded: Loaded, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A removal is by data file and position: a matched row read without its file could not be
    removed, and its key would keep two rows. The classification's counts catch it."""
    tombstones = _tombstones(spark, loaded.table)
    real = apply_module.rows_in_key_ranges

    @contextmanager
    def without_data_files(*args: Any, **kwargs: Any) -> Iterator[Any]:
        with real(*args, **kwargs) as frame:
            positions = kwargs.get("row_positions", False)
            yield frame.withColumn(DATA_FILE, F.lit(None).cast("string")) if positions else frame

    monkeypatch.setattr(apply_module, "rows_in_key_ranges", without_data_files)
    with pytest.raises(IcetideJobError, match="a silver row to remove was read without its data file"):
        load_run(loaded.table, f"{loaded.table}-2", loaded.second)
    _assert_untouched(spark, loaded.table, loaded.before, loaded.snapshots)
    assert _tombstones(spark, loaded.table) == tombstones


@pytest.mark.parametrize("when", ["before the writes", "while the run writes"])
def test_a_commit_to_main_after_the_run_read_it_fails_the_run_and_the_rerun_builds_on_it(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    append_hook: Callable[..., None],
    when: str,
) -> None:
    name, _, _, second = _load_first(spark, first_loaded, tmp_path)
    run_id = "race_" + when.split()[0] + "-2"

    def someone_else_commits(*_: Any) -> None:
        spark.sql(f"DELETE FROM {silver_table(name)} WHERE id = 6")  # noqa: S608

    if when == "while the run writes":
        append_hook(someone_else_commits)
    else:
        real = apply_module.remove_rows

        def commit_first(*args: Any, **kwargs: Any) -> None:
            someone_else_commits()
            real(*args, **kwargs)

        monkeypatch.setattr(apply_module, "remove_rows", commit_first)
    with pytest.raises(Exception, match=r"(?i)conflicting"):
        load_run(name, run_id, second)
    # The other commit stays; the run's labels were made before it, so none of the run landed.
    assert _rows(spark, name) == {key: value for key, value in AFTER_FIRST.items() if key != 6}

    monkeypatch.undo()
    manifest = load_run(name, run_id, second)
    assert not manifest.get("alreadyCommitted")
    assert _rows(spark, name) == {key: value for key, value in AFTER_SECOND.items() if key != 6}
    assert _branches(spark, name) == ["main"]


@pytest.mark.parametrize("landed", [False, True], ids=["not landed", "landed"])
def test_a_commit_whose_answer_is_lost_leaves_the_rerun_knowing_whether_it_landed(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    landed: bool,
) -> None:
    name, before, _, second = _load_first(spark, first_loaded, tmp_path)
    run_id = "lost_" + ("landed" if landed else "not") + "-2"
    real = position_deletes_module.commit_row_delta

    def commit_fails(*args: Any, **kwargs: Any) -> None:
        if landed:  # the commit went through, then the call failed (a lost response)
            real(*args, **kwargs)
        raise InjectedFailure("the commit's answer was lost")

    monkeypatch.setattr(position_deletes_module, "commit_row_delta", commit_fails)
    with pytest.raises(InjectedFailure):
        load_run(name, run_id, second)
    assert _rows(spark, name) == (AFTER_SECOND if landed else AFTER_FIRST)
    assert (_current_snapshot(spark, name) == before) is not landed

    monkeypatch.undo()
    manifest = load_run(name, run_id, second)
    assert bool(manifest.get("alreadyCommitted")) is landed
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (2, 2, 1)
    assert manifest["snapshotId"] == _current_snapshot(spark, name)
    assert _rows(spark, name) == AFTER_SECOND


def test_a_failure_between_the_tombstone_merge_and_append_is_mended_by_the_rerun(
    spark: SparkSession,
    load_run: LoadRun,
    first_loaded: LoadedTable,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A run that both moves an existing tombstone entry (a MERGE) and adds new ones (an append)
    fails in between: silver is untouched, and the rerun leaves exactly one entry per key."""
    table = first_loaded.restore()
    _, second, third = _three_batches(
        tmp_path,
        [
            ("D", "2026-11-21 08:00:00", 3, 30),  # deleted again: its entry moves forward
            ("D", "2026-11-21 08:00:00", 4, 40),  # a new entry
            ("U", "2026-11-21 08:00:00", 1, 12),
        ],
    )
    load_run(table, "memory-2", second)  # remembers the delete of 3
    real = apply_module.tombstone_merge_sql

    def merge_then_fail(*args: Any) -> str:
        spark.sql(real(*args))
        raise InjectedFailure("the tombstone append never ran")

    monkeypatch.setattr(apply_module, "tombstone_merge_sql", merge_then_fail)
    with pytest.raises(InjectedFailure):
        load_run(table, "memory-3", third)
    assert _rows(spark, table) == AFTER_SECOND
    # The MERGE moved 3's entry forward; the new entry of 4 never arrived.
    assert _tombstones(spark, table) == [(3, "D", "2026-11-21 08:00:00")]

    monkeypatch.undo()
    manifest = load_run(table, "memory-3", third)
    counts = ("rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")
    # Unchanged: the delete of 3, a key silver no longer holds (still remembered).
    assert tuple(manifest[name] for name in counts) == (0, 1, 1, 1)
    assert _rows(spark, table) == {1: 12, 2: 21, 5: 50, 6: 60, 7: 70, 8: 80}
    assert _tombstones(spark, table) == [
        (3, "D", "2026-11-21 08:00:00"),
        (4, "D", "2026-11-21 08:00:00"),
    ]
