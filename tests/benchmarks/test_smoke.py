"""Every benchmark's main code path at a tiny size, in the worker's one Spark session, and the
Spark-side guards of merge_cost.py: the Spark tier's benchmark tests.

One smoke run keeps benchmarks/ from rotting: merge_cost.py measures every approach over the
patterns that draw their batches differently and writes its results, with silver spoilt before its
last round's comparison to see that comparison fail (and the earlier ones pass); values_hash.py
measures both widths, a wrong hash given to the narrow one to see its check fail beside the wide
one's pass; table_maintenance.py merges, maintains and reads back. Their pieces that need no Spark
are tested beside this file, without it.
"""

from __future__ import annotations

import json
import random
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F

from benchmarks.test_merge_cost import APPROACHES, PATTERNS, SMOKE_SIZE, benchmark_arguments, read_results
from icetide_glue.columns import VALUES_HASH
from seeds import EachSeed

pytestmark = pytest.mark.spark

# The patterns the smoke run measures: "recent" draws its batch from bands of the newest keys (the
# live keys' boundaries), a share of the table; "fixed" the same bands, a fixed number of changes.
# "scattered" differs from "recent" only in its one band over every key, which draws no boundary:
# its rounds would run the same code again. test_merge_cost.py judges all three's figures.
SMOKE_PATTERNS = {"recent", "fixed"}
MAINTENANCE_MERGES = 1
# table_maintenance.py's smallest table, and the batch share that still gives it the 10 changes a
# merge needs at least.
MAINTENANCE_ROWS = 100
MAINTENANCE_BATCH_FRACTION = 0.1


