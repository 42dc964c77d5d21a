"""The per-run DMS S3 target: where and how DMS writes a run's bronze files.

The folder is taken from the plan's ``bronzeUri``, the very location the Glue job reads, so the
writer and the reader cannot disagree about it (docs/contracts.md, "DMS S3 target").
"""

from __future__ import annotations

from typing import Any

from icetide.s3_uri import split_s3_uri


def s3_target_settings(
    bronze_uri: str, *, timestamp_column: str, service_access_role_arn: str
) -> dict[str, Any]:
    """The endpoint's ``S3Settings`` for a run whose bronze files belong under ``bronze_uri``."""
    bucket, folder = split_s3_uri(bronze_uri)
    return {
        "BucketName": bucket,
        "BucketFolder": folder.strip("/"),
        "DataFormat": "parquet",
        "ParquetVersion": "parquet-2-0",
        # Every row gets its transfer (full load) or commit (CDC) time: the merge orders changes by it.
        "TimestampColumnName": timestamp_column,
        # With Op on full-load rows too, the Glue job reads every file the same way.
        "IncludeOpForFullLoad": True,
        "AddColumnName": True,
        "EncryptionMode": "SSE_S3",
        "ServiceAccessRoleArn": service_access_role_arn,
    }
