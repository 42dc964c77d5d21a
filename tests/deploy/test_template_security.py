"""template.yaml's security posture: least privilege, encryption, TLS, no hard-coded account or Region."""

from __future__ import annotations

import fnmatch
import importlib.resources
import json
import re
from functools import cache
from typing import Any

import pytest

from deploy.template_model import (
    RAW_BUCKET_LAYOUT,
    SERVERLESS_FUNCTION,
    TEMPLATE_PATH,
    custom_resource_functions,
    function_globals,
    icetide_functions,
    policy_statements,
    resolve_sub,
    resources_of_type,
    template,
)
from icetide.dms.identifiers import LONG_LIVED_TAG, RunDmsResources, continuous_resources, continuous_tags
from icetide.run.plan import CONTINUOUS_FOLDER

BRONZE, MANIFESTS = RAW_BUCKET_LAYOUT["Bronze"], RAW_BUCKET_LAYOUT["Manifests"]
# Actions whose only resource type does not fit, scoped by a condition key instead.
CONDITION_SCOPED_ACTIONS = {"cloudwatch:PutMetricData": "cloudwatch:namespace"}
# The tags every DMS resource of a run carries, as the functions set them (icetide.dms.identifiers).
RUN_TAGS = RunDmsResources("icetide", "orders", "orders-20261121T0700Z").tags
(STACK_TAG,) = [key for key, value in RUN_TAGS.items() if value == "icetide"]
(RUN_TAG,) = [key for key, value in RUN_TAGS.items() if value == "orders-20261121T0700Z"]
# A continuous table's long-lived task and endpoint: a run's tags plus the long-lived mark.
CONTINUOUS_TAGS = continuous_tags(continuous_resources("icetide", "orders"))
THIS_STACK = {"Ref": "AWS::StackName"}
# How the source endpoint's engine settings reach the credentials (never the credentials themselves).
SECRET_SETTINGS = ("SecretsManagerSecretId", "SecretsManagerAccessRoleArn")
# Every function that touches DMS resources, and so must be limited to this stack's.
DMS_FUNCTIONS = {
    "EnsureReplicationInstanceFunction",
    "CreateReplicationTaskFunction",
    "EnsureContinuousTaskFunction",
    "StartReplicationTaskFunction",
    "ReadTaskStatisticsFunction",
    # It reads a long-lived task's counters to count a continuous run's rows against them.
    "SelectBronzeFilesFunction",
    "DeleteDmsResourcesFunction",
    # It stops and deletes the long-lived tasks of tables turned off.
    "StartWorkflowFunction",
    # They delete what an ended execution (or a run no longer running) left behind.
    "CleanUpExecutionFunction",
    "SweepDmsResourcesFunction",
}


@cache
def _iam_reference() -> dict[str, Any]:
    """cfn-lint's copy of the IAM Service Authorization Reference: actions and their resource types."""
    text = importlib.resources.files("cfnlint.data.AdditionalSpecs").joinpath("Policies.json").read_text()
    return dict(json.loads(text))


def _resource_types(action: str) -> list[str]:
    service, _, name = action.lower().partition(":")
    actions = _iam_reference()[service]["Actions"]
    assert name in actions, f"{action} is not an IAM action"
    return list(actions[name].get("Resources", []))


def _allow_statements() -> list[Any]:
    return [s for s in policy_statements() if s.statement["Effect"] == "Allow"]


def test_no_allow_statement_uses_a_wildcard_action() -> None:
    wildcards = [(s.owner, a) for s in _allow_statements() for a in s.actions if "*" in a]

    assert wildcards == []


def test_every_allowed_action_exists() -> None:
    for statement in _allow_statements():
        for action in statement.actions:
            _resource_types(action)


def test_wildcard_resources_only_for_actions_without_a_resource_type() -> None:
    offending = []
    for statement in _allow_statements():
        # In a key policy "*" means "this key": it cannot name anything else.
        if statement.document == "key" or "*" not in statement.resources:
            continue
        for action in statement.actions:
            scoping_key = CONDITION_SCOPED_ACTIONS.get(action)
            if scoping_key and scoping_key in json.dumps(statement.statement.get("Condition", {})):
                continue
            if _resource_types(action):
                offending.append((statement.owner, action))

    assert offending == []


def _dms_resource_statements() -> list[Any]:
    """Allow statements with a DMS action that acts on a DMS resource (one with a resource type)."""
    return [
        statement
        for statement in _allow_statements()
        if any(action.startswith("dms:") and _resource_types(action) for action in statement.actions)
    ]


