"""The run manifest (docs/contracts.md, "Run manifest"): what one run of the Glue job did.

The Glue job writes `to_json()` to the plan's `manifestUri` (`icetide_glue.commit.manifest.write_manifest`)
and stores `run_stats()` in the snapshot summary of its commit, from which a rerun of a committed
run rebuilds the manifest (`already_committed_run`). commit_watermark reads it with `from_text` and
advances the watermark from `new_watermark` only, so a manifest that does not hold together is
refused outright.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from icetide_contracts.json_fields import (
    ContractViolation,
    flag,
    json_key,
    optional,
    read_object,
    text,
    text_list,
    utc_timestamp,
    watermark_value,
    whole_number,
    write_object,
)
from icetide_contracts.watermark_text import WatermarkJson

_ROW_COUNT = whole_number(minimum=0)


@dataclass(frozen=True)
class RunManifest:
    """One run's outcome. Counts are rows: `rows_read` as read from bronze; inserted, updated,
    deleted and unchanged partition the run's changes after deduplication (one per key).

    The counts default to 0 for the job, which fills them in step by step; in JSON they are required.
    """

    run_id: str = field(metadata=json_key("runId", text(min_length=1)))
    target_table: str = field(metadata=json_key("targetTable", text(min_length=1)))
    rows_read: int = field(default=0, metadata=json_key("rowsRead", _ROW_COUNT, required=True))
    rows_inserted: int = field(default=0, metadata=json_key("rowsInserted", _ROW_COUNT, required=True))
    rows_updated: int = field(default=0, metadata=json_key("rowsUpdated", _ROW_COUNT, required=True))
    rows_deleted: int = field(default=0, metadata=json_key("rowsDeleted", _ROW_COUNT, required=True))
    rows_unchanged: int = field(default=0, metadata=json_key("rowsUnchanged", _ROW_COUNT))
    watermark_column: str | None = field(default=None, metadata=json_key("watermarkColumn", optional(text())))
    # The largest watermark-column value the run read (watermark_text's form); None: an empty batch.
    new_watermark: WatermarkJson = field(default=None, metadata=json_key("newWatermark", watermark_value))
    # None: the run committed nothing.
    snapshot_id: int | None = field(default=None, metadata=json_key("snapshotId", optional(whole_number())))
    already_committed: bool = field(default=False, metadata=json_key("alreadyCommitted", flag))
    schema_changes: list[str] = field(default_factory=list, metadata=json_key("schemaChanges", text_list))
    # The newest change time (DMS's TimestampColumnName value: the source's commit time) among the
    # run's CDC changes, as watermark_text spells a timestamp; None: the run merged no CDC change.
    # Full-load rows are left out: theirs is when DMS transferred the row, on the replication
    # instance's clock, not a commit time. Freshness takes it as a lower bound of how far the task
    # read the source's log (icetide.run.freshness).
    newest_change_time: str | None = field(
        default=None, metadata=json_key("newestChangeTime", optional(utc_timestamp))
    )

    def to_json(self) -> dict[str, Any]:
        """The manifest as the contract spells it."""
        return write_object(self)

    def run_stats(self) -> dict[str, Any]:
        """The part of the manifest a rerun reproduces from the snapshot summary."""
        document = self.to_json()
        return {key: document[key] for key in _RUN_STATS_KEYS}

    @classmethod
    def already_committed_run(
        cls, run_id: str, target_table: str, snapshot_id: int, run_stats: dict[str, Any]
    ) -> RunManifest:
        """The manifest of a run whose commit is already in silver (statistics from its summary)."""
        return cls(
            run_id=run_id,
            target_table=target_table,
            rows_read=int(run_stats.get("rowsRead", 0)),
            rows_inserted=int(run_stats.get("rowsInserted", 0)),
            rows_updated=int(run_stats.get("rowsUpdated", 0)),
            rows_deleted=int(run_stats.get("rowsDeleted", 0)),
            rows_unchanged=int(run_stats.get("rowsUnchanged", 0)),
            watermark_column=run_stats.get("watermarkColumn"),
            new_watermark=run_stats.get("newWatermark"),
            snapshot_id=snapshot_id,
            already_committed=True,
            schema_changes=list(run_stats.get("schemaChanges", ())),
            newest_change_time=run_stats.get("newestChangeTime"),
        )

    @classmethod
    def from_json(cls, data: object) -> RunManifest:
        """The manifest from its JSON object; ContractViolation names every attribute that breaks it."""
        return read_object(cls, data, "run manifest")

    @classmethod
    def from_text(cls, content: str | bytes) -> RunManifest:
        """The manifest from the text of its file; ContractViolation says what is wrong (not JSON,
        not an object, or which attribute and why)."""
        try:
            data = json.loads(content)
        except (json.JSONDecodeError, UnicodeDecodeError) as error:
            raise ContractViolation(f"run manifest is not valid JSON: {error}") from None
        return cls.from_json(data)


_RUN_STATS_KEYS = (
    "rowsRead",
    "rowsInserted",
    "rowsUpdated",
    "rowsDeleted",
    "rowsUnchanged",
    "watermarkColumn",
    "newWatermark",
    "schemaChanges",
    "newestChangeTime",
)
