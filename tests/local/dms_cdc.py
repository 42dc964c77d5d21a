"""Driving the DMS stand-in's CDC through boto3 against moto, as the product's Lambdas drive AWS DMS.

One :class:`DmsCdcDriver` per test: a source endpoint (for PostgreSQL naming the test's own replication
slot), a replication instance, and per task a target endpoint of its own bucket folder; each task is
created, started with its CDC positions, described until it stops, and its files and table statistics
read back. A windowed task stops once the replication instance's clock has passed its stop position:
the driver moves that clock there (:func:`instance_clock_at`) instead of waiting for it in real time.
"""

from __future__ import annotations

import datetime as dt
import io
import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any
from unittest import mock

import pyarrow as pa
import pyarrow.parquet as pq
import sqlalchemy as sa

from icetide_local.standins.dms import lifecycle
from icetide_local.standins.dms.cdc import parse_stop_position
from icetide_local.standins.dms.data_mover import source_endpoint_settings

BUCKET = "raw"
TIMESTAMP_COLUMN = "dms_timestamp"


def drop_slot(source, slot: str) -> None:
    """Slots outlive the test's schema: drop the test's own, so the session server keeps no WAL for it."""
    if source.dialect == "postgresql":
        with source.engine.begin() as connection:
            connection.execute(
                sa.text("SELECT pg_drop_replication_slot(slot_name) FROM pg_replication_slots "
                        "WHERE slot_name = :slot"),
                {"slot": slot},
            )  # fmt: skip