def _on_request(actions: list[str]) -> bool:
    """Whether the statement's DMS actions are judged by the request's tags (create, tag) or not.

    A statement mixing both kinds could not pin either with one condition key: refused.
    """
    dms_actions = [action for action in actions if action.startswith("dms:")]
    on_request = [action for action in dms_actions if action.startswith(("dms:Create", "dms:AddTags"))]
    assert on_request in ([], dms_actions), f"mixes create/tag and other DMS actions: {dms_actions}"
    return bool(on_request)


def _sid(statement: Any) -> str:
    return f"{statement.owner}/{statement.statement.get('Sid')}"


def test_every_dms_resource_statement_pins_this_stacks_tag_value() -> None:
    statements = _dms_resource_statements()

    # Guards the loop below against passing without looking at anything.
    assert {statement.owner for statement in statements} == DMS_FUNCTIONS
    for statement in statements:
        key = "aws:RequestTag" if _on_request(statement.actions) else "aws:ResourceTag"
        condition = statement.statement.get("Condition", {})

        assert condition.get("StringEquals", {}).get(f"{key}/{STACK_TAG}") == THIS_STACK, _sid(statement)


def test_dms_writes_also_need_a_run_tag() -> None:
    writes = [
        statement
        for statement in _dms_resource_statements()
        if any(re.match(r"dms:(Create|Delete|Start|Stop|AddTags)", action) for action in statement.actions)
    ]

    assert len(writes) >= len(DMS_FUNCTIONS) - 2  # the two statistics readers write nothing
    for statement in writes:
        key = "aws:RequestTag" if _on_request(statement.actions) else "aws:ResourceTag"

        assert statement.statement["Condition"]["Null"][f"{key}/{RUN_TAG}"] == "false", _sid(statement)


def test_tagging_adds_only_icetide_tags_and_never_to_another_stacks_resource() -> None:
    tagging = [s for s in _dms_resource_statements() if "dms:AddTagsToResource" in s.actions]

    tags_of = {
        "EnsureReplicationInstanceFunction": RUN_TAGS,
        "CreateReplicationTaskFunction": RUN_TAGS,
        "EnsureContinuousTaskFunction": CONTINUOUS_TAGS,
    }
    assert {statement.owner for statement in tagging} == set(tags_of)
    for statement in tagging:
        condition, where = statement.statement["Condition"], _sid(statement)

        assert statement.actions == ["dms:AddTagsToResource"], where
        assert condition["StringEqualsIfExists"] == {f"aws:ResourceTag/{STACK_TAG}": THIS_STACK}, where
        assert sorted(condition["ForAllValues:StringEquals"]["aws:TagKeys"]) == sorted(
            tags_of[statement.owner]
        )


# One deployed stack, as CloudFormation's pseudo parameters name it (a StackId is
# arn:<partition>:cloudformation:<region>:<account>:stack/<stack name>/<UUID>).
STACK_ID_UUID = "51af3dc0-da77-11e4-872e-1234567db123"
PSEUDO_PARAMETERS = {
    "AWS::Partition": "aws",
    "AWS::Region": "eu-west-1",
    "AWS::AccountId": "123456789012",
    "AWS::StackName": "icetide",
    "AWS::StackId": f"arn:aws:cloudformation:eu-west-1:123456789012:stack/icetide/{STACK_ID_UUID}",
}
# What this stack names its DMS resources' ARNs with: `icetide` + the UUID's first 8 hex digits.
THIS_STACKS_ARN_NAME_PREFIX = "icetide51af3dc0"
DMS_ARN = "arn:aws:dms:eu-west-1:123456789012"
# Functions that create DMS resources, and the ARN resource types they may tag on create.
TAGGED_ON_CREATE = {
    "EnsureReplicationInstanceFunction": ("rep",),
    "CreateReplicationTaskFunction": ("endpoint", "task"),
    "EnsureContinuousTaskFunction": ("endpoint", "task"),
}


def _evaluated(value: Any, variables: dict[str, str] | None = None) -> Any:
    """What CloudFormation makes of ``value`` in the stack of PSEUDO_PARAMETERS (the intrinsic
    functions the DMS ARN names use: Ref of a pseudo parameter, Sub, Select, Split, Join)."""
    known = {**PSEUDO_PARAMETERS, **(variables or {})}
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        return [_evaluated(item, variables) for item in value]
    ((function, argument),) = value.items()
    if function == "Ref":
        return known[argument]
    if function == "Fn::Select":
        return _evaluated(argument[1], variables)[int(argument[0])]
    if function == "Fn::Split":
        return _evaluated(argument[1], variables).split(argument[0])
    if function == "Fn::Join":
        return argument[0].join(_evaluated(argument[1], variables))
    if function == "Fn::Sub":
        text, given = (argument, {}) if isinstance(argument, str) else argument
        names = known | {name: _evaluated(item, variables) for name, item in given.items()}
        return re.sub(r"\$\{([A-Za-z0-9_:.]+)\}", lambda match: names[match.group(1)], text)
    raise TypeError(f"cannot evaluate {function}")


