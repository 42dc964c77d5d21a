"""Fixtures of the operator CLI tests: `icetide` run in this process, a workspace with state, and a
stack deployed in moto whose resources carry the names CloudFormation gives a deployed stack's."""

from __future__ import annotations

import contextlib
import io
import json
import logging
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from icetide_cli.main import main
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions import TableRunHarness
from icetide_local.stepfunctions.harness import StackNames
from icetide_local.workspace import TypedItem, Workspace
from statemachine.orders import FAST_SUBSTITUTIONS, TIME_SCALE, orders_manifest, orders_replication

STACK = "icetide-prod"
# As CloudFormation names what a template leaves unnamed: <stack>-<logical id>-<suffix>, and SAM's
# state machines <logical id>-<suffix>.
NAMES = StackNames(
    stack=STACK,
    control_table="icetide-prod-ControlTable-1R3YJ4K2Q8ZD1",
    raw_bucket="icetide-prod-rawbucket-1x2y3z4w5v6u",
    state_machine="TableRunStateMachine-Qm8JrT2vXa4b",
    maintenance_state_machine="MaintenanceStateMachine-Lp3Hs9Kd2Fw7",
    topic="icetide-prod-NotificationTopic-8GH2KD9S0PLQ",
)
START_WORKFLOW_FUNCTION = "icetide-prod-StartWorkflowFunction-Zx81LkP0aQ3e"


@dataclass(frozen=True)
class CliResult:
    exit_code: int
    out: str
    err: str

    def json(self) -> Any:
        return json.loads(self.out)


@pytest.fixture
def icetide(capsys: pytest.CaptureFixture[str]) -> Callable[..., CliResult]:
    """Run `icetide ARGS...` in this process; its exit code and what it printed."""

    def run(*args: object) -> CliResult:
        capsys.readouterr()
        exit_code = main([str(arg) for arg in args])
        captured = capsys.readouterr()
        return CliResult(exit_code, captured.out, captured.err)

    return run


@pytest.fixture
def make_workspace(tmp_path: Path) -> Callable[[list[TypedItem]], Path]:
    """A workspace whose saved control table holds these typed items, as a cycle leaves it."""

    def make(items: list[TypedItem]) -> Path:
        workspace = Workspace.open(tmp_path / "ws")
        workspace.save_control_items(items)
        return workspace.root

    return make


@dataclass(frozen=True)
class DeployedStack:
    """The harness's stack, and the CloudFormation stack whose outputs name its resources."""

    harness: TableRunHarness
    name: str = STACK

    def put(self, item: dict[str, Any]) -> None:
        self.harness.put_control_item(item)

    def item(self, table: str) -> dict[str, Any] | None:
        return self.harness.control_item(table)


def _start_workflow_function(harness: TableRunHarness) -> None:
    """StartWorkflow as the template deploys it (the harness makes only the state machine's tasks)."""
    archive = io.BytesIO()
    with zipfile.ZipFile(archive, "w") as code:
        code.writestr("handlers/start_workflow.py", "")  # the in-process handler runs instead
    harness.client("lambda").create_function(
        FunctionName=START_WORKFLOW_FUNCTION,
        Runtime="python3.11",
        Role=harness.role_arn,
        Handler="handlers.start_workflow.handler",
        Code={"ZipFile": archive.getvalue()},
        Timeout=300,
        Environment={"Variables": harness.lambda_environment() | {"SCHEDULE_SLOT_MINUTES": "60"}},
    )


def _stack_template(harness: TableRunHarness) -> str:
    outputs = {
        "ControlTableName": NAMES.control_table,
        "RawBucketName": NAMES.raw_bucket,
        "StartWorkflowFunctionName": START_WORKFLOW_FUNCTION,
        "TableRunStateMachineArn": harness.state_machine_arn,
        "MaintenanceStateMachineArn": harness.maintenance_state_machine_arn,
        "NotificationTopicArn": harness.topic_arn,
    }
    return json.dumps(
        {
            "Parameters": {
                "ScheduleSlotMinutes": {"Type": "Number", "Default": 60},
                "LockStaleAfterSeconds": {"Type": "Number", "Default": 21600},
            },
            # A stack needs a resource; the real ones above were made by the harness.
            "Resources": {"Placeholder": {"Type": "AWS::SNS::Topic"}},
            "Outputs": {key: {"Value": value} for key, value in outputs.items()},
        }
    )


@pytest.fixture
def quiet_handlers(monkeypatch: pytest.MonkeyPatch) -> Iterator[io.StringIO]:
    """The in-process Lambda handlers' log lines and metrics kept off standard output, where in AWS
    they never reach the CLI's (and its JSON) either; the log lines come back in the returned stream."""
    from icetide.observability import logger, metrics  # the handlers' one Powertools logger and metrics

    monkeypatch.setenv("POWERTOOLS_METRICS_DISABLED", "true")
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    log = io.StringIO()
    previous, handler.stream = handler.stream, log  # not setStream: it flushes a stream maybe closed
    try:
        yield log
    finally:
        handler.stream = previous
        metrics.clear_metrics()  # not flushed while disabled: no later test may get them


DeployFactory = Callable[..., DeployedStack]


@pytest.fixture
def deploy(quiet_handlers: io.StringIO) -> Iterator[DeployFactory]:
    """Deploy the icetide stack `icetide-prod` in moto (closed at the end of the test): the real state
    machine and handlers, DMS and Glue stand-ins (the state-machine tests' dbo_orders run: 10 rows, 4
    inserted, 5 updated, 1 deleted). Keyword arguments go to TableRunHarness."""
    with contextlib.ExitStack() as stacks:

        def make(substitutions: dict[str, str] | None = None, **options: Any) -> DeployedStack:
            options.setdefault("glue_runner", orders_manifest())
            options.setdefault("dms", DmsLifecycle(mover=orders_replication))
            options.setdefault("time_scale", TIME_SCALE)
            harness = stacks.enter_context(
                TableRunHarness(
                    substitutions={**FAST_SUBSTITUTIONS, **(substitutions or {})}, names=NAMES, **options
                )
            )
            _start_workflow_function(harness)
            harness.client("cloudformation").create_stack(
                StackName=STACK,
                TemplateBody=_stack_template(harness),
                Parameters=[
                    {"ParameterKey": "ScheduleSlotMinutes", "ParameterValue": "60"},
                    {"ParameterKey": "LockStaleAfterSeconds", "ParameterValue": "21600"},
                ],
            )
            return DeployedStack(harness)

        yield make


@pytest.fixture
def deployed(deploy: DeployFactory) -> DeployedStack:
    """The stack as `deploy` makes it by default."""
    return deploy()
