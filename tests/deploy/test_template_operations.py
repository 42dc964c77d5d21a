"""template.yaml for operating a stack (issue 15): alarms, dashboard, notifications, network, safety.

What an operator relies on after the deploy: the alarms watch metrics the handlers really publish, in
the stack's own namespace, and reach the e-mail unfiltered; success e-mails are off by default while
every failure still arrives (checked against moto's SNS with the template's own filter policy); the
VPC endpoints appear only when asked, and only with their VPC; data survives the stack's deletion;
logs expire; service roles trust this account only; `sam local invoke` has every variable.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from functools import cache
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from deploy.template_model import (
    REPO_ROOT,
    global_environment,
    icetide_functions,
    own_environment,
    policy_statements,
    resolve_sub,
    resources_of_type,
    template,
)
from deploy.template_values import created, refusals

ALARM_TOPIC = {"Ref": "AlarmTopic"}
STACK_NAMESPACE = {"Fn::Sub": "icetide/${AWS::StackName}"}
SERVICE = [{"Name": "service", "Value": "icetide"}]
ASL_FILES = sorted((REPO_ROOT / "statemachine").glob("*.asl.json"))
ENV_FILE = REPO_ROOT / "events" / "sam-local" / "env.json"
# Principals whose trust policies carry no aws:SourceAccount/aws:SourceArn condition, and why.
UNCONDITIONED_PRINCIPALS = {
    # Lambda execution roles: Lambda does not document these keys for the role a function runs
    # with (SAM generates most of them anyway, without a trust-policy property for a condition).
    "lambda.amazonaws.com",
    # Glue does not document setting aws:SourceAccount when it assumes a job's role; a condition on
    # a key the request lacks denies, and every job run would fail to start.
    "glue.amazonaws.com",
}


def _resource(logical_id: str) -> dict[str, Any]:
    return dict(template()["Resources"][logical_id])


def _properties(logical_id: str) -> dict[str, Any]:
    return dict(_resource(logical_id)["Properties"])


@cache
def _published_metric_names() -> frozenset[str]:
    """Every metric name the Lambda code publishes (``name="X"`` or a ``("X", MetricUnit...`` tuple)."""
    names: set[str] = set()
    for path in (REPO_ROOT / "functions").rglob("*.py"):
        text = path.read_text(encoding="utf-8")
        names.update(re.findall(r'add_metric\(name="([A-Za-z]+)"', text))
        names.update(re.findall(r'\("([A-Za-z]+)", MetricUnit\.', text))
    return frozenset(names)


# --- alarms ---------------------------------------------------------------------------------------


def _alarms() -> dict[str, dict[str, Any]]:
    return {name: r["Properties"] for name, r in resources_of_type("AWS::CloudWatch::Alarm").items()}


def _alarm_metrics(alarm: dict[str, Any]) -> list[dict[str, Any]]:
    """The metrics an alarm reads: its one metric, or each MetricStat of its metric math."""
    if "MetricName" in alarm:
        return [{key: alarm.get(key) for key in ("Namespace", "MetricName", "Dimensions")}]
    return [query["MetricStat"]["Metric"] for query in alarm["Metrics"] if "MetricStat" in query]


def test_every_alarm_goes_to_the_alarm_topic_which_the_email_gets_unfiltered() -> None:
    subscription = _properties("AlarmSubscription")

    assert len(_alarms()) >= 7
    for name, alarm in _alarms().items():
        assert alarm["AlarmActions"] == [ALARM_TOPIC], name
    assert subscription["TopicArn"] == ALARM_TOPIC
    assert subscription["Endpoint"] == {"Ref": "NotificationEmail"}
    assert "FilterPolicy" not in subscription


def test_icetide_metrics_alarmed_on_are_published_by_the_handlers_in_the_stacks_namespace() -> None:
    own = [
        metric
        for alarm in _alarms().values()
        for metric in _alarm_metrics(alarm)
        if not str(metric["Namespace"]).startswith("AWS/")
    ]

    assert {metric["MetricName"] for metric in own} == {
        "RunsFailed",
        "MaxLagSeconds",
        "InvalidControlItems",
        "DmsLeftoversDeleted",
        "CleanupFailures",
    }
    assert global_environment()["POWERTOOLS_METRICS_NAMESPACE"] == STACK_NAMESPACE
    for metric in own:
        assert metric["Namespace"] == STACK_NAMESPACE
        assert metric["Dimensions"] == SERVICE
        assert metric["MetricName"] in _published_metric_names()


def test_failed_runs_count_recorded_failures_and_timeouts_not_lock_refusals() -> None:
    alarm = _alarms()["FailedRunsAlarm"]
    (expression,) = [query for query in alarm["Metrics"] if query.get("ReturnData")]
    metrics = {
        query["Id"]: (query["MetricStat"]["Metric"]["MetricName"], query["MetricStat"]["Stat"])
        for query in alarm["Metrics"]
        if "MetricStat" in query
    }

    assert metrics == {"recorded": ("RunsFailed", "Sum"), "timedout": ("ExecutionsTimedOut", "Sum")}
    assert expression["Expression"] == "FILL(recorded, 0) + FILL(timedout, 0)"
    # A run refused at the lock by another merge run ends in a Fail state: ExecutionsFailed counts it.
    assert "ExecutionsFailed" not in json.dumps(alarm)
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")


def test_a_table_more_than_the_freshness_hours_behind_raises_the_stale_table_alarm() -> None:
    alarm = _alarms()["StaleTableAlarm"]
    queries = {query["Id"]: query for query in alarm["Metrics"]}
    parameter = template()["Parameters"]["FreshnessAlarmHours"]

    assert queries["hours"]["Expression"] == "lag / 3600"
    assert queries["lag"]["MetricStat"]["Metric"]["MetricName"] == "MaxLagSeconds"
    assert queries["lag"]["MetricStat"]["Stat"] == "Maximum"
    assert alarm["Threshold"] == {"Ref": "FreshnessAlarmHours"}
    assert alarm["ComparisonOperator"] == "GreaterThanThreshold"
    assert (parameter["Type"], parameter["Default"], parameter["MinValue"]) == ("Number", 6, 1)


def test_a_failed_cleanup_or_sweep_raises_the_cleanup_alarm() -> None:
    alarm = _alarms()["CleanupFailedAlarm"]
    watched = sorted(
        (str(metric["Namespace"]), metric["MetricName"], str(metric["Dimensions"][0]["Value"]))
        for metric in _alarm_metrics(alarm)
    )

    # CleanUpExecution's own count, not its Lambda Errors: those include the DmsResourceBusy
    # retries of every abort whose task DMS is still stopping.
    assert watched == [
        ("AWS/Lambda", "Errors", "{'Ref': 'SweepDmsResourcesFunction'}"),
        (str(STACK_NAMESPACE), "CleanupFailures", "icetide"),
    ]
    assert (alarm["Threshold"], alarm["ComparisonOperator"]) == (1, "GreaterThanOrEqualToThreshold")


@pytest.mark.parametrize(
    ("alarm_name", "namespace", "metric", "dimension"),
    [
        ("StartWorkflowErrorsAlarm", "AWS/Lambda", "Errors", {"Ref": "StartWorkflowFunction"}),
        (
            "DeadLetterQueueAlarm",
            "AWS/SQS",
            "ApproximateNumberOfMessagesVisible",
            {"Fn::GetAtt": ["FunctionDeadLetterQueue", "QueueName"]},
        ),
        ("InvalidControlItemsAlarm", STACK_NAMESPACE, "InvalidControlItems", "icetide"),
        ("FailedMaintenanceAlarm", "AWS/States", "ExecutionsFailed", {"Ref": "MaintenanceStateMachine"}),
    ],
)
def test_single_metric_alarms_watch_their_metric(
    alarm_name: str, namespace: Any, metric: str, dimension: Any
) -> None:
    alarm = _alarms()[alarm_name]

    assert (alarm["Namespace"], alarm["MetricName"]) == (namespace, metric)
    assert [d["Value"] for d in alarm["Dimensions"]] == [dimension]
    assert alarm["Threshold"] == 1
    assert alarm["TreatMissingData"] == "notBreaching"


# --- notifications --------------------------------------------------------------------------------


def _publish_states() -> Iterator[tuple[str, dict[str, Any]]]:
    for path in ASL_FILES:
        for name, state in json.loads(path.read_text(encoding="utf-8"))["States"].items():
            if state.get("Resource") == "arn:aws:states:::sns:publish":
                yield f"{path.name}: {name}", state["Parameters"]


def _statuses() -> dict[str, str]:
    """State -> the `status` message attribute it publishes (every publish must set one)."""
    return {
        name: parameters["MessageAttributes"]["status"]["StringValue"]
        for name, parameters in _publish_states()
    }


def test_every_notification_the_state_machines_send_carries_a_status_attribute() -> None:
    # The filter policy judges this attribute: a message without it would never reach the e-mail.
    assert sorted(set(_statuses().values())) == ["FAILED", "MAINTENANCE_FAILED", "MERGED", "TASK_RESUMED"]
    for name, parameters in _publish_states():
        assert parameters["TopicArn"] == "${NotificationTopicArn}", name


def _filter_policy() -> Any:
    subscription = _properties("NotificationSubscription")
    condition, when_on, when_off = subscription["FilterPolicy"]["Fn::If"]
    scope_condition, scope_on, scope_off = subscription["FilterPolicyScope"]["Fn::If"]
    assert condition == scope_condition == "NotifyOnSuccess"
    assert when_on == scope_on == {"Ref": "AWS::NoValue"}
    assert scope_off == "MessageAttributes"
    return when_off


def _delivered_statuses(filter_policy: Any) -> list[str]:
    """The statuses the state machines publish that an SQS subscription with ``filter_policy`` gets."""
    with mock_aws():
        sns, sqs = boto3.client("sns"), boto3.client("sqs")
        topic = sns.create_topic(Name="icetide-notifications")["TopicArn"]
        queue = sqs.create_queue(QueueName="mailbox")["QueueUrl"]
        queue_arn = sqs.get_queue_attributes(QueueUrl=queue, AttributeNames=["QueueArn"])["Attributes"]
        attributes = {"RawMessageDelivery": "true"}
        if filter_policy is not None:
            attributes |= {
                "FilterPolicy": json.dumps(filter_policy),
                "FilterPolicyScope": "MessageAttributes",
            }
        sns.subscribe(TopicArn=topic, Protocol="sqs", Endpoint=queue_arn["QueueArn"], Attributes=attributes)
        for status in sorted(set(_statuses().values())):
            sns.publish(
                TopicArn=topic,
                Message=json.dumps({"status": status, "targetTableName": "dbo_orders"}),
                MessageAttributes={
                    "status": {"DataType": "String", "StringValue": status},
                    "targetTableName": {"DataType": "String", "StringValue": "dbo_orders"},
                },
            )
        received = sqs.receive_message(QueueUrl=queue, MaxNumberOfMessages=10)["Messages"]
        return sorted(json.loads(message["Body"])["status"] for message in received)


def test_by_default_every_notification_but_a_merged_run_reaches_the_email() -> None:
    assert template()["Parameters"]["NotifyOnSuccess"]["Default"] == "false"
    assert _delivered_statuses(_filter_policy()) == ["FAILED", "MAINTENANCE_FAILED", "TASK_RESUMED"]


def test_with_notify_on_success_merged_runs_reach_the_email_too() -> None:
    _filter_policy()  # NotifyOnSuccess true leaves the subscription without a policy

    assert _delivered_statuses(None) == ["FAILED", "MAINTENANCE_FAILED", "MERGED", "TASK_RESUMED"]


def test_only_the_alarms_publish_to_the_alarm_topic_and_only_this_accounts() -> None:
    statements = [
        s for s in policy_statements() if s.document == "topic" and s.statement["Effect"] == "Allow"
    ]

    assert [(s.owner, s.statement["Principal"]) for s in statements] == [
        ("AlarmTopicPolicy", {"Service": "cloudwatch.amazonaws.com"})
    ]
    assert statements[0].statement["Condition"] == {
        "StringEquals": {"aws:SourceAccount": {"Ref": "AWS::AccountId"}}
    }
    assert _properties("AlarmTopic")["KmsMasterKeyId"] == {"Ref": "IcetideKey"}


# --- dashboard ------------------------------------------------------------------------------------


def _dashboard() -> dict[str, Any]:
    body = _properties("Dashboard")["DashboardBody"]["Fn::Sub"]
    # The stack "icetide-prod"; other ${...} stand for ARNs, names and numbers: any JSON-safe text.
    body = body.replace("${AWS::StackName}", "icetide-prod")
    document: dict[str, Any] = json.loads(re.sub(r"\$\{[A-Za-z0-9:.]+\}", "1", body))
    return document


def _expressions() -> list[str]:
    return [
        item["expression"]
        for widget in _dashboard()["widgets"]
        for row in widget["properties"].get("metrics", [])
        for item in row
        if isinstance(item, dict) and "expression" in item
    ]


def test_the_dashboard_shows_every_alarm_of_the_stack() -> None:
    body = _properties("Dashboard")["DashboardBody"]["Fn::Sub"]
    (alarm_widget,) = [widget for widget in _dashboard()["widgets"] if widget["type"] == "alarm"]
    shown = set(re.findall(r'"\$\{([A-Za-z]+)\.Arn\}"', body))

    assert shown == set(_alarms())
    assert len(alarm_widget["properties"]["alarms"]) == len(_alarms())


@pytest.mark.parametrize(
    "metric",
    ["LagSeconds", "RunSeconds", "RowsInserted", "RowsUpdated", "RowsDeleted", "RunsFailed", "RunsRefused"],
)
def test_the_dashboard_shows_each_tables_metric_by_searching_the_table_dimension(metric: str) -> None:
    searches = [e for e in _expressions() if f'MetricName="{metric}"' in e]

    (search,) = searches
    assert search.startswith('SEARCH(\'{"icetide/icetide-prod",service,table} ')
    assert metric in _published_metric_names()


# --- network --------------------------------------------------------------------------------------

ENDPOINTS = ("S3GatewayEndpoint", "SecretsManagerEndpoint", "VpcEndpointSecurityGroup")
WITH_ENDPOINTS = {
    "CreateVpcEndpoints": "true",
    "VpcId": "vpc-0a1b2c3d",
    "RouteTableIds": "rtb-0a1b2c3d,rtb-1a2b3c4d",
}


@pytest.mark.parametrize("logical_id", ENDPOINTS)
def test_vpc_endpoints_exist_only_when_asked(logical_id: str) -> None:
    assert template()["Parameters"]["CreateVpcEndpoints"]["Default"] == "false"
    assert not created(logical_id)
    assert created(logical_id, **WITH_ENDPOINTS)


def test_dms_reaches_s3_through_a_gateway_and_its_secret_through_an_interface_endpoint() -> None:
    s3, secrets = _properties("S3GatewayEndpoint"), _properties("SecretsManagerEndpoint")

    assert (resolve_sub(s3["ServiceName"]), s3["VpcEndpointType"]) == (
        "com.amazonaws.${AWS::Region}.s3",
        "Gateway",
    )
    assert s3["RouteTableIds"] == {"Ref": "RouteTableIds"}
    assert resolve_sub(secrets["ServiceName"]) == "com.amazonaws.${AWS::Region}.secretsmanager"
    assert (secrets["VpcEndpointType"], secrets["PrivateDnsEnabled"]) == ("Interface", True)
    assert secrets["SubnetIds"] == {"Ref": "SubnetIds"}
    assert secrets["SecurityGroupIds"] == [{"Ref": "VpcEndpointSecurityGroup"}]
    assert s3["VpcId"] == secrets["VpcId"] == {"Ref": "VpcId"}


def test_the_interface_endpoint_accepts_https_from_the_replication_instances_only() -> None:
    group = _properties("VpcEndpointSecurityGroup")

    assert [
        (rule["IpProtocol"], rule["FromPort"], rule["ToPort"], rule["SourceSecurityGroupId"])
        for rule in group["SecurityGroupIngress"]
    ] == [("tcp", 443, 443, {"Fn::Select": [0, {"Ref": "SecurityGroupIds"}]})]
    assert [(rule["IpProtocol"], rule["CidrIp"]) for rule in group["SecurityGroupEgress"]] == [
        ("-1", "127.0.0.1/32")
    ]


@pytest.mark.parametrize(
    ("given", "missing"),
    [
        ({"CreateVpcEndpoints": "true", "RouteTableIds": "rtb-0a1b2c3d"}, "VpcId"),
        ({"CreateVpcEndpoints": "true", "VpcId": "vpc-0a1b2c3d"}, "RouteTableIds"),
    ],
)
def test_endpoints_without_their_vpc_or_route_tables_are_refused_at_deploy(
    given: dict[str, str], missing: str
) -> None:
    (refusal,) = refusals(**given)

    assert f"needs {missing}" in refusal


def test_a_deploy_with_or_without_endpoints_is_not_refused() -> None:
    assert refusals() == []
    assert refusals(**WITH_ENDPOINTS) == []


# --- safety ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "logical_id", ["ControlTable", "SilverBucket", "GlueDatabase", "DmsVpcRole", "DmsCloudWatchLogsRole"]
)
def test_data_and_account_wide_roles_survive_the_stacks_deletion_and_replacement(logical_id: str) -> None:
    resource = _resource(logical_id)

    assert (resource["DeletionPolicy"], resource["UpdateReplacePolicy"]) == ("Retain", "Retain")


def test_the_silver_data_needs_no_key_the_stack_deletes() -> None:
    # IcetideKey is deleted with the stack: nothing retained may be encrypted with it.
    encryption = _properties("SilverBucket")["BucketEncryption"]["ServerSideEncryptionConfiguration"]
    table = _properties("ControlTable")

    assert encryption == [{"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}}]
    assert "KMSMasterKeyId" not in json.dumps(table["SSESpecification"])
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}


def test_the_account_wide_dms_roles_are_created_only_when_asked() -> None:
    parameter = template()["Parameters"]["CreateDmsServiceRoles"]

    assert parameter["Default"] == "true"  # an empty account has neither role
    for logical_id in ("DmsVpcRole", "DmsCloudWatchLogsRole"):
        assert created(logical_id)
        assert not created(logical_id, CreateDmsServiceRoles="false")
    assert _resource("DmsSubnetGroup")["DependsOn"] == "DmsServiceRolesReady"


@pytest.mark.parametrize("logical_id", sorted(resources_of_type("AWS::Logs::LogGroup")))
def test_every_log_group_expires_and_is_encrypted(logical_id: str) -> None:
    group = _properties(logical_id)

    assert group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert group["KmsKeyId"] == {"Fn::GetAtt": ["IcetideKey", "Arn"]}


def test_the_dms_task_logs_of_a_runs_instance_get_the_stacks_retention() -> None:
    # DMS creates dms-tasks-<instance> itself, never expiring, unless the group exists first.
    function = _properties("EnsureReplicationInstanceFunction")
    statements = [
        statement
        for policy in function["Policies"]
        for statement in policy.get("Statement", [])
        if any(str(action).startswith("logs:") for action in statement["Action"])
    ]

    assert function["Environment"]["Variables"]["DMS_LOG_RETENTION_DAYS"] == {"Ref": "LogRetentionDays"}
    assert [(statement["Action"], resolve_sub(statement["Resource"])) for statement in statements] == [
        (
            ["logs:CreateLogGroup", "logs:PutRetentionPolicy"],
            "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:dms-tasks-icetide-*",
        )
    ]


@pytest.mark.parametrize("job", ["GlueJob", "MaintenanceGlueJob"])
def test_the_glue_jobs_log_into_the_stacks_expiring_log_groups(job: str) -> None:
    prefix = resolve_sub(_properties(job)["DefaultArguments"]["--custom-logGroup-prefix"])
    names = {
        resolve_sub(_properties(group)["LogGroupName"])
        for group in ("GlueJobErrorLogGroup", "GlueJobOutputLogGroup")
    }

    # Glue 5 writes to <prefix>/error and <prefix>/output; the jobs' roles may write these two groups
    # only (test_template_security.py).
    assert names == {f"{prefix}/error", f"{prefix}/output"}
    assert prefix.startswith("/aws-glue/")


def _service_trusts() -> Iterator[tuple[str, str, dict[str, Any]]]:
    for name, role in resources_of_type("AWS::IAM::Role").items():
        for statement in role["Properties"]["AssumeRolePolicyDocument"]["Statement"]:
            services = statement.get("Principal", {}).get("Service", [])
            for service in [services] if isinstance(services, str | dict) else services:
                yield name, resolve_sub(service), statement


def test_every_service_trust_is_limited_to_this_accounts_requests() -> None:
    trusts = list(_service_trusts())

    assert {service for _, service, _ in trusts} - UNCONDITIONED_PRINCIPALS == {
        "dms.amazonaws.com",
        "dms.${AWS::Region}.amazonaws.com",
        "states.amazonaws.com",
    }
    for name, service, statement in trusts:
        if service in UNCONDITIONED_PRINCIPALS:
            continue
        assert statement["Condition"]["StringEquals"]["aws:SourceAccount"] == {"Ref": "AWS::AccountId"}, name
        if service == "states.amazonaws.com":
            # And a state machine of this Region and account, not an activity or another service.
            source = resolve_sub(statement["Condition"]["ArnLike"]["aws:SourceArn"])
            assert source == "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:stateMachine:*"


@pytest.mark.parametrize("machine", ["TableRunStateMachine", "MaintenanceStateMachine"])
def test_each_state_machine_runs_with_its_own_written_out_role(machine: str) -> None:
    role = _properties(machine)["Role"]["Fn::GetAtt"]

    assert role == [f"{machine}Role", "Arn"]
    assert "Policies" not in _properties(machine)
    # Tracing is on: the X-Ray policy SAM would attach to a role it made.
    assert _properties(f"{machine}Role")["ManagedPolicyArns"] == [
        {"Fn::Sub": "arn:${AWS::Partition}:iam::aws:policy/AWSXrayWriteOnlyAccess"}
    ]


def _task_creation_statements() -> list[dict[str, Any]]:
    document = _properties("DmsTaskCreationPolicy")["PolicyDocument"]
    return [s for s in document["Statement"] if "dms:CreateReplicationTask" in json.dumps(s["Action"])]


def test_tasks_read_only_this_stacks_source_endpoint_and_write_only_its_runs_endpoints() -> None:
    endpoint_grants = []
    for statement in _task_creation_statements():
        resources = (
            statement["Resource"] if isinstance(statement["Resource"], list) else [statement["Resource"]]
        )
        tag = statement["Condition"]["StringEquals"].get("aws:ResourceTag/icetide:stack")
        endpoint_grants += [
            (resource if "Ref" in resource else resolve_sub(resource), tag)
            for resource in resources
            if resource == {"Ref": "DmsSourceEndpoint"} or ":endpoint:" in resolve_sub(resource)
        ]

    assert endpoint_grants == [
        ({"Ref": "DmsSourceEndpoint"}, None),
        ("arn:${AWS::Partition}:dms:${AWS::Region}:${AWS::AccountId}:endpoint:*", {"Ref": "AWS::StackName"}),
    ]


@pytest.mark.parametrize("mode", ["verify-ca", "verify-full"])
def test_certificate_verification_without_a_certificate_is_refused_at_deploy(mode: str) -> None:
    (refusal,) = refusals(DatabaseSslMode=mode)

    assert "DatabaseCertificateArn" in refusal
    cert = "arn:aws:dms:eu-west-1:123456789012:cert:ABCDEFGHIJKLMNOPQRSTUVWXYZ"
    assert refusals(DatabaseSslMode=mode, DatabaseCertificateArn=cert) == []


# --- sam local invoke -----------------------------------------------------------------------------


def _env_file() -> dict[str, dict[str, str]]:
    loaded: dict[str, dict[str, str]] = json.loads(ENV_FILE.read_text(encoding="utf-8"))
    return loaded


def _expected_value(value: Any) -> str:
    """What env.json must say for a variable the template sets to ``value``."""
    parameters, outputs = template()["Parameters"], template()["Outputs"]
    if isinstance(value, str):
        return value
    if "Fn::FindInMap" in value:
        return resolve_sub(value)
    reference = value.get("Ref") or value.get("Fn::Join", [None, {}])[1].get("Ref")
    if reference in parameters:
        return f"<Parameter {reference}>"
    names = [name for name, output in outputs.items() if output["Value"] == value]
    assert names, f"no output gives {value}: add one, so env.json can name it"
    return f"<Output {names[0]}>"


def test_the_sam_local_environment_has_every_function_and_every_variable_the_template_sets() -> None:
    env = _env_file()

    assert sorted(env) == sorted(icetide_functions())
    for function, variables in env.items():
        template_sets = global_environment() | own_environment(function)
        assert variables == {name: _expected_value(value) for name, value in template_sets.items()}, function


def test_each_placeholder_names_an_output_or_a_parameter_of_the_template() -> None:
    placeholders = {
        value for variables in _env_file().values() for value in variables.values() if value.startswith("<")
    }
    names = {f"<Output {name}>" for name in template()["Outputs"]} | {
        f"<Parameter {name}>" for name in template()["Parameters"]
    }

    assert placeholders and placeholders <= names


# --- the deploy page -------------------------------------------------------------------------------


def test_the_deploy_page_walks_a_newcomer_through_the_choices() -> None:
    section = Path(REPO_ROOT / "docs" / "deploy.md").read_text(encoding="utf-8")
    for needed in (
        "CreateVpcEndpoints",
        "NAT",
        "CreateDmsServiceRoles",
        "DatabaseCertificateArn",
        "NotifyOnSuccess",
        "FreshnessAlarmHours",
        "sam deploy --guided",
        "events/sam-local/env.json",
        "describe-stacks",
    ):
        assert needed in section, needed
