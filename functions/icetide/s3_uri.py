"""``s3://bucket/key`` URIs, as the run plan carries bronze and manifest locations."""

from __future__ import annotations


def split_s3_uri(uri: str) -> tuple[str, str]:
    """``(bucket, key)`` of an ``s3://bucket/key`` URI; ValueError naming the URI when it is not one."""
    scheme, _, rest = uri.partition("://")
    bucket, _, key = rest.partition("/")
    if scheme != "s3" or not bucket or not key.strip("/"):
        raise ValueError(f"{uri!r} is not an S3 URI with a bucket and a key (s3://bucket/key)")
    return bucket, key
