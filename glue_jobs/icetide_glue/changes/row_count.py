"""The run's bronze files and rows against what was counted when its DMS task stopped.

A file lost (a lifecycle rule, a hand) or added (a rerun's leftovers, a copy) between the DMS task
and the job would go unnoticed downstream: a lost file's rows never reach silver while the
watermark moves past them, a stray file's rows appear in silver without existing at the source.
So the job compares, before any DDL or commit, only what DMS documents its counters to mean
(DMS API reference, TableStatistics):

- ``FullLoadRows`` is "the number of rows added during the full load operation": the rows of the
  run's full-load files (``LOAD<hex>.parquet``), compared exactly (``--expected_rows``);
- ``Inserts``/``Updates``/``Deletes`` are the insert, update and delete "actions performed on a
  table". Every row of a CDC file is one of them (its Op says how "the row was inserted, updated,
  or deleted at the source", S3Settings.CdcInsertsOnly), but not every one of them is a row: a
  source filter, CdcInsertsOnly or CdcInsertsAndUpdates leave changes out of the files. So their
  sum only bounds the CDC files' rows from above (``--max_change_rows``; 0 for a full-load task,
  which writes LOAD files only): more rows than that is a stray file, fewer is no refusal.

A lost CDC file leaves fewer rows, which the counters allow; so the job also compares the number of
files it reads with the number the run's folder held once its task had stopped (``--expected_files``,
listed by Read task statistics: icetide.run.bronze_listing).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass

from icetide_contracts.bronze_files import is_full_load_file as is_full_load_file
from icetide_glue.arguments import JobArguments
from icetide_glue.changes.batch import BatchSummary
from icetide_glue.errors import BronzeRowCountMismatch

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class BronzeRows:
    """How many rows a run's bronze files hold, in its full-load files and in every other file, and
    how many files there are."""

    full_load: int
    change: int
    files: int

    @classmethod
    def of_batch(cls, summary: BatchSummary, files: int) -> BronzeRows:
        """The rows a batch check counted (it counts the full-load rows in the same pass) of
        ``files`` files."""
        return cls(summary.full_load_rows, summary.rows_read - summary.full_load_rows, files)


def check_bronze_rows(args: JobArguments, count: Callable[[], BronzeRows]) -> None:
    """Raise :class:`BronzeRowCountMismatch` when the run's folder holds another number of files
    than once its task had stopped (``--expected_files``), its full-load files not exactly
    ``--expected_rows`` rows, or its other (CDC) files more than ``--max_change_rows``; ``count``
    counts the bronze files and rows, only when one of them is given.

    None means nobody counted (a run started by hand, without the argument): that part is not
    checked, with a warning, because refusing would make every manual run impossible. The state
    machine always passes all three for a run's own task, and fails the run before the job when
    they cannot be had; a continuous run's long-lived task has no counts of its own run.
    """
    expected_rows, max_change_rows, bronze_uri = args.expected_rows, args.max_change_rows, args.bronze_uri
    if expected_rows is None and max_change_rows is None and args.expected_files is None:
        logger.warning("no --expected_rows: the rows in %s are not checked against DMS's count", bronze_uri)
        return
    rows = count()
    _check_file_count(args.expected_files, rows.files, bronze_uri)
    check_row_count(expected_rows, rows.full_load, bronze_uri, files="the full-load (LOAD) files")
    if max_change_rows is None:
        _not_checked("--max_change_rows", rows.change, "CDC", bronze_uri)
    elif rows.change > max_change_rows:
        raise BronzeRowCountMismatch(
            f"the CDC files hold {rows.change} row(s), more than the {max_change_rows} change(s) DMS "
            "counted (--max_change_rows, DMS Inserts + Updates + Deletes; none for a full-load task) for "
            f"this run: a file DMS did not write for this run was added ({bronze_uri}); nothing was "
            "committed and the table is unchanged"
        )


def _check_file_count(expected_files: int | None, files: int, bronze_uri: str) -> None:
    """The run's folder must hold the files it held once its DMS task had stopped
    (``--expected_files``, icetide.run.bronze_listing): a CDC file lost since cannot be told from
    the rows, whose count DMS's change counters only bound from above."""
    if expected_files is None or files == expected_files:
        return
    difference = "lost" if files < expected_files else "added"
    raise BronzeRowCountMismatch(
        f"the run's folder holds {files} bronze file(s) but held {expected_files} once its DMS task had "
        f"stopped (--expected_files): {abs(expected_files - files)} file(s) {difference} since "
        f"({bronze_uri}); nothing was committed and the table is unchanged"
    )


def _not_checked(argument: str, rows: int, kind: str, bronze_uri: str) -> None:
    logger.warning(
        "no %s: the %d row(s) of the %s files in %s are not checked against DMS's count",
        argument,
        rows,
        kind,
        bronze_uri,
    )


def check_row_count(
    expected_rows: int | None,
    rows_read: int,
    bronze_uri: str,
    argument: str = "--expected_rows",
    files: str = "the bronze files",
) -> None:
    """Raise :class:`BronzeRowCountMismatch` when ``files`` hold ``rows_read`` rows, not the
    ``expected_rows`` of their task's FullLoadRows (a key extraction is a full-load task: every file
    it writes is a LOAD file).

    ``argument`` names the count's job argument (``--reconcile_expected_rows`` for a reconcile's
    key extraction). ``expected_rows`` None means nobody counted: the run goes on, with a warning.
    """
    if expected_rows is None:
        _not_checked(argument, rows_read, "full-load", bronze_uri)
        return
    if rows_read != expected_rows:
        difference = "missing" if rows_read < expected_rows else "extra"
        raise BronzeRowCountMismatch(
            f"{files} hold {rows_read} row(s) but DMS reported {expected_rows} ({argument}, "
            f"DMS FullLoadRows) for this run: {abs(expected_rows - rows_read)} row(s) {difference}, so a "
            f"file was lost or added between the DMS task and this job ({bronze_uri}); nothing was "
            "committed and the table is unchanged"
        )
