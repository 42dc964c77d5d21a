"""The control item's `maintenance` overrides and `lastMaintenance` run state."""

from __future__ import annotations

import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest

from icetide.control.model import RUN_STATE_ATTRIBUTES, ControlItem
from icetide.errors import InvalidControlItem
from icetide_cli.main import main
from icetide_contracts.maintenance import MaintenancePolicy


def _item(**attributes: Any) -> dict[str, Any]:
    return {"targetTableName": "dbo_orders", "sourceSchema": "dbo", "sourceTable": "orders", **attributes}


def _problems(**attributes: Any) -> list[str]:
    with pytest.raises(InvalidControlItem) as raised:
        ControlItem.parse(_item(**attributes))
    return raised.value.errors


def test_without_maintenance_the_policy_is_the_default() -> None:
    assert ControlItem.parse(_item()).maintenance_policy == MaintenancePolicy()


def test_overrides_replace_only_the_keys_they_name() -> None:
    # DynamoDB hands numbers over as Decimal.
    item = ControlItem.parse(
        _item(maintenance={"enabled": False, "snapshotRetentionHours": Decimal(48), "orphanAgeHours": 96})
    )

    assert item.maintenance_policy == MaintenancePolicy(
        enabled=False, snapshot_retention_hours=48, orphan_age_hours=96
    )
    assert item.maintenance_policy.min_snapshots == 24


def test_an_unknown_key_is_named_with_the_key_it_most_likely_means() -> None:
    assert _problems(maintenance={"orphanAgeHour": 96}) == [
        "maintenance.orphanAgeHour: unknown key; did you mean orphanAgeHours?"
    ]


def test_an_orphan_age_below_a_day_is_refused() -> None:
    assert _problems(maintenance={"orphanAgeHours": 2}) == [
        "maintenance.orphanAgeHours: must be at least 24 hours: a younger unreferenced file may belong to a "
        "commit still in flight, and removing it would corrupt the table"
    ]


def test_enabled_must_be_a_boolean() -> None:
    assert _problems(maintenance={"enabled": "yes"}) == [
        "maintenance.enabled: Input should be a valid boolean"
    ]


def test_every_problem_is_one_line_beside_the_items_other_problems() -> None:
    assert _problems(
        maintenance={"minSnapshots": 0, "snapshotRetentionHours": Decimal("1.5")}, loadmode="x"
    ) == [
        "maintenance.snapshotRetentionHours: must be a whole number, got 1.5",
        "maintenance.minSnapshots: Input should be greater than or equal to 1",
        "loadmode: unknown attribute; did you mean loadMode?",
    ]


def test_maintenance_that_is_not_a_map_is_refused() -> None:
    [problem] = _problems(maintenance="daily")

    assert problem.startswith("maintenance: must be a map of maintenance settings (enabled, ")


def test_last_maintenance_is_run_state_an_item_keeps() -> None:
    item = ControlItem.parse(_item(lastMaintenance={"runId": "dbo_orders-maintain-20261121T0000Z"}))

    assert item.last_maintenance == {"runId": "dbo_orders-maintain-20261121T0000Z"}
    assert "lastMaintenance" in RUN_STATE_ATTRIBUTES


def test_tables_validate_accepts_an_item_with_maintenance_overrides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "items.json"
    path.write_text(json.dumps([_item(primaryKeys="order_id", maintenance={"snapshotRetentionHours": 48})]))

    exit_code = main(["tables", "validate", str(path)])

    assert (exit_code, capsys.readouterr().out) == (0, "OK dbo_orders\n")


def test_tables_validate_reports_a_bad_override(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "items.json"
    path.write_text(json.dumps([_item(primaryKeys="order_id", maintenance={"orphanAgeHours": 2})]))

    exit_code = main(["tables", "validate", str(path)])

    assert exit_code == 1
    assert capsys.readouterr().out.startswith(
        "INVALID dbo_orders: maintenance.orphanAgeHours: must be at least 24"
    )
