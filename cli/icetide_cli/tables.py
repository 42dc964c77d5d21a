"""`icetide tables ...`: commands about control items.

`validate` checks items before they go into the control table, with the same model the Lambdas use,
so a typo is found at the desk and not at 3 a.m. by the scheduler.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from icetide_cli import tables_put
from icetide_cli.main import add_command_group


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the `tables` group and its commands."""
    commands = add_command_group(
        subparsers,
        "tables",
        help="check and manage control items",
        description="Commands about control items.",
    )
    validate = commands.add_parser(
        "validate",
        help="validate control items from a JSON file",
        description=(
            "Validate control items. FILE holds one item or a list of items, as plain JSON or as "
            "DynamoDB typed JSON (aws dynamodb get-item or scan output). Prints OK or INVALID per item "
            "(items without a valid name are shown as #N, counting from 1); two items whose names "
            "differ at most in case are both invalid. Notes (values an item sets that no run uses, "
            "append-only tables) go to standard error. Exit code 0: all valid; 1: some item invalid; "
            "2: FILE unreadable, not JSON, or holding no item."
        ),
    )
    validate.add_argument("file", metavar="FILE", help="JSON file with the item(s); - reads standard input")
    validate.set_defaults(handler=validate_command)
    tables_put.register(commands)  # `put` writes to AWS; it lives in its own module


def validate_command(args: argparse.Namespace) -> int:
    """`icetide tables validate FILE`."""
    from icetide_cli.control_items import (  # the control item model loads only when a command runs
        EXIT_INVALID_ITEM,
        EXIT_OK,
        EXIT_UNREADABLE,
        UnreadableItems,
        read_items,
        validate_items,
    )

    try:
        text = sys.stdin.read() if args.file == "-" else Path(args.file).read_text(encoding="utf-8")
        items = read_items(text)
    except (OSError, UnicodeDecodeError, UnreadableItems) as exc:
        print(f"icetide tables validate: cannot read items from {args.file}: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    lines, notes = validate_items(items)
    for line in lines:
        print(line)
    for note in notes:
        print(note, file=sys.stderr)
    return EXIT_INVALID_ITEM if any(line.startswith("INVALID ") for line in lines) else EXIT_OK
