"""Each role in template.yaml grants what its code's AWS calls need, per the Service Authorization
Reference, and nothing its code does not call.

The calls are read from the code (deploy.aws_calls: each Lambda handler and everything it can
reach; each state machine's Task states), mapped to permissions by deploy.iam_reference (the
reference's table, each entry citing its page), and compared with the role's Allow statements.
A call added without its permission fails here, and so does a permission left after its call went.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator
from functools import cache
from typing import Any

import pytest

from deploy.aws_calls import ApiCall, CodeIndex, UnreadableCall
from deploy.iam_reference import (
    ENCRYPTED_TOPIC_ACTIONS,
    LAMBDA_TASK_ACTIONS,
    LOG_DELIVERY_ACTIONS,
    SQS_EVENT_SOURCE_ACTIONS,
    TASK_PERMISSIONS,
    Permission,
    permissions_for,
)
from deploy.template_model import (
    REPO_ROOT,
    PolicyStatement,
    icetide_functions,
    policy_statements,
    resources_of_type,
    template,
)

FUNCTIONS_ROOT = REPO_ROOT / "functions"
STATE_MACHINE = "AWS::Serverless::StateMachine"
# The account roles DMS requires before it creates a replication instance (DMS User Guide, 'Creating
# the IAM roles to use with AWS DMS'); which of them CreateReplicationInstance passes is not
# documented, so the instance function may pass either, and no other role.
DMS_ACCOUNT_ROLES = ("dms-vpc-role", "dms-cloudwatch-logs-role")


@cache
def _index() -> CodeIndex:
    return CodeIndex(FUNCTIONS_ROOT)


def _handler(function_name: str) -> tuple[str, str]:
    module, _, function = icetide_functions()[function_name]["Properties"]["Handler"].rpartition(".")
    return module, function


def required_permissions(calls: Iterable[ApiCall]) -> set[Permission]:
    return {permission for call in calls for permission in permissions_for(call)}


def _allows(statement: PolicyStatement, permission: Permission) -> bool:
    if statement.statement["Effect"] != "Allow" or permission.action not in statement.actions:
        return False
    if permission.passed_to_service is None:
        return True
    # The reference lists iam:PassedToService for the pass: the role may go to that service only.
    condition = statement.statement.get("Condition", {})
    passed_to = condition.get("StringEquals", {}).get("iam:PassedToService")
    return passed_to == permission.passed_to_service or passed_to == [permission.passed_to_service]


def missing_permissions(
    required: Iterable[Permission], statements: Iterable[PolicyStatement]
) -> list[Permission]:
    """The permissions no statement allows (as the reference requires them, conditions included)."""
    statements = list(statements)
    return sorted(p for p in required if not any(_allows(s, p) for s in statements))


def unused_actions(required: Iterable[Permission], statements: Iterable[PolicyStatement]) -> list[str]:
    """Actions the statements allow that no required permission names."""
    needed = {permission.action for permission in required}
    allowed = {a for s in statements if s.statement["Effect"] == "Allow" for a in s.actions}
    return sorted(allowed - needed)


def _statements_of(owner: str) -> list[PolicyStatement]:
    return [s for s in policy_statements() if s.owner == owner and s.document == "identity"]


# --- Lambda functions ---------------------------------------------------------------------------


def _event_source_queues(function_name: str) -> list[Any]:
    """The queues an event source mapping of the template reads for the function."""
    return [
        mapping["Properties"]["EventSourceArn"]
        for mapping in resources_of_type("AWS::Lambda::EventSourceMapping").values()
        if mapping["Properties"]["FunctionName"] == {"Ref": function_name}
    ]


def _function_permissions(function_name: str) -> set[Permission]:
    """What the function's code calls, and what its event source mapping does with its role."""
    needed = required_permissions(_index().calls_from(*_handler(function_name)))
    if _event_source_queues(function_name):
        needed |= {Permission(action) for action in SQS_EVENT_SOURCE_ACTIONS}
    return needed


def test_a_function_reads_only_the_queues_that_feed_it() -> None:
    for function_name in icetide_functions():
        granted = [
            r for s in _statements_of(function_name) if "sqs:ReceiveMessage" in s.actions for r in s.resources
        ]
        assert granted == _event_source_queues(function_name), function_name


@pytest.mark.parametrize("function_name", sorted(icetide_functions()))
def test_each_function_is_granted_every_permission_its_calls_need(function_name: str) -> None:
    required = _function_permissions(function_name)

    assert missing_permissions(required, _statements_of(function_name)) == []


@pytest.mark.parametrize("function_name", sorted(icetide_functions()))
def test_each_function_is_granted_nothing_its_code_does_not_call(function_name: str) -> None:
    required = _function_permissions(function_name)

    assert unused_actions(required, _statements_of(function_name)) == []


def _role_arn(name: str) -> dict[str, Any]:
    return {"Fn::Sub": f"arn:${{AWS::Partition}}:iam::${{AWS::AccountId}}:role/{name}"}


