"""`icetide tables put FILE`: write validated control items to the deployed control table.

Items are checked with the same model the Lambdas use, all of them before any write, so a file with
one bad item changes nothing. A put replaces a table's *configuration* but never its run state: the
watermark, the last run's statistics and a running execution's lock are written by the handlers, and
resetting them by re-registering a table would silently reload it from scratch (or break a lock a
running execution holds). Each item is therefore written with one UpdateItem that sets the file's
attributes and removes configuration attributes the file no longer has, leaving run state alone.

AWS credentials and region come from boto3's default chain (environment, profile, instance role).
boto3 and the control item model are imported when the command runs, so `icetide --help` stays fast.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Mapping
from typing import Any

from icetide_cli.operator_target import CONTROL_TABLE_OUTPUT

EXIT_AWS_ERROR = 3
KEY = "targetTableName"


def handler_written() -> frozenset[str]:
    """Attributes only the runs write (run state and the lock): a put never sets or removes them."""
    from icetide.control.model import LOCK_ATTRIBUTES, RUN_STATE_ATTRIBUTES

    return frozenset(RUN_STATE_ATTRIBUTES) | frozenset(LOCK_ATTRIBUTES)


class ControlTableNotFound(Exception):
    """The stack or its ControlTableName output cannot be found."""


def register(commands: argparse._SubParsersAction) -> None:
    """Add `put` to the `tables` group's commands."""
    put = commands.add_parser(
        "put",
        help="write validated control items to the control table in AWS",
        description=(
            "Validate control items and write them to the control table with your AWS credentials "
            "(boto3's default chain). FILE has the formats `tables validate` reads (plain or DynamoDB "
            "typed JSON; one item or a list). If any item is invalid nothing is written. A table's "
            "run state (watermark, last run, lock) is kept; its configuration is replaced by the "
            "file's. Exit code 0: all written; 1: some item invalid, nothing written; 2: FILE "
            "unreadable or holding no item; 3: an AWS call failed (the lines above say which items "
            "were written)."
        ),
    )
    put.add_argument("file", metavar="FILE", help="JSON file with the item(s); - reads standard input")
    where = put.add_mutually_exclusive_group(required=True)
    where.add_argument("--table-name", metavar="NAME", help="the control table's name")
    where.add_argument(
        "--stack-name",
        metavar="NAME",
        help=f"a deployed icetide stack; its {CONTROL_TABLE_OUTPUT} output names the table",
    )
    put.set_defaults(handler=put_command)


def put_command(args: argparse.Namespace) -> int:
    """`icetide tables put FILE (--table-name NAME | --stack-name NAME)`."""
    from botocore.exceptions import BotoCoreError, ClientError

    from icetide.control.codec import from_typed_json, is_typed_json
    from icetide_cli.control_items import (
        EXIT_INVALID_ITEM,
        EXIT_OK,
        EXIT_UNREADABLE,
        UnreadableItems,
        read_items_file,
        validate_items,
    )

    try:
        items = read_items_file(args.file)
    except UnreadableItems as exc:
        print(f"icetide tables put: {exc}", file=sys.stderr)
        return EXIT_UNREADABLE
    lines, notes = validate_items(items)
    for note in notes:
        print(note, file=sys.stderr)
    invalid = [line for line in lines if line.startswith("INVALID ")]
    if invalid:  # read_items refuses a file without items, so there is something to report
        for line in lines:
            print(line)
        print(
            f"icetide tables put: nothing written: {len(invalid)} of {len(items)} item(s) invalid",
            file=sys.stderr,
        )
        return EXIT_INVALID_ITEM
    plain_items = [from_typed_json(raw) if is_typed_json(raw) else dict(raw) for raw in items]
    try:
        table_name = args.table_name or control_table_of_stack(args.stack_name)
        writer = ControlItemWriter(table_name)
        clashes = case_clashes([str(item[KEY]) for item in plain_items], writer.stored_names())
        if clashes:
            for line in clashes:
                print(line)
            print("icetide tables put: nothing written: a name clashes with a stored table", file=sys.stderr)
            return EXIT_INVALID_ITEM
        for item in plain_items:
            print(writer.put(item), flush=True)
    except (ControlTableNotFound, BotoCoreError, ClientError) as exc:
        print(f"icetide tables put: {_aws_reason(exc)}", file=sys.stderr)
        return EXIT_AWS_ERROR
    return EXIT_OK


