"""benchmarks/merge_cost.py end to end at a tiny size: every approach and pattern is measured, the
results are written, and the comparison that guards them does fail when silver is wrong."""

from __future__ import annotations

import json
import logging
import random
from dataclasses import replace
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from pyspark.sql import SparkSession

pytestmark = pytest.mark.spark

APPROACHES = {"icetide", "append", "naive", "reload", "bare", "floor", "arrow"}
PATTERNS = {"scattered", "recent", "fixed"}


def benchmark_arguments(tmp_path: Path, catalog: str, *more: str) -> list[str]:
    """One 2,000-row table and one round; each test its own workspace, so its own catalog name
    (Spark keeps a catalog's first warehouse)."""
    return [
        "--sizes", "2000",
        "--rounds", "1",
        "--fixed-changes", "20",
        "--no-plot",
        "--no-warm-up",
        "--out", str(tmp_path / "out"),
        "--workspace", str(tmp_path / "workspace"),
        "--catalog", catalog,
        *more,
    ]  # fmt: skip


def read_results(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "out" / "merge_cost.json").read_text(encoding="utf-8"))


def test_every_approach_and_pattern_is_measured_and_agrees(
    spark: SparkSession, merge_cost: ModuleType, tmp_path: Path
) -> None:
    assert merge_cost.main(benchmark_arguments(tmp_path, "bench_smoke")) == 0

    results = read_results(tmp_path)
    assert results["correct"] is True
    assert results["checks"] and all(check["ok"] for check in results["checks"])
    assert {r["pattern"] for r in results["results"]} == PATTERNS
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
    summary = results["summary"]["2000"]
    assert set(summary) == PATTERNS and all(set(row) == APPROACHES for row in summary.values())
    assert results["builds"][0]["seconds"] > 0
    assert results["versions"]["iceberg"]
    assert not (tmp_path / "out" / "merge_cost.png").exists()


