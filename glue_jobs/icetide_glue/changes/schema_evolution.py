"""How silver follows the source's schema: a plan computed from two schemas, checked as a whole.

New source columns are added; safe widenings (int→bigint, float→double, a larger decimal
precision with the same scale) are applied; a column the source dropped stays and gets nulls.
Anything else is an incompatible change: the whole plan is refused before a single ALTER runs,
so the table is untouched. Pure functions over Spark types, testable without a session.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from pyspark.sql.types import (
    ArrayType,
    ByteType,
    DataType,
    DecimalType,
    DoubleType,
    FloatType,
    IntegerType,
    LongType,
    MapType,
    NullType,
    ShortType,
    StructField,
    StructType,
)

from icetide_glue.errors import BronzeSchemaError, IncompatibleSchemaChange

# Iceberg's integer types are int and long; smaller source integers are stored as int.
_INTEGER_WIDTH: dict[type[DataType], int] = {ByteType: 1, ShortType: 2, IntegerType: 3, LongType: 4}
_FLOAT_WIDTH: dict[type[DataType], int] = {FloatType: 1, DoubleType: 2}


def storable_type(data_type: DataType) -> DataType:
    """The Spark type Iceberg stores for a source type: tinyint and smallint become int (Iceberg
    has no narrower integer), recursively inside structs, arrays and maps."""
    if isinstance(data_type, ByteType | ShortType):
        return IntegerType()
    if isinstance(data_type, StructType):
        return StructType(
            [StructField(f.name, storable_type(f.dataType), f.nullable, f.metadata) for f in data_type.fields]
        )
    if isinstance(data_type, ArrayType):
        return ArrayType(storable_type(data_type.elementType), data_type.containsNull)
    if isinstance(data_type, MapType):
        return MapType(
            storable_type(data_type.keyType), storable_type(data_type.valueType), data_type.valueContainsNull
        )
    return data_type


@dataclass(frozen=True)
class AddColumn:
    """A source column silver does not have yet."""

    name: str
    data_type: DataType

    def describe(self) -> str:
        return f"added column {self.name} {self.data_type.simpleString()}"


@dataclass(frozen=True)
class WidenColumn:
    """A silver column whose type the source has widened safely."""

    name: str
    from_type: DataType
    to_type: DataType

    def describe(self) -> str:
        return f"widened column {self.name} {self.from_type.simpleString()} to {self.to_type.simpleString()}"


@dataclass(frozen=True)
class SchemaPlan:
    """The ALTERs one run needs, in the order they are applied."""

    additions: tuple[AddColumn, ...] = field(default=())
    widenings: tuple[WidenColumn, ...] = field(default=())

    def describe(self) -> list[str]:
        """The manifest's ``schemaChanges`` lines."""
        return [w.describe() for w in self.widenings] + [a.describe() for a in self.additions]


def _widening(silver_type: DataType, source_type: DataType) -> DataType | bool | None:
    """None: the source fits the silver type as it is. A type: widen silver to it. False: incompatible."""
    if silver_type == source_type:
        return None
    for widths in (_INTEGER_WIDTH, _FLOAT_WIDTH):
        if type(silver_type) in widths and type(source_type) in widths:
            return source_type if widths[type(source_type)] > widths[type(silver_type)] else None
    if isinstance(silver_type, DecimalType) and isinstance(source_type, DecimalType):
        if silver_type.scale != source_type.scale:
            return False
        return source_type if source_type.precision > silver_type.precision else None
    return False


def plan_schema_changes(silver: StructType, source: StructType) -> SchemaPlan:
    """Compare the source columns of a batch with silver's columns (names match case-insensitively).

    Raises IncompatibleSchemaChange naming every offending column with both types; nothing is
    planned unless every column is compatible.
    """
    silver_fields = {f.name.lower(): f for f in silver.fields}
    additions: list[AddColumn] = []
    widenings: list[WidenColumn] = []
    incompatible: list[str] = []
    for source_field in source.fields:
        source_type = storable_type(source_field.dataType)
        if isinstance(source_type, NullType):
            raise BronzeSchemaError(
                f"column {source_field.name} has no type in the bronze files (a parquet NULL column): "
                "silver cannot store it"
            )
        silver_field = silver_fields.get(source_field.name.lower())
        if silver_field is None:
            additions.append(AddColumn(source_field.name, source_type))
            continue
        widened = _widening(silver_field.dataType, source_type)
        if widened is False:
            incompatible.append(
                f"column {silver_field.name}: silver has {silver_field.dataType.simpleString()}, "
                f"the source now sends {source_field.dataType.simpleString()}"
            )
        elif isinstance(widened, DataType):
            widenings.append(WidenColumn(silver_field.name, silver_field.dataType, widened))
    if incompatible:
        raise IncompatibleSchemaChange(
            "incompatible source schema change, silver left untouched: "
            + "; ".join(incompatible)
            + " (only int→bigint, float→double and a larger decimal precision with the same scale "
            "are applied automatically)"
        )
    return SchemaPlan(additions=tuple(additions), widenings=tuple(widenings))
