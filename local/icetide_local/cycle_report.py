"""What one local cycle did: per table, the run's outcome and the control item before and after."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any


@dataclass(frozen=True)
class TableRun:
    """One table's run in a cycle, with its control item (plain values) before and after the run."""

    target_table_name: str
    run_id: str
    status: str
    started: datetime
    stopped: datetime | None
    error: str | None
    cause: str | None
    item_before: Mapping[str, Any]
    item_after: Mapping[str, Any]

    @property
    def succeeded(self) -> bool:
        return self.status == "SUCCEEDED"

    @property
    def duration_seconds(self) -> float | None:
        return None if self.stopped is None else (self.stopped - self.started).total_seconds()

    @property
    def watermark_before(self) -> Any:
        return self.item_before.get("watermark")

    @property
    def watermark_after(self) -> Any:
        return self.item_after.get("watermark")

    @property
    def stats(self) -> Mapping[str, Any]:
        """`lastRunStats` of this run (empty when it failed: a failure never writes statistics)."""
        if not self.succeeded:
            return {}
        return self.item_after.get("lastRunStats") or {}

    @property
    def failure(self) -> str | None:
        """Where and why the run failed, from the control item (what record_failure wrote), else
        from the execution (a failure before the item could be written)."""
        if self.succeeded:
            return None
        if self.item_after.get("lastRunId") == self.run_id and self.item_after.get("lastRunError"):
            return f"{self.item_after.get('lastFailedState')}: {self.item_after['lastRunError']}"
        return f"execution {self.status}: {self.error or 'no error name'}: {self.cause or 'no cause given'}"


@dataclass(frozen=True)
class CycleReport:
    """One schedule event's runs, and the items StartWorkflow did not run."""

    slot: str
    runs: tuple[TableRun, ...]
    inactive: tuple[str, ...] = ()
    invalid: tuple[Mapping[str, Any], ...] = ()
    not_loaded: tuple[str, ...] = field(default=())

    @property
    def succeeded(self) -> bool:
        """True when every active table ran and succeeded (an invalid item is a failed table)."""
        return all(run.succeeded for run in self.runs) and not self.invalid and not self.not_loaded

    def failures(self) -> list[str]:
        """One line per failed table: its name and the cause."""
        lines = [f"{run.target_table_name}: {run.failure}" for run in self.runs if not run.succeeded]
        lines += [
            f"{entry['targetTableName']}: invalid control item: {'; '.join(entry['errors'])}"
            for entry in self.invalid
        ]
        return lines + list(self.not_loaded)


HEADER = ("table", "status", "read", "inserted", "updated", "deleted", "watermark before -> after", "seconds")
STAT_NAMES = ("rowsRead", "rowsInserted", "rowsUpdated", "rowsDeleted")


def render_cycle(report: CycleReport) -> list[str]:
    """Readable lines for one cycle: a row per table run, then what did not run and why."""
    lines = [f"cycle {report.slot}"]
    rows: list[Sequence[str]] = [HEADER]
    for run in report.runs:
        stats = run.stats
        duration = run.duration_seconds
        rows.append(
            (
                run.target_table_name,
                run.status,
                *(_count(stats.get(name)) for name in STAT_NAMES),
                f"{_value(run.watermark_before)} -> {_value(run.watermark_after)}",
                "-" if duration is None else f"{duration:.1f}",
            )
        )
    lines += format_rows(rows) if report.runs else ["  no table ran"]
    lines += [f"  inactive (activeflag N): {name}" for name in report.inactive]
    lines += [f"  FAILED {failure}" for failure in report.failures()]
    return lines


def format_rows(rows: Sequence[Sequence[str]]) -> list[str]:
    """Rows as left-aligned columns, indented by two spaces."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    return [
        "  " + "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def _count(value: Any) -> str:
    return "-" if value is None else str(value)


def _value(value: Any) -> str:
    return "(none)" if value is None else str(value)
