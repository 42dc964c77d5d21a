"""A run's bronze files as DMS wrote them to S3: names, columns and rows, read through boto3.

The checks judge DMS's files, not icetide's reading of them, so this reads the parquet files itself
(pyarrow) and keeps what the checks compare: each file's name, its first column, its ``Op`` values
and the range of its timestamp column.
"""

from __future__ import annotations

import io
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow.parquet as pq

LOAD_NAME = re.compile(r"LOAD([0-9A-F]{8})\.parquet")
CDC_NAME = re.compile(r"\d{8}-\d{9}\.parquet")
OP_COLUMN = "Op"


@dataclass(frozen=True)
class BronzeFile:
    """One file of a table's bronze folder."""

    key: str
    first_column: str
    ops: tuple[str, ...]
    # The file's timestamp column values (strings `yyyy-MM-dd HH:mm:ss.SSSSSS`), in file order.
    times: tuple[str, ...]
    keys: tuple[Any, ...]
    # When S3 received the object (ListObjectsV2's LastModified).
    last_modified: datetime | None = None

    @property
    def name(self) -> str:
        return self.key.rsplit("/", 1)[-1]

    @property
    def is_load(self) -> bool:
        return self.name.startswith("LOAD")

    @property
    def named_time(self) -> datetime | None:
        """The UTC time a CDC file's name gives (yyyyMMdd-HHmmssSSS); None for another name."""
        if not CDC_NAME.fullmatch(self.name):
            return None
        stem = self.name.removesuffix(".parquet")
        named = datetime.strptime(stem[:15], "%Y%m%d-%H%M%S").replace(tzinfo=UTC)
        return named + timedelta(milliseconds=int(stem[15:]))


def run_files(
    s3: Any, bucket: str, prefix: str, *, timestamp_column: str, key_column: str
) -> list[BronzeFile]:
    """Every parquet file under ``prefix`` (a run's bronze folder), in key order."""
    files = []
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for entry in page.get("Contents", []):
            if not entry["Key"].endswith(".parquet"):
                continue
            body = s3.get_object(Bucket=bucket, Key=entry["Key"])["Body"].read()
            table = pq.read_table(io.BytesIO(body))
            columns = table.column_names
            files.append(
                BronzeFile(
                    key=entry["Key"],
                    first_column=columns[0] if columns else "",
                    ops=tuple(table.column(OP_COLUMN).to_pylist()) if OP_COLUMN in columns else (),
                    times=tuple(table.column(timestamp_column).to_pylist())
                    if timestamp_column in columns
                    else (),
                    keys=tuple(table.column(key_column).to_pylist()) if key_column in columns else (),
                    last_modified=entry.get("LastModified"),
                )
            )
    return sorted(files, key=lambda one: one.key)
