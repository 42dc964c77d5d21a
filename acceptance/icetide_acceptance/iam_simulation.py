"""Whether a role may do what a function's calls need: IAM's policy simulator, and the dry run's stand-in.

:class:`AwsPolicySimulator` asks ``iam:SimulatePrincipalPolicy`` (aws-facts: iam-simulate) with the
resource each action is used on and the context its conditions read (the resource's tags,
``iam:PassedToService``). moto does not implement the simulator; :class:`AllowListSimulator`, used
only by the dry run, reads the role's inline policies and allows an action that an ``Allow``
statement names (wildcards expanded), ignoring resources and conditions: it tests which actions the
check asks about and how it reports a refusal, not IAM's evaluation.

:data:`RUN_NEEDS` lists, per function (the template's logical id), the IAM actions its DMS and
CloudWatch Logs calls need on a run's resources, from the Service Authorization Reference
(aws-facts: iam-dms-actions); tests/acceptance/test_iam_needs.py holds it to the actions the code's
calls need (tests/deploy/aws_calls.py), so a new call cannot escape the check.
"""

from __future__ import annotations

import fnmatch
import json
import urllib.parse
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class Need:
    """An action a function needs on a resource kind of the run, with the context IAM evaluates."""

    action: str
    # "task", "endpoint", "instance", "role" (the S3 target's role, passed to DMS), "dms-vpc-role"
    # (the account's role DMS manages instances' network with) or "*".
    resource: str = "*"
    context: Mapping[str, str] = field(default_factory=dict)


_PASS_TO_DMS = {"iam:PassedToService": "dms.amazonaws.com"}
RUN_NEEDS: dict[str, tuple[Need, ...]] = {
    "EnsureReplicationInstanceFunction": (
        Need("dms:DescribeReplicationInstances"),
        Need("dms:CreateReplicationInstance", "instance"),
        Need("dms:AddTagsToResource", "instance"),
        # Which role CreateReplicationInstance passes is not documented: DMS's account role for VPCs.
        Need("iam:PassRole", "dms-vpc-role", _PASS_TO_DMS),
        Need("dms:ListTagsForResource", "instance"),
        Need("logs:CreateLogGroup", "*"),
        Need("logs:PutRetentionPolicy", "*"),
    ),
    "CreateReplicationTaskFunction": (
        Need("dms:DescribeEndpoints"),
        Need("dms:CreateEndpoint", "endpoint"),
        Need("dms:AddTagsToResource", "endpoint"),
        Need("iam:PassRole", "role", _PASS_TO_DMS),
        Need("dms:DescribeReplicationTasks"),
        Need("dms:CreateReplicationTask", "task"),
        Need("dms:AddTagsToResource", "task"),
        Need("dms:ListTagsForResource", "task"),
    ),
    "StartReplicationTaskFunction": (
        Need("dms:DescribeReplicationTasks"),
        Need("dms:StartReplicationTask", "task"),
    ),
    "PollReplicationTaskFunction": (Need("dms:DescribeReplicationTasks"),),
    "ReadTaskStatisticsFunction": (
        Need("dms:DescribeReplicationTasks"),
        Need("dms:DescribeTableStatistics", "task"),
    ),
    "DeleteDmsResourcesFunction": (
        Need("dms:DescribeReplicationTasks"),
        Need("dms:DescribeEndpoints"),
        Need("dms:DescribeReplicationInstances"),
        Need("dms:ListTagsForResource", "task"),
        Need("dms:StopReplicationTask", "task"),
        Need("dms:DeleteReplicationTask", "task"),
        Need("dms:DeleteEndpoint", "endpoint"),
        Need("dms:DeleteReplicationInstance", "instance"),
    ),
}


@dataclass(frozen=True)
class Question:
    """One action asked about: on which resource ARN, with which condition context."""

    action: str
    resource_arn: str
    context: Mapping[str, str]


class PolicySimulator(Protocol):
    def denied(self, role_arn: str, questions: Sequence[Question]) -> set[str]:
        """The actions of ``questions`` the role may not do (empty when all are allowed)."""
        ...


class AwsPolicySimulator:
    """``iam:SimulatePrincipalPolicy``, one question at a time (each has its own resource and context)."""

    def __init__(self, iam: Any) -> None:
        self._iam = iam

    def denied(self, role_arn: str, questions: Sequence[Question]) -> set[str]:
        refused = set()
        for question in questions:
            entries = [
                {"ContextKeyName": key, "ContextKeyValues": [value], "ContextKeyType": "string"}
                for key, value in question.context.items()
            ]
            answer = self._iam.simulate_principal_policy(
                PolicySourceArn=role_arn,
                ActionNames=[question.action],
                ResourceArns=[question.resource_arn],
                ContextEntries=entries,
            )
            if any(result["EvalDecision"] != "allowed" for result in answer["EvaluationResults"]):
                refused.add(question.action)
        return refused


class AllowListSimulator:
    """The dry run's stand-in: an action is allowed when an inline Allow statement of the role names it."""

    def __init__(self, iam: Any) -> None:
        self._iam = iam

    def denied(self, role_arn: str, questions: Sequence[Question]) -> set[str]:
        role = role_arn.rsplit("/", 1)[-1]
        allowed: list[str] = []
        for name in self._iam.list_role_policies(RoleName=role)["PolicyNames"]:
            document = self._iam.get_role_policy(RoleName=role, PolicyName=name)["PolicyDocument"]
            if isinstance(document, str):
                document = json.loads(urllib.parse.unquote(document))
            for statement in _listed(document.get("Statement", [])):
                if statement.get("Effect") == "Allow":
                    allowed.extend(_listed(statement.get("Action", [])))
        return {
            question.action
            for question in questions
            if not any(fnmatch.fnmatchcase(question.action.lower(), pattern.lower()) for pattern in allowed)
        }


def _listed(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def run_questions(
    needs: Sequence[Need], resource_arns: Mapping[str, str], tags: Mapping[str, str]
) -> list[Question]:
    """The questions of ``needs`` about one run: its resources' ARNs (kind -> ARN) and their tags."""
    tag_context = {f"aws:ResourceTag/{key}": value for key, value in tags.items()}
    return [
        Question(
            need.action,
            resource_arns.get(need.resource, "*"),
            {**(tag_context if need.resource in {"task", "endpoint", "instance"} else {}), **need.context},
        )
        for need in needs
    ]