def slot_start_point(source_url: str, slot: str) -> str:
    """What an operator does before a table's first run on a slot: create the slot (test_decoding) if
    it is missing, and note its ``confirmed_flush_lsn``, the native start point its first task is
    created with (DMS user guide, "Determining a CDC native start point")."""
    engine = sa.create_engine(source_url, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as connection:
            query = "SELECT confirmed_flush_lsn::text FROM pg_replication_slots WHERE slot_name = :slot"
            found = connection.execute(sa.text(query), {"slot": slot}).scalar_one_or_none()
            if found is None:
                connection.execute(
                    sa.text("SELECT pg_create_logical_replication_slot(:slot, 'test_decoding')"),
                    {"slot": slot},
                )
                found = connection.execute(sa.text(query), {"slot": slot}).scalar_one()
        return str(found)
    finally:
        engine.dispose()


def execute(source, *statements: str) -> None:
    """Each statement in its own transaction, as separate commits."""
    for statement in statements:
        with source.engine.begin() as connection:
            connection.execute(sa.text(statement.replace("{schema}", source.schema)))


def selection_rule(schema: str, table: str, *filters: dict[str, Any]) -> dict[str, Any]:
    rule: dict[str, Any] = {
        "rule-type": "selection",
        "rule-id": "1",
        "rule-name": "1",
        "object-locator": {"schema-name": schema, "table-name": table},
        "rule-action": "include",
    }
    if filters:
        rule["filters"] = list(filters)
    return rule


def change_sequence_rule(schema: str, table: str) -> dict[str, Any]:
    """The rule the product's CDC tasks carry, exactly as the Lambdas write it."""
    return {
        "rule-type": "transformation",
        "rule-id": "2",
        "rule-name": "add-change-sequence",
        "rule-target": "column",
        "object-locator": {"schema-name": schema, "table-name": table},
        "rule-action": "add-column",
        "value": "AR_H_CHANGE_SEQ",
        "expression": "$AR_H_CHANGE_SEQ",
        "data-type": {"type": "string", "length": 35},
    }


def include_column_rule(rule_id: int, schema: str, table: str, column: str) -> dict[str, Any]:
    return {
        "rule-type": "transformation",
        "rule-id": str(rule_id),
        "rule-name": f"keep-{column}",
        "rule-target": "column",
        "object-locator": {"schema-name": schema, "table-name": table, "column-name": column},
        "rule-action": "include-column",
    }


def cdc_mapping(schema: str, table: str, *filters: dict[str, Any]) -> dict[str, Any]:
    return {"rules": [selection_rule(schema, table, *filters), change_sequence_rule(schema, table)]}


def stop_at_next_second() -> str:
    """The whole second after the next one, as a ``CdcStopPosition``: after the task the caller starts
    next has started, as icetide sets it (icetide.dms.stop_position), so that under the stand-in's
    strict reading the task reads what was committed before it started, then stops once its clock
    has passed the stop position. (A ``server_time:`` already past stops the task at once.)
    """
    now = dt.datetime.now(dt.UTC)
    boundary = now.replace(microsecond=0) + dt.timedelta(seconds=2)
    return f"server_time:{boundary:%Y-%m-%dT%H:%M:%S}"


@contextmanager
def instance_clock_at(moment: dt.datetime) -> Iterator[None]:
    """Inside the block the replication instance's clock (the stand-in's: moto's ``utcnow``, UTC
    without a zone) reads ``moment``; outside it, real time again."""
    naive = moment.astimezone(dt.UTC).replace(tzinfo=None)
    with mock.patch.object(lifecycle, "utcnow", lambda: naive):
        yield


@dataclass
class TaskOutcome:
    described: dict[str, Any]
    statistics: list[dict[str, Any]]
    files: dict[str, list[tuple[str, pa.Table]]]
    """Per table: (file name, contents) in name order."""

    def rows(self, table: str, *columns: str) -> list[tuple[Any, ...]]:
        return [
            tuple(row[column] for column in columns)
            for _, contents in self.files.get(table, [])
            for row in contents.to_pylist()
        ]

    def file_names(self, table: str) -> list[str]:
        return [name for name, _ in self.files.get(table, [])]

    def table_statistics(self, table: str) -> dict[str, Any]:
        [entry] = [entry for entry in self.statistics if entry["TableName"] == table]
        return dict(entry)


class DmsCdcDriver:
    def __init__(self, session: Any, source_url: str, slot_name: str) -> None:
        self.dms = session.client("dms")
        self.s3 = session.client("s3")
        self.s3.create_bucket(Bucket=BUCKET, CreateBucketConfiguration={"LocationConstraint": "eu-west-1"})
        self.source_arn = self.dms.create_endpoint(
            EndpointIdentifier="source",
            EndpointType="source",
            **source_endpoint_settings(source_url, slot_name=slot_name),
        )["Endpoint"]["EndpointArn"]
        # A PostgreSQL endpoint names the slot: every task reading it is created with a start position.
        self.slot = slot_name if sa.engine.make_url(source_url).get_backend_name() == "postgresql" else None
        self.source_url = source_url
        self.instance_arn = self.dms.create_replication_instance(
            ReplicationInstanceIdentifier="instance", ReplicationInstanceClass="dms.t3.medium"
        )["ReplicationInstance"]["ReplicationInstanceArn"]
        self.tasks = 0

    def run(
        self,
        migration_type: str,
        mapping: dict[str, Any],
        *,
        start: str | None = None,
        stop: str | None = None,
        extra_s3_settings: dict[str, Any] | None = None,
        task_resource_identifier: str | None = None,
    ) -> TaskOutcome:
        self.tasks += 1
        # The end of the task's ARN, as icetide names it (else DMS, here moto, makes one up).
        named = {"ResourceIdentifier": task_resource_identifier} if task_resource_identifier else {}
        folder = f"bronze/run-{self.tasks}"
        target_arn = self.dms.create_endpoint(
            EndpointIdentifier=f"target-{self.tasks}",
            EndpointType="target",
            EngineName="s3",
            S3Settings={
                "BucketName": BUCKET,
                "BucketFolder": folder,
                "DataFormat": "parquet",
                "ParquetVersion": "parquet-2-0",
                "TimestampColumnName": TIMESTAMP_COLUMN,
                "IncludeOpForFullLoad": True,
                "CdcMaxBatchInterval": 60,
                "CdcMinFileSize": 32000,
                **(extra_s3_settings or {}),
            },
        )["Endpoint"]["EndpointArn"]
        task_arn = self.dms.create_replication_task(
            ReplicationTaskIdentifier=f"task-{self.tasks}",
            SourceEndpointArn=self.source_arn,
            TargetEndpointArn=target_arn,
            ReplicationInstanceArn=self.instance_arn,
            MigrationType=migration_type,
            TableMappings=json.dumps(mapping),
            **self._created_start(migration_type, start),
            **named,
        )["ReplicationTask"]["ReplicationTaskArn"]
        self.describe(task_arn)  # creating -> ready
        positions = {"CdcStartPosition": start, "CdcStopPosition": stop}
        self.dms.start_replication_task(
            ReplicationTaskArn=task_arn,
            StartReplicationTaskType="start-replication",
            **{name: value for name, value in positions.items() if value},
        )
        self.describe(task_arn)  # starting -> running: the data moves
        described = self.describe(task_arn)  # running -> stopped (or failed) once the stop has passed
        stop_time = parse_stop_position(stop)
        if described["Status"] == "running" and stop_time is not None:
            # Still running: the stop position is ahead (stop_at_next_second). The data moved when
            # the task started, so the instance's clock reaching it only ends the task.
            with instance_clock_at(stop_time):
                described = self.describe(task_arn)
        statistics = self.dms.describe_table_statistics(ReplicationTaskArn=task_arn)["TableStatistics"]
        return TaskOutcome(described, statistics, self._files(folder))

    def _created_start(self, migration_type: str, start: str | None) -> dict[str, str]:
        """CreateReplicationTask's CdcStartPosition, as icetide sets it: on a slot endpoint, a task that
        captures changes starts at ``start``, else (a first task) at the slot's start point."""
        if self.slot is None or migration_type == "full-load":
            return {}
        if migration_type == "cdc":
            return {"CdcStartPosition": start} if start else {}
        return {"CdcStartPosition": start or slot_start_point(self.source_url, self.slot)}

    def describe(self, task_arn: str) -> dict[str, Any]:
        [task] = self.dms.describe_replication_tasks(
            Filters=[{"Name": "replication-task-arn", "Values": [task_arn]}]
        )["ReplicationTasks"]
        return dict(task)

    def _files(self, folder: str) -> dict[str, list[tuple[str, pa.Table]]]:
        listed = self.s3.list_objects_v2(Bucket=BUCKET, Prefix=f"{folder}/").get("Contents", [])
        files: dict[str, list[tuple[str, pa.Table]]] = {}
        for key in sorted(entry["Key"] for entry in listed):
            table, name = key.split("/")[-2:]
            body = self.s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
            files.setdefault(table, []).append((name, pq.read_table(io.BytesIO(body))))
        return files
