"""A test harness: the table-run (and table-maintenance) state machines in moto, with stand-ins whose
behaviour a test chooses.

:class:`TableRunHarness` is a context manager. Inside it, ``mock_aws`` runs moto's Step
Functions interpreter on ``statemachine/table_run.asl.json`` (placeholders filled as SAM would),
every Lambda task calls our handler in-process (:mod:`icetide_local.stepfunctions.lambdas`), DMS tasks
live through their lifecycle (:mod:`icetide_local.standins.dms.lifecycle`, moving no data unless
given a data mover) and the Glue task runs a pluggable job runner (:mod:`icetide_local.standins.glue`,
by default one that writes an empty manifest). The harness provisions what the template would:
control table, raw bucket, source endpoint, SNS topic (with an SQS queue subscribed so tests can
read what was published), Glue jobs (the merge job and the maintenance job, each with its runner),
Lambda functions, both state machines, and the stand-ins of the rules that clean up after runs
which end outside the state machine's paths (:mod:`icetide_local.stepfunctions.cleanup_rules`:
``execution_status_rule.deliver(arn)``, ``sweep_schedule.fire()``). The local stack
(:class:`icetide_local.local_stack.LocalStack`) is this harness with real data movement.

    with TableRunHarness(substitutions={"PollSeconds": "0"}) as stack:
        stack.put_control_item({...})
        report = stack.run("dbo_orders")
"""

from __future__ import annotations

import contextlib
import io
import json
import time
import zipfile
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from types import TracebackType
from typing import Any
from unittest import mock

import boto3
import botocore.loaders
import botocore.session
from moto import mock_aws

from icetide.adapters.clients import reset_clients
from icetide.dms.identifiers import maintenance_run_id
from icetide.dms.identifiers import run_id as make_run_id
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.standins.glue import GlueStandIn, JobRunner, maintenance_report_writer, manifest_writer
from icetide_local.stepfunctions.cleanup_rules import ExecutionStatusRule, SweepSchedule, with_run_timeout
from icetide_local.stepfunctions.definition import (
    FUNCTION_ARN_SUFFIX,
    MAINTENANCE_DEFINITION_PATH,
    handler_module,
    load_substitutions,
    render_definition,
)
from icetide_local.stepfunctions.execution_report import RunReport, execution_report
from icetide_local.stepfunctions.faults import FaultPlan, failing_sns_publish
from icetide_local.stepfunctions.lambdas import InProcessLambdas
from icetide_local.stepfunctions.moto_patches import patched_moto, scaled_pauses

# Runs started without a run id get consecutive hourly slots from here, so each is distinct.
FIRST_SLOT = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
# How often a wait asks whether an execution has ended. Each DescribeExecution goes through moto and
# botocore under the GIL of the process whose threads run the execution, so asking often during a
# long run takes CPU from it. The pause between two asks is a tenth of the time waited so far, kept
# within [_MIN_POLL_SECONDS, _MAX_POLL_SECONDS]: a short run is seen ending at the next short pause,
# a long one within a tenth of its length, and never later than the longest pause.
_MIN_POLL_SECONDS = 0.05
_MAX_POLL_SECONDS = 0.5
_POLL_SHARE_OF_WAIT = 0.1
# The service models (botocore's JSON descriptions of each AWS API), read once per process: see
# _session_with_shared_models.
_SERVICE_MODELS = botocore.loaders.create_loader()
_TRUST_POLICY = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {
                "Effect": "Allow",
                "Principal": {
                    "Service": ["lambda.amazonaws.com", "states.amazonaws.com", "glue.amazonaws.com"]
                },
                "Action": "sts:AssumeRole",
            }
        ],
    }
)


def _session_with_shared_models() -> contextlib.AbstractContextManager[Any]:
    """boto3's default session, for the block, a new one that reads service models through one loader.

    moto gives each mock a new default session (as a test wants: no client or credentials from
    outside), and a new session's loader parses every model it needs again, which is most of the
    time a stack takes to provision. The models are the same files whichever session reads them.
    """
    session = botocore.session.get_session()
    session.register_component("data_loader", _SERVICE_MODELS)
    default_session = boto3.Session(botocore_session=session)
    # boto3.Session adds its own model folder to the loader's search paths every time: once will do.
    _SERVICE_MODELS.search_paths[:] = dict.fromkeys(_SERVICE_MODELS.search_paths)
    return mock.patch.object(boto3, "DEFAULT_SESSION", default_session)


