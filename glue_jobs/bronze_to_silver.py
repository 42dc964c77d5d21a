"""Glue entrypoint: parse the arguments, build the session, run :func:`icetide_glue.job.run_job`.

On Glue the arguments come through ``getResolvedOptions`` and the catalog (Glue Data Catalog +
S3FileIO) through the job's ``--conf`` / ``--datalake-formats``. Without awsglue the same
``--name value`` arguments go through argparse, and ``--warehouse DIR`` selects a local
file-system catalog. The run manifest is printed as the last line of stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pyspark.sql import SparkSession

from icetide_glue.arguments import JobArguments, parse_command_line, parse_glue_options
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
    args = resolve_arguments(arguments)
    manifest = run_job(build_session(args), args)
    print(manifest_line(manifest), flush=True)
    return manifest


if __name__ == "__main__":
    main()
