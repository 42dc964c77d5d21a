"""The driver's values hash (icetide_glue.driver.values_hash) against Spark's: the number
``values_hash_sql`` gives in Spark, for seeded random rows of every type the hash covers."""

from __future__ import annotations

import contextlib
import random
import struct
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
import xxhash
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql import types as T

from code_generation import generating_code
from icetide_glue.driver.arrow_types import arrow_type
from icetide_glue.driver.values_hash import values_hash, xxhash64
from icetide_glue.iceberg_tables import jvm
from icetide_glue.merge.sql import values_hash_sql
from seeds import EachSeed

pytestmark = pytest.mark.spark

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# Characters Jackson escapes, and characters it writes as they are (0x7f, '/', several UTF-8 lengths).
_CHARACTERS = [chr(c) for c in range(0x20)] + [
    '"',
    "\\",
    "/",
    "\x7f",
    "é",
    "ß",
    "中",
    "😀",
    "a",
    "Z",
    "0",
    " ",
]
_DOUBLES = [
    0.0,
    -0.0,
    1.0,
    -1.5,
    0.1,
    1 / 3,
    1e-3,
    9.999e-4,
    0.001000001,
    1e7,
    9999999.0,
    10000000.5,
    1e23,
    2e23,
    5e-324,
    2.2250738585072014e-308,
    1.7976931348623157e308,
    float("nan"),
    float("inf"),
    float("-inf"),
    100.0,
    123456789012345680.0,
    4.35,
    2.0**-44,
]


def _text(rng: random.Random) -> str:
    return "".join(rng.choice(_CHARACTERS) for _ in range(rng.choice([0, 1, 2, 5, 17, 40])))


def _decimal(rng: random.Random, precision: int, scale: int) -> Decimal:
    digits = rng.choice([1, 2, scale + 1, precision])
    unscaled = rng.randrange(10 ** min(digits, precision)) * rng.choice([1, -1])
    return Decimal(unscaled).scaleb(-scale)


def _double(rng: random.Random) -> float:
    roll = rng.random()
    if roll < 0.3:
        return rng.choice(_DOUBLES)
    if roll < 0.6:  # any bit pattern: subnormals, huge and tiny exponents
        return float(struct.unpack("<d", rng.getrandbits(64).to_bytes(8, "little"))[0])
    if roll < 0.8:  # around the bounds of Java's plain notation
        return rng.choice([1e-3, 1e7]) * rng.uniform(0.5, 2.0)
    return round(rng.uniform(-1e6, 1e6), rng.randrange(0, 8))


def _float(rng: random.Random) -> float:
    """A double rounded to a float (infinite past a float's range), as a float column holds it."""
    with np.errstate(over="ignore"):
        return float(np.float32(_double(rng)))


def _micros(rng: random.Random) -> int:
    low, high = -62_135_596_800_000_000, 253_402_300_799_999_999  # 0001-01-01 to 9999-12-31
    if rng.random() < 0.5:
        return rng.randrange(-2_208_988_800_000_000, 4_102_444_800_000_000)  # 1900 to 2100
    return rng.randrange(low, high)


# (Spark type, a random value of it): every type the hash covers.
_KINDS: list[tuple[T.DataType, Any]] = [
    (T.ByteType(), lambda r: r.choice([-128, 127, 0, r.randrange(-128, 128)])),
    (T.ShortType(), lambda r: r.choice([-32768, 32767, 0, r.randrange(-32768, 32768)])),
    (T.IntegerType(), lambda r: r.choice([-(2**31), 2**31 - 1, 0, r.randrange(-(2**31), 2**31)])),
    (T.LongType(), lambda r: r.choice([-(2**63), 2**63 - 1, 0, -1, r.randrange(-(2**63), 2**63)])),
    (T.BooleanType(), lambda r: r.random() < 0.5),
    (T.StringType(), _text),
    (T.DecimalType(12, 2), lambda r: _decimal(r, 12, 2)),
    (T.DecimalType(38, 0), lambda r: _decimal(r, 38, 0)),
    (T.DecimalType(20, 10), lambda r: _decimal(r, 20, 10)),
    (T.DecimalType(5, 5), lambda r: _decimal(r, 5, 5)),
    (T.DecimalType(38, 18), lambda r: _decimal(r, 38, 18)),
    (T.DateType(), lambda r: date(1, 1, 1) + timedelta(days=r.randrange(3_652_059))),
    (T.TimestampType(), lambda r: _EPOCH + timedelta(microseconds=_micros(r))),
    (T.TimestampNTZType(), lambda r: (_EPOCH + timedelta(microseconds=_micros(r))).replace(tzinfo=None)),
    (T.BinaryType(), lambda r: bytes(r.getrandbits(8) for _ in range(r.choice([0, 1, 3, 16])))),
    (T.DoubleType(), _double),
    (T.FloatType(), lambda r: _float(r)),
]
_NAMES = ["qty", 'we"ird\\ name\t', "café", "a", "日付"]