def _iam_matches(pattern: str, arn: str) -> bool:
    """IAM's ARN matching: `*` any run of characters, `?` one character, the rest literally."""
    regex = "".join({"*": ".*", "?": "."}.get(character, re.escape(character)) for character in pattern)
    return re.fullmatch(regex, arn) is not None


def _tagging_patterns(owner: str) -> list[str]:
    return [
        _evaluated(resource)
        for statement in _dms_resource_statements()
        if statement.owner == owner and "dms:AddTagsToResource" in statement.actions
        for resource in statement.resources
    ]


def test_functions_that_create_dms_resources_get_the_stacks_arn_name_prefix() -> None:
    functions = resources_of_type(SERVERLESS_FUNCTION)
    given = {
        name: _evaluated(variables["DMS_ARN_NAME_PREFIX"])
        for name, function in functions.items()
        if "DMS_ARN_NAME_PREFIX"
        in (variables := function["Properties"].get("Environment", {}).get("Variables", {}))
    }

    assert given == dict.fromkeys(TAGGED_ON_CREATE, THIS_STACKS_ARN_NAME_PREFIX)


@pytest.mark.parametrize("owner", sorted(TAGGED_ON_CREATE))
def test_tagging_is_allowed_only_on_arns_this_stack_chose(owner: str) -> None:
    patterns = _tagging_patterns(owner)
    assert patterns  # guards the loops below against passing without looking at anything

    for kind in TAGGED_ON_CREATE[owner]:
        # What the stack's own create calls name (ResourceIdentifier = prefix-<digest>).
        assert any(
            _iam_matches(p, f"{DMS_ARN}:{kind}:{THIS_STACKS_ARN_NAME_PREFIX}-1b8f9d0ae414a71")
            for p in patterns
        )
    for kind in ("rep", "endpoint", "task"):
        for foreign in (
            "DOH67ZTOXGLIXMIHKITV",  # DMS's own name for a resource created without a ResourceIdentifier
            "orders-replication",  # a colleague's own ResourceIdentifier
            "icetide0badf00d-1b8f9d0ae414a71",  # another icetide stack's
            "icetide51af3dc0",  # the prefix alone, without icetide's separator
        ):
            arn = f"{DMS_ARN}:{kind}:{foreign}"
            assert not any(_iam_matches(p, arn) for p in patterns), (owner, arn)
    # Nothing of another account or Region.
    assert not any(
        _iam_matches(
            p, f"arn:aws:dms:us-east-1:210987654321:{kind}:{THIS_STACKS_ARN_NAME_PREFIX}-1b8f9d0ae414a71"
        )
        for p in patterns
        for kind in ("rep", "endpoint", "task")
    )


def test_the_arn_matcher_matches_as_iam_does() -> None:
    assert _iam_matches("arn:aws:dms:eu-west-1:123456789012:rep:*", f"{DMS_ARN}:rep:DOH67ZTOXGLIXMIHKITV")
    assert _iam_matches("a?c", "abc") and not _iam_matches("a?c", "ac")
    assert not _iam_matches("arn:aws:dms:eu-west-1:123456789012:rep:x*", f"{DMS_ARN}:rep:DOH67")
    assert not _iam_matches("a.c", "abc")  # a dot is a dot


def _long_lived_mark(statement: Any, key: str) -> Any:
    return statement.statement["Condition"].get("StringEquals", {}).get(f"{key}/{LONG_LIVED_TAG}")


