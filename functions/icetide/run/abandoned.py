"""Runs that ended outside the state machine's own paths, as EventBridge reports them.

A table run cleans up after itself: every failure it catches goes to DeleteDmsResources,
RecordFailure and ReleaseLock. An execution stopped by hand (ABORTED) or timed out (TIMED_OUT)
skips every Catch, and a run whose failure path itself failed ends FAILED with its failure
unrecorded; its replication instance keeps running (billed) and its table stays locked. Step
Functions reports each end to EventBridge as a "Step Functions Execution Status Change" event (see
``events/clean_up_execution.json``); this module reads that event and decides, from the run's
control item, what the cleanup still has to do (:func:`cleanup_plan`).

The event's ``detail.input`` is the execution's input as a JSON string; EventBridge leaves it out
(``inputDetails.included`` false) when input and output together exceed its size limit, and then
the table is read from DescribeExecution instead. The run id is the execution name, always.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from icetide.run.failure import failure_message
from icetide.run.verify import is_verify_run_id

EVENT_SOURCE = "aws.states"
STATUS_CHANGE = "Step Functions Execution Status Change"
# What template.yaml's rule matches (detail.status), and the local stand-in of that rule with it.
CLEANUP_STATUSES = ("ABORTED", "TIMED_OUT", "FAILED")
FAILED = "FAILED"
_SUCCEEDED = "SUCCEEDED"


class _EventPart(BaseModel):
    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)


class DataDetails(_EventPart):
    """``inputDetails`` / ``outputDetails``: whether EventBridge included the data."""

    included: bool = True


class ExecutionStatusDetail(_EventPart):
    """The ``detail`` of a status-change event (what DescribeExecution would say of the execution)."""

    execution_arn: str = Field(alias="executionArn", min_length=1)
    state_machine_arn: str = Field(alias="stateMachineArn", min_length=1)
    name: str = Field(min_length=1)
    status: str = Field(min_length=1)
    input: str | None = None
    input_details: DataDetails | None = Field(None, alias="inputDetails")
    error: str | None = None
    cause: str | None = None


class ExecutionStatusChange(_EventPart):
    """An EventBridge "Step Functions Execution Status Change" event."""

    source: Literal["aws.states"]
    detail_type: Literal["Step Functions Execution Status Change"] = Field(alias="detail-type")
    time: datetime | None = None
    detail: ExecutionStatusDetail

    @property
    def run_id(self) -> str:
        """The run's id: by contract the execution's name."""
        return self.detail.name

    @property
    def status(self) -> str:
        return self.detail.status

    @property
    def needs_cleanup(self) -> bool:
        """Whether the status is one a run may end in without its own cleanup having run."""
        return self.detail.status in CLEANUP_STATUSES

    def target_table_name(self) -> str | None:
        """The table named in the event's input; None when EventBridge left the input out."""
        details = self.detail.input_details
        if details is not None and not details.included:
            return None
        return table_in_input(self.detail.input)


def table_in_input(execution_input: str | None) -> str | None:
    """``targetTableName`` of an execution input (a JSON string); None if absent or not readable."""
    if not execution_input:
        return None
    try:
        document = json.loads(execution_input)
    except json.JSONDecodeError:
        return None  # cut short: the caller asks DescribeExecution for the whole input
    table = document.get("targetTableName") if isinstance(document, dict) else None
    return table if isinstance(table, str) and table else None


def abandoned_message(status: str, error: str | None, cause: str | None) -> str:
    """The ``lastRunError`` of a run that ended ``status``: ``execution ABORTED: <error>: <cause>``."""
    if not error and not cause:
        return f"execution {status}"
    return f"execution {status}: {failure_message({'Error': error or '', 'Cause': cause or ''})}"


@dataclass(frozen=True)
class CleanupPlan:
    """What the cleanup of one ended run does besides deleting the DMS resources tagged with its run id
    (always: that is idempotent and touches no other run's), and why, in a sentence for the log and
    the output."""

    record_failure: bool
    release_lock: bool
    reason: str


def cleanup_plan(status: str, run_id: str, item: Mapping[str, Any] | None) -> CleanupPlan:
    """What is left to do after run ``run_id`` ended ``status``, given its table's control item.

    - A FAILED run whose failure the item records (``lastRunId`` is the run, ``lastRunStatus``
      FAILED) went through its Catch path: nothing is recorded, a lock it still holds (its
      ReleaseLock failed) is released, and its DMS resources are deleted again by its tags (none
      are left unless the path's own delete failed).
    - Otherwise (ABORTED, TIMED_OUT, or a FAILED run with nothing recorded) its DMS resources are
      deleted, and its failure is recorded only where the item is still this run's: the run holds
      the lock, or nobody does and the item's last run is this one, not committed. Another run's
      lock or state is never touched (RecordFailure's rule), nor a commit this run made before it
      was stopped.
    - The lock is released only if this run holds it.
    - A verify run (``-verify-`` in its id) never records anything: only its DMS resources and its
      lock are cleaned up.
    """
    item = item or {}
    holder = item.get("lockHolder")
    this_runs_item = item.get("lastRunId") == run_id
    holds_lock = holder == run_id
    last_status = item.get("lastRunStatus")
    if status == FAILED and this_runs_item and last_status == FAILED:
        # Its failure path deleted the run's DMS resources, unless that very step failed (the run
        # then records cleanupError): deleting again by the run's tags is idempotent, so always do.
        return CleanupPlan(
            record_failure=False,
            release_lock=holds_lock,
            reason="the run's failure path ran: its failure is recorded",
        )
    if not item:
        return CleanupPlan(False, False, "no control item: nothing to record or unlock")
    already_recorded = this_runs_item and last_status == FAILED
    committed = this_runs_item and last_status == _SUCCEEDED
    record = not already_recorded and not committed and (holds_lock or (holder is None and this_runs_item))
    if is_verify_run_id(run_id):
        # A verify run never writes a run's state (its own failure path records nothing either):
        # the item describes the table's last merge, which a stopped verify did not touch.
        record = False
        reason = f"verify run ended {status}: nothing to record"
    elif already_recorded:
        reason = "the run's failure is already recorded"
    elif committed:
        reason = "the run committed before it ended: its state stays"
    elif record:
        reason = f"the run ended {status} outside its failure path"
    else:
        reason = f"the control item belongs to run {holder or item.get('lastRunId')}: left alone"
    return CleanupPlan(record_failure=record, release_lock=holds_lock, reason=reason)
