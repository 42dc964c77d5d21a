"""`icetide verify TABLE --stack NAME` against moto resources named as a deployed stack names them.

The stack's resources are the state-machine harness's (the real ASL and handlers in moto; a Glue
stand-in that writes the verify report the real job would), and the CLI finds them the way it finds
a deployed stack's: from the outputs of a CloudFormation stack, here one created in moto with the
outputs template.yaml declares (TableRunStateMachineArn, ControlTableName), pointing at them.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from unittest import mock

import pytest

import icetide.clock
from icetide.observability import logger, metrics
from icetide_cli import main as cli_main
from icetide_contracts.verify import Difference
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.standins.glue import failing_job
from icetide_local.standins.verify_report import verify_report_writer
from icetide_local.stepfunctions import TableRunHarness
from icetide_local.stepfunctions.harness import StackNames
from statemachine.orders import FAST_SUBSTITUTIONS, TABLE, TIME_SCALE, orders_item, orders_replication

pytestmark = pytest.mark.stack

STACK = "icetide-prod"
NOW = datetime(2026, 11, 24, 10, 15, 30, tzinfo=UTC)
RUN_ID = "dbo_orders-verify-20261124T101530Z"
REPORT_URI = f"s3://{StackNames().raw_bucket}/manifests/dbo_orders/{RUN_ID}.verify.json"


@dataclass(frozen=True)
class Result:
    exit_code: int
    out: str
    err: str


def _deployed(stack: TableRunHarness) -> None:
    """A CloudFormation stack named STACK whose outputs name the harness's resources, and the
    StartVerifyRun function as the template deploys it beside the state machine (the harness makes
    only the machine's task functions; this one's handler runs in this process)."""
    verify_function = stack._create_function("start_verify_run").rpartition(":")[2]
    outputs = {
        "TableRunStateMachineArn": stack.state_machine_arn,
        "StartVerifyRunFunctionName": verify_function,
        "ControlTableName": stack.names.control_table,
        "RawBucketName": stack.names.raw_bucket,
    }
    template = {
        # A template needs a resource; the outputs are what the CLI reads.
        "Resources": {"Marker": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": f"{STACK}-marker"}}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    stack.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))


@pytest.fixture
def deploy() -> Iterator[Callable[..., TableRunHarness]]:
    """``deploy(glue_runner)``: the harness, holding the dbo_orders item, deployed as STACK.

    The handlers run in this process: their log lines go to a buffer and their metrics are off, so
    that standard output holds what the CLI prints and nothing else."""
    harness = TableRunHarness(
        substitutions=FAST_SUBSTITUTIONS,
        dms=DmsLifecycle(mover=orders_replication),
        environment={"POWERTOOLS_METRICS_DISABLED": "true"},
        time_scale=TIME_SCALE,
    )
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    with harness as stack, mock.patch.object(handler, "stream", io.StringIO()):

        def make(glue_runner: Callable[..., None], **item: object) -> TableRunHarness:
            stack.glue.runner = glue_runner
            stack.put_control_item(orders_item(**item))
            _deployed(stack)
            return stack

        yield make
    # Metrics are off, so Powertools kept the handlers' metrics in its buffer: no later test gets them.
    metrics.clear_metrics()


@pytest.fixture
def verify(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``verify(ARGS...)``: `icetide verify` in this process, the clock at NOW."""
    monkeypatch.setattr(icetide.clock, "utc_now", lambda: NOW)

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = cli_main.main(["verify", *args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def test_a_verify_run_reports_the_keys_missing_from_silver_and_extra_in_it(deploy, verify) -> None:
    stack = deploy(
        verify_report_writer(
            missing=Difference(count=1, first=[{"order_id": 11}]),
            extra=Difference(count=2, first=[{"order_id": 2}, {"order_id": 5}]),
            rows=10,
        )
    )
    before = stack.control_item(TABLE)

    result = verify(TABLE, "--stack", STACK, "--poll-seconds", "0.05")

    assert result.exit_code == 1, result.err
    assert result.out.splitlines() == [
        "dbo_orders: silver DIFFERS from source (compared keys)",
        f"  verify run     {RUN_ID}",
        "  source rows    9",
        "  silver rows    10 (icetide_silver.dbo_orders, live rows)",
        "  missing from silver: 1 key",
        "    order_id=11",
        "  extra in silver: 2 keys",
        "    order_id=2",
        "    order_id=5",
    ]
    assert (
        f"... verify run {RUN_ID} started: {stack.state_machine_arn.replace(':stateMachine:', ':execution:')}"
        in (result.err)
    )
    # The run committed nothing and gave its lock back.
    assert stack.control_item(TABLE) == before


def test_the_verify_run_is_started_by_the_stacks_verify_function_not_by_the_cli(
    deploy, verify, monkeypatch
) -> None:
    # The operator's credentials need no states:StartExecution (which starts any run): the CLI
    # starts no execution itself, the StartVerifyRun function does, naming the run.
    from icetide_cli import stack_executions

    def refused(*args: object, **kwargs: object) -> str:
        raise AssertionError("icetide verify started an execution of the machine itself")

    monkeypatch.setattr(stack_executions, "start_table_run", refused)
    stack = deploy(verify_report_writer(rows=10))

    result = verify(TABLE, "--stack", STACK, "--poll-seconds", "0.05")

    assert result.exit_code == 0, result.err
    executions = stack.client("stepfunctions").list_executions(stateMachineArn=stack.state_machine_arn)
    assert [execution["name"] for execution in executions["executions"]] == [RUN_ID]


def test_a_verify_the_function_refuses_is_trouble_with_its_reason(deploy, verify) -> None:
    # A verify of the table started in the same second, with other input (or ended already).
    stack = deploy(verify_report_writer(rows=10))
    stack.client("stepfunctions").start_execution(
        stateMachineArn=stack.state_machine_arn, name=RUN_ID, input='{"targetTableName": "dbo_lines"}'
    )

    result = verify(TABLE, "--stack", STACK, "--poll-seconds", "0.05")

    assert result.exit_code == 2
    assert result.err.strip() == (
        "icetide verify: cannot start a verify run of dbo_orders: icetide-start-verify-run failed: "
        f"verify run {RUN_ID} exists already: start the verify again in a second"
    )
    stack.wait(stack.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{RUN_ID}")


def test_json_prints_the_report_the_run_wrote(deploy, verify) -> None:
    deploy(verify_report_writer(rows=10))

    result = verify(TABLE, "--stack", STACK, "--poll-seconds", "0.05", "--json")

    assert result.exit_code == 0, result.err
    assert json.loads(result.out) == {
        "silverTable": "icetide_silver.dbo_orders",
        "runId": RUN_ID,
        "compared": "keys",
        "keyColumns": ["order_id"],
        "sourceFilter": None,
        "sourceRows": 10,
        "silverRows": 10,
        "missingFromSilver": {"count": 0, "first": []},
        "extraInSilver": {"count": 0, "first": []},
        "valuesDiffer": None,
        "duplicateKeysInSilver": 0,
        "columnsMissingFromSilver": [],
        "matches": True,
    }


def test_no_wait_returns_the_execution_of_the_verify_run(deploy, verify) -> None:
    stack = deploy(verify_report_writer(rows=10))

    result = verify(TABLE, "--stack", STACK, "--no-wait", "--json")

    assert result.exit_code == 0, result.err
    arn = stack.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{RUN_ID}"
    assert json.loads(result.out) == {"runId": RUN_ID, "executionArn": arn}
    assert stack.wait(arn).status == "SUCCEEDED"


def test_a_failed_verify_run_is_trouble_not_a_difference(deploy, verify) -> None:
    deploy(failing_job("Spark ran out of memory"))

    result = verify(TABLE, "--stack", STACK, "--poll-seconds", "0.05")

    assert result.exit_code == 2
    assert result.out == ""
    [last] = result.err.splitlines()[-1:]
    assert last.startswith(
        f"icetide verify: verify run {RUN_ID} FAILED: TableRunFailed: "
        "Run Glue job failed with States.TaskFailed: "
    ), last
    assert "Spark ran out of memory" in result.err


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        pytest.param(
            [TABLE, "--values"],
            "icetide verify: --values applies to --workspace only: a verify run in AWS extracts the source's "
            "key columns only, which cannot show values",
            id="values",
        ),
        pytest.param(
            ["dbo_refunds"],
            f"icetide verify: stack {STACK} has no control item for table 'dbo_refunds'",
            id="table",
        ),
    ],
)
def test_what_cannot_be_verified_in_aws_is_said_before_anything_starts(
    deploy, verify, arguments: list[str], message: str
) -> None:
    stack = deploy(verify_report_writer())

    result = verify(*arguments, "--stack", STACK)

    assert (result.exit_code, result.err.strip()) == (2, message)
    assert stack.glue.runs == []


def test_a_table_without_keys_is_refused_before_a_run_starts(deploy, verify) -> None:
    stack = deploy(verify_report_writer(), loadMode="append", primaryKeys="")

    result = verify(TABLE, "--stack", STACK)

    assert result.exit_code == 2
    assert result.err.strip() == (
        "icetide verify: dbo_orders has no primaryKeys: a verify run compares keys, and an append-only "
        "table has none (verify it locally, where whole rows are compared)"
    )
    executions = stack.client("stepfunctions").list_executions(stateMachineArn=stack.state_machine_arn)
    assert executions["executions"] == []


def test_an_unknown_stack_is_named(deploy, verify) -> None:
    deploy(verify_report_writer())

    result = verify(TABLE, "--stack", "icetide-staging")

    assert result.exit_code == 2
    assert result.err.startswith(
        "icetide verify: stack icetide-staging: Stack with id icetide-staging does not exist"
    )
