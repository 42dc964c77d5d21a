"""The local stack's own parts: substitution, faults, in-process Lambdas, moto fixes, reports."""

from __future__ import annotations

import json
import os
import time
from pathlib import Path
from typing import Any

import boto3
import pytest

from icetide_local.stepfunctions import Fault, FaultPlan, RunReport, TableRunHarness
from icetide_local.stepfunctions.definition import SubstitutionError, handler_module, render_definition
from icetide_local.stepfunctions.execution_report import execution_history
from icetide_local.stepfunctions.moto_patches import MIN_SYNC_CHECK_SECONDS
from statemachine.orders import TIME_SCALE, StackFactory

GLUE_ONLY_MACHINE: dict[str, Any] = {
    "Comment": "A Glue .sync task whose whole result (with datetimes) is the execution's output.",
    "StartAt": "Run the job",
    "States": {
        "Run the job": {
            "Type": "Task",
            "Resource": "arn:aws:states:::glue:startJobRun.sync",
            "Parameters": {
                "JobName": "icetide-bronze-to-silver",
                "Arguments": {"--run_id": "r1", "--manifest_uri": "s3://icetide-raw-local/manifests/r1.json"},
            },
            "TimeoutSeconds": 60,
            "End": True,
        }
    },
}

# Retried twice (1 s, then 2 s), a Wait of 2 s, a Glue .sync task: five declared seconds of pauses.
RETRIES = 2
PAUSING_MACHINE: dict[str, Any] = {
    "StartAt": "Release the lock",
    "States": {
        "Release the lock": {
            "Type": "Task",
            "Resource": "${ReleaseLockFunctionArn}",
            "Parameters": {"targetTableName": "dbo_orders", "runId": "dbo_orders-20261121T0700Z"},
            "ResultPath": None,
            "Retry": [
                {
                    "ErrorEquals": ["Lambda.TooManyRequestsException"],
                    "IntervalSeconds": 1,
                    "BackoffRate": 2,
                    "MaxAttempts": RETRIES,
                }
            ],
            "Next": "Wait",
        },
        "Wait": {"Type": "Wait", "SecondsPath": "$.waitSeconds", "Next": "Run the job"},
        "Run the job": {**GLUE_ONLY_MACHINE["States"]["Run the job"], "ResultPath": None},
    },
}
DECLARED_PAUSE_SECONDS = 1 + 2 + 2


def test_render_definition_fills_every_placeholder(tmp_path: Path) -> None:
    definition = tmp_path / "machine.asl.json"
    definition.write_text('{"StartAt": "${First}", "Comment": "${First} then ${Second}"}')

    rendered = render_definition({"First": "A", "Second": "B"}, definition)

    assert json.loads(rendered) == {"StartAt": "A", "Comment": "A then B"}


def test_render_definition_names_placeholders_without_a_value(tmp_path: Path) -> None:
    definition = tmp_path / "machine.asl.json"
    definition.write_text('{"StartAt": "${First}", "Comment": "${Second} ${Third}"}')

    with pytest.raises(SubstitutionError, match=r"Second, Third"):
        render_definition({"First": "A"}, definition)


def test_render_definition_refuses_a_value_that_breaks_the_json(tmp_path: Path) -> None:
    definition = tmp_path / "machine.asl.json"
    definition.write_text('{"StartAt": "${First}"}')

    with pytest.raises(SubstitutionError, match="not JSON after substitution"):
        render_definition({"First": 'A", "B'}, definition)


@pytest.mark.parametrize(
    ("key", "module"),
    [
        ("AcquireLockFunctionArn", "acquire_lock"),
        ("DeleteDmsResourcesFunctionArn", "delete_dms_resources"),
        ("RecordFailureFunctionArn", "record_failure"),
    ],
)
def test_a_function_arn_key_names_its_handler_module(key: str, module: str) -> None:
    assert handler_module(key) == module


@pytest.mark.parametrize("key", ["GlueJobName", "FunctionArn"])
def test_a_key_that_is_no_function_arn_is_refused(key: str) -> None:
    with pytest.raises(SubstitutionError, match="does not name a Lambda function ARN"):
        handler_module(key)


def test_a_fault_fires_the_given_number_of_times_then_lets_calls_through() -> None:
    plan = FaultPlan()
    twice = plan.inject("commit_watermark", Fault("DmsResourceBusy", times=2))

    fired = [plan.take("commit_watermark") for _ in range(3)]

    assert fired == [twice, twice, None]
    assert plan.take("release_lock") is None


