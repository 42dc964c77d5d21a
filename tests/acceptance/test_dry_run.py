"""The acceptance scenario's dry run: the real state machine and handlers in moto, the DMS stand-in
moving a SQLite table, and every check reading what happened through boto3 (as on AWS)."""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide_acceptance.dry_run import dry_run_stack, sqlite_url
from icetide_acceptance.outcome import Status
from icetide_acceptance.scenario import run_scenario

pytestmark = pytest.mark.stack


def test_the_dry_run_passes_every_check_it_can_make(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with dry_run_stack(url) as stack:
        outcomes = run_scenario(stack, url, timeout_seconds=120)

    statuses: dict[str, set[Status]] = {}
    for outcome in outcomes:
        statuses.setdefault(outcome.check, set()).add(outcome.status)
    assert statuses == {
        "dms-cdc-files": {Status.PASSED},
        "dms-op-column": {Status.PASSED},
        "dms-counters": {Status.PASSED},
        "dms-counters-on-resume": {Status.NOT_APPLICABLE},  # no continuous table in the scenario
        "dms-stop-position": {Status.PASSED},
        # SQLite: no slot; no silver without Spark (test_dry_run_spark.py checks the ordering).
        "dms-slot": {Status.NOT_APPLICABLE},
        "ordering-full-load": {Status.NOT_APPLICABLE},
        "iam-functions": {Status.PASSED},
        "dms-engine-version": {Status.PASSED},
        "dms-cleanup": {Status.PASSED},
        "dms-log-retention": {Status.PASSED},
    }, "\n".join(outcome.line() for outcome in outcomes)
    by_check = {outcome.check: outcome for outcome in outcomes}
    # The second run's window stopped by itself. The changes committed during the first run's full
    # load (3 updates, 1 delete) are in the first run's window or the second's, depending on where
    # its stop position's whole second falls; the 2 updates before the second run are in the second.
    assert "STOPPED_AT_SERVER_TIME" in by_check["dms-stop-position"].detail
    counted = [outcome.detail for outcome in outcomes if outcome.check == "dms-counters"]
    assert counted in (
        [
            "rows in files {'FullLoadRows': 20, 'Inserts': 0, 'Updates': 0, 'Deletes': 0}; equal per Op",
            "rows in files {'FullLoadRows': 0, 'Inserts': 0, 'Updates': 5, 'Deletes': 1}; equal per Op",
        ],
        [
            "rows in files {'FullLoadRows': 20, 'Inserts': 0, 'Updates': 3, 'Deletes': 1}; equal per Op",
            "rows in files {'FullLoadRows': 0, 'Inserts': 0, 'Updates': 2, 'Deletes': 0}; equal per Op",
        ],
    )
