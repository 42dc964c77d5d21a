"""template.yaml against the code it deploys: handlers, environment, state machine, Glue job arguments."""

from __future__ import annotations

import importlib
import json
import re
from collections.abc import Iterator
from typing import Any

import pytest

from deploy.settings_reads import SETTINGS_FIELDS, settings_read_by
from deploy.template_model import (
    RAW_BUCKET_LAYOUT,
    REPO_ROOT,
    SERVERLESS_FUNCTION,
    custom_resource_functions,
    function_property,
    global_environment,
    icetide_functions,
    own_environment,
    policy_statements,
    resolve_sub,
    resources_of_type,
    template,
)
from icetide.run.plan import CONTINUOUS_FOLDER
from icetide.run.triggers import continuous_prefix
from icetide.settings import Settings
from icetide_glue.arguments import OPTIONAL_ARGUMENTS, REQUIRED_ARGUMENTS

FUNCTIONS = sorted(icetide_functions())
CUSTOM_RESOURCE_FUNCTIONS = sorted(custom_resource_functions())
ASL_PATH = REPO_ROOT / "statemachine" / "table_run.asl.json"
SUBSTITUTIONS_PATH = REPO_ROOT / "statemachine" / "substitutions.json"
# Powertools reads these itself (docs/contracts.md, "Environment variables").
POWERTOOLS_VARIABLES = {"POWERTOOLS_SERVICE_NAME", "POWERTOOLS_METRICS_NAMESPACE"}
# Arguments Glue itself interprets ("Using job parameters in AWS Glue jobs", AWS Glue developer
# guide); the job script never sees them as its own.
GLUE_SPECIAL_PARAMETERS = {
    "--job-language",
    "--datalake-formats",
    "--conf",
    "--extra-py-files",
    "--extra-jars",
    "--additional-python-modules",
    "--python-modules-installer-option",
    "--enable-metrics",
    "--enable-observability-metrics",
    "--enable-spark-ui",
    "--spark-event-logs-path",
    "--enable-job-insights",
    "--enable-glue-datacatalog",
    "--enable-auto-scaling",
    "--TempDir",
    "--job-bookmark-option",
    "--enable-continuous-cloudwatch-log",
    "--user-jars-first",
    # Glue 5: the jobs log to <prefix>/error and <prefix>/output (test_template_operations.py).
    "--custom-logGroup-prefix",
}


def _handler_module(function_name: str) -> str:
    module, _, _ = function_property(function_name, "Handler").rpartition(".")
    return module


@pytest.mark.parametrize("function_name", FUNCTIONS)
def test_function_handler_resolves_to_a_callable_in_the_one_code_uri(function_name: str) -> None:
    assert function_property(function_name, "CodeUri") == "functions/"
    module_name, _, attribute = function_property(function_name, "Handler").rpartition(".")
    assert module_name.startswith("handlers."), f"{function_name}: handlers live in functions/handlers/"

    handler = getattr(importlib.import_module(module_name), attribute, None)

    assert callable(handler), f"{function_name}: {module_name}.{attribute} is not a callable"


def test_the_custom_resource_functions_are_the_glue_code_publisher_and_the_run_bounds_check() -> None:
    assert CUSTOM_RESOURCE_FUNCTIONS == ["GlueCodePublisherFunction", "RunBoundsFunction"]


@pytest.mark.parametrize("function_name", CUSTOM_RESOURCE_FUNCTIONS)
def test_custom_resource_handler_is_a_module_in_its_own_code_uri_under_deploy(function_name: str) -> None:
    code_uri = function_property(function_name, "CodeUri")
    module_name, _, attribute = function_property(function_name, "Handler").rpartition(".")

    assert re.fullmatch(r"deploy/[a-z_]+/", code_uri), f"{function_name}: {code_uri}"
    assert (REPO_ROOT / code_uri / f"{module_name.replace('.', '/')}.py").is_file()
    # `sam build` installs what the module imports beyond the runtime's boto3 from here.
    assert (REPO_ROOT / code_uri / "requirements.txt").is_file()
    assert callable(getattr(importlib.import_module(module_name), attribute, None))


