"""Table maintenance on a silver table built by the real job: rows kept, files and snapshots cut."""

from __future__ import annotations

import os
import random
import time
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import Row, SparkSession
from pyspark.sql.types import StructType

from glue.dms_files import write_dms_file
from glue.frames import assert_frame_equal
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver, silver_table, snapshot_ids
from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.maintenance import MaintenancePolicy, TableFiles
from icetide_glue.commit.run_ledger import record_committed_runs
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.maintenance import maintain as maintain_module
from icetide_glue.maintenance.maintain import expiry_changes_anything, maintain_table, measure_table
from icetide_glue.maintenance.sql import expire_snapshots_sql
from icetide_glue.silver import SilverTable
from seeds import EachSeed

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)

# Four runs: a full load, then merges with inserts, updates and deletes (position-delete files).
RUNS: list[list[tuple[str, str, int, str]]] = [
    [("I", "2026-11-21 06:00:00", key, f"v{key}") for key in range(1, 41)],
    [
        *(("U", "2026-11-21 07:00:00", key, f"u{key}") for key in range(1, 6)),
        *(("D", "2026-11-21 07:00:00", key, "") for key in range(6, 9)),
        *(("I", "2026-11-21 07:00:00", key, f"v{key}") for key in range(41, 46)),
    ],
    [
        *(("U", "2026-11-21 08:00:00", key, f"w{key}") for key in range(10, 13)),
        ("D", "2026-11-21 08:00:00", 41, ""),
        ("I", "2026-11-21 08:00:00", 46, "v46"),
    ],
    [
        ("U", "2026-11-21 09:00:00", 1, "x1"),
        ("D", "2026-11-21 09:00:00", 2, ""),
        ("D", "2026-11-21 09:00:00", 30, ""),
    ],
]


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _utc_rows(rows: list[Row]) -> list[tuple[Any, ...]]:
    """Rows read with Spark as the equality helper's expectations: timestamps UTC-aware (PySpark
    hands them to Python as naive local times)."""
    return [
        tuple(v.astimezone(UTC) if isinstance(v, datetime) and v.tzinfo is None else v for v in row)
        for row in rows
    ]


