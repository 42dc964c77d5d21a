"""Where the DMS stand-in puts its files: the S3 target endpoint's settings, and pluggable sinks.

A real DMS task writes to the bucket named in its target endpoint's ``S3Settings``. The stand-in reads
the same settings dict (as ``create_endpoint`` received it) and writes through a small sink interface:
:class:`S3ObjectSink` puts objects with boto3 (moto intercepts it in the local stack), and
:class:`LocalDirectorySink` writes below a directory that stands for the bucket.
"""

from __future__ import annotations

import contextlib
import io
import os
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO, Protocol

_PARQUET_VERSIONS = {"parquet-1-0": "1.0", "parquet-2-0": "2.6"}  # DMS name -> pyarrow format version
_COMPRESSIONS = {"none": "none", "gzip": "gzip"}  # DMS CompressionType -> pyarrow codec


class UnsupportedTargetSettings(ValueError):
    """The S3 settings ask for something DMS would reject, or that the stand-in does not write."""


@dataclass(frozen=True)
class S3TargetSettings:
    """The parts of a DMS S3 target endpoint's ``S3Settings`` that decide what a task writes."""

    bucket_name: str
    bucket_folder: str = ""
    timestamp_column_name: str | None = None
    include_op_for_full_load: bool = False
    parquet_version: str = "1.0"
    compression: str = "none"
    put_arguments: Mapping[str, str] = field(default_factory=dict)
    cdc_max_batch_interval: int = 60
    """``CdcMaxBatchInterval`` (seconds) and ``CdcMinFileSize`` (KB) shape when DMS closes a CDC file;
    the stand-in writes one CDC file per table per task run (more only past its row limit), so both
    are checked and kept, but change no file."""
    cdc_min_file_size: int = 32000

    @classmethod
    def from_dms(cls, settings: Mapping[str, Any]) -> S3TargetSettings:
        """Validate and read a DMS ``S3Settings`` dict; DMS's own defaults apply to missing keys."""
        bucket = settings.get("BucketName")
        if not isinstance(bucket, str) or not bucket:
            raise UnsupportedTargetSettings("S3 settings need a BucketName (a non-empty string)")
        data_format = str(settings.get("DataFormat", "csv")).lower()  # csv is DMS's default
        if data_format != "parquet":
            raise UnsupportedTargetSettings(
                f"DataFormat is {data_format!r}: the DMS stand-in writes parquet only "
                "(set DataFormat: parquet)"
            )
        timestamp_column = settings.get("TimestampColumnName") or None
        if timestamp_column is not None and not isinstance(timestamp_column, str):
            raise UnsupportedTargetSettings(f"TimestampColumnName must be a string, got {timestamp_column!r}")
        return cls(
            bucket_name=bucket,
            bucket_folder=str(settings.get("BucketFolder") or "").strip("/"),
            timestamp_column_name=timestamp_column,
            include_op_for_full_load=_flag(settings, "IncludeOpForFullLoad"),
            parquet_version=_choice(settings, "ParquetVersion", "parquet-1-0", _PARQUET_VERSIONS),
            compression=_choice(settings, "CompressionType", "none", _COMPRESSIONS),
            put_arguments=_encryption(settings),
            cdc_max_batch_interval=_positive(settings, "CdcMaxBatchInterval", 60),
            cdc_min_file_size=_positive(settings, "CdcMinFileSize", 32000),
        )

    def object_key(self, schema: str, table: str, file_name: str) -> str:
        """``<BucketFolder>/<schema>/<table>/<file>``, the layout DMS uses for LOAD and CDC files."""
        return "/".join(part for part in (self.bucket_folder, schema, table, file_name) if part)


def _flag(settings: Mapping[str, Any], name: str) -> bool:
    """A boolean setting: JSON true/false, or the strings DMS's extra connection attributes use."""
    value = settings.get(name, False)
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise UnsupportedTargetSettings(f"{name} must be true or false, got {value!r}")


