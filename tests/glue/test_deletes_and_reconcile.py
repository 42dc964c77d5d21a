"""Deletes, case by case, with literal expectations: a delta table's reconcile runs (hard and
soft), keys-only D rows after an update in the same batch, a full-load-and-cdc folder (LOAD files
without a sequence beside time-named CDC files), a retry after the silver commit failed behind
written tombstones, and tombstone retention.

(test_random_workloads.py mixes all of these in seeded random workloads against an oracle.)
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from unittest import mock

import pyarrow as pa
import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampType

from glue.dms_files import utc, write_dms_file
from glue.frames import assert_frame_equal
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver, silver_table, snapshot_ids
from glue.sql_plans import plans_of
from icetide_glue.arguments import DeleteMode
from icetide_glue.errors import BronzeRowCountMismatch, MissingReconcileExtraction
from icetide_glue.merge.apply import forget_expired_changes
from icetide_glue.silver import SilverTable, tombstone_table

pytestmark = pytest.mark.spark

CDC = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("AR_H_CHANGE_SEQ", pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
    ]
)
# A full-load file without IncludeOpForFullLoad and without the sequence column.
BARE_LOAD = pa.schema([("dms_timestamp", pa.string()), ("id", pa.int32()), ("name", pa.string())])
# What a key-only full-load task writes: Op, the timestamp column, then the keys only.
KEYS_ONLY = pa.schema([("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int32())])
ROWS = StructType(
    [
        StructField("id", IntegerType()),
        StructField("name", StringType()),
        StructField("_icetide_change_ts", TimestampType()),
        StructField("_icetide_change_seq", StringType()),
    ]
)
SOFT_ROWS = StructType([*ROWS.fields, StructField("_icetide_deleted_at", TimestampType())])
TOMBSTONES = StructType(
    [
        StructField("id", IntegerType()),
        StructField("_icetide_change_ts", TimestampType()),
        StructField("_icetide_change_seq", StringType()),
        StructField("_icetide_op", StringType()),
    ]
)
RECONCILED = "9" * 40  # a reconcile delete's sequence: above any real one
COUNTS = ("rowsRead", "rowsInserted", "rowsUpdated", "rowsDeleted", "rowsUnchanged")


def counts(manifest: dict[str, Any]) -> tuple[int, ...]:
    return tuple(manifest[k] for k in COUNTS)


def rows(spark: SparkSession, table: str, soft: bool) -> DataFrame:
    return spark.table(silver_table(table)).select(*(SOFT_ROWS if soft else ROWS).fieldNames())


def collected(spark: SparkSession, table: str, soft: bool) -> list[tuple[Any, ...]]:
    """Silver's rows as tuples by key, times as UTC-aware datetimes (PySpark hands back naive UTC)."""
    found = [
        tuple(v.replace(tzinfo=UTC) if isinstance(v, datetime) else v for v in row)
        for row in rows(spark, table, soft).collect()
    ]
    return sorted(found, key=lambda row: row[0])


def tombstones(spark: SparkSession, table: str) -> DataFrame:
    return spark.table(silver_table(f"{table}__icetide_tombstones")).select(*TOMBSTONES.fieldNames())


@dataclass
class History:
    """One delta table's runs: manifests by run id, silver's rows after selected runs."""

    table: str
    soft: bool
    manifests: dict[str, dict[str, Any]] = field(default_factory=dict)
    after: dict[str, list[tuple[Any, ...]]] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class SilverCommitFailed(Exception):
    pass


