"""The ASL file itself: valid, fully substituted, and shaped as docs/state-machine.md says."""

from __future__ import annotations

import importlib.util
import json
from typing import TYPE_CHECKING, Any

import pytest

from icetide_local.stepfunctions.definition import (
    DEFINITION_PATH,
    MAINTENANCE_DEFINITION_PATH,
    SUBSTITUTIONS_PATH,
    handler_module,
    load_substitutions,
    placeholders,
)

if TYPE_CHECKING:
    from statemachine.conftest import AslValidator

TRANSIENT_LAMBDA_ERRORS = {
    "Lambda.ServiceException",
    "Lambda.AWSLambdaException",
    "Lambda.SdkClientException",
    "Lambda.TooManyRequestsException",
}
# The cleanup path's Task states: each one's Catch goes on to the next cleanup step.
CLEANUP_TASKS = {
    "Delete DMS resources after failure",
    "Record failure",
    "Notify failure",
    "Release table lock after failure",
}
SETTINGS = {"PollSeconds", "MaxPollWaitSeconds", "MaxPolls", "InstanceCheckSeconds", "MaxInstanceChecks"}


@pytest.fixture(scope="module")
def states() -> dict[str, dict[str, Any]]:
    definition = json.loads(DEFINITION_PATH.read_text())
    result: dict[str, dict[str, Any]] = definition["States"]
    return result


