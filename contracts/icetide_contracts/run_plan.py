"""The run plan (docs/contracts.md, "RunPlan"): everything one run needs, fixed when it takes the lock.

Built by acquire_lock (`icetide.run.plan.build_run_plan`) and handed to the state machine as
`to_json()`; the state machine carries that object as `$.lock.plan`, passes some of its fields to
the Glue job as arguments (`silverTable`, `bronzeUri`, `manifestUri`, `primaryKeys`, `loadMode`,
`watermarkColumn`, `timestampColumn`) and the whole of it to later handlers, which read it back with
`from_json`. The JSON keys are the ASL's paths: rename one only together with the ASL.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

from icetide_contracts.change_count import ChangeCount, ClosedStart
from icetide_contracts.json_fields import (
    flag,
    json_key,
    nested,
    one_of,
    optional,
    read_object,
    text,
    watermark_value,
    whole_number,
    write_object,
)
from icetide_contracts.watermark_text import WatermarkJson


class LoadMode(StrEnum):
    """How a run's rows reach silver: merged on the primary keys, or appended (key-less tables)."""

    MERGE = "merge"
    APPEND = "append"


class CaptureMode(StrEnum):
    """How a run finds what changed (design.md §6): a filtered full load, or DMS change data capture."""

    DELTA = "delta"
    CDC = "cdc"


class DeleteMode(StrEnum):
    """What a source delete does to silver: remove the row, or keep it marked ``_icetide_deleted_at``."""

    HARD = "hard"
    SOFT = "soft"


# The control item, the plan and the Glue job's arguments share these values (one definition).
LOAD_MODES = tuple(mode.value for mode in LoadMode)
CAPTURE_MODES = tuple(mode.value for mode in CaptureMode)
DELETE_MODES = tuple(mode.value for mode in DeleteMode)


class CdcTask(StrEnum):
    """How a cdc table's DMS task lives (design.md §6): one per run, stopping at the run's slot
    (windowed), or one long-lived task whose files each run consumes after the file checkpoint."""

    WINDOWED = "windowed"
    CONTINUOUS = "continuous"


CDC_TASKS = tuple(kind.value for kind in CdcTask)
MIGRATION_TYPES = ("full-load", "full-load-and-cdc", "cdc")
S3_FOLDER_URI_OR_NONE = r"^(s3://[^/]+/.+/)?$"
S3_OBJECT_URI = r"^s3://[^/]+/.+"
S3_OBJECT_URI_OR_NONE = r"^(s3://[^/]+/.+)?$"
UTC_SECOND = r"^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}Z$"