def write_history(folder: Path) -> dict[str, Path]:
    """Bronze and key extractions of the runs below (the same for both delete modes)."""
    write_dms_file(
        folder / "r1",
        "LOAD00000001.parquet",
        CDC,  # a full-load-and-cdc task's LOAD file: Op I, a null sequence
        [
            ("I", "2026-11-24 08:00:00", None, i, n)
            for i, n in ((1, "a"), (2, "b"), (3, "c"), (4, "d"), (7, "g"))
        ],
    )
    write_dms_file(
        folder / "r2",
        "20261124-090000000.parquet",
        CDC,
        [
            ("U", "2026-11-24 09:00:00", "0001", 2, "b2"),
            ("U", "2026-11-24 09:00:00", "0002", 7, "g2"),
            ("D", "2026-11-24 09:10:00", "0003", 7, None),  # PostgreSQL's keys-only before-image
        ],
    )
    # The reconcile run: a LOAD file (no Op, no sequence) beside a CDC file, one commit time shared.
    write_dms_file(
        folder / "r3",
        "LOAD00000001.parquet",
        BARE_LOAD,
        [("2026-11-24 10:00:00.000001", 5, "e"), ("2026-11-24 10:00:00", 1, "a2")],
    )
    write_dms_file(
        folder / "r3",
        "20261124-100000000.parquet",
        CDC,
        [
            ("U", "2026-11-24 10:00:00", "0005", 1, "a3"),  # same time as the LOAD row: the sequence wins
            ("U", "2026-11-24 10:30:00", "0006", 4, "d2"),  # after the extraction started: kept
            ("I", "2026-11-24 09:30:00", "0004", 6, "f"),  # before it, and not extracted: deleted
        ],
    )
    write_dms_file(
        folder / "k3",
        "LOAD00000001.parquet",
        KEYS_ONLY,
        [("I", "2026-11-24 10:00:05", 1), ("I", "2026-11-24 10:00:05", 2)],
    )
    write_dms_file(
        folder / "r4",
        "20261124-094500000.parquet",
        CDC,
        [("U", "2026-11-24 09:45:00", "0001", 3, "c9")],  # older than the reconcile's delete of 3
    )
    return {name: folder / name for name in ("r1", "r2", "r3", "k3", "r4")}


def run_history(spark: SparkSession, folder: Path, table: str, mode: DeleteMode, fail_once: bool) -> History:
    soft = mode is DeleteMode.SOFT
    history = History(table, soft)
    paths = write_history(folder)

    def load(run_id: str, bronze: Path, **reconcile: Any) -> None:
        history.manifests[run_id] = load_into_silver(
            spark, table, run_id, bronze, delete_mode=mode, **reconcile
        )
        history.after[run_id] = collected(spark, table, soft)

    load("r1", paths["r1"])
    load("r2", paths["r2"])
    reconcile3 = {
        "reconcile": paths["k3"],
        "reconcile_expected_rows": 2,
        "reconcile_started_at": utc("2026-11-24 10:00:00"),
    }
    if fail_once:
        # The tombstones are written, then the silver commit fails; the retry must give the same.
        with (
            mock.patch("icetide_glue.job.commit_changes", side_effect=SilverCommitFailed),
            pytest.raises(SilverCommitFailed),
        ):
            load_into_silver(spark, table, "r3", paths["r3"], delete_mode=mode, **reconcile3)
        history.after["r3 failed"] = collected(spark, table, soft)
    load("r3", paths["r3"], **reconcile3)
    # A reconcile without changes (no bronze folder) and an empty source (no extraction folder).
    empty, gone = folder / "no_changes", folder / "no_keys"
    at = utc("2026-11-24 10:15:00")
    if fail_once:  # kept short: what follows does not depend on the delete mode
        load("r5", empty, reconcile=gone, reconcile_expected_rows=0, reconcile_started_at=at)
        return history
    load("r4", paths["r4"])
    for expected, error in ((3, BronzeRowCountMismatch), (None, MissingReconcileExtraction)):
        with pytest.raises(error) as refused:
            load_into_silver(
                spark,
                table,
                "r5",
                empty,
                delete_mode=mode,
                reconcile=gone,
                reconcile_expected_rows=expected,
                reconcile_started_at=at,
            )
        history.errors.append(str(refused.value))
    load("r5", empty, reconcile=gone, reconcile_expected_rows=0, reconcile_started_at=at)
    return history


@pytest.fixture(scope="module")
def histories(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, History]]:
    yield {
        "hard": run_history(spark, tmp_path_factory.mktemp("hard"), "deletes_hard", DeleteMode.HARD, False),
        "soft": run_history(spark, tmp_path_factory.mktemp("soft"), "deletes_soft", DeleteMode.SOFT, True),
    }


def t(text: str) -> datetime:
    return utc(f"2026-11-24 {text}")


