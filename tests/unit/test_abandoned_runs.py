"""The rules for runs that ended outside their paths: reading the status event, what the cleanup does,
and what the sweep keeps (icetide.run.abandoned, icetide.dms.sweep)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from icetide.dms.identifiers import RunDmsResources
from icetide.dms.sweep import RunExecution, keep_reason
from icetide.dms.tagged import ResourceKind, TaggedResource, runs_resources
from icetide.run.abandoned import CleanupPlan, ExecutionStatusChange, abandoned_message, cleanup_plan
from icetide.run.handler_inputs import parse_input

RUN = "dbo_orders-20261121T0700Z"
OTHER = "dbo_orders-20261121T0800Z"
NOW = datetime(2026, 11, 21, 10, 0, tzinfo=UTC)


def _event(**detail: object) -> dict[str, object]:
    return {
        "source": "aws.states",
        "detail-type": "Step Functions Execution Status Change",
        "detail": {
            "executionArn": f"arn:aws:states:eu-west-1:123456789012:execution:icetide-table-run:{RUN}",
            "stateMachineArn": "arn:aws:states:eu-west-1:123456789012:stateMachine:icetide-table-run",
            "name": RUN,
            "status": "ABORTED",
            **detail,
        },
    }


@pytest.mark.parametrize(
    ("detail", "table"),
    [
        ({"input": '{"targetTableName": "dbo_orders"}', "inputDetails": {"included": True}}, "dbo_orders"),
        ({"input": None, "inputDetails": {"included": False}}, None),
        ({"input": '{"targetTableName": "dbo_ord'}, None),  # cut short
        ({"input": '{"runId": "x"}'}, None),
        ({}, None),
    ],
    ids=["included", "left-out", "truncated", "no-table", "absent"],
)
def test_the_table_comes_from_the_events_input_when_it_holds_one(detail, table):
    change = parse_input(ExecutionStatusChange, _event(**detail))

    assert change.target_table_name() == table
    assert change.run_id == RUN


@pytest.mark.parametrize(
    ("status", "needs"), [("ABORTED", True), ("TIMED_OUT", True), ("FAILED", True), ("SUCCEEDED", False)]
)
def test_statuses_that_may_leave_work_behind(status, needs):
    assert parse_input(ExecutionStatusChange, _event(status=status)).needs_cleanup is needs


@pytest.mark.parametrize(
    ("error", "cause", "message"),
    [
        (None, None, "execution TIMED_OUT"),
        ("OperatorStop", None, "execution TIMED_OUT: OperatorStop"),
        ("OperatorStop", "source down", "execution TIMED_OUT: OperatorStop: source down"),
    ],
)
def test_the_recorded_error_names_the_status_and_what_stopped_it(error, cause, message):
    assert abandoned_message("TIMED_OUT", error, cause) == message


@pytest.mark.parametrize(
    ("status", "item", "plan"),
    [
        pytest.param(
            "ABORTED",
            {"lockHolder": RUN, "lastRunId": RUN, "lastRunStatus": "RUNNING"},
            CleanupPlan(True, True, "the run ended ABORTED outside its failure path"),
            id="holds-the-lock",
        ),
        pytest.param(
            "TIMED_OUT",
            {"lastRunId": RUN, "lastRunStatus": "RUNNING"},
            CleanupPlan(True, False, "the run ended TIMED_OUT outside its failure path"),
            id="unlocked-but-last",
        ),
        pytest.param(
            "ABORTED",
            {"lockHolder": OTHER, "lastRunId": OTHER, "lastRunStatus": "RUNNING"},
            CleanupPlan(False, False, f"the control item belongs to run {OTHER}: left alone"),
            id="another-run-holds-it",
        ),
        pytest.param(
            "ABORTED",
            {"lastRunId": OTHER, "lastRunStatus": "SUCCEEDED"},
            CleanupPlan(False, False, f"the control item belongs to run {OTHER}: left alone"),
            id="stopped-before-its-lock",
        ),
        pytest.param(
            "ABORTED",
            {"lastRunId": RUN, "lastRunStatus": "SUCCEEDED"},
            CleanupPlan(False, False, "the run committed before it ended: its state stays"),
            id="stopped-after-its-commit",
        ),
        pytest.param(
            "FAILED",
            {"lastRunId": RUN, "lastRunStatus": "FAILED"},
            CleanupPlan(False, False, "the run's failure path ran: its failure is recorded"),
            id="failed-and-recorded",
        ),
        pytest.param(
            "FAILED",
            {"lockHolder": RUN, "lastRunId": RUN, "lastRunStatus": "FAILED"},
            CleanupPlan(False, True, "the run's failure path ran: its failure is recorded"),
            id="failed-recorded-still-locked",
        ),
        pytest.param(
            "FAILED",
            {"lastRunId": RUN, "lastRunStatus": "RUNNING"},
            CleanupPlan(True, False, "the run ended FAILED outside its failure path"),
            id="failed-unrecorded",
        ),
        pytest.param(
            "ABORTED",
            {"lastRunId": RUN, "lastRunStatus": "FAILED"},
            CleanupPlan(False, False, "the run's failure is already recorded"),
            id="aborted-already-recorded",
        ),
        pytest.param(
            "ABORTED",
            None,
            CleanupPlan(False, False, "no control item: nothing to record or unlock"),
            id="no-item",
        ),
    ],
)
def test_cleanup_plan(status, item, plan):
    assert cleanup_plan(status, RUN, item) == plan


def test_a_stopped_verify_run_gives_back_its_lock_and_dms_resources_but_records_nothing():
    verify_run = "dbo_orders-verify-20261121T073012Z"
    # A verify run holds the lock but leaves lastRun* (the last merge's) as they were.
    item = {"lockHolder": verify_run, "lastRunId": OTHER, "lastRunStatus": "SUCCEEDED"}

    plan = cleanup_plan("ABORTED", verify_run, item)

    assert plan == CleanupPlan(False, True, "verify run ended ABORTED: nothing to record")


def _resource(identifier: str | None = None, **tags: str) -> TaggedResource:
    """A task with ``tags``, named as icetide names the task of the run its tags name (or ``identifier``)."""
    if identifier is None and "icetide:run-id" in tags and "icetide:table" in tags:
        identifier = RunDmsResources(
            tags["icetide:stack"], tags["icetide:table"], tags["icetide:run-id"]
        ).task_identifier
    return TaggedResource(
        ResourceKind.TASK, "arn:aws:dms:eu-west-1:123456789012:task:T", "stopped", tags, identifier
    )


RUN_TAGS = {"icetide:stack": "icetide", "icetide:table": "dbo_orders", "icetide:run-id": RUN}


@pytest.mark.parametrize(
    ("tags", "execution", "reason"),
    [
        (RUN_TAGS, None, None),
        (RUN_TAGS, RunExecution("ABORTED", NOW - timedelta(minutes=61)), None),
        (
            RUN_TAGS,
            RunExecution("ABORTED", NOW - timedelta(minutes=59)),
            f"run {RUN} ended less than 1 h ago; its own cleanup goes first",
        ),
        (
            RUN_TAGS,
            RunExecution("SUCCEEDED", None),
            f"run {RUN} ended less than 1 h ago; its own cleanup goes first",
        ),
        (RUN_TAGS, RunExecution("RUNNING"), f"run {RUN} is still running"),
        ({**RUN_TAGS, "icetide:long-lived": "true"}, None, "long-lived (a continuous table's)"),
        ({"icetide:stack": "icetide"}, None, "not created by a run"),
        ({**RUN_TAGS, "icetide:stack": "icetide-other"}, None, "not this stack's"),
    ],
    ids=[
        "no-execution",
        "ended-long-ago",
        "ended-recently",
        "no-stop-time",
        "running",
        "long-lived",
        "no-run",
        "other-stack",
    ],
)
def test_what_the_sweep_keeps(tags, execution, reason):
    assert keep_reason(_resource(**tags), "icetide", execution, NOW) == reason


@pytest.mark.parametrize(
    "identifier",
    [
        "colleagues-task",
        None,  # DMS did not say
        # icetide's name for the same run of another table, or of another stack: tags must agree.
        RunDmsResources("icetide", "dbo_lines", RUN).task_identifier,
        RunDmsResources("icetide-other", "dbo_orders", RUN).task_identifier,
    ],
)
def test_a_resource_carrying_a_runs_tags_but_not_the_name_icetide_derives_for_them_is_kept(identifier):
    resource = TaggedResource(
        ResourceKind.TASK, "arn:aws:dms:eu-west-1:123456789012:task:T", "stopped", RUN_TAGS, identifier
    )

    assert keep_reason(resource, "icetide", None, NOW) == (
        f"its identifier {identifier} is not one icetide derives for its tags"
    )
    assert runs_resources([resource], "icetide", RUN) == []


def test_a_runs_own_and_its_key_extractions_resources_are_its_own():
    names = RunDmsResources("icetide", "dbo_orders", RUN)
    resources = [
        TaggedResource(kind, f"arn:{identifier}", "stopped", RUN_TAGS, identifier)
        for kind, identifier in (
            (ResourceKind.INSTANCE, names.instance_identifier.upper()),  # as given at creation
            (ResourceKind.ENDPOINT, names.key_endpoint_identifier),
            (ResourceKind.TASK, names.task_identifier),
            (ResourceKind.TASK, names.key_task_identifier),
            (ResourceKind.ENDPOINT, names.endpoint_identifier),
        )
    ]

    assert [r.identifier for r in runs_resources(resources, "icetide", RUN)] == [
        names.task_identifier,
        names.key_task_identifier,
        names.key_endpoint_identifier,
        names.endpoint_identifier,
        names.instance_identifier.upper(),
    ]
