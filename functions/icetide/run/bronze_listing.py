"""The bronze files of a run's folder, as the Glue job will read them, counted when its task stops.

DMS's counters cannot tell a lost CDC file (they only bound the CDC rows from above: docs/glue-job.md,
"DMS's row count"), so the run records how many files its folder held once its task had stopped,
and the job refuses to merge another number (``--expected_files``). The job reads every ``.parquet``
file below the folder, at any depth, except those Spark hides (a file or folder whose name starts
with ``_`` or ``.``): the count follows the same rule, over the keys of an S3 listing.
"""

from __future__ import annotations

from collections.abc import Iterable

PARQUET_SUFFIX = ".parquet"


def hidden_by_spark(name: str) -> bool:
    """True for a file or folder name Spark and Hadoop skip when they list (markers, checksums)."""
    return name.startswith(("_", "."))


def is_bronze_file(relative_key: str) -> bool:
    """True when the Glue job reads the object at ``relative_key`` (below the run's folder)."""
    parts = relative_key.split("/")
    return parts[-1].endswith(PARQUET_SUFFIX) and not any(hidden_by_spark(part) for part in parts)


def bronze_file_count(relative_keys: Iterable[str]) -> int:
    """How many of the listed keys (relative to the run's folder) are bronze files the job reads."""
    return sum(is_bronze_file(key) for key in relative_keys)