def test_every_benchmark_runs_tiny_and_its_checks_fail_when_they_should(
    spark: SparkSession,
    merge_cost: ModuleType,
    values_hash_benchmark: ModuleType,
    table_maintenance: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    merge_cost_measures_everything_and_its_comparison_finds_a_spoilt_silver(
        spark, merge_cost, tmp_path / "merge_cost", capsys
    )
    values_hash_measures_both_widths_and_fails_on_a_wrong_hash(
        spark, values_hash_benchmark, tmp_path / "values_hash", monkeypatch, capsys
    )
    table_maintenance_merges_maintains_and_reads_back_equal(table_maintenance, tmp_path / "maintenance")


def merge_cost_measures_everything_and_its_comparison_finds_a_spoilt_silver(
    spark: SparkSession, merge_cost: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    rounds_compared = []

    def drop_one_silver_row_in_the_last_round(session: SparkSession, tables: Any) -> None:
        rounds_compared.append(tables)
        if len(rounds_compared) == len(SMOKE_PATTERNS):
            silver = tables.name("silver")
            session.sql(f"DELETE FROM {silver} WHERE id = (SELECT min(id) FROM {silver})")  # noqa: S608

    assert SMOKE_PATTERNS < PATTERNS
    arguments = benchmark_arguments(tmp_path, "bench_smoke", "--patterns", *sorted(SMOKE_PATTERNS))
    assert merge_cost.main(arguments, before_compare=drop_one_silver_row_in_the_last_round) == 1

    results = read_results(tmp_path)
    assert results["correct"] is False
    last_run = "{:,} {}-round-0".format(SMOKE_SIZE, results["results"][-1]["pattern"])
    spoilt = [check for check in results["checks"] if last_run in check["what"]]
    unspoilt = [check for check in results["checks"] if last_run not in check["what"]]
    # Every round before the spoilt one agrees, the build's check too.
    assert len(unspoilt) > len(spoilt) > 0 and all(check["ok"] for check in unspoilt)
    verdicts = {check["what"].split(" (")[0]: check["ok"] for check in spoilt}
    assert verdicts == {"icetide vs naive": False, "reload vs naive": True, "bare vs naive": True}
    assert {check["what"].split(" (")[0]: check["ok"] for check in unspoilt}["icetide vs full load"] is True
    assert "MISMATCH icetide vs naive" in capsys.readouterr().out
    assert {r["pattern"] for r in results["results"]} == SMOKE_PATTERNS
    for record in results["results"]:
        assert set(record["approaches"]) == APPROACHES
        for approach, cost in record["approaches"].items():
            assert cost["seconds"] > 0, (record["pattern"], approach)
            assert cost["written_bytes"] > 0, (record["pattern"], approach)
            assert all(figure >= 0 for figure in cost.values()), (record["pattern"], approach, cost)
        # icetide, naive, bare and the floor read their table through Iceberg; the reload its export.
        for reader in ("icetide", "naive", "bare", "floor"):
            assert record["approaches"][reader]["scanned_data_files"] > 0, (record["pattern"], reader)
        # Rows written: the merge-on-read merges a row per update and insert (icetide also a
        # tombstone per delete), the append every change, the copy-on-write and the reload far more.
        mix = record["changes"]
        written = {name: cost["written_records"] for name, cost in record["approaches"].items()}
        assert written["arrow"] == written["floor"] == written["bare"] == mix["updates"] + mix["inserts"]
        assert written["icetide"] == written["append"] == sum(mix.values())
    assert (
        set(results["bare_ratios"][0])
        == set(results["floor_ratios"][0])
        == set(results["arrow_ratios"][0])
        == set(results["targets"][0])
    )
    summary = results["summary"][str(SMOKE_SIZE)]
    assert set(summary) == SMOKE_PATTERNS and all(set(row) == APPROACHES for row in summary.values())
    assert results["builds"][0]["seconds"] > 0
    assert results["versions"]["iceberg"]
    assert not (tmp_path / "out" / "merge_cost.png").exists()


def values_hash_arguments(tmp_path: Path, *widths: str) -> list[str]:
    return [
        "--rows", "100",
        "--rounds", "1",
        "--fraction", "0.2",
        "--widths", *widths,
        "--workspace", str(tmp_path / "workspace"),
        "--json", str(tmp_path / "results.json"),
    ]  # fmt: skip


def values_hash_measures_both_widths_and_fails_on_a_wrong_hash(
    spark: SparkSession,
    values_hash_benchmark: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The narrow table's batch gets the hash of a constant (every change looks updated to the
    hash classification), the wide one's its true hash: the narrow labels differ, the wide ones
    agree, and one width's difference fails the run."""
    real_hash = values_hash_benchmark.with_values_hash

    def wrong_for_the_narrow_table(changes: DataFrame, value_types: object) -> DataFrame:
        if "status" in changes.columns:  # only the wide table has it
            return real_hash(changes, value_types)
        return changes.withColumn(VALUES_HASH, F.xxhash64(F.lit("same")))

    with monkeypatch.context() as patch:
        patch.setattr(values_hash_benchmark, "with_values_hash", wrong_for_the_narrow_table)
        capsys.readouterr()
        assert values_hash_benchmark.main(values_hash_arguments(tmp_path, "narrow", "wide")) == 1
    out = capsys.readouterr().out
    assert "narrow: labels differ for " in out and "wide: labels differ" not in out

    document = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    assert document["command"][0] == "benchmarks/values_hash.py" and document["spark"] == spark.version
    results = document["results"]
    assert [result["width"] for result in results] == ["narrow", "wide"]
    # id, 3 or 16 value columns, then icetide's 5 metadata columns (change time, sequence, run id,
    # values hash, change phase).
    assert [result["columns"] for result in results] == [9, 22]
    narrow, wide = results
    assert narrow["same_labels"] is False and narrow["differing_labels"] > 0
    # Every change looks updated to the constant hash, the unchanged ones too.
    assert narrow["labels"]["hash"] == {"update": narrow["changes"]}
    assert wide["same_labels"] is True and wide["differing_labels"] == 0
    for result in results:
        # Even keys changed their name, odd keys were re-read unchanged.
        unchanged = result["odd_keys"]
        assert 0 < unchanged < result["changes"]
        assert result["labels"]["values"] == {"unchanged": unchanged, "update": result["changes"] - unchanged}
        assert all(len(times) == 1 and times[0] > 0 for times in result["seconds"].values())
    assert wide["labels"]["hash"] == wide["labels"]["values"]


def table_maintenance_merges_maintains_and_reads_back_equal(
    table_maintenance: ModuleType, tmp_path: Path
) -> None:
    """The smallest table, 1 merge, one scan round of one scan: the merges leave files and
    snapshots behind, maintenance runs, the rows read back with pyiceberg compare equal, and the
    exit code follows the verdicts."""
    arguments = [
        "--rows", str(MAINTENANCE_ROWS),
        "--batch-fraction", str(MAINTENANCE_BATCH_FRACTION),
        "--merges", str(MAINTENANCE_MERGES),
        "--rounds", "1",
        "--scan-repeats", "1",
        "--min-snapshots", "1",
        "--workspace", str(tmp_path / "workspace"),
        "--catalog", "bench_maintenance_smoke",
        "--json", str(tmp_path / "results.json"),
    ]  # fmt: skip
    code = table_maintenance.main(arguments)
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))

    assert results["rows_equal"] is True
    assert [check["equal"] for check in results["checks"]] == [True, True, True, True]
    assert all(check["left_rows"] == check["right_rows"] > MAINTENANCE_ROWS for check in results["checks"])
    missed = [verdict["what"] for verdict in results["verdicts"] if not verdict["passed"]]
    assert code == results["exit_code"] == (1 if missed else 0), missed
    assert {verdict["what"] for verdict in results["verdicts"]} == {
        "scan after / fresh copy (median)",
        "scan after / fresh (median)",
        "data files after",
        "delete files after",
        "snapshots after",
    }
    before, after, fresh = (results["files"][name] for name in ("merged before", "merged after", "fresh"))
    assert len(results["merge_seconds"]) == MAINTENANCE_MERGES
    # The build, then one snapshot per merge: each updates and inserts, so it removes rows by
    # position and appends rows in one commit; each added data files and delete files.
    assert before["snapshots"] == MAINTENANCE_MERGES + 1
    assert before["data_files"] > fresh["data_files"] and before["delete_files"] > 0
    assert after["data_files"] < before["data_files"]
    assert after["snapshots"] <= 1 + results["maintenance_commits"]
    assert set(results["scans"]) == {
        "merged before",
        "fresh copy (before)",
        "fresh (before)",
        "merged after",
        "fresh copy (after)",
        "fresh (after)",
    }
    # The fresh copy: the merged rows written once, in one snapshot, laid out as the fresh table.
    assert results["files"]["fresh copy"]["snapshots"] == 1
    assert results["files"]["fresh copy"]["data_files"] == fresh["data_files"]
    assert all(len(seconds) == 1 and seconds[0] > 0 for seconds in results["scans"].values())
    assert results["versions"]["iceberg"]


