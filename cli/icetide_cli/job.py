"""`icetide job run`: the Glue job on a folder of DMS files, into a local Iceberg warehouse.

The one way to run the job outside Glue. It runs the same :func:`icetide_glue.job.run_job` as the
Glue entrypoint (glue_jobs/bronze_to_silver.py, Glue-only); only the session differs: local Spark
with a file-system catalog on ``--warehouse`` (:mod:`icetide_local.spark`) instead of Glue's
session and the Glue Data Catalog.
"""

from __future__ import annotations

import argparse
import sys
from datetime import UTC, datetime
from pathlib import Path

from icetide_cli.main import add_command_group
from icetide_glue.arguments import (
    DEFAULT_CHANGE_SEQUENCE_COLUMN,
    DEFAULT_TIMESTAMP_COLUMN,
    DEFAULT_TOMBSTONE_RETENTION_DAYS,
    DeleteMode,
    JobArguments,
    LoadMode,
)
from icetide_glue.errors import IcetideJobError, MissingPrimaryKeys
from icetide_glue.job import run_job
from icetide_glue.manifest import manifest_line
from icetide_local.jars import JarFetchError
from icetide_local.spark import DEFAULT_LOCAL_CATALOG, local_spark_session

EXIT_OK = 0
EXIT_JOB_FAILED = 1


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `job` group and its `run` command."""
    commands = add_command_group(
        subparsers,
        "job",
        help="run the bronze-to-silver Spark job locally",
        description="The Glue job, run locally.",
    )
    run = commands.add_parser(
        "run",
        help="dedupe a folder of DMS files and MERGE it into a local Iceberg table",
        description=(
            "Run the bronze-to-silver job on a folder of DMS parquet files (searched recursively) into "
            f"an Iceberg table of a local warehouse (Spark catalog {DEFAULT_LOCAL_CATALOG!r}). Prints "
            "the run manifest as the last line of stdout. Exit code 0: loaded; 1: the job refused or failed."
        ),
    )
    run.add_argument(
        "--bronze", required=True, metavar="DIR", help="folder holding this run's DMS parquet files"
    )
    run.add_argument(
        "--warehouse",
        required=True,
        metavar="DIR",
        help="local Iceberg warehouse directory (created if missing)",
    )
    run.add_argument("--table", required=True, metavar="DB.TABLE", help="silver table as database.table")
    run.add_argument(
        "--keys",
        default="",
        metavar="COL[,COL]",
        help="primary key column(s), comma-separated (needed to merge)",
    )
    run.add_argument(
        "--watermark-column",
        default="",
        metavar="COL",
        help="column whose largest value becomes the new watermark",
    )
    run.add_argument(
        "--timestamp-column",
        default=DEFAULT_TIMESTAMP_COLUMN,
        metavar="COL",
        help=f"DMS TimestampColumnName holding each change's time (default {DEFAULT_TIMESTAMP_COLUMN})",
    )
    run.add_argument(
        "--change-sequence-column",
        default=DEFAULT_CHANGE_SEQUENCE_COLUMN,
        metavar="COL",
        help=f"change sequence column, used when present (default {DEFAULT_CHANGE_SEQUENCE_COLUMN})",
    )
    run.add_argument(
        "--run-id",
        default="",
        metavar="ID",
        help="run id recorded in the snapshot (default: manual-<UTC time>)",
    )
    run.add_argument(
        "--append-only", action="store_true", help="append every row instead of merging (tables without keys)"
    )
    run.add_argument(
        "--manifest", default="", metavar="PATH", help="also write the run manifest JSON to PATH"
    )
    run.add_argument(
        "--expected-rows",
        default="",
        metavar="N",
        help=(
            "rows DMS reported for these files (its fullLoadRows); the job refuses to commit, with "
            "BronzeRowCountMismatch, when the folder holds another number. Default: not checked"
        ),
    )
    run.add_argument(
        "--delete-mode",
        choices=[mode.value for mode in DeleteMode],
        default=DeleteMode.HARD.value,
        help=(
            "what an Op D row does: 'hard' removes the key's row; 'soft' keeps it with its last known "
            "values and sets _icetide_deleted_at to the delete's change time (default hard)"
        ),
    )
    run.add_argument(
        "--tombstone-retention-days",
        default=str(DEFAULT_TOMBSTONE_RETENTION_DAYS),
        metavar="DAYS",
        help=(
            "how long a deleted key is remembered in <table>__icetide_tombstones, counted back from the "
            "batch's newest change time, so an older change arriving later cannot bring it back "
            f"(default {DEFAULT_TOMBSTONE_RETENTION_DAYS})"
        ),
    )
    run.add_argument(
        "--reconcile",
        default="",
        metavar="DIR",
        help=(
            "folder of a key-only full load of the source (DMS parquet: Op, the timestamp column, the "
            "keys); silver keys it lacks, changed at or before --reconcile-started-at, are deleted "
            "(soft-deleted with --delete-mode soft) in this run's commit. Merge tables only"
        ),
    )
    run.add_argument(
        "--reconcile-expected-rows",
        default="",
        metavar="N",
        help=(
            "rows DMS reported for the key extraction; refused (BronzeRowCountMismatch) when the folder "
            "holds another number. An empty or missing folder needs 0 here to mean an empty source"
        ),
    )
    run.add_argument(
        "--reconcile-started-at",
        default="",
        metavar="TIME",
        help="when the key extraction started, ISO-8601 UTC (2026-11-24T10:00:00Z); needed with --reconcile",
    )
    run.set_defaults(handler=run_command)


def job_arguments(args: argparse.Namespace) -> JobArguments:
    """The CLI's options as the Glue job's arguments (validated by the same model)."""
    if not args.keys.strip() and not args.append_only:
        # Said in the CLI's own terms; the model would name the Glue job's arguments.
        raise MissingPrimaryKeys(
            f"{args.table}: merging needs --keys; a table without keys needs --append-only"
        )
    run_id = args.run_id or datetime.now(UTC).strftime("manual-%Y%m%dT%H%M%SZ")
    return JobArguments.from_options(
        {
            "target_table": args.table,
            "run_id": run_id,
            "bronze_uri": str(Path(args.bronze).resolve()),
            "manifest_uri": args.manifest,
            "primary_keys": args.keys,
            "load_mode": (LoadMode.APPEND if args.append_only else LoadMode.MERGE).value,
            "watermark_column": args.watermark_column,
            "timestamp_column": args.timestamp_column,
            "change_sequence_column": args.change_sequence_column,
            "catalog": DEFAULT_LOCAL_CATALOG,
            "expected_rows": args.expected_rows,
            "delete_mode": args.delete_mode,
            "tombstone_retention_days": args.tombstone_retention_days,
            "reconcile_uri": str(Path(args.reconcile).resolve()) if args.reconcile else "",
            "reconcile_expected_rows": args.reconcile_expected_rows,
            "reconcile_started_at": args.reconcile_started_at,
        }
    )


def run_command(args: argparse.Namespace) -> int:
    """Handler of `icetide job run`: errors go to stderr as ONE line with exit code 1, the manifest
    to stdout.

    Spark logs a failed task's Java stack trace at ERROR level as well, on the same terminal; the
    job turns such failures into named errors (e.g. an unreadable bronze file), so only fatal JVM
    logs are kept while the job runs here.
    """
    try:
        job_args = job_arguments(args)
        spark = local_spark_session(
            Path(args.warehouse), catalog=DEFAULT_LOCAL_CATALOG, app_name="icetide-job-run"
        )
        spark.sparkContext.setLogLevel("FATAL")
        manifest = run_job(spark, job_args)
    except (IcetideJobError, JarFetchError) as error:
        print(f"error: {type(error).__name__}: {' '.join(str(error).split())}", file=sys.stderr)
        return EXIT_JOB_FAILED
    except Exception as error:  # anything unforeseen still ends as one line, never a traceback
        text = " ".join(str(error).split())[:500]
        print(f"error: {type(error).__name__} (unexpected; please report it): {text}", file=sys.stderr)
        return EXIT_JOB_FAILED
    print(manifest_line(manifest), flush=True)
    return EXIT_OK
