"""What icetide's code asks of AWS, derived from the code itself (for tests/unit/test_aws_facts.py).

- AWS operations: a boto3 client method called (or named as a string, as the DMS adapter's
  ``getattr(client("dms"), operation)`` does) in a module that makes a client of that service
  (``client("dms")``, ``boto3.client("s3")``, ``target.client(...)``), matched against botocore's
  own list of the service's operations, so a local function that happens to share a name with an
  operation of another service is not counted;
- the state machines' task resources (``glue:startJobRun.sync``; a Lambda function ARN is
  ``lambda:invoke``) and the AWS error names their Retry and Catch match (icetide's own named
  errors, classes of ``functions/``, are not AWS's);
- the DMS ``S3Settings`` a run's target endpoint gets and the keys of icetide's default task settings.
"""

from __future__ import annotations

import ast
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import botocore.session
from botocore import xform_name

from icetide.dms.bronze_target import s3_target_settings
from icetide.dms.task_settings import DEFAULT_TASK_SETTINGS

REPO_ROOT = Path(__file__).resolve().parents[2]
CODE_FOLDERS = ("functions", "cli", "deploy", "glue_jobs")
STATE_MACHINES = REPO_ROOT / "statemachine"
# A task whose Resource is a function ARN (a DefinitionSubstitutions placeholder) invokes it.
LAMBDA_TASK = "lambda:invoke"
_INTEGRATION_PREFIX = "arn:aws:states:::"


@dataclass(frozen=True)
class AwsCall:
    """One AWS operation the code calls: botocore's service name and the operation's API name."""

    service: str
    operation: str


def _python_files(folders: Iterable[str]) -> Iterator[Path]:
    for folder in folders:
        yield from sorted((REPO_ROOT / folder).rglob("*.py"))


def _module_calls(tree: ast.AST) -> tuple[set[str], set[str]]:
    """The services a module makes clients of, and every name it calls or spells as a string."""
    services: set[str] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            function = node.func
            called = function.attr if isinstance(function, ast.Attribute) else getattr(function, "id", "")
            names.add(called)
            first = node.args[0] if node.args else None
            if called == "client" and isinstance(first, ast.Constant) and isinstance(first.value, str):
                services.add(first.value)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names.add(node.value)
    return services, names


def aws_calls(folders: Iterable[str] = CODE_FOLDERS) -> set[AwsCall]:
    """Every AWS operation the code under ``folders`` calls."""
    session = botocore.session.get_session()
    operations: dict[str, dict[str, str]] = {}
    found: set[AwsCall] = set()
    for path in _python_files(folders):
        services, names = _module_calls(ast.parse(path.read_text(encoding="utf-8")))
        for service in services:
            if service not in operations:
                model = session.get_service_model(service)
                operations[service] = {xform_name(name): name for name in model.operation_names}
            found.update(
                AwsCall(service, operation)
                for method, operation in operations[service].items()
                if method in names
            )
    return found


def _walk(node: Any) -> Iterator[Mapping[str, Any]]:
    if isinstance(node, Mapping):
        yield node
        for value in node.values():
            yield from _walk(value)
    elif isinstance(node, list):
        for value in node:
            yield from _walk(value)


def _definitions() -> Iterator[Any]:
    for path in sorted(STATE_MACHINES.glob("*.asl.json")):
        yield json.loads(path.read_text(encoding="utf-8"))


def task_resources() -> set[str]:
    """The state machines' task resources: service integrations by name, function ARNs as one."""
    resources = set()
    for definition in _definitions():
        for state in _walk(definition):
            if state.get("Type") != "Task":
                continue
            resource = str(state["Resource"])
            resources.add(
                resource.removeprefix(_INTEGRATION_PREFIX)
                if resource.startswith(_INTEGRATION_PREFIX)
                else LAMBDA_TASK
            )
    return resources


def icetide_error_names() -> set[str]:
    """The exception classes defined in functions/: the handlers' named errors."""
    names: set[str] = set()
    for path in _python_files(["functions"]):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        names.update(node.name for node in ast.walk(tree) if isinstance(node, ast.ClassDef))
    return names


def aws_error_names() -> set[str]:
    """The error names the state machines' Retry and Catch match that AWS, not icetide, defines."""
    ours = icetide_error_names()
    matched = {
        str(name)
        for definition in _definitions()
        for node in _walk(definition)
        for name in node.get("ErrorEquals", [])
    }
    return matched - ours


def dms_setting_names() -> set[str]:
    """A run's target endpoint S3Settings (every optional one set) and the default task settings' keys."""
    settings = s3_target_settings(
        "s3://bucket/bronze/table/run/",
        timestamp_column="ts",
        service_access_role_arn="arn:aws:iam::123456789012:role/dms-s3",
        cdc_max_batch_interval=60,
        cdc_min_file_size=32000,
    )
    return set(settings) | set(_keys(DEFAULT_TASK_SETTINGS))


def _keys(settings: Mapping[str, Any]) -> Iterator[str]:
    for key, value in settings.items():
        yield key
        if isinstance(value, Mapping):
            yield from _keys(value)
