"""The Glue job's arguments (docs/contracts.md, "Glue job arguments"), parsed once and validated.

On Glue the entrypoint resolves them with ``getResolvedOptions`` (:func:`parse_glue_options`);
``icetide job run`` maps its own options onto the same names. Both end in
:meth:`JobArguments.from_options`, so a value means the same thing wherever the job runs.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TypeVar

# Re-exported: the job's modules name the modes here; their one definition is the contract's.
from icetide_contracts.run_plan import DeleteMode as DeleteMode
from icetide_contracts.run_plan import LoadMode as LoadMode
from icetide_glue.errors import InvalidJobArguments, MissingPrimaryKeys

DEFAULT_TIMESTAMP_COLUMN = "dms_timestamp"
# The DMS header column a transformation rule can add; used when the bronze files carry it.
DEFAULT_CHANGE_SEQUENCE_COLUMN = "AR_H_CHANGE_SEQ"
DEFAULT_CATALOG = "glue_catalog"

REQUIRED_ARGUMENTS = ("target_table", "run_id", "bronze_uri")
OPTIONAL_ARGUMENTS = (
    "manifest_uri",
    "primary_keys",
    "load_mode",
    "watermark_column",
    "timestamp_column",
    "change_sequence_column",
    "catalog",
    "expected_rows",
    "max_change_rows",
    "expected_files",
    "delete_mode",
    "tombstone_retention_days",
    "reconcile_uri",
    "reconcile_expected_rows",
    "reconcile_started_at",
    "bronze_files_uri",
    "verify_report_uri",
    "driver_merge_max_changes",
    "merge_plan",
)
DEFAULT_TOMBSTONE_RETENTION_DAYS = 7
# A merge batch of at most this many rows may be merged on the driver, without a Spark job
# (icetide_glue.driver.merge); 0 turns that off.
DEFAULT_MAX_DRIVER_CHANGES = 500_000

_TABLE_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\.[A-Za-z_][A-Za-z0-9_]*$")
_CATALOG_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
# Run ids are Step Functions execution names (or hand-picked locally); they end up in snapshot
# summaries and SQL literals, so keep them to a plain alphabet.
_RUN_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,254}$")
_ROW_COUNT = re.compile(r"[0-9]+")
# An ISO-8601 instant with its zone (Z or an offset): a reconcile deletes by comparing with it, so
# a time without zone, read in some machine's zone, could delete rows changed after the extraction.
_INSTANT = re.compile(r"\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(\.\d{1,9})?(Z|[+-]\d{2}:\d{2})")

_Mode = TypeVar("_Mode", bound=StrEnum)


class MergePlanChoice(StrEnum):
    """``--merge_plan``: let the job choose how a merge runs (icetide_glue.merge.plan), or force
    one of its plans (a run the forced plan cannot carry fails, naming why)."""

    AUTO = "auto"
    DRIVER = "driver"
    SPARK = "spark"


ResolveOptions = Callable[[list[str], list[str]], Mapping[str, str]]


@dataclass(frozen=True)
class JobArguments:
    """One run's arguments, validated: a value that cannot work is rejected before Spark starts."""

    target_table: str
    run_id: str
    bronze_uri: str
    manifest_uri: str | None = None
    primary_keys: tuple[str, ...] = ()
    load_mode: LoadMode = LoadMode.MERGE
    watermark_column: str | None = None
    timestamp_column: str = DEFAULT_TIMESTAMP_COLUMN
    change_sequence_column: str = DEFAULT_CHANGE_SEQUENCE_COLUMN
    catalog: str = DEFAULT_CATALOG
    # The rows DMS reported its full load added for this run (FullLoadRows); the job refuses to
    # commit when the run's LOAD files hold another number. max_change_rows: the changes DMS counted
    # (Inserts + Updates + Deletes; 0 for a full-load task), more than the run's CDC files may hold
    # (icetide_glue.changes.row_count). expected_files: how many bronze files the run's folder held once
    # its task had stopped; the job refuses to merge another number. None: nobody counted (a run
    # started by hand), so the job cannot check and says so.
    expected_rows: int | None = None
    max_change_rows: int | None = None
    expected_files: int | None = None
    delete_mode: DeleteMode = DeleteMode.HARD
    # How long a deleted key (and a skipped update's change time) is remembered, counted back from
    # the batch's newest change time.
    tombstone_retention_days: int = DEFAULT_TOMBSTONE_RETENTION_DAYS
    # A reconcile run: the folder of a key-only full load of the source, DMS's row count for it
    # (None: not counted) and when that extraction started (UTC). Keys silver holds that the
    # extraction lacks, unchanged since it started, are deleted (docs/glue-job.md, "Reconcile").
    reconcile_uri: str | None = None
    reconcile_expected_rows: int | None = None
    reconcile_started_at: datetime | None = None
    # A continuous cdc run: the bronze file selection (icetide_contracts.bronze_files) naming the
    # files below --bronze_uri it merges, instead of every file there (None: the whole folder).
    bronze_files_uri: str | None = None
    # A verify run (icetide_glue.verify.compare): --bronze_uri holds a key-only extraction of the source,
    # which the job compares with silver's live keys, writing the verify report here instead of
    # merging; nothing is committed, no manifest written.
    verify_report_uri: str | None = None
    # A merge batch of at most this many rows may be merged on the driver without a Spark job
    # (icetide_glue.driver.merge, when the run qualifies); 0: every merge runs on Spark.
    driver_merge_max_changes: int = DEFAULT_MAX_DRIVER_CHANGES
    # How a merge runs (icetide_glue.merge.plan.choose_merge_plan): chosen, or forced.
    merge_plan: MergePlanChoice = MergePlanChoice.AUTO

    def __post_init__(self) -> None:
        if not _TABLE_NAME.match(self.target_table):
            raise InvalidJobArguments(
                f"--target_table {self.target_table!r} must be database.table "
                "(letters, digits and underscores, not starting with a digit)"
            )
        if not _RUN_ID.match(self.run_id):
            raise InvalidJobArguments(
                f"--run_id {self.run_id!r} must be 1-255 letters, digits, '_', '.', ':' or '-', "
                "starting with a letter or digit"
            )
        if not self.bronze_uri.strip():
            raise InvalidJobArguments(
                "--bronze_uri is empty: the job needs the folder of this run's DMS files"
            )
        if not _CATALOG_NAME.match(self.catalog):
            raise InvalidJobArguments(f"--catalog {self.catalog!r} is not a valid Spark catalog name")
        if not self.timestamp_column.strip():
            raise InvalidJobArguments(
                "--timestamp_column is empty: DMS's TimestampColumnName orders the changes"
            )
        if len(set(key.lower() for key in self.primary_keys)) != len(self.primary_keys):
            raise InvalidJobArguments(f"--primary_keys {','.join(self.primary_keys)!r} names a column twice")
        if self.load_mode is LoadMode.MERGE and not self.primary_keys:
            raise MissingPrimaryKeys(
                f"{self.target_table}: --load_mode merge needs --primary_keys; a table without keys "
                "must be loaded with --load_mode append"
            )
        for name, count in (
            ("--expected_rows", self.expected_rows),
            ("--max_change_rows", self.max_change_rows),
            ("--expected_files", self.expected_files),
        ):
            if count is not None and count < 0:
                raise InvalidJobArguments(f"{name} {count} must not be negative")
        if self.tombstone_retention_days < 0:
            raise InvalidJobArguments(
                f"--tombstone_retention_days {self.tombstone_retention_days} must not be negative"
            )
        if self.driver_merge_max_changes < 0:
            raise InvalidJobArguments(
                f"--driver_merge_max_changes {self.driver_merge_max_changes} must not be negative"
            )
        self._check_reconcile()
        self._check_verify()

    def _check_verify(self) -> None:
        if self.verify_report_uri is None:
            return
        if self.load_mode is not LoadMode.MERGE:
            raise InvalidJobArguments(
                "--verify_report_uri needs --load_mode merge and --primary_keys: a verify run compares "
                "keys, and an append-only table has none"
            )
        given = [
            name
            for name, value in (
                ("--reconcile_uri", self.reconcile_uri),
                ("--bronze_files_uri", self.bronze_files_uri),
            )
            if value is not None
        ]
        if given:
            raise InvalidJobArguments(
                f"--verify_report_uri with {' and '.join(given)}: a verify run reads one key "
                "extraction (--bronze_uri) and changes nothing"
            )

    def _check_reconcile(self) -> None:
        if self.reconcile_uri is None:
            given = [
                name
                for name, value in (
                    ("--reconcile_expected_rows", self.reconcile_expected_rows),
                    ("--reconcile_started_at", self.reconcile_started_at),
                )
                if value is not None
            ]
            if given:
                raise InvalidJobArguments(
                    f"{' and '.join(given)} given without --reconcile_uri: a reconcile needs the folder "
                    "of its key extraction"
                )
            return
        if self.load_mode is not LoadMode.MERGE:
            raise InvalidJobArguments(
                "--reconcile_uri needs --load_mode merge: a reconcile deletes keys silver holds and the "
                "source lacks, and an append-only table has no keys"
            )
        if self.reconcile_started_at is None:
            raise InvalidJobArguments(
                "--reconcile_uri needs --reconcile_started_at (when the key extraction started, "
                "e.g. 2026-11-24T10:00:00Z): rows changed after it must not be deleted"
            )
        if self.reconcile_started_at.utcoffset() != UTC.utcoffset(None):
            raise InvalidJobArguments(
                f"--reconcile_started_at {self.reconcile_started_at.isoformat()} must be a UTC time"
            )
        if self.reconcile_expected_rows is not None and self.reconcile_expected_rows < 0:
            raise InvalidJobArguments(
                f"--reconcile_expected_rows {self.reconcile_expected_rows} must not be negative"
            )

    @property
    def bronze_rows_bound(self) -> int | None:
        """At most how many rows the run's bronze files hold, when DMS counted both kinds."""
        if self.expected_rows is None or self.max_change_rows is None:
            return None
        return self.expected_rows + self.max_change_rows

    @property
    def database(self) -> str:
        return self.target_table.split(".", 1)[0]

    @property
    def table_name(self) -> str:
        return self.target_table.split(".", 1)[1]

    @classmethod
    def from_options(cls, options: Mapping[str, str | None]) -> JobArguments:
        """Build from ``{argument name: value}``; absent or blank optional values take defaults."""
        missing = [name for name in REQUIRED_ARGUMENTS if not (options.get(name) or "").strip()]
        if missing:
            raise InvalidJobArguments(f"missing required argument(s): {', '.join('--' + n for n in missing)}")

        def optional(name: str) -> str | None:
            value = (options.get(name) or "").strip()
            return value or None

        load_mode = _choice(LoadMode, "--load_mode", optional("load_mode") or LoadMode.MERGE.value)
        delete_mode = _choice(DeleteMode, "--delete_mode", optional("delete_mode") or DeleteMode.HARD.value)
        merge_plan = _choice(
            MergePlanChoice, "--merge_plan", optional("merge_plan") or MergePlanChoice.AUTO.value
        )
        retention = _row_count(optional("tombstone_retention_days"), "--tombstone_retention_days", "days")
        reconcile_rows = _row_count(optional("reconcile_expected_rows"), "--reconcile_expected_rows")
        driver_changes = _row_count(
            optional("driver_merge_max_changes"), "--driver_merge_max_changes", "changes"
        )
        return cls(
            target_table=str(options["target_table"]).strip(),
            run_id=str(options["run_id"]).strip(),
            bronze_uri=str(options["bronze_uri"]).strip(),
            manifest_uri=optional("manifest_uri"),
            primary_keys=split_column_list(optional("primary_keys")),
            load_mode=load_mode,
            watermark_column=optional("watermark_column"),
            timestamp_column=optional("timestamp_column") or DEFAULT_TIMESTAMP_COLUMN,
            change_sequence_column=optional("change_sequence_column") or DEFAULT_CHANGE_SEQUENCE_COLUMN,
            catalog=optional("catalog") or DEFAULT_CATALOG,
            expected_rows=_row_count(optional("expected_rows")),
            max_change_rows=_row_count(optional("max_change_rows"), "--max_change_rows", "changes"),
            expected_files=_row_count(optional("expected_files"), "--expected_files", "files"),
            delete_mode=delete_mode,
            tombstone_retention_days=DEFAULT_TOMBSTONE_RETENTION_DAYS if retention is None else retention,
            reconcile_uri=optional("reconcile_uri"),
            reconcile_expected_rows=reconcile_rows,
            reconcile_started_at=_instant(optional("reconcile_started_at"), "--reconcile_started_at"),
            bronze_files_uri=optional("bronze_files_uri"),
            verify_report_uri=optional("verify_report_uri"),
            driver_merge_max_changes=DEFAULT_MAX_DRIVER_CHANGES if driver_changes is None else driver_changes,
            merge_plan=merge_plan,
        )


