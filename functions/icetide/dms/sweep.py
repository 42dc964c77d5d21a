"""The hourly sweep's rule: which of this stack's DMS resources are a dead run's leftovers.

A run deletes what it created on every path the state machine knows, and the execution-status rule
cleans up after runs that ended outside those paths. If both failed (a cleanup that ran out of
retries, an event EventBridge never delivered), replication instances keep running and are billed.
The sweep deletes a resource of this stack only when it was created by a run (it carries a run tag
and the identifier icetide derives for it), is not long-lived, and that run's execution no longer
runs: it does not exist, or it ended more than :data:`SWEEP_GRACE` ago. The grace leaves a
just-ended run's own cleanup (its Catch path, or the status rule with Lambda's retries) the time to
finish first, so the two never race.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from icetide.dms.tagged import TaggedResource

# Longer than a run's own cleanup takes (Lambda retries the status rule's target for about three
# minutes), shorter than the sweep's period, so a leftover costs at most about two hours.
SWEEP_GRACE = timedelta(hours=1)
RUNNING = "RUNNING"


@dataclass(frozen=True)
class RunExecution:
    """What Step Functions says of a run's execution: its status and, once ended, when it stopped."""

    status: str
    stopped_at: datetime | None = None


def keep_reason(
    resource: TaggedResource,
    stack: str,
    execution: RunExecution | None,
    now: datetime,
    grace: timedelta = SWEEP_GRACE,
) -> str | None:
    """Why the sweep must leave ``resource`` alone, or None when it is a dead run's leftover.

    ``execution`` is the execution of the resource's run, None when no such execution exists. An
    ended execution without a stop time is taken as just ended: the next sweep decides.
    """
    if not resource.of_stack(stack):
        return "not this stack's"
    if resource.long_lived:
        return "long-lived (a continuous table's)"
    if resource.run_id is None:
        return "not created by a run"
    if not resource.is_icetides(stack):
        return f"its identifier {resource.identifier} is not one icetide derives for its tags"
    if execution is None:
        return None
    if execution.status == RUNNING:
        return f"run {resource.run_id} is still running"
    if execution.stopped_at is None or now - execution.stopped_at < grace:
        return f"run {resource.run_id} ended less than {_readable(grace)} ago; its own cleanup goes first"
    return None


def _readable(span: timedelta) -> str:
    minutes = int(span.total_seconds() // 60)
    return f"{minutes // 60} h" if minutes % 60 == 0 else f"{minutes} min"
