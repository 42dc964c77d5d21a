"""Finding a run's commit (icetide_glue.silver.find_committed_run): the newest of main's ancestors
whose summary names the run, found by a walk up the table's metadata; and main's head
(icetide_glue.silver.main_snapshot_id). The expected snapshot ids come from Iceberg's own metadata
tables, queried here with SQL."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from glue.conftest import LoadRun
from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, silver_table, tagged_snapshots
from icetide_glue.silver import SilverTable, find_committed_run, main_snapshot_id
from icetide_local.spark import hadoop_catalog_conf

pytestmark = pytest.mark.spark

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
RUNS = [
    [("I", "2026-11-21 06:00:00", 1, "a"), ("I", "2026-11-21 06:00:00", 2, "b")],
    [("U", "2026-11-21 07:00:00", 1, "a2"), ("D", "2026-11-21 07:00:00", 2, "")],
    [("I", "2026-11-21 08:00:00", 3, "c")],
]


def _load_runs(load_run: LoadRun, tmp_path: Path, table: str) -> list[dict[str, object]]:
    manifests = []
    for number, rows in enumerate(RUNS, start=1):
        bronze = tmp_path / f"run{number}"
        write_dms_file(bronze, f"2026112{number}-000000000.parquet", BRONZE, rows)
        manifests.append(load_run(table, f"{table}-{number}", bronze))
    return manifests


def _main_head(spark: SparkSession, table: str) -> int:
    row = spark.table(f"{silver_table(table)}.refs").where(F.col("name") == "main").first()
    assert row is not None
    return int(row["snapshot_id"])


def _tagged_snapshot(spark: SparkSession, table: str, run_id: str) -> tuple[int, dict[str, object]]:
    """The one snapshot whose summary names ``run_id``, and its run statistics, by SQL."""
    rows = tagged_snapshots(spark, table, run_id)
    assert len(rows) == 1, rows
    return int(rows[0]["snapshot_id"]), json.loads(rows[0]["run_stats"])


def test_every_committed_run_is_found_with_its_snapshot_and_statistics(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    manifests = _load_runs(load_run, tmp_path, "lookup_found")
    table = SilverTable(CATALOG, SILVER_DATABASE, "lookup_found")

    for number, manifest in enumerate(manifests, start=1):
        snapshot_id, stats = _tagged_snapshot(spark, "lookup_found", f"lookup_found-{number}")
        committed = find_committed_run(spark, table, f"lookup_found-{number}")
        assert committed is not None
        assert (committed.snapshot_id, committed.run_stats) == (snapshot_id, stats)
        assert stats["rowsRead"] == manifest["rowsRead"] == len(RUNS[number - 1])
    assert find_committed_run(spark, table, "lookup_found-4") is None
    assert main_snapshot_id(spark, table) == _main_head(spark, "lookup_found") == manifests[-1]["snapshotId"]
    # A run id is compared, never parsed: a hostile one is simply not found.
    assert find_committed_run(spark, table, "lookup_found-1' OR '1'='1") is None


def test_a_rolled_back_run_is_not_found_though_its_snapshot_remains(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path
) -> None:
    _load_runs(load_run, tmp_path, "lookup_rolled")
    table = SilverTable(CATALOG, SILVER_DATABASE, "lookup_rolled")
    run_1, _ = _tagged_snapshot(spark, "lookup_rolled", "lookup_rolled-1")
    spark.sql(f"CALL {CATALOG}.system.rollback_to_snapshot('{SILVER_DATABASE}.lookup_rolled', {run_1})")

    assert _tagged_snapshot(spark, "lookup_rolled", "lookup_rolled-3")[0] > 0  # still in the metadata
    assert find_committed_run(spark, table, "lookup_rolled-3") is None
    assert find_committed_run(spark, table, "lookup_rolled-2") is None
    committed = find_committed_run(spark, table, "lookup_rolled-1")
    assert committed is not None and committed.snapshot_id == run_1
    # Loaded again, run 3 has two snapshots: the one main holds is found, not the rolled-back one.
    rolled_back, _ = _tagged_snapshot(spark, "lookup_rolled", "lookup_rolled-3")
    again = load_run("lookup_rolled", "lookup_rolled-3", tmp_path / "run3")
    assert again["alreadyCommitted"] is False
    committed = find_committed_run(spark, table, "lookup_rolled-3")
    assert committed is not None and committed.snapshot_id not in (rolled_back, run_1)
    assert committed.snapshot_id == _main_head(spark, "lookup_rolled")


def test_a_commit_by_another_writer_after_the_run_neither_hides_it_nor_goes_unseen(
    spark: SparkSession, load_run: LoadRun, tmp_path: Path, warehouse: Path
) -> None:
    # Another process's catalog on the same warehouse: this session's catalog does not see its
    # commits until the table is refreshed.
    other_catalog = hadoop_catalog_conf("other_writer", warehouse)
    for key, value in other_catalog.items():
        spark.conf.set(key, value)
    try:
        _another_writer_commits_after_the_run(spark, load_run, tmp_path)
    finally:
        for key in other_catalog:
            spark.conf.unset(key)


def _another_writer_commits_after_the_run(spark: SparkSession, load_run: LoadRun, tmp_path: Path) -> None:
    _load_runs(load_run, tmp_path, "lookup_shared")
    table = SilverTable(CATALOG, SILVER_DATABASE, "lookup_shared")
    # The session's catalog has the table loaded now.
    assert find_committed_run(spark, table, "lookup_shared-3") is not None
    run_3, _ = _tagged_snapshot(spark, "lookup_shared", "lookup_shared-3")
    other = f"other_writer.{SILVER_DATABASE}.lookup_shared"
    writer = spark.table(other).limit(1).writeTo(other)
    writer.option("snapshot-property.icetide.run-id", "elsewhere").append()
    # Asked first, before any other lookup refreshes this session's copy of the table.
    head = main_snapshot_id(spark, table)

    committed = find_committed_run(spark, table, "lookup_shared-3")
    assert committed is not None and committed.snapshot_id == run_3
    elsewhere = find_committed_run(spark, table, "elsewhere")
    assert elsewhere is not None and elsewhere.snapshot_id != run_3
    assert elsewhere.run_stats == {}
    # Main's head as the other writer left it, not as this session's catalog last saw it.
    assert head == elsewhere.snapshot_id == _main_head(spark, "lookup_shared")


def test_a_table_without_a_snapshot_has_no_main_head(spark: SparkSession) -> None:
    spark.sql(f"CREATE TABLE {silver_table('lookup_empty')} (id bigint) USING iceberg")
    assert main_snapshot_id(spark, SilverTable(CATALOG, SILVER_DATABASE, "lookup_empty")) is None
