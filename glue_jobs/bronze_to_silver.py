"""Glue entrypoint: parse the arguments, build the session, run :func:`icetide_glue.job.run_job`.

AWS Glue runs this script, and only Glue: the arguments come through awsglue's
``getResolvedOptions``, the session is Glue's, its catalog (Glue Data Catalog + S3FileIO) set by
the job's ``--conf`` / ``--datalake-formats``. The run manifest is printed as the last line of
stdout. On a laptop, ``icetide job run`` runs the same job (cli/icetide_cli/job.py).

A refused run (an :class:`~icetide_glue.errors.IcetideJobError`) still fails the job run, so the
state machine's Catch sees it, but with one line, ``<ErrorName>: <message>``: Glue shows the last
exception's message as the run's ``ErrorMessage`` (Step Functions passes it on inside a
``States.TaskFailed`` cause), and the failure record takes the error's name from its start
(``icetide.run.failure``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from awsglue.utils import getResolvedOptions

from icetide_glue.arguments import JobArguments, parse_glue_options
from icetide_glue.commit.manifest import manifest_line
from icetide_glue.errors import IcetideJobError
from icetide_glue.job import run_job
from icetide_glue.session import build_session

SCRIPT_NAME = "bronze_to_silver.py"


def resolve_arguments(argv: Sequence[str]) -> JobArguments:
    """The job run's arguments through Glue's resolver (``argv`` without program name)."""
    return parse_glue_options([sys.argv[0] if sys.argv else SCRIPT_NAME, *argv], getResolvedOptions)


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the job; ``argv`` excludes the program name (default: ``sys.argv[1:]``)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = resolve_arguments(arguments)
        manifest = run_job(build_session(), args)
    except IcetideJobError as error:
        # Re-raised, not swallowed: the job run must fail. Its message starts with the error's
        # name whether or not Glue prefixes the class name itself (the failure record drops a
        # repeated name); the traceback stays in the job's error log.
        error.args = (error.summary(),)
        raise
    print(manifest_line(manifest), flush=True)
    return manifest


if __name__ == "__main__":
    main()