def _keys(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _keys(value)
    elif isinstance(node, list):
        for item in node:
            yield from _keys(item)


def test_template_holds_no_inline_program_code() -> None:
    # Code inside the template would escape ruff, mypy and the tests' normal imports.
    assert {"ZipFile", "InlineCode"} & set(_keys(template())) == set()


def test_every_handler_module_is_deployed_once() -> None:
    on_disk = {
        f"handlers.{path.stem}"
        for path in (REPO_ROOT / "functions" / "handlers").glob("*.py")
        if not path.stem.startswith("_")
    }
    deployed = [_handler_module(name) for name in FUNCTIONS]

    assert sorted(deployed) == sorted(on_disk)


@pytest.mark.parametrize("function_name", FUNCTIONS)
def test_function_sets_every_variable_its_handler_reads(function_name: str) -> None:
    needed = {field.upper() for field in settings_read_by(_handler_module(function_name))}
    available = set(global_environment()) | set(own_environment(function_name))

    assert needed - available == set(), f"{function_name} lacks variables its handler reads"


@pytest.mark.parametrize("function_name", FUNCTIONS)
def test_function_sets_no_variable_its_handler_ignores(function_name: str) -> None:
    needed = {field.upper() for field in settings_read_by(_handler_module(function_name))}

    assert set(own_environment(function_name)) - needed == set()


def test_every_variable_the_template_sets_is_a_setting_or_a_powertools_variable() -> None:
    known = {field.upper() for field in SETTINGS_FIELDS} | POWERTOOLS_VARIABLES
    set_anywhere = set(global_environment()).union(*(own_environment(name) for name in FUNCTIONS))

    assert set_anywhere - known == set()


def _state_machine() -> dict[str, Any]:
    # The table-run machine; the maintenance machine has its tests in test_template_maintenance.py.
    return dict(resources_of_type("AWS::Serverless::StateMachine")["TableRunStateMachine"]["Properties"])


def test_definition_substitutions_match_the_placeholders_of_the_asl() -> None:
    machine = _state_machine()
    assert machine["DefinitionUri"] == "statemachine/table_run.asl.json"
    placeholders = set(re.findall(r"\$\{([A-Za-z0-9_]+)\}", ASL_PATH.read_text(encoding="utf-8")))

    assert set(machine["DefinitionSubstitutions"]) == placeholders


def test_definition_substitutions_use_the_published_keys() -> None:
    published = json.loads(SUBSTITUTIONS_PATH.read_text(encoding="utf-8"))
    # One file lists the keys of both machines (the local stack fills both definitions from it).
    deployed = {
        key
        for machine in resources_of_type("AWS::Serverless::StateMachine").values()
        for key in machine["Properties"]["DefinitionSubstitutions"]
    }

    assert deployed == set(published)


def test_each_function_substitution_names_the_function_of_its_handler() -> None:
    # "<Name>FunctionArn" belongs to handlers.<name> (docs/contracts.md, "State machine").
    wiring = {
        key.removesuffix("FunctionArn"): value["Fn::GetAtt"]
        for key, value in _state_machine()["DefinitionSubstitutions"].items()
        if key.endswith("FunctionArn")
    }

    for name, (function_name, attribute) in wiring.items():
        module = _handler_module(function_name).removeprefix("handlers.")
        assert "".join(part.title() for part in module.split("_")) == name, function_name
        assert attribute == "Arn"


def test_state_machine_may_invoke_exactly_the_functions_it_is_given() -> None:
    machine = _state_machine()
    substituted = {
        value["Fn::GetAtt"][0]
        for value in machine["DefinitionSubstitutions"].values()
        if isinstance(value, dict) and "Fn::GetAtt" in value
    }
    invocable = {
        resource["Fn::GetAtt"][0]
        for statement in policy_statements()
        if statement.owner == "TableRunStateMachine" and statement.actions == ["lambda:InvokeFunction"]
        for resource in statement.resources
    }

    assert invocable == substituted
    # Every run function except the three that start the executions, the maintenance functions, and
    # the two EventBridge invokes after an execution ends (cleanup and the sweep).
    assert substituted == set(FUNCTIONS) - {
        "StartWorkflowFunction",
        "StartOnNewFilesFunction",
        "StartVerifyRunFunction",
        "StartMaintenanceFunction",
        "AcquireMaintenanceLockFunction",
        "RecordMaintenanceFunction",
        "CleanUpExecutionFunction",
        "SweepDmsResourcesFunction",
    }


def _continuous_files_rule() -> dict[str, Any]:
    return dict(resources_of_type("AWS::Events::Rule")["ContinuousFilesRule"]["Properties"])


def test_new_files_below_continuous_folders_of_the_raw_bucket_start_runs() -> None:
    pattern = _continuous_files_rule()["EventPattern"]
    (key_filter,) = pattern["detail"]["object"]["key"]

    assert pattern["source"] == ["aws.s3"]
    assert pattern["detail-type"] == ["Object Created"]
    assert pattern["detail"]["bucket"] == {"name": [{"Ref": "RawBucket"}]}
    # The prefix the handler itself checks (icetide.run.triggers), from the same layout mapping.
    assert resolve_sub(key_filter["prefix"]) == continuous_prefix(RAW_BUCKET_LAYOUT["Bronze"])
    assert RAW_BUCKET_LAYOUT["Continuous"] == CONTINUOUS_FOLDER
    assert own_environment("StartOnNewFilesFunction")["BRONZE_PREFIX"] == {
        "Fn::FindInMap": ["RawBucketLayout", "Prefix", "Bronze"]
    }
    assert own_environment("StartOnNewFilesFunction")["RAW_BUCKET"] == {"Ref": "RawBucket"}


def test_object_events_reach_start_on_new_files_through_its_queue_in_batches() -> None:
    (target,) = _continuous_files_rule()["Targets"]
    (mapping,) = resources_of_type("AWS::Lambda::EventSourceMapping").values()
    queue = resources_of_type("AWS::SQS::Queue")["ContinuousFilesQueue"]["Properties"]
    function_timeout = function_property("StartOnNewFilesFunction", "Timeout")
    window = mapping["Properties"]["MaximumBatchingWindowInSeconds"]

    assert target["Arn"] == {"Fn::GetAtt": ["ContinuousFilesQueue", "Arn"]}
    assert "Events" not in resources_of_type(SERVERLESS_FUNCTION)["StartOnNewFilesFunction"]["Properties"]
    assert mapping["Properties"]["FunctionName"] == {"Ref": "StartOnNewFilesFunction"}
    assert mapping["Properties"]["EventSourceArn"] == {"Fn::GetAtt": ["ContinuousFilesQueue", "Arn"]}
    # One scan per batch of up to 1000 events gathered for up to a minute, at most two at a time.
    assert (mapping["Properties"]["BatchSize"], window) == (1000, 60)
    assert mapping["Properties"]["ScalingConfig"] == {"MaximumConcurrency": 2}
    # The handler answers with the records to retry (batchItemFailures).
    assert mapping["Properties"]["FunctionResponseTypes"] == ["ReportBatchItemFailures"]
    # Lambda's advice: at least six times the function's timeout plus the batching window.
    assert queue["VisibilityTimeout"] >= 6 * function_timeout + window
    assert queue["RedrivePolicy"]["deadLetterTargetArn"] == {"Fn::GetAtt": ["FunctionDeadLetterQueue", "Arn"]}


def test_the_event_trigger_can_be_switched_off() -> None:
    parameters = template()["Parameters"]
    condition = template()["Conditions"]["ContinuousEventTriggerEnabled"]

    assert _continuous_files_rule()["State"] == {
        "Fn::If": ["ContinuousEventTriggerEnabled", "ENABLED", "DISABLED"]
    }
    assert condition == {"Fn::Equals": [{"Ref": "ContinuousEventTrigger"}, "Enabled"]}
    assert parameters["ContinuousEventTrigger"]["AllowedValues"] == ["Enabled", "Disabled"]
    assert parameters["ContinuousEventTrigger"]["Default"] == "Enabled"


def test_event_slot_parameter_has_the_bounds_and_default_of_the_setting() -> None:
    parameter = template()["Parameters"]["EventSlotMinutes"]
    field = Settings.model_fields["event_slot_minutes"]
    bounds = {type(rule).__name__: rule for rule in field.metadata}

    assert own_environment("StartOnNewFilesFunction")["EVENT_SLOT_MINUTES"] == {"Ref": "EventSlotMinutes"}
    assert parameter["Default"] == field.default
    assert (parameter["MinValue"], parameter["MaxValue"]) == (bounds["Ge"].ge, bounds["Le"].le)


def _glue_job() -> dict[str, Any]:
    # The merge job; the maintenance job has its tests in test_template_maintenance.py.
    return dict(resources_of_type("AWS::Glue::Job")["GlueJob"]["Properties"])


def _glue_task_arguments() -> dict[str, Any]:
    states = json.loads(ASL_PATH.read_text(encoding="utf-8"))["States"]
    (task,) = [s for s in states.values() if str(s.get("Resource", "")).endswith(":glue:startJobRun.sync")]
    return dict(task.get("Parameters", task.get("Arguments", {}))["Arguments"])


def test_glue_default_arguments_are_glue_settings_or_arguments_the_job_parses() -> None:
    parsed = {f"--{name}" for name in (*REQUIRED_ARGUMENTS, *OPTIONAL_ARGUMENTS)}
    defaults = set(_glue_job()["DefaultArguments"])

    assert defaults - GLUE_SPECIAL_PARAMETERS - parsed == set()
    # --warehouse selects a local file-system catalog: on Glue the job must use the Glue catalog.
    assert "--warehouse" not in defaults


def test_state_machine_passes_every_required_glue_argument_and_only_parsed_ones() -> None:
    parsed = {f"--{name}" for name in (*REQUIRED_ARGUMENTS, *OPTIONAL_ARGUMENTS)}
    passed = {key.removesuffix(".$") for key in _glue_task_arguments()}

    assert passed <= parsed
    assert {f"--{name}" for name in REQUIRED_ARGUMENTS} <= passed


def test_glue_job_is_glue_5_1_with_iceberg_on_the_glue_catalog_in_the_silver_bucket() -> None:
    job = _glue_job()
    arguments = job["DefaultArguments"]
    conf = arguments["--conf"]["Fn::Sub"]
    catalog = arguments["--catalog"]

    assert job["GlueVersion"] == "5.1"
    assert arguments["--datalake-formats"] == "iceberg"
    assert f"spark.sql.catalog.{catalog}=org.apache.iceberg.spark.SparkCatalog" in conf
    assert f"spark.sql.catalog.{catalog}.catalog-impl=org.apache.iceberg.aws.glue.GlueCatalog" in conf
    assert f"spark.sql.catalog.{catalog}.warehouse=s3://${{SilverBucket}}/" in conf
    assert "spark.sql.extensions=org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions" in conf


def test_glue_job_code_comes_from_the_published_layer() -> None:
    job = _glue_job()

    assert job["Command"]["ScriptLocation"] == {"Fn::GetAtt": ["GlueCode", "ScriptLocation"]}
    assert job["DefaultArguments"]["--extra-py-files"] == {"Fn::GetAtt": ["GlueCode", "ExtraPyFiles"]}
    layers = resources_of_type("AWS::Serverless::LayerVersion")
    assert layers["GlueCodeLayer"]["Properties"]["ContentUri"] == "glue_jobs/"
    # The Glue job imports the contracts too: GlueCode zips them with icetide_glue.
    assert layers["ContractsLayer"]["Properties"]["ContentUri"] == "contracts/"
    published = template()["Resources"]["GlueCode"]["Properties"]
    assert published["LayerVersionArn"] == {"Ref": "GlueCodeLayer"}
    assert published["ContractsLayerVersionArn"] == {"Ref": "ContractsLayer"}


def test_the_layers_are_the_glue_code_and_the_contracts() -> None:
    assert sorted(resources_of_type("AWS::Serverless::LayerVersion")) == ["ContractsLayer", "GlueCodeLayer"]


@pytest.mark.parametrize("function_name", FUNCTIONS)
def test_every_function_imports_the_contracts_from_their_layer(function_name: str) -> None:
    # The handlers import icetide_contracts, which is not in CodeUri functions/.
    assert {"Ref": "ContractsLayer"} in function_property(function_name, "Layers")