def test_a_fault_without_a_count_fires_every_time() -> None:
    plan = FaultPlan()
    always = plan.inject("record_failure", Fault(times=None))

    assert [plan.take("record_failure") for _ in range(4)] == [always] * 4


def test_a_fault_must_fire_at_least_once() -> None:
    with pytest.raises(ValueError, match=r"Fault\.times"):
        Fault(times=0)


def test_a_lambda_runs_its_handler_in_process_and_reports_exceptions_as_aws_does(
    make_stack: StackFactory,
) -> None:
    stack = make_stack()
    lambdas = stack.client("lambda")

    released = lambdas.invoke(
        FunctionName="icetide-release-lock",
        Payload=json.dumps({"targetTableName": "dbo_orders", "runId": "dbo_orders-20261121T0700Z"}),
    )
    refused = lambdas.invoke(FunctionName="icetide-release-lock", Payload=b"{}")

    assert "FunctionError" not in released
    assert json.loads(released["Payload"].read()) == {"released": False}  # no item, so no lock
    assert refused["FunctionError"] == "Unhandled"
    error = json.loads(refused["Payload"].read())
    assert error["errorType"] == "InvalidHandlerInput"
    assert "targetTableName" in error["errorMessage"]


def test_an_injected_lambda_fault_is_a_function_error_named_as_the_fault(make_stack: StackFactory) -> None:
    stack = make_stack()
    stack.faults.inject("release_lock", Fault("Lambda.TooManyRequestsException", "slow down"))

    answer = stack.client("lambda").invoke(FunctionName="icetide-release-lock", Payload=b"{}")

    assert answer["FunctionError"] == "Unhandled"
    error = json.loads(answer["Payload"].read())
    assert (error["errorType"], error["errorMessage"]) == ("Lambda.TooManyRequestsException", "slow down")


def test_a_glue_sync_result_with_datetimes_is_a_readable_execution_output(make_stack: StackFactory) -> None:
    # Both moto 5.2.5 bugs at once: without moto_patches this execution fails (interrupt_all on
    # None) and describing it raises (a datetime json.dumps cannot encode).
    stack = make_stack()
    machine = stack.client("stepfunctions").create_state_machine(
        name="glue-only", definition=json.dumps(GLUE_ONLY_MACHINE), roleArn=stack.role_arn
    )["stateMachineArn"]
    execution = stack.client("stepfunctions").start_execution(stateMachineArn=machine, name="glue-only-1")

    report = stack.wait(execution["executionArn"])

    assert report.status == "SUCCEEDED", report.render()
    assert report.output["JobRunState"] == "SUCCEEDED"
    assert isinstance(report.output["StartedOn"], str)
    assert report.states_entered == ("Run the job",)


def test_a_report_renders_its_outcome_and_every_state_in_order() -> None:
    report = RunReport(
        execution_arn="arn:aws:states:eu-west-1:123456789012:execution:m:r1",
        status="FAILED",
        error="TableRunFailed",
        cause="Poll replication task failed with ReplicationTaskTimedOut: still running",
        output=None,
        states_entered=("Prepare run", "Poll replication task", "Poll replication task"),
    )

    assert report.transitions == 3
    assert report.entered("Poll replication task") == 2
    assert report.render().splitlines() == [
        "arn:aws:states:eu-west-1:123456789012:execution:m:r1: FAILED after 3 state transitions",
        "  error: TableRunFailed: Poll replication task failed with ReplicationTaskTimedOut: still running",
        "    1. Prepare run",
        "    2. Poll replication task",
        "    3. Poll replication task",
    ]


def test_a_stack_undoes_its_patches_and_lambda_environment_when_it_closes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from moto.awslambda.models import LambdaFunction
    from moto.stepfunctions.parser.asl.component.common.path import result_path
    from moto.stepfunctions.parser.asl.utils import json_path

    monkeypatch.delenv("CONTROL_TABLE_NAME", raising=False)
    original, parsers = LambdaFunction.invoke, (json_path.parse, result_path.parse)
    with TableRunHarness(substitutions={"PollSeconds": "0"}) as stack:
        patched, patched_parsers = LambdaFunction.invoke, (json_path.parse, result_path.parse)
        stack.client("lambda").invoke(FunctionName="icetide-release-lock", Payload=b"{}")
        during = os.environ.get("CONTROL_TABLE_NAME")

    assert patched is not original
    assert all(new is not old for new, old in zip(patched_parsers, parsers, strict=True))
    assert LambdaFunction.invoke is original and (json_path.parse, result_path.parse) == parsers
    assert during == "icetide-control"  # set for the handlers, and left set between invocations
    assert "CONTROL_TABLE_NAME" not in os.environ