def test_only_continuous_task_functions_start_or_retire_long_lived_tasks_they_mark_so() -> None:
    # EnsureContinuousTask may add tags only in a request that marks the resource long-lived, so
    # everything it creates is out of a run cleanup's reach.
    (ensure_tagging,) = [
        s
        for s in _dms_resource_statements()
        if s.owner == "EnsureContinuousTaskFunction" and "dms:AddTagsToResource" in s.actions
    ]
    assert _long_lived_mark(ensure_tagging, "aws:RequestTag") == CONTINUOUS_TAGS[LONG_LIVED_TAG]
    for owner, actions in (
        # It reads the counters of the task it resumes, only of a task marked long-lived too.
        ("EnsureContinuousTaskFunction", {"dms:StartReplicationTask", "dms:DescribeTableStatistics"}),
        (
            "StartWorkflowFunction",
            {"dms:StopReplicationTask", "dms:DeleteReplicationTask", "dms:DeleteEndpoint"},
        ),
    ):
        writes = [
            s
            for s in _dms_resource_statements()
            if s.owner == owner and not _on_request(s.actions) and s.actions != ["dms:ListTagsForResource"]
        ]
        assert {action for s in writes for action in s.actions} == actions, owner
        for statement in writes:
            assert _long_lived_mark(statement, "aws:ResourceTag") == CONTINUOUS_TAGS[LONG_LIVED_TAG], _sid(
                statement
            )


def test_a_runs_cleanup_can_never_delete_a_long_lived_resource() -> None:
    deletes = [
        s
        for s in _dms_resource_statements()
        if s.owner == "DeleteDmsResourcesFunction" and any(a.startswith("dms:Delete") for a in s.actions)
    ]

    assert deletes
    for statement in deletes:
        # Null "true": only a resource WITHOUT the long-lived tag matches.
        assert statement.statement["Condition"]["Null"][f"aws:ResourceTag/{LONG_LIVED_TAG}"] == "true"


def test_functions_that_name_dms_resources_get_the_stack_name_from_cloudformation() -> None:
    functions = resources_of_type(SERVERLESS_FUNCTION)
    given = {
        name: function["Properties"]["Environment"]["Variables"]["STACK_NAME"]
        for name, function in functions.items()
        if "STACK_NAME" in function["Properties"].get("Environment", {}).get("Variables", {})
    }

    assert given == dict.fromkeys(
        [
            "EnsureReplicationInstanceFunction",
            "CreateReplicationTaskFunction",
            "EnsureContinuousTaskFunction",
            "DeleteDmsResourcesFunction",
            "StartWorkflowFunction",
            "CleanUpExecutionFunction",
            "SweepDmsResourcesFunction",
        ],
        THIS_STACK,
    )


def test_template_names_no_account_region_or_partition_literally() -> None:
    text = TEMPLATE_PATH.read_text(encoding="utf-8")

    assert re.findall(r"arn:aws(?:-[a-z]+)?:", text) == []
    assert re.findall(r"(?<![0-9{])[0-9]{12}(?![0-9}])", text) == []
    assert re.findall(r"\b(?:us|eu|ap|sa|ca|me|af|il|mx|cn)-[a-z]+-[0-9]\b", text) == []


def _bucket_policies() -> dict[str, dict[str, Any]]:
    return {p["Properties"]["Bucket"]["Ref"]: p for p in resources_of_type("AWS::S3::BucketPolicy").values()}


@pytest.mark.parametrize("bucket_name", sorted(resources_of_type("AWS::S3::Bucket")))
def test_bucket_is_encrypted_private_and_tls_only(bucket_name: str) -> None:
    bucket = resources_of_type("AWS::S3::Bucket")[bucket_name]["Properties"]
    encryption = bucket["BucketEncryption"]["ServerSideEncryptionConfiguration"][0]
    statements = _bucket_policies()[bucket_name]["Properties"]["PolicyDocument"]["Statement"]
    tls_denials = [
        s
        for s in statements
        if s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    ]

    assert encryption["ServerSideEncryptionByDefault"]["SSEAlgorithm"] in {"AES256", "aws:kms"}
    assert bucket["PublicAccessBlockConfiguration"] == {
        "BlockPublicAcls": True,
        "BlockPublicPolicy": True,
        "IgnorePublicAcls": True,
        "RestrictPublicBuckets": True,
    }
    assert len(tls_denials) == 1
    assert tls_denials[0]["Resource"] == [
        {"Fn::GetAtt": [bucket_name, "Arn"]},
        {"Fn::Sub": f"${{{bucket_name}.Arn}}/*"},
    ]


def test_raw_bucket_archives_then_expires_bronze_files() -> None:
    rules = resources_of_type("AWS::S3::Bucket")["RawBucket"]["Properties"]["LifecycleConfiguration"]["Rules"]
    (bronze_rule,) = [rule for rule in rules if "Transitions" in rule]

    assert bronze_rule["Prefix"] == {
        "Fn::Sub": ["${Prefix}/", {"Prefix": {"Fn::FindInMap": ["RawBucketLayout", "Prefix", "Bronze"]}}]
    }
    assert bronze_rule["Transitions"][0]["TransitionInDays"] == {"Ref": "BronzeArchiveAfterDays"}
    assert bronze_rule["ExpirationInDays"] == {"Ref": "BronzeExpireAfterDays"}