def round_zero(merge_cost: ModuleType, tmp_path: Path, pattern: str, mix: Any) -> Any:
    """A first round's batch of ``pattern`` and ``mix``, its files under ``tmp_path`` (none written)."""
    return merge_cost.Batch(
        pattern=pattern,
        round=0,
        seed=1,
        mix=mix,
        folder=tmp_path / "bronze",
        files=tmp_path / "bronze" / "files",
        export=tmp_path / "export",
        changed_at=merge_cost.BASE_TIME,
        silver_snapshot=1,
    )


def test_a_floor_that_skipped_work_stops_the_benchmark(
    spark: SparkSession, merge_cost: ModuleType, tmp_path: Path
) -> None:
    """The floor's own check, untimed after each round: the rows it found in silver (the positions
    it wrote) and the rows it appended must be the batch's updated or deleted keys, and its
    updates and inserts."""
    batch = round_zero(merge_cost, tmp_path, "scattered", merge_cost.Mix(updates=3, deletes=1, inserts=2))
    spark.createDataFrame([("f", i) for i in range(4)], "file_path string, pos long").write.parquet(
        str(merge_cost.floor_positions(batch))
    )
    merge_cost.check_floor(spark, batch, {"written_records": 5})  # 3 U + 1 D found, 3 U + 2 I appended
    with pytest.raises(RuntimeError, match="4 rows found and 4 appended, not \\(4, 5\\)"):
        merge_cost.check_floor(spark, batch, {"written_records": 4})
    fewer = replace(batch, export=tmp_path / "fewer")
    spark.createDataFrame([("f", i) for i in range(3)], "file_path string, pos long").write.parquet(
        str(merge_cost.floor_positions(fewer))
    )
    with pytest.raises(RuntimeError, match="3 rows found and 5 appended, not \\(4, 5\\)"):
        merge_cost.check_floor(spark, fewer, {"written_records": 5})


