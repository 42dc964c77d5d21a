"""The sample events in events/ (used by `sam local invoke -e`) match the handlers' input contracts."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from icetide.maintenance.inputs import RecordMaintenanceInput
from icetide.run import handler_inputs, triggers
from icetide.run.abandoned import ExecutionStatusChange
from icetide.run.verify import VerifyRequest

EVENTS_DIR = Path(__file__).resolve().parents[2] / "events"
INPUT_OF_HANDLER: dict[str, type[BaseModel]] = {
    "start_workflow": handler_inputs.ScheduleEvent,
    "start_on_new_files": triggers.QueuedEvents,
    "acquire_lock": handler_inputs.RunInput,
    "release_lock": handler_inputs.RunInput,
    "ensure_replication_instance": handler_inputs.PlanInput,
    "create_replication_task": handler_inputs.CreateTaskInput,
    "ensure_continuous_task": handler_inputs.CreateTaskInput,
    "select_bronze_files": handler_inputs.SelectionInput,
    "start_replication_task": handler_inputs.TaskInput,
    "poll_replication_task": handler_inputs.TaskInput,
    "read_task_statistics": handler_inputs.TaskInput,
    "commit_watermark": handler_inputs.CommitInput,
    "delete_dms_resources": handler_inputs.CleanupInput,
    "record_failure": handler_inputs.FailureInput,
    "start_maintenance": handler_inputs.ScheduleEvent,
    "acquire_maintenance_lock": handler_inputs.RunInput,
    "record_maintenance": RecordMaintenanceInput,
    "clean_up_execution": ExecutionStatusChange,
    "sweep_dms_resources": handler_inputs.ScheduleEvent,
    "start_verify_run": VerifyRequest,
}


def test_there_is_one_sample_event_per_handler():
    handlers_dir = Path(__file__).resolve().parents[2] / "functions" / "handlers"
    handlers = {path.stem for path in handlers_dir.glob("*.py") if path.stem != "__init__"}
    assert {path.stem for path in EVENTS_DIR.glob("*.json")} == handlers == set(INPUT_OF_HANDLER)


@pytest.mark.parametrize("name", sorted(INPUT_OF_HANDLER))
def test_each_sample_event_is_valid_input_of_its_handler(name, load_event):
    parsed: Any = handler_inputs.parse_input(INPUT_OF_HANDLER[name], load_event(name))

    if name == "start_workflow":
        assert parsed.time == datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
    elif name == "start_maintenance":
        assert parsed.time == datetime(2026, 11, 21, 0, 0, tzinfo=UTC)
    elif name in ("acquire_maintenance_lock", "record_maintenance"):
        maintenance_run = "dbo_orders-maintain-20261121T0000Z"
        assert (parsed.target_table_name, parsed.run_id) == ("dbo_orders", maintenance_run)
    elif name == "start_on_new_files":
        # One SQS record: the events rule's event of a CDC file of dbo_orders' long-lived task,
        # written in the 07:00 slot.
        (record,) = parsed.records
        created = handler_inputs.parse_input(triggers.ObjectCreatedEvent, triggers.record_event(record))
        assert created.time == datetime(2026, 11, 21, 7, 3, 12, tzinfo=UTC)
        assert created.key.startswith("bronze/_continuous/dbo_orders/")
    elif name == "clean_up_execution":
        # dbo_orders' 07:00 run, stopped by hand while it ran.
        assert (parsed.status, parsed.run_id) == ("ABORTED", "dbo_orders-20261121T0700Z")
        assert parsed.target_table_name() == "dbo_orders"
    elif name == "sweep_dms_resources":
        assert parsed.time == datetime(2026, 11, 21, 9, 15, tzinfo=UTC)
    elif name == "start_verify_run":
        # A table only: the run id is the function's to make.
        assert parsed.execution_input() == {"targetTableName": "dbo_orders"}
    else:
        assert (parsed.target_table_name, parsed.run_id) == ("dbo_orders", "dbo_orders-20261121T0700Z")


def test_an_event_missing_its_parts_is_refused_naming_them(load_event):
    event = load_event("create_replication_task")
    del event["instance"]
    event["plan"]["bronzeUri"] = "bronze/dbo_orders"

    with pytest.raises(handler_inputs.InvalidHandlerInput) as raised:
        handler_inputs.parse_input(handler_inputs.CreateTaskInput, event)

    assert "plan.bronzeUri" in str(raised.value)
    assert "instance: required attribute is missing" in str(raised.value)
