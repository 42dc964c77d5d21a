"""What DMS shows of one run while it runs: its task, endpoint and instance, found by the run's tag.

A run deletes what it created before it ends, so the scenario watches while the execution runs and
keeps the last description of each (and the task's table statistics once it stopped). Reads only.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from botocore.exceptions import ClientError

from icetide.dms.identifiers import RUN_ID_TAG


@dataclass
class RunRecord:
    """The last seen state of a run's DMS resources."""

    run_id: str
    task: dict[str, Any] | None = None
    instance: dict[str, Any] | None = None
    target_endpoint: dict[str, Any] | None = None
    statistics: list[dict[str, Any]] = field(default_factory=list)
    arns: set[str] = field(default_factory=set)
    # The task's tags (the run's: icetide:stack, icetide:run-id, ...), as it carried them.
    tags: dict[str, str] = field(default_factory=dict)


class RunRecorder:
    """Call :meth:`poll` while the run's execution runs; ``during_full_load`` is called once, when the
    task is seen running with its full load unfinished."""

    def __init__(self, dms: Any, run_id: str, during_full_load: Callable[[], None] | None = None) -> None:
        self._dms = dms
        self.record = RunRecord(run_id)
        self._during_full_load = during_full_load
        self._not_ours: set[str] = set()

    def poll(self) -> None:
        task = self._find_task()
        if task is None:
            return
        self.record.task = task
        self._describe_neighbours(task)
        if self._during_full_load and task.get("Status") == "running":
            progress = (task.get("ReplicationTaskStats") or {}).get("FullLoadProgressPercent", 0)
            if progress < 100:
                during, self._during_full_load = self._during_full_load, None
                during()
        if task.get("Status") == "stopped":
            self._read_statistics(task["ReplicationTaskArn"])

    def _find_task(self) -> dict[str, Any] | None:
        known = self.record.task
        if known is not None:
            found = self._describe(
                "describe_replication_tasks", "replication-task-arn", known["ReplicationTaskArn"]
            )
            return found or known
        for page in self._dms.get_paginator("describe_replication_tasks").paginate(WithoutSettings=True):
            for task in page.get("ReplicationTasks", []):
                arn = task["ReplicationTaskArn"]
                if arn not in self._not_ours and self._is_run(arn):
                    return dict(task)
                self._not_ours.add(arn)
        return None

    def _is_run(self, arn: str) -> bool:
        try:
            tags = self._dms.list_tags_for_resource(ResourceArn=arn)["TagList"]
        except ClientError:
            return False
        found = {str(tag["Key"]): str(tag.get("Value", "")) for tag in tags}
        if found.get(RUN_ID_TAG) != self.record.run_id:
            return False
        self.record.tags = found
        return True

    def _describe(self, operation: str, filter_name: str, arn: str) -> dict[str, Any] | None:
        try:
            response = getattr(self._dms, operation)(Filters=[{"Name": filter_name, "Values": [arn]}])
        except ClientError:
            return None  # gone (ResourceNotFoundFault): keep the last description
        key = {"describe_replication_tasks": "ReplicationTasks", "describe_endpoints": "Endpoints"}.get(
            operation, "ReplicationInstances"
        )
        found = response.get(key, [])
        return dict(found[0]) if found else None

    def _describe_neighbours(self, task: dict[str, Any]) -> None:
        self.record.arns.add(task["ReplicationTaskArn"])
        instance_arn, endpoint_arn = task.get("ReplicationInstanceArn"), task.get("TargetEndpointArn")
        if instance_arn:
            self.record.arns.add(instance_arn)
            self.record.instance = (
                self._describe("describe_replication_instances", "replication-instance-arn", instance_arn)
                or self.record.instance
            )
        if endpoint_arn:
            self.record.arns.add(endpoint_arn)
            self.record.target_endpoint = (
                self._describe("describe_endpoints", "endpoint-arn", endpoint_arn)
                or self.record.target_endpoint
            )

    def _read_statistics(self, arn: str) -> None:
        try:
            tables = self._dms.describe_table_statistics(ReplicationTaskArn=arn).get("TableStatistics", [])
        except ClientError:
            return
        if tables:
            self.record.statistics = [dict(table) for table in tables]
