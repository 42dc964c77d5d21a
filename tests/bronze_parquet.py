"""Bronze files as DMS writes them, for tests that put them into a task's folder by hand: parquet
with an ``Op`` column and the timestamp column, ``rows`` rows (their values do not matter to the
tests that count them)."""

from __future__ import annotations

import io

import pyarrow as pa
import pyarrow.parquet as pq


def dms_parquet(rows: int, *, op: str = "I") -> bytes:
    """A parquet file of ``rows`` change rows of ``dbo.orders`` (order_id 1..rows)."""
    table = pa.table(
        {
            "Op": [op] * rows,
            "dms_timestamp": ["2026-11-21 06:59:58.123000"] * rows,
            "order_id": list(range(1, rows + 1)),
            "amount": [f"{number}.00" for number in range(rows)],
        }
    )
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()