def test_an_arrow_floor_that_found_or_appended_other_rows_than_the_floor_stops_the_benchmark(
    spark: SparkSession, merge_cost: ModuleType, tmp_path: Path
) -> None:
    """The same numbers are not enough: arrow must find the floor's very positions, and its table
    must hold the floor's rows (read back by Spark)."""
    batch = round_zero(merge_cost, tmp_path, "recent", merge_cost.Mix(updates=2, deletes=1, inserts=1))
    tables = merge_cost.Tables("bench_session", "arrow_check", 1)
    spark.sql("CREATE NAMESPACE IF NOT EXISTS bench_session.arrow_check")
    columns = ", ".join(f"{name} {kind}" for name, kind in merge_cost.SOURCE_COLUMNS)
    rows = "(1, 'a', 1.50, TIMESTAMP '2026-11-30 10:00:00'), (5, 'b', 2.00, TIMESTAMP '2026-11-30 11:00:00')"
    for role in ("floor", "arrow"):
        spark.sql(f"CREATE OR REPLACE TABLE {tables.name(role)} ({columns}) USING iceberg")
        spark.sql(f"INSERT INTO {tables.name(role)} VALUES {rows}")  # noqa: S608

    def positions(approach: str, *rows: tuple[str, int]) -> None:
        folder = merge_cost.floor_positions(batch, approach)
        spark.createDataFrame(list(rows), "file_path string, pos long").write.mode("overwrite").parquet(
            str(folder)
        )

    positions("floor", ("a", 1), ("a", 7), ("b", 0))
    positions("arrow", ("b", 0), ("a", 7), ("a", 1))
    merge_cost.check_arrow_floor(spark, tables, batch, {"written_records": 3})  # the same rows, in any order
    positions("arrow", ("a", 1), ("a", 8), ("b", 0))
    with pytest.raises(RuntimeError, match="arrow of recent-round-0: 2 position\\(s\\) differ"):
        merge_cost.check_arrow_floor(spark, tables, batch, {"written_records": 3})
    with pytest.raises(RuntimeError, match="arrow of recent-round-0: 3 rows found and 2 appended"):
        merge_cost.check_arrow_floor(spark, tables, batch, {"written_records": 2})
    positions("arrow", ("a", 1), ("a", 7), ("b", 0))
    spark.sql(f"UPDATE {tables.name('arrow')} SET updated_at = updated_at + INTERVAL 1 HOUR WHERE id = 5")  # noqa: S608
    with pytest.raises(
        RuntimeError, match="arrow of recent-round-0: its table's rows differ from the floor's"
    ):
        merge_cost.check_arrow_floor(spark, tables, batch, {"written_records": 3})


def test_the_newest_boundary_is_the_kth_highest_live_id(
    spark: SparkSession, merge_cost: ModuleType, each_seed: EachSeed
) -> None:
    """Against a sorted list: live ids with gaps over many count blocks (small ones here), the
    boundary for ranks that end a block or start the next one, ranks inside blocks, the last live
    id, and no bound at all."""

    def check(seed: int) -> None:
        block_ids = 97
        rng = random.Random(seed)
        ids = rng.sample(range(1, 5_000), 700)
        live = spark.createDataFrame([(i,) for i in ids], [merge_cost.KEY])
        newest_first = sorted(ids, reverse=True)
        # The rank of each block's lowest id: all ids from that block's start up.
        block_ends = [
            sum(1 for i in ids if i >= start) for start in rng.sample(range(block_ids, 5_000, block_ids), 2)
        ]
        edges = {*block_ends, *(n + 1 for n in block_ends)}
        ranks = sorted(
            {1, 2, len(ids) - 1, *rng.sample(range(1, len(ids)), 3), *(n for n in edges if 0 < n < len(ids))}
        )
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(merge_cost, "BOUNDARY_BLOCK_IDS", block_ids)
            live_keys = merge_cost.LiveKeys(live, len(ids))
            found = {n: live_keys.newest_boundary(n) for n in ranks}
            unbounded = [live_keys.newest_boundary(n) for n in (0, len(ids))]
        assert found == {n: newest_first[n - 1] for n in ranks}
        assert unbounded == [None, None]
        # Counted once for every edge asked of the batch, not once per edge.
        assert live_keys.blocks is live_keys.blocks

    each_seed([1, 2], check)
