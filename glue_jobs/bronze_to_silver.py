"""Glue entrypoint: parse the arguments, build the session, run :func:`icetide_glue.job.run_job`.

On Glue the arguments come through ``getResolvedOptions`` and the catalog (Glue Data Catalog +
S3FileIO) through the job's ``--conf`` / ``--datalake-formats``. Without awsglue the same
``--name value`` arguments go through argparse, and ``--warehouse DIR`` selects a local
file-system catalog. The run manifest is printed as the last line of stdout.

A refused run (an :class:`~icetide_glue.errors.IcetideJobError`) still fails the job run, so the
state machine's Catch sees it, but with one line, ``<ErrorName>: <message>``: Glue shows the last
exception's message as the run's ``ErrorMessage`` (Step Functions passes it on inside a
``States.TaskFailed`` cause), and the failure record takes the error's name from its start
(``icetide.run.failure``).
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from icetide_glue.arguments import JobArguments, parse_command_line, parse_glue_options
from icetide_glue.errors import IcetideJobError
from icetide_glue.job import run_job
from icetide_glue.manifest import manifest_line


def resolve_arguments(argv: Sequence[str]) -> JobArguments:
    """Glue's resolver when running on Glue, argparse otherwise (``argv`` without program name)."""
    try:
        from awsglue.utils import getResolvedOptions
    except ImportError:
        return parse_command_line(argv)
    return parse_glue_options([sys.argv[0] if sys.argv else "bronze_to_silver.py", *argv], getResolvedOptions)


def build_session(args: JobArguments) -> SparkSession:
    """The Glue job's session, or with ``--warehouse`` the local one (Iceberg jars, hadoop catalog)."""
    if args.warehouse:
        # Local only: icetide_local is not deployed to Glue.
        from icetide_local.spark import local_spark_session

        return local_spark_session(
            Path(args.warehouse), catalog=args.catalog, app_name="icetide-bronze-to-silver"
        )
    spark = SparkSession.builder.getOrCreate()
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark


def main(argv: Sequence[str] | None = None) -> dict[str, Any]:
    """Run the job; ``argv`` excludes the program name (default: ``sys.argv[1:]``)."""
    arguments = list(sys.argv[1:] if argv is None else argv)
    try:
        args = resolve_arguments(arguments)
        manifest = run_job(build_session(args), args)
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
