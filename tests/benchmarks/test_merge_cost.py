"""benchmarks/merge_cost.py's pieces that need no Spark: the planner's scan figures, the plot's
refusal before any work, the targets and their verdicts, the run's verdict from its checks. The
whole of it runs in the Spark tier's one benchmark test (test_smoke.py)."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

APPROACHES = {"icetide", "append", "naive", "reload", "bare", "floor", "arrow"}
PATTERNS = {"scattered", "recent", "fixed"}


# The smallest table whose batch still holds every kind of change: a share of 1 % is 10 changes,
# 7 updates, 1 delete and 2 inserts (a smaller one rounds its delete away); "fixed" takes as many.
SMOKE_SIZE = 1000
SMOKE_FIXED_CHANGES = 10


def benchmark_arguments(tmp_path: Path, catalog: str, *more: str) -> list[str]:
    """One ``SMOKE_SIZE``-row table and one round; each test its own workspace, so its own catalog
    name (Spark keeps a catalog's first warehouse)."""
    return [
        "--sizes", str(SMOKE_SIZE),
        "--rounds", "1",
        "--fixed-changes", str(SMOKE_FIXED_CHANGES),
        "--no-plot",
        "--no-warm-up",
        "--out", str(tmp_path / "out"),
        "--workspace", str(tmp_path / "workspace"),
        "--catalog", catalog,
        *more,
    ]  # fmt: skip


def read_results(tmp_path: Path) -> dict[str, Any]:
    return json.loads((tmp_path / "out" / "merge_cost.json").read_text(encoding="utf-8"))


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


def test_the_run_is_correct_only_when_every_check_found_the_same_rows(merge_cost: ModuleType) -> None:
    """main's exit code is 0 only for a correct run: the smoke run (test_smoke.py) spoils silver in
    its last round, so the verdict of an unspoilt run is shown here, from checks like its own."""
    config = merge_cost.parse_arguments(["--sizes", "2000", "--fixed-changes", "20", "--no-plot"])[1]
    same = merge_cost.Check("icetide vs naive (2,000 scattered-round-0)", 3, 3, "7", "7")
    other_sum = merge_cost.Check("bare vs naive (2,000 scattered-round-0)", 3, 3, "8", "7")
    fewer = merge_cost.Check("reload vs naive (2,000 scattered-round-0)", 2, 3, "7", "7")

    assert merge_cost.Results(config, checks=[same, same]).correct is True
    assert merge_cost.Results(config, checks=[same, other_sum]).correct is False
    assert merge_cost.Results(config, checks=[fewer, same]).correct is False
