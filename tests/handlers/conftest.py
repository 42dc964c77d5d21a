"""Fixtures for the Lambda handler tests: moto-backed AWS, the handler environment, sample events.

Every AWS resource a handler needs (the control table, the state machine, the raw bucket, the DMS
source endpoint) is created here inside moto's ``mock_aws``; the handlers' own boto3 clients are
reset around each test so they are built inside the mock.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import boto3
import pytest
from moto import mock_aws

from icetide.adapters.clients import reset_clients
from icetide.control.codec import from_typed_json, to_typed_json
from icetide_local.standins.dms.arns import resource_identifier_arns
from icetide_local.standins.dms.endpoints import unique_endpoint_identifiers
from icetide_local.standins.dms.instances import instance_engine_versions

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
ACCOUNT = "123456789012"
REGION: Final = "eu-west-1"
CONTROL_TABLE = "icetide-control"
RAW_BUCKET = f"icetide-raw-{ACCOUNT}-{REGION}"
STATE_MACHINE_NAME = "icetide-table-run"
STATE_MACHINE_ARN = f"arn:aws:states:{REGION}:{ACCOUNT}:stateMachine:{STATE_MACHINE_NAME}"
DMS_TARGET_ROLE_ARN = f"arn:aws:iam::{ACCOUNT}:role/icetide-dms-s3-target"
STACK_NAME = "icetide"
# The template's DMS_ARN_NAME_PREFIX for a stack whose id ends in /51af3dc0-da77-11e4-872e-1234567db123.
DMS_ARN_NAME_PREFIX = "icetide51af3dc0"

# The control item behind the sample events: a blog-style gte filter on updated_at, with keys,
# a 5-minute lookback and the watermark of the previous hourly run.
ORDERS_ITEM: dict[str, Any] = {
    "targetTableName": "dbo_orders",
    "activeflag": "Y",
    "sourceSchema": "dbo",
    "sourceTable": "orders",
    "filtercolumn": "updated_at",
    "filteroperator": "gte",
    "startvalue": "2026-01-01 00:00:00",
    "primaryKeys": "order_id",
    "loadMode": "merge",
    "lookback": 300,
    "watermark": "2026-11-21 06:00:00",
}


@dataclass(frozen=True)
class FakeLambdaContext:
    """The attributes of a Lambda context that Powertools' inject_lambda_context reads."""

    function_name: str = "icetide-handler"
    memory_limit_in_mb: int = 256
    invoked_function_arn: str = f"arn:aws:lambda:{REGION}:{ACCOUNT}:function:icetide-handler"
    aws_request_id: str = "6f1a7c52-0d4e-4a55-9d0b-1f2e3d4c5b6a"


@pytest.fixture
def lambda_context() -> FakeLambdaContext:
    return FakeLambdaContext()


@pytest.fixture
def load_event() -> Callable[[str], dict[str, Any]]:
    """Loads a sample event from events/ (a fresh copy each time, so a test may change it)."""

    def load(name: str) -> dict[str, Any]:
        event: dict[str, Any] = json.loads((EVENTS_DIR / f"{name}.json").read_text())
        return copy.deepcopy(event)

    return load


@pytest.fixture
def handler_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """The environment the SAM template gives the functions (without the stack-wide instance)."""
    for name, value in {
        "CONTROL_TABLE_NAME": CONTROL_TABLE,
        "STACK_NAME": STACK_NAME,
        "DMS_ARN_NAME_PREFIX": DMS_ARN_NAME_PREFIX,
        "STATE_MACHINE_ARN": STATE_MACHINE_ARN,
        "SCHEDULE_SLOT_MINUTES": "60",
        "LOCK_STALE_AFTER_SECONDS": "21600",
        "RAW_BUCKET": RAW_BUCKET,
        "BRONZE_PREFIX": "bronze",
        "MANIFEST_PREFIX": "manifests",
        "GLUE_DATABASE": "icetide_silver",
        "REPLICATION_INSTANCE_CLASS": "dms.t3.medium",
        "REPLICATION_SUBNET_GROUP_ID": "icetide-private",
        "REPLICATION_SECURITY_GROUP_IDS": "sg-0a1b2c3d4e5f60718, sg-0f1e2d3c4b5a69788",
        "DMS_TARGET_ROLE_ARN": DMS_TARGET_ROLE_ARN,
        "DMS_TIMESTAMP_COLUMN": "dms_timestamp",
    }.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("REPLICATION_INSTANCE_ARN", raising=False)


