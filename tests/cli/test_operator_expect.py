"""What a control-item write expects (operator_control.Expect): the check a workspace makes and the
DynamoDB condition a stack gets, for the last run id a reload request names beside the other parts."""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from icetide_cli.operator_control import Expect

RUN = "orders-20261124T0900Z"
ITEM = {"targetTableName": "orders", "lastRunId": RUN, "watermark": Decimal(7)}
LOCKED = {**ITEM, "lockHolder": "orders-20261124T1000Z"}
EXISTS = "attribute_exists(targetTableName)"
UNLOCKED = "(attribute_not_exists(lockHolder) OR lockHolder = :noHolder)"


@pytest.mark.parametrize(
    ("expect", "item", "holds"),
    [
        (Expect(last_run_id=(RUN,)), ITEM, True),
        (Expect(last_run_id=("orders-20261124T1000Z",)), ITEM, False),
        (Expect(last_run_id=()), ITEM, False),
        (Expect(last_run_id=()), {"targetTableName": "orders"}, True),
        (Expect(unlocked=True, watermark=(Decimal(7),), last_run_id=(RUN,)), ITEM, True),
        (Expect(unlocked=True, last_run_id=(RUN,)), LOCKED, False),
        # A watermark of another type is another value, as DynamoDB's = has it.
        (Expect(watermark=("7",)), ITEM, False),
    ],
)
def test_holds(expect: Expect, item: dict[str, Any], holds: bool) -> None:
    assert expect.holds(item) is holds


@pytest.mark.parametrize(
    ("expect", "condition", "values"),
    [
        (Expect(last_run_id=(RUN,)), f"{EXISTS} AND lastRunId IN (:lastRunId0)", {":lastRunId0": RUN}),
        (Expect(last_run_id=()), f"{EXISTS} AND attribute_not_exists(lastRunId)", {}),
        (
            Expect(unlocked=True, watermark=(Decimal(7),), last_run_id=(RUN,)),
            f"{EXISTS} AND {UNLOCKED} AND watermark IN (:watermark0) AND lastRunId IN (:lastRunId0)",
            {":noHolder": "", ":watermark0": Decimal(7), ":lastRunId0": RUN},
        ),
    ],
)
def test_condition(expect: Expect, condition: str, values: dict[str, Any]) -> None:
    assert expect.condition() == (condition, values)
