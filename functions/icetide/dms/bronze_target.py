"""The per-run DMS S3 target: where and how DMS writes a run's bronze files.

The folder is taken from the plan's ``bronzeUri``, the very location the Glue job reads, so the
writer and the reader cannot disagree about it (docs/contracts.md, "DMS S3 target").
"""

from __future__ import annotations

from typing import Any

from icetide.s3_uri import split_s3_uri


def s3_target_settings(
    bronze_uri: str,
    *,
    timestamp_column: str,
    service_access_role_arn: str,
    cdc_max_batch_interval: int | None = None,
    cdc_min_file_size: int | None = None,
) -> dict[str, Any]:
    """The endpoint's ``S3Settings`` for a run whose bronze files belong under ``bronze_uri``.

    A cdc run also sets how DMS batches change files: a file is written after
    ``cdc_max_batch_interval`` seconds or once ``cdc_min_file_size`` KB are buffered, whichever
    comes first (fewer, larger files cost the job less; smaller intervals mean fresher windows).
    """
    bucket, folder = split_s3_uri(bronze_uri)
    batching = {
        name: value
        for name, value in (
            ("CdcMaxBatchInterval", cdc_max_batch_interval),
            ("CdcMinFileSize", cdc_min_file_size),
        )
        if value is not None
    }
    return batching | {
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
