"""The order guard's two renderings of its one definition (icetide_glue.decision.newer): SQL, which
the Spark path's classification runs, and Arrow, which the driver path evaluates, held to one
small oracle over every combination of phases (full load, CDC, none), times and sequences, in
both directions (the arriving change over a stored one, and a stored one over the arriving)."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import IntegerType, StringType, StructField, StructType, TimestampType

from icetide_glue.columns import CDC_PHASE, CHANGE_PHASE, CHANGE_SEQ, CHANGE_TS, FULL_LOAD_PHASE
from icetide_glue.decision import Side, holds, newer

pytestmark = pytest.mark.spark

BASE = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
PHASES = (FULL_LOAD_PHASE, CDC_PHASE, None)
Stored = tuple[datetime | None, str | None, int | None]


def by_time(later: Stored, earlier: Stored) -> bool:
    if earlier[0] is None:
        return True
    assert later[0] is not None
    return (later[0], later[1] or "") > (earlier[0], earlier[1] or "")


def arrives_later_by_phase(arriving: Stored, stored: Stored) -> bool:
    """The rule in words: a full-load row arriving is later than anything stored; a CDC change
    arriving is later than a stored full-load row."""
    return arriving[2] == FULL_LOAD_PHASE or (arriving[2] == CDC_PHASE and stored[2] == FULL_LOAD_PHASE)


def grid() -> list[tuple[Stored, Stored]]:
    arriving = [
        (BASE + timedelta(seconds=s), q, p) for s, q, p in itertools.product((0, 1), (None, "1"), PHASES)
    ]
    stored = [*arriving, (None, None, None)]
    return list(itertools.product(arriving, stored))


def test_sql_and_arrow_order_changes_alike(spark: SparkSession) -> None:
    pairs = grid()
    side = StructType(
        [
            StructField(CHANGE_TS, TimestampType()),
            StructField(CHANGE_SEQ, StringType()),
            StructField(CHANGE_PHASE, IntegerType()),
        ]
    )
    frame = spark.createDataFrame(
        [(i, a, b) for i, (a, b) in enumerate(pairs)],
        StructType([StructField("i", IntegerType()), StructField("a", side), StructField("b", side)]),
    )
    sql_rows = frame.selectExpr(
        "i",
        f"{newer(Side('a'), Side('b'), True).sql()} AS arrives",
        f"{newer(Side('b'), Side('a'), False).sql()} AS stays",
    ).collect()
    sql = {row["i"]: (row["arrives"], row["stays"]) for row in sql_rows}

    def order(sides: list[Stored]) -> pa.Table:
        return pa.table(
            {
                CHANGE_TS: pa.array([s[0] for s in sides], pa.timestamp("us", tz="UTC")),
                CHANGE_SEQ: pa.array([s[1] for s in sides], pa.string()),
                CHANGE_PHASE: pa.array([s[2] for s in sides], pa.int32()),
            }
        )

    def arrow_newer(a: list[Stored], b: list[Stored], a_arrives: bool) -> list[bool]:
        tables = {"a": order(a), "b": order(b)}
        condition = newer(Side("a"), Side("b"), a_arrives)
        return list(holds(condition, lambda alias, name: tables[alias].column(name), len(a)))

    arrow_arrives = arrow_newer([a for a, _ in pairs], [b for _, b in pairs], True)
    # A stored side is never without a time when it is compared as the later one (a change's
    # time is never null): only the pairs whose stored side has one.
    timed = [i for i, (_, b) in enumerate(pairs) if b[0] is not None]
    arrow_stays = arrow_newer([pairs[i][1] for i in timed], [pairs[i][0] for i in timed], False)

    wrong = []
    for i, (a, b) in enumerate(pairs):
        expected = arrives_later_by_phase(a, b) or by_time(a, b)
        if (sql[i][0], bool(arrow_arrives[i])) != (expected, expected):
            wrong.append(f"{a} over stored {b}: sql {sql[i][0]}, arrow {arrow_arrives[i]}, oracle {expected}")
    for position, i in enumerate(timed):
        a, b = pairs[i]
        expected = not arrives_later_by_phase(a, b) and by_time(b, a)
        if (sql[i][1], bool(arrow_stays[position])) != (expected, expected):
            wrong.append(
                f"stored {b} over {a}: sql {sql[i][1]}, arrow {arrow_stays[position]}, oracle {expected}"
            )
    assert wrong == [], "\n".join(wrong)
    # The grid holds each kind of answer the rule gives across phases.
    assert any(arrives_later_by_phase(a, b) and not by_time(a, b) for a, b in pairs)
