"""benchmarks/table_maintenance.py end to end at a tiny size (2,000 rows, 1 merge, one scan round):
the merges leave files and snapshots behind, maintenance runs, the rows read back with pyiceberg
compare equal, and the exit code follows the verdicts. The comparison and the verdicts that guard
the 2M run are also shown to fail, without Spark."""

from __future__ import annotations

import json
from types import ModuleType
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from benchmarks.conftest import load_benchmark

MERGES = 1


@pytest.fixture(scope="module")
def table_maintenance() -> ModuleType:
    return load_benchmark("table_maintenance")


@pytest.fixture(scope="module")
def tiny_run(
    spark: SparkSession, table_maintenance: ModuleType, tmp_path_factory: pytest.TempPathFactory
) -> tuple[int, dict[str, Any]]:
    """One tiny run in the session's Spark (its own workspace, so its own catalog name)."""
    folder = tmp_path_factory.mktemp("table-maintenance")
    arguments = [
        "--rows", "2000",
        "--merges", str(MERGES),
        "--rounds", "1",
        "--min-snapshots", "1",
        "--workspace", str(folder / "workspace"),
        "--catalog", "bench_maintenance_smoke",
        "--json", str(folder / "results.json"),
    ]  # fmt: skip
    code = table_maintenance.main(arguments)
    return code, json.loads((folder / "results.json").read_text(encoding="utf-8"))


@pytest.mark.spark
def test_rows_read_back_equal_and_the_exit_code_follows_the_verdicts(
    tiny_run: tuple[int, dict[str, Any]],
) -> None:
    code, results = tiny_run

    assert results["rows_equal"] is True
    assert [check["equal"] for check in results["checks"]] == [True, True, True, True]
    assert all(check["left_rows"] == check["right_rows"] > 2000 for check in results["checks"])
    missed = [verdict["what"] for verdict in results["verdicts"] if not verdict["passed"]]
    assert code == results["exit_code"] == (1 if missed else 0), missed
    assert {verdict["what"] for verdict in results["verdicts"]} == {
        "scan after / fresh copy (median)",
        "scan after / fresh (median)",
        "data files after",
        "delete files after",
        "snapshots after",
    }


@pytest.mark.spark
def test_the_merges_left_work_and_maintenance_did_it(tiny_run: tuple[int, dict[str, Any]]) -> None:
    _, results = tiny_run
    before, after, fresh = (results["files"][name] for name in ("merged before", "merged after", "fresh"))

    assert len(results["merge_seconds"]) == MERGES
    # The build, then one snapshot per merge: each updates and inserts, so it removes rows by
    # position and appends rows in one commit; each added data files and delete files.
    assert before["snapshots"] == MERGES + 1
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


def test_a_row_that_differs_is_reported_and_exits_2(
    table_maintenance: ModuleType, capsys: pytest.CaptureFixture[str]
) -> None:
    left = pa.table({"id": [1, 2, 3], "name": ["a", "b", "c"]})
    right = pa.table({"id": [1, 2, 3], "name": ["a", "b", "x"]})

    assert table_maintenance.compare("before vs after", left, left).equal
    check = table_maintenance.compare("before vs after", left, right)

    assert not check.equal
    out = capsys.readouterr().out
    assert "MISMATCH before vs after" in out
    assert "rows only in before (up to 5): [(3, 'c')]" in out
    assert "rows only in after (up to 5): [(3, 'x')]" in out
    results = table_maintenance.Results(
        rows=3, merges=1, mix=table_maintenance.Mix.of(10), rounds=1, policy={}, checks=[check]
    )
    assert results.exit_code() == 2


def test_a_missed_target_exits_1(table_maintenance: ModuleType) -> None:
    files = {"data_files": 2, "delete_files": 0, "position_delete_files": 0, "total_bytes": 1, "snapshots": 3}
    results = table_maintenance.Results(
        rows=3,
        merges=1,
        mix=table_maintenance.Mix.of(10),
        rounds=1,
        policy={},
        files={"merged after": {**files, "delete_files": 1}, "fresh": {**files, "data_files": 1}},
        scans={
            "merged after": [1.2, 1.1, 1.0],
            "fresh copy (after)": [1.0, 1.3, 0.5],  # ratios 1.2, 0.85, 2.0
            "fresh (after)": [1.1, 1.05, 1.0],  # ratios 1.09, 1.05, 1.0
        },
        maintenance_commits=1,
        checks=[table_maintenance.Check("rows", 3, 3, True)],
    )
    results.verdicts = table_maintenance.judge(results, min_snapshots=2)

    passed = {verdict.what: verdict.passed for verdict in results.verdicts}
    assert passed == {
        "scan after / fresh copy (median)": False,  # 1.2: the median of the rounds' ratios
        "scan after / fresh (median)": True,  # 1.05
        "data files after": False,  # 2 > the fresh table's 1
        "delete files after": False,
        "snapshots after": True,  # 3 <= 2 kept + 1 by maintenance
    }
    assert results.exit_code() == 1
    # One lucky round of the reference (0.5) moves the median of the ratios, not the verdict.
    results.scans["fresh copy (after)"] = [1.1, 1.05, 0.5]  # ratios 1.09, 1.05, 2.0
    results.scans["fresh (after)"] = [1.0, 1.0, 1.0]  # ratios 1.2, 1.1, 1.0
    again = {verdict.what: verdict.passed for verdict in table_maintenance.judge(results, min_snapshots=2)}
    assert (again["scan after / fresh copy (median)"], again["scan after / fresh (median)"]) == (True, True)
    results.scans["fresh (after)"] = [1.0, 0.9, 1.0]  # ratios 1.2, 1.22, 1.0
    again = {verdict.what: verdict.passed for verdict in table_maintenance.judge(results, min_snapshots=2)}
    assert again["scan after / fresh (median)"] is False
