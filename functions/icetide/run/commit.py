"""Committing a run: which watermark may be stored, and what the run's statistics are.

The watermark only moves forward: the new value is the later of the run's starting watermark and
the largest value the Glue job merged (a lookback re-reads older rows, so the manifest's value can
be behind). The commit is the run's last step and one conditional write: it stores the watermark
and statistics and releases the lock, only while the run still holds the lock and the watermark is
still the one it started from. So a run either commits all of it or nothing, and a failed run
never moves the watermark. A watermark that moved during the run is reported as a conflict, a lock
another run took over as a lost lock, instead of being overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from icetide.adapters.control_table import CheckpointStep
from icetide.control import watermark as wm
from icetide.control.model import RunStatus
from icetide.control.values import as_decimal
from icetide.errors import LockLost, ManifestInvalid, WatermarkConflict
from icetide.run.locking import missing_item
from icetide_contracts.run_manifest import RunManifest
from icetide_contracts.run_plan import RunPlan
from icetide_contracts.watermark_text import watermark_json


@dataclass(frozen=True)
class WatermarkStep:
    """The watermark before and after a run; ``advanced`` when the run moved it forward."""

    previous: wm.Watermark | None
    watermark: wm.Watermark | None
    advanced: bool


def check_manifest(manifest: RunManifest, *, run_id: str, watermark_column: str | None) -> None:
    """Refuse a manifest written for another run or another watermark column.

    A manifest left at the URI by a different run (a copy, a misrouted path) would otherwise move
    this table's watermark to values this run never merged.
    """
    if manifest.run_id != run_id:
        raise ManifestInvalid(f"run manifest belongs to run {manifest.run_id}, not to run {run_id}")
    if watermark_column and manifest.watermark_column and manifest.watermark_column != watermark_column:
        raise ManifestInvalid(
            f"run manifest reports watermark column {manifest.watermark_column}, "
            f"but run {run_id} filters on {watermark_column}"
        )


def next_watermark(previous: wm.Watermark | None, merged: wm.Watermark | None) -> WatermarkStep:
    """The watermark after a run that merged values up to ``merged`` (None: an empty batch)."""
    try:
        new = wm.later(previous, merged)
    except ValueError as error:
        raise ManifestInvalid(f"run manifest newWatermark cannot follow the watermark: {error}") from None
    advanced = new is not None and (previous is None or wm.compare(new, previous) > 0)
    return WatermarkStep(previous=previous, watermark=new, advanced=advanced)


def run_stats(
    manifest: RunManifest,
    full_load_rows: int | None,
    change_rows: int | None = None,
    files_merged: int | None = None,
) -> dict[str, int]:
    """``lastRunStats``: the manifest's row counts, the full-load and change rows DMS wrote (if known),
    and the number of files a continuous run merged."""
    stats = {
        "rowsRead": manifest.rows_read,
        "rowsInserted": manifest.rows_inserted,
        "rowsUpdated": manifest.rows_updated,
        "rowsDeleted": manifest.rows_deleted,
        "rowsUnchanged": manifest.rows_unchanged,
        "snapshotId": manifest.snapshot_id,
        "fullLoadRows": full_load_rows,
        "changeRows": change_rows,
        "filesMerged": files_merged,
    }
    # Unknown values are left out rather than stored as NULL: absent reads as "not measured".
    return {name: value for name, value in stats.items() if value is not None}


def checkpoint_step(plan: RunPlan, reached: str | None) -> CheckpointStep | None:
    """The checkpoint a run commits: a windowed cdc run moves it to the task's RecoveryCheckpoint
    (``reached``), a continuous run to the last file it merged (``reached``; None: it merged none),
    each conditioned on the one it started from; a delta run has none (None).

    A cdc task that reports no checkpoint leaves the stored one: the next run reads the window again,
    which the merge makes harmless.
    """
    if plan.capture_mode != "cdc":
        return None
    if plan.continuous:
        return CheckpointStep(previous=plan.file_checkpoint, new=reached, attribute="cdcFileCheckpoint")
    return CheckpointStep(previous=plan.cdc_start_position, new=reached)


def empty_run_manifest(plan: RunPlan) -> RunManifest:
    """The manifest of a continuous run that found no new file: it merged nothing and ran no job."""
    return RunManifest(
        run_id=plan.run_id, target_table=plan.silver_table, watermark_column=plan.watermark_column
    )


def stored_forms(previous: wm.Watermark | None) -> list[Decimal | str]:
    """Every form in which the control item may hold the watermark ``previous`` (none for None).

    The plan carries the watermark as JSON, where a decimal too precise for a float travels as
    text; the item holds it as a number. Both forms are accepted so that such a watermark never
    reads as changed.
    """
    stored = wm.to_dynamo(previous)
    if stored is None:
        return []
    forms: list[Decimal | str] = [stored]
    number = as_decimal(previous) if isinstance(previous, str) else None
    if number is not None:
        forms.append(number)
    return forms


def commit_result(
    target_table_name: str,
    run_id: str,
    *,
    written: bool,
    before: Mapping[str, Any] | None,
    previous: wm.Watermark | None,
) -> bool:
    """Interpret the conditional commit: True when this call committed, False when this run already had.

    ``before`` is the control item as it was before the write (None: there is no item). False is an
    earlier attempt of this same run that committed before the Lambda was invoked again (a retried
    invocation): that commit stands, and failing now would end a run whose watermark moved as
    FAILED. Any other refusal raises the named error.
    """
    if before is None:
        raise missing_item(target_table_name)
    if written:
        return True
    holder = before.get("lockHolder")
    if holder == run_id:
        # The lock condition held, so the watermark (or cdc checkpoint) condition is the one that failed.
        stored = [
            f"{label} {before[name]!r}"
            for name, label in (
                ("cdcCheckpoint", "cdc checkpoint"),
                ("cdcFileCheckpoint", "cdc file checkpoint"),
            )
            if name in before
        ]
        also = f" ({', '.join(stored)})" if stored else ""
        raise WatermarkConflict(
            f"the watermark of {target_table_name} is {watermark_json(before.get('watermark'))!r}{also}, "
            f"but run {run_id} started from {previous!r}: another writer moved it during the run; "
            "nothing was stored"
        )
    if holder is None and _committed_by(before, run_id):
        return False
    taken = f"run {holder} took it over at {before.get('lockTime')}" if holder else "nobody holds it"
    raise LockLost(
        f"run {run_id} no longer holds the lock of {target_table_name} ({taken}); nothing was stored, "
        f"the watermark stays {watermark_json(before.get('watermark'))!r}"
    )


def _committed_by(item: Mapping[str, Any], run_id: str) -> bool:
    # Only a commit writes SUCCEEDED, and a later run's lock would have replaced lastRunId.
    return item.get("lastRunId") == run_id and item.get("lastRunStatus") == RunStatus.SUCCEEDED
