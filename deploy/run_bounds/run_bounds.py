"""Refuse a stack whose table runs could outlast their own bound (custom resource RunBounds).

Why: a table lock older than LockStaleAfterSeconds counts as a dead run's, and the next run takes
it over; a run still alive by then would write the silver table beside the new one. So the table-run
state machine has an overall TimeoutSeconds (:data:`TABLE_RUN_TIMEOUT_SECONDS`), and CleanUpExecution
releases the lock of an execution that timed out. Step Functions may stop the execution's Glue job
run with it, or not (best effort): either way the job run ends by its own timeout, at most
GlueJobTimeoutMinutes' MaxValue after it started. The template's LockStaleAfterSeconds has the bound
plus :data:`LOCK_MARGIN_SECONDS` as its MinValue, so no lock of a run still writing can count as
stale. What is left to check at deploy is that
the pacing parameters let a run finish within the bound at all, which needs a sum CloudFormation's
Rules cannot compute (they compare values, they do not add them): hence this custom resource. A run
whose waits alone exceed the bound would be cut off by it every time.

The longest run, from the table-run definition (statemachine/table_run.asl.json):

- the instance loop: ``MaxInstanceChecks`` times a wait of ``InstanceCheckSeconds`` and one
  EnsureReplicationInstance call;
- the polling loop: ``DmsMaxPolls`` times a wait of at most ``DmsMaxPollWaitSeconds`` and one
  PollReplicationTask call;
- the Glue state, bounded by its own TimeoutSeconds;
- every other Task state once (the loops' first calls among them), each at most one function
  timeout.

Lambda retries on service errors are left out: they last seconds, and the overall bound catches
whatever else is left. A test holds the constants here to the definition and the template.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from crhelper import CfnResource

# The table-run definition's overall TimeoutSeconds.
TABLE_RUN_TIMEOUT_SECONDS = 28800
# The longest a Glue job run lasts (the template's GlueJobTimeoutMinutes MaxValue): a job run the
# execution started just before its bound may go on this long after it.
GLUE_JOB_TIMEOUT_MAX_SECONDS = 115 * 60
# Time for CleanUpExecution to release a timed-out execution's lock.
RELEASE_SECONDS = 900
# From the execution's bound to the lock's stale age.
LOCK_MARGIN_SECONDS = GLUE_JOB_TIMEOUT_MAX_SECONDS + RELEASE_SECONDS
# The table-run definition's "Run Glue job" TimeoutSeconds: the longest the Glue state waits.
GLUE_STATE_TIMEOUT_SECONDS = 7200
# The Globals' function Timeout: the longest one Lambda call of a run takes.
FUNCTION_TIMEOUT_SECONDS = 60
# The table-run definition's Task states but the Glue one: a run passes each once outside the loops.
OTHER_TASK_STATES = 17

helper = CfnResource(log_level="WARNING", sleep_on_delete=0)

Event = dict[str, Any]


class RunOutlastsItsBound(Exception):
    """The pacing parameters let a run last longer than the table-run state machine's bound."""


@dataclass(frozen=True)
class RunPacing:
    """The parameters that pace one table run, as the template names them."""

    instance_check_seconds: int
    max_instance_checks: int
    max_poll_wait_seconds: int
    max_polls: int

    @classmethod
    def from_properties(cls, properties: Mapping[str, Any]) -> RunPacing:
        """The resource's properties (CloudFormation passes numbers as strings), each a whole number > 0."""
        values = {}
        for name, field_name in _PROPERTIES.items():
            text = str(properties.get(name, ""))
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"RunBounds property {name} is {text!r}, not a whole number of at least 1")
            values[field_name] = int(text)
        return cls(**values)

    @property
    def longest_run_seconds(self) -> int:
        """The longest a table run can last under these parameters (the module docstring's sum)."""
        call = FUNCTION_TIMEOUT_SECONDS
        instance_loop = self.max_instance_checks * (self.instance_check_seconds + call)
        polling_loop = self.max_polls * (self.max_poll_wait_seconds + call)
        return instance_loop + polling_loop + GLUE_STATE_TIMEOUT_SECONDS + OTHER_TASK_STATES * call

    def check(self) -> None:
        """RunOutlastsItsBound, saying by how much and what to lower, when a run may outlast the bound."""
        longest = self.longest_run_seconds
        if longest > TABLE_RUN_TIMEOUT_SECONDS:
            call = FUNCTION_TIMEOUT_SECONDS
            raise RunOutlastsItsBound(
                f"a table run may last {longest} s (MaxInstanceChecks x (InstanceCheckSeconds + {call}) + "
                f"DmsMaxPolls x (DmsMaxPollWaitSeconds + {call}) + the Glue state's "
                f"{GLUE_STATE_TIMEOUT_SECONDS} + {OTHER_TASK_STATES} steps of {call}), more than the "
                f"table-run state machine's bound of {TABLE_RUN_TIMEOUT_SECONDS} s, which would cut it off: "
                "lower DmsMaxPolls, DmsMaxPollWaitSeconds, MaxInstanceChecks or InstanceCheckSeconds"
            )


# The resource's property names -> RunPacing's fields.
_PROPERTIES = {
    "InstanceCheckSeconds": "instance_check_seconds",
    "MaxInstanceChecks": "max_instance_checks",
    "DmsMaxPollWaitSeconds": "max_poll_wait_seconds",
    "DmsMaxPolls": "max_polls",
}


def _reason_names_the_error(step: Callable[[Event, Any], str | None]) -> Callable[[Event, Any], str | None]:
    """crhelper reports str(error) alone; the error's name says which rule the stack broke."""

    @functools.wraps(step)
    def run(event: Event, context: Any) -> str | None:
        try:
            return step(event, context)
        except Exception as error:
            raise RunOutlastsItsBound(f"{type(error).__name__}: {error}") from error

    return run


@helper.create
@helper.update
@_reason_names_the_error
def check_the_bounds(event: Event, _context: Any) -> str:
    """Fail the deploy when a run could outlast the table-run state machine's bound."""
    RunPacing.from_properties(event["ResourceProperties"]).check()
    return "run-bounds"


@helper.delete
def nothing_to_remove(_event: Event, _context: Any) -> None:
    """The resource creates nothing."""


def handler(event: Event, context: Any) -> None:
    """The Lambda entry point: crhelper calls the step for the request type and answers CloudFormation."""
    helper(event, context)
