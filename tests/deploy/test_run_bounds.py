"""The table-run state machine's bound and the lock's stale age agree (custom resource RunBounds).

The function is deploy/run_bounds/run_bounds.py, imported as Lambda imports it (CodeUri
deploy/run_bounds/). Its constants are held here to the definition and the template they describe.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

import run_bounds
from deploy.template_model import REPO_ROOT, function_globals, template

DEFINITION = json.loads((REPO_ROOT / "statemachine" / "table_run.asl.json").read_text(encoding="utf-8"))
PACING = ("InstanceCheckSeconds", "MaxInstanceChecks", "DmsMaxPollWaitSeconds", "DmsMaxPolls")


def _task_states(states: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: state for name, state in states.items() if state["Type"] == "Task"}


def _parameter(name: str) -> dict[str, Any]:
    return dict(template()["Parameters"][name])


def _event(**properties: Any) -> dict[str, Any]:
    defaults = {name: str(_parameter(name)["Default"]) for name in PACING}
    return {"RequestType": "Create", "ResourceProperties": {**defaults, **properties}}


def test_the_constants_are_the_definitions_and_the_templates() -> None:
    tasks = _task_states(DEFINITION["States"])

    assert DEFINITION["TimeoutSeconds"] == run_bounds.TABLE_RUN_TIMEOUT_SECONDS
    assert tasks["Run Glue job"]["TimeoutSeconds"] == run_bounds.GLUE_STATE_TIMEOUT_SECONDS
    assert len(tasks) - 1 == run_bounds.OTHER_TASK_STATES
    assert function_globals()["Timeout"] == run_bounds.FUNCTION_TIMEOUT_SECONDS


def test_no_live_executions_lock_can_count_as_stale() -> None:
    stale = _parameter("LockStaleAfterSeconds")

    assert stale["MinValue"] == run_bounds.TABLE_RUN_TIMEOUT_SECONDS + run_bounds.LOCK_MARGIN_SECONDS
    assert _parameter("GlueJobTimeoutMinutes")["MaxValue"] * 60 == run_bounds.GLUE_JOB_TIMEOUT_MAX_SECONDS
    assert stale["Default"] >= stale["MinValue"]
    # The example: a stale age of two hours is refused by CloudFormation itself.
    assert stale["MinValue"] > 7200


def test_the_custom_resource_gets_the_pacing_parameters() -> None:
    resources = template()["Resources"]
    properties = resources["RunBounds"]["Properties"]

    assert properties == {
        "ServiceToken": {"Fn::GetAtt": ["RunBoundsFunction", "Arn"]},
        **{name: {"Ref": name} for name in PACING},
    }
    function = resources["RunBoundsFunction"]["Properties"]
    assert (function["CodeUri"], function["Handler"]) == ("deploy/run_bounds/", "run_bounds.handler")


def test_the_default_pacing_fits_the_bound() -> None:
    assert run_bounds.check_the_bounds(_event(), None) == "run-bounds"


def test_pacing_that_lets_a_run_outlast_the_bound_fails_the_deploy_saying_by_how_much() -> None:
    # 30 x (60 + 60) + 100 x (300 + 60) + 7200 + 17 x 60, worked out by hand.
    longest = 3600 + 36000 + 7200 + 1020

    with pytest.raises(
        run_bounds.RunOutlastsItsBound, match=rf"a table run may last {longest} s .* lower DmsMaxPolls"
    ):
        run_bounds.check_the_bounds(
            _event(DmsMaxPolls="100", InstanceCheckSeconds="60", MaxInstanceChecks="30"), None
        )


@pytest.mark.parametrize("value", ["", "0", "-5", "1.5", "lots"])
def test_a_pacing_property_that_is_not_a_whole_number_is_named(value: str) -> None:
    with pytest.raises(run_bounds.RunOutlastsItsBound, match=rf"property DmsMaxPolls is {value!r}"):
        run_bounds.check_the_bounds(_event(DmsMaxPolls=value), None)
