"""`icetide job run` and `icetide job maintain`: the Glue job (and its table maintenance), locally.

The one way to run the job outside Glue. It runs the same :func:`icetide_glue.job.run_job` as the
Glue entrypoint (glue_jobs/bronze_to_silver.py, Glue-only); only the session differs: local Spark
with a file-system catalog on ``--warehouse`` (:mod:`icetide_local.spark`) instead of Glue's
session and the Glue Data Catalog.

``--bronze`` may be repeated: the folders are successive runs of the one table, run in the given
order in ONE Spark session, so a replay of several DMS batches pays the JVM and session start-up,
which costs more than a small run itself, once instead of once a folder.

``--bronze-files`` replays one run of a continuous cdc table: only the files its bronze file
selection lists are merged, read from ``--bronze``, a local copy of the selection's S3 folder.

``icetide job maintain`` runs the maintenance step (:func:`icetide_glue.maintenance.maintain.maintain_table`)
on one table of a local warehouse, in the same session configuration.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from icetide_cli.main import add_command_group
from icetide_contracts.bronze_files import BronzeFiles
from icetide_contracts.maintenance import JOB_ARGUMENTS, MaintenancePolicy
from icetide_glue.arguments import (
    DEFAULT_CHANGE_SEQUENCE_COLUMN,
    DEFAULT_MAX_DRIVER_CHANGES,
    DEFAULT_TIMESTAMP_COLUMN,
    DEFAULT_TOMBSTONE_RETENTION_DAYS,
    DeleteMode,
    JobArguments,
    LoadMode,
    MergePlanChoice,
)
from icetide_glue.commit.manifest import manifest_line
from icetide_glue.errors import (
    IcetideJobError,
    InvalidBronzeFileSelection,
    InvalidJobArguments,
    MissingPrimaryKeys,
)

# pyspark (the spark extra) loads when a command runs, not when `icetide --help` lists the commands;
# so does icetide_local.spark, whose catalog name (DEFAULT_LOCAL_CATALOG) the help below spells out.
if TYPE_CHECKING:
    from icetide_glue.maintenance.job import MaintenanceJobArguments


def local_spark_session(warehouse: Path, **options: Any) -> Any:
    """:func:`icetide_local.spark.local_spark_session`, imported when a command runs."""
    from icetide_local.spark import local_spark_session as build

    return build(warehouse, **options)


def run_job(spark: Any, job_args: JobArguments, **options: Any) -> Any:
    """:func:`icetide_glue.job.run_job`, imported when a command runs."""
    from icetide_glue.job import run_job as run

    return run(spark, job_args, **options)


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
        help="dedupe folders of DMS files and MERGE them into a local Iceberg table",
        description=(
            "Run the bronze-to-silver job on a folder of DMS parquet files (searched recursively) into "
            "an Iceberg table of a local warehouse (Spark catalog 'local'). Repeat "
            "--bronze to replay several batches: the folders run in the given order, as successive "
            "runs of the table, in one Spark session, so the JVM start-up (15-20 s) is paid once. "
            "Prints each run's manifest as one line of stdout as the run finishes. The first run "
            "that fails stops the command: later folders are not run (a batch applied without an "
            "earlier one could be wrong); earlier runs stay committed. Exit code 0: all loaded; "
            "1: the job refused or failed."
        ),
    )
    run.add_argument(
        "--bronze",
        required=True,
        action="append",
        metavar="DIR",
        help=(
            "folder holding one run's DMS parquet files; repeat it to run several folders in that "
            "order, as runs <run-id>-1, <run-id>-2, ..."
        ),
    )
    run.add_argument(
        "--warehouse",
        required=True,
        metavar="DIR",
        help="local Iceberg warehouse directory (created if missing)",
    )
    run.add_argument(
        "--bronze-files",
        default="",
        metavar="FILE",
        help=(
            "bronze file selection (BronzeFiles JSON, e.g. a continuous run's "
            "<manifests>/<table>/<run id>.bronze-files.json): merge only the files it lists, read at their "
            "keys below --bronze DIR, a local copy of the selection's bronzeUri folder. The run id defaults "
            "to the selection's runId; another --run-id is refused (BronzeFileSelectionMismatch). One "
            "--bronze folder only"
        ),
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
        help=(
            "run id recorded in the snapshot (default: manual-<UTC time>, or the --bronze-files selection's "
            "runId); with several --bronze "
            "folders, the n-th folder's run is <run-id>-<n> (so the same folder run alone later is a "
            "new run id; its changes are then older than or equal to silver's and change nothing)"
        ),
    )
    run.add_argument(
        "--append-only", action="store_true", help="append every row instead of merging (tables without keys)"
    )
    run.add_argument(
        "--manifest",
        default="",
        metavar="PATH",
        help=(
            "also write the run manifest JSON to PATH; one --bronze folder only (with several, each "
            "run's manifest is its line on stdout)"
        ),
    )
    run.add_argument(
        "--expected-rows",
        default="",
        metavar="N",
        help=(
            "rows DMS reported its full load added (its FullLoadRows); the job refuses to commit, "
            "with BronzeRowCountMismatch, when the folder's LOAD files hold another number (CDC "
            "files are not checked); one --bronze folder only. Default: not checked"
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
        "--driver-merge-max-changes",
        default=str(DEFAULT_MAX_DRIVER_CHANGES),
        metavar="ROWS",
        help=(
            "a qualifying merge (hard deletes, no schema change, a small planned read of silver) of at "
            "most this many bronze rows runs on the driver without a Spark job; 0: every merge on Spark "
            f"(default {DEFAULT_MAX_DRIVER_CHANGES})"
        ),
    )
    run.add_argument(
        "--merge-plan",
        choices=[plan.value for plan in MergePlanChoice],
        default=MergePlanChoice.AUTO.value,
        help=(
            "how a merge runs: 'auto' lets the job choose the driver or Spark (the driver only for a "
            "run it can take); 'spark' merges on Spark; 'driver' merges on the driver with no limit on "
            "the changes, and fails a run the driver cannot merge, naming why, instead of going to "
            "Spark (default auto)"
        ),
    )
    run.add_argument(
        "--reconcile",
        default="",
        metavar="DIR",
        help=(
            "folder of a key-only full load of the source (DMS parquet: Op, the timestamp column, the "
            "keys); silver keys it lacks, changed at or before --reconcile-started-at, are deleted "
            "(soft-deleted with --delete-mode soft) in this run's commit. Merge tables only; one "
            "--bronze folder only"
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
    register_maintain(commands)


def register_maintain(commands: argparse._SubParsersAction) -> None:
    """Add `job maintain`."""
    maintain = commands.add_parser(
        "maintain",
        help="compact, expire snapshots and remove orphan files of one local silver table",
        description=(
            "Maintain one silver table of a local warehouse with Iceberg's own procedures, as the "
            "maintenance Glue job does: record its committed runs in its run ledger, rewrite data "
            "files (sorted when the table has a sort order, else bin-packed) and position-delete "
            "files, expire old snapshots, remove orphan files, and the same for its tombstone table. "
            "Rows are never changed. Never run it while a run of the same table is loading (`icetide "
            "local maintain` takes the table's lock). Prints files, bytes and snapshots before and "
            "after. Policy defaults are those of a control item without `maintenance`. Exit code 0: "
            "maintained; 1: refused or failed."
        ),
    )
    maintain.add_argument(
        "--warehouse",
        required=True,
        metavar="DIR",
        help="local Iceberg warehouse directory holding the table",
    )
    maintain.add_argument("--table", required=True, metavar="DB.TABLE", help="silver table as database.table")
    maintain.add_argument(
        "--run-id",
        default="",
        help="this maintenance run's id (default: manual-maintain-<UTC time>)",
    )
    maintain.add_argument("--report", default="", metavar="PATH", help="also write the report JSON to PATH")
    for key, argument in JOB_ARGUMENTS.items():
        maintain.add_argument(
            f"--{argument.replace('_', '-')}",
            dest=argument,
            default="",
            metavar="N",
            help=f"{POLICY_HELP[key]} (control item: maintenance.{key}; default {POLICY_DEFAULTS[key]})",
        )
    maintain.add_argument("--json", action="store_true", help="print the report as one JSON object")
    maintain.set_defaults(handler=maintain_command)


POLICY_HELP = {
    "snapshotRetentionHours": "expire snapshots older than N hours",
    "minSnapshots": "always keep at least the newest N snapshots, however old",
    "orphanAgeHours": (
        "remove unreferenced files only when older than N hours; at least 24 (a younger file may "
        "belong to a commit in flight)"
    ),
    "minInputFiles": "rewrite a group of small files only when it has at least N files",
    "deleteFileThreshold": "rewrite a data file that has at least N delete files",
    "targetFileSizeBytes": "size of the rewritten data files in bytes (the table's own setting)",
}
POLICY_DEFAULTS = {key: value for key, value in MaintenancePolicy().to_json().items() if key in JOB_ARGUMENTS}


def maintenance_arguments(args: argparse.Namespace) -> MaintenanceJobArguments:
    """The command's options as the maintenance job's arguments (checked before Spark starts)."""
    from icetide_glue.maintenance.job import MaintenanceJobArguments
    from icetide_local.spark import DEFAULT_LOCAL_CATALOG

    return MaintenanceJobArguments.from_options(
        {
            "target_table": args.table,
            "run_id": args.run_id or datetime.now(UTC).strftime("manual-maintain-%Y%m%dT%H%M%SZ"),
            "report_uri": args.report,
            "catalog": DEFAULT_LOCAL_CATALOG,
            **{argument: getattr(args, argument) for argument in JOB_ARGUMENTS.values()},
        }
    )


def maintenance_lines(report: dict[str, Any]) -> list[str]:
    """A maintenance report (the contract's JSON) as a few readable lines, one per table."""
    if report.get("skipped"):
        return [f"{report['table']}: skipped: {report['skipped']}"]
    lines = []
    for one in (report.get("silver"), report.get("tombstones")):
        if not one:
            continue
        before, after = one["before"], one["after"]
        lines.append(
            f"{one['table']}: data files {before['dataFiles']} -> {after['dataFiles']}, "
            f"delete files {before['deleteFiles']} -> {after['deleteFiles']}, "
            f"bytes {before['totalBytes']} -> {after['totalBytes']}, "
            f"snapshots {before['snapshots']} -> {after['snapshots']} "
            f"({one['snapshotsExpired']} expired, {one['dataFilesRewritten']} data files rewritten "
            f"({one['strategy']}), {one['orphanFilesRemoved']} orphan files removed)"
        )
    return lines


def maintain_command(args: argparse.Namespace) -> int:
    """Handler of `icetide job maintain`: the report on stdout, an error as one line on stderr."""
    from icetide_glue.maintenance.job import run_maintenance_job
    from icetide_glue.silver import table_exists
    from icetide_local.spark import DEFAULT_LOCAL_CATALOG

    try:
        job_args = maintenance_arguments(args)
        spark = local_spark_session(
            Path(args.warehouse), catalog=DEFAULT_LOCAL_CATALOG, app_name="icetide-job-maintain"
        )
        spark.sparkContext.setLogLevel("FATAL")
        if not table_exists(spark, job_args.table):
            raise InvalidJobArguments(f"{args.table}: no such table in the warehouse {args.warehouse}")
        report = run_maintenance_job(spark, job_args).to_json()
    except Exception as error:  # anything, foreseen or not, ends as one line, never a traceback
        print(f"error: {error_text(error)}", file=sys.stderr)
        return EXIT_JOB_FAILED
    if args.json:
        print(json.dumps(report), flush=True)
    else:
        for line in maintenance_lines(report):
            print(line, flush=True)
    return EXIT_OK


# Options that belong to one run, refused with several --bronze folders, and why.
ONE_RUN_OPTIONS: dict[str, str] = {
    "manifest": "--manifest writes one run's manifest (stdout has each run's manifest line)",
    "expected_rows": "--expected-rows is the row count of one folder's files",
    "reconcile": "--reconcile belongs to one run",
    "bronze_files": "--bronze-files lists one run's files",
}


class OneRunOption(ValueError):
    """An option that belongs to one run was given with several ``--bronze`` folders."""


def refuse_one_run_options(args: argparse.Namespace) -> None:
    """Raise :class:`OneRunOption` when several folders come with an option of one run."""
    if len(args.bronze) < 2:
        return
    for name, reason in ONE_RUN_OPTIONS.items():
        if getattr(args, name):
            raise OneRunOption(f"{reason}: give one --bronze folder with it, not {len(args.bronze)}")


class LinkedFolder(ValueError):
    """A folder a local run reads holds a symbolic link to a folder, which it could not list."""


def refuse_linked_folders(option: str, folder: str) -> None:
    """Raise :class:`LinkedFolder` when ``folder`` holds a symbolic link to a folder: the local
    file system (icetide_local.jars, docs/local.md's named differences) lists such a link as a
    folder holding itself, so the job's listing of ``folder`` would never end. ``folder`` itself
    may be a link (the run is given its target)."""
    root = Path(folder)
    # Not followed: a linked folder is named among its parent's folders, never entered.
    for parent, folders, _ in os.walk(root):
        for name in folders:
            linked = Path(parent) / name
            if linked.is_symlink():
                raise LinkedFolder(
                    f"{option} {folder}: {linked} is a symbolic link to a folder, which the local "
                    "file system lists as itself without end; put a copy of the folder in its place"
                )


def run_ids(args: argparse.Namespace, selection: BronzeFiles | None = None) -> list[str]:
    """One run id a folder: ``--run-id`` (or the selection's run id, or ``manual-<UTC time>``),
    numbered ``-1``, ``-2``, ... when there are several folders, so each is its own exactly-once run."""
    run_id: str = args.run_id or (
        selection.run_id if selection is not None else datetime.now(UTC).strftime("manual-%Y%m%dT%H%M%SZ")
    )
    if len(args.bronze) == 1:
        return [run_id]
    return [f"{run_id}-{number}" for number in range(1, len(args.bronze) + 1)]


def runs_arguments(args: argparse.Namespace) -> list[JobArguments]:
    """The CLI's options as the Glue job's arguments (validated by the same model), one per
    ``--bronze`` folder, in the given order. Everything is checked before Spark starts."""
    if not args.keys.strip() and not args.append_only:
        # Said in the CLI's own terms; the model would name the Glue job's arguments.
        raise MissingPrimaryKeys(
            f"{args.table}: merging needs --keys; a table without keys needs --append-only"
        )
    from icetide_local.spark import DEFAULT_LOCAL_CATALOG

    refuse_one_run_options(args)
    if not args.bronze_files:  # with a selection, only its files are read, never a listing
        for bronze in args.bronze:
            refuse_linked_folders("--bronze", bronze)
    if args.reconcile:
        refuse_linked_folders("--reconcile", args.reconcile)
    selection = read_selection_file(args.bronze_files) if args.bronze_files else None
    return [
        JobArguments.from_options(
            {
                "target_table": args.table,
                "run_id": run_id,
                # A selection's files are read from --bronze (bronze_copy), a copy of its S3 folder.
                "bronze_uri": selection.bronze_uri if selection is not None else str(Path(bronze).resolve()),
                "bronze_files_uri": str(Path(args.bronze_files).resolve()) if args.bronze_files else "",
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
                "driver_merge_max_changes": args.driver_merge_max_changes,
                "merge_plan": args.merge_plan,
                "reconcile_uri": str(Path(args.reconcile).resolve()) if args.reconcile else "",
                "reconcile_expected_rows": args.reconcile_expected_rows,
                "reconcile_started_at": args.reconcile_started_at,
            }
        )
        for bronze, run_id in zip(args.bronze, run_ids(args, selection), strict=True)
    ]


def bronze_copy(args: argparse.Namespace, bronze: str) -> str | None:
    """Where the job reads a selection's files: the --bronze folder (None: no --bronze-files)."""
    return str(Path(bronze).resolve()) if args.bronze_files else None


def read_selection_file(path: str) -> BronzeFiles:
    """The bronze file selection in the local file ``path`` (the job reads it again, through Spark)."""
    from icetide_glue.bronze.selection import selection_from_text

    try:
        content = Path(path).read_bytes()
    except OSError as error:
        raise InvalidBronzeFileSelection(f"cannot read the bronze file selection {path}: {error}") from None
    return selection_from_text(content, path)


def error_text(error: Exception) -> str:
    """``<ErrorName>: <message>`` on one line; an unforeseen error says so, and is cut short."""
    from icetide_local.jars import JarFetchError

    if isinstance(error, IcetideJobError | JarFetchError | OneRunOption | LinkedFolder):
        return f"{type(error).__name__}: {' '.join(str(error).split())}"
    text = " ".join(str(error).split())[:500]
    return f"{type(error).__name__} (unexpected; please report it): {text}"


def run_command(args: argparse.Namespace) -> int:
    """Handler of `icetide job run`: errors go to stderr as ONE line with exit code 1, each run's
    manifest to stdout as one line, as the run finishes.

    All folders run in one Spark session, in the given order; the first run that fails stops the
    command, and its error line names the folder and how many earlier runs finished.

    Spark logs a failed task's Java stack trace at ERROR level as well, on the same terminal; the
    job turns such failures into named errors (e.g. an unreadable bronze file), so only fatal JVM
    logs are kept while the job runs here.
    """
    from icetide_local.spark import DEFAULT_LOCAL_CATALOG

    try:
        runs = runs_arguments(args)
        spark = local_spark_session(
            Path(args.warehouse), catalog=DEFAULT_LOCAL_CATALOG, app_name="icetide-job-run"
        )
        spark.sparkContext.setLogLevel("FATAL")
    except Exception as error:  # anything, foreseen or not, ends as one line, never a traceback
        print(f"error: {error_text(error)}", file=sys.stderr)
        return EXIT_JOB_FAILED
    for number, (bronze, job_args) in enumerate(zip(args.bronze, runs, strict=True), start=1):
        try:
            manifest = run_job(spark, job_args, bronze_copy=bronze_copy(args, bronze))
        except Exception as error:
            where = ""
            if len(runs) > 1:
                where = (
                    f"--bronze {bronze} (run {number} of {len(runs)}, run id {job_args.run_id}) failed; "
                    f"{number - 1} earlier run(s) finished, {len(runs) - number} later folder(s) "
                    "not run: "
                )
            print(f"error: {where}{error_text(error)}", file=sys.stderr)
            return EXIT_JOB_FAILED
        print(manifest_line(manifest), flush=True)
    return EXIT_OK
