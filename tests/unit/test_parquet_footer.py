"""Row counts read from parquet footers alone (icetide.run.parquet_footer) against pyarrow's reading
of the same files: seeded tables of the column types DMS writes, several row groups, metadata."""

from __future__ import annotations

import io
import random
from decimal import Decimal

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from icetide.run.parquet_footer import TAIL, NotAParquetFile, footer_rows, metadata_length


def _random_file(rng: random.Random) -> bytes:
    rows = rng.choice([0, 1, rng.randint(2, 50), rng.randint(1000, 20000)])
    columns = {
        "Op": pa.array([rng.choice("IUD") for _ in range(rows)]),
        "dms_timestamp": pa.array(["2026-11-21 06:59:58.123456"] * rows),
        "id": pa.array(range(rows), type=pa.int64()),
        "amount": pa.array(
            [Decimal(rng.randint(0, 10**6)) / 100 for _ in range(rows)], type=pa.decimal128(12, 2)
        ),
        "flag": pa.array([rng.random() < 0.5 for _ in range(rows)]),
        "blob": pa.array([bytes([rng.randint(0, 255)]) * rng.randint(0, 3) for _ in range(rows)]),
        "score": pa.array([rng.random() if rng.random() < 0.9 else None for _ in range(rows)]),
    }
    table = pa.table(columns).replace_schema_metadata({"writer": "dms", "note": "x" * rng.randint(0, 300)})
    sink = io.BytesIO()
    pq.write_table(
        table,
        sink,
        row_group_size=rng.choice([100, 1000, 64 * 1024]),
        compression=rng.choice(["snappy", "none", "gzip"]),
        write_statistics=rng.random() < 0.7,
    )
    return sink.getvalue()


@pytest.mark.parametrize("seed", range(30))
def test_the_footer_gives_the_rows_pyarrow_reads(seed: int) -> None:
    data = _random_file(random.Random(seed))

    length = metadata_length(data[-TAIL:])

    assert footer_rows(data[-TAIL - length : -TAIL]) == pq.read_metadata(io.BytesIO(data)).num_rows


def test_what_is_not_a_parquet_footer_is_refused() -> None:
    data = _random_file(random.Random(1))
    length = metadata_length(data[-TAIL:])

    with pytest.raises(NotAParquetFile, match="PAR1"):
        metadata_length(b"x" * 10)
    with pytest.raises(NotAParquetFile, match="ends early"):
        footer_rows(data[-TAIL - length : -TAIL - length + 4])  # the version, then the schema cut off
