"""What a maintenance run leaves on the control item (``lastMaintenance``) and in metrics.

The job's report (``icetide_contracts.maintenance.MaintenanceReport``) is read back from S3 and
must be this run's: a report of another run (an old object at the same key, a misrouted path)
would record numbers this run never produced. The record keeps what an operator asks first (did
it run, when, how many files before and after, how much history went) and leaves the rest in the
report object, whose URI it names.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from icetide.errors import MaintenanceReportInvalid
from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.maintenance import MaintenanceReport, TableFiles, TableMaintenance

SUCCEEDED = "SUCCEEDED"
FAILED = "FAILED"
# lastMaintenance.cause is for a person reading the item; the whole cause is in the execution.
MAX_CAUSE_LENGTH = 1000


def read_report(content: str | bytes, *, run_id: str, report_uri: str) -> MaintenanceReport:
    """The report in ``content``, which must be run ``run_id``'s; MaintenanceReportInvalid says why not."""
    try:
        report = MaintenanceReport.from_text(content)
    except ContractViolation as violation:
        raise MaintenanceReportInvalid(f"maintenance report {report_uri} is invalid: {violation}") from None
    if report.run_id != run_id:
        raise MaintenanceReportInvalid(
            f"the maintenance report {report_uri} is run {report.run_id}'s, not run {run_id}'s"
        )
    return report


def _files(files: TableFiles) -> dict[str, int]:
    return {
        "dataFiles": files.data_files,
        "deleteFiles": files.delete_files,
        "totalBytes": files.total_bytes,
        "snapshots": files.snapshots,
    }


def _table(maintenance: TableMaintenance) -> dict[str, Any]:
    return {"before": _files(maintenance.before), "after": _files(maintenance.after)}


def _total(report: MaintenanceReport, attribute: str) -> int:
    return sum(getattr(part, attribute) for part in (report.silver, report.tombstones) if part is not None)


def succeeded_record(report: MaintenanceReport, *, report_uri: str, now: str) -> dict[str, Any]:
    """``lastMaintenance`` of a run whose job succeeded. Counts summed over the silver table and its
    tombstone table (both are the table's storage); ``silver``/``tombstones`` keep each one's files."""
    record: dict[str, Any] = {
        "runId": report.run_id,
        "status": SUCCEEDED,
        "time": now,
        "reportUri": report_uri,
        "snapshotsExpired": _total(report, "snapshots_expired"),
        "orphanFilesRemoved": _total(report, "orphan_files_removed"),
        "dataFilesRewritten": _total(report, "data_files_rewritten"),
        "deleteFilesRewritten": _total(report, "delete_files_rewritten"),
    }
    if report.skipped is not None:
        record["skipped"] = report.skipped
    if report.silver is not None:
        record["silver"] = _table(report.silver)
    if report.tombstones is not None:
        record["tombstones"] = _table(report.tombstones)
    return record


def failed_record(run_id: str, *, failed_state: str | None, error: str, now: str) -> dict[str, Any]:
    """``lastMaintenance`` of a failed run: the error's name and a short cause (``error`` is
    ``icetide.run.failure.failure_message``'s ``"<Error>: <message>"``)."""
    name, separator, cause = error.partition(": ")
    record: dict[str, Any] = {
        "runId": run_id,
        "status": FAILED,
        "time": now,
        "error": name if separator else "Failed",
        "cause": (cause if separator else error)[:MAX_CAUSE_LENGTH],
    }
    if failed_state:
        record["failedState"] = failed_state
    return record


def already_recorded(item: dict[str, Any] | None, run_id: str, status: str) -> bool:
    """True when ``item`` already holds this run's record with ``status``: an invocation retried
    after its write whose answer was lost finds the run's own record and changes nothing."""
    if item is None or item.get("lockHolder") == run_id:
        return False
    last = item.get("lastMaintenance") or {}
    return bool(last.get("runId") == run_id and last.get("status") == status)


@dataclass(frozen=True)
class MaintenanceMetric:
    """One metric of a maintenance run (published with the table as a dimension)."""

    name: str
    value: int
    bytes: bool = False


def report_metrics(report: MaintenanceReport) -> list[MaintenanceMetric]:
    """The silver table's files and bytes before and after, and what the run removed."""
    metrics = [MaintenanceMetric("MaintenanceRuns", 1)]
    silver = report.silver
    if silver is None:
        return metrics
    return [
        *metrics,
        MaintenanceMetric("MaintenanceDataFilesBefore", silver.before.data_files),
        MaintenanceMetric("MaintenanceDataFilesAfter", silver.after.data_files),
        MaintenanceMetric("MaintenanceDeleteFilesBefore", silver.before.delete_files),
        MaintenanceMetric("MaintenanceDeleteFilesAfter", silver.after.delete_files),
        MaintenanceMetric("MaintenanceBytesBefore", silver.before.total_bytes, bytes=True),
        MaintenanceMetric("MaintenanceBytesAfter", silver.after.total_bytes, bytes=True),
        MaintenanceMetric("MaintenanceSnapshotsExpired", _total(report, "snapshots_expired")),
        MaintenanceMetric("MaintenanceOrphanFilesRemoved", _total(report, "orphan_files_removed")),
    ]