@pytest.fixture
def aws(handler_env: None) -> Iterator[None]:
    """moto for every AWS call of the test, with the handlers' clients built inside it.

    Endpoint identifiers are unique, as in DMS (moto would replace an endpoint of a taken name), and
    replication instances report an engine version, and ARNs end with the ResourceIdentifier given
    on create, as in DMS.
    """
    with mock_aws(), unique_endpoint_identifiers(), instance_engine_versions(), resource_identifier_arns():
        reset_clients()
        yield
    reset_clients()


class ControlItems:
    """The test's own view of the control table, written and read with boto3 directly."""

    def put(self, item: dict[str, Any]) -> None:
        boto3.client("dynamodb").put_item(TableName=CONTROL_TABLE, Item=to_typed_json(item))

    def get(self, target_table_name: str) -> dict[str, Any] | None:
        key = {"targetTableName": {"S": target_table_name}}
        response = boto3.client("dynamodb").get_item(TableName=CONTROL_TABLE, Key=key, ConsistentRead=True)
        typed = response.get("Item")
        return from_typed_json(typed) if typed else None

    def orders(self, **changes: Any) -> dict[str, Any]:
        """Store the sample events' dbo_orders item, with ``changes`` applied (None removes)."""
        item = {**ORDERS_ITEM, **changes}
        item = {name: value for name, value in item.items() if value is not None}
        self.put(item)
        return item


@pytest.fixture
def control_items(aws: None) -> ControlItems:
    """An empty control table named CONTROL_TABLE_NAME."""
    boto3.client("dynamodb").create_table(
        TableName=CONTROL_TABLE,
        KeySchema=[{"AttributeName": "targetTableName", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "targetTableName", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    return ControlItems()


@pytest.fixture
def state_machine(aws: None) -> str:
    """A state machine without execution (moto only records executions), at STATE_MACHINE_ARN."""
    response = boto3.client("stepfunctions").create_state_machine(
        name=STATE_MACHINE_NAME,
        definition=json.dumps({"StartAt": "Run", "States": {"Run": {"Type": "Pass", "End": True}}}),
        roleArn=f"arn:aws:iam::{ACCOUNT}:role/icetide-state-machine",
    )
    assert response["stateMachineArn"] == STATE_MACHINE_ARN
    return STATE_MACHINE_ARN


@pytest.fixture
def raw_bucket(aws: None) -> str:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=RAW_BUCKET, CreateBucketConfiguration={"LocationConstraint": REGION})
    return RAW_BUCKET


@pytest.fixture
def source_endpoint(aws: None, monkeypatch: pytest.MonkeyPatch) -> str:
    """The long-lived source endpoint (SOURCE_ENDPOINT_ARN) the run's task reads from."""
    endpoint = boto3.client("dms").create_endpoint(
        EndpointIdentifier="icetide-source-sqlserver",
        EndpointType="source",
        EngineName="sqlserver",
        ServerName="orders-db.internal",
        Port=1433,
        DatabaseName="orders",
    )["Endpoint"]
    monkeypatch.setenv("SOURCE_ENDPOINT_ARN", endpoint["EndpointArn"])
    return str(endpoint["EndpointArn"])


@pytest.fixture
def executions(state_machine: str) -> Callable[[], dict[str, dict[str, Any]]]:
    """Name -> input of every execution moto recorded for the state machine, when called."""

    def recorded() -> dict[str, dict[str, Any]]:
        stepfunctions = boto3.client("stepfunctions")
        listed = stepfunctions.list_executions(stateMachineArn=state_machine)["executions"]
        return {
            execution["name"]: json.loads(
                stepfunctions.describe_execution(executionArn=execution["executionArn"])["input"]
            )
            for execution in listed
        }

    return recorded
