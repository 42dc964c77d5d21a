"""The run plan: everything one run needs, fixed when the run takes the table's lock.

Computing it once (lower bound, table mapping, task settings, S3 locations) means every later state
works from the same values, even if someone edits the control item while the run is under way.
The plan's one definition is `icetide_contracts.run_plan.RunPlan` (docs/contracts.md, "RunPlan").
"""

from __future__ import annotations

from icetide.control import watermark
from icetide.control.model import ControlItem
from icetide.control.operators import WATERMARK_BOUNDED
from icetide.dms.table_mapping import table_mapping_json
from icetide.dms.task_settings import task_settings_json
from icetide.errors import InvalidControlItem
from icetide_contracts.run_plan import RunPlan
from icetide_contracts.watermark_text import watermark_json


def _s3_part(name: str, value: str) -> str:
    part = value.strip().strip("/")
    if not part:
        raise ValueError(f"{name} must not be empty")
    return part


def run_lower_bound(item: ControlItem) -> watermark.Watermark | None:
    """The lower filter value of the next run of `item` (contracts: "Lower bound of a run").

    `gte` and `between` start from the stored watermark minus the lookback, else from `startvalue`;
    other operators have no lower bound that moves (None).
    """
    if item.filter_operator not in WATERMARK_BOUNDED:
        return None
    try:
        return watermark.lower_bound(item.watermark, item.lookback, item.start_value)
    except ValueError as exc:
        # A stored watermark the lookback cannot apply to is a fault of the item, not of the run.
        raise InvalidControlItem([f"watermark: {exc}"]) from None


def build_run_plan(
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
    """The plan of one run of `item`.

    `replicationInstanceArn` is the item's own instance, else the stack-wide one, else None (the run
    creates and later deletes an instance of its own).
    """
    bucket = _s3_part("raw bucket", raw_bucket)
    table = item.target_table_name
    bronze = _s3_part("bronze prefix", bronze_prefix)
    manifests = _s3_part("manifest prefix", manifest_prefix)
    bronze_folder = "/".join(filter(None, (bronze, item.output_s3_prefix)))
    return RunPlan(
        target_table_name=table,
        run_id=run_id,
        source_schema=item.source_schema,
        source_table=item.source_table,
        silver_table=f"{_s3_part('glue database', glue_database)}.{table.lower()}",
        primary_keys=",".join(item.primary_keys),
        load_mode=item.load_mode.value,
        # Glue arguments are strings: "no watermark column" travels as "".
        watermark_column=item.filter_column or "",
        previous_watermark=watermark_json(item.watermark),
        table_mapping=table_mapping_json(item, run_lower_bound(item)),
        task_settings=task_settings_json(item),
        replication_instance_arn=item.replication_instance_arn or stack_instance_arn or None,
        # The blog's output prefix (`ouputs3Prefix`/`outputS3Prefix`) groups tables below the bronze
        # prefix, where the DMS role may write and the archive rule applies.
        bronze_uri=f"s3://{bucket}/{bronze_folder}/{table}/{run_id}/",
        manifest_uri=f"s3://{bucket}/{manifests}/{table}/{run_id}.json",
        timestamp_column=timestamp_column,
    )
