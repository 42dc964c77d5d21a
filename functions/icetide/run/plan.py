"""The run plan: everything one run needs, fixed when the run takes the table's lock.

Computing it once (lower bound, table mapping, task settings, S3 locations) means every later state
works from the same values, even if someone edits the control item while the run is under way.
The plan's one definition is `icetide_contracts.run_plan.RunPlan` (docs/contracts.md, "RunPlan").
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from icetide.clock import parse_time, stored_time
from icetide.control import watermark
from icetide.control.bronze_folders import CONTINUOUS_FOLDER as CONTINUOUS_FOLDER
from icetide.control.bronze_folders import table_bronze_folder
from icetide.control.model import CaptureMode, ControlItem
from icetide.control.operators import WATERMARK_BOUNDED
from icetide.dms.identifiers import schedule_slot
from icetide.dms.table_mapping import key_columns_mapping_json, table_mapping_json, verify_mapping_json
from icetide.dms.task_settings import task_settings_json
from icetide.errors import InvalidControlItem
from icetide.run.reload import reload_due
from icetide.run.verify import is_verify_run_id
from icetide_contracts.change_count import ChangeCount, ClosedStart
from icetide_contracts.run_plan import RunPlan
from icetide_contracts.watermark_text import watermark_json


def silver_table_name(glue_database: str, target_table_name: str) -> str:
    """A control item's silver table, `<glue database>.<table>` (the Glue catalog lowercases table
    names); merge runs and maintenance runs name it alike."""
    return f"{_s3_part('glue database', glue_database)}.{target_table_name.lower()}"


def _s3_part(name: str, value: str) -> str:
    part = value.strip().strip("/")
    if not part:
        raise ValueError(f"{name} must not be empty")
    return part


# DMS's own defaults for an S3 target (CdcMaxBatchInterval seconds, CdcMinFileSize KB).
DEFAULT_CDC_MAX_BATCH_INTERVAL = 60
DEFAULT_CDC_MIN_FILE_SIZE = 32000
# Where a reconcile run's key extraction lands, below the bronze prefix (a table name never starts
# with "_", so this folder cannot be a table's).
RECONCILE_FOLDER = "_reconcile"
# Where a verify run's key extraction lands, below the bronze prefix (icetide.run.verify).
VERIFY_FOLDER = "_verify"
# How much of a continuous task's backlog one run takes unless the item says otherwise: an hour of
# DMS's default 60-second CDC files fits, and a Glue run of this size stays short.
DEFAULT_MAX_FILES_PER_RUN = 100
DEFAULT_MAX_BYTES_PER_RUN = 1024**3


@dataclass(frozen=True)
class RunTiming:
    """When a run was scheduled and when it took its lock: the clock a plan is fixed by."""

    scheduled_time: datetime
    locked_at: datetime
    slot_minutes: int = 60

    @property
    def slot_start(self) -> datetime:
        """The start of the schedule slot the run belongs to."""
        return schedule_slot(self.scheduled_time, self.slot_minutes)


def reconcile_due(item: ControlItem, timing: RunTiming) -> bool:
    """True when this run of `item` must also extract the source's keys to find the rows it lost.

    Never on a table's first successful load (there is nothing to lose yet); then as soon as
    `reconcileEveryHours` have passed since the slot of the last reconcile (none yet: at once).
    """
    if item.capture_mode is not CaptureMode.DELTA or item.reconcile_every_hours is None:
        return False
    if item.last_run_stats is None:
        return False
    if item.last_reconcile_time is None:
        return True
    try:
        last = parse_time(item.last_reconcile_time)
    except ValueError:
        raise InvalidControlItem(
            [f"lastReconcileTime: {item.last_reconcile_time!r} is not an ISO-8601 UTC time"]
        ) from None
    return timing.slot_start - last >= timedelta(hours=item.reconcile_every_hours)


def run_lower_bound(item: ControlItem, reloading: bool = False) -> watermark.Watermark | None:
    """The lower filter value of the next run of `item` (contracts: "Lower bound of a run").

    `gte` and `between` start from the stored watermark minus the lookback, else from `startvalue`;
    other operators have no lower bound that moves (None). A cdc table's filter never moves: its
    runs read changes from the checkpoint, and an old row's update or delete must pass the filter.
    A reload (`reloading`) reads every row the filter selects: no lower bound moves either.
    """
    if reloading or item.capture_mode is CaptureMode.CDC or item.filter_operator not in WATERMARK_BOUNDED:
        return None
    try:
        return watermark.lower_bound(item.watermark, item.lookback, item.start_value)
    except ValueError as exc:
        # A stored watermark the lookback cannot apply to is a fault of the item, not of the run.
        raise InvalidControlItem([f"watermark: {exc}"]) from None


def continuous_bronze_folder(bronze_prefix: str, item: ControlItem) -> str:
    """The S3 key prefix (no bucket, ending in "/") a continuous table's long-lived task writes below.

    Fixed for the table's life, unlike a run's folder: the task is created once and writes there
    until the table is turned off.
    """
    return f"{_s3_part('bronze prefix', bronze_prefix)}/{table_bronze_folder(item)}/"


def _continuous_instance(item: ControlItem, *stack_instances: str | None) -> str:
    instance = item.replication_instance_arn or next(filter(None, stack_instances), None)
    if not instance:
        raise InvalidControlItem(
            [
                "cdcTask: continuous needs a long-lived replication instance; set replicationInstanceArn "
                "on the item, or deploy the stack with ContinuousReplicationInstanceArn (or "
                "ReplicationInstanceArn): a run never creates one for a task that outlives it"
            ]
        )
    return instance


def build_run_plan(
    item: ControlItem,
    run_id: str,
    *,
    raw_bucket: str,
    bronze_prefix: str,
    manifest_prefix: str,
    glue_database: str,
    timestamp_column: str,
    timing: RunTiming,
    stack_instance_arn: str | None = None,
    continuous_instance_arn: str | None = None,
) -> RunPlan:
    """The plan of one run of `item`.

    `replicationInstanceArn` is the item's own instance, else the stack-wide one, else None (the run
    creates and later deletes an instance of its own); a continuous table's is the item's, else the
    stack's instance for continuous tables, else the stack-wide one, else the item is invalid. A
    windowed cdc table's first run (no committed checkpoint) is a full load that goes on capturing
    changes; later runs capture from the checkpoint (where each stops is set when its task starts:
    icetide.dms.stop_position). A continuous table's runs read the files of its long-lived task
    after the file checkpoint.
    """
    if is_verify_run_id(run_id):
        return build_verify_plan(
            item,
            run_id,
            raw_bucket=raw_bucket,
            bronze_prefix=bronze_prefix,
            manifest_prefix=manifest_prefix,
            glue_database=glue_database,
            timestamp_column=timestamp_column,
            # A continuous table's long-lived instance is there anyway: no instance to create.
            stack_instance_arn=(continuous_instance_arn if item.is_continuous else None)
            or stack_instance_arn,
        )
    bucket = _s3_part("raw bucket", raw_bucket)
    table = item.target_table_name
    bronze = _s3_part("bronze prefix", bronze_prefix)
    manifests = _s3_part("manifest prefix", manifest_prefix)
    cdc = item.capture_mode is CaptureMode.CDC
    continuous = item.is_continuous
    # A reload (icetide.run.reload) reads the whole filtered table again and reconciles the keys, so
    # the one commit replaces silver's rows; a cdc table's task starts over with a full load.
    reloading = reload_due(item)
    reconciles = reloading or reconcile_due(item, timing)
    reconcile_folder = "/".join(filter(None, (bronze, RECONCILE_FOLDER, item.output_s3_prefix)))
    return RunPlan(
        target_table_name=table,
        run_id=run_id,
        source_schema=item.source_schema,
        source_table=item.source_table,
        silver_table=silver_table_name(glue_database, table),
        primary_keys=",".join(item.primary_keys),
        load_mode=item.load_mode.value,
        # Glue arguments are strings: "no watermark column" travels as "".
        watermark_column=item.filter_column or "",
        previous_watermark=watermark_json(item.watermark),
        table_mapping=table_mapping_json(item, run_lower_bound(item, reloading)),
        task_settings=task_settings_json(item),
        replication_instance_arn=_continuous_instance(item, continuous_instance_arn, stack_instance_arn)
        if continuous
        else item.replication_instance_arn or stack_instance_arn or None,
        # The blog's output prefix (`ouputs3Prefix`/`outputS3Prefix`) groups tables below the bronze
        # prefix, where the DMS role may write and the archive rule applies.
        bronze_uri=f"s3://{bucket}/{continuous_bronze_folder(bronze, item)}"
        if continuous
        else f"s3://{bucket}/{bronze}/{table_bronze_folder(item)}/{run_id}/",
        manifest_uri=f"s3://{bucket}/{manifests}/{table}/{run_id}.json",
        timestamp_column=timestamp_column,
        capture_mode=item.capture_mode.value,
        delete_mode=item.delete_mode.value,
        migration_type=_migration_type(item, reloading),
        # The stored checkpoint: where a `cdc` task starts, where a reload's task reading a replication
        # slot starts (icetide.dms.start_position), and the checkpoint the run's commit replaces, only
        # while it is still stored. Without one, a task reading a slot starts at cdcStartPoint.
        cdc_start_position=item.cdc_checkpoint if cdc and not continuous else None,
        cdc_start_point=item.cdc_start_point if cdc else None,
        cdc_max_batch_interval=(item.cdc_max_batch_interval or DEFAULT_CDC_MAX_BATCH_INTERVAL)
        if cdc
        else None,
        cdc_min_file_size=(item.cdc_min_file_size or DEFAULT_CDC_MIN_FILE_SIZE) if cdc else None,
        reconcile_table_mapping=key_columns_mapping_json(item) if reconciles else None,
        reconcile_slot=stored_time(timing.slot_start) if reconciles else None,
        reconcile_bronze_uri=f"s3://{bucket}/{reconcile_folder}/{table}/{run_id}/" if reconciles else "",
        cdc_task=item.cdc_task.value,
        file_checkpoint=item.cdc_file_checkpoint if continuous else None,
        change_count=ChangeCount.from_stored(item.cdc_change_count)
        if continuous and item.cdc_change_count
        else None,
        closed_start=ClosedStart.from_json(item.last_task_resume["closedStart"])
        if continuous and item.last_task_resume and item.last_task_resume.get("closedStart")
        else None,
        max_files_per_run=(item.max_files_per_run or DEFAULT_MAX_FILES_PER_RUN) if continuous else None,
        max_bytes_per_run=(item.max_bytes_per_run or DEFAULT_MAX_BYTES_PER_RUN) if continuous else None,
        bronze_files_uri=f"s3://{bucket}/{manifests}/{table}/{run_id}.bronze-files.json"
        if continuous
        else "",
    )


def build_verify_plan(
    item: ControlItem,
    run_id: str,
    *,
    raw_bucket: str,
    bronze_prefix: str,
    manifest_prefix: str,
    glue_database: str,
    timestamp_column: str,
    stack_instance_arn: str | None = None,
) -> RunPlan:
    """The plan of a verify run of `item` (icetide.run.verify): whatever the table's capture mode, one
    full-load task extracting the key columns of the rows its filter selects as configured, into a
    folder of the run below ``_verify``; the Glue job writes its report next to the run's manifest.

    Only keys can be compared this way: a table without primaryKeys is refused (InvalidControlItem,
    raised before the lock is taken).
    """
    if not item.primary_keys:
        raise InvalidControlItem(
            [
                "primaryKeys: a verify run compares the source's keys with silver's, and an "
                "append-only table has none (`icetide verify --workspace` compares whole rows)"
            ]
        )
    bucket = _s3_part("raw bucket", raw_bucket)
    table = item.target_table_name
    bronze = _s3_part("bronze prefix", bronze_prefix)
    manifests = _s3_part("manifest prefix", manifest_prefix)
    folder = "/".join(filter(None, (bronze, VERIFY_FOLDER, item.output_s3_prefix, table, run_id)))
    return RunPlan(
        target_table_name=table,
        run_id=run_id,
        source_schema=item.source_schema,
        source_table=item.source_table,
        silver_table=silver_table_name(glue_database, table),
        primary_keys=",".join(item.primary_keys),
        load_mode=item.load_mode.value,
        previous_watermark=watermark_json(item.watermark),
        table_mapping=verify_mapping_json(item),
        task_settings=task_settings_json(item),
        replication_instance_arn=item.replication_instance_arn or stack_instance_arn or None,
        bronze_uri=f"s3://{bucket}/{folder}/",
        manifest_uri=f"s3://{bucket}/{manifests}/{table}/{run_id}.json",
        timestamp_column=timestamp_column,
        delete_mode=item.delete_mode.value,
        verify=True,
        verify_report_uri=f"s3://{bucket}/{manifests}/{table}/{run_id}.verify.json",
    )


def _migration_type(item: ControlItem, reloading: bool = False) -> str:
    if item.capture_mode is CaptureMode.DELTA:
        return "full-load"  # a filtered delta load is a full load of the filtered table
    if item.is_continuous:
        return "full-load-and-cdc"  # created once, by the first run: the task loads, then captures
    return "cdc" if item.cdc_checkpoint and not reloading else "full-load-and-cdc"