def test_raw_bucket_expires_continuous_tables_files_after_their_retention() -> None:
    bucket = resources_of_type("AWS::S3::Bucket")["RawBucket"]["Properties"]
    (continuous_rule,) = [
        rule
        for rule in bucket["LifecycleConfiguration"]["Rules"]
        if rule["Id"] == "expire-continuous-bronze-files"
    ]
    parameter = template()["Parameters"]["ContinuousBronzeRetentionDays"]

    assert resolve_sub(continuous_rule["Prefix"]) == f"{BRONZE}/{CONTINUOUS_FOLDER}/"
    assert continuous_rule["Status"] == "Enabled"
    assert continuous_rule["ExpirationInDays"] == {"Ref": "ContinuousBronzeRetentionDays"}
    assert (parameter["Default"], parameter["MinValue"]) == (14, 1)
    # The events rule of StartOnNewFilesFunction sees the bucket's object events only through this.
    assert bucket["NotificationConfiguration"] == {"EventBridgeConfiguration": {"EventBridgeEnabled": True}}


def _s3_grants(owner: str, action: str) -> list[str]:
    """The bucket or object ARNs ``owner`` may ``action``, as ``arn:aws:s3:::<Bucket>[/key pattern]``."""
    return [
        resolve_sub(resource)
        for statement in _allow_statements()
        if statement.owner == owner and action in statement.actions
        for resource in statement.resources
    ]


def _list_prefixes(owner: str) -> list[str]:
    return [
        resolve_sub(prefix)
        for statement in _allow_statements()
        if statement.owner == owner and "s3:ListBucket" in statement.actions
        for prefix in _as_list(
            statement.statement.get("Condition", {}).get("StringLike", {}).get("s3:prefix", [])
        )
    ]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _may(grants: list[str], arn: str) -> bool:
    return any(fnmatch.fnmatchcase(arn, grant) for grant in grants)


def test_bronze_file_selection_lists_only_continuous_folders_and_writes_only_manifests() -> None:
    owner = "SelectBronzeFilesFunction"

    assert _s3_grants(owner, "s3:ListBucket") == ["arn:aws:s3:::RawBucket"]
    assert _list_prefixes(owner) == [f"{BRONZE}/{CONTINUOUS_FOLDER}/*"]
    assert _s3_grants(owner, "s3:PutObject") == [f"arn:aws:s3:::RawBucket/{MANIFESTS}/*"]
    # Listing gives the sizes; the files' footers (their row counts) are read in the continuous
    # folders only; the long-lived task's counters are read; nothing else is written or deleted.
    assert _s3_grants(owner, "s3:GetObject") == [f"arn:aws:s3:::RawBucket/{BRONZE}/{CONTINUOUS_FOLDER}/*"]
    actions = {action for s in _allow_statements() if s.owner == owner for action in s.actions}
    assert actions == {
        "s3:ListBucket",
        "s3:PutObject",
        "s3:GetObject",
        "dms:DescribeTableStatistics",
        "dms:DescribeReplicationTasks",
    }


def test_the_glue_job_reads_continuous_files_and_the_runs_selection() -> None:
    continuous_file = f"{BRONZE}/{CONTINUOUS_FOLDER}/orders/dbo/orders/20261121-070501123.parquet"
    selection = f"{MANIFESTS}/orders/orders-20261121T0705Z.bronze-files.json"
    reads = _s3_grants("GlueJobRole", "s3:GetObject")

    assert _may(reads, f"arn:aws:s3:::RawBucket/{continuous_file}")
    assert _may(reads, f"arn:aws:s3:::RawBucket/{selection}")
    assert any(
        fnmatch.fnmatchcase(f"{BRONZE}/{CONTINUOUS_FOLDER}/orders/", p) for p in _list_prefixes("GlueJobRole")
    )
    # DMS's target role writes the continuous folders too (they lie below the bronze prefix).
    assert _may(_s3_grants("DmsS3TargetRole", "s3:PutObject"), f"arn:aws:s3:::RawBucket/{continuous_file}")