def test_keys_only_deletes_keep_the_latest_values_of_the_batch(histories: dict[str, History]) -> None:
    assert counts(histories["hard"].manifests["r2"]) == (3, 0, 1, 1, 0)
    assert counts(histories["soft"].manifests["r2"]) == (3, 0, 1, 1, 0)
    assert histories["hard"].after["r2"] == [
        (1, "a", t("08:00:00"), None),
        (2, "b2", t("09:00:00"), "0001"),
        (3, "c", t("08:00:00"), None),
        (4, "d", t("08:00:00"), None),
    ]
    # Key 7's D carries no values: it keeps the U's (g2, from the same batch), not silver's older g.
    assert histories["soft"].after["r2"] == [
        (1, "a", t("08:00:00"), None, None),
        (2, "b2", t("09:00:00"), "0001", None),
        (3, "c", t("08:00:00"), None, None),
        (4, "d", t("08:00:00"), None, None),
        (7, "g2", t("09:10:00"), "0003", t("09:10:00")),
    ]


def test_a_reconcile_deletes_lost_keys_at_its_run_and_keeps_keys_changed_after_its_start(
    spark: SparkSession, histories: dict[str, History]
) -> None:
    hard = histories["hard"]
    # Not before: the source lost key 3 before run r2, which still holds it.
    assert (3, "c", t("08:00:00"), None) in hard.after["r2"]
    # 5 inserted; 1 and 4 updated; 3 deleted; 6 inserted then deleted by the reconcile: unchanged.
    assert counts(hard.manifests["r3"]) == (5, 1, 2, 1, 1)
    assert hard.after["r3"] == [
        (1, "a3", t("10:00:00"), "0005"),  # extracted; the sequenced CDC row beats the LOAD row
        (2, "b2", t("09:00:00"), "0001"),
        (4, "d2", t("10:30:00"), "0006"),  # updated after the extraction started
        (5, "e", t("10:00:00.000001"), None),  # inserted after it started
    ]
    # A change older than the reconcile's delete does not bring key 3 back.
    assert counts(hard.manifests["r4"]) == (1, 0, 0, 0, 1)
    assert hard.after["r4"] == hard.after["r3"]


def test_a_soft_reconcile_marks_lost_keys_deleted_with_their_last_values(
    histories: dict[str, History],
) -> None:
    soft = histories["soft"]
    # Key 6 is inserted as deleted with its I's values; key 7, already deleted, is left alone.
    assert counts(soft.manifests["r3"]) == (5, 1, 2, 2, 0)
    assert soft.after["r3"] == [
        (1, "a3", t("10:00:00"), "0005", None),
        (2, "b2", t("09:00:00"), "0001", None),
        (3, "c", t("10:00:00"), RECONCILED, t("10:00:00")),
        (4, "d2", t("10:30:00"), "0006", None),
        (5, "e", t("10:00:00.000001"), None, None),
        (6, "f", t("10:00:00"), RECONCILED, t("10:00:00")),
        (7, "g2", t("09:10:00"), "0003", t("09:10:00")),
    ]


def test_a_retry_after_a_failed_silver_commit_gives_what_one_attempt_gives(
    histories: dict[str, History],
) -> None:
    soft = histories["soft"]
    assert soft.after["r3 failed"] == soft.after["r2"]
    assert soft.manifests["r3"]["alreadyCommitted"] is False
    assert counts(soft.manifests["r3"]) == (5, 1, 2, 2, 0)  # as asserted above, after the failure


def test_a_reconcile_without_changes_deletes_everything_unchanged_since_its_start(
    spark: SparkSession, histories: dict[str, History]
) -> None:
    hard, soft = histories["hard"], histories["soft"]
    assert counts(hard.manifests["r5"]) == (0, 0, 0, 3, 0)
    assert hard.after["r5"] == [(4, "d2", t("10:30:00"), "0006")]
    assert counts(soft.manifests["r5"]) == (0, 0, 0, 3, 0)
    assert soft.after["r5"] == [
        (1, "a3", t("10:15:00"), RECONCILED, t("10:15:00")),
        (2, "b2", t("10:15:00"), RECONCILED, t("10:15:00")),
        (3, "c", t("10:00:00"), RECONCILED, t("10:00:00")),
        (4, "d2", t("10:30:00"), "0006", None),
        (5, "e", t("10:15:00"), RECONCILED, t("10:15:00")),
        (6, "f", t("10:00:00"), RECONCILED, t("10:00:00")),
        (7, "g2", t("09:10:00"), "0003", t("09:10:00")),
    ]
    for history in (hard, soft):
        assert_frame_equal(
            tombstones(spark, history.table),
            [
                (1, t("10:15:00"), RECONCILED, "D"),
                (2, t("10:15:00"), RECONCILED, "D"),
                (3, t("10:00:00"), RECONCILED, "D"),
                (5, t("10:15:00"), RECONCILED, "D"),
                (6, t("10:00:00"), RECONCILED, "D"),
                (7, t("09:10:00"), "0003", "D"),
            ],
            TOMBSTONES,
        )