def _positive(settings: Mapping[str, Any], name: str, default: int) -> int:
    """A whole-number setting greater than zero (JSON number or its text)."""
    value = settings.get(name, default)
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value < 1:
        raise UnsupportedTargetSettings(f"{name} must be a whole number greater than 0, got {value!r}")
    return value


def _choice(settings: Mapping[str, Any], name: str, default: str, choices: Mapping[str, str]) -> str:
    value = str(settings.get(name, default)).lower()
    if value not in choices:
        raise UnsupportedTargetSettings(f"{name} is {value!r}; expected one of {sorted(choices)}")
    return choices[value]


def _encryption(settings: Mapping[str, Any]) -> dict[str, str]:
    """put_object arguments for DMS's ``EncryptionMode`` (SSE_S3 is DMS's default)."""
    mode = str(settings.get("EncryptionMode", "SSE_S3")).upper()
    if mode == "SSE_S3":
        return {"ServerSideEncryption": "AES256"}
    if mode == "SSE_KMS":
        key_id = settings.get("ServerSideEncryptionKmsKeyId")
        if not key_id:
            raise UnsupportedTargetSettings("EncryptionMode SSE_KMS needs ServerSideEncryptionKmsKeyId")
        return {"ServerSideEncryption": "aws:kms", "SSEKMSKeyId": str(key_id)}
    raise UnsupportedTargetSettings(f"EncryptionMode is {mode!r}; expected SSE_S3 or SSE_KMS")


class ObjectSink(Protocol):
    """Somewhere the stand-in writes whole objects by key: a bucket, or a directory standing for one."""

    def open(self, key: str) -> contextlib.AbstractContextManager[BinaryIO]:
        """A writable binary stream; the object appears only when the block exits without an error."""
        ...

    def uri(self, key: str) -> str:
        """Where an object written under ``key`` can be found, for statistics and logs."""
        ...


class LocalDirectorySink:
    """Writes objects as files below ``root``, which stands for the bucket."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(root)

    def _path(self, key: str) -> Path:
        path = (self.root / key).resolve()
        if not path.is_relative_to(self.root.resolve()):
            raise ValueError(f"object key {key!r} points outside the target directory {self.root}")
        return path

    @contextlib.contextmanager
    def open(self, key: str) -> Iterator[BinaryIO]:
        path = self._path(key)
        self.root.mkdir(parents=True, exist_ok=True)
        # Written beside the root and moved into place at the end, so that a failed write leaves
        # neither a partial file nor an empty table folder behind.
        handle, temporary = tempfile.mkstemp(dir=self.root, prefix=".partial-", suffix=".parquet")
        try:
            with os.fdopen(handle, "wb") as stream:
                yield stream
            path.parent.mkdir(parents=True, exist_ok=True)
            os.replace(temporary, path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def uri(self, key: str) -> str:
        return self._path(key).as_uri()


class S3ObjectSink:
    """Puts objects into an S3 bucket with boto3; the client is created on first use so moto sees it."""

    def __init__(
        self, bucket: str, *, client: Any = None, put_arguments: Mapping[str, str] | None = None
    ) -> None:
        self.bucket = bucket
        self._client = client
        self._put_arguments = dict(put_arguments or {})

    @classmethod
    def for_target(cls, settings: S3TargetSettings, *, client: Any = None) -> S3ObjectSink:
        """The sink a DMS task with these target settings writes to."""
        return cls(settings.bucket_name, client=client, put_arguments=settings.put_arguments)

    def _s3(self) -> Any:
        if self._client is None:
            import boto3  # imported late: the local directory sink must not need it

            self._client = boto3.client("s3")
        return self._client

    @contextlib.contextmanager
    def open(self, key: str) -> Iterator[BinaryIO]:
        # One file is at most max_rows_per_file rows, so buffering it in memory is bounded.
        buffer = io.BytesIO()
        yield buffer
        self._s3().put_object(Bucket=self.bucket, Key=key, Body=buffer.getvalue(), **self._put_arguments)

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"