def test_control_table_is_on_demand_with_point_in_time_recovery_and_kms() -> None:
    table = resources_of_type("AWS::DynamoDB::Table")["ControlTable"]["Properties"]

    assert table["BillingMode"] == "PAY_PER_REQUEST"
    assert table["PointInTimeRecoverySpecification"] == {"PointInTimeRecoveryEnabled": True}
    assert table["SSESpecification"] == {"SSEEnabled": True, "SSEType": "KMS"}
    assert table["KeySchema"] == [{"AttributeName": "targetTableName", "KeyType": "HASH"}]


def test_dms_source_endpoint_reads_credentials_from_the_secret_over_tls() -> None:
    endpoint = resources_of_type("AWS::DMS::Endpoint")["DmsSourceEndpoint"]["Properties"]
    engine_settings = [
        endpoint[name]["Fn::If"][1]
        for name in ("OracleSettings", "MicrosoftSqlServerSettings", "PostgreSqlSettings", "MySqlSettings")
    ]
    ssl_modes = template()["Parameters"]["DatabaseSslMode"]["AllowedValues"]

    # DMS refuses clear-text connection details next to a secret.
    assert {"Username", "Password", "ServerName", "Port"} & set(endpoint) == set()
    for settings in engine_settings:
        secret = {key: settings[key] for key in SECRET_SETTINGS if key in settings}
        assert secret == {
            "SecretsManagerSecretId": {"Ref": "DatabaseSecretArn"},
            "SecretsManagerAccessRoleArn": {"Fn::GetAtt": ["DmsSecretAccessRole", "Arn"]},
        }
        # Besides the secret, only PostgreSQL's replication slot (test_template_sources.py).
        assert set(settings) - set(SECRET_SETTINGS) <= {"SlotName", "PluginName"}
    assert endpoint["SslMode"] == {"Ref": "DatabaseSslMode"}
    assert "none" not in ssl_modes


def test_dms_account_roles_keep_their_fixed_names_and_are_optional() -> None:
    roles = resources_of_type("AWS::IAM::Role")

    for logical_id, role_name in (
        ("DmsVpcRole", "dms-vpc-role"),
        ("DmsCloudWatchLogsRole", "dms-cloudwatch-logs-role"),
    ):
        assert roles[logical_id]["Properties"]["RoleName"] == role_name
        assert roles[logical_id]["Condition"] == "CreateDmsServiceRoles"


def test_checkov_suppressions_each_carry_a_written_reason() -> None:
    skips = [
        (name, skip)
        for name, resource in template()["Resources"].items()
        for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])
    ]

    assert skips, "the template documents its checkov suppressions"
    for name, skip in skips:
        assert re.fullmatch(r"CKV_AWS_[0-9]+", skip["id"]), name
        assert len(skip.get("comment", "").split()) >= 5, (
            f"{name} {skip['id']}: the reason is missing or too short"
        )


def test_functions_are_python_3_11_on_arm64_traced_with_powertools() -> None:
    function = function_globals()

    assert function["Runtime"] == "python3.11"
    assert function["Architectures"] == ["arm64"]
    assert function["Tracing"] == "Active"
    assert function["Environment"]["Variables"]["POWERTOOLS_SERVICE_NAME"] == "icetide"
    for name, resource in icetide_functions().items():
        assert {"Runtime", "Architectures", "CodeUri"} & set(resource["Properties"]) == set(), name
    # The custom resources' functions have a CodeUri of their own (test_template.py), nothing else.
    for name, resource in custom_resource_functions().items():
        assert {"Runtime", "Architectures"} & set(resource["Properties"]) == set(), name


def test_hourly_schedule_starts_the_workflow_and_can_be_switched_off() -> None:
    events = resources_of_type(SERVERLESS_FUNCTION)["StartWorkflowFunction"]["Properties"]["Events"]
    (schedule,) = events.values()
    parameters = template()["Parameters"]

    assert schedule["Type"] == "Schedule"
    assert schedule["Properties"]["State"] == {"Ref": "ScheduleState"}
    assert set(parameters["ScheduleState"]["AllowedValues"]) == {"ENABLED", "DISABLED"}
    assert parameters["ScheduleExpression"]["Default"] == "rate(1 hour)"


def test_notifications_are_encrypted_and_failed_runs_raise_an_alarm() -> None:
    topic = resources_of_type("AWS::SNS::Topic")["NotificationTopic"]["Properties"]
    alarm = resources_of_type("AWS::CloudWatch::Alarm")["FailedRunsAlarm"]["Properties"]
    watched = [query["MetricStat"]["Metric"] for query in alarm["Metrics"] if "MetricStat" in query]

    assert topic["KmsMasterKeyId"] == {"Ref": "IcetideKey"}
    # RecordFailure's count and timed-out executions (test_template_operations.py says why).
    assert [metric["MetricName"] for metric in watched] == ["RunsFailed", "ExecutionsTimedOut"]
    assert watched[1]["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": "TableRunStateMachine"}}]
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


