"""The maintenance ASL itself: fully substituted, shaped as docs/state-machine.md ("Maintenance") says."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import pytest

from icetide_local.stepfunctions.definition import (
    DEFINITION_PATH,
    MAINTENANCE_DEFINITION_PATH,
    SUBSTITUTIONS_PATH,
    load_substitutions,
    placeholders,
    render_definition,
)

if TYPE_CHECKING:
    from statemachine.conftest import AslValidator

TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}


@pytest.fixture(scope="module")
def states() -> dict[str, dict[str, Any]]:
    result: dict[str, dict[str, Any]] = json.loads(MAINTENANCE_DEFINITION_PATH.read_text())["States"]
    return result


def test_the_maintenance_machine_uses_exactly_its_four_substitutions() -> None:
    assert placeholders(MAINTENANCE_DEFINITION_PATH.read_text()) == {
        "AcquireMaintenanceLockFunctionArn",
        "RecordMaintenanceFunctionArn",
        "MaintenanceGlueJobName",
        "NotificationTopicArn",
    }


def test_substitutions_json_holds_the_keys_of_both_machines_and_no_other() -> None:
    used = placeholders(DEFINITION_PATH.read_text()) | placeholders(MAINTENANCE_DEFINITION_PATH.read_text())

    assert set(json.loads(SUBSTITUTIONS_PATH.read_text())) == used


def test_the_definition_renders_with_the_sample_values() -> None:
    rendered = json.loads(render_definition(load_substitutions(), MAINTENANCE_DEFINITION_PATH))

    assert rendered["States"]["Run maintenance job"]["Parameters"]["JobName"] == "icetide-maintain-silver"
    assert rendered["QueryLanguage"] == "JSONPath"


def test_a_locked_or_opted_out_table_is_a_refusal_that_succeeds(states: dict[str, dict[str, Any]]) -> None:
    catchers = {tuple(c["ErrorEquals"]): c["Next"] for c in states["Acquire table lock"]["Catch"]}

    for error in (("TableLocked",), ("MaintenanceDisabled",)):
        refusal = states[catchers[error]]
        assert refusal["Type"] == "Pass"
        assert states[refusal["Next"]]["Type"] == "Succeed"


def test_every_task_has_a_timeout_and_a_catch_for_every_error(states: dict[str, dict[str, Any]]) -> None:
    tasks = {name: state for name, state in states.items() if state["Type"] == "Task"}

    assert set(tasks) == {
        "Acquire table lock",
        "Run maintenance job",
        "Record maintenance",
        "Record maintenance failure",
        "Notify failure",
    }
    for name, task in tasks.items():
        assert isinstance(task.get("TimeoutSeconds"), int) and task["TimeoutSeconds"] > 0, name
        assert any(catcher["ErrorEquals"] == ["States.ALL"] for catcher in task["Catch"]), name


def test_lambda_tasks_retry_transient_errors_and_the_job_waits_for_a_glue_slot(
    states: dict[str, dict[str, Any]],
) -> None:
    for name in ("Acquire table lock", "Record maintenance", "Record maintenance failure"):
        [retrier] = states[name]["Retry"]
        assert set(retrier["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS, name
        assert retrier["BackoffRate"] > 1
    [glue_retry] = states["Run maintenance job"]["Retry"]
    assert glue_retry["ErrorEquals"] == ["Glue.ConcurrentRunsExceededException", "Glue.ThrottlingException"]


def test_the_job_runs_synchronously_with_the_plans_arguments(states: dict[str, dict[str, Any]]) -> None:
    job = states["Run maintenance job"]

    assert job["Resource"] == "arn:aws:states:::glue:startJobRun.sync"
    assert job["Parameters"]["Arguments.$"] == "$.lock.plan.jobArguments"


def test_every_failure_is_recorded_then_notified_then_fails(states: dict[str, dict[str, Any]]) -> None:
    for name in ("Acquire table lock", "Run maintenance job", "Record maintenance"):
        [catch_all] = [c for c in states[name]["Catch"] if c["ErrorEquals"] == ["States.ALL"]]
        note = states[catch_all["Next"]]
        assert (note["Parameters"]["state"], note["Next"]) == (name, "Record maintenance failure")
    assert states["Record maintenance failure"]["Next"] == "Notify failure"
    assert states["Notify failure"]["Next"] == "Maintenance failed"
    assert states["Maintenance failed"] == {
        **states["Maintenance failed"],
        "Type": "Fail",
        "Error": "TableMaintenanceFailed",
    }
    fails = {name for name, state in states.items() if state["Type"] == "Fail"}
    assert fails == {"Maintenance failed"}


@pytest.mark.tools
def test_asl_validator_accepts_the_definition(asl_validator: AslValidator) -> None:
    result = asl_validator(MAINTENANCE_DEFINITION_PATH)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is valid" in result.stdout
