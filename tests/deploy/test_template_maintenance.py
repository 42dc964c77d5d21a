"""template.yaml's table maintenance (issue 14): Glue job, roles, state machine, schedule, alarm, outputs.

One maintenance execution per table and maintenance slot holds the merge runs' table lock while the
maintenance Glue job (maintain_silver.py) compacts the silver table, rewrites its delete files,
expires snapshots and removes orphan files. The job deletes silver files, so its role is checked
here as narrowly as the tests can say it: which objects it may delete, which catalog entries it may
change, and that nothing else in the stack may start the maintenance machine or its job.
"""

from __future__ import annotations

import fnmatch
import io
import json
import re
import zipfile
from typing import Any

import boto3
import pytest
from moto import mock_aws

import glue_code_publisher
from deploy.template_model import (
    RAW_BUCKET_LAYOUT,
    REPO_ROOT,
    SERVERLESS_FUNCTION,
    function_property,
    own_environment,
    policy_statements,
    resolve_sub,
    resources_of_type,
    template,
)
from icetide.settings import Settings
from icetide_glue.maintenance.job import OPTIONAL_ARGUMENTS, REQUIRED_ARGUMENTS

ASL_PATH = REPO_ROOT / "statemachine" / "table_maintenance.asl.json"
GLUE_ROLE = "MaintenanceGlueJobRole"
MACHINE = "MaintenanceStateMachine"
MAINTENANCE_FUNCTIONS = {
    "StartMaintenanceFunction": "handlers.start_maintenance.handler",
    "AcquireMaintenanceLockFunction": "handlers.acquire_maintenance_lock.handler",
    "RecordMaintenanceFunction": "handlers.record_maintenance.handler",
}
# GlueDatabaseName's default: grants written with ${GlueDatabaseName} are checked for this value.
DATABASE = "icetide_silver"
SILVER_TABLE_FILE = f"arn:aws:s3:::SilverBucket/{DATABASE}/orders/data/00000-1-a1b2.parquet"
TOMBSTONE_TABLE_FILE = (
    f"arn:aws:s3:::SilverBucket/{DATABASE}/orders__icetide_tombstones/metadata/v3.metadata.json"
)
BRONZE, MANIFESTS, GLUE_CODE = (RAW_BUCKET_LAYOUT[name] for name in ("Bronze", "Manifests", "GlueCode"))
# What maintain_silver.py reads besides its own arguments: the catalog the merge job writes.
ICEBERG_CONF = (
    "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
    "spark.sql.catalog.glue_catalog=org.apache.iceberg.spark.SparkCatalog",
    "spark.sql.catalog.glue_catalog.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog",
    "spark.sql.catalog.glue_catalog.io-impl=org.apache.iceberg.aws.s3.S3FileIO",
    "spark.sql.catalog.glue_catalog.warehouse=s3://${SilverBucket}/",
)
# The arguments that name one table or one run: the state machine passes them, never the job's defaults.
PER_RUN_ARGUMENTS = {
    "--target_table",
    "--run_id",
    "--report_uri",
    "--snapshot_retention_hours",
    "--min_snapshots",
    "--orphan_age_hours",
    "--min_input_files",
    "--delete_file_threshold",
    "--target_file_size_bytes",
}


def _properties(logical_id: str) -> dict[str, Any]:
    return dict(template()["Resources"][logical_id]["Properties"])


def _allowed(owner: str) -> list[dict[str, Any]]:
    return [s.statement for s in policy_statements() if s.owner == owner and s.statement["Effect"] == "Allow"]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _grants(owner: str, action: str) -> list[Any]:
    """The resources ``owner`` may ``action``, as written in the template."""
    return [
        resource
        for statement in _allowed(owner)
        if action in _as_list(statement["Action"])
        for resource in _as_list(statement["Resource"])
    ]


def _s3_grants(owner: str, action: str) -> list[str]:
    """As ``arn:aws:s3:::<Bucket>/<key pattern>``, with GlueDatabaseName's default filled in."""
    return [resolve_sub(grant).replace("${GlueDatabaseName}", DATABASE) for grant in _grants(owner, action)]


