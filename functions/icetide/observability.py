"""Powertools Logger, Tracer and Metrics, created once per process and shared by every handler.

Creating them once keeps one logger configuration (service name, log level, correlation keys)
and one metrics buffer per Lambda process; the service name and metrics namespace come from
POWERTOOLS_SERVICE_NAME and POWERTOOLS_METRICS_NAMESPACE, set in the SAM template's Globals.
"""

from __future__ import annotations

from aws_lambda_powertools import Logger, Metrics, Tracer
from aws_lambda_powertools.metrics import MetricUnit

logger = Logger()
tracer = Tracer()
metrics = Metrics()

__all__ = ["MetricUnit", "logger", "metrics", "tracer"]
