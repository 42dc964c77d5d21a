"""template.yaml's cleanup after runs that end outside the state machine's paths (issue 15).

The rule on the table-run machine's ABORTED, TIMED_OUT and FAILED executions and its target,
the hourly sweep, the leftovers alarm; and that both functions may touch only what a run of this
stack created, as narrowly as DeleteDmsResources may.
"""

from __future__ import annotations

from typing import Any

from deploy.template_model import (
    SERVERLESS_FUNCTION,
    function_globals,
    function_property,
    global_environment,
    own_environment,
    policy_statements,
    resolve_sub,
    resources_of_type,
    template,
)
from icetide.run.abandoned import CLEANUP_STATUSES
from icetide_local.stepfunctions.cleanup_rules import ASYNC_RETRIES, ExecutionStatusRule

CLEANUP = "CleanUpExecutionFunction"
SWEEP = "SweepDmsResourcesFunction"
THIS_STACK = {"Ref": "AWS::StackName"}
TABLE_RUN_MACHINE = {"Ref": "TableRunStateMachine"}
RUN_EXECUTIONS = (
    "arn:${AWS::Partition}:states:${AWS::Region}:${AWS::AccountId}:execution:${TableRunStateMachine.Name}:*"
)
DMS_RESOURCES = [
    "arn:${AWS::Partition}:dms:${AWS::Region}:${AWS::AccountId}:task:*",
    "arn:${AWS::Partition}:dms:${AWS::Region}:${AWS::AccountId}:endpoint:*",
    "arn:${AWS::Partition}:dms:${AWS::Region}:${AWS::AccountId}:rep:*",
]
DMS_WRITES = {
    "dms:StopReplicationTask",
    "dms:DeleteReplicationTask",
    "dms:DeleteEndpoint",
    "dms:DeleteReplicationInstance",
}
DMS_LISTINGS = {"dms:DescribeReplicationTasks", "dms:DescribeEndpoints", "dms:DescribeReplicationInstances"}


def _function(name: str) -> dict[str, Any]:
    return dict(resources_of_type(SERVERLESS_FUNCTION)[name]["Properties"])


def _event(function_name: str) -> dict[str, Any]:
    (event,) = _function(function_name)["Events"].values()
    return dict(event)


def _allowed(owner: str) -> list[dict[str, Any]]:
    return [s.statement for s in policy_statements() if s.owner == owner and s.statement["Effect"] == "Allow"]


def _as_list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else [value]


def _grants(owner: str) -> dict[str, list[dict[str, Any]]]:
    """Action -> the statements of ``owner`` that allow it."""
    grants: dict[str, list[dict[str, Any]]] = {}
    for statement in _allowed(owner):
        for action in _as_list(statement["Action"]):
            grants.setdefault(action, []).append(statement)
    return grants


# --- the rule on ended executions ----------------------------------------------------------------


def test_the_rule_hands_the_table_run_machines_ended_executions_to_the_cleanup() -> None:
    event = _event(CLEANUP)
    properties = event["Properties"]

    assert event["Type"] == "EventBridgeRule"
    assert function_property(CLEANUP, "Handler") == "handlers.clean_up_execution.handler"
    assert properties["Pattern"] == {
        "source": ["aws.states"],
        "detail-type": ["Step Functions Execution Status Change"],
        "detail": {"status": ["ABORTED", "TIMED_OUT", "FAILED"], "stateMachineArn": [TABLE_RUN_MACHINE]},
    }
    # The handler and the local stand-in of the rule read the same statuses.
    assert list(CLEANUP_STATUSES) == properties["Pattern"]["detail"]["status"]


def test_the_local_stand_in_matches_what_the_rule_matches() -> None:
    machine = "arn:aws:states:eu-west-1:123456789012:stateMachine:icetide-table-run"
    stand_in = ExecutionStatusRule(None, None, machine, "icetide-clean-up-execution").pattern()
    deployed = _event(CLEANUP)["Properties"]["Pattern"]

    assert stand_in == {**deployed, "detail": {**deployed["detail"], "stateMachineArn": [machine]}}


def test_undelivered_events_and_failed_cleanups_end_in_the_dead_letter_queue() -> None:
    properties = _event(CLEANUP)["Properties"]
    invoke_config = _function(CLEANUP)["EventInvokeConfig"]

    assert properties["DeadLetterConfig"] == {"Arn": {"Fn::GetAtt": ["FunctionDeadLetterQueue", "Arn"]}}
    assert properties["RetryPolicy"]["MaximumEventAgeInSeconds"] == 3600
    # Lambda's own retries of a failed cleanup (DmsResourceBusy): as many as the local stand-in plays.
    assert invoke_config["MaximumRetryAttempts"] == ASYNC_RETRIES
    assert function_globals()["DeadLetterQueue"]["TargetArn"] == {
        "Fn::GetAtt": ["FunctionDeadLetterQueue", "Arn"]
    }


