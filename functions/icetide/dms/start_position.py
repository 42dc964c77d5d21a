"""Where a DMS task that captures changes starts reading, when the source endpoint names a slot.

A PostgreSQL source endpoint may name a logical replication slot (``PostgreSQLSettings.SlotName``,
or the ``slotName`` extra connection attribute). The DMS API reference (PostgreSQLSettings, SlotName)
says DMS then "verifies that the task was created with a valid setting of CdcStartPosition. If the
specified slot doesn't exist or the task doesn't have a valid CdcStartPosition setting, DMS raises an
error"; the user guide ("Using a PostgreSQL database as an AWS DMS source", native CDC start points)
says the same of the task when it runs. So on such an endpoint every task that captures changes is
created with ``CdcStartPosition`` and started with the same one:

- a later run's ``cdc`` task: the checkpoint the previous run committed (``cdcCheckpoint``);
- a table's first run (and a continuous table's task): the item's ``cdcStartPoint``, the slot's
  ``confirmed_flush_lsn`` noted when the slot was created (user guide, "Determining a CDC native
  start point": a start point "can't be older than the confirmed_flush_lsn value");
- a reload (``full-load-and-cdc`` again): the stored ``cdcCheckpoint``, where the slot still holds
  every later change.

A ``full-load-and-cdc`` task then captures changes from there even when they committed before its
full load read the row; DMS writes them after the load, so the merge ends on each row's latest change.

Without one, the run is refused before any DMS resource is created (SlotStartPositionMissing), with
what to set. An endpoint without a slot keeps DMS's own start: a ``full-load-and-cdc`` task captures
from its full load's start, a ``cdc`` task from the position it is started with.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from icetide.errors import IcetideError

FULL_LOAD = "full-load"
_SLOT_ATTRIBUTE = "slotname"


class SlotStartPositionMissing(IcetideError):
    """The source endpoint names a replication slot, and the run has no start position to create its
    task with. Not retried: the control item needs a ``cdcStartPoint`` (docs/state-machine.md)."""


def endpoint_slot(endpoint: Mapping[str, Any] | None) -> str | None:
    """The replication slot a source endpoint (DescribeEndpoints) names; None when it names none."""
    if endpoint is None:
        return None
    named = str((endpoint.get("PostgreSQLSettings") or {}).get("SlotName") or "").strip()
    if named:
        return named
    # Extra connection attributes: "name=value;name=value", names case-insensitive.
    for attribute in str(endpoint.get("ExtraConnectionAttributes") or "").split(";"):
        name, _, value = attribute.partition("=")
        if name.strip().lower() == _SLOT_ATTRIBUTE and value.strip():
            return value.strip()
    return None


def creation_start_position(
    migration_type: str,
    slot: str | None,
    stored_checkpoint: str | None,
    start_point: str | None,
    table: str,
) -> str | None:
    """``CdcStartPosition`` for CreateReplicationTask: for a task that captures changes through
    ``slot``, the stored checkpoint, else the item's start point; None without a slot or for a full
    load. SlotStartPositionMissing when a slot needs one and there is neither."""
    if migration_type == FULL_LOAD or slot is None:
        return None
    position = stored_checkpoint or (start_point if migration_type != "cdc" else None)
    if not position:
        raise SlotStartPositionMissing(
            f"{table}: the source endpoint names replication slot {slot!r}, and DMS runs a task that "
            "reads a slot only if it was created with a valid CdcStartPosition. Set cdcStartPoint on "
            "the control item (the tables file) to the slot's confirmed_flush_lsn (in the source's "
            "pg_replication_slots), or to a RecoveryCheckpoint of an earlier task on the slot; the "
            "table's first run then loads it in full and captures changes from there. Nothing was created"
        )
    return position


def start_start_position(
    migration_type: str, planned: str | None, task: Mapping[str, Any] | None
) -> str | None:
    """``CdcStartPosition`` for StartReplicationTask: a ``cdc`` task's planned position, else the one
    the task was created with (DescribeReplicationTasks ``CdcStartPosition``), else none."""
    if migration_type == "cdc" and planned:
        return planned
    created = (task or {}).get("CdcStartPosition")
    return str(created) if created else None