def _may(grants: list[str], arn: str) -> bool:
    return any(fnmatch.fnmatchcase(arn, grant) for grant in grants)


def _actions(owner: str) -> set[str]:
    return {action for statement in _allowed(owner) for action in _as_list(statement["Action"])}


# --- the Glue job -------------------------------------------------------------------------------


def test_maintenance_job_is_glue_5_1_with_the_merge_jobs_iceberg_catalog() -> None:
    job = _properties("MaintenanceGlueJob")
    merge_job = _properties("GlueJob")
    arguments = job["DefaultArguments"]
    conf = arguments["--conf"]["Fn::Sub"]

    assert job["GlueVersion"] == "5.1"
    assert job["Command"]["Name"] == "glueetl"
    assert arguments["--datalake-formats"] == "iceberg"
    assert arguments["--catalog"] == "glue_catalog"
    for setting in ICEBERG_CONF:
        assert setting in conf, setting
    # Maintenance must see exactly the tables the merges write.
    assert conf == merge_job["DefaultArguments"]["--conf"]["Fn::Sub"]
    assert arguments["--catalog"] == merge_job["DefaultArguments"]["--catalog"]


def test_maintenance_job_runs_under_its_own_role_and_the_stacks_security_configuration() -> None:
    job = _properties("MaintenanceGlueJob")

    assert job["Role"] == {"Fn::GetAtt": [GLUE_ROLE, "Arn"]}
    assert _properties("GlueJob")["Role"] == {"Fn::GetAtt": ["GlueJobRole", "Arn"]}
    assert job["SecurityConfiguration"] == {"Ref": "GlueSecurityConfiguration"}
    # The state machine decides about retries, while it holds the table's lock.
    assert job["MaxRetries"] == 0


def test_maintenance_job_size_and_timeout_are_parameters_with_small_defaults() -> None:
    job = _properties("MaintenanceGlueJob")
    parameters = template()["Parameters"]

    assert job["WorkerType"] == {"Ref": "MaintenanceWorkerType"}
    assert job["NumberOfWorkers"] == {"Ref": "MaintenanceNumberOfWorkers"}
    assert job["Timeout"] == {"Ref": "MaintenanceJobTimeoutMinutes"}
    assert job["ExecutionProperty"]["MaxConcurrentRuns"] == {"Ref": "MaintenanceMaxConcurrentRuns"}
    assert parameters["MaintenanceWorkerType"]["Default"] == "G.1X"
    assert parameters["MaintenanceNumberOfWorkers"]["Default"] == 2


def test_maintenance_job_never_outlives_its_state() -> None:
    # The run unlocks the table once the Glue state ends; a job still running could then commit
    # while a merge runs.
    states = json.loads(ASL_PATH.read_text(encoding="utf-8"))["States"]
    (glue_state,) = [
        s for s in states.values() if s.get("Resource") == "arn:aws:states:::glue:startJobRun.sync"
    ]
    parameter = template()["Parameters"]["MaintenanceJobTimeoutMinutes"]

    assert parameter["MaxValue"] * 60 < glue_state["TimeoutSeconds"]
    assert parameter["Default"] <= parameter["MaxValue"]


def test_maintenance_job_code_is_maintain_silver_py_published_with_the_merge_jobs_package() -> None:
    job = _properties("MaintenanceGlueJob")

    assert (REPO_ROOT / "glue_jobs" / "maintain_silver.py").is_file()
    assert job["Command"]["ScriptLocation"] == {"Fn::GetAtt": ["GlueCode", "MaintenanceScriptLocation"]}
    assert job["DefaultArguments"]["--extra-py-files"] == {"Fn::GetAtt": ["GlueCode", "ExtraPyFiles"]}


