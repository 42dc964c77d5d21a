"""The acceptance dry run with the real Glue job on local Spark: the ordering check reads silver.

Rows 3-5 are updated and row 6 deleted while the stand-in's full load transfers the table (its hook
between the load's read and its transfer), so the full load carries their old values; silver must
end up holding the source's rows all the same (aws-facts: dms-full-load-then-cdc).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from icetide_acceptance.dry_run import dry_run_stack, sqlite_url
from icetide_acceptance.outcome import Status
from icetide_acceptance.scenario import run_scenario

pytestmark = pytest.mark.spark


def test_the_dry_run_with_the_real_job_passes_the_ordering_check(tmp_path: Path) -> None:
    url = sqlite_url(tmp_path)
    with dry_run_stack(url, warehouse=tmp_path / "warehouse") as stack:
        outcomes = run_scenario(stack, url, timeout_seconds=600)

    report = "\n".join(outcome.line() for outcome in outcomes)
    ordering = [outcome for outcome in outcomes if outcome.check == "ordering-full-load"]
    assert [outcome.status for outcome in ordering] == [Status.PASSED], report
    assert not [outcome for outcome in outcomes if outcome.status is Status.FAILED], report
