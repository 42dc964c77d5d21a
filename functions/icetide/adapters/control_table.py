"""The DynamoDB control table: reading control items and the run's conditional writes.

Every write that decides something (taking the lock, committing the watermark) is one conditional
``UpdateItem``, so two runs can never both win; the adapter reports whether the condition held and
what the item looked like, and the domain (``icetide.run.locking``, ``icetide.run.commit``) decides what
that means. Items travel as plain dicts (numbers as Decimal), the form ``ControlItem.parse`` takes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import ClientError

from icetide.adapters.clients import client, error_code
from icetide.control.codec import encode_value, from_typed_json

KEY = "targetTableName"
_CONDITION_FAILED = "ConditionalCheckFailedException"


@dataclass(frozen=True)
class ConditionalWrite:
    """The outcome of a conditional update.

    ``written`` says whether the condition held. ``item`` is the whole item as it was *before* the
    update (``ALL_OLD``) in both cases, or None when no item exists under the key.
    """

    written: bool
    item: dict[str, Any] | None


@dataclass(frozen=True)
class CheckpointStep:
    """A cdc run's checkpoint: the one it started from (None: it had none) and the one it reached
    (None: keep the stored one, so the next run reads the window again)."""

    previous: str | None
    new: str | None
    # `cdcCheckpoint` holds a windowed task's RecoveryCheckpoint, `cdcFileCheckpoint` a continuous
    # table's last merged file.
    attribute: str = "cdcCheckpoint"


class ControlTable:
    """One control table, by name. Cheap to build: the DynamoDB client is shared and lazy."""

    def __init__(self, table_name: str) -> None:
        self.table_name = table_name

    def scan_items(self) -> Iterator[dict[str, Any]]:
        """Every control item, page after page (a scan returns at most 1 MB per call)."""
        paginator = client("dynamodb").get_paginator("scan")
        for page in paginator.paginate(TableName=self.table_name, ConsistentRead=True):
            for typed in page.get("Items", []):
                yield from_typed_json(typed)

    def get_item(self, target_table_name: str) -> dict[str, Any] | None:
        """The control item of one table (strongly consistent), or None when there is none."""
        response = client("dynamodb").get_item(
            TableName=self.table_name, Key=_key(target_table_name), ConsistentRead=True
        )
        typed = response.get("Item")
        return from_typed_json(typed) if typed else None

    def take_lock(
        self, target_table_name: str, run_id: str, *, now: str, stale_before: str, merge_run: bool = True
    ) -> ConditionalWrite:
        """Record ``run_id`` as the lock holder (and, for a merge run, as the running run), unless a
        live lock is held.

        The lock is free when nobody holds it, when this run already holds it (a retried
        invocation), or when the holder took it before ``stale_before`` (a run that died). A
        maintenance run (``merge_run`` False) takes the same lock but leaves ``lastRun*`` alone:
        those describe the table's last merge.
        """
        run_state = ", lastRunId = :run, lastRunStatus = :running, lastRunTime = :now" if merge_run else ""
        values = {":run": run_id, ":now": now, ":stale_before": stale_before}
        return self._update(
            target_table_name,
            update=f"SET lockHolder = :run, lockTime = :now{run_state}",
            condition="attribute_exists(targetTableName) AND (attribute_not_exists(lockHolder) "
            "OR lockHolder = :run OR lockTime < :stale_before)",
            values=values | {":running": "RUNNING"} if merge_run else values,
        )

    def finish_maintenance(
        self, target_table_name: str, run_id: str, record: Mapping[str, Any], *, succeeded: bool
    ) -> ConditionalWrite:
        """Store a maintenance run's ``lastMaintenance`` and release its lock, in one write.

        A succeeded run's record is written only while ``run_id`` holds the lock (its numbers are
        about a table nobody else touched meanwhile). A failed run's is written, like a merge run's
        failure, unless another run holds the lock (a run that failed before or at its lock has
        none) or the same run already recorded its success (the record step failed after its write,
        and the failure path must not turn a maintained table into a failed one).
        """
        held = "lockHolder = :run"
        if succeeded:
            condition = f"attribute_exists(targetTableName) AND {held}"
            values = {":run": run_id, ":record": dict(record)}
        else:
            condition = (
                f"attribute_exists(targetTableName) AND (attribute_not_exists(lockHolder) OR {held}) "
                "AND NOT (lastMaintenance.runId = :run AND lastMaintenance.#status = :succeeded)"
            )
            values = {":run": run_id, ":record": dict(record), ":succeeded": "SUCCEEDED"}
        return self._update(
            target_table_name,
            update="SET lastMaintenance = :record REMOVE lockHolder, lockTime",
            condition=condition,
            values=values,
            names={"#status": "status"} if not succeeded else None,
        )

    def record_task_resume(
        self, target_table_name: str, run_id: str, resume: Mapping[str, Any]
    ) -> ConditionalWrite:
        """Store ``resume`` as ``lastTaskResume`` while ``run_id`` holds the lock: a continuous task
        that stopped or failed and this run resumed, kept for the operator whatever the run does next."""
        return self._update(
            target_table_name,
            update="SET lastTaskResume = :resume",
            condition="lockHolder = :run",
            values={":run": run_id, ":resume": dict(resume)},
        )

    def release_lock(self, target_table_name: str, run_id: str) -> ConditionalWrite:
        """Remove the lock only if ``run_id`` holds it, so a late release never frees another run's lock."""
        return self._update(
            target_table_name,
            update="REMOVE lockHolder, lockTime",
            condition="lockHolder = :run",
            values={":run": run_id},
        )

    def commit_run(
        self,
        target_table_name: str,
        run_id: str,
        *,
        previous_forms: Sequence[Any],
        watermark: Any,
        stats: Mapping[str, Any],
        now: str,
        checkpoint: CheckpointStep | None = None,
        reconciled_at: str | None = None,
        change_time: str | None = None,
        change_count: Mapping[str, Any] | None = None,
    ) -> ConditionalWrite:
        """Store the run's watermark and statistics and release its lock, in one conditional write.

        The write happens only while ``run_id`` holds the lock and the watermark is still the run's
        starting one, so the commit is all or nothing: watermark, statistics, status and unlock
        together, or none of them. ``previous_forms`` lists the values the stored watermark may
        equal (the same watermark as a number or as text); empty means "the item had no
        watermark". ``None`` as ``watermark`` leaves the attribute as it is. Values must be
        DynamoDB-storable (numbers as Decimal or int). A cdc run's ``checkpoint`` step stores its new
        checkpoint in the same write, only while the stored one is still the one the run started
        from; ``reconciled_at`` (a reconcile run's slot) becomes ``lastReconcileTime``, ``change_time``
        (the newest change the run merged) ``lastChangeTime``, ``change_count`` (a continuous run's,
        icetide_contracts.change_count) ``cdcChangeCount``; None leaves the stored one.
        """
        values: dict[str, Any] = {
            ":stats": dict(stats),
            ":succeeded": "SUCCEEDED",
            ":now": now,
            ":run": run_id,
        }
        # lastSuccessTime outlives later failed runs: the freshness alarm's lag needs it most then.
        assignments = (
            "lastRunStats = :stats, lastRunStatus = :succeeded, lastRunTime = :now, lastSuccessTime = :now"
        )
        if watermark is not None:
            assignments += ", watermark = :watermark"
            values[":watermark"] = watermark
        if previous_forms:
            names = [f":previous{index}" for index in range(len(previous_forms))]
            values.update(zip(names, previous_forms, strict=True))
            unchanged = f"watermark IN ({', '.join(names)})"
        else:
            unchanged = "attribute_not_exists(watermark)"
        if checkpoint is not None:
            name = checkpoint.attribute
            if checkpoint.new is not None:
                assignments += f", {name} = :checkpoint"
                values[":checkpoint"] = checkpoint.new
            if checkpoint.previous is None:
                # An item may hold "" for "not set", as the control item reads it.
                unchanged += f" AND (attribute_not_exists({name}) OR {name} = :noCheckpoint)"
                values[":noCheckpoint"] = ""
            else:
                unchanged += f" AND {name} = :previousCheckpoint"
                values[":previousCheckpoint"] = checkpoint.previous
        if reconciled_at is not None:
            assignments += ", lastReconcileTime = :reconciled"
            values[":reconciled"] = reconciled_at
        if change_time is not None:
            assignments += ", lastChangeTime = :changeTime"
            values[":changeTime"] = change_time
        if change_count is not None:
            assignments += ", cdcChangeCount = :changeCount"
            values[":changeCount"] = dict(change_count)
        return self._update(
            target_table_name,
            update=f"SET {assignments} REMOVE lastRunError, lastFailedState, lockHolder, lockTime",
            condition=f"attribute_exists(targetTableName) AND lockHolder = :run AND {unchanged}",
            values=values,
        )

    def record_failure(
        self, target_table_name: str, run_id: str, *, failed_state: str, error: str, now: str
    ) -> ConditionalWrite:
        """Mark the run failed, unless another run holds the table's lock (its state is not ours)."""
        return self._update(
            target_table_name,
            update="SET lastRunId = :run, lastRunStatus = :failed, lastFailedState = :state, "
            "lastRunError = :error, lastRunTime = :now",
            condition="attribute_exists(targetTableName) AND (attribute_not_exists(lockHolder) "
            "OR lockHolder = :run)",
            values={
                ":run": run_id,
                ":failed": "FAILED",
                ":state": failed_state,
                ":error": error,
                ":now": now,
            },
        )

    def _update(
        self,
        target_table_name: str,
        *,
        update: str,
        condition: str,
        values: Mapping[str, Any],
        names: Mapping[str, str] | None = None,
    ) -> ConditionalWrite:
        # `names`: placeholders for attribute names DynamoDB reserves (e.g. #status for status).
        extra = {"ExpressionAttributeNames": dict(names)} if names else {}
        try:
            response = client("dynamodb").update_item(
                TableName=self.table_name,
                Key=_key(target_table_name),
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeValues={name: encode_value(value) for name, value in values.items()},
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                **extra,
            )
        except ClientError as error:
            if error_code(error) != _CONDITION_FAILED:
                raise
            # ReturnValuesOnConditionCheckFailure puts the current item into the error response.
            current: Mapping[str, Any] | None = error.response.get("Item")  # type: ignore[assignment]
            return ConditionalWrite(written=False, item=from_typed_json(current) if current else None)
        before = response.get("Attributes")
        return ConditionalWrite(written=True, item=from_typed_json(before) if before else None)


def _key(target_table_name: str) -> dict[str, Any]:
    return {KEY: {"S": target_table_name}}
