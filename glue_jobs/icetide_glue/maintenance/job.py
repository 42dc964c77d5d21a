"""One maintenance run: its arguments, the pass, and the report it writes for record_maintenance.

The same on Glue (glue_jobs/maintain_silver.py), in the local stack's Glue stand-in and from
``icetide job maintain``; only the session differs. The state machine passes ``--target_table``,
``--run_id``, ``--report_uri`` and the table's policy (:meth:`MaintenancePolicy.job_arguments`);
a table no run has created yet is not an error: the report says it was skipped.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime

from pyspark.sql import SparkSession

from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.maintenance import JOB_ARGUMENTS, MaintenancePolicy, MaintenanceReport
from icetide_glue.arguments import DEFAULT_CATALOG
from icetide_glue.commit.manifest import write_json_document
from icetide_glue.errors import IcetideJobError, InvalidJobArguments
from icetide_glue.maintenance.maintain import maintain_table
from icetide_glue.silver import SilverTable, table_exists

REQUIRED_ARGUMENTS = ("target_table", "run_id")
OPTIONAL_ARGUMENTS = ("report_uri", "catalog", *JOB_ARGUMENTS.values())
_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$")
NO_TABLE_YET = "no silver table yet: no run has loaded this table"


class MaintenanceReportWriteError(IcetideJobError):
    """The maintenance report could not be written to ``--report_uri``."""


@dataclass(frozen=True)
class MaintenanceJobArguments:
    """A maintenance run's arguments, checked before Spark does anything."""

    target_table: str
    run_id: str
    report_uri: str | None = None
    catalog: str = DEFAULT_CATALOG
    policy: MaintenancePolicy = field(default_factory=MaintenancePolicy)

    @property
    def table(self) -> SilverTable:
        database, name = self.target_table.split(".")
        return SilverTable(self.catalog, database, name)

    @classmethod
    def from_options(cls, options: Mapping[str, str | None]) -> MaintenanceJobArguments:
        """From ``{argument name (no --): value}``; InvalidJobArguments names what is wrong."""

        def value(name: str) -> str:
            return (options.get(name) or "").strip()

        missing = [name for name in REQUIRED_ARGUMENTS if not value(name)]
        if missing:
            raise InvalidJobArguments(f"missing required argument(s): {', '.join('--' + n for n in missing)}")
        if not _TABLE_NAME.match(value("target_table")):
            raise InvalidJobArguments(f"--target_table must be database.table, got {value('target_table')!r}")
        if not _RUN_ID.match(value("run_id")):
            raise InvalidJobArguments(f"--run_id {value('run_id')!r} is not a valid run id")
        catalog = value("catalog") or DEFAULT_CATALOG
        if not _CATALOG_NAME.match(catalog):
            raise InvalidJobArguments(f"--catalog {catalog!r} is not a valid catalog name")
        try:
            policy = MaintenancePolicy.from_job_arguments(
                {name: value(name) for name in JOB_ARGUMENTS.values()}
            )
        except ContractViolation as violation:
            raise InvalidJobArguments(str(violation)) from None
        return cls(
            target_table=value("target_table"),
            run_id=value("run_id"),
            report_uri=value("report_uri") or None,
            catalog=catalog,
            policy=policy,
        )


def run_maintenance_job(
    spark: SparkSession, args: MaintenanceJobArguments, *, now: datetime | None = None
) -> MaintenanceReport:
    """Maintain ``args.table`` (or skip it: not created yet), write the report to
    ``args.report_uri`` when given, and return it."""
    table = args.table
    if table_exists(spark, table):
        report = maintain_table(spark, table, args.policy, now).report(args.run_id)
    else:
        report = MaintenanceReport(
            run_id=args.run_id, table=str(table), skipped=NO_TABLE_YET, policy=args.policy
        )
    if args.report_uri:
        write_json_document(
            args.report_uri,
            report.to_json(),
            what="the maintenance report",
            argument="--report_uri",
            error=MaintenanceReportWriteError,
        )
    return report
