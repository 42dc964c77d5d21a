"""A workspace keeps its continuous tables' bronze files between `icetide local run` processes.

In AWS a continuous table's long-lived task writes into S3, which outlives every run; a run that
fails leaves its files for the next one. Locally S3 is moto's, gone with the process, while the
task (saved by the DMS stand-in) goes on from where it was: without this copy, the files a failed
cycle did not merge would be lost. So the workspace mirrors the S3 folder below
``<BRONZE_PREFIX>/_continuous/`` on disk, restored before a cycle and saved after it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from icetide.run.plan import CONTINUOUS_FOLDER
from icetide.settings import load_settings


def _prefix() -> str:
    return f"{load_settings().bronze_prefix}/{CONTINUOUS_FOLDER}/"


def restore_continuous_bronze(s3: Any, bucket: str, folder: Path) -> int:
    """Upload every file saved below ``folder`` to its key in ``bucket``; how many."""
    if not folder.is_dir():
        return 0
    files = [path for path in sorted(folder.rglob("*")) if path.is_file()]
    for path in files:
        s3.put_object(
            Bucket=bucket, Key=_prefix() + path.relative_to(folder).as_posix(), Body=path.read_bytes()
        )
    return len(files)


def save_continuous_bronze(s3: Any, bucket: str, folder: Path) -> int:
    """Write every object below the continuous prefix of ``bucket`` to ``folder`` (new ones only:
    DMS never rewrites a file); how many were new."""
    prefix = _prefix()
    new = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for listed in page.get("Contents", []):
            path = folder / listed["Key"][len(prefix) :]
            if path.exists():
                continue
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_name(path.name + ".partial")
            partial.write_bytes(s3.get_object(Bucket=bucket, Key=listed["Key"])["Body"].read())
            partial.replace(path)
            new += 1
    return new
