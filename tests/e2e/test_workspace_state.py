"""Workspace state between `icetide local run`s: what is saved, what a new tables file changes, slots."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest

from icetide_local.workspace import (
    TypedItem,
    Workspace,
    WorkspaceBusy,
    WorkspaceError,
    keep_unconfigured,
    merge_run_state,
)
from icetide_local.workspace_cycle import loadable_items, next_slot

SAVED_ORDERS: TypedItem = {
    "targetTableName": {"S": "orders"},
    "sourceSchema": {"S": "main"},
    "sourceTable": {"S": "orders"},
    "startvalue": {"N": "0"},
    "watermark": {"N": "42"},
    "lastRunId": {"S": "orders-20261121T0700Z"},
    "lastRunStatus": {"S": "SUCCEEDED"},
    "lastRunStats": {"M": {"rowsRead": {"N": "3"}}},
    "lockHolder": {"S": "orders-20261121T0800Z"},
    "lockTime": {"S": "2026-11-21T08:00:01Z"},
}


def test_a_new_workspace_has_no_state_and_creates_its_directories(tmp_path):
    workspace = Workspace.open(tmp_path / "ws")

    assert workspace.load_control_items() == []
    assert workspace.load_last_cycle() is None
    assert (tmp_path / "ws" / "state").is_dir()
    assert (tmp_path / "ws" / "warehouse").is_dir()
    assert workspace.is_new


def test_saved_items_and_slot_come_back_and_the_file_is_typed_json(tmp_path):
    workspace = Workspace.open(tmp_path)
    customers = {"targetTableName": {"S": "customers"}, "watermark": {"S": "2026-01-05 08:06:00"}}

    workspace.save_control_items([SAVED_ORDERS, customers])
    workspace.save_last_cycle(datetime(2026, 11, 21, 9, 30, tzinfo=UTC))

    assert Workspace.open(tmp_path).load_control_items() == [customers, SAVED_ORDERS]  # sorted by table
    assert workspace.load_last_cycle() == datetime(2026, 11, 21, 9, 30, tzinfo=UTC)
    on_disk = json.loads((tmp_path / "state" / "control-table.json").read_text())
    assert on_disk[0] == {"targetTableName": {"S": "customers"}, "watermark": {"S": "2026-01-05 08:06:00"}}
    assert not workspace.is_new


def test_a_damaged_state_file_is_named(tmp_path):
    workspace = Workspace.open(tmp_path)
    workspace.control_table_file.write_text('[{"targetTableName": "plain, not typed"}]')

    with pytest.raises(WorkspaceError, match=r"control-table\.json must hold a JSON list of DynamoDB typed"):
        workspace.load_control_items()


def test_status_of_a_directory_that_is_no_workspace_is_refused(tmp_path):
    with pytest.raises(WorkspaceError, match="is not an icetide workspace"):
        Workspace.existing(tmp_path / "nothing-here")


def test_only_one_process_runs_a_cycle_in_a_workspace(tmp_path):
    workspace = Workspace.open(tmp_path)

    with (
        workspace.exclusive(),
        pytest.raises(WorkspaceBusy, match="another icetide process"),
        Workspace.open(tmp_path).exclusive(),
    ):
        pass


def test_tables_file_configures_and_the_workspace_keeps_run_state():
    configured = [
        {
            "targetTableName": {"S": "orders"},
            "sourceSchema": {"S": "main"},
            "sourceTable": {"S": "orders_v2"},
            "watermark": {"N": "1"},  # run state in a tables file does not overwrite the saved one
        },
        {"targetTableName": {"S": "fresh"}, "sourceSchema": {"S": "main"}, "sourceTable": {"S": "fresh"}},
    ]

    merged = merge_run_state(configured, [SAVED_ORDERS])

    assert merged == [
        {
            "targetTableName": {"S": "orders"},
            "sourceSchema": {"S": "main"},
            "sourceTable": {"S": "orders_v2"},
            "watermark": {"N": "42"},
            "lastRunId": {"S": "orders-20261121T0700Z"},
            "lastRunStatus": {"S": "SUCCEEDED"},
            "lastRunStats": {"M": {"rowsRead": {"N": "3"}}},
        },
        {"targetTableName": {"S": "fresh"}, "sourceSchema": {"S": "main"}, "sourceTable": {"S": "fresh"}},
    ]


def test_tables_left_out_of_a_tables_file_keep_their_saved_state():
    ran = [{"targetTableName": {"S": "customers"}, "watermark": {"N": "5"}}]

    assert keep_unconfigured([SAVED_ORDERS], ran) == [*ran, SAVED_ORDERS]


@pytest.mark.parametrize(
    ("now", "last", "expected"),
    [
        # The slot after now's: a local cycle runs "now", so a cdc run's stop position (the slot start,
        # never later than the lock time) is the lock time and every change made before is read.
        (datetime(2026, 11, 21, 7, 5, 42, tzinfo=UTC), None, datetime(2026, 11, 21, 7, 6, tzinfo=UTC)),
        (
            datetime(2026, 11, 21, 7, 5, 42, tzinfo=UTC),
            datetime(2026, 11, 21, 7, 1, tzinfo=UTC),
            datetime(2026, 11, 21, 7, 6, tzinfo=UTC),
        ),
        # A second cycle within the same minute (or after the clock went back) takes the next slot.
        (
            datetime(2026, 11, 21, 7, 5, 42, tzinfo=UTC),
            datetime(2026, 11, 21, 7, 6, tzinfo=UTC),
            datetime(2026, 11, 21, 7, 7, tzinfo=UTC),
        ),
        (
            datetime(2026, 11, 21, 7, 5, 42, tzinfo=UTC),
            datetime(2026, 11, 21, 7, 9, tzinfo=UTC),
            datetime(2026, 11, 21, 7, 10, tzinfo=UTC),
        ),
    ],
)
def test_each_cycle_gets_a_slot_of_its_own(now, last, expected):
    assert next_slot(now, last) == expected


def test_items_without_a_usable_key_are_rejected_with_their_position_and_reason():
    loadable = loadable_items(
        [
            {"targetTableName": "orders", "sourceSchema": "main", "sourceTable": "orders", "startvalue": 3},
            {"sourceTable": "no_key"},
            "not an object",
            {"targetTableName": {"S": "typed"}, "sourceTable": {"S": "t"}},
            {"targetTableName": "orders", "sourceTable": "again"},
        ]
    )

    assert loadable.typed == [
        {
            "targetTableName": {"S": "orders"},
            "sourceSchema": {"S": "main"},
            "sourceTable": {"S": "orders"},
            "startvalue": {"N": "3"},
        },
        {"targetTableName": {"S": "typed"}, "sourceTable": {"S": "t"}},
    ]
    assert loadable.rejected == [
        "#2: invalid control item: targetTableName: required (a non-empty string), the control table's key",
        "#3: invalid control item: is a JSON str, not an object",
        "#5: invalid control item: orders is listed more than once in the tables file; the first one is used",
    ]
