"""CommitWatermark: record the run's success and end it: new watermark, statistics, status, unlock.

Input: ``{"targetTableName", "runId", "plan", "statistics"?}`` (``statistics``: the output of
read_task_statistics, optional). Output: ``{"previousWatermark", "watermark", "advanced", "stats",
"cdcCheckpoint"}``. A cdc run also commits its task's RecoveryCheckpoint in the same write (only
while the stored checkpoint is still the one it started from), a reconcile run its slot as
``lastReconcileTime``: a run that fails anywhere leaves both, so the next run reads its window again.
A continuous run commits the last file of its bronze file selection (``plan.bronzeFilesUri``) as
``cdcFileCheckpoint``, under the same condition, and the selection's change count as
``cdcChangeCount`` (icetide_contracts.change_count); a selection without files needs no manifest (no
Glue job ran) and commits the run as one that changed nothing. The newest change time the run
merged (the manifest's ``newestChangeTime``) becomes ``lastChangeTime`` in the same write; a run that
merged no CDC change keeps the stored one.
The run's last step, after the Glue job committed to silver and the DMS resources are deleted: one
conditional write stores watermark, statistics and status and releases the table's lock, only while
this run holds the lock and the watermark is the one it started from (``plan.previousWatermark``).
So a run that fails anywhere never moves the watermark, and the watermark never moves backwards.
Invoked again after it committed (a retried invocation), it reports the same commit.
Raises ManifestInvalid (missing, malformed or another run's manifest), WatermarkConflict, LockLost.
The invocation that commits publishes the run's metrics with the table as dimension: rows inserted,
updated and deleted, RunSeconds (from the lock, the run's start) and LagSeconds (icetide.run.freshness).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from aws_lambda_powertools.utilities.typing import LambdaContext

from icetide.adapters import s3
from icetide.adapters.control_table import ControlTable
from icetide.clock import parse_time, stored_time, utc_now
from icetide.control import watermark as wm
from icetide.errors import ManifestInvalid
from icetide.observability import MetricUnit, logger, metrics, observed, publish_table_metrics
from icetide.run import commit, freshness
from icetide.run.handler_inputs import CommitInput, parse_input
from icetide.run.manifest import read_manifest, read_selection
from icetide.settings import load_settings
from icetide_contracts.bronze_files import BronzeFiles
from icetide_contracts.run_manifest import RunManifest
from icetide_contracts.run_plan import CaptureMode, RunPlan
from icetide_contracts.watermark_text import watermark_json


def _manifest(plan: RunPlan) -> RunManifest:
    try:
        return read_manifest(s3.read_text(plan.manifest_uri))
    except s3.ObjectNotFound as missing:
        raise ManifestInvalid(
            f"no run manifest at {plan.manifest_uri}: the Glue job did not write one"
        ) from missing


def _selection(plan: RunPlan) -> BronzeFiles:
    try:
        return read_selection(s3.read_text(plan.bronze_files_uri), plan)
    except s3.ObjectNotFound as missing:
        raise ManifestInvalid(
            f"no bronze file selection at {plan.bronze_files_uri}: select_bronze_files did not write one"
        ) from missing


def _change_time(manifest: RunManifest) -> str | None:
    """The manifest's newest change time as the control item stores times (``lastChangeTime``);
    None when the run merged no CDC change. Cut to whole seconds: it stays a lower bound."""
    if manifest.newest_change_time is None:
        return None
    return stored_time(wm.parse_timestamp(manifest.newest_change_time))


def _committed_run_metrics(
    plan: RunPlan,
    manifest: RunManifest,
    committed_watermark: wm.Watermark | None,
    newest_change: datetime | None,
    locked_at: datetime | None,
    now: datetime,
) -> list[tuple[str, MetricUnit, float]]:
    """What one committed run publishes per table (lag: icetide.run.freshness)."""
    # A full-load task reads the source after the lock was taken. A cdc run claims no more than its
    # newest merged change: a continuous run may have left files for the next one, and a windowed
    # run's stop position is the instance's clock, not how far its task read (icetide.run.freshness).
    cdc = plan.capture_mode == CaptureMode.CDC
    source_read_at = None if cdc else locked_at
    values: list[tuple[str, MetricUnit, float]] = [
        ("RunsSucceeded", MetricUnit.Count, 1),
        ("RowsRead", MetricUnit.Count, manifest.rows_read),
        ("RowsInserted", MetricUnit.Count, manifest.rows_inserted),
        ("RowsUpdated", MetricUnit.Count, manifest.rows_updated),
        ("RowsDeleted", MetricUnit.Count, manifest.rows_deleted),
    ]
    if locked_at is not None:
        values.append(("RunSeconds", MetricUnit.Seconds, max(0.0, (now - locked_at).total_seconds())))
    caught_up = freshness.caught_up_time(committed_watermark, source_read_at, newest_change if cdc else None)
    freshness.warn_if_ahead_of_clock(plan.target_table_name, caught_up, now)
    lag = freshness.lag_from(now, caught_up)
    if lag is not None:
        values.append(("LagSeconds", MetricUnit.Seconds, lag))
    return values


@observed()
def handler(event: dict[str, Any], context: LambdaContext) -> dict[str, Any]:
    settings = load_settings()
    run = parse_input(CommitInput, event)
    plan = run.plan

    selection = _selection(plan) if plan.continuous else None
    if selection is not None and not selection.files:
        manifest = commit.empty_run_manifest(plan)  # no new file: no Glue job ran, nothing merged
    else:
        manifest = _manifest(plan)
    commit.check_manifest(manifest, run_id=run.run_id, watermark_column=plan.watermark_column)
    step = commit.next_watermark(plan.previous_watermark, manifest.new_watermark)
    stats = commit.run_stats(
        manifest,
        run.statistics.full_load_rows if run.statistics else None,
        run.statistics.change_rows if run.statistics else None,
        files_merged=len(selection.files) if selection is not None else None,
    )
    reached = (
        selection.last_file
        if selection is not None
        else run.statistics.recovery_checkpoint
        if run.statistics
        else None
    )
    checkpoint = commit.checkpoint_step(plan, reached)
    if checkpoint is not None and checkpoint.new is None and not plan.continuous:
        logger.warning("the cdc task reported no RecoveryCheckpoint; the next run reads this window again")

    now = utc_now()
    write = ControlTable(settings.control_table_name).commit_run(
        run.target_table_name,
        run.run_id,
        previous_forms=commit.stored_forms(plan.previous_watermark),
        watermark=wm.to_dynamo(step.watermark),
        stats=stats,
        now=stored_time(now),
        checkpoint=checkpoint,
        reconciled_at=plan.reconcile_slot,
        change_time=_change_time(manifest),
        change_count=selection.change_count.to_json()
        if selection is not None and selection.change_count is not None
        else None,
    )
    committed_now = commit.commit_result(
        run.target_table_name,
        run.run_id,
        written=write.written,
        before=write.item,
        previous=plan.previous_watermark,
    )
    if committed_now:
        metrics.add_metric(name="RowsRead", unit=MetricUnit.Count, value=manifest.rows_read)
        before = write.item or {}
        lock_time = before.get("lockTime")
        # A run that merged no CDC change kept the stored lastChangeTime.
        change_time = _change_time(manifest) or before.get("lastChangeTime")
        publish_table_metrics(
            run.target_table_name,
            _committed_run_metrics(
                plan,
                manifest,
                step.watermark,
                parse_time(change_time) if change_time else None,
                parse_time(lock_time) if lock_time else None,
                now,
            ),
        )
    else:
        # Rows are counted once, by the invocation that committed them.
        logger.info("run already committed by an earlier invocation; nothing written again")
    if manifest.new_watermark is not None and not step.advanced:
        logger.info(
            "watermark kept: the run merged nothing past it", extra={"merged": manifest.new_watermark}
        )
    return {
        "previousWatermark": watermark_json(step.previous),
        "watermark": watermark_json(step.watermark),
        "advanced": step.advanced,
        "stats": stats,
        "cdcCheckpoint": checkpoint.new if checkpoint is not None else None,
    }
