"""The scenario's stack on a real account: a deployed icetide stack, found by its CloudFormation name.

Resources come from the stack's outputs (as the CLI finds them: icetide_cli.operator_target), each
function's role from its configuration, silver through Iceberg's Glue catalog (pyiceberg), and
permissions from IAM's policy simulator.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from icetide.clock import utc_now
from icetide.run.plan import silver_table_name
from icetide_acceptance.iam_simulation import RUN_NEEDS, AwsPolicySimulator, PolicySimulator
from icetide_acceptance.scenario import KEY_COLUMN, upcoming_run
from icetide_cli.operator_target import StackTarget

SLOT_PARAMETER = "ScheduleSlotMinutes"
DEFAULT_SLOT_MINUTES = 60


class DeployedStack:
    """A :class:`icetide_acceptance.scenario.ScenarioStack` over a deployed stack."""

    kind = "aws"

    def __init__(self, stack_name: str) -> None:
        self._target = StackTarget(stack_name)
        self.state_machine_arn = self._target.output("TableRunStateMachineArn")
        self.control_table = self._target.output("ControlTableName")
        self.source_endpoint_arn = self._target.output("SourceEndpointArn")
        self._slot_minutes = int(self._target.parameter(SLOT_PARAMETER) or DEFAULT_SLOT_MINUTES)
        self._runs = 0

    def client(self, service: str) -> Any:
        return self._target.client(service)

    def next_run_id(self, table: str) -> tuple[str, dict[str, str]]:
        self._runs += 1
        return upcoming_run(table, utc_now(), self._slot_minutes, self._runs)

    def function_roles(self) -> dict[str, str]:
        """Role ARN of each function of RUN_NEEDS, from the stack's resources."""
        cloudformation, functions = self.client("cloudformation"), self.client("lambda")
        roles = {}
        for page in cloudformation.get_paginator("list_stack_resources").paginate(
            StackName=self._target.stack_name
        ):
            for resource in page["StackResourceSummaries"]:
                if resource["LogicalResourceId"] in RUN_NEEDS:
                    configuration = functions.get_function_configuration(
                        FunctionName=resource["PhysicalResourceId"]
                    )
                    roles[resource["LogicalResourceId"]] = str(configuration["Role"])
        return roles

    def during_full_load(self, change: Callable[[], None]) -> Callable[[], None] | None:
        return change  # made when the run's task is first seen running with its full load unfinished

    def simulator(self) -> PolicySimulator:
        return AwsPolicySimulator(self.client("iam"))

    def silver_rows(self, table: str) -> dict[Any, Any] | None:
        """Key -> note of silver's rows, read through the Glue catalog."""
        from pyiceberg.catalog.glue import GlueCatalog

        silver = silver_table_name(self._target.output("GlueDatabaseName"), table)
        catalog = GlueCatalog("glue", **{"client.region": str(self._target.session().region_name)})  # type: ignore[arg-type]
        rows = catalog.load_table(silver).scan(selected_fields=(KEY_COLUMN, "note")).to_arrow()
        return dict(zip(rows.column(KEY_COLUMN).to_pylist(), rows.column("note").to_pylist(), strict=True))
