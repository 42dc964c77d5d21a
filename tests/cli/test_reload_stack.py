"""`icetide reload TABLE --stack NAME` against moto resources named as a deployed stack names them.

As in test_verify_stack.py: the real ASL and handlers in moto, stand-ins for DMS (10 rows) and Glue (a
manifest), found by the CLI through a CloudFormation stack's outputs. What is checked is what the
reload changes in AWS: the request on the control item (refused while a run holds the lock), and the
run it starts, whose plan reads the table from its startvalue and extracts the keys to reconcile.
"""

from __future__ import annotations

import io
import json
import logging
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from unittest import mock

import botocore.exceptions
import pytest

import icetide.clock
from icetide.control.codec import from_typed_json
from icetide.control.model import ControlItem
from icetide.observability import logger, metrics
from icetide.run.reload import reload_due
from icetide_cli import main as cli_main
from icetide_cli.operator_control import StackControlItems
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions import TableRunHarness
from statemachine.orders import (
    FAST_SUBSTITUTIONS,
    PREVIOUS_WATERMARK,
    TABLE,
    TIME_SCALE,
    orders_item,
    orders_replication,
)

pytestmark = pytest.mark.stack

STACK = "icetide-prod"
NOW = datetime(2026, 11, 24, 10, 15, 30, tzinfo=UTC)
REQUESTED = "2026-11-24T10:15:30Z"
RUN_ID = "dbo_orders-reload-20261124T101530Z"
# The table has loaded before: its next ordinary run would start from the watermark.
LOADED = {
    "lastRunId": "dbo_orders-20261124T0900Z",
    "lastRunStatus": "SUCCEEDED",
    "lastRunTime": "2026-11-24T09:01:00Z",
}


@dataclass(frozen=True)
class Result:
    exit_code: int
    out: str
    err: str


@pytest.fixture
def stack() -> Iterator[TableRunHarness]:
    """The harness holding the loaded dbo_orders item, deployed as STACK; handlers' logs and metrics
    kept off standard output."""
    harness = TableRunHarness(
        substitutions=FAST_SUBSTITUTIONS,
        dms=DmsLifecycle(mover=orders_replication),
        environment={"POWERTOOLS_METRICS_DISABLED": "true"},
        time_scale=TIME_SCALE,
    )
    handler = logger.registered_handler
    assert isinstance(handler, logging.StreamHandler)
    with harness as local, mock.patch.object(handler, "stream", io.StringIO()):
        local.put_control_item(orders_item(**LOADED))
        template = {
            "Resources": {
                "Marker": {"Type": "AWS::SNS::Topic", "Properties": {"TopicName": f"{STACK}-marker"}}
            },
            "Outputs": {
                "TableRunStateMachineArn": {"Value": local.state_machine_arn},
                "ControlTableName": {"Value": local.names.control_table},
            },
        }
        local.client("cloudformation").create_stack(StackName=STACK, TemplateBody=json.dumps(template))
        yield local
    metrics.clear_metrics()  # metrics are off, so Powertools kept them: no later test gets them


