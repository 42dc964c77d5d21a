"""The DMS stand-in writes source columns with the types DMS writes to a parquet S3 target.

From the AWS DMS user guide ("Source data types for PostgreSQL", "Target data types for S3 Parquet")
and a real DMS file (docs: field-notes "A real DMS file to look at"): integers keep their width,
NUMERIC(p,s) stays DECIMAL(p,s) (NUMERIC without them becomes NUMERIC(28,6), precision 39 and more a
string), BYTEA is binary, TIMESTAMP WITH TIME ZONE a UTC timestamp, uuid and json strings; booleans
are booleans with MapBooleanAsBoolean, else the strings true/false. SQLite, not a DMS source, keeps
its INTEGER in 8 bytes and has no time zones.
"""

from __future__ import annotations

import datetime as dt
import decimal
import uuid

import pyarrow as pa
import pytest
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

from icetide_local.standins.dms.replicator import TABLE_COMPLETED

DMS_COLUMNS = [
    pa.field("Op", pa.string(), nullable=False),
    pa.field("dms_timestamp", pa.string(), nullable=False),
]

EXPECTED_SCHEMAS = {
    "sqlite": pa.schema(
        [
            *DMS_COLUMNS,
            pa.field("id", pa.int64()),
            pa.field("small", pa.int16()),
            pa.field("amount", pa.decimal128(38, 4)),
            pa.field("payload", pa.binary()),
            pa.field("happened_at", pa.timestamp("us")),
            pa.field("active", pa.bool_()),
            pa.field("note", pa.string()),
        ]
    ),
    "postgresql": pa.schema(
        [
            *DMS_COLUMNS,
            pa.field("id", pa.int32()),
            pa.field("small", pa.int16()),
            pa.field("amount", pa.decimal128(38, 4)),
            pa.field("payload", pa.binary()),
            pa.field("happened_at", pa.timestamp("us", tz="UTC")),
            pa.field("active", pa.bool_()),
            pa.field("note", pa.string()),
        ]
    ),
}

# PostgreSQL keeps the offset's instant (08:00+02:00 is 06:00Z); SQLite has no time zones, so it is given UTC.
HAPPENED_AT = {
    "sqlite": dt.datetime(2026, 11, 21, 6, 0, 0, 250000),
    "postgresql": dt.datetime(2026, 11, 21, 8, 0, 0, 250000, tzinfo=dt.timezone(dt.timedelta(hours=2))),
}
WRITTEN_HAPPENED_AT = {
    "sqlite": dt.datetime(2026, 11, 21, 6, 0, 0, 250000),
    "postgresql": dt.datetime(2026, 11, 21, 6, 0, 0, 250000, tzinfo=dt.UTC),
}


@pytest.fixture
def typed(source_db) -> sa.Table:
    return source_db.create_table(
        "typed",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("small", sa.SmallInteger),
        sa.Column("amount", sa.Numeric(38, 4)),
        sa.Column("payload", sa.LargeBinary),
        sa.Column("happened_at", sa.DateTime(timezone=True)),
        sa.Column("active", sa.Boolean),
        sa.Column("note", sa.String(20)),
        rows=[
            {
                "id": 1,
                "small": -7,
                "amount": decimal.Decimal("1234.5678"),
                "payload": b"\x00\xffbytes",
                "happened_at": HAPPENED_AT[source_db.dialect],
                "active": True,
                "note": "first",
            },
            {
                "id": 2,
                "small": None,
                "amount": None,
                "payload": None,
                "happened_at": None,
                "active": False,
                "note": None,
            },
        ],
    )


def test_columns_get_the_arrow_types_dms_writes(source_db, typed, full_load, bronze):
    full_load(source_db, "typed")
    assert (
        bronze.read(source_db.schema, "typed").schema.remove_metadata() == EXPECTED_SCHEMAS[source_db.dialect]
    )


def test_values_survive_exactly(source_db, typed, full_load, bronze):
    full_load(source_db, "typed")
    rows = sorted(
        bronze.read(source_db.schema, "typed").drop_columns(["Op", "dms_timestamp"]).to_pylist(),
        key=lambda row: row["id"],
    )
    assert rows == [
        {
            "id": 1,
            "small": -7,
            "amount": decimal.Decimal("1234.5678"),
            "payload": b"\x00\xffbytes",
            "happened_at": WRITTEN_HAPPENED_AT[source_db.dialect],
            "active": True,
            "note": "first",
        },
        {
            "id": 2,
            "small": None,
            "amount": None,
            "payload": None,
            "happened_at": None,
            "active": False,
            "note": None,
        },
    ]


def test_without_map_boolean_as_boolean_booleans_are_the_strings_dms_writes(
    source_db, typed, full_load, bronze
):
    full_load(source_db, "typed", map_boolean_as_boolean=False)
    written = bronze.read(source_db.schema, "typed")
    assert written.schema.field("active").type == pa.string()
    assert dict(zip(written.column("id").to_pylist(), written.column("active").to_pylist(), strict=True)) == {
        1: "true",
        2: "false",
    }


@pytest.mark.postgres
def test_postgresql_specific_types_follow_dms(postgresql_source, full_load, bronze):
    postgresql_source.create_table(
        "special",
        sa.Column("id", sa.BigInteger, primary_key=True),
        sa.Column("unbounded", sa.Numeric()),
        sa.Column("huge", sa.Numeric(40, 2)),
        sa.Column("ratio", sa.REAL),
        sa.Column("ident", postgresql.UUID),
        sa.Column("doc", postgresql.JSONB),
        sa.Column("day", sa.Date),
        rows=[
            {
                "id": 1,
                "unbounded": decimal.Decimal("0.611111104488373"),
                "huge": decimal.Decimal("12345678901234567890123456789012345678.25"),
                "ratio": 0.5,
                "ident": uuid.UUID("12345678-1234-5678-1234-567812345678"),
                "doc": {"a": 1},
                "day": dt.date(2026, 11, 21),
            }
        ],
    )
    result = full_load(postgresql_source, "special")
    assert result.tables[0].state == TABLE_COMPLETED, result.tables[0].error_message
    written = bronze.read(postgresql_source.schema, "special").drop_columns(["Op", "dms_timestamp"])
    assert written.schema.remove_metadata() == pa.schema(
        [
            pa.field("id", pa.int64()),
            pa.field("unbounded", pa.decimal128(28, 6)),
            pa.field("huge", pa.string()),
            pa.field("ratio", pa.float32()),
            pa.field("ident", pa.string()),
            pa.field("doc", pa.string()),
            pa.field("day", pa.date32()),
        ]
    )
    assert written.to_pylist() == [
        {
            "id": 1,
            # DMS's own example: 0.611111104488373 in an unbounded NUMERIC arrives as 0.611111.
            "unbounded": decimal.Decimal("0.611111"),
            "huge": "12345678901234567890123456789012345678.25",
            "ratio": 0.5,
            "ident": "12345678-1234-5678-1234-567812345678",
            "doc": '{"a": 1}',
            "day": dt.date(2026, 11, 21),
        }
    ]
