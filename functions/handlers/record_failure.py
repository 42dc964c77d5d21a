"""RecordFailure: write a failed run's state and cause to its control item.

Input: ``{"targetTableName", "runId", "failedState", "cause"}``; ``cause`` is a string or the
Step Functions error object ``{"Error", "Cause"}``. Output: ``{"recorded": bool}``. Never touches
the watermark. Records nothing (``recorded: false``, logged) when the table has no control item,
or when another run holds the table's lock: that run's state is not this run's to overwrite (a
run refused with TableLocked must not mark the running one failed). Counts ``RunsFailed`` for the
stack (the failed-runs alarm) and for the table (the dashboard).
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters.control_table import ControlTable
from icetide.clock import stored_time, utc_now
from icetide.observability import MetricUnit, logger, metrics, observed, publish_table_metrics
from icetide.run.failure import failure_message
from icetide.run.handler_inputs import FailureInput, parse_input
from icetide.settings import load_settings


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(FailureInput, event)
    message = failure_message(run.cause)
    logger.error("run failed", extra={"failedState": run.failed_state, "error": message})
    metrics.add_metric(name="RunsFailed", unit=MetricUnit.Count, value=1)
    publish_table_metrics(run.target_table_name, [("RunsFailed", MetricUnit.Count, 1)])

    write = ControlTable(settings.control_table_name).record_failure(
        run.target_table_name,
        run.run_id,
        failed_state=run.failed_state,
        error=message,
        now=stored_time(utc_now()),
    )
    if not write.written:
        holder = (write.item or {}).get("lockHolder")
        logger.warning(
            "failure not recorded on the control item",
            extra={"reason": "no control item" if write.item is None else f"run {holder} holds the lock"},
        )
    return {"recorded": write.written}
