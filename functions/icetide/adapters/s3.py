"""Reading small objects (run manifests) from S3 by ``s3://bucket/key`` URI."""

from __future__ import annotations

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
