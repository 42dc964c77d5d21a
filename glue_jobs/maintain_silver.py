"""Glue entrypoint of table maintenance: :func:`icetide_glue.maintenance.job.run_maintenance_job`.

AWS Glue runs this script, and only Glue (the maintenance state machine's "Run maintenance job"):
arguments through awsglue's ``getResolvedOptions``, the session and its Iceberg catalog from the
job's configuration, as for bronze_to_silver.py. The report goes to ``--report_uri`` and is printed
as the last line of stdout. A refused run (an :class:`~icetide_glue.errors.IcetideJobError`) fails
the job run with one line, ``<ErrorName>: <message>``, which the failure record keeps.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from awsglue.utils import getResolvedOptions

from icetide_glue.arguments import resolve_glue_options
from icetide_glue.commit.manifest import manifest_line
from icetide_glue.errors import IcetideJobError
from icetide_glue.maintenance.job import (
    OPTIONAL_ARGUMENTS,
    REQUIRED_ARGUMENTS,
    MaintenanceJobArguments,
    run_maintenance_job,
)
from icetide_glue.session import build_session

SCRIPT_NAME = "maintain_silver.py"


def resolve_arguments(argv: Sequence[str]) -> MaintenanceJobArguments:
    """The job run's arguments through Glue's resolver (``argv`` without program name)."""
    full = [sys.argv[0] if sys.argv else SCRIPT_NAME, *argv]
    options = resolve_glue_options(full, getResolvedOptions, REQUIRED_ARGUMENTS, OPTIONAL_ARGUMENTS)
    return MaintenanceJobArguments.from_options(options)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run one maintenance; ``argv`` excludes the program name (default: ``sys.argv[1:]``)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = resolve_arguments(arguments)
        report = run_maintenance_job(build_session(), args).to_json()
    except IcetideJobError as error:
        error.args = (error.summary(),)
        raise
    print(manifest_line(report), flush=True)
    return report


if __name__ == "__main__":
    main()
