"""Control items as users write them in a file, read and checked before anything uses them.

`tables validate`, `tables put` and `local run` read the same formats (plain or DynamoDB typed JSON,
one item or a list, get-item or scan output) and judge items with the model the Lambdas use, each
item alone and then against the others (`find_conflicts`), as StartWorkflow does.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from decimal import Decimal
from pathlib import Path
from typing import Any

from icetide.control.codec import from_typed_json, is_typed_json
from icetide.control.conflicts import find_conflicts
from icetide.control.model import ControlItem, LoadMode
from icetide.errors import InvalidControlItem

# The exit codes of the commands that read items (`tables validate`, `tables put`).
EXIT_OK = 0
EXIT_INVALID_ITEM = 1
EXIT_UNREADABLE = 2


class UnreadableItems(Exception):
    """The file cannot be read, is not JSON, or holds neither an item nor a list of items."""


def read_items(text: str) -> list[Any]:
    """The raw items held by `text`: one item, a list, get-item `{"Item": ..}` or scan `{"Items": [..]}`.

    Entries are returned undecoded (typed or plain), for `validate_items` to judge one by one. A file
    with no item at all is UnreadableItems: whoever passed it meant to pass items.
    """
    if not text.strip():
        raise UnreadableItems("it is empty; it should hold a control item or a list of items")
    try:
        # Decimal, as DynamoDB returns numbers, so "0.1" means the same from a file as from the table.
        data = json.loads(text, parse_float=Decimal)
    except json.JSONDecodeError as exc:
        raise UnreadableItems(f"not valid JSON: {exc}") from None
    if isinstance(data, Mapping) and isinstance(data.get("Items"), list) and "targetTableName" not in data:
        data = data["Items"]
    if isinstance(data, Mapping):
        data = [data]
    if not isinstance(data, list):
        raise UnreadableItems(f"holds a JSON {type(data).__name__}, not a control item or a list of items")
    if not data:
        raise UnreadableItems("holds no control item (an empty list)")
    return data


def read_items_file(path: str) -> list[Any]:
    """The raw items of a tables file (`-`: standard input), in any format `tables validate` reads.

    Raises UnreadableItems naming the file and the reason (`tables put` and `local run` share it).
    """
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
        return read_items(text)
    except (OSError, UnicodeDecodeError, UnreadableItems) as exc:
        raise UnreadableItems(f"cannot read control items from {path}: {exc}") from exc


def _label(raw: object, position: int) -> str:
    name = raw.get("targetTableName") if isinstance(raw, Mapping) else None
    return name if isinstance(name, str) and name.strip() else f"#{position}"


def _parse(raw: object, position: int) -> ControlItem | str:
    """The valid item, or its `INVALID name: errors` line."""
    try:
        plain = from_typed_json(raw) if is_typed_json(raw) else raw  # type: ignore[arg-type]
    except ValueError as exc:
        return f"INVALID #{position}: item: {exc}"
    try:
        return ControlItem.parse(plain)  # type: ignore[arg-type]
    except InvalidControlItem as exc:
        return _invalid_line(_label(plain, position), exc.errors)


def _invalid_line(label: str, errors: list[str]) -> str:
    return f"INVALID {label}: {'; '.join(errors)}"


def _notes(item: ControlItem) -> list[str]:
    """What the user should know about a valid item: values it ignores, an append-only load."""
    name = item.target_table_name
    notes = [f"note: {name}: {note}" for note in item.notes]
    if item.load_mode is LoadMode.APPEND and "load_mode" not in item.model_fields_set:
        notes.append(
            f"note: {name} has no primaryKeys, so it loads append-only "
            "(every changed row is added, none merged); set primaryKeys to merge on them"
        )
    return notes


def validate_items(items: list[Any]) -> tuple[list[str], list[str]]:
    """One `OK name` / `INVALID name: errors` line per item, and the notes worth a look.

    Items valid alone are then checked against each other (`find_conflicts`), as StartWorkflow does.
    """
    parsed = [_parse(raw, position) for position, raw in enumerate(items, start=1)]
    valid = [(index, result) for index, result in enumerate(parsed) if isinstance(result, ControlItem)]
    conflicts = find_conflicts([item for _, item in valid])
    conflict_at = {valid[position][0]: line for position, line in conflicts.items()}
    lines: list[str] = []
    notes: list[str] = []
    for index, result in enumerate(parsed):
        if isinstance(result, str):
            lines.append(result)
        elif index in conflict_at:
            lines.append(_invalid_line(result.target_table_name, [conflict_at[index]]))
        else:
            lines.append(f"OK {result.target_table_name}")
            notes.extend(_notes(result))
    return lines, notes
