"""template.yaml as the tests see it: its functions (with SAM Globals applied) and its IAM statements."""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from deploy.cfn_yaml import load_template

REPO_ROOT = Path(__file__).resolve().parents[2]
TEMPLATE_PATH = REPO_ROOT / "template.yaml"
SERVERLESS_FUNCTION = "AWS::Serverless::Function"
MANAGED_POLICY = "AWS::IAM::ManagedPolicy"


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


def _attached_managed_policy(policy: Any) -> str | None:
    """The logical id of the template's managed policy that ``policy`` (a SAM Policies entry) attaches."""
    if isinstance(policy, dict) and set(policy) == {"Ref"}:
        resource = template()["Resources"].get(policy["Ref"], {})
        if resource.get("Type") == MANAGED_POLICY:
            return str(policy["Ref"])
    return None


def _sam_policy_document(policy: Any) -> Any:
    """An entry of a SAM Policies list as a document: inline, or the managed policy it attaches."""
    attached = _attached_managed_policy(policy)
    if attached is not None:
        return template()["Resources"][attached]["Properties"]["PolicyDocument"]
    return policy


def _attachers() -> set[str]:
    """The managed policies of the template that some function or state machine attaches."""
    return {
        attached
        for resource in template()["Resources"].values()
        for policy in resource.get("Properties", {}).get("Policies", [])
        if (attached := _attached_managed_policy(policy)) is not None
    }


def _role_users() -> dict[str, str]:
    """Role -> the state machine that runs with it (``Role: !GetAtt <Role>.Arn``)."""
    return {
        resource["Properties"]["Role"]["Fn::GetAtt"][0]: name
        for name, resource in resources_of_type("AWS::Serverless::StateMachine").items()
        if isinstance(resource["Properties"].get("Role"), dict)
    }


def policy_statements() -> Iterator[PolicyStatement]:
    """Every permission statement of the template (trust policies excluded: they grant no action).

    A managed policy's statements count as the statements of every function that attaches it (so
    per-function checks see them); one nobody attaches is reported under its own name. A state
    machine's role (written out for its trust condition) reports its statements as the machine's.
    """
    attached = _attachers()
    users = _role_users()
    for name, resource in template()["Resources"].items():
        properties = resource.get("Properties", {})
        kind = resource["Type"]
        if kind == "AWS::IAM::Role":
            documents = [("identity", policy["PolicyDocument"]) for policy in properties.get("Policies", [])]
        elif kind in {SERVERLESS_FUNCTION, "AWS::Serverless::StateMachine"}:
            documents = [
                ("identity", _sam_policy_document(policy)) for policy in properties.get("Policies", [])
            ]
        elif kind == MANAGED_POLICY:
            documents = [] if name in attached else [("identity", properties["PolicyDocument"])]
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
                yield PolicyStatement(users.get(name, name), document_kind, statement)


def _mapping_lookup(find_in_map: list[Any]) -> str:
    mapping, top, second = find_in_map
    return str(template()["Mappings"][mapping][top][second])


def resolve_sub(value: Any) -> str:
    """A string the template builds with Fn::Sub, FindInMap and bucket ARNs, as text for assertions.

    A bucket's ``Arn`` becomes ``arn:aws:s3:::<LogicalId>``; other ``${...}`` stay as they are.
    """
    buckets = set(resources_of_type("AWS::S3::Bucket"))

    def attribute(name: str) -> str:
        bucket, _, attr = name.partition(".")
        return f"arn:aws:s3:::{bucket}" if bucket in buckets and attr == "Arn" else f"${{{name}}}"

    if isinstance(value, str):
        return value
    if isinstance(value, dict) and "Fn::GetAtt" in value:
        return attribute(".".join(value["Fn::GetAtt"]))
    if isinstance(value, dict) and "Fn::FindInMap" in value:
        return _mapping_lookup(value["Fn::FindInMap"])
    if isinstance(value, dict) and "Fn::Sub" in value:
        sub = value["Fn::Sub"]
        text, variables = (sub, {}) if isinstance(sub, str) else (sub[0], sub[1])
        resolved = {name: resolve_sub(given) for name, given in variables.items()}
        return re.sub(
            r"\$\{([A-Za-z0-9_.:]+)\}",
            lambda match: resolved.get(match.group(1)) or attribute(match.group(1)),
            text,
        )
    raise TypeError(f"cannot resolve {value!r} to text")


RAW_BUCKET_LAYOUT: dict[str, str] = {
    name: str(value) for name, value in template()["Mappings"]["RawBucketLayout"]["Prefix"].items()
}