def test_a_missing_key_extraction_is_refused_unless_dms_counted_zero_rows(
    histories: dict[str, History],
) -> None:
    errors = histories["hard"].errors
    assert "DMS reported 3 (--reconcile_expected_rows" in errors[0]
    assert "--reconcile_expected_rows is not given" in errors[1]


def test_tombstones_are_forgotten_after_the_retention(spark: SparkSession, tmp_path: Path) -> None:
    table = "tombstone_retention"

    def run(run_id: str, changes: list[tuple[Any, ...]]) -> dict[str, Any]:
        write_dms_file(tmp_path / run_id, "20261120-080000000.parquet", CDC, changes)
        return load_into_silver(spark, table, run_id, tmp_path / run_id, tombstone_retention_days=1)

    run("t1", [("I", "2026-11-20 08:00:00", "01", 1, "a"), ("I", "2026-11-20 08:00:00", "02", 2, "b")])
    run("t2", [("D", "2026-11-20 09:00:00", "03", 1, "a")])
    # Within a day of the newest change (its own D): the late U of key 1 is refused by its tombstone,
    # which this run's D of key 2, two days later, then prunes.
    third = run(
        "t3", [("U", "2026-11-20 08:30:00", "04", 1, "a2"), ("D", "2026-11-22 09:00:00", "05", 2, "b")]
    )
    assert counts(third) == (2, 0, 0, 1, 1)
    assert_frame_equal(tombstones(spark, table), [(2, utc("2026-11-22 09:00:00"), "05", "D")], TOMBSTONES)
    # Forgotten: a change older than the delete now lands.
    fourth = run("t4", [("U", "2026-11-20 08:45:00", "06", 1, "a3")])
    assert counts(fourth) == (1, 1, 0, 0, 0)
    assert_frame_equal(rows(spark, table, False), [(1, "a3", utc("2026-11-20 08:45:00"), "06")], ROWS)


def test_pruning_asks_the_manifests_and_queries_the_tombstones_only_to_delete(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The tombstone table's data files' lowest change times say whether an entry expired, with
    no Spark query; the DELETE runs only when one has."""
    table = "tombstone_pruning_question"
    write_dms_file(
        tmp_path / "p1",
        "20261120-080000000.parquet",
        CDC,
        [("I", "2026-11-20 08:00:00", "01", 1, "a"), ("D", "2026-11-20 09:00:00", "02", 1, "a")],
    )
    load_into_silver(spark, table, "p1", tmp_path / "p1")
    tombstone_silver = tombstone_table(SilverTable(CATALOG, SILVER_DATABASE, table))
    entry = [(1, utc("2026-11-20 09:00:00"), "02", "D")]
    assert_frame_equal(tombstones(spark, table), entry, TOMBSTONES)
    snapshots = snapshot_ids(spark, tombstone_silver.name)
    day = 86_400_000_000
    deleted_at = int(utc("2026-11-20 09:00:00").timestamp()) * 1_000_000

    def queries_of_pruning(newest: int) -> list[str]:
        return plans_of(
            spark, lambda: forget_expired_changes(spark, tombstone_silver, newest, retention_days=1)
        )[1]

    # The entry is exactly one day old: kept, and nothing queried the table.
    assert queries_of_pruning(deleted_at + day) == []
    assert snapshot_ids(spark, tombstone_silver.name) == snapshots
    assert_frame_equal(tombstones(spark, table), entry, TOMBSTONES)
    # A microsecond later it is expired: deleted in a commit of its own.
    assert queries_of_pruning(deleted_at + day + 1) != []
    assert tombstones(spark, table).count() == 0
    assert len(snapshot_ids(spark, tombstone_silver.name)) == len(snapshots) + 1
