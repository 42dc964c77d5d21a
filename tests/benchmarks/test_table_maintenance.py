"""benchmarks/table_maintenance.py's guards without Spark: the comparison and the verdicts that
guard the 2M run are shown to fail. Its whole run, at a tiny size, is in test_smoke.py."""

from __future__ import annotations

from types import ModuleType

import pyarrow as pa
import pytest


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