def _choice(modes: type[_Mode], name: str, text: str) -> _Mode:
    """One of an enumeration's values (any case), or an error listing them."""
    try:
        return modes(text.lower())
    except ValueError:
        listed = ", ".join(m.value for m in modes)
        raise InvalidJobArguments(f"{name} {text!r} is not one of {listed}") from None


def _row_count(text: str | None, name: str = "--expected_rows", unit: str = "rows") -> int | None:
    """``--expected_rows`` (or another whole-number argument) as a number; blank means "not given"."""
    if text is None:
        return None
    if not _ROW_COUNT.fullmatch(text):
        what = "of rows (DMS's fullLoadRows)" if unit == "rows" else f"of {unit}"
        raise InvalidJobArguments(f"{name} {text!r} must be a whole number {what}, or empty")
    return int(text)


def _instant(text: str | None, name: str) -> datetime | None:
    """An ISO-8601 time with its zone (``2026-11-24T10:00:00Z``, fractions allowed) as a UTC
    datetime; digits beyond microseconds are dropped (the time moves earlier, never later)."""
    if text is None:
        return None
    if not _INSTANT.fullmatch(text):
        raise InvalidJobArguments(
            f"{name} {text!r} must be an ISO-8601 UTC time such as 2026-11-24T10:00:00Z "
            "(fractions of a second allowed), or empty"
        )
    whole, zone = (text[:-1], "+00:00") if text.endswith("Z") else (text[:-6], text[-6:])
    if "." in whole:
        whole, fraction = whole.split(".")
        whole = f"{whole}.{fraction[:6].ljust(6, '0')}"
    try:
        return datetime.fromisoformat(whole + zone).astimezone(UTC)
    except ValueError as error:
        raise InvalidJobArguments(f"{name} {text!r} is not a valid time: {error}") from None


def split_column_list(text: str | None) -> tuple[str, ...]:
    """``"a, b"`` → ``("a", "b")``; blank entries are dropped (a trailing comma is harmless)."""
    if not text:
        return ()
    return tuple(part.strip() for part in text.split(",") if part.strip())


def parse_glue_options(argv: Sequence[str], resolve: ResolveOptions) -> JobArguments:
    """Parse Glue's ``sys.argv`` (program name first) with ``getResolvedOptions``."""
    return JobArguments.from_options(
        resolve_glue_options(argv, resolve, REQUIRED_ARGUMENTS, OPTIONAL_ARGUMENTS)
    )


def resolve_glue_options(
    argv: Sequence[str], resolve: ResolveOptions, required: Sequence[str], optional: Sequence[str]
) -> Mapping[str, str]:
    """``{name: value}`` of a Glue job run's arguments (``argv``: program name first).

    getResolvedOptions fails on any listed name that is absent, so optional names are only asked
    for when the job run actually carries them.
    """
    present = [name for name in optional if f"--{name}" in argv]
    return resolve(list(argv), [*required, *present])
