"""The new watermark: the largest ``--watermark_column`` value among the rows a run read.

The manifest carries it as JSON (contracts, "Run manifest"): a number for numeric columns, a
``YYYY-MM-DD HH:MM:SS[.ffffff]`` UTC string for timestamps, a string otherwise, spelt as
``icetide_contracts.watermark_text`` defines. It must be exact: a watermark rounded up would skip
rows on the next run.
"""

from __future__ import annotations

import math
from datetime import date
from typing import Any

from pyspark.sql import Column
from pyspark.sql import functions as F
from pyspark.sql.types import (
    DataType,
    DateType,
    DecimalType,
    FractionalType,
    IntegralType,
    StringType,
    TimestampNTZType,
    TimestampType,
)

from icetide_contracts.watermark_text import WatermarkJson, format_epoch_micros, number_json
from icetide_glue.changes.normalize import utc_timestamp
from icetide_glue.errors import BronzeSchemaError


def check_watermark_type(name: str, data_type: DataType) -> None:
    """Refuse column types that have no meaningful maximum to resume from."""
    usable = (IntegralType, FractionalType, TimestampType, TimestampNTZType, DateType, StringType)
    if not isinstance(data_type, usable):
        raise BronzeSchemaError(
            f"watermark column {name!r} has type {data_type.simpleString()}: a watermark must be a "
            "number, a date, a timestamp or a string"
        )


def watermark_aggregate(value: Column, data_type: DataType) -> Column:
    """The aggregate to collect for the watermark; timestamps as microseconds since the epoch, so
    no time zone is applied on the way to Python (a timestamp without zone is read as UTC)."""
    if isinstance(data_type, TimestampType):
        return F.unix_micros(F.max(value))
    if isinstance(data_type, TimestampNTZType):
        return F.unix_micros(utc_timestamp(F.max(value).cast(StringType())))
    return F.max(value)


def watermark_json(value: Any, data_type: DataType) -> WatermarkJson:
    """The collected aggregate as the manifest's JSON value."""
    if value is None:
        return None
    if isinstance(data_type, TimestampType | TimestampNTZType):
        return format_epoch_micros(int(value))
    if isinstance(data_type, DecimalType):
        return number_json(value)
    if isinstance(data_type, IntegralType):
        return int(value)
    if isinstance(data_type, FractionalType):
        number = float(value)
        return number if math.isfinite(number) else str(number)
    if isinstance(value, date):
        return value.isoformat()
    return str(value)
