"""The table-run state machine, executed by moto's Step Functions interpreter with icetide's handlers.

:class:`TableRunHarness` (``harness``) is the entry point, for the state-machine tests and as the
base of :class:`icetide_local.local_stack.LocalStack`; docs/state-machine.md shows it at work.
``definition`` fills the ASL's placeholders as SAM does, ``lambdas`` serves Lambda invocations
in-process, ``moto_patches`` fixes moto's interpreter where it fails this machine, ``faults``
injects failures, ``execution_report`` reads an execution's history back.
"""

from icetide_local.stepfunctions.execution_report import RunReport
from icetide_local.stepfunctions.faults import SNS_PUBLISH, Fault, FaultPlan
from icetide_local.stepfunctions.harness import DmsInventory, Notification, StackNames, TableRunHarness

__all__ = [
    "SNS_PUBLISH",
    "DmsInventory",
    "Fault",
    "FaultPlan",
    "Notification",
    "RunReport",
    "StackNames",
    "TableRunHarness",
]
