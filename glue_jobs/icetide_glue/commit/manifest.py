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
from icetide_glue.errors import IcetideJobError, ManifestWriteError


def manifest_line(manifest: dict[str, Any]) -> str:
    """A manifest's JSON object as one line (NaN is refused: the reader must be able to parse it)."""
    return json.dumps(manifest, allow_nan=False)


def write_manifest(uri: str, manifest: RunManifest) -> None:
    """Write the manifest JSON to an s3:// URI, a file:// URI or a local path."""
    write_json_document(uri, manifest.to_json(), what="the run manifest", argument="--manifest_uri")


def write_json_document(
    uri: str,
    document: dict[str, Any],
    *,
    what: str,
    argument: str,
    error: type[IcetideJobError] = ManifestWriteError,
) -> None:
    """Write one JSON document (a line) to an s3:// URI, a file:// URI or a local path; ``error``
    (naming ``what`` and ``argument``) when it cannot be written."""
    body = manifest_line(document) + "\n"
    parsed = urlparse(uri)
    if parsed.scheme == "s3":
        bucket, key = parsed.netloc, parsed.path.lstrip("/")
        if not bucket or not key:
            raise error(f"{argument} {uri!r} must be s3://bucket/key")
        _put_s3_object(bucket, key, body, f"cannot write {what} to {uri}", error)
    elif parsed.scheme in ("", "file"):
        path = Path(unquote(parsed.path) if parsed.scheme == "file" else uri)
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(body, encoding="utf-8")
        except OSError as failure:
            raise error(f"cannot write {what} to {uri}: {failure}") from failure
    else:
        raise error(f"{argument} {uri!r}: only s3://, file:// and local paths are supported")


def _put_s3_object(bucket: str, key: str, body: str, failed: str, error: type[IcetideJobError]) -> None:
    # boto3 is imported here: Glue provides it, and local runs writing to a path never need it.
    import boto3
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        boto3.client("s3").put_object(
            Bucket=bucket, Key=key, Body=body.encode("utf-8"), ContentType="application/json"
        )
    except (BotoCoreError, ClientError) as failure:
        raise error(f"{failed}: {failure}") from failure