def _random_columns(rng: random.Random) -> list[tuple[str, T.DataType, Any]]:
    chosen = rng.sample(range(len(_KINDS)), rng.randrange(1, len(_KINDS) + 1))
    columns = []
    for position, index in enumerate(chosen):
        name = _NAMES[position] if position < len(_NAMES) and rng.random() < 0.5 else f"c{position}"
        data_type, generate = _KINDS[index]
        columns.append((name, data_type, generate))
    return columns


# Spark computes xxhash64 in generated code (as on Glue) and interpreted (the rest of the suite's
# Spark: tests/spark_conf): the driver's hash must be both's.
@pytest.mark.parametrize("generated", [True, False], ids=["generated-code", "interpreted"])
def test_the_driver_s_hash_is_spark_s_for_random_rows_of_every_type(
    spark: SparkSession, each_seed: EachSeed, generated: bool
) -> None:
    with generating_code(spark) if generated else contextlib.nullcontext():
        _the_driver_s_hash_is_spark_s(spark, each_seed)


def _the_driver_s_hash_is_spark_s(spark: SparkSession, each_seed: EachSeed) -> None:
    def check(seed: int) -> None:
        rng = random.Random(seed)
        columns = _random_columns(rng)
        null_share = rng.choice([0.0, 0.2, 0.9])
        rows = [
            tuple(None if rng.random() < null_share else generate(rng) for _, _, generate in columns)
            for _ in range(rng.choice([1, 40, 300]))
        ]
        schema = T.StructType([T.StructField(name, data_type) for name, data_type, _ in columns])
        arrow = pa.table(
            {
                name: pa.array([row[i] for row in rows], arrow_type(data_type))
                for i, (name, data_type, _) in enumerate(columns)
            }
        )
        typed = [(name, data_type.simpleString()) for name, data_type, _ in columns]
        numbered = T.StructType([T.StructField("_row", T.IntegerType()), *schema.fields])
        frame = spark.createDataFrame([(i, *row) for i, row in enumerate(rows)], numbered)
        # Put in order here: an orderBy would add Spark jobs (a sort's sampling and shuffle).
        hashed = frame.select("_row", F.expr(values_hash_sql(typed)).alias("h")).collect()
        expected = [r["h"] for r in sorted(hashed, key=lambda r: r["_row"])]
        got = values_hash(arrow, typed, jvm(spark)).to_pylist()
        wrong = [(rows[i], got[i], expected[i]) for i in range(len(rows)) if got[i] != expected[i]]
        assert not wrong, f"{len(wrong)} of {len(rows)} rows hash otherwise than Spark, {typed}: {wrong[:3]}"

    each_seed(range(24), check)


def test_xxhash64_is_xxh64_with_spark_s_seed_for_every_tail_length(each_seed: EachSeed) -> None:
    def check(seed: int) -> None:
        rng = random.Random(seed)
        values = [rng.randbytes(rng.randrange(0, 200)) for _ in range(500)]
        expected = np.array([xxhash.xxh64_intdigest(v, seed=42) for v in values], dtype=np.uint64)
        got = xxhash64(pa.array(values, pa.binary())).view(np.uint64)
        assert (got == expected).all()

    each_seed(range(5), check)
