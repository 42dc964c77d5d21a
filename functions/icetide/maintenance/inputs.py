"""The maintenance handlers' inputs as typed models (parsed with ``icetide.run.handler_inputs.parse_input``).

acquire_maintenance_lock takes ``RunInput`` (table and run) like acquire_lock. record_maintenance
takes the run's plan on success, or the error a Catch caught on failure (then the plan may not
exist yet: the run failed before or at its lock).
"""

from __future__ import annotations

from typing import Any

from pydantic import Field, model_validator

from icetide.maintenance.plan import MaintenancePlan
from icetide.run.handler_inputs import RunInput


class RecordMaintenanceInput(RunInput):
    """record_maintenance: ``plan`` (success) or ``error`` ``{"Error", "Cause"}`` (failure)."""

    plan: MaintenancePlan | None = None
    error: dict[str, Any] | None = None
    # The state whose failure is recorded (the failure path passes it; absent on success).
    failed_state: str | None = Field(None, alias="failedState", min_length=1)

    @model_validator(mode="after")
    def _plan_or_error(self) -> RecordMaintenanceInput:
        if self.error is None and self.plan is None:
            raise ValueError("plan: required when no error is given (a succeeded run's report is in it)")
        # A plan of another run would record another run's report on this table.
        if self.plan is not None and (self.plan.target_table_name, self.plan.run_id) != (
            self.target_table_name,
            self.run_id,
        ):
            raise ValueError(
                f"plan is for {self.plan.target_table_name} run {self.plan.run_id}, "
                f"not for {self.target_table_name} run {self.run_id}"
            )
        return self

    @property
    def succeeded(self) -> bool:
        """True when the run's job and everything before it succeeded (no error handed over)."""
        return self.error is None