def _pass_role_resources(function_name: str) -> list[Any]:
    return [r for s in _statements_of(function_name) if "iam:PassRole" in s.actions for r in s.resources]


def test_the_instance_function_passes_only_the_dms_account_roles() -> None:
    assert _pass_role_resources("EnsureReplicationInstanceFunction") == [
        _role_arn(name) for name in DMS_ACCOUNT_ROLES
    ]


@pytest.mark.parametrize("function_name", ["CreateReplicationTaskFunction", "EnsureContinuousTaskFunction"])
def test_the_endpoint_creators_pass_only_the_role_dms_writes_bronze_files_with(function_name: str) -> None:
    # The S3 target endpoint's ServiceAccessRoleArn: the role its CreateEndpoint passes.
    target_role = icetide_functions()[function_name]["Properties"]["Environment"]["Variables"][
        "DMS_TARGET_ROLE_ARN"
    ]

    assert _pass_role_resources(function_name) == [target_role]


# --- state machines -----------------------------------------------------------------------------


def _task_resources(states: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """(Resource, state) of every Task state, in branches and map iterators too."""
    for state in states.values():
        if state.get("Type") == "Task":
            yield state["Resource"], state
        for branch in state.get("Branches", []):
            yield from _task_resources(branch["States"])
        for key in ("Iterator", "ItemProcessor"):
            if key in state:
                yield from _task_resources(state[key]["States"])


def _definition(machine: dict[str, Any]) -> dict[str, Any]:
    definition: dict[str, Any] = json.loads((REPO_ROOT / machine["Properties"]["DefinitionUri"]).read_text())
    return definition


def _substitution(machine: dict[str, Any], text: str) -> Any:
    """What a ``${Name}`` of the definition becomes (its DefinitionSubstitutions entry)."""
    match = re.fullmatch(r"\$\{(\w+)\}", text)
    if match is None:
        raise UnreadableCall(f"{text!r} is not a definition substitution")
    return machine["Properties"]["DefinitionSubstitutions"][match.group(1)]


def _encrypted_topic(topic: Any) -> bool:
    name = topic["Ref"] if isinstance(topic, dict) and set(topic) == {"Ref"} else None
    resource = template()["Resources"].get(name, {}) if name else {}
    return "KmsMasterKeyId" in resource.get("Properties", {})


def _glue_job_arn(job: Any) -> dict[str, Any]:
    """The ARN a policy names a Glue job of this template by (``!Ref GlueJob`` is the job's name)."""
    return {
        "Fn::Sub": f"arn:${{AWS::Partition}}:glue:${{AWS::Region}}:${{AWS::AccountId}}:job/${{{job['Ref']}}}"
    }


def state_machine_needs(machine: dict[str, Any]) -> tuple[set[str], dict[str, set[str]]]:
    """The actions a state machine's role needs, and for the Task actions on one resource (invoke,
    publish, start a job run) the resources they act on, as the template writes them (JSON)."""
    actions: set[str] = set()
    targets: dict[str, set[str]] = {}
    for resource, state in _task_resources(_definition(machine)["States"]):
        parameters = state.get("Parameters", state.get("Arguments", {}))
        if resource.startswith("${"):
            # A function's ARN as the Resource: Step Functions invokes it (lambda:InvokeFunction).
            actions.update(LAMBDA_TASK_ACTIONS)
            target = _substitution(machine, resource)
            targets.setdefault("lambda:InvokeFunction", set()).add(json.dumps(target))
        elif resource in TASK_PERMISSIONS:
            actions.update(TASK_PERMISSIONS[resource][0])
            if "TopicArn" in parameters:
                topic = _substitution(machine, parameters["TopicArn"])
                targets.setdefault("sns:Publish", set()).add(json.dumps(topic))
                if _encrypted_topic(topic):
                    actions.update(ENCRYPTED_TOPIC_ACTIONS)
            if "JobName" in parameters:
                job = _glue_job_arn(_substitution(machine, parameters["JobName"]))
                targets.setdefault("glue:StartJobRun", set()).add(json.dumps(job))
        else:
            raise UnreadableCall(f"Task resource {resource!r}: add its permissions to deploy.iam_reference")
    if machine["Properties"].get("Logging", {}).get("Destinations"):
        actions.update(LOG_DELIVERY_ACTIONS)
    return actions, targets


@pytest.mark.parametrize("machine_name", sorted(resources_of_type(STATE_MACHINE)))
def test_each_state_machine_role_grants_exactly_what_its_tasks_need(machine_name: str) -> None:
    needed, _ = state_machine_needs(resources_of_type(STATE_MACHINE)[machine_name])
    required = {Permission(action) for action in needed}
    statements = _statements_of(machine_name)

    assert missing_permissions(required, statements) == []
    assert unused_actions(required, statements) == []


@pytest.mark.parametrize("machine_name", sorted(resources_of_type(STATE_MACHINE)))
def test_each_state_machine_acts_only_on_the_functions_topic_and_job_its_definition_names(
    machine_name: str,
) -> None:
    _, targets = state_machine_needs(resources_of_type(STATE_MACHINE)[machine_name])

    assert set(targets) == {"lambda:InvokeFunction", "sns:Publish", "glue:StartJobRun"}
    for action, resources in targets.items():
        granted = {
            json.dumps(r) for s in _statements_of(machine_name) if action in s.actions for r in s.resources
        }
        assert granted == resources, action


# --- the check itself can fail ------------------------------------------------------------------

_SYNTHETIC = """
from icetide.adapters import dms
from icetide.adapters.clients import client


def _described(operation: str) -> object:
    return getattr(client("dms"), operation)()


class _Tasks:
    def __init__(self) -> None:
        self._client = client("dms")

    def stop(self, arn: str) -> None:
        self._client.stop_replication_task(ReplicationTaskArn=arn)


def handler(event, context):
    dms.create_instance("i", instance_class="c", subnet_group_id=None, security_group_ids=(), tags={})
    client("glue").start_job_run(JobName="x")
    _Tasks().stop("arn")
    return _described("describe_certificates")
"""


def test_the_reader_finds_calls_direct_through_adapters_and_forwarded() -> None:
    index = CodeIndex(FUNCTIONS_ROOT, {"handlers.synthetic": _SYNTHETIC})

    calls = index.calls_from("handlers.synthetic")

    assert {
        ApiCall("glue", "start_job_run"),
        ApiCall("dms", "describe_certificates"),
        ApiCall("dms", "create_replication_instance"),
        ApiCall("dms", "describe_replication_instances"),
        ApiCall("dms", "stop_replication_task"),
    } <= calls
    assert index.forwards_of("handlers.synthetic", "_described") == {"operation": "dms"}


@pytest.mark.parametrize(
    "body",
    [
        "client(service_name).list_tables()",  # a service named at run time
        "getattr(client('dms'), 'describe_' + kind)()",  # an operation computed at run time
        "use(client('dms'))",  # a client handed to code the reader does not follow
        "use.kept = client('dms')",  # a client kept where the reader cannot follow it
        "import boto3; boto3.resource('dynamodb')",  # boto3's resource layer, not read
    ],
)
def test_the_reader_refuses_a_call_it_cannot_resolve(body: str) -> None:
    source = "from icetide.adapters.clients import client\n\n\n"
    source += f"def handler(service_name, kind, use):\n    {body}\n"

    with pytest.raises(UnreadableCall):
        CodeIndex(FUNCTIONS_ROOT, {"handlers.synthetic": source})


def test_a_call_added_without_its_permission_is_reported_missing() -> None:
    index = CodeIndex(FUNCTIONS_ROOT, {"handlers.synthetic": _SYNTHETIC})
    required = required_permissions(index.calls_from("handlers.synthetic"))

    missing = missing_permissions(required, _statements_of("EnsureReplicationInstanceFunction"))

    assert Permission("glue:StartJobRun") in missing
    assert Permission("dms:DescribeCertificates") in missing


def test_a_statement_removed_from_the_template_is_reported_missing() -> None:
    required = _function_permissions("EnsureReplicationInstanceFunction")
    statements = _statements_of("EnsureReplicationInstanceFunction")
    without_pass_role = [s for s in statements if "iam:PassRole" not in s.actions]
    unconditional = [
        PolicyStatement(s.owner, s.document, {k: v for k, v in s.statement.items() if k != "Condition"})
        for s in statements
    ]

    assert missing_permissions(required, without_pass_role) == [
        Permission("iam:PassRole", "dms.amazonaws.com")
    ]
    # A pass to any service is not the pass the reference describes.
    assert missing_permissions(required, unconditional) == [Permission("iam:PassRole", "dms.amazonaws.com")]


def test_a_grant_whose_call_is_gone_is_reported_unused() -> None:
    required = _function_permissions("EnsureReplicationInstanceFunction") - {
        Permission("logs:PutRetentionPolicy")
    }

    assert unused_actions(required, _statements_of("EnsureReplicationInstanceFunction")) == [
        "logs:PutRetentionPolicy"
    ]


def test_the_reference_table_names_the_dms_creates_dependent_actions() -> None:
    # The rows of the reference's operations table for the three DMS creates icetide makes.
    assert set(permissions_for(ApiCall("dms", "create_replication_instance"))) == {
        Permission("dms:CreateReplicationInstance"),
        Permission("dms:AddTagsToResource"),
        Permission("iam:PassRole", "dms.amazonaws.com"),
    }
    assert set(permissions_for(ApiCall("dms", "create_replication_task"))) == {
        Permission("dms:CreateReplicationTask"),
        Permission("dms:AddTagsToResource"),
    }
    assert permissions_for(ApiCall("stepfunctions", "describe_execution")) == (
        Permission("states:DescribeExecution"),
    )
