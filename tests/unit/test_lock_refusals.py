"""Which refusal a run gets at the table lock: a maintenance holder makes a merge run's refusal one
the merge state machine ends without failing (TableUnderMaintenance)."""

from __future__ import annotations

import pytest

from icetide.errors import TableLocked, TableUnderMaintenance
from icetide.run.locking import lock_result

MAINTENANCE_RUN = "orders-maintain-20261124T0000Z"
MERGE_RUN = "orders-20261124T0300Z"
SINCE = "2026-11-24T03:00:01.000000Z"


def _refusal(holder: str, run_id: str) -> type[Exception]:
    with pytest.raises(TableLocked) as refused:
        lock_result(
            "orders",
            run_id,
            written=False,
            before={"lockHolder": holder, "lockTime": SINCE},
            stale_after_seconds=21600,
        )
    assert f"locked by run {holder} since {SINCE}; run {run_id} was refused" in str(refused.value)
    return type(refused.value)


def test_a_merge_run_refused_by_maintenance_is_told_so() -> None:
    assert _refusal(MAINTENANCE_RUN, MERGE_RUN) is TableUnderMaintenance


def test_a_merge_run_refused_by_another_merge_run_is_plainly_locked() -> None:
    assert _refusal("orders-20261124T0200Z", MERGE_RUN) is TableLocked


@pytest.mark.parametrize("holder", [MERGE_RUN, "orders-maintain-20261123T0000Z"])
def test_a_maintenance_run_refused_by_anyone_is_plainly_locked(holder: str) -> None:
    # The maintenance state machine ends every TableLocked as a refusal already.
    assert _refusal(holder, MAINTENANCE_RUN) is TableLocked