def test_only_the_rule_may_put_events_into_the_dead_letter_queue() -> None:
    (policy,) = [
        resource["Properties"]
        for resource in resources_of_type("AWS::SQS::QueuePolicy").values()
        if resource["Properties"]["Queues"] == [{"Ref": "FunctionDeadLetterQueue"}]
    ]
    # The other statement denies every plain-HTTP request (test_template_security.py).
    (statement,) = [s for s in policy["PolicyDocument"]["Statement"] if s["Effect"] == "Allow"]
    rule_name = resolve_sub(_event(CLEANUP)["Properties"]["RuleName"])

    assert (statement["Effect"], statement["Principal"], statement["Action"]) == (
        "Allow",
        {"Service": "events.amazonaws.com"},
        "sqs:SendMessage",
    )
    assert resolve_sub(statement["Condition"]["ArnEquals"]["aws:SourceArn"]) == (
        f"arn:${{AWS::Partition}}:events:${{AWS::Region}}:${{AWS::AccountId}}:rule/{rule_name}"
    )
    assert rule_name == "${AWS::StackName}-execution-ended"


# --- the sweep -------------------------------------------------------------------------------------


def test_the_sweep_runs_hourly_and_may_take_its_time() -> None:
    event = _event(SWEEP)

    assert function_property(SWEEP, "Handler") == "handlers.sweep_dms_resources.handler"
    assert event["Type"] == "Schedule"
    assert event["Properties"]["Schedule"] == "rate(1 hour)"
    # Always on, whatever ScheduleState says: leftovers are billed whether runs are scheduled or not.
    assert "State" not in event["Properties"]
    assert function_property(SWEEP, "Timeout") == 300


def test_the_leftovers_alarm_watches_what_the_sweep_counts() -> None:
    alarm = template()["Resources"]["DmsLeftoversAlarm"]["Properties"]

    assert (alarm["Namespace"], alarm["MetricName"]) == (
        global_environment()["POWERTOOLS_METRICS_NAMESPACE"],
        "DmsLeftoversDeleted",
    )
    assert alarm["Dimensions"] == [
        {"Name": "service", "Value": global_environment()["POWERTOOLS_SERVICE_NAME"]}
    ]
    assert (alarm["Statistic"], alarm["Threshold"], alarm["ComparisonOperator"]) == (
        "Sum",
        1,
        "GreaterThanOrEqualToThreshold",
    )
    assert alarm["AlarmActions"] == [{"Ref": "AlarmTopic"}]


# --- permissions -----------------------------------------------------------------------------------


def test_both_functions_know_the_stack_and_the_table_run_machine() -> None:
    for name in (CLEANUP, SWEEP):
        assert own_environment(name) == {"STATE_MACHINE_ARN": TABLE_RUN_MACHINE, "STACK_NAME": THIS_STACK}, (
            name
        )


def test_the_functions_may_do_only_what_they_do() -> None:
    assert set(_grants(CLEANUP)) == {
        "dynamodb:GetItem",
        "dynamodb:UpdateItem",
        "states:DescribeExecution",
        "states:GetExecutionHistory",
        "dms:ListTagsForResource",
        *DMS_WRITES,
        *DMS_LISTINGS,
    }
    # The sweep never touches a control item: it deletes DMS resources only.
    assert set(_grants(SWEEP)) == {
        "states:DescribeExecution",
        "dms:ListTagsForResource",
        *DMS_WRITES,
        *DMS_LISTINGS,
    }


def test_control_table_and_executions_are_this_stacks_only() -> None:
    cleanup = _grants(CLEANUP)
    for action in ("dynamodb:GetItem", "dynamodb:UpdateItem"):
        assert [s["Resource"] for s in cleanup[action]] == [{"Fn::GetAtt": ["ControlTable", "Arn"]}], action
    for owner, actions in (
        (CLEANUP, ("states:DescribeExecution", "states:GetExecutionHistory")),
        (SWEEP, ("states:DescribeExecution",)),
    ):
        for action in actions:
            assert [resolve_sub(s["Resource"]) for s in _grants(owner)[action]] == [RUN_EXECUTIONS], (
                owner,
                action,
            )


def test_dms_deletes_only_what_a_run_of_this_stack_created_and_never_a_long_lived_resource() -> None:
    for owner in (CLEANUP, SWEEP):
        grants = _grants(owner)
        for action in DMS_WRITES:
            (statement,) = grants[action]
            assert [resolve_sub(resource) for resource in statement["Resource"]] == DMS_RESOURCES, (
                owner,
                action,
            )
            assert statement["Condition"] == {
                "StringEquals": {"aws:ResourceTag/icetide:stack": THIS_STACK},
                # A run's tag must be there (a reused instance has none); the long-lived mark must not.
                "Null": {
                    "aws:ResourceTag/icetide:run-id": "false",
                    "aws:ResourceTag/icetide:long-lived": "true",
                },
            }, (owner, action)


def test_tags_are_readable_on_this_stacks_resources_only_and_listing_is_all_that_needs_a_wildcard() -> None:
    for owner in (CLEANUP, SWEEP):
        grants = _grants(owner)
        (tags,) = grants["dms:ListTagsForResource"]
        assert [resolve_sub(resource) for resource in tags["Resource"]] == DMS_RESOURCES, owner
        assert tags["Condition"] == {"StringEquals": {"aws:ResourceTag/icetide:stack": THIS_STACK}}, owner
        wildcard = {
            action
            for action, statements in grants.items()
            for s in statements
            if "*" in _as_list(s["Resource"])
        }
        assert wildcard == DMS_LISTINGS, owner
