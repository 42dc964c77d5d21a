"""`icetide tables validate FILE`: one line per item, exit 0/1/2."""

import json
from pathlib import Path
from typing import Any

import pytest

from icetide_cli.main import main


def write_json(tmp_path: Path, data: Any) -> str:
    path = tmp_path / "items.json"
    path.write_text(json.dumps(data))
    return str(path)


def test_the_blog_item_is_ok(blog_item_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["tables", "validate", str(blog_item_path)])

    captured = capsys.readouterr()
    assert (exit_code, captured.out) == (0, "OK mlb_data\n")
    # No keys: the user is told the table loads append-only.
    assert "mlb_data has no primaryKeys, so it loads append-only" in captured.err


def test_the_typed_json_blog_item_is_ok(
    blog_typed_item_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = main(["tables", "validate", str(blog_typed_item_path)])

    assert (exit_code, capsys.readouterr().out) == (0, "OK mlb_data\n")


def test_a_list_reports_every_item_and_fails_on_any_invalid(
    tmp_path: Path, blog_item: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        blog_item,
        {**blog_item, "targetTableName": "orders", "sourceTable": "orders%", "filteroperator": "gt"},
        {"sourceSchema": "dms_sample", "sourceTable": "players"},
        "not an item",
    ]

    exit_code = main(["tables", "validate", write_json(tmp_path, items)])

    assert exit_code == 1
    assert capsys.readouterr().out.splitlines() == [
        "OK mlb_data",
        "INVALID orders: sourceTable: 'orders%' contains the % wildcard; DMS source filters only support "
        "tables with exact names; filteroperator: 'gt' is not a DMS filter operator; use one of lte, ste, "
        "gte, eq, noteq, between, notbetween, null, notnull",
        "INVALID #3: targetTableName: required attribute is missing",
        "INVALID #4: item: must be a JSON object, not str",
    ]


def test_scan_output_with_typed_items_is_read(
    tmp_path: Path, blog_typed_item_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    typed_blog = json.loads(blog_typed_item_path.read_text())["Item"]
    broken = {**typed_blog, "targetTableName": {"S": "broken"}, "endvalue": {"NULL": True}}
    scan = {"Items": [typed_blog, broken], "Count": 2, "ScannedCount": 2}

    exit_code = main(["tables", "validate", write_json(tmp_path, scan)])

    assert exit_code == 1
    assert capsys.readouterr().out.splitlines() == [
        "OK mlb_data",
        "INVALID broken: endvalue: required when filteroperator is between",
    ]


def test_a_typed_item_with_a_bad_number_is_invalid_not_a_crash(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    item = {"Item": {"targetTableName": {"S": "x"}, "startvalue": {"N": "five"}}}

    exit_code = main(["tables", "validate", write_json(tmp_path, item)])

    assert exit_code == 1
    assert capsys.readouterr().out == "INVALID #1: item: {'N': 'five'} is not a valid DynamoDB N value\n"


def test_a_file_that_is_not_json_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "items.json"
    path.write_text("targetTableName: mlb_data\n")

    exit_code = main(["tables", "validate", str(path)])

    captured = capsys.readouterr()
    assert (exit_code, captured.out) == (2, "")
    assert captured.err.startswith(f"icetide tables validate: cannot read items from {path}: not valid JSON")


def test_a_missing_file_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["tables", "validate", str(tmp_path / "absent.json")])

    assert exit_code == 2
    assert "No such file or directory" in capsys.readouterr().err


def test_json_that_holds_no_item_exits_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["tables", "validate", write_json(tmp_path, 42)])

    assert exit_code == 2
    assert "holds a JSON int, not a control item or a list of items" in capsys.readouterr().err


def test_a_group_without_a_command_shows_its_help(capsys: pytest.CaptureFixture[str]) -> None:
    exit_code = main(["tables"])

    assert exit_code == 2
    assert "validate" in capsys.readouterr().err


def test_help_is_available_for_every_level(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "tables" in capsys.readouterr().out
    assert main(["tables", "validate", "--help"]) == 0
    assert "DynamoDB typed JSON" in capsys.readouterr().out


def test_the_blog_item_as_printed_is_ok_and_its_ignored_endvalue_is_noted(
    blog_lte_item_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = main(["tables", "validate", str(blog_lte_item_path)])

    captured = capsys.readouterr()
    assert (exit_code, captured.out) == (0, "OK mlb_data\n")
    assert captured.err.splitlines() == [
        "note: mlb_data: endvalue: ignored, filteroperator lte takes only startvalue",
        "note: mlb_data has no primaryKeys, so it loads append-only (every changed row is added, none "
        "merged); set primaryKeys to merge on them",
    ]


def test_a_key_typo_is_invalid_and_names_the_attribute_meant(
    tmp_path: Path, blog_item: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    exit_code = main(["tables", "validate", write_json(tmp_path, {**blog_item, "primarykeys": "mlb_id"})])

    assert exit_code == 1
    assert capsys.readouterr().out == (
        "INVALID mlb_data: primarykeys: unknown attribute; did you mean primaryKeys?\n"
    )


def test_items_for_one_silver_table_are_all_invalid_and_the_others_ok(
    tmp_path: Path, blog_item: dict[str, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        {**blog_item, "targetTableName": "orders"},
        blog_item,
        {**blog_item, "targetTableName": "Orders"},
        {**blog_item, "targetTableName": "players"},
        {**blog_item, "targetTableName": "players", "sourceTable": "players"},
    ]

    exit_code = main(["tables", "validate", write_json(tmp_path, items)])

    assert exit_code == 1
    assert capsys.readouterr().out.splitlines() == [
        "INVALID orders: targetTableName: 'orders' differs only in case from 'Orders'; the Glue catalog "
        "lowercases table names, so they would load the same silver table orders: rename or remove all "
        "but one",
        "OK mlb_data",
        "INVALID Orders: targetTableName: 'Orders' differs only in case from 'orders'; the Glue catalog "
        "lowercases table names, so they would load the same silver table orders: rename or remove all "
        "but one",
        "INVALID players: targetTableName: 'players' is the name of another item too; each table needs "
        "exactly one control item: remove all but one",
        "INVALID players: targetTableName: 'players' is the name of another item too; each table needs "
        "exactly one control item: remove all but one",
    ]


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        pytest.param("", "it is empty; it should hold a control item or a list of items", id="empty"),
        pytest.param(" \n", "it is empty; it should hold a control item or a list of items", id="blank"),
        pytest.param("[]", "holds no control item (an empty list)", id="empty-list"),
        pytest.param('{"Items": [], "Count": 0}', "holds no control item (an empty list)", id="empty-scan"),
    ],
)
def test_a_file_without_items_is_refused_and_says_so(
    tmp_path: Path, content: str, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "items.json"
    path.write_text(content)

    exit_code = main(["tables", "validate", str(path)])

    captured = capsys.readouterr()
    assert (exit_code, captured.out) == (2, "")
    assert captured.err == f"icetide tables validate: cannot read items from {path}: {reason}\n"
