"""The local stack: icetide's real handlers, state machine and Glue job, with moto for AWS, the DMS
stand-in moving rows from a real database, and Spark + Iceberg on this machine (docs/local.md)."""

from icetide_local.stack.local_stack import LocalStack, StartWorkflowFailed
from icetide_local.stack.report import CycleReport, TableRun

__all__ = ["CycleReport", "LocalStack", "StartWorkflowFailed", "TableRun"]