def _orphan(folder: Path, name: str, age: timedelta) -> Path:
    """A file no snapshot references, last modified ``age`` ago (a failed writer's leftover)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    path.write_bytes(b"not referenced by any snapshot")
    modified = time.time() - age.total_seconds()
    os.utime(path, (modified, modified))
    return path


@dataclass(frozen=True)
class Maintained:
    """The shared table, as it was before maintenance, and what maintenance reported."""

    table: SilverTable
    bronzes: list[Path]
    manifests: list[dict[str, Any]]
    rows_before: list[tuple[Any, ...]]
    schema: StructType
    before: TableFiles
    policy: MaintenancePolicy
    report: dict[str, Any]
    old_orphan: Path
    recent_orphan: Path
    # The table read with pyiceberg before and after maintenance.
    read_independently: tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]


@pytest.fixture(scope="module")
def maintained(spark: SparkSession, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> Maintained:
    """``silver.maint`` built by four real runs, then maintained once (Spark is slow: shared)."""
    folder = tmp_path_factory.mktemp("maint-bronze")
    bronzes, manifests = [], []
    for number, rows in enumerate(RUNS, start=1):
        bronze = folder / f"run{number}"
        write_dms_file(bronze, f"2026112{number}-000000000.parquet", BRONZE, rows)
        bronzes.append(bronze)
        manifests.append(load_into_silver(spark, "maint", f"maint-{number}", bronze))
    table = SilverTable(CATALOG, SILVER_DATABASE, "maint")
    silver = spark.table(silver_table("maint"))
    rows_before, schema = _utc_rows(silver.collect()), silver.schema
    read_before = _read_with_pyiceberg(warehouse, "maint")
    before = measure_table(spark, table)
    data_folder = warehouse / SILVER_DATABASE / "maint" / "data"
    old_orphan = _orphan(data_folder, "old-orphan.parquet", timedelta(days=4))
    recent_orphan = _orphan(data_folder, "recent-orphan.parquet", timedelta(hours=2))
    # Retention 0: every snapshot is older than it, so only the newest min_snapshots stay.
    policy = MaintenancePolicy(snapshot_retention_hours=0, min_snapshots=2, min_input_files=2)
    report = maintain_table(spark, table, policy).report("maint-m1").to_json()
    read_after = _read_with_pyiceberg(warehouse, "maint")
    return Maintained(
        table,
        bronzes,
        manifests,
        rows_before,
        schema,
        before,
        policy,
        report,
        old_orphan,
        recent_orphan,
        (read_before, read_after),
    )


def _read_with_pyiceberg(warehouse: Path, table: str) -> list[tuple[Any, ...]]:
    """Every row and column of a silver table, read by pyiceberg from its newest metadata file
    (not by Spark or icetide's code), sorted."""
    rows = _newest_metadata(warehouse, table).scan().to_arrow().to_pylist()
    return sorted(tuple(row.values()) for row in rows)


@pytest.mark.spark
def test_maintenance_keeps_rows_and_cuts_files_and_snapshots(
    spark: SparkSession, maintained: Maintained
) -> None:
    before, report, policy = maintained.before, maintained.report, maintained.policy
    assert before.position_delete_files > 0, "the merges should have left position-delete files"
    assert_frame_equal(spark.table(silver_table("maint")), maintained.rows_before, maintained.schema)
    after = measure_table(spark, maintained.table)
    silver = report["silver"]
    assert silver["before"]["dataFiles"] == before.data_files
    assert silver["before"]["positionDeleteFiles"] == before.position_delete_files
    # Run 1 made one snapshot (an append); runs 2, 3 and 4 update: each one commit that removes the
    # old rows and adds the new ones.
    assert silver["before"]["snapshots"] == before.snapshots == 4
    assert (silver["after"]["dataFiles"], silver["after"]["snapshots"]) == (after.data_files, after.snapshots)
    assert after.data_files < before.data_files
    assert after.delete_files == 0
    assert after.snapshots <= policy.min_snapshots
    assert silver["snapshotsExpired"] > 0
    assert silver["dataFilesRewritten"] > 0
    assert silver["strategy"] == "sort"
    assert silver["runsRecorded"] == 4, "the four runs' snapshots were copied into the run ledger"
    assert report["tombstones"] is not None
    assert report["tombstones"]["strategy"] == "binpack"
    assert report["tombstones"]["after"]["snapshots"] <= policy.min_snapshots


@pytest.mark.spark
def test_rows_read_independently_are_identical_before_and_after_maintenance(maintained: Maintained) -> None:
    before, after = maintained.read_independently
    assert after == before
    assert len(after) == 40  # 40 loaded; +5 -3, +1 -1, -2 in the three merges
    assert [(row[0], row[1]) for row in after if row[0] in (1, 10, 41, 46)] == [
        (1, "x1"),
        (10, "w10"),
        (46, "v46"),
    ]


@pytest.mark.spark
def test_orphan_removal_keeps_files_younger_than_the_orphan_age(maintained: Maintained) -> None:
    assert maintained.report["silver"]["orphanFilesRemoved"] >= 1
    assert not maintained.old_orphan.exists()
    assert maintained.recent_orphan.exists(), (
        "a file younger than the orphan age may be an in-flight commit's"
    )


@pytest.mark.spark
def test_rerun_of_an_expired_run_changes_nothing(spark: SparkSession, maintained: Maintained) -> None:
    assert maintained.manifests[1]["snapshotId"] not in snapshot_ids(spark, "maint"), "run 2 expired"
    snapshots = snapshot_ids(spark, "maint")
    load_into_silver(spark, "maint", "maint-2", maintained.bronzes[1])
    assert_frame_equal(spark.table(silver_table("maint")), maintained.rows_before, maintained.schema)
    assert snapshot_ids(spark, "maint") == snapshots


@pytest.mark.spark
def test_rerun_of_an_expired_run_hands_back_its_manifest(spark: SparkSession, maintained: Maintained) -> None:
    # Exactly once also promises the same manifest (the original counts, alreadyCommitted), as
    # test_exactly_once does before expiry; the committed run is looked up in the snapshot
    # summaries, which expiry removed.
    again = load_into_silver(spark, "maint", "maint-2", maintained.bronzes[1])
    assert again == {**maintained.manifests[1], "alreadyCommitted": True}


@pytest.mark.spark
def test_rerun_of_an_expired_run_after_its_tombstones_are_pruned_changes_nothing(
    spark: SparkSession, maintained: Maintained
) -> None:
    # Run 2 inserted key 41, run 3 deleted it. Without the order memory, only the run ledger stops a
    # rerun of run 2 from inserting key 41 again.
    spark.sql(f"DELETE FROM {silver_table('maint__icetide_tombstones')}")  # noqa: S608
    snapshots = snapshot_ids(spark, "maint")
    again = load_into_silver(spark, "maint", "maint-2", maintained.bronzes[1])
    assert again["alreadyCommitted"] is True
    assert spark.table(silver_table("maint")).where("id = 41").count() == 0
    assert_frame_equal(spark.table(silver_table("maint")), maintained.rows_before, maintained.schema)
    assert snapshot_ids(spark, "maint") == snapshots


@pytest.mark.spark
def test_a_second_pass_records_no_run_twice_and_keeps_the_rows(
    spark: SparkSession, maintained: Maintained
) -> None:
    ledger = silver_table("maint__icetide_runs")
    runs_before = sorted(row["run_id"] for row in spark.table(ledger).collect())
    again = maintain_table(spark, maintained.table, maintained.policy).report("maint-m2").to_json()
    assert again["silver"]["runsRecorded"] == 0
    assert sorted(row["run_id"] for row in spark.table(ledger).collect()) == runs_before
    assert runs_before == ["maint-1", "maint-2", "maint-3", "maint-4"]
    assert_frame_equal(spark.table(silver_table("maint")), maintained.rows_before, maintained.schema)


def test_orphan_age_below_one_day_is_refused() -> None:
    with pytest.raises(ContractViolation, match="orphanAgeHours: must be at least 24 hours"):
        MaintenancePolicy.from_json({"orphanAgeHours": 23})
    assert MaintenancePolicy.from_json({"orphanAgeHours": 24}).orphan_age == timedelta(days=1)


@pytest.mark.spark
def test_tombstones_older_than_the_retention_before_silvers_newest_change_are_forgotten(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Key 3 deleted 8 days before silver's newest change (Nov 20): past the 7-day retention,
    # forgotten. Key 2 deleted 5 days before it: still within the retention, kept. Both deletes are
    # in one run, 3 days apart, so its own pruning keeps both; the last run (an update newer than
    # silver's row) remembers nothing, so no merge pruned.
    runs = [
        [("I", "2026-11-01 00:00:00", key, f"v{key}") for key in (1, 2, 3)],
        [("D", "2026-11-12 00:00:00", 3, ""), ("D", "2026-11-15 00:00:00", 2, "")],
        [("U", "2026-11-20 00:00:00", 1, "u1")],
    ]
    name = "prune"
    for number, rows in enumerate(runs, start=1):
        write_dms_file(tmp_path / f"run{number}", f"2026110{number}-000000000.parquet", BRONZE, rows)
        load_into_silver(spark, name, f"{name}-{number}", tmp_path / f"run{number}")
    tombstones = silver_table(f"{name}__icetide_tombstones")
    assert sorted(row["id"] for row in spark.table(tombstones).collect()) == [2, 3]
    silver = spark.table(silver_table(name))
    rows_before, schema = _utc_rows(silver.collect()), silver.schema

    report = maintain_table(spark, SilverTable(CATALOG, SILVER_DATABASE, name)).report("m").to_json()

    assert report["tombstones"]["rowsPruned"] == 1
    assert [row["id"] for row in spark.table(tombstones).collect()] == [2]
    assert_frame_equal(spark.table(silver_table(name)), rows_before, schema)


@pytest.mark.spark
def test_a_run_rolled_back_before_its_snapshot_expired_loads_again(
    spark: SparkSession, tmp_path: Path
) -> None:
    # Maintenance's first step records runs 1-3 (a whole pass is the shared table's tests'); an
    # operator rolls silver back to run 2; the next maintenance expires run 3's snapshot. A rerun
    # of run 3 must load (its rows are not in silver), not be taken for committed because the
    # ledger once held it.
    runs = [
        [("I", "2026-11-01 00:00:00", key, f"v{key}") for key in (1, 2)],
        [("U", "2026-11-02 00:00:00", 1, "u1")],
        [("I", "2026-11-03 00:00:00", 3, "v3")],
    ]
    bronzes = []
    for number, rows in enumerate(runs, start=1):
        bronzes.append(tmp_path / f"run{number}")
        write_dms_file(bronzes[-1], f"2026110{number}-000000000.parquet", BRONZE, rows)
        load_into_silver(spark, "rolled", f"rolled-{number}", bronzes[-1])
    table = SilverTable(CATALOG, SILVER_DATABASE, "rolled")
    assert record_committed_runs(spark, table) == 3
    # Run 2 (an update) made one snapshot, the removal of its old row and the append of its new
    # one, carrying its run id.
    run_2 = spark.sql(
        f"SELECT snapshot_id FROM {silver_table('rolled')}.snapshots "  # noqa: S608
        "WHERE summary['icetide.run-id'] = 'rolled-2'"
    ).collect()[0][0]
    spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{SILVER_DATABASE}.rolled', {run_2})")
    maintain_table(spark, table, MaintenancePolicy(snapshot_retention_hours=0, min_snapshots=1))

    again = load_into_silver(spark, "rolled", "rolled-3", bronzes[2])

    assert again["alreadyCommitted"] is False
    assert sorted((row["id"], row["v"]) for row in spark.table(silver_table("rolled")).collect()) == [
        (1, "u1"),
        (2, "v2"),
        (3, "v3"),
    ]


@pytest.mark.spark
def test_expiry_is_skipped_exactly_when_iceberg_would_change_nothing(
    spark: SparkSession, warehouse: Path, tmp_path: Path, each_seed: EachSeed, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Maintenance skips expire_snapshots when expiry_changes_anything says it would change nothing.
    # Checked against an oracle of Iceberg's rule, over the snapshots as pyiceberg reads them: a
    # snapshot older than the cutoff goes unless it is among the newest retain_last ancestors of
    # main's head (the head always stays); the cutoff counts in whole milliseconds, rounded down.
    runs = [
        [("I", "2026-11-01 00:00:00", key, f"v{key}") for key in (1, 2, 3)],
        [("U", "2026-11-02 00:00:00", 1, "u1")],
        [("D", "2026-11-03 00:00:00", 2, "")],
        [("I", "2026-11-04 00:00:00", 4, "v4")],
    ]
    for number, rows in enumerate(runs, start=1):
        write_dms_file(tmp_path / f"run{number}", f"2026110{number}-000000000.parquet", BRONZE, rows)
        load_into_silver(spark, "expiry", f"expiry-{number}", tmp_path / f"run{number}")
    metadata = _newest_metadata(warehouse, "expiry").metadata
    snapshots = {s.snapshot_id: s for s in metadata.snapshots}
    ancestors, at = [], metadata.current_snapshot_id
    while at is not None:
        ancestors.append(at)
        at = snapshots[at].parent_snapshot_id
    times = sorted(s.timestamp_ms for s in snapshots.values())
    assert len(times) == len(runs)

    def oracle(cutoff_micros: int, retain_last: int) -> bool:
        kept = set(ancestors[:retain_last]) | {metadata.current_snapshot_id}
        return any(s.timestamp_ms < cutoff_micros // 1000 and i not in kept for i, s in snapshots.items())

    iceberg = iceberg_table(spark, silver_table("expiry"))

    def check(seed: int) -> None:
        rng = random.Random(seed)
        # A cutoff near a snapshot's time, up to a millisecond either side, in microseconds.
        cutoff = rng.choice(times) * 1000 + rng.randint(-1000, 2000)
        retain_last = rng.randint(1, len(times) + 1)
        at = _EPOCH + timedelta(microseconds=cutoff)
        assert expiry_changes_anything(iceberg, at, retain_last) == oracle(cutoff, retain_last), (
            cutoff,
            retain_last,
        )

    each_seed(range(40), check)
    # The procedure itself rounds down too: 999 microseconds past the oldest snapshot's millisecond
    # it keeps that snapshot, as the check says.
    oldest = _EPOCH + timedelta(milliseconds=times[0])
    almost = oldest + timedelta(microseconds=999)
    assert not expiry_changes_anything(iceberg, almost, 1)
    assert expiry_changes_anything(iceberg, oldest + timedelta(milliseconds=1), 1)
    spark.sql(expire_snapshots_sql(CATALOG, SILVER_DATABASE, "expiry", almost, 1)).collect()
    assert len(snapshot_ids(spark, "expiry")) == len(runs)
    # A pass whose expiry would remove nothing does not call the procedure.
    called: list[str] = []

    def recording(*args: Any) -> str:
        called.append(args[2])
        return expire_snapshots_sql(*args)

    monkeypatch.setattr(maintain_module, "expire_snapshots_sql", recording)
    table = SilverTable(CATALOG, SILVER_DATABASE, "expiry")
    keep_all = MaintenancePolicy(snapshot_retention_hours=0, min_snapshots=1000)
    report = maintain_table(spark, table, keep_all).report("m").to_json()
    assert report["silver"]["snapshotsExpired"] == 0
    assert called == []
    # A tag besides main: the expiry may remove it when it is past its age, so it runs.
    spark.sql(f"ALTER TABLE {silver_table('expiry')} CREATE TAG kept RETAIN 1 DAYS")
    assert expiry_changes_anything(iceberg_table(spark, silver_table("expiry")), almost, 1)
    maintain_table(spark, table, keep_all)
    assert "expiry" in called


def _newest_metadata(warehouse: Path, table: str) -> StaticTable:
    location = warehouse / SILVER_DATABASE / table / "metadata"
    newest = max(location.glob("v*.metadata.json"), key=lambda path: int(path.name[1:].split(".")[0]))
    return StaticTable.from_metadata(str(newest))
