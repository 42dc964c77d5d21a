"""Where a table's bronze files live below the bronze prefix, and which two tables' folders meet.

A run reads its bronze folder at any depth (the job lists it recursively) and a continuous run
selects every file below its table's folder, so a table whose folder lies inside another's would
have the other's files merged into it. Folders are compared as S3 keys are: case-sensitive, segment
by segment (`orders` does not contain `orders_eu`).
"""

from __future__ import annotations

from icetide.control.model import ControlItem

# Where continuous tables' long-lived tasks write, below the bronze prefix: one fixed prefix, so one
# S3 lifecycle rule expires their consumed files and one EventBridge pattern sees their new files.
CONTINUOUS_FOLDER = "_continuous"


def table_bronze_folder(item: ControlItem) -> str:
    """The folder below the bronze prefix (no "/" at either end) holding every bronze file of the
    table: `<outputS3Prefix>/<table>`, with each run's folder below it, or for a continuous table
    `_continuous/<outputS3Prefix>/<table>`, where its long-lived task writes."""
    parts = (CONTINUOUS_FOLDER if item.is_continuous else None, item.output_s3_prefix, item.target_table_name)
    return "/".join(filter(None, parts))


def folders_meet(folder: str, other: str) -> bool:
    """True when one folder is the other or lies inside it."""
    return folder == other or folder.startswith(f"{other}/") or other.startswith(f"{folder}/")
