"""Powertools Logger, Tracer and Metrics, created once per process and shared by every handler.

Creating them once keeps one logger configuration (service name, log level, correlation keys)
and one metrics buffer per Lambda process; the service name and metrics namespace come from
POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE, set in the SAM template's Globals.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import EphemeralMetrics, MetricUnit

# Where the run id sits in every per-run handler event: inject_lambda_context makes it the
# correlation id of each log line, so one run's lines can be found across all its functions.
RUN_ID = "runId"

logger = Logger()
tracer = Tracer()
metrics = Metrics()

# Some handlers (release_lock, poll_replication_task...) have nothing to count on most calls;
# Powertools would warn about that on every invocation, which only buries real warnings.
warnings.filterwarnings("ignore", message="No application metrics to publish")

Handler = Callable[[dict[str, Any], Any], Any]


def observed(correlation_id_path: str | None = RUN_ID) -> Callable[[Handler], Handler]:
    """The one Powertools wrapping of every handler: context in logs, an X-Ray segment, metrics flushed.

    Per-run handlers log their run id as the correlation id; StartWorkflow, which serves many runs,
    passes None.
    """

    def wrap(handler: Handler) -> Handler:
        traced = tracer.capture_lambda_handler(metrics.log_metrics(handler))
        wrapped: Handler = logger.inject_lambda_context(correlation_id_path=correlation_id_path)(traced)
        return wrapped

    return wrap


__all__ = ["RUN_ID", "MetricUnit", "logger", "metrics", "observed", "tracer"]


def publish_table_metrics(table: str, values: list[tuple[str, MetricUnit, float]]) -> None:
    """Publish ``values`` (name, unit, value) now, with ``table`` as their one dimension.

    A buffer of their own, not the shared one: a dimension added to the shared buffer would stay on
    every metric of the invocation, and in-process local runs of several tables share the buffer.
    """
    table_metrics = EphemeralMetrics()
    table_metrics.add_dimension(name="table", value=table)
    for name, unit, value in values:
        table_metrics.add_metric(name=name, unit=unit, value=value)
    table_metrics.flush_metrics()
