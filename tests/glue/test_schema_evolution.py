"""Schema evolution plans, from two schemas (no Spark session needed)."""

from __future__ import annotations

import pytest
from pyspark.sql.types import (
    ArrayType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    NullType,
    ShortType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
    TimestampType,
)

from icetide_glue.changes.schema_evolution import AddColumn, SchemaPlan, WidenColumn, plan_schema_changes
from icetide_glue.errors import BronzeSchemaError, IncompatibleSchemaChange


def schema(*fields: tuple[str, object]) -> StructType:
    return StructType([StructField(name, data_type) for name, data_type in fields])  # type: ignore[arg-type]


SILVER = schema(
    ("id", IntegerType()),
    ("qty", IntegerType()),
    ("price", FloatType()),
    ("amount", DecimalType(10, 2)),
    ("name", StringType()),
    ("tags", ArrayType(IntegerType())),
)


def test_same_columns_need_nothing() -> None:
    assert plan_schema_changes(SILVER, SILVER) == SchemaPlan()


def test_new_columns_are_added_and_safe_widenings_applied() -> None:
    source = schema(
        ("ID", IntegerType()),
        ("qty", LongType()),
        ("price", DoubleType()),
        ("amount", DecimalType(12, 2)),
        ("note", StringType()),
        ("level", ShortType()),
    )
    plan = plan_schema_changes(SILVER, source)
    assert plan == SchemaPlan(
        additions=(AddColumn("note", StringType()), AddColumn("level", IntegerType())),
        widenings=(
            WidenColumn("qty", IntegerType(), LongType()),
            WidenColumn("price", FloatType(), DoubleType()),
            WidenColumn("amount", DecimalType(10, 2), DecimalType(12, 2)),
        ),
    )
    assert plan.describe() == [
        "widened column qty int to bigint",
        "widened column price float to double",
        "widened column amount decimal(10,2) to decimal(12,2)",
        "added column note string",
        "added column level int",
    ]


def test_narrower_source_types_fit_without_change() -> None:
    # smallint is stored as int; a smaller decimal or a float fits the wider silver column.
    source = schema(
        ("qty", ShortType()),
        ("amount", DecimalType(8, 2)),
        ("tags", ArrayType(ShortType())),
    )
    silver = schema(("qty", LongType()), ("amount", DecimalType(10, 2)), ("tags", ArrayType(IntegerType())))
    assert plan_schema_changes(silver, source) == SchemaPlan()


def test_columns_dropped_at_the_source_stay() -> None:
    assert plan_schema_changes(SILVER, schema(("id", IntegerType()))) == SchemaPlan()


def test_incompatible_changes_name_every_column_and_both_types() -> None:
    source = schema(
        ("name", IntegerType()),
        ("amount", DecimalType(12, 3)),
        ("note", StringType()),
    )
    with pytest.raises(IncompatibleSchemaChange) as raised:
        plan_schema_changes(SILVER, source)
    message = str(raised.value)
    assert "column name: silver has string, the source now sends int" in message
    assert "column amount: silver has decimal(10,2), the source now sends decimal(12,3)" in message
    assert "silver left untouched" in message


@pytest.mark.parametrize(
    ("silver_type", "source_type"),
    [
        (LongType(), DoubleType()),
        (TimestampType(), TimestampNTZType()),
        (DoubleType(), DecimalType(10, 2)),
        (ArrayType(IntegerType()), ArrayType(StringType())),
    ],
)
def test_other_type_changes_are_incompatible(silver_type: object, source_type: object) -> None:
    with pytest.raises(IncompatibleSchemaChange, match="column c: silver has"):
        plan_schema_changes(schema(("c", silver_type)), schema(("c", source_type)))


def test_a_column_without_type_is_refused() -> None:
    with pytest.raises(BronzeSchemaError, match="column empty has no type in the bronze files"):
        plan_schema_changes(SILVER, schema(("empty", NullType())))
