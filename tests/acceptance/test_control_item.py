"""The scenario's control item: a cdc table, started on a slot endpoint at the slot's position."""

from __future__ import annotations

from typing import Any, cast

from icetide_acceptance.scenario import control_item
from icetide_acceptance.source import SourceTable


class _Source:
    schema = "public"
    name = "icetide_acceptance_0a1b2c3d"

    def slot_position(self, slot: str) -> str:
        return {"icetide_slot": "0/16B3748"}[slot]


def _item(slot: str | None) -> dict[str, Any]:
    return control_item(cast(SourceTable, _Source()), "public_icetide_acceptance_0a1b2c3d", slot)


def test_on_a_slot_endpoint_the_first_run_starts_at_the_slots_confirmed_position() -> None:
    assert _item("icetide_slot") == {
        "cdcCheckpoint": {"S": "0/16B3748"},
        "targetTableName": {"S": "public_icetide_acceptance_0a1b2c3d"},
        "activeflag": {"S": "Y"},
        "sourceSchema": {"S": "public"},
        "sourceTable": {"S": "icetide_acceptance_0a1b2c3d"},
        "primaryKeys": {"S": "id"},
        "captureMode": {"S": "cdc"},
    }


def test_without_a_slot_the_item_has_no_start_position() -> None:
    assert "cdcCheckpoint" not in _item(None)
