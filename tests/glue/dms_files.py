"""Writing bronze fixtures the way DMS does: parquet, DMS file names, Op and timestamp as strings."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

TIMESTAMP_COLUMN = "dms_timestamp"
SEQUENCE_COLUMN = "AR_H_CHANGE_SEQ"
# A CDC file of a table (id, name, v) with the change sequence a transformation rule adds.
CHANGES_WITH_SEQUENCE = pa.schema(
    [
        ("Op", pa.string()),
        (TIMESTAMP_COLUMN, pa.string()),
        (SEQUENCE_COLUMN, pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
        ("v", pa.int32()),
    ]
)


def write_dms_file(folder: Path, file_name: str, schema: pa.Schema, rows: Sequence[Sequence[Any]]) -> Path:
    """Write ``rows`` (tuples in schema order) to ``folder/schema/table/file_name`` like DMS would."""
    target = folder / "dbo" / "source_table"
    target.mkdir(parents=True, exist_ok=True)
    table = pa.table(
        {field.name: pa.array([row[i] for row in rows], field.type) for i, field in enumerate(schema)}
    )
    path = target / file_name
    pq.write_table(table, path)
    return path


def utc(text: str) -> datetime:
    """``2026-11-21 06:00:00[.ffffff]`` as a UTC-aware datetime (for expected rows)."""
    return datetime.fromisoformat(text).replace(tzinfo=UTC)
