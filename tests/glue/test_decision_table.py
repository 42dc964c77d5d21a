"""The decision table's two renderings (icetide_glue.decision): the SQL CASE the Spark path runs and
the Arrow evaluation the driver path runs, held to one small oracle over seeded random rows: an
arriving change, the silver row and the tombstone of its key (each present or not), their phases,
times and sequences, and whether the change carries silver's values."""

from __future__ import annotations

import random
from datetime import UTC, datetime, timedelta
from typing import Any

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession
from pyspark.sql.types import (
    BooleanType,
    IntegerType,
    StringType,
    StructField,
    StructType,
    TimestampType,
)

from icetide_glue.columns import (
    CDC_PHASE,
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    FULL_LOAD_PHASE,
    IN_SILVER,
    IN_TOMBSTONES,
    OP,
)
from icetide_glue.decision import Facts, SameValues, action_case_sql, actions, holds, tombstone_rule

pytestmark = pytest.mark.spark

BASE = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
Order = tuple[datetime | None, str | None, int | None]


def later(a: Order, b: Order, a_arrives: bool) -> bool:
    """The order rule in words: an arriving full-load row, or an arriving CDC change over a stored
    full-load row, is later; otherwise (time, sequence), a missing sequence lowest, a stored side
    without a time always earlier."""
    arriving, stored = (a, b) if a_arrives else (b, a)
    by_phase = arriving[2] == FULL_LOAD_PHASE or (arriving[2] == CDC_PHASE and stored[2] == FULL_LOAD_PHASE)
    if b[0] is None:
        by_time = True
    else:
        assert a[0] is not None
        by_time = (a[0], a[1] or "") > (b[0], b[1] or "")
    return (by_phase or by_time) if a_arrives else (not by_phase and by_time)


def oracle(row: dict[str, Any]) -> tuple[str, bool]:
    change, silver, tombstone = row["s"], row["t"], row["m"]
    delete = change["op"] == "D"
    order = (change["ts"], change["seq"], change["phase"])
    passes = True
    if tombstone is not None:
        kept = (tombstone["ts"], tombstone["seq"], tombstone["phase"])
        passes = (delete and not later(kept, order, False)) or (not delete and later(order, kept, True))
    silver_order = (None, None, None) if silver is None else (silver["ts"], silver["seq"], silver["phase"])
    newer = later(order, silver_order, True)
    same = silver is not None and not delete and change["v"] == silver["v"]
    if not passes:
        action = "unchanged"
    elif silver is None:
        action = "unchanged" if delete else "insert"
    elif not newer:
        action = "unchanged"
    elif delete:
        action = "delete"
    else:
        action = "unchanged" if same else "update"
    return action, passes and newer and (delete or same)


def random_side(rng: random.Random) -> dict[str, Any]:
    return {
        "ts": BASE + timedelta(seconds=rng.randint(0, 2)),
        "seq": rng.choice([None, "1", "2"]),
        "phase": rng.choice([FULL_LOAD_PHASE, CDC_PHASE, None]),
        "v": rng.randint(0, 1),
    }


def random_rows(rng: random.Random, count: int) -> list[dict[str, Any]]:
    rows = []
    for _ in range(count):
        change = {**random_side(rng), "op": rng.choice(["I", "U", "D"])}
        change["phase"] = rng.choice([FULL_LOAD_PHASE, CDC_PHASE])  # an arriving change has one
        silver = random_side(rng) if rng.random() < 0.7 else None
        if silver is not None and rng.random() < 0.1:
            silver["ts"] = None  # written by something else
        tombstone = random_side(rng) if rng.random() < 0.4 else None
        rows.append({"s": change, "t": silver, "m": tombstone})
    return rows


SIDE = [
    StructField(CHANGE_TS, TimestampType()),
    StructField(CHANGE_SEQ, StringType()),
    StructField(CHANGE_PHASE, IntegerType()),
    StructField("v", IntegerType()),
]


def spark_rows(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    def side(values: dict[str, Any] | None, marker: str | None) -> tuple[Any, ...] | None:
        if values is None:
            return None
        head = (values.get("op"),) if marker is None else (True,)
        return (*head, values["ts"], values["seq"], values["phase"], values["v"])

    return [
        (i, side(row["s"], None), side(row["t"], IN_SILVER), side(row["m"], IN_TOMBSTONES))
        for i, row in enumerate(rows)
    ]


def arrow_side(rows: list[dict[str, Any]], alias: str, marker: str | None) -> dict[str, pa.Array]:
    sides = [row[alias] for row in rows]
    columns = {
        CHANGE_TS: pa.array([s and s["ts"] for s in sides], pa.timestamp("us", tz="UTC")),
        CHANGE_SEQ: pa.array([s and s["seq"] for s in sides], pa.string()),
        CHANGE_PHASE: pa.array([s and s["phase"] for s in sides], pa.int32()),
        "v": pa.array([s and s["v"] for s in sides], pa.int32()),
    }
    if marker is None:
        columns[OP] = pa.array([s["op"] for s in sides], pa.string())
    else:
        columns[marker] = pa.array([True if s is not None else None for s in sides], pa.bool_())
    return columns


def test_sql_and_arrow_decide_alike_and_as_the_oracle(spark: SparkSession) -> None:
    rows = random_rows(random.Random(48), 400)
    facts = Facts(tombstones=True, same=SameValues(("v",)))
    schema = StructType(
        [
            StructField("i", IntegerType()),
            StructField("s", StructType([StructField(OP, StringType()), *SIDE])),
            StructField("t", StructType([StructField(IN_SILVER, BooleanType()), *SIDE])),
            StructField("m", StructType([StructField(IN_TOMBSTONES, BooleanType()), *SIDE])),
        ]
    )
    frame = spark.createDataFrame(spark_rows(rows), schema)
    case = " ".join(action_case_sql(facts))
    decided = frame.selectExpr("i", f"{case} AS action", f"{tombstone_rule(facts).sql()} AS keep").collect()
    sql = {row["i"]: (row["action"], bool(row["keep"])) for row in decided}

    sides = {
        "s": arrow_side(rows, "s", None),
        "t": arrow_side(rows, "t", IN_SILVER),
        "m": arrow_side(rows, "m", IN_TOMBSTONES),
    }

    def resolve(alias: str, name: str) -> pa.Array:
        return sides[alias][name]

    arrow_actions = actions(facts, resolve, len(rows))
    arrow_keep = holds(tombstone_rule(facts), resolve, len(rows))

    wrong = []
    for i, row in enumerate(rows):
        expected = oracle(row)
        got = {"sql": sql[i], "arrow": (str(arrow_actions[i]), bool(arrow_keep[i]))}
        if got["sql"] != expected or got["arrow"] != expected:
            wrong.append(f"{row}: {got}, oracle {expected}")
    assert wrong == [], "\n".join(wrong[:20])
    # The rows reach every action and both tombstone answers.
    outcomes = [oracle(row) for row in rows]
    assert {action for action, _ in outcomes} == {"insert", "update", "delete", "unchanged"}
    assert {keep for _, keep in outcomes} == {True, False}