class ExecutionStillRunning(TimeoutError):
    """An execution did not finish within the time the caller allowed."""


@dataclass(frozen=True)
class StackNames:
    """Names of what the stack provisions; the defaults match nothing in a real account."""

    region: str = "eu-west-1"
    # AWS::StackName in the template: scopes the runs' DMS identifiers and their stack tag.
    stack: str = "icetide-local"
    # The template's DMS_ARN_NAME_PREFIX (`icetide` + 8 hex digits of AWS::StackId): the end of the
    # runs' DMS ARNs starts with it.
    dms_arn_name_prefix: str = "icetide10ca1000"
    control_table: str = "icetide-control"
    raw_bucket: str = "icetide-raw-local"
    glue_database: str = "icetide_silver"
    state_machine: str = "icetide-table-run"
    maintenance_state_machine: str = "icetide-table-maintenance"
    topic: str = "icetide-runs"
    notification_queue: str = "icetide-runs-inbox"
    source_endpoint: str = "icetide-local-source"
    role: str = "icetide-local"


@dataclass(frozen=True)
class Notification:
    """One message the state machine published to the run topic."""

    subject: str | None
    message: Any
    attributes: dict[str, str]


@dataclass(frozen=True)
class DmsInventory:
    """The DMS resources that exist right now (the source endpoint is the stack's, not a run's)."""

    tasks: list[str]
    instances: list[str]
    target_endpoints: list[str]


