"""Starting the executions a schedule event decided on, each at most once, whatever the others do.

Shared by the merge schedule (StartWorkflow) and the maintenance schedule (StartMaintenance): both
start one execution per table and slot, skip a table a live run holds (its execution would only be
refused at the lock) and go on after one table's start fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from icetide.adapters.control_table import ControlTable
from icetide.observability import logger
from icetide.run.scheduling import ScheduleSummary, Triage, triage

# (execution name, execution input) -> True when this call started it (False: it existed already).
StartExecution = Callable[[str, Mapping[str, Any]], bool]


def triaged_control_items(control_table_name: str) -> Triage:
    """Every control item of the table, triaged (``icetide.run.scheduling.triage``); each invalid
    one is logged as an error with its problems, and skipped."""
    triaged = triage(ControlTable(control_table_name).scan_items())
    for invalid in triaged.invalid:
        logger.error("invalid control item skipped", extra=invalid)
    return triaged


@dataclass(frozen=True)
class PlannedRun:
    """One execution a schedule event would start; ``locked_by`` names the live run that stops it."""

    target_table_name: str
    run_id: str
    execution_input: Mapping[str, Any]
    locked_by: str | None = None


def start_runs(runs: Iterable[PlannedRun], start: StartExecution, summary: ScheduleSummary) -> None:
    """Start each run not locked out, recording in ``summary`` what became of each.

    A failed start is recorded under ``failed`` (run id -> reason) and the next run is tried.
    """
    for run in runs:
        if run.locked_by is not None:
            summary.locked[run.target_table_name] = run.locked_by
            continue
        try:
            started = start(run.run_id, run.execution_input)
        except Exception as error:  # one table's failed start must not hold back the others
            summary.failed[run.run_id] = f"{type(error).__name__}: {error}"
            continue
        (summary.started if started else summary.already_started).append(run.run_id)
