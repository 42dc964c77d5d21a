"""Table maintenance (docs/contracts.md, "Maintenance policy" and "Maintenance report").

Two documents cross the Lambda/Glue boundary of a maintenance run:

- the policy: how much history to keep and when a rewrite is worth it. A control item may override
  any of it under ``maintenance`` (same keys); acquire_maintenance_lock turns it into the Glue job's
  arguments (:meth:`MaintenancePolicy.job_arguments`), the job reads them back
  (:meth:`MaintenancePolicy.from_job_arguments`);
- the report: what one pass did to the silver table and its tombstone table, files and bytes before
  and after. The job writes it to ``--report_uri``; record_maintenance reads it onto the control item
  and into metrics.

Standard library only: both sides import it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from icetide_contracts.json_fields import (
    ContractViolation,
    Invalid,
    flag,
    json_key,
    nested,
    optional,
    read_object,
    read_text,
    text,
    whole_number,
    write_object,
)

DEFAULT_SNAPSHOT_RETENTION_HOURS = 7 * 24
# A day of hourly merges: time travel over the last day always finds its snapshot.
DEFAULT_MIN_SNAPSHOTS = 24
DEFAULT_ORPHAN_AGE_HOURS = 3 * 24
# A file younger than this may belong to a commit still being written (Iceberg's own advice): removing
# it would corrupt the table. No policy may go below it.
MIN_ORPHAN_AGE_HOURS = 24
# Iceberg's own default: a group of fewer small files is not worth a rewrite.
DEFAULT_MIN_INPUT_FILES = 5
# Any data file with a delete file is rewritten: every read pays for each delete file it applies.
DEFAULT_DELETE_FILE_THRESHOLD = 1


def _orphan_age(value: object) -> int:
    hours = whole_number(minimum=1)(value)
    if hours < MIN_ORPHAN_AGE_HOURS:
        raise Invalid(
            f"must be at least {MIN_ORPHAN_AGE_HOURS} hours: a younger unreferenced file may belong to "
            "a commit still in flight, and removing it would corrupt the table"
        )
    return int(hours)


@dataclass(frozen=True, kw_only=True)
class MaintenancePolicy:
    """Retention and rewrite thresholds of one table's maintenance; every value has a default.

    ``target_file_size_bytes`` None: the table's own ``write.target-file-size-bytes``.
    """

    enabled: bool = field(default=True, metadata=json_key("enabled", flag))
    snapshot_retention_hours: int = field(
        default=DEFAULT_SNAPSHOT_RETENTION_HOURS,
        metadata=json_key("snapshotRetentionHours", whole_number(minimum=0)),
    )
    min_snapshots: int = field(
        default=DEFAULT_MIN_SNAPSHOTS, metadata=json_key("minSnapshots", whole_number(minimum=1))
    )
    orphan_age_hours: int = field(
        default=DEFAULT_ORPHAN_AGE_HOURS, metadata=json_key("orphanAgeHours", _orphan_age)
    )
    min_input_files: int = field(
        default=DEFAULT_MIN_INPUT_FILES, metadata=json_key("minInputFiles", whole_number(minimum=1))
    )
    delete_file_threshold: int = field(
        default=DEFAULT_DELETE_FILE_THRESHOLD,
        metadata=json_key("deleteFileThreshold", whole_number(minimum=1)),
    )
    target_file_size_bytes: int | None = field(
        default=None, metadata=json_key("targetFileSizeBytes", optional(whole_number(minimum=1)))
    )

    @property
    def snapshot_retention(self) -> timedelta:
        return timedelta(hours=self.snapshot_retention_hours)

    @property
    def orphan_age(self) -> timedelta:
        return timedelta(hours=self.orphan_age_hours)

    def to_json(self) -> dict[str, Any]:
        return write_object(self)

    @classmethod
    def from_json(cls, data: object) -> MaintenancePolicy:
        """The policy from a (possibly partial) JSON object: what it leaves out takes the default.
        Unknown keys are refused (a misspelt override would silently keep the default)."""
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(POLICY_KEYS))
            if unknown:
                reason = f"unknown key(s) {', '.join(unknown)}; known: {', '.join(POLICY_KEYS)}"
                raise ContractViolation(f"maintenance policy is invalid: {reason}", (("", reason),))
        return read_object(cls, data, "maintenance policy")

    def job_arguments(self) -> dict[str, str]:
        """The Glue job's arguments for this policy (``--snapshot_retention_hours`` …); ``enabled``
        is the scheduler's business, not the job's."""
        values = self.to_json()
        return {
            f"--{JOB_ARGUMENTS[key]}": str(value)
            for key, value in values.items()
            if key in JOB_ARGUMENTS and value is not None
        }

    @classmethod
    def from_job_arguments(cls, arguments: Mapping[str, str | None]) -> MaintenancePolicy:
        """The policy from the job's arguments (names without ``--``); missing ones take the default.
        ContractViolation names an argument that is not a whole number or out of range."""
        values: dict[str, Any] = {}
        for key, argument in JOB_ARGUMENTS.items():
            raw = arguments.get(argument)
            if raw is None or raw == "":
                continue
            try:
                values[key] = int(raw)
            except ValueError:
                reason = f"must be a whole number, got {raw!r}"
                raise ContractViolation(f"--{argument}: {reason}", ((f"--{argument}", reason),)) from None
        try:
            return cls.from_json(values)
        except ContractViolation as violation:
            lines = "; ".join(
                f"--{JOB_ARGUMENTS.get(key, key)}: {reason}" for key, reason in violation.problems
            )
            raise ContractViolation(
                f"maintenance job arguments are invalid: {lines}", violation.problems
            ) from None


POLICY_KEYS = (
    "enabled",
    "snapshotRetentionHours",
    "minSnapshots",
    "orphanAgeHours",
    "minInputFiles",
    "deleteFileThreshold",
    "targetFileSizeBytes",
)
# Policy key → the Glue job's argument name (without "--").
JOB_ARGUMENTS = {
    "snapshotRetentionHours": "snapshot_retention_hours",
    "minSnapshots": "min_snapshots",
    "orphanAgeHours": "orphan_age_hours",
    "minInputFiles": "min_input_files",
    "deleteFileThreshold": "delete_file_threshold",
    "targetFileSizeBytes": "target_file_size_bytes",
}


@dataclass(frozen=True, kw_only=True)
class TableFiles:
    """A table's live files (current snapshot), their bytes, and the snapshots its metadata keeps."""

    data_files: int = field(metadata=json_key("dataFiles", whole_number(minimum=0)))
    delete_files: int = field(metadata=json_key("deleteFiles", whole_number(minimum=0)))
    position_delete_files: int = field(metadata=json_key("positionDeleteFiles", whole_number(minimum=0)))
    total_bytes: int = field(metadata=json_key("totalBytes", whole_number(minimum=0)))
    snapshots: int = field(metadata=json_key("snapshots", whole_number(minimum=0)))