class TableRunHarness:
    """The table-run state machine and everything it calls, in moto, for one ``with`` block."""

    def __init__(
        self,
        *,
        substitutions: Mapping[str, str] | None = None,
        glue_runner: JobRunner | None = None,
        maintenance_runner: JobRunner | None = None,
        glue_default_arguments: Mapping[str, str] | None = None,
        dms: DmsLifecycle | None = None,
        names: StackNames | None = None,
        source_endpoint_settings: Mapping[str, Any] | None = None,
        environment: Mapping[str, str] | None = None,
        time_scale: float = 1.0,
    ) -> None:
        """Configure the stack; nothing is created before ``__enter__``.

        ``substitutions`` override the sample values of ``statemachine/substitutions.json`` (waits
        and bounds; the stack fills the ARNs itself). ``glue_runner`` runs each Glue job run (default:
        write an empty manifest); ``maintenance_runner`` each run of the maintenance Glue job
        (default: write a maintenance report that says the table was skipped). ``environment`` adds
        to or overrides the Lambda functions' environment variables (e.g. ``REPLICATION_INSTANCE_ARN``).
        ``time_scale`` below 1 shortens the interpreter's pauses (Wait states, Retrier intervals, the
        Glue ``.sync`` checks) to that share of their declared length, a difference from AWS that
        tests choose (:func:`icetide_local.stepfunctions.moto_patches.scaled_pauses`); timeouts and
        the stand-ins' clocks stay real.
        """
        self.names = names or StackNames()
        self.faults = FaultPlan()
        self.lambdas = InProcessLambdas(self.faults)
        self.dms = dms or DmsLifecycle()
        self.glue = GlueStandIn(glue_runner or manifest_writer())
        self._maintenance_runner = maintenance_runner or maintenance_report_writer()
        self._substitution_overrides = dict(substitutions or {})
        self._glue_default_arguments = dict(glue_default_arguments or {})
        self._source_endpoint_settings = dict(source_endpoint_settings or {"EngineName": "sqlite"})
        self._environment_overrides = dict(environment or {})
        self.time_scale = time_scale
        self._exit_stack = contextlib.ExitStack()
        self._clients: dict[str, Any] = {}
        self._runs_started = 0
        self._maintenance_runs_started = 0
        self.state_machine_arn = ""
        self.maintenance_state_machine_arn = ""
        self.topic_arn = ""
        self.source_endpoint_arn = ""
        self.role_arn = ""
        self.substitutions: dict[str, str] = {}
        self._queue_url = ""
        # The rules that clean up after runs (template.yaml), made with the functions they invoke.
        self.execution_status_rule: ExecutionStatusRule | None = None
        self.sweep_schedule: SweepSchedule | None = None

    # -- lifecycle -------------------------------------------------------------------------------

    def __enter__(self) -> TableRunHarness:
        stack = self._exit_stack
        try:
            # Not lambda use_docker=False: moto's "simple" Lambda backend would echo payloads instead
            # of calling LambdaFunction.invoke, which InProcessLambdas replaces.
            stack.enter_context(mock_aws(config={"stepfunctions": {"execute_state_machine": True}}))
            stack.enter_context(_session_with_shared_models())
            stack.enter_context(patched_moto())
            if self.time_scale != 1:
                stack.enter_context(scaled_pauses(self.time_scale))
            stack.enter_context(self.lambdas.install())
            stack.enter_context(self.dms.install())
            stack.enter_context(self.glue.install())
            stack.enter_context(failing_sns_publish(self.faults))
            # The handlers' boto3 clients are cached per process: build them anew inside this mock.
            reset_clients()
            stack.callback(reset_clients)
            self._provision()
        except BaseException:
            stack.close()
            raise
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._exit_stack.close()

    def client(self, service_name: str) -> Any:
        """A boto3 client for ``service_name`` in the stack's region (inside the mock), made once."""
        if service_name not in self._clients:
            self._clients[service_name] = boto3.client(  # type: ignore[call-overload]
                service_name, region_name=self.names.region
            )
        return self._clients[service_name]

    # -- provisioning (what template.yaml creates in AWS) ------------------------------------------

    def _provision(self) -> None:
        names = self.names
        self.role_arn = self.client("iam").create_role(
            RoleName=names.role, AssumeRolePolicyDocument=_TRUST_POLICY
        )["Role"]["Arn"]
        self.client("dynamodb").create_table(
            TableName=names.control_table,
            KeySchema=[{"AttributeName": "targetTableName", "KeyType": "HASH"}],
            AttributeDefinitions=[{"AttributeName": "targetTableName", "AttributeType": "S"}],
            BillingMode="PAY_PER_REQUEST",
        )
        self.client("s3").create_bucket(
            Bucket=names.raw_bucket, CreateBucketConfiguration={"LocationConstraint": names.region}
        )
        self.source_endpoint_arn = self.client("dms").create_endpoint(
            EndpointIdentifier=names.source_endpoint, EndpointType="source", **self._source_endpoint_settings
        )["Endpoint"]["EndpointArn"]
        self._provision_notifications()
        values = load_substitutions()
        values.update(self._substitution_overrides)
        self._create_glue_job(values["GlueJobName"], "bronze_to_silver.py")
        self._create_glue_job(values["MaintenanceGlueJobName"], "maintain_silver.py")
        self.glue.job_runners[values["MaintenanceGlueJobName"]] = self._maintenance_runner
        values["NotificationTopicArn"] = self.topic_arn
        for key in [key for key in values if key.endswith(FUNCTION_ARN_SUFFIX)]:
            values[key] = self._create_function(handler_module(key))
        self.substitutions = values
        stepfunctions = self.client("stepfunctions")
        self.state_machine_arn = stepfunctions.create_state_machine(
            name=names.state_machine, definition=render_definition(values), roleArn=self.role_arn
        )["stateMachineArn"]
        self.maintenance_state_machine_arn = stepfunctions.create_state_machine(
            name=names.maintenance_state_machine,
            definition=render_definition(values, MAINTENANCE_DEFINITION_PATH),
            roleArn=self.role_arn,
        )["stateMachineArn"]
        self._provision_cleanup_rules()

    def _provision_cleanup_rules(self) -> None:
        # After the state machines: both functions read STATE_MACHINE_ARN.
        self.execution_status_rule = ExecutionStatusRule(
            self.client("stepfunctions"),
            self.client("lambda"),
            self.state_machine_arn,
            self._create_function("clean_up_execution"),
        )
        self.sweep_schedule = SweepSchedule(
            self.client("lambda"),
            self._create_function("sweep_dms_resources"),
            region=self.names.region,
            account=self.state_machine_arn.split(":")[4],
        )

    def _create_glue_job(self, name: str, script: str) -> None:
        self.client("glue").create_job(
            Name=name,
            Role=self.role_arn,
            Command={"Name": "glueetl", "ScriptLocation": f"s3://{self.names.raw_bucket}/scripts/{script}"},
            DefaultArguments=self._glue_default_arguments,
            ExecutionProperty={"MaxConcurrentRuns": 50},
        )

    def _provision_notifications(self) -> None:
        self.topic_arn = self.client("sns").create_topic(Name=self.names.topic)["TopicArn"]
        sqs = self.client("sqs")
        self._queue_url = sqs.create_queue(QueueName=self.names.notification_queue)["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=self._queue_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        self.client("sns").subscribe(TopicArn=self.topic_arn, Protocol="sqs", Endpoint=queue_arn)

    def lambda_environment(self) -> dict[str, str]:
        """The environment variables every function gets (docs/contracts.md, Environment variables)."""
        names = self.names
        return {
            "AWS_DEFAULT_REGION": names.region,
            "CONTROL_TABLE_NAME": names.control_table,
            "STACK_NAME": names.stack,
            "DMS_ARN_NAME_PREFIX": names.dms_arn_name_prefix,
            "STATE_MACHINE_ARN": self.state_machine_arn,
            "MAINTENANCE_STATE_MACHINE_ARN": self.maintenance_state_machine_arn,
            "RAW_BUCKET": names.raw_bucket,
            "GLUE_DATABASE": names.glue_database,
            "SOURCE_ENDPOINT_ARN": self.source_endpoint_arn,
            "DMS_TARGET_ROLE_ARN": self.role_arn,
            "POWERTOOLS_SERVICE_NAME": "icetide",
            "POWERTOOLS_METRICS_NAMESPACE": "icetide",
            "POWERTOOLS_TRACE_DISABLED": "true",
            # A windowed cdc task stops this long after its start (icetide.dms.stop_position): the
            # stand-in's tasks start at once, so a couple of seconds is time enough to begin reading.
            "CDC_STOP_AFTER_SECONDS": "2",
            **self._environment_overrides,
        }

    def _create_function(self, module: str) -> str:
        archive = io.BytesIO()
        with zipfile.ZipFile(archive, "w") as code:
            # moto wants a package; the code that runs is the in-process handler module.
            code.writestr(f"handlers/{module}.py", "")
        return str(
            self.client("lambda").create_function(
                FunctionName=f"icetide-{module.replace('_', '-')}",
                Runtime="python3.11",
                Role=self.role_arn,
                Handler=f"handlers.{module}.handler",
                Code={"ZipFile": archive.getvalue()},
                Timeout=300,
                Environment={"Variables": self.lambda_environment()},
            )["FunctionArn"]
        )

    # -- using the stack ---------------------------------------------------------------------------

    def limit_run_time(self, seconds: int) -> None:
        """Give the table-run machine a top-level ``TimeoutSeconds`` (the deployed definition has none),
        so that a run which takes longer ends TIMED_OUT, as in AWS."""
        self.client("stepfunctions").update_state_machine(
            stateMachineArn=self.state_machine_arn,
            definition=with_run_timeout(render_definition(self.substitutions), seconds),
        )

    def put_control_item(self, item: Mapping[str, Any]) -> None:
        """Write a control item (strings, ints, lists, maps; as DynamoDB's resource API takes them)."""
        self._control_table().put_item(Item=dict(item))

    def control_item(self, target_table_name: str) -> dict[str, Any] | None:
        """The control item as stored now (numbers come back as Decimal), or None."""
        item = self._control_table().get_item(Key={"targetTableName": target_table_name}, ConsistentRead=True)
        return item.get("Item")

    def _control_table(self) -> Any:
        if "control_table" not in self._clients:
            dynamodb = boto3.resource("dynamodb", region_name=self.names.region)
            self._clients["control_table"] = dynamodb.Table(self.names.control_table)
        return self._clients["control_table"]

    def start(self, target_table_name: str, run_id: str | None = None) -> str:
        """Start one table-run execution, named after the run id as StartWorkflow does; its ARN."""
        if run_id is None:
            run_id = make_run_id(target_table_name, FIRST_SLOT + timedelta(hours=self._runs_started))
        self._runs_started += 1
        return str(
            self.client("stepfunctions").start_execution(
                stateMachineArn=self.state_machine_arn,
                name=run_id,
                input=json.dumps({"targetTableName": target_table_name, "runId": run_id}),
            )["executionArn"]
        )

    def start_maintenance(self, target_table_name: str, run_id: str | None = None) -> str:
        """Start one maintenance execution, named after its run id as StartMaintenance does; its ARN.

        Without ``run_id``, runs get consecutive daily slots from FIRST_SLOT."""
        if run_id is None:
            slot = FIRST_SLOT + timedelta(days=self._maintenance_runs_started)
            run_id = maintenance_run_id(target_table_name, slot)
        self._maintenance_runs_started += 1
        return str(
            self.client("stepfunctions").start_execution(
                stateMachineArn=self.maintenance_state_machine_arn,
                name=run_id,
                input=json.dumps({"targetTableName": target_table_name, "runId": run_id}),
            )["executionArn"]
        )

    def maintain(
        self, target_table_name: str, run_id: str | None = None, timeout_seconds: float = 60
    ) -> RunReport:
        """Start one maintenance run of ``target_table_name`` and wait for its end."""
        return self.wait(self.start_maintenance(target_table_name, run_id), timeout_seconds)

    def wait(
        self,
        execution_arn: str,
        timeout_seconds: float = 60,
        watch: Callable[[], None] | None = None,
    ) -> RunReport:
        """Wait until the execution leaves RUNNING; its report.

        ``watch`` is called at every poll while it runs (the local stack shows the executions'
        progress from there: see icetide_local.execution_progress)."""
        stepfunctions = self.client("stepfunctions")
        started = time.monotonic()
        deadline = started + timeout_seconds
        while stepfunctions.describe_execution(executionArn=execution_arn)["status"] == "RUNNING":
            now = time.monotonic()
            if now > deadline:
                raise ExecutionStillRunning(
                    f"{execution_arn} still RUNNING after {timeout_seconds} s:\n"
                    + execution_report(stepfunctions, execution_arn).render()
                )
            if watch is not None:
                watch()
            pause = (now - started) * _POLL_SHARE_OF_WAIT
            time.sleep(min(max(pause, _MIN_POLL_SECONDS), _MAX_POLL_SECONDS))
        return execution_report(stepfunctions, execution_arn)

    def run(
        self, target_table_name: str, run_id: str | None = None, timeout_seconds: float = 60
    ) -> RunReport:
        """Start one run of ``target_table_name`` and wait for its end."""
        return self.wait(self.start(target_table_name, run_id), timeout_seconds)

    def notifications(self) -> list[Notification]:
        """The messages published to the run topic since the last call (drains the queue)."""
        sqs = self.client("sqs")
        received: list[Notification] = []
        while True:
            batch = sqs.receive_message(QueueUrl=self._queue_url, MaxNumberOfMessages=10).get("Messages", [])
            if not batch:
                return received
            for message in batch:
                envelope = json.loads(message["Body"])
                received.append(
                    Notification(
                        subject=envelope.get("Subject"),
                        message=json.loads(envelope["Message"]),
                        attributes={
                            name: attribute["Value"]
                            for name, attribute in envelope.get("MessageAttributes", {}).items()
                        },
                    )
                )
                sqs.delete_message(QueueUrl=self._queue_url, ReceiptHandle=message["ReceiptHandle"])

    def dms_inventory(self) -> DmsInventory:
        """Every DMS task, instance and target endpoint that exists (describes advance task lifecycles)."""
        dms = self.client("dms")
        return DmsInventory(
            tasks=[
                task["ReplicationTaskArn"] for task in dms.describe_replication_tasks()["ReplicationTasks"]
            ],
            instances=[
                instance["ReplicationInstanceArn"]
                for instance in dms.describe_replication_instances()["ReplicationInstances"]
            ],
            target_endpoints=[
                endpoint["EndpointArn"]
                for endpoint in dms.describe_endpoints()["Endpoints"]
                if str(endpoint["EndpointType"]).lower() == "target"
            ],
        )
