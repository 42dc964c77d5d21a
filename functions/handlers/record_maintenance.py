"""RecordMaintenance: end a maintenance run: its record on the control item, and the table unlocked.

Input: ``{"targetTableName", "runId", "plan"}`` after the job succeeded, or ``{"targetTableName",
"runId", "failedState"?, "error": {"Error", "Cause"}}`` when a state failed. Output:
``{"recorded": bool}``.

Success: reads the job's report at ``plan.reportUri`` (it must be this run's), writes
``lastMaintenance`` (status SUCCEEDED, files before and after, snapshots expired, orphans removed)
and releases the lock in one conditional write, only while this run holds the lock, and publishes
the report's numbers as metrics with the table as dimension. Raises MaintenanceReportInvalid (no
report, not the contract's, another run's) and LockLost (another run holds the lock, or nobody
does). Invoked again after its write, it finds its own record and changes nothing.

Failure: writes ``lastMaintenance`` (status FAILED, the error's name, a short cause) and releases the
lock in one write, unless another run holds the lock (then ``recorded`` is false: that run's table is
not this run's to touch); never raises for that.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import s3
from icetide.adapters.control_table import ControlTable
from icetide.clock import stored_time, utc_now
from icetide.errors import LockLost, MaintenanceReportInvalid
from icetide.maintenance import record
from icetide.maintenance.inputs import RecordMaintenanceInput
from icetide.maintenance.plan import MaintenancePlan
from icetide.observability import MetricUnit, logger, observed, publish_table_metrics
from icetide.run.failure import failure_message
from icetide.run.handler_inputs import parse_input
from icetide.settings import load_settings
from icetide_contracts.maintenance import MaintenanceReport


def _report(plan: MaintenancePlan) -> MaintenanceReport:
    try:
        content = s3.read_text(plan.report_uri)
    except s3.ObjectNotFound as missing:
        raise MaintenanceReportInvalid(
            f"no maintenance report at {plan.report_uri}: the Glue job did not write one"
        ) from missing
    return record.read_report(content, run_id=plan.run_id, report_uri=plan.report_uri)


def _succeeded(run: RecordMaintenanceInput, table: ControlTable, plan: MaintenancePlan) -> dict[str, Any]:
    report = _report(plan)
    entry = record.succeeded_record(report, report_uri=plan.report_uri, now=stored_time(utc_now()))
    write = table.finish_maintenance(run.target_table_name, run.run_id, entry, succeeded=True)
    if not write.written:
        if record.already_recorded(write.item, run.run_id, record.SUCCEEDED):
            logger.info("maintenance already recorded by an earlier invocation; nothing written again")
            return {"recorded": True}
        holder = (write.item or {}).get("lockHolder")
        held_by = f"run {holder} holds it" if holder else "nobody holds it"
        raise LockLost(
            f"maintenance run {run.run_id} of {run.target_table_name} no longer holds the table's lock "
            f"({held_by}); its report is not recorded"
        )
    publish_table_metrics(
        run.target_table_name,
        [
            (metric.name, MetricUnit.Bytes if metric.bytes else MetricUnit.Count, metric.value)
            for metric in record.report_metrics(report)
        ],
    )
    if report.skipped:
        logger.info("maintenance skipped", extra={"reason": report.skipped})
    return {"recorded": True}


def _failed(run: RecordMaintenanceInput, table: ControlTable) -> dict[str, Any]:
    message = failure_message(run.error)
    logger.error("maintenance failed", extra={"failedState": run.failed_state, "error": message})
    publish_table_metrics(run.target_table_name, [("MaintenanceFailures", MetricUnit.Count, 1)])
    entry = record.failed_record(
        run.run_id, failed_state=run.failed_state, error=message, now=stored_time(utc_now())
    )
    write = table.finish_maintenance(run.target_table_name, run.run_id, entry, succeeded=False)
    if not write.written:
        holder = (write.item or {}).get("lockHolder")
        if write.item is None:
            reason = "no control item"
        elif holder:
            reason = f"run {holder} holds the lock"
        else:
            reason = "this run's success is already recorded"
        logger.warning("maintenance failure not recorded on the control item", extra={"reason": reason})
    return {"recorded": write.written}


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(RecordMaintenanceInput, event)
    table = ControlTable(settings.control_table_name)
    if run.plan is not None and run.succeeded:
        return _succeeded(run, table, run.plan)
    return _failed(run, table)
