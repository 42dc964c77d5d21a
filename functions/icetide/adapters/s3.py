"""Small objects (run manifests, bronze file selections) in S3 by ``s3://bucket/key`` URI, the ends of
bronze files (their parquet footers), and listings."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from botocore.exceptions import ClientError

from icetide.adapters.clients import client, error_code
from icetide.s3_uri import split_s3_uri


class ObjectNotFound(LookupError):
    """No object (or no bucket) at the URI; the caller decides what a missing object means."""


def read_text(uri: str) -> str:
    """The object at ``uri`` decoded as UTF-8; ObjectNotFound when it does not exist."""
    bucket, key = split_s3_uri(uri)
    try:
        response = client("s3").get_object(Bucket=bucket, Key=key)
    except ClientError as error:
        if error_code(error) in {"NoSuchKey", "NoSuchBucket", "404"}:
            raise ObjectNotFound(f"no object at {uri}") from error
        raise
    return response["Body"].read().decode("utf-8")


def read_end(uri: str, length: int) -> bytes:
    """The last ``length`` bytes of the object at ``uri`` (all of it when shorter): a ranged read, so a
    file's footer costs what the footer weighs, not what the file does."""
    bucket, key = split_s3_uri(uri)
    response = client("s3").get_object(Bucket=bucket, Key=key, Range=f"bytes=-{length}")
    return bytes(response["Body"].read())


def write_text(uri: str, text: str) -> None:
    """Write ``text`` (UTF-8, JSON) as the object at ``uri``, replacing any earlier version."""
    bucket, key = split_s3_uri(uri)
    client("s3").put_object(Bucket=bucket, Key=key, Body=text.encode("utf-8"), ContentType="application/json")


def list_objects(folder_uri: str, *, start_after: str | None = None) -> Iterator[tuple[str, int, datetime]]:
    """(key relative to ``folder_uri``, size, when written) of every object below the folder, in S3's
    key order; ``start_after`` (relative) skips the keys up to and including it."""
    bucket, prefix = split_s3_uri(folder_uri)
    request: dict[str, Any] = {"Bucket": bucket, "Prefix": prefix}
    if start_after is not None:
        request["StartAfter"] = prefix + start_after
    for page in client("s3").get_paginator("list_objects_v2").paginate(**request):
        for listed in page.get("Contents", []):
            yield listed["Key"][len(prefix) :], int(listed["Size"]), listed["LastModified"]
