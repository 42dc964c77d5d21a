"""Execute the real table-run state machine locally (moto), for tests and the local demo.

Not part of the Lambda code. :class:`LocalTableRunStack` is the entry point; see docs/state-machine.md.
"""

from icetide_local.harness.faults import SNS_PUBLISH, Fault, FaultPlan
from icetide_local.harness.report import RunReport
from icetide_local.harness.stack import DmsInventory, LocalTableRunStack, Notification, StackNames

__all__ = [
    "SNS_PUBLISH",
    "DmsInventory",
    "Fault",
    "FaultPlan",
    "LocalTableRunStack",
    "Notification",
    "RunReport",
    "StackNames",
]