# What writing a bronze file takes: the actions that create, replace, remove or re-tag one.
BRONZE_WRITE_ACTIONS = {"s3:PutObject", "s3:DeleteObject", "s3:DeleteObjectVersion", "s3:PutObjectTagging"}


def _touches_bronze(statement: Any) -> bool:
    """True when one of ``statement``'s resources covers a key below the bronze prefix."""
    key = f"arn:aws:s3:::RawBucket/{BRONZE}/_continuous/orders/dbo/orders/20261121-070501123.parquet"
    return any(fnmatch.fnmatchcase(key, resolve_sub(resource)) for resource in statement.resources)


def test_only_the_dms_target_role_and_a_named_break_glass_role_may_write_bronze() -> None:
    (deny,) = [
        s
        for s in policy_statements()
        if s.owner == "RawBucketPolicy"
        and s.statement["Effect"] == "Deny"
        and _touches_bronze(s)
        and "aws:PrincipalArn" in json.dumps(s.statement.get("Condition", {}))
    ]

    assert deny.statement["Principal"] == "*"
    assert set(deny.actions) >= BRONZE_WRITE_ACTIONS
    assert [resolve_sub(r) for r in deny.resources] == [f"arn:aws:s3:::RawBucket/{BRONZE}/*"]
    assert deny.statement["Condition"] == {
        "ArnNotEquals": {
            "aws:PrincipalArn": [
                {"Fn::GetAtt": ["DmsS3TargetRole", "Arn"]},
                {
                    "Fn::If": [
                        "HasBronzeBreakGlassRole",
                        {"Ref": "BronzeBreakGlassRoleArn"},
                        {"Ref": "AWS::NoValue"},
                    ]
                },
            ]
        }
    }


def test_no_identity_of_the_stack_but_dms_s_target_role_is_allowed_to_write_bronze() -> None:
    """The bucket's deny takes nothing from the stack: only DMS's role ever needed to write there."""
    writers = {
        s.owner
        for s in _allow_statements()
        if s.document == "identity" and BRONZE_WRITE_ACTIONS & set(s.actions) and _touches_bronze(s)
    }

    assert writers == {"DmsS3TargetRole"}


def _queue_policies() -> dict[str, list[dict[str, Any]]]:
    """Queue (logical id) -> the statements of the queue policy that names it."""
    policies: dict[str, list[dict[str, Any]]] = {}
    for policy in resources_of_type("AWS::SQS::QueuePolicy").values():
        for queue in policy["Properties"]["Queues"]:
            policies.setdefault(queue["Ref"], []).extend(policy["Properties"]["PolicyDocument"]["Statement"])
    return policies


@pytest.mark.parametrize("queue_name", sorted(resources_of_type("AWS::SQS::Queue")))
def test_every_queue_is_encrypted_and_tls_only(queue_name: str) -> None:
    queue = resources_of_type("AWS::SQS::Queue")[queue_name]["Properties"]
    statements = _queue_policies().get(queue_name, [])
    tls_denials = [
        s
        for s in statements
        if s["Effect"] == "Deny" and s["Condition"] == {"Bool": {"aws:SecureTransport": "false"}}
    ]

    assert queue["SqsManagedSseEnabled"] is True
    assert len(tls_denials) == 1
    assert (tls_denials[0]["Principal"], tls_denials[0]["Action"]) == ("*", "sqs:*")
    assert tls_denials[0]["Resource"] == {"Fn::GetAtt": [queue_name, "Arn"]}


def test_only_the_continuous_files_rule_may_send_to_its_queue() -> None:
    (allowed,) = [s for s in _queue_policies()["ContinuousFilesQueue"] if s["Effect"] == "Allow"]

    assert (allowed["Principal"], allowed["Action"]) == (
        {"Service": "events.amazonaws.com"},
        "sqs:SendMessage",
    )
    assert allowed["Condition"] == {
        "ArnEquals": {"aws:SourceArn": {"Fn::GetAtt": ["ContinuousFilesRule", "Arn"]}}
    }


# A file of another database's table in the same silver bucket (what the merge job must not touch).
OTHER_DATABASE_FILE = "arn:aws:s3:::SilverBucket/other_db/orders/data/00000-0-a.parquet"
SILVER_TABLE_FILE = "arn:aws:s3:::SilverBucket/${GlueDatabaseName}/orders/data/00000-0-a.parquet"


