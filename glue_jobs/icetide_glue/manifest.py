"""The run manifest (docs/contracts.md, "Run manifest"): what one run did, for ``commit_watermark``.

It is written to ``--manifest_uri`` (s3:// on AWS, a path or file:// locally) and printed as the
last line of stdout. Its statistics are also stored in the snapshot summary of the run's commit,
so a rerun of a committed run can hand back the same manifest without reading anything again.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from icetide_glue.errors import ManifestWriteError
from icetide_glue.watermark import WatermarkValue


@dataclass(frozen=True)
class RunManifest:
    """One run's outcome. Counts are rows: ``rows_read`` as read from bronze; inserted, updated,
    deleted and unchanged partition the run's changes after deduplication (one per key)."""

    run_id: str
    target_table: str
    rows_read: int = 0
    rows_inserted: int = 0
    rows_updated: int = 0
    rows_deleted: int = 0
    rows_unchanged: int = 0
    watermark_column: str | None = None
    new_watermark: WatermarkValue = None
    snapshot_id: int | None = None
    already_committed: bool = False
    schema_changes: tuple[str, ...] = ()

    def run_stats(self) -> dict[str, Any]:
        """The part of the manifest a rerun reproduces from the snapshot summary."""
        return {
            "rowsRead": self.rows_read,
            "rowsInserted": self.rows_inserted,
            "rowsUpdated": self.rows_updated,
            "rowsDeleted": self.rows_deleted,
            "rowsUnchanged": self.rows_unchanged,
            "watermarkColumn": self.watermark_column,
            "newWatermark": self.new_watermark,
            "schemaChanges": list(self.schema_changes),
        }

    def to_json(self) -> dict[str, Any]:
        """The manifest as the contract spells it."""
        stats = self.run_stats()
        return {
            "runId": self.run_id,
            "targetTable": self.target_table,
            **{key: stats[key] for key in stats if key != "schemaChanges"},
            "snapshotId": self.snapshot_id,
            "alreadyCommitted": self.already_committed,
            "schemaChanges": stats["schemaChanges"],
        }

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
            schema_changes=tuple(run_stats.get("schemaChanges", ())),
        )


def manifest_line(manifest: dict[str, Any]) -> str:
    """A manifest's JSON object as one line (NaN is refused: the reader must be able to parse it)."""
    return json.dumps(manifest, allow_nan=False)


def write_manifest(uri: str, manifest: RunManifest) -> None:
    """Write the manifest JSON to an s3:// URI, a file:// URI or a local path."""
    body = manifest_line(manifest.to_json()) + "\n"
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        _put_s3_object(parsed.netloc, parsed.path.lstrip("/"), body, uri)
    elif parsed.scheme in ("", "file"):
        path = Path(unquote(parsed.path) if parsed.scheme == "file" else uri)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        except OSError as error:
            raise ManifestWriteError(f"cannot write the run manifest to {uri}: {error}") from error
    else:
        raise ManifestWriteError(f"--manifest_uri {uri!r}: only s3://, file:// and local paths are supported")


def _put_s3_object(bucket: str, key: str, body: str, uri: str) -> None:
    if not bucket or not key:
        raise ManifestWriteError(f"--manifest_uri {uri!r} must be s3://bucket/key")
    # boto3 is imported here: Glue provides it, and local runs writing to a path never need it.
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        boto3.client("s3").put_object(
            Bucket=bucket, Key=key, Body=body.encode("utf-8"), ContentType="application/json"
        )
    except (BotoCoreError, ClientError) as error:
        raise ManifestWriteError(f"cannot write the run manifest to {uri}: {error}") from error