@dataclass(frozen=True, kw_only=True)
class TableMaintenance:
    """What one pass did to one Iceberg table."""

    table: str = field(metadata=json_key("table", text(min_length=1)))
    strategy: str = field(metadata=json_key("strategy", text(min_length=1)))
    before: TableFiles = field(metadata=json_key("before", nested(TableFiles, "table files")))
    after: TableFiles = field(metadata=json_key("after", nested(TableFiles, "table files")))
    data_files_rewritten: int = field(
        default=0, metadata=json_key("dataFilesRewritten", whole_number(minimum=0))
    )
    data_files_added: int = field(default=0, metadata=json_key("dataFilesAdded", whole_number(minimum=0)))
    delete_files_rewritten: int = field(
        default=0, metadata=json_key("deleteFilesRewritten", whole_number(minimum=0))
    )
    snapshots_expired: int = field(default=0, metadata=json_key("snapshotsExpired", whole_number(minimum=0)))
    files_deleted_by_expiry: int = field(
        default=0, metadata=json_key("filesDeletedByExpiry", whole_number(minimum=0))
    )
    orphan_files_removed: int = field(
        default=0, metadata=json_key("orphanFilesRemoved", whole_number(minimum=0))
    )
    runs_recorded: int = field(default=0, metadata=json_key("runsRecorded", whole_number(minimum=0)))
    # Tombstone table only: entries older than the retention before its newest change, forgotten.
    rows_pruned: int = field(default=0, metadata=json_key("rowsPruned", whole_number(minimum=0)))


def _policy(value: object) -> MaintenancePolicy:
    # from_json, not nested(): it refuses unknown keys too.
    try:
        return MaintenancePolicy.from_json(value)
    except ContractViolation as violation:
        raise Invalid("; ".join(f"{key}: {reason}" for key, reason in violation.problems)) from None


@dataclass(frozen=True, kw_only=True)
class MaintenanceReport:
    """One maintenance run of a silver table: its pass, its tombstone table's (if it has one), or
    ``skipped`` (why nothing was done, e.g. the table does not exist yet)."""

    run_id: str = field(metadata=json_key("runId", text(min_length=1)))
    table: str = field(metadata=json_key("table", text(min_length=1)))
    silver: TableMaintenance | None = field(
        default=None, metadata=json_key("silver", optional(nested(TableMaintenance, "table maintenance")))
    )
    tombstones: TableMaintenance | None = field(
        default=None, metadata=json_key("tombstones", optional(nested(TableMaintenance, "table maintenance")))
    )
    skipped: str | None = field(default=None, metadata=json_key("skipped", optional(text(min_length=1))))
    policy: MaintenancePolicy = field(
        default_factory=MaintenancePolicy,
        metadata=json_key("policy", _policy),
    )

    def to_json(self) -> dict[str, Any]:
        return write_object(self)

    @classmethod
    def from_json(cls, data: object) -> MaintenanceReport:
        report = read_object(cls, data, "maintenance report")
        if (report.silver is None) == (report.skipped is None):
            reason = "exactly one of silver and skipped must be set"
            raise ContractViolation(f"maintenance report is invalid: {reason}", (("", reason),))
        return report

    @classmethod
    def from_text(cls, content: str | bytes) -> MaintenanceReport:
        return cls.from_json(read_text(content, "maintenance report"))