def test_a_silver_row_missing_fails_the_run(
    spark: SparkSession, merge_cost: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def drop_one_silver_row(session: SparkSession, tables: Any) -> None:
        silver = tables.name("silver")
        session.sql(f"DELETE FROM {silver} WHERE id = (SELECT min(id) FROM {silver})")  # noqa: S608

    arguments = benchmark_arguments(tmp_path, "bench_tamper", "--patterns", "scattered")
    assert merge_cost.main(arguments, before_compare=drop_one_silver_row) == 1

    results = read_results(tmp_path)
    assert results["correct"] is False
    verdicts = {check["what"].split(" (")[0]: check["ok"] for check in results["checks"]}
    assert verdicts == {
        "icetide vs full load": True,
        "icetide vs naive": False,
        "reload vs naive": True,
        "bare vs naive": True,
    }
    assert "MISMATCH icetide vs naive" in capsys.readouterr().out


def test_the_job_s_planned_reads_are_counted_and_the_planner_s_logger_left_as_found(
    merge_cost: ModuleType, caplog: pytest.LogCaptureFixture
) -> None:
    """Without Spark: the scan figures icetide_glue.merge.planned_scan logs (its staged reads report none
    to Spark) are summed per figure; records without them count nothing; none reaches the root."""
    planner = logging.getLogger("icetide_glue.merge.planned_scan")
    as_found = (planner.level, planner.propagate, list(planner.handlers))
    first = {"table": "a", "data_files": 3, "data_bytes": 100, "skipped_data_files": 2}
    second = {"table": "b", "data_files": 4, "data_bytes": 50, "skipped_data_files": 0}
    with caplog.at_level(logging.INFO), merge_cost.PlannedScans().attached() as planned:
        planner.info("planned", extra={"scan": {**first, "delete_files": 1, "delete_bytes": 10}})
        planner.info("planned", extra={"scan": {**second, "delete_files": 0, "delete_bytes": 0}})
        planner.info("a record without figures")
    assert planned.figures == {
        "scanned_data_files": 7,
        "scanned_data_bytes": 150,
        "skipped_data_files": 2,
        "scanned_delete_files": 1,
        "scanned_delete_bytes": 10,
    }
    assert (planner.level, planner.propagate, list(planner.handlers)) == as_found
    assert not [record for record in caplog.records if record.name == planner.name]


def test_a_plot_without_its_library_is_refused_before_any_work(
    merge_cost: ModuleType,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Without matplotlib the plot, drawn after the whole run, would fail it at its end."""
    arguments = [a for a in benchmark_arguments(tmp_path, "bench_no_matplotlib") if a != "--no-plot"]
    real_find_spec = merge_cost.importlib.util.find_spec
    monkeypatch.setattr(
        merge_cost.importlib.util,
        "find_spec",
        lambda name, *more: None if name == "matplotlib" else real_find_spec(name, *more),
    )
    with pytest.raises(SystemExit) as stopped:
        merge_cost.main(arguments)
    assert stopped.value.code == 2
    assert "merge_cost.png needs matplotlib" in capsys.readouterr().err
    assert not (tmp_path / "workspace").exists() and not (tmp_path / "out").exists()


def test_targets_are_judged_from_minimum_times(merge_cost: ModuleType) -> None:
    """The ratios, without Spark: minimum over rounds, every size, the growth across sizes."""

    def figures(**seconds: float) -> dict[str, dict[str, float]]:
        return {name: {"min_seconds": value} for name, value in seconds.items()}

    summary = {
        1000: {
            "scattered": figures(
                icetide=1.0, append=0.1, naive=4.0, reload=1.0, bare=2.0, floor=0.5, arrow=0.2
            ),
            "recent": figures(
                icetide=1.0, append=0.5, naive=4.0, reload=20.0, bare=1.5, floor=0.8, arrow=0.4
            ),
            "fixed": figures(icetide=1.0, append=0.5, naive=4.0, reload=20.0, bare=1.0, floor=0.4, arrow=0.1),
        },
        10000: {
            "fixed": figures(icetide=2.0, append=0.5, naive=4.0, reload=20.0, bare=1.4, floor=0.6, arrow=0.3)
        },
    }
    verdicts = merge_cost.evaluate_targets(summary, [1000, 10000])
    passed = {(v["size"], v["pattern"], v["ratio"]): v["pass"] for v in verdicts}
    assert passed == {
        (1000, "scattered", "naive/icetide"): True,
        (1000, "scattered", "reload/icetide"): False,
        (1000, "recent", "reload/icetide"): True,
        (1000, "recent", "icetide/append"): True,
        (10000, "fixed", "icetide(10,000)/icetide(1,000)"): False,
    }
    # The same targets with the bare MERGE in icetide's place (printed beside them, not judged).
    bare = merge_cost.evaluate_targets(summary, [1000, 10000], "bare")
    assert {(v["size"], v["pattern"], v["ratio"]): (round(v["value"], 2), v["pass"]) for v in bare} == {
        (1000, "scattered", "naive/bare"): (2.0, False),
        (1000, "scattered", "reload/bare"): (0.5, False),
        (1000, "recent", "reload/bare"): (13.33, True),
        (1000, "recent", "bare/append"): (3.0, True),
        (10000, "fixed", "bare(10,000)/bare(1,000)"): (1.4, True),
    }
    # Every reference in icetide's place: the bare MERGE's ratios as above, and the floor's.
    references = merge_cost.reference_verdicts(summary, [1000, 10000])
    assert set(references) == {"bare", "floor", "arrow"}
    assert references["bare"] == bare
    assert {(v["size"], v["pattern"], v["ratio"]): round(v["value"], 2) for v in references["floor"]} == {
        (1000, "scattered", "naive/floor"): 8.0,
        (1000, "scattered", "reload/floor"): 2.0,
        (1000, "recent", "reload/floor"): 25.0,
        (1000, "recent", "floor/append"): 1.6,
        (10000, "fixed", "floor(10,000)/floor(1,000)"): 1.5,
    }
    assert {(v["size"], v["pattern"], v["ratio"]): round(v["value"], 2) for v in references["arrow"]} == {
        (1000, "scattered", "naive/arrow"): 20.0,
        (1000, "scattered", "reload/arrow"): 5.0,
        (1000, "recent", "reload/arrow"): 50.0,
        (1000, "recent", "arrow/append"): 0.8,
        (10000, "fixed", "arrow(10,000)/arrow(1,000)"): 3.0,
    }


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


@pytest.mark.parametrize("seed", [1, 2])
def test_the_newest_boundary_is_the_kth_highest_live_id(
    spark: SparkSession, merge_cost: ModuleType, seed: int
) -> None:
    """Against a sorted list: live ids with gaps over many count blocks (small ones here), the
    boundary for ranks that end a block or start the next one, ranks inside blocks, the last live
    id, and no bound at all."""
    block_ids = 97
    rng = random.Random(seed)
    ids = rng.sample(range(1, 5_000), 700)
    live = spark.createDataFrame([(i,) for i in ids], [merge_cost.KEY])
    newest_first = sorted(ids, reverse=True)
    # The rank of each block's lowest id: all ids from that block's start up.
    block_ends = [
        sum(1 for i in ids if i >= start) for start in rng.sample(range(block_ids, 5_000, block_ids), 4)
    ]
    edges = {*block_ends, *(n + 1 for n in block_ends)}
    ranks = sorted(
        {1, 2, len(ids) - 1, *rng.sample(range(1, len(ids)), 8), *(n for n in edges if 0 < n < len(ids))}
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