@pytest.fixture
def reload(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """``reload(ARGS...)``: `icetide reload` in this process, the clock at NOW."""
    monkeypatch.setattr(icetide.clock, "utc_now", lambda: NOW)

    def run(*args: str) -> Result:
        capsys.readouterr()
        code = cli_main.main(["reload", *args])
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return run


def assert_nothing_requested(stack: TableRunHarness) -> None:
    """No reload request on the item, no execution started."""
    assert "reloadRequested" not in _item(stack)
    assert _executions(stack) == []


def _executions(stack: TableRunHarness) -> list:
    listed = stack.client("stepfunctions").list_executions(stateMachineArn=stack.state_machine_arn)
    return list(listed["executions"])


def _item(stack: TableRunHarness) -> dict:
    typed = stack.client("dynamodb").get_item(
        TableName=stack.names.control_table, Key={"targetTableName": {"S": TABLE}}
    )
    return from_typed_json(typed["Item"])


def test_a_reload_reads_the_table_from_its_startvalue_and_reconciles_its_keys(stack, reload) -> None:
    result = reload(TABLE, "--stack", STACK, "--poll-seconds", "0.05", "--json")

    assert result.exit_code == 0, result.err
    outcome = json.loads(result.out)
    arn = stack.state_machine_arn.replace(":stateMachine:", ":execution:") + f":{RUN_ID}"
    assert {
        key: outcome[key] for key in ("targetTableName", "reloadRequested", "runId", "executionArn", "status")
    } == {
        "targetTableName": TABLE,
        "reloadRequested": REQUESTED,
        "runId": RUN_ID,
        "executionArn": arn,
        "status": "SUCCEEDED",
    }
    main, keys = stack.dms.started_runs
    [main_filter] = main.table_mappings["rules"][0]["filters"]
    # The startvalue, not the watermark (PREVIOUS_WATERMARK) an ordinary run would start from.
    assert main_filter["filter-conditions"] == [{"filter-operator": "gte", "value": "2026-01-01 00:00:00"}]
    assert [rule["rule-action"] for rule in keys.table_mappings["rules"]] == ["include", "include-column"]
    assert keys.table_mappings["rules"][0]["filters"] == []
    [job_run] = stack.glue.runs
    assert (
        job_run.arguments["--reconcile_uri"]
        == f"s3://icetide-raw-local/bronze/_reconcile/dbo_orders/{RUN_ID}/"
    )
    item = _item(stack)
    assert (item["lastRunId"], item["lastRunStatus"]) == (RUN_ID, "SUCCEEDED")
    assert item["reloadRequested"] == {"requestedAt": REQUESTED, "afterRun": LOADED["lastRunId"]}
    assert item["watermark"] == PREVIOUS_WATERMARK  # the stand-in's manifest merged nothing newer
    # The run that committed after the request was the reload: the next run is an ordinary one.
    assert reload_due(ControlItem.parse(item)) is False


def test_no_start_only_requests_the_reload(stack, reload) -> None:
    result = reload(TABLE, "--stack", STACK, "--no-start")

    assert result.exit_code == 0, result.err
    assert result.out.splitlines() == [
        f"{TABLE}: reload requested at {REQUESTED}",
        "  the table's next run is the reload",
    ]
    item = _item(stack)
    assert item["reloadRequested"] == {"requestedAt": REQUESTED, "afterRun": LOADED["lastRunId"]}
    assert reload_due(ControlItem.parse(item)) is True
    assert _executions(stack) == []


def test_a_locked_table_is_not_marked(stack, reload) -> None:
    stack.put_control_item(
        orders_item(**LOADED, lockHolder="dbo_orders-20261124T1000Z", lockTime="2026-11-24T10:00:05Z")
    )

    result = reload(TABLE, "--stack", STACK)

    assert result.exit_code == 1  # refused, as reset and unlock: not a usage error
    assert result.err.strip() == (
        "icetide reload: dbo_orders is locked by run dbo_orders-20261124T1000Z since 2026-11-24T10:00:05Z: "
        "nothing was requested; reload once it ends (or `icetide unlock` a lock whose run is gone)"
    )
    assert_nothing_requested(stack)


def test_a_run_that_ends_between_the_read_and_the_write_leaves_the_table_unmarked(
    stack, reload, monkeypatch: pytest.MonkeyPatch
) -> None:
    find = StackControlItems.find

    def read_then_a_run_ends(self: StackControlItems, table: str) -> dict | None:
        item = find(self, table)
        stack.put_control_item(orders_item(**{**LOADED, "lastRunId": "dbo_orders-20261124T1000Z"}))
        return item

    monkeypatch.setattr(StackControlItems, "find", read_then_a_run_ends)

    result = reload(TABLE, "--stack", STACK)

    assert (result.exit_code, result.err.strip()) == (
        1,
        "icetide reload: dbo_orders: run dbo_orders-20261124T1000Z ran since the item was read; nothing was "
        "requested, try again",
    )
    assert_nothing_requested(stack)


def test_an_aws_error_on_the_request_is_one_line_and_nothing_starts(
    stack, reload, monkeypatch: pytest.MonkeyPatch
) -> None:
    def access_denied(self: StackControlItems, *args: object, **kwargs: object) -> None:
        raise botocore.exceptions.ClientError(
            {"Error": {"Code": "AccessDeniedException", "Message": "not allowed: dynamodb:UpdateItem"}},
            "UpdateItem",
        )

    monkeypatch.setattr(StackControlItems, "update", access_denied)

    result = reload(TABLE, "--stack", STACK)

    assert (result.exit_code, result.err.strip()) == (
        2,
        "icetide reload: cannot request the reload of dbo_orders: An error occurred (AccessDeniedException) "
        "when calling the UpdateItem operation: not allowed: dynamodb:UpdateItem",
    )
    assert_nothing_requested(stack)


@pytest.mark.parametrize(
    ("attributes", "reason"),
    [
        pytest.param(
            {"loadMode": "append", "primaryKeys": ""},
            "dbo_orders has no primaryKeys: a reload replaces silver's rows by key, "
            "and an append-only table has none",
            id="append-only",
        ),
        pytest.param(
            {
                "captureMode": "cdc",
                "cdcTask": "continuous",
                "filtercolumn": "",
                "filteroperator": "",
                "watermark": "",
            },
            "dbo_orders is a continuous cdc table: its long-lived task's stream cannot restart with a full "
            "load (recreate the table's task instead, see docs/continuous-cdc.md)",
            id="continuous",
        ),
    ],
)
def test_a_table_a_reload_cannot_replace_is_refused(stack, reload, attributes: dict, reason: str) -> None:
    stack.put_control_item(orders_item(**LOADED, **attributes))

    result = reload(TABLE, "--stack", STACK)

    assert (result.exit_code, result.err.strip()) == (2, f"icetide reload: {reason}")
    assert "reloadRequested" not in _item(stack)


def test_a_reload_run_refused_at_the_lock_is_reported_as_refused_and_stays_requested(
    stack, reload, monkeypatch
) -> None:
    from icetide_cli import stack_executions

    start = stack_executions.start_table_run
    scheduled_run = "dbo_orders-20261124T1000Z"
    # Locked now (not at NOW): whichever clock the lock handler reads, the lock is live, not stale.
    locked_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")

    def scheduled_run_locks_first(*args, **kwargs):  # the hourly run takes the lock just before
        stack.put_control_item({**_item(stack), "lockHolder": scheduled_run, "lockTime": locked_at})
        return start(*args, **kwargs)

    monkeypatch.setattr(stack_executions, "start_table_run", scheduled_run_locks_first)

    result = reload(TABLE, "--stack", STACK, "--poll-seconds", "0.05")

    assert result.exit_code == 1
    message = result.err.strip().splitlines()[-1]
    assert message.startswith(
        f"icetide reload: reload run {RUN_ID} was refused: table locked by another run "
        f"(table {TABLE} is locked by run {scheduled_run} since {locked_at}; run {RUN_ID} was refused"
    )
    assert message.endswith("); the reload stays requested: the table's next run reloads")
    item = _item(stack)
    assert item["reloadRequested"] == {"requestedAt": REQUESTED, "afterRun": LOADED["lastRunId"]}
    assert reload_due(ControlItem.parse(item)) is True
