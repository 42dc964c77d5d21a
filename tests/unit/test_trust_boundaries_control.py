"""Control items cannot alias another table: reserved names, reserved folders, nesting bronze folders,
and a filter column held to the source-name rules (`icetide tables validate`, one line each)."""

import json
import random
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from icetide.control.conflicts import find_conflicts
from icetide.control.model import RESERVED_NAME_PART, ControlItem
from icetide.errors import InvalidControlItem
from icetide.run.plan import RunTiming, build_run_plan
from icetide_cli.main import main
from icetide_glue.commit.run_ledger import RUN_LEDGER_SUFFIX
from icetide_glue.silver import TOMBSTONE_TABLE_SUFFIX

BASE = {"sourceSchema": "dbo", "sourceTable": "orders", "primaryKeys": "id"}
CONTINUOUS = {"captureMode": "cdc", "cdcTask": "continuous"}
INSTANCE = "arn:aws:dms:eu-west-1:123456789012:rep:CONTINUOUS"


def validate(tmp_path: Path, items: list[dict[str, Any]], capsys: pytest.CaptureFixture[str]) -> list[str]:
    path = tmp_path / "items.json"
    path.write_text(json.dumps(items))
    assert main(["tables", "validate", str(path)]) == 1
    return capsys.readouterr().out.splitlines()


def test_the_reserved_name_part_is_the_one_the_job_names_companion_tables_with() -> None:
    assert TOMBSTONE_TABLE_SUFFIX.startswith(RESERVED_NAME_PART)
    assert RUN_LEDGER_SUFFIX.startswith(RESERVED_NAME_PART)


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        (
            {"targetTableName": "orders__icetide_runs"},
            "INVALID orders__icetide_runs: targetTableName: 'orders__icetide_runs' contains '__icetide_', "
            "which icetide reserves for the tables it keeps beside each silver table (tombstones, run "
            "ledger): choose a name without it",
        ),
        (
            {"targetTableName": "Orders__ICETIDE_Tombstones"},
            "INVALID Orders__ICETIDE_Tombstones: targetTableName: 'Orders__ICETIDE_Tombstones' contains "
            "'__icetide_', which icetide reserves for the tables it keeps beside each silver table "
            "(tombstones, run ledger): choose a name without it",
        ),
        (
            {"targetTableName": "orders", "outputS3Prefix": "_continuous/x"},
            "INVALID orders: outputS3Prefix: '_continuous/x' starts with '_': the bronze prefix's folders "
            "that do (_continuous, _reconcile, _verify) are icetide's own, so this table's files would sit "
            "inside theirs; start the prefix with a letter or digit",
        ),
        (
            {"targetTableName": "orders", "ouputs3Prefix": "/_reconcile"},
            "INVALID orders: ouputs3Prefix: '/_reconcile' starts with '_': the bronze prefix's folders "
            "that do (_continuous, _reconcile, _verify) are icetide's own, so this table's files would sit "
            "inside theirs; start the prefix with a letter or digit",
        ),
        (
            {
                "targetTableName": "orders",
                "filtercolumn": "id' OR '1'='1",
                "filteroperator": "gte",
                "startvalue": "1",
            },
            "INVALID orders: filtercolumn: \"id' OR '1'='1\" contains a quote; give the name unquoted, as "
            "the source stores it",
        ),
        (
            {
                "targetTableName": "orders",
                "filtercolumn": "updated%",
                "filteroperator": "gte",
                "startvalue": "1",
            },
            "INVALID orders: filtercolumn: 'updated%' contains the % wildcard; DMS source filters only "
            "support tables with exact names",
        ),
    ],
)
def test_each_bad_item_gets_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], changes: dict[str, Any], line: str
) -> None:
    assert validate(tmp_path, [{**BASE, **changes}], capsys) == [line]


def test_two_items_whose_bronze_folders_nest_are_both_reported(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {**BASE, **CONTINUOUS, "targetTableName": "t", "replicationInstanceArn": INSTANCE},
        {
            **BASE,
            **CONTINUOUS,
            "targetTableName": "x",
            "outputS3Prefix": "t",
            "replicationInstanceArn": INSTANCE,
        },
        {**BASE, "targetTableName": "alone", "outputS3Prefix": "t"},
    ]

    assert validate(tmp_path, items, capsys) == [
        "INVALID t: outputS3Prefix: t's bronze folder '_continuous/t' meets x ('_continuous/t/x'): one "
        "folder lies inside the other, so a run would read the other table's files; give one of them another "
        "outputS3Prefix",
        "INVALID x: outputS3Prefix: x's bronze folder '_continuous/t/x' meets t ('_continuous/t'): one "
        "folder lies inside the other, so a run would read the other table's files; give one of them another "
        "outputS3Prefix",
        "OK alone",
    ]


def test_folders_that_share_only_the_start_of_a_name_do_not_meet() -> None:
    items = [ControlItem.parse({**BASE, "targetTableName": name}) for name in ("orders", "orders_eu")]
    items.append(ControlItem.parse({**BASE, "targetTableName": "lines", "outputS3Prefix": "orders_eu2"}))

    assert find_conflicts(items) == {}


# The pieces random items are made of: names and prefixes that can nest in every way.
_NAMES = ("t", "x", "t_x", "orders")
_PREFIXES = (None, "t", "x", "t/x", "x/t", "orders", "_continuous", "_continuous/t", "_reconcile", "a/b")
_SLOT = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)


def _random_item(rng: random.Random) -> dict[str, Any]:
    item = {**BASE, "targetTableName": rng.choice(_NAMES)}
    if (prefix := rng.choice(_PREFIXES)) is not None:
        item["outputS3Prefix"] = prefix
    if rng.random() < 0.5:
        item |= {**CONTINUOUS, "replicationInstanceArn": INSTANCE}
    return item


def _read_location(item: ControlItem) -> str:
    """Where a run of ``item`` reads (recursively) and its DMS task writes."""
    plan = build_run_plan(
        item,
        f"{item.target_table_name}-20261121T0700Z",
        raw_bucket="raw",
        bronze_prefix="bronze",
        manifest_prefix="manifests",
        glue_database="silver",
        timestamp_column="dms_timestamp",
        timing=RunTiming(scheduled_time=_SLOT, locked_at=_SLOT),
    )
    return plan.bronze_uri


def test_random_pairs_that_validate_together_never_read_each_others_files() -> None:
    """The oracle is the S3 listing itself: a run reads every key below its location, so two tables
    meet when one's location is a prefix of the other's. Every such pair must be refused."""
    rng = random.Random(4747)
    meetings_refused = 0
    for _ in range(3000):
        try:
            first, second = (ControlItem.parse(_random_item(rng)) for _ in range(2))
        except InvalidControlItem:
            continue
        if first.target_table_name.lower() == second.target_table_name.lower():
            continue
        here, there = _read_location(first), _read_location(second)
        if here.startswith(there) or there.startswith(here):
            assert find_conflicts([first, second]), (here, there)
            meetings_refused += 1
    # The generator must really produce meeting pairs, or the loop checks nothing.
    assert meetings_refused >= 10