def case_clashes(new_names: list[str], stored_names: set[str]) -> list[str]:
    """One INVALID line per new name that differs only in case from a table already stored.

    The file alone can be clean while the table holds `orders` and the file adds `Orders`; written,
    the next schedule would find the clash and start neither, stopping a table that was loading.
    """
    by_lower = {name.lower(): name for name in stored_names}
    return [
        f"INVALID {name}: targetTableName: differs only in case from the stored table "
        f"{by_lower[name.lower()]!r}; the Glue catalog lowercases table names: use that name"
        for name in new_names
        if name.lower() in by_lower and by_lower[name.lower()] != name
    ]


def control_table_of_stack(stack_name: str) -> str:
    """The stack's ControlTableName output."""
    import boto3
    from botocore.exceptions import ClientError

    try:
        stacks = boto3.client("cloudformation").describe_stacks(StackName=stack_name)["Stacks"]
    except ClientError as exc:
        raise ControlTableNotFound(f"stack {stack_name!r}: {_aws_reason(exc)}") from exc
    outputs = {output["OutputKey"]: output["OutputValue"] for output in stacks[0].get("Outputs", [])}
    if CONTROL_TABLE_OUTPUT not in outputs:
        raise ControlTableNotFound(
            f"stack {stack_name!r} has no {CONTROL_TABLE_OUTPUT} output: is it an icetide stack, "
            "and has its deployment finished?"
        )
    return outputs[CONTROL_TABLE_OUTPUT]


class ControlItemWriter:
    """Writes control items' configuration to one table, keeping each table's run state."""

    def __init__(self, table_name: str) -> None:
        import boto3

        self.table_name = table_name
        self._dynamodb = boto3.client("dynamodb")

    def stored_names(self) -> set[str]:
        """Every targetTableName the table holds (keys only)."""
        paginator = self._dynamodb.get_paginator("scan")
        pages = paginator.paginate(TableName=self.table_name, ProjectionExpression=KEY)
        return {item[KEY]["S"] for page in pages for item in page.get("Items", [])}

    def put(self, item: Mapping[str, Any]) -> str:
        """Write one validated plain item; its report line."""
        name = str(item[KEY])
        key = {KEY: {"S": name}}
        stored = self._dynamodb.get_item(TableName=self.table_name, Key=key, ConsistentRead=True).get("Item")
        handler_only = handler_written()
        config = {attr: value for attr, value in item.items() if attr != KEY and attr not in handler_only}
        kept = handler_only | set(config) | {KEY}
        dropped = sorted(attr for attr in stored or {} if attr not in kept)
        self._dynamodb.update_item(TableName=self.table_name, Key=key, **_update(config, dropped))
        line = f"PUT {name}: {'updated (run state kept)' if stored else 'created'}"
        if dropped:
            line += f"; removed {', '.join(dropped)}"
        ignored = sorted(attr for attr in item if attr in handler_only)
        if ignored:
            line += f"; ignored run-state attribute(s) {', '.join(ignored)} (written by the runs only)"
        return line


def _update(config: Mapping[str, Any], dropped: list[str]) -> dict[str, Any]:
    """UpdateItem arguments setting `config` and removing `dropped`; names go through placeholders
    because attribute names such as `lookback` may be DynamoDB reserved words."""
    from icetide.control.codec import encode_value

    names = {f"#s{i}": attr for i, attr in enumerate(config)}
    names.update({f"#r{i}": attr for i, attr in enumerate(dropped)})
    expression = "SET " + ", ".join(f"#s{i} = :s{i}" for i in range(len(config)))
    if dropped:
        expression += " REMOVE " + ", ".join(f"#r{i}" for i in range(len(dropped)))
    return {
        "UpdateExpression": expression,
        "ExpressionAttributeNames": names,
        "ExpressionAttributeValues": {
            f":s{i}": encode_value(value) for i, value in enumerate(config.values())
        },
    }


def _aws_reason(exc: Exception) -> str:
    from botocore.exceptions import ClientError

    if isinstance(exc, ClientError):
        error = exc.response.get("Error", {})
        operation = getattr(exc, "operation_name", "AWS call")
        return f"{operation} failed: {error.get('Code', 'error')}: {error.get('Message', exc)}"
    return str(exc)