@pytest.mark.parametrize("time_scale", [0, -0.5, 1.5])
def test_a_time_scale_only_shortens_pauses(time_scale: float) -> None:
    with pytest.raises(ValueError, match="0 < time_scale <= 1"), TableRunHarness(time_scale=time_scale):
        pass


def test_a_time_scale_shortens_pauses_and_keeps_the_declared_retries_and_seconds(
    make_stack: StackFactory,
) -> None:
    stack = make_stack()  # at TIME_SCALE
    stack.faults.inject("release_lock", Fault("Lambda.TooManyRequestsException", "slow down", times=RETRIES))
    definition = json.dumps(PAUSING_MACHINE).replace(
        "${ReleaseLockFunctionArn}", stack.substitutions["ReleaseLockFunctionArn"]
    )
    stepfunctions = stack.client("stepfunctions")
    machine = stepfunctions.create_state_machine(
        name="pausing", definition=definition, roleArn=stack.role_arn
    )
    started = time.monotonic()
    execution = stepfunctions.start_execution(
        stateMachineArn=machine["stateMachineArn"], name="pausing-1", input=json.dumps({"waitSeconds": 2})
    )["executionArn"]

    report = stack.wait(execution)
    elapsed = time.monotonic() - started

    assert report.status == "SUCCEEDED", report.render()
    events = stepfunctions.get_execution_history(executionArn=execution)["events"]
    # The local stack reads histories from moto's record: the same events as the API's answer.
    assert execution_history(execution) == events
    types = [event["type"] for event in events]
    assert (types.count("LambdaFunctionFailed"), types.count("LambdaFunctionSucceeded")) == (RETRIES, 1)
    waits = [event for event in events if event["type"] == "WaitStateEntered"]
    assert [json.loads(event["stateEnteredEventDetails"]["input"])["waitSeconds"] for event in waits] == [2]
    # In real seconds the run would take at least DECLARED_PAUSE_SECONDS.
    assert elapsed < DECLARED_PAUSE_SECONDS / 2, f"{elapsed:.2f} s at time scale {TIME_SCALE}"


def test_a_stack_at_real_time_leaves_the_interpreters_pauses_as_moto_has_them() -> None:
    from moto.stepfunctions.parser.asl.component.common.retry import retrier_decl
    from moto.stepfunctions.parser.asl.component.state.exec.state_task.service import (
        state_task_service_callback,
    )
    from moto.stepfunctions.parser.asl.component.state.wait.wait_function.wait_function import WaitFunction

    def pauses() -> tuple[Any, Any, float]:
        return (
            retrier_decl.time,
            WaitFunction._wait_interval,
            state_task_service_callback._DELAY_SECONDS_SYNC_CONDITION_CHECK,
        )

    moto_pauses = pauses()
    with TableRunHarness():
        at_real_time = pauses()
    with TableRunHarness(time_scale=TIME_SCALE):
        scaled = pauses()

    assert at_real_time == moto_pauses == pauses()
    assert all(ours != moto for ours, moto in zip(scaled, moto_pauses, strict=True))
    # Shortened, but never below the floor past which checks cost more CPU than they save.
    assert scaled[2] == max(moto_pauses[2] * TIME_SCALE, MIN_SYNC_CHECK_SECONDS) < moto_pauses[2]


def test_stacks_read_service_models_through_one_loader_and_restore_boto3s_default_session() -> None:
    before = boto3.DEFAULT_SESSION
    loaders, search_paths = [], []
    for _ in range(2):
        with TableRunHarness():
            session = boto3.DEFAULT_SESSION
            assert session is not None and session is not before
            loader = session._session.get_component("data_loader")
            loaders.append(loader)
            search_paths.append(list(loader.search_paths))

    assert loaders[0] is loaders[1]
    assert search_paths[0] == search_paths[1]
    assert boto3.DEFAULT_SESSION is before
