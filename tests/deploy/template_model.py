"""template.yaml as the tests see it: its functions (with SAM Globals applied) and its IAM statements."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from deploy.cfn_yaml import load_template

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"
SERVERLESS_FUNCTION = "AWS::Serverless::Function"


@cache
def template() -> dict[str, Any]:
    """The parsed template (parsed once per test session; tests must not modify it)."""
    return load_template(TEMPLATE_PATH)


def resources_of_type(resource_type: str) -> dict[str, dict[str, Any]]:
    """Logical id → resource, for every resource of ``resource_type``."""
    return {name: r for name, r in template()["Resources"].items() if r["Type"] == resource_type}


def custom_resource_functions() -> dict[str, dict[str, Any]]:
    """The functions behind the custom resources (their ServiceToken): deployment machinery, not icetide's."""
    tokens = {
        resource["Properties"]["ServiceToken"]["Fn::GetAtt"][0]
        for resource in template()["Resources"].values()
        if resource["Type"].startswith("Custom::")
    }
    return {name: r for name, r in resources_of_type(SERVERLESS_FUNCTION).items() if name in tokens}


def icetide_functions() -> dict[str, dict[str, Any]]:
    """The icetide Lambdas: every serverless function except the custom resources' ones."""
    machinery = custom_resource_functions()
    return {name: r for name, r in resources_of_type(SERVERLESS_FUNCTION).items() if name not in machinery}


def function_globals() -> dict[str, Any]:
    return dict(template().get("Globals", {}).get("Function", {}))


def global_environment() -> dict[str, Any]:
    return dict(function_globals().get("Environment", {}).get("Variables", {}))


def own_environment(function_name: str) -> dict[str, Any]:
    """The variables a function sets itself, without the Globals."""
    properties = resources_of_type(SERVERLESS_FUNCTION)[function_name]["Properties"]
    return dict(properties.get("Environment", {}).get("Variables", {}))


def function_property(function_name: str, name: str) -> Any:
    """A function property as SAM resolves it: the function's own value, else the Globals' value."""
    properties = resources_of_type(SERVERLESS_FUNCTION)[function_name]["Properties"]
    return properties.get(name, function_globals().get(name))


@dataclass(frozen=True)
class PolicyStatement:
    """One statement of an IAM policy in the template, with the resource that carries it."""

    owner: str
    document: str  # "identity", "key", "bucket", "topic"
    statement: dict[str, Any]

    @property
    def actions(self) -> list[str]:
        action = self.statement.get("Action", [])
        return [action] if isinstance(action, str) else list(action)

    @property
    def resources(self) -> list[Any]:
        resource = self.statement.get("Resource", [])
        return [resource] if isinstance(resource, str | dict) else list(resource)


def _statements(document: dict[str, Any]) -> Iterator[dict[str, Any]]:
    statements = document.get("Statement", [])
    for statement in [statements] if isinstance(statements, dict) else statements:
        if "Fn::If" in statement:
            # A conditional statement: both branches may be deployed; AWS::NoValue adds nothing.
            _, when_true, when_false = statement["Fn::If"]
            yield from (branch for branch in (when_true, when_false) if "Effect" in branch)
        else:
            yield statement


def policy_statements() -> Iterator[PolicyStatement]:
    """Every permission statement of the template (trust policies excluded: they grant no action)."""
    for name, resource in template()["Resources"].items():
        properties = resource.get("Properties", {})
        kind = resource["Type"]
        if kind == "AWS::IAM::Role":
            documents = [("identity", policy["PolicyDocument"]) for policy in properties.get("Policies", [])]
        elif kind in {SERVERLESS_FUNCTION, "AWS::Serverless::StateMachine"}:
            documents = [("identity", policy) for policy in properties.get("Policies", [])]
        elif kind == "AWS::KMS::Key":
            documents = [("key", properties["KeyPolicy"])]
        elif kind == "AWS::S3::BucketPolicy":
            documents = [("bucket", properties["PolicyDocument"])]
        elif kind == "AWS::SNS::TopicPolicy":
            documents = [("topic", properties["PolicyDocument"])]
        else:
            continue
        for document_kind, document in documents:
            if not isinstance(document, dict):
                raise TypeError(
                    f"{name}: policy {document!r} is not an inline document; the tests cannot check it"
                )
            for statement in _statements(document):
                yield PolicyStatement(name, document_kind, statement)