def _tasks(states: dict[str, dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {name: state for name, state in states.items() if state["Type"] == "Task"}


def test_every_placeholder_is_a_substitution_key_and_every_key_is_used() -> None:
    in_definition = placeholders(DEFINITION_PATH.read_text())
    in_substitutions = set(json.loads(SUBSTITUTIONS_PATH.read_text()))
    # substitutions.json also holds the maintenance machine's keys (test_maintenance_definition.py).
    maintenance_only = placeholders(MAINTENANCE_DEFINITION_PATH.read_text()) - in_definition

    assert in_definition - in_substitutions == set(), "placeholders without a DefinitionSubstitutions key"
    assert in_substitutions - in_definition - maintenance_only == set(), "keys no ASL uses"


@pytest.mark.tools
def test_asl_validator_accepts_the_definition(asl_validator: AslValidator) -> None:
    result = asl_validator(DEFINITION_PATH)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "is valid" in result.stdout


def test_the_machine_uses_jsonpath_only(states: dict[str, dict[str, Any]]) -> None:
    definition = json.loads(DEFINITION_PATH.read_text())

    assert definition["QueryLanguage"] == "JSONPath"
    jsonata_only = {"QueryLanguage", "Arguments", "Output", "Assign"}
    assert {
        name: sorted(jsonata_only & set(state)) for name, state in states.items() if jsonata_only & set(state)
    } == {}


def test_every_task_has_a_timeout_and_a_catch_for_every_error(states: dict[str, dict[str, Any]]) -> None:
    for name, task in _tasks(states).items():
        assert isinstance(task.get("TimeoutSeconds"), int) and task["TimeoutSeconds"] > 0, name
        assert any(catcher["ErrorEquals"] == ["States.ALL"] for catcher in task.get("Catch", [])), name


def test_every_lambda_task_retries_transient_lambda_errors_with_backoff(
    states: dict[str, dict[str, Any]],
) -> None:
    lambda_tasks = {
        name: task for name, task in _tasks(states).items() if task["Resource"].endswith("FunctionArn}")
    }
    assert len(lambda_tasks) == 14
    for name, task in lambda_tasks.items():
        [retrier] = [r for r in task["Retry"] if set(r["ErrorEquals"]) >= TRANSIENT_LAMBDA_ERRORS]
        assert retrier["BackoffRate"] > 1, name
        assert retrier["MaxAttempts"] >= 2, name


def test_dms_waits_are_retried_where_dms_makes_callers_wait(states: dict[str, dict[str, Any]]) -> None:
    def retried(name: str) -> set[str]:
        return {error for retrier in states[name]["Retry"] for error in retrier["ErrorEquals"]}

    assert "DmsResourceNotReady" in retried("Start replication task")
    assert "DmsResourceBusy" in retried("Delete DMS resources")
    assert "DmsResourceBusy" in retried("Delete DMS resources after failure")


def test_each_main_path_failure_names_its_own_state(states: dict[str, dict[str, Any]]) -> None:
    main_tasks = set(_tasks(states)) - CLEANUP_TASKS
    for name in main_tasks:
        [catch_all] = [c for c in states[name]["Catch"] if c["ErrorEquals"] == ["States.ALL"]]
        note = states[catch_all["Next"]]
        assert note["Type"] == "Pass", name
        assert note["Parameters"]["state"] == name
        assert note["ResultPath"] == "$.failure"
        assert note["Next"] == "Delete DMS resources after failure"


def test_the_watermark_commit_is_the_last_step_of_a_run(states: dict[str, dict[str, Any]]) -> None:
    # Whatever fails before it (deleting, notifying) cannot leave a moved watermark behind.
    ends = {name for name, state in states.items() if state.get("End")}
    fails = {name for name, state in states.items() if state["Type"] == "Fail"}

    assert ends == {"Commit watermark"}
    assert fails == {"Run failed"}
    assert states["Run Glue job"]["Next"] == "Delete DMS resources"
    # A verify run (the only other way out) commits nothing: it releases the lock and succeeds.
    assert states["Delete DMS resources"]["Next"] == "Verify run?"
    assert states["Verify run?"]["Default"] == "Notify success"
    assert states["Notify success"]["Next"] == "Commit watermark"


def test_cleanup_steps_go_on_whatever_fails(states: dict[str, dict[str, Any]]) -> None:
    for name in CLEANUP_TASKS:
        [catcher] = states[name]["Catch"]
        assert catcher["ErrorEquals"] == ["States.ALL"]
        assert catcher["Next"] == states[name]["Next"], name


def test_a_locked_table_goes_straight_to_a_succeeding_end_touching_nothing(
    states: dict[str, dict[str, Any]],
) -> None:
    catchers = states["Acquire table lock"]["Catch"]
    # Catchers are tried in order: the more specific error (a subclass) must come first.
    assert [catcher["ErrorEquals"] for catcher in catchers[:2]] == [
        ["TableUnderMaintenance"],
        ["TableLocked"],
    ]
    # Either refusal says why in a Pass state and succeeds: no cleanup state (the lock is the
    # other run's), and no failed execution for the alarms or the cleanup rule.
    for catcher in catchers[:2]:
        refused = states[catcher["Next"]]
        assert (refused["Type"], states[refused["Next"]]["Type"]) == ("Pass", "Succeed")


def test_the_glue_task_passes_the_contract_arguments(states: dict[str, dict[str, Any]]) -> None:
    glue = states["Run Glue job"]

    assert glue["Resource"] == "arn:aws:states:::glue:startJobRun.sync"
    assert set(glue["Parameters"]["Arguments"]) == {
        "--target_table.$",
        "--run_id.$",
        "--bronze_uri.$",
        "--bronze_files_uri.$",
        "--manifest_uri.$",
        "--primary_keys.$",
        "--load_mode.$",
        "--watermark_column.$",
        "--timestamp_column.$",
        "--expected_rows.$",
        "--max_change_rows.$",
        "--expected_files.$",
        "--delete_mode.$",
        "--reconcile_uri.$",
        "--reconcile_expected_rows.$",
        "--reconcile_started_at.$",
        "--verify_report_uri.$",
    }
    arguments = glue["Parameters"]["Arguments"]
    # DMS's counts and the key extraction's start, as text (Glue arguments are strings):
    # read_task_statistics writes them ("" when the run does not reconcile).
    assert arguments["--expected_rows.$"] == "$.statistics.expectedRows"
    assert arguments["--max_change_rows.$"] == "$.statistics.maxChangeRows"
    assert arguments["--expected_files.$"] == "$.statistics.bronzeFiles"
    assert arguments["--reconcile_expected_rows.$"] == "$.statistics.reconcileExpectedRows"
    assert arguments["--reconcile_started_at.$"] == "$.statistics.reconcileStartedAt"
    assert arguments["--delete_mode.$"] == "$.lock.plan.deleteMode"
    assert arguments["--reconcile_uri.$"] == "$.lock.plan.reconcileBronzeUri"
    assert arguments["--verify_report_uri.$"] == "$.lock.plan.verifyReportUri"


def test_sample_waits_and_bounds_are_positive_whole_numbers() -> None:
    samples = load_substitutions()

    assert {key: samples[key].isdigit() and int(samples[key]) > 0 for key in SETTINGS} == dict.fromkeys(
        SETTINGS, True
    )


def test_every_function_arn_key_names_an_existing_handler_module() -> None:
    function_keys = [key for key in load_substitutions() if key.endswith("FunctionArn")]

    missing = [
        key for key in function_keys if importlib.util.find_spec(f"handlers.{handler_module(key)}") is None
    ]
    assert missing == []
    assert len(function_keys) == 14  # 12 of the table-run machine, 2 of the maintenance machine