def _layer_zip(files: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, content in files.items():
            archive.writestr(name, content)
    return buffer.getvalue()


def test_the_glue_code_publisher_publishes_the_maintenance_script_the_job_names() -> None:
    # The job's ScriptLocation is an attribute of GlueCode: the publisher must return it, and it
    # must name maintain_silver.py as published from the Glue code layer.
    resource, attribute = _properties("MaintenanceGlueJob")["Command"]["ScriptLocation"]["Fn::GetAtt"]
    assert resource == "GlueCode"
    glue_layer = _layer_zip(
        {
            "python/bronze_to_silver.py": b"print('merge')\n",
            "python/maintain_silver.py": b"print('maintain')\n",
            "python/icetide_glue/__init__.py": b"",
        }
    )
    contracts_layer = _layer_zip({"python/icetide_contracts/__init__.py": b""})

    with mock_aws():
        s3 = boto3.client("s3", region_name="eu-west-1")
        s3.create_bucket(Bucket="raw", CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        locations, _folder = glue_code_publisher.publish(s3, "raw", GLUE_CODE, glue_layer, contracts_layer)
        assert attribute in locations, f"GlueCode returns no {attribute}: {sorted(locations)}"
        location = locations[attribute]
        assert location.endswith("/maintain_silver.py")
        key = location.removeprefix("s3://raw/")
        assert s3.get_object(Bucket="raw", Key=key)["Body"].read() == b"print('maintain')\n"


def test_maintenance_default_arguments_are_glue_settings_or_arguments_the_job_parses() -> None:
    defaults = set(_properties("MaintenanceGlueJob")["DefaultArguments"])
    parsed = {f"--{name}" for name in (*REQUIRED_ARGUMENTS, *OPTIONAL_ARGUMENTS)}
    glue_own = {
        "--job-language",
        "--datalake-formats",
        "--conf",
        "--extra-py-files",
        "--enable-metrics",
        "--enable-observability-metrics",
        "--custom-logGroup-prefix",
    }

    assert defaults - glue_own - parsed == set()
    # Nothing table- or run-specific: one job serves every table.
    assert defaults & PER_RUN_ARGUMENTS == set()
    assert parsed >= PER_RUN_ARGUMENTS


# --- the Glue job's role ------------------------------------------------------------------------


def test_maintenance_role_deletes_only_silver_table_files_of_this_stacks_database() -> None:
    deletes = _s3_grants(GLUE_ROLE, "s3:DeleteObject")

    assert _may(deletes, SILVER_TABLE_FILE)
    assert _may(deletes, TOMBSTONE_TABLE_FILE)
    for elsewhere in (
        "arn:aws:s3:::SilverBucket/other_database/orders/data/00000-1-a1b2.parquet",
        f"arn:aws:s3:::RawBucket/{BRONZE}/orders/orders-20261121T0700Z/LOAD00000001.parquet",
        f"arn:aws:s3:::RawBucket/{MANIFESTS}/orders/orders-20261121T0700Z.json",
        f"arn:aws:s3:::RawBucket/{GLUE_CODE}/0123456789abcdef/maintain_silver.py",
        "arn:aws:s3:::AccessLogBucket/silver/2026-11-21-07-00-00-ABCDEF",
    ):
        assert not _may(deletes, elsewhere), elsewhere


def test_maintenance_role_writes_silver_files_and_only_its_report_in_the_raw_bucket() -> None:
    puts = _s3_grants(GLUE_ROLE, "s3:PutObject")

    assert _may(puts, SILVER_TABLE_FILE)
    assert _may(
        puts, f"arn:aws:s3:::RawBucket/{MANIFESTS}/orders/orders-maintain-20261121T0000Z.maintenance.json"
    )
    assert not _may(puts, f"arn:aws:s3:::RawBucket/{BRONZE}/orders/x.parquet")
    assert not _may(puts, f"arn:aws:s3:::RawBucket/{GLUE_CODE}/0123456789abcdef/maintain_silver.py")
    # Not a run manifest: CommitWatermark trusts those.
    assert not _may(puts, f"arn:aws:s3:::RawBucket/{MANIFESTS}/orders/orders-20261121T0700Z.json")
    assert [grant for grant in puts if grant.startswith("arn:aws:s3:::RawBucket")] == [
        f"arn:aws:s3:::RawBucket/{MANIFESTS}/*.maintenance.json"
    ]


def test_maintenance_role_reads_its_code_and_silver_but_no_bronze_file() -> None:
    reads = _s3_grants(GLUE_ROLE, "s3:GetObject")

    assert _may(reads, f"arn:aws:s3:::RawBucket/{GLUE_CODE}/0123456789abcdef/maintain_silver.py")
    assert _may(reads, f"arn:aws:s3:::RawBucket/{GLUE_CODE}/0123456789abcdef/icetide_glue.zip")
    assert _may(reads, SILVER_TABLE_FILE)
    assert not _may(
        reads, f"arn:aws:s3:::RawBucket/{BRONZE}/orders/orders-20261121T0700Z/LOAD00000001.parquet"
    )


def test_maintenance_role_lists_only_the_databases_folder_of_the_silver_bucket() -> None:
    (listing,) = [s for s in _allowed(GLUE_ROLE) if "s3:ListBucket" in _as_list(s["Action"])]

    assert listing["Resource"] == {"Fn::GetAtt": ["SilverBucket", "Arn"]}
    assert listing["Condition"] == {"StringLike": {"s3:prefix": {"Fn::Sub": "${GlueDatabaseName}/*"}}}


def test_the_database_location_is_where_the_maintenance_role_may_delete() -> None:
    # Iceberg's GlueCatalog puts a new table at <database LocationUri>/<table>: the grant above
    # covers the tables only as long as the database keeps this location.
    database = _properties("GlueDatabase")["DatabaseInput"]

    assert database["Name"] == {"Ref": "GlueDatabaseName"}
    assert database["LocationUri"] == {"Fn::Sub": "s3://${SilverBucket}/${GlueDatabaseName}"}


def test_maintenance_role_reads_and_updates_only_this_stacks_database_tables() -> None:
    catalog = [s for s in _allowed(GLUE_ROLE) if any(a.startswith("glue:") for a in _as_list(s["Action"]))]
    arn = "arn:${AWS::Partition}:glue:${AWS::Region}:${AWS::AccountId}"
    updates = [s for s in catalog if "glue:CreateTable" not in _as_list(s["Action"])]

    assert {a for s in updates for a in _as_list(s["Action"])} == {
        "glue:GetDatabase",
        "glue:GetTable",
        "glue:UpdateTable",
    }
    assert {resolve_sub(r) for s in updates for r in _as_list(s["Resource"])} == {
        f"{arn}:catalog",
        f"{arn}:database/${{GlueDatabaseName}}",
        f"{arn}:table/${{GlueDatabaseName}}/*",
    }


def test_maintenance_role_creates_only_run_ledgers() -> None:
    # The first maintenance of a table creates <table>__icetide_runs (icetide_glue.commit.run_ledger).
    creates = [s for s in _allowed(GLUE_ROLE) if "glue:CreateTable" in _as_list(s["Action"])]
    arn = "arn:${AWS::Partition}:glue:${AWS::Region}:${AWS::AccountId}"

    assert [_as_list(s["Action"]) for s in creates] == [["glue:CreateTable"]]
    assert {resolve_sub(r) for s in creates for r in _as_list(s["Resource"])} == {
        f"{arn}:catalog",
        f"{arn}:database/${{GlueDatabaseName}}",
        f"{arn}:table/${{GlueDatabaseName}}/*__icetide_runs",
    }


def test_maintenance_role_holds_no_statement_the_merge_roles_tests_forbid() -> None:
    for statement in _allowed(GLUE_ROLE):
        actions = _as_list(statement["Action"])
        assert not any("*" in action for action in actions), statement["Sid"]
        if "*" in _as_list(statement["Resource"]):
            # The one action without a resource type, scoped by its namespace.
            assert actions == ["cloudwatch:PutMetricData"], statement["Sid"]
            assert statement["Condition"] == {"StringEquals": {"cloudwatch:namespace": "Glue"}}
    # Creating or dropping tables, DMS, passing roles: the merge job's business or nobody's.
    # (CreateTable: the run ledger only, checked above.)
    forbidden = re.compile(r"(glue:(Create(?!Table$)|Delete)|dms:|iam:|states:)")
    assert not {a for a in _actions(GLUE_ROLE) if forbidden.match(a)}


# --- the functions ------------------------------------------------------------------------------


@pytest.mark.parametrize(("function_name", "handler"), sorted(MAINTENANCE_FUNCTIONS.items()))
def test_maintenance_function_is_deployed_with_its_handler(function_name: str, handler: str) -> None:
    assert function_property(function_name, "Handler") == handler
    assert function_property(function_name, "CodeUri") == "functions/"


def test_start_maintenance_can_start_only_the_maintenance_state_machine() -> None:
    owner = "StartMaintenanceFunction"

    assert _grants(owner, "states:StartExecution") == [{"Ref": MACHINE}]
    assert [resolve_sub(r) for r in _grants(owner, "states:DescribeExecution")] == [
        "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${MaintenanceStateMachine.Name}:*"
    ]
    assert _actions(owner) == {"dynamodb:Scan", "states:StartExecution", "states:DescribeExecution"}
    assert _grants(owner, "dynamodb:Scan") == [{"Fn::GetAtt": ["ControlTable", "Arn"]}]


def test_nothing_else_may_start_the_maintenance_state_machine() -> None:
    starters = {
        s.owner
        for s in policy_statements()
        if s.statement["Effect"] == "Allow"
        and "states:StartExecution" in s.actions
        and {"Ref": MACHINE} in s.resources
    }

    assert starters == {"StartMaintenanceFunction"}


def test_start_maintenance_gets_the_machine_its_slot_and_the_lock_age() -> None:
    environment = own_environment("StartMaintenanceFunction")
    parameter = template()["Parameters"]["MaintenanceSlotMinutes"]
    field = Settings.model_fields["maintenance_slot_minutes"]
    bounds = {type(rule).__name__: rule for rule in field.metadata}

    assert environment == {
        "MAINTENANCE_STATE_MACHINE_ARN": {"Ref": MACHINE},
        "MAINTENANCE_SLOT_MINUTES": {"Ref": "MaintenanceSlotMinutes"},
        "LOCK_STALE_AFTER_SECONDS": {"Ref": "LockStaleAfterSeconds"},
    }
    assert parameter["Default"] == 1440
    assert parameter["Default"] == field.default
    assert (parameter["MinValue"], parameter["MaxValue"]) == (bounds["Ge"].ge, bounds["Le"].le)


def test_acquire_maintenance_lock_gets_what_acquire_lock_gets_for_the_lock_and_the_report() -> None:
    environment = own_environment("AcquireMaintenanceLockFunction")
    merge = own_environment("AcquireLockFunction")

    assert set(environment) == {"LOCK_STALE_AFTER_SECONDS", "RAW_BUCKET", "MANIFEST_PREFIX", "GLUE_DATABASE"}
    for name in environment:
        assert environment[name] == merge[name], name
    assert _actions("AcquireMaintenanceLockFunction") == {"dynamodb:GetItem", "dynamodb:UpdateItem"}
    assert _grants("AcquireMaintenanceLockFunction", "dynamodb:UpdateItem") == [
        {"Fn::GetAtt": ["ControlTable", "Arn"]}
    ]


def test_record_maintenance_reads_only_reports_and_writes_only_the_control_item() -> None:
    owner = "RecordMaintenanceFunction"

    assert _s3_grants(owner, "s3:GetObject") == [f"arn:aws:s3:::RawBucket/{MANIFESTS}/*"]
    assert _grants(owner, "dynamodb:UpdateItem") == [{"Fn::GetAtt": ["ControlTable", "Arn"]}]
    # ListBucket only turns a missing report into NoSuchKey; no write, no delete in S3.
    assert _actions(owner) == {"s3:GetObject", "s3:ListBucket", "dynamodb:UpdateItem"}


# --- the state machine --------------------------------------------------------------------------


def test_maintenance_state_machine_is_the_asl_file_with_its_placeholders_filled() -> None:
    machine = _properties(MACHINE)
    placeholders = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", ASL_PATH.read_text(encoding="utf-8")))

    assert machine["DefinitionUri"] == "statemachine/table_maintenance.asl.json"
    assert machine["Type"] == "STANDARD"
    assert set(machine["DefinitionSubstitutions"]) == placeholders
    assert machine["DefinitionSubstitutions"] == {
        "AcquireMaintenanceLockFunctionArn": {"Fn::GetAtt": ["AcquireMaintenanceLockFunction", "Arn"]},
        "RecordMaintenanceFunctionArn": {"Fn::GetAtt": ["RecordMaintenanceFunction", "Arn"]},
        "MaintenanceGlueJobName": {"Ref": "MaintenanceGlueJob"},
        "NotificationTopicArn": {"Ref": "NotificationTopic"},
    }


def test_maintenance_state_machine_may_invoke_only_its_two_functions() -> None:
    assert _actions(MACHINE) >= {"lambda:InvokeFunction"}
    assert sorted(r["Fn::GetAtt"][0] for r in _grants(MACHINE, "lambda:InvokeFunction")) == [
        "AcquireMaintenanceLockFunction",
        "RecordMaintenanceFunction",
    ]


def test_maintenance_state_machine_may_run_only_the_maintenance_glue_job() -> None:
    glue = [s for s in _allowed(MACHINE) if any(a.startswith("glue:") for a in _as_list(s["Action"]))]

    assert {a for s in glue for a in _as_list(s["Action"])} == {
        "glue:StartJobRun",
        "glue:GetJobRun",
        "glue:GetJobRuns",
        "glue:BatchStopJobRun",
    }
    assert [resolve_sub(r) for s in glue for r in _as_list(s["Resource"])] == [
        "arn:${AWS::Partition}:glue:${AWS::Region}:${AWS::AccountId}:job/${MaintenanceGlueJob}"
    ]


def test_maintenance_state_machine_notifies_the_stacks_topic_and_logs_like_the_merge_machine() -> None:
    machine = _properties(MACHINE)
    merge = _properties("TableRunStateMachine")
    log_group = _properties("MaintenanceStateMachineLogGroup")

    assert _grants(MACHINE, "sns:Publish") == [{"Ref": "NotificationTopic"}]
    assert _grants(MACHINE, "kms:GenerateDataKey") == [{"Fn::GetAtt": ["IcetideKey", "Arn"]}]
    assert machine["Tracing"] == {"Enabled": True} == merge["Tracing"]
    assert machine["Logging"]["Level"] == "ERROR"
    assert machine["Logging"]["IncludeExecutionData"] is False
    assert machine["Logging"]["Destinations"] == [
        {
            "CloudWatchLogsLogGroup": {
                "LogGroupArn": {"Fn::GetAtt": ["MaintenanceStateMachineLogGroup", "Arn"]}
            }
        }
    ]
    assert log_group["KmsKeyId"] == {"Fn::GetAtt": ["IcetideKey", "Arn"]}
    assert log_group["RetentionInDays"] == {"Ref": "LogRetentionDays"}
    assert log_group["LogGroupName"]["Fn::Sub"].startswith("/aws/vendedlogs/states/")


def test_the_merge_state_machine_cannot_touch_maintenance() -> None:
    merge = "TableRunStateMachine"
    invocable = {r["Fn::GetAtt"][0] for r in _grants(merge, "lambda:InvokeFunction")}

    assert invocable & set(MAINTENANCE_FUNCTIONS) == set()
    assert [resolve_sub(r) for r in _grants(merge, "glue:StartJobRun")] == [
        "arn:${AWS::Partition}:glue:${AWS::Region}:${AWS::AccountId}:job/${GlueJob}"
    ]


# --- schedule, alarm, outputs -------------------------------------------------------------------


def _maintenance_schedule() -> dict[str, Any]:
    events = resources_of_type(SERVERLESS_FUNCTION)["StartMaintenanceFunction"]["Properties"]["Events"]
    (schedule,) = events.values()
    assert schedule["Type"] == "Schedule"
    return dict(schedule["Properties"])


def test_maintenance_schedule_is_daily_by_default_and_can_be_switched_off() -> None:
    schedule = _maintenance_schedule()
    parameters = template()["Parameters"]

    assert schedule["Schedule"] == {"Ref": "MaintenanceSchedule"}
    assert schedule["State"] == {"Ref": "MaintenanceScheduleState"}
    assert parameters["MaintenanceSchedule"]["Default"] == "cron(0 3 * * ? *)"
    assert set(parameters["MaintenanceScheduleState"]["AllowedValues"]) == {"ENABLED", "DISABLED"}
    assert parameters["MaintenanceScheduleState"]["Default"] == "ENABLED"


def test_maintenance_schedule_default_is_an_eventbridge_cron() -> None:
    # `sam validate --lint` does not check cron expressions (docs: field notes).
    expression = template()["Parameters"]["MaintenanceSchedule"]["Default"]
    match = re.fullmatch(r"cron\((\S+) (\S+) (\S+) (\S+) (\S+) (\S+)\)", expression)

    assert match, expression
    day_of_month, day_of_week = match.group(3), match.group(5)
    # EventBridge: exactly one of day-of-month and day-of-week is "?".
    assert [day_of_month, day_of_week].count("?") == 1


@pytest.mark.tools
def test_the_maintenance_schedule_rule_alone_invokes_start_maintenance(transformed: dict[str, Any]) -> None:
    target = {"Fn::GetAtt": ["StartMaintenanceFunction", "Arn"]}
    rules = {
        name: resource["Properties"]
        for name, resource in transformed.items()
        if resource["Type"] == "AWS::Events::Rule"
        and any(t["Arn"] == target for t in resource["Properties"]["Targets"])
    }
    permissions = [
        resource["Properties"]
        for resource in transformed.values()
        if resource["Type"] == "AWS::Lambda::Permission"
        and resource["Properties"]["FunctionName"] == {"Ref": "StartMaintenanceFunction"}
    ]

    ((rule_name, rule),) = rules.items()
    (permission,) = permissions
    assert rule["ScheduleExpression"] == {"Ref": "MaintenanceSchedule"}
    assert rule["State"] == {"Ref": "MaintenanceScheduleState"}
    assert permission["Principal"] == "events.amazonaws.com"
    assert permission["SourceArn"] == {"Fn::GetAtt": [rule_name, "Arn"]}


def test_failed_maintenance_raises_an_alarm_on_the_stacks_alarm_topic() -> None:
    alarm = _properties("FailedMaintenanceAlarm")

    assert alarm["Namespace"] == "AWS/States"
    assert alarm["MetricName"] == "ExecutionsFailed"
    assert alarm["Dimensions"] == [{"Name": "StateMachineArn", "Value": {"Ref": MACHINE}}]
    assert alarm["ComparisonOperator"] == "GreaterThanOrEqualToThreshold"
    assert alarm["Threshold"] == 1
    # Alarms have their own, unfiltered topic (test_template_operations.py).
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


def test_outputs_name_the_maintenance_state_machine_and_job() -> None:
    outputs = template()["Outputs"]

    assert outputs["MaintenanceStateMachineArn"]["Value"] == {"Ref": MACHINE}
    assert outputs["MaintenanceGlueJobName"]["Value"] == {"Ref": "MaintenanceGlueJob"}
    assert outputs["StartMaintenanceFunctionName"]["Value"] == {"Ref": "StartMaintenanceFunction"}


def test_the_operate_page_explains_maintenance_and_its_parameters() -> None:
    page = (REPO_ROOT / "docs" / "operate.md").read_text(encoding="utf-8")
    match = re.search(r"^## Table maintenance\n(.*?)(?=^## |\Z)", page, flags=re.MULTILINE | re.DOTALL)

    assert match, "docs/operate.md has a '## Table maintenance' section"
    section = match.group(1)
    for name in (
        "MaintenanceSchedule",
        "MaintenanceScheduleState",
        "snapshotRetentionHours",
        "orphanAgeHours",
    ):
        assert name in section, name
