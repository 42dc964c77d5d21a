"""Writing the run manifest (docs/contracts.md, "Run manifest"): what one run did, for ``commit_watermark``.

Its one definition is ``icetide_contracts.run_manifest.RunManifest``, the class commit_watermark
reads it with. It is written to ``--manifest_uri`` (s3:// on AWS, a path or file:// locally) and
printed as the last line of stdout. Its statistics are also stored in the snapshot summary of the
run's commit, so a rerun of a committed run can hand back the same manifest without reading anything
again.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlparse

from icetide_contracts.run_manifest import RunManifest
from icetide_glue.errors import ManifestWriteError


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