@dataclass(frozen=True, kw_only=True)
class RunPlan:
    """One run's plan. Strings where the Glue job takes a string argument: `primary_keys` is
    comma-separated and may be empty, `watermark_column` is "" when the table has none;
    `table_mapping` and `task_settings` are the JSON texts DMS takes."""

    target_table_name: str = field(metadata=json_key("targetTableName", text(min_length=1)))
    run_id: str = field(metadata=json_key("runId", text(min_length=1)))
    source_schema: str = field(metadata=json_key("sourceSchema", text(min_length=1)))
    source_table: str = field(metadata=json_key("sourceTable", text(min_length=1)))
    silver_table: str = field(metadata=json_key("silverTable", text(min_length=1)))
    primary_keys: str = field(metadata=json_key("primaryKeys", text()))
    load_mode: str = field(metadata=json_key("loadMode", one_of(*LOAD_MODES)))
    watermark_column: str = field(default="", metadata=json_key("watermarkColumn", text()))
    previous_watermark: WatermarkJson = field(
        default=None, metadata=json_key("previousWatermark", watermark_value)
    )
    table_mapping: str = field(metadata=json_key("tableMapping", text(min_length=2)))
    task_settings: str = field(metadata=json_key("taskSettings", text(min_length=2)))
    # None: the run creates an instance of its own and deletes it afterwards.
    replication_instance_arn: str | None = field(
        default=None, metadata=json_key("replicationInstanceArn", optional(text()))
    )
    bronze_uri: str = field(metadata=json_key("bronzeUri", text(pattern=S3_OBJECT_URI)))
    manifest_uri: str = field(metadata=json_key("manifestUri", text(pattern=S3_OBJECT_URI)))
    timestamp_column: str = field(
        default="dms_timestamp", metadata=json_key("timestampColumn", text(min_length=1))
    )
    # Change data capture (docs/contracts.md, "Capture modes"). A delta run is a filtered full load.
    capture_mode: str = field(default="delta", metadata=json_key("captureMode", one_of(*CAPTURE_MODES)))
    delete_mode: str = field(default="hard", metadata=json_key("deleteMode", one_of(*DELETE_MODES)))
    migration_type: str = field(
        default="full-load", metadata=json_key("migrationType", one_of(*MIGRATION_TYPES))
    )
    # The RecoveryCheckpoint the previous run committed: where a `cdc` task starts (None otherwise),
    # and the CdcStartPosition a task reading a replication slot is created with.
    cdc_start_position: str | None = field(
        default=None, metadata=json_key("cdcStartPosition", optional(text(min_length=1)))
    )
    # The item's cdcStartPoint (a replication slot's start point): where a cdc table's task reading a
    # slot starts while no checkpoint is stored (a first run, a continuous table's task).
    cdc_start_point: str | None = field(
        default=None, metadata=json_key("cdcStartPoint", optional(text(min_length=1)))
    )
    # No stop position: a windowed cdc run's is set when its task starts (start_replication_task).
    # The S3 target's CDC batching (seconds, KB); None for full-load runs.
    cdc_max_batch_interval: int | None = field(
        default=None, metadata=json_key("cdcMaxBatchInterval", optional(whole_number(minimum=1)))
    )
    cdc_min_file_size: int | None = field(
        default=None, metadata=json_key("cdcMinFileSize", optional(whole_number(minimum=1)))
    )
    # A reconcile run also extracts the key columns only (this mapping) below reconcileBronzeUri.
    reconcile_table_mapping: str | None = field(
        default=None, metadata=json_key("reconcileTableMapping", optional(text(min_length=2)))
    )
    # The start of the schedule slot (YYYY-MM-DDTHH:MM:SSZ) a reconcile run commits as lastReconcileTime.
    reconcile_slot: str | None = field(
        default=None, metadata=json_key("reconcileSlot", optional(text(pattern=UTC_SECOND)))
    )
    # "" when the run does not reconcile: the state machine passes it to Glue as `--reconcile_uri`.
    reconcile_bronze_uri: str = field(
        default="", metadata=json_key("reconcileBronzeUri", text(pattern=S3_FOLDER_URI_OR_NONE))
    )

    # Continuous cdc (cdcTask continuous): the task is long-lived and writes to `bronzeUri` all the
    # time; a run merges the files after `fileCheckpoint` (a key relative to `bronzeUri`; None: from
    # the first file), at most `maxFilesPerRun` files and `maxBytesPerRun` bytes (at least one file),
    # listed in the selection at `bronzeFilesUri` ("" for other runs: the Glue job reads the folder).
    cdc_task: str = field(default="windowed", metadata=json_key("cdcTask", one_of(*CDC_TASKS)))
    file_checkpoint: str | None = field(
        default=None, metadata=json_key("fileCheckpoint", optional(text(min_length=1)))
    )
    max_files_per_run: int | None = field(
        default=None, metadata=json_key("maxFilesPerRun", optional(whole_number(minimum=1)))
    )
    max_bytes_per_run: int | None = field(
        default=None, metadata=json_key("maxBytesPerRun", optional(whole_number(minimum=1)))
    )
    bronze_files_uri: str = field(
        default="", metadata=json_key("bronzeFilesUri", text(pattern=S3_OBJECT_URI_OR_NONE))
    )

    # A verify run (icetide.run.verify): its task extracts the key columns only (`tableMapping`,
    # into `bronzeUri`), the Glue job compares them with silver and writes the verify report
    # (icetide_contracts.verify) to `verifyReportUri` ("" for other runs: the job merges), and the
    # state machine commits nothing.
    verify: bool = field(default=False, metadata=json_key("verify", flag))
    verify_report_uri: str = field(
        default="", metadata=json_key("verifyReportUri", text(pattern=S3_OBJECT_URI_OR_NONE))
    )

    # The change count committed with `fileCheckpoint` (icetide_contracts.change_count; None: none
    # committed yet): what bounds the CDC rows this run may merge by what the task counted.
    change_count: ChangeCount | None = field(
        default=None, metadata=json_key("changeCount", optional(nested(ChangeCount, "change count")))
    )
    # The start of the task that the latest recorded resume ended (`lastTaskResume.closedStart`).
    closed_start: ClosedStart | None = field(
        default=None, metadata=json_key("closedStart", optional(nested(ClosedStart, "closed start")))
    )

    @property
    def continuous(self) -> bool:
        """True when the run consumes the files of the table's long-lived task."""
        return self.cdc_task == CdcTask.CONTINUOUS

    @property
    def reconciles(self) -> bool:
        """True when this run also extracts the source's keys to remove the keys it lost."""
        return self.reconcile_table_mapping is not None and bool(self.reconcile_bronze_uri)

    def to_json(self) -> dict[str, Any]:
        """The plan as the state machine carries it."""
        return write_object(self)

    @classmethod
    def from_json(cls, data: object) -> RunPlan:
        """The plan from its JSON object; ContractViolation names every attribute that breaks it."""
        return read_object(cls, data, "run plan")
