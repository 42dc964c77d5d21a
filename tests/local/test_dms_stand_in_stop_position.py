"""The DMS stand-in's two readings of a ``server_time:`` CdcStopPosition (lifecycle.StopPositionReading).

The API reference says only "server time"; the user guide ("Creating tasks for ongoing replication",
Stopping a task at a commit or server time point) calls it "a server time on the replication
instance". Neither says what a stop position already past at the start does. Strict (the default):
the task stops at once, having read nothing. Kind: it reads the changes committed up to the stop
position. Under both, a task does not stop before the instance's clock has reached its stop position,
unless the stand-in is told to end a window once the task has read it (the local stack's named
difference, tested last).
"""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from icetide_local.standins.dms.lifecycle import (
    STOPPED_AT_SERVER_TIME,
    DmsLifecycle,
    MoverResult,
    ReplicationTaskRun,
    StopPositionReading,
    TableStatistics,
)

START = "checkpoint:V1#icetide#sqlite#41"
MAPPING = (
    '{"rules": [{"rule-type": "selection", "rule-id": "1", "rule-name": "1", "rule-action": "include",'
    ' "object-locator": {"schema-name": "main", "table-name": "orders"}}]}'
)


class RecordingMover:
    """Reads two changes of main.orders per run; keeps every run it was called for."""

    def __init__(self) -> None:
        self.runs: list[ReplicationTaskRun] = []

    def __call__(self, run: ReplicationTaskRun) -> MoverResult:
        self.runs.append(run)
        read = TableStatistics(schema="main", table="orders", inserts=2)
        return MoverResult(tables=(read,), recovery_checkpoint="checkpoint:V1#icetide#sqlite#43")


@pytest.fixture
def dms(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu-west-1")
    with mock_aws():
        yield boto3.client("dms", region_name="eu-west-1")


def _server_time(moment: dt.datetime) -> str:
    return f"server_time:{moment:%Y-%m-%dT%H:%M:%S}"


def _started(dms: Any, stop: str) -> str:
    """A ``cdc`` task started at START with ``stop``; its ARN once it is running (or already stopped)."""
    instance = dms.create_replication_instance(
        ReplicationInstanceIdentifier="instance", ReplicationInstanceClass="dms.t3.medium"
    )["ReplicationInstance"]["ReplicationInstanceArn"]
    source, target = (
        dms.create_endpoint(EndpointIdentifier=kind, EndpointType=kind, EngineName=engine)["Endpoint"][
            "EndpointArn"
        ]
        for kind, engine in (("source", "sqlite"), ("target", "s3"))
    )
    arn = dms.create_replication_task(
        ReplicationTaskIdentifier="window",
        SourceEndpointArn=source,
        TargetEndpointArn=target,
        ReplicationInstanceArn=instance,
        MigrationType="cdc",
        TableMappings=MAPPING,
    )["ReplicationTask"]["ReplicationTaskArn"]
    _describe(dms, arn)  # creating -> ready
    dms.start_replication_task(
        ReplicationTaskArn=arn,
        StartReplicationTaskType="start-replication",
        CdcStartPosition=START,
        CdcStopPosition=stop,
    )
    _describe(dms, arn)  # starting -> running
    return str(arn)


def _describe(dms: Any, arn: str) -> dict[str, Any]:
    (task,) = dms.describe_replication_tasks(Filters=[{"Name": "replication-task-arn", "Values": [arn]}])[
        "ReplicationTasks"
    ]
    return dict(task)


def test_strict_a_stop_position_already_past_stops_the_task_at_once_having_read_nothing(dms) -> None:
    mover = RecordingMover()
    past = _server_time(dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    with DmsLifecycle(mover=mover).install():  # strict is the default
        arn = _started(dms, past)
        stopped = _describe(dms, arn)
        statistics = dms.describe_table_statistics(ReplicationTaskArn=arn)["TableStatistics"]

    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", STOPPED_AT_SERVER_TIME)
    assert mover.runs == []
    assert statistics == []
    assert stopped["RecoveryCheckpoint"] == START  # where it was told to start: nothing read


def test_kind_a_stop_position_already_past_is_the_last_commit_time_read(dms) -> None:
    mover = RecordingMover()
    past = _server_time(dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    with DmsLifecycle(mover=mover, stop_position_reading=StopPositionReading.KIND).install():
        arn = _started(dms, past)
        stopped = _describe(dms, arn)

    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", STOPPED_AT_SERVER_TIME)
    assert [(run.cdc_start_position, run.cdc_stop_position) for run in mover.runs] == [(START, past)]
    assert stopped["RecoveryCheckpoint"] == "checkpoint:V1#icetide#sqlite#43"


@pytest.mark.parametrize("reading", list(StopPositionReading))
def test_a_task_runs_until_the_instances_clock_reaches_its_stop_position(dms, reading) -> None:
    mover = RecordingMover()
    stop_at = dt.datetime.now(dt.UTC).replace(microsecond=0) + dt.timedelta(seconds=2)
    with DmsLifecycle(mover=mover, stop_position_reading=reading).install():
        arn = _started(dms, _server_time(stop_at))
        before = _describe(dms, arn)
        time.sleep(max(0.0, (stop_at - dt.datetime.now(dt.UTC)).total_seconds()) + 0.05)
        after = _describe(dms, arn)

    assert before["Status"] == "running"
    assert (after["Status"], after["StopReason"]) == ("stopped", STOPPED_AT_SERVER_TIME)
    assert len(mover.runs) == 1 and after["RecoveryCheckpoint"] == "checkpoint:V1#icetide#sqlite#43"


def test_a_window_that_ends_once_read_stops_at_the_describe_after_the_task_read_it(dms) -> None:
    # The local stack's named difference (DmsLifecycle.windows_end_once_read): the rest of the
    # window, an hour here, is not waited for.
    mover = RecordingMover()
    stop_at = dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)
    with DmsLifecycle(mover=mover, windows_end_once_read=True).install():
        arn = _started(dms, _server_time(stop_at))
        stopped = _describe(dms, arn)

    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", STOPPED_AT_SERVER_TIME)
    assert len(mover.runs) == 1 and stopped["RecoveryCheckpoint"] == "checkpoint:V1#icetide#sqlite#43"


def test_a_window_that_ends_once_read_still_reads_nothing_when_its_stop_position_is_past(dms) -> None:
    mover = RecordingMover()
    past = _server_time(dt.datetime.now(dt.UTC) - dt.timedelta(hours=1))
    with DmsLifecycle(mover=mover, windows_end_once_read=True).install():
        arn = _started(dms, past)
        stopped = _describe(dms, arn)

    assert (stopped["Status"], stopped["StopReason"]) == ("stopped", STOPPED_AT_SERVER_TIME)
    assert mover.runs == [] and stopped["RecoveryCheckpoint"] == START