@pytest.mark.parametrize("action", ["s3:GetObject", "s3:PutObject", "s3:DeleteObject"])
def test_the_merge_job_reads_writes_and_deletes_only_its_databases_tables(action: str) -> None:
    grants = [
        grant for grant in _s3_grants("GlueJobRole", action) if grant.startswith("arn:aws:s3:::SilverBucket")
    ]

    assert _may(grants, SILVER_TABLE_FILE)
    assert not _may(grants, OTHER_DATABASE_FILE)
    assert not _may(grants, "arn:aws:s3:::SilverBucket/orders/metadata/00001.metadata.json")
    assert grants == ["arn:aws:s3:::SilverBucket/${GlueDatabaseName}/*"]


def test_the_merge_job_lists_only_its_databases_folder() -> None:
    assert _s3_grants("GlueJobRole", "s3:ListBucket") == [
        "arn:aws:s3:::RawBucket",
        "arn:aws:s3:::SilverBucket",
    ]
    silver = [
        s
        for s in _allow_statements()
        if s.owner == "GlueJobRole" and "s3:ListBucket" in s.actions
        if s.resources == [{"Fn::GetAtt": ["SilverBucket", "Arn"]}]
    ]
    (listing,) = silver
    assert listing.statement["Condition"] == {
        "StringLike": {"s3:prefix": {"Fn::Sub": "${GlueDatabaseName}/*"}}
    }


def _log_arn(resource: Any) -> str:
    """A logs ARN of the template with the Glue log groups' names filled in (a group's ``Arn``
    attribute is its ARN followed by ``:*``)."""
    names = {
        group: resolve_sub(resources_of_type("AWS::Logs::LogGroup")[group]["Properties"]["LogGroupName"])
        for group in ("GlueJobErrorLogGroup", "GlueJobOutputLogGroup")
    }
    prefix = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:"
    if isinstance(resource, dict) and "Fn::GetAtt" in resource:
        group, attribute = resource["Fn::GetAtt"]
        assert attribute == "Arn"
        return f"{prefix}{names[group]}:*"
    text = resolve_sub(resource)
    for group, name in names.items():
        text = text.replace(f"${{{group}}}", name)
    return text


@pytest.mark.parametrize("role", ["GlueJobRole", "MaintenanceGlueJobRole"])
def test_the_glue_jobs_write_only_this_stacks_log_groups(role: str) -> None:
    grants = [
        _log_arn(resource)
        for statement in _allow_statements()
        if statement.owner == role and any(action.startswith("logs:") for action in statement.actions)
        for resource in statement.resources
    ]
    prefix = resolve_sub(
        resources_of_type("AWS::Glue::Job")["GlueJob"]["Properties"]["DefaultArguments"][
            "--custom-logGroup-prefix"
        ]
    )
    arn = "arn:${AWS::Partition}:logs:${AWS::Region}:${AWS::AccountId}:log-group:"

    for suffix in ("error", "output"):
        assert _may(grants, f"{arn}{prefix}/{suffix}")
        assert _may(grants, f"{arn}{prefix}/{suffix}:log-stream:jr_0123-driver")
    # Not the account's default groups, nor another stack's whose name starts with this one's.
    assert not _may(grants, f"{arn}/aws-glue/jobs/error:log-stream:jr_0123-driver")
    assert not _may(grants, f"{arn}/aws-glue/jobs/output")
    assert not _may(grants, f"{arn}{prefix}-other/error:log-stream:jr_0123-driver")
    assert not _may(grants, f"{arn}/aws-glue/crawlers:log-stream:c")


def test_the_verify_entry_point_starts_executions_of_the_table_run_machine_and_nothing_else() -> None:
    # Its handler makes the run id (icetide.run.verify): an operator allowed to invoke it starts
    # verify runs only (tests/handlers/test_handler_start_verify_run.py).
    function = "StartVerifyRunFunction"
    grants = [(s.actions, s.resources) for s in _allow_statements() if s.owner == function]

    assert grants == [(["states:StartExecution"], [{"Ref": "TableRunStateMachine"}])]
    assert icetide_functions()[function]["Properties"]["Handler"] == "handlers.start_verify_run.handler"
    assert template()["Outputs"]["StartVerifyRunFunctionName"]["Value"] == {"Ref": function}
    # No event invokes it: the operator does, synchronously.
    assert "Events" not in icetide_functions()[function]["Properties"]
