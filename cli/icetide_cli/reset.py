"""`icetide reset TABLE --to VALUE`: move a delta table's watermark, so its next run reads from VALUE.

The watermark is the next run's lower bound only for a delta table filtered with ``gte`` or
``between`` (``icetide.run.plan.run_lower_bound``); any other table is refused with the reason. VALUE
is read as the watermark's kind (``icetide.control.watermark``): a number for a number watermark, a
timestamp for a timestamp one (kept in the contract's UTC text form), and stored as the commits
store it (a number as a DynamoDB number, unless the item keeps it as text).

The write is one conditional update: the table must hold no lock and still have the watermark this
command read, so a run that locks the table, or commits, between the read and the write makes the
reset fail with what changed, instead of the two overwriting each other. The commit that follows a
backfill never moves the watermark back (``icetide.run.commit.next_watermark``), so re-reading older
rows costs a merge, not a wrong watermark.
"""

from __future__ import annotations

import argparse
from decimal import Decimal
from typing import Any

from icetide.control import watermark as wm
from icetide.control.model import CaptureMode, ControlItem
from icetide.control.operators import WATERMARK_BOUNDED
from icetide.control.values import scalar_text
from icetide.errors import InvalidControlItem
from icetide_cli.operator_control import Expect, control_items_of
from icetide_cli.operator_output import (
    EXIT_OK,
    OperatorError,
    Refused,
    UsageProblem,
    json_ready,
    print_json,
    run_verb,
)
from icetide_cli.operator_target import Target
from icetide_contracts.watermark_text import format_timestamp


def reset(args: argparse.Namespace) -> int:
    """Handler of `icetide reset TABLE --to VALUE`."""
    return run_verb("reset", args, lambda target: _reset(target, args))


def _reset(target: Target, args: argparse.Namespace) -> int:
    control = control_items_of(target)
    raw = control.item(args.table)
    item = valid_item(raw)
    refuse_unbounded(item)
    if raw.get("lockHolder"):
        raise locked(args.table, raw)
    new = reset_value(args.to, item)
    seen = raw.get("watermark")
    write = control.update(
        args.table,
        Expect(unlocked=True, watermark=(seen,) if seen is not None else ()),
        set_values={"watermark": new},
        remove=(),
    )
    if not write.written:
        raise why_not_written(args.table, seen, write.item)
    bound = wm.lower_bound(new, item.lookback, item.start_value)
    result = {
        "targetTableName": args.table,
        "previousWatermark": seen,
        "watermark": new,
        "nextLowerBound": bound,
    }
    if args.json:
        print_json(result)
    else:
        print(
            f"{args.table}: watermark {_text(seen)} -> {_text(new)}; its next run reads "
            f"{item.filter_column} from {_text(bound)} ({item.filter_operator})"
        )
    return EXIT_OK


def valid_item(raw: dict[str, Any]) -> ControlItem:
    """The stored item, validated: its kind of watermark and filter decide what a reset means."""
    try:
        return ControlItem.parse(raw)
    except InvalidControlItem as invalid:
        name = raw.get("targetTableName")
        raise OperatorError(
            f"the control item of {name} is invalid, fix it first (`icetide tables put`): "
            + "; ".join(invalid.errors)
        ) from None


def refuse_unbounded(item: ControlItem) -> None:
    """UsageProblem for a table whose next run does not start from its watermark."""
    name = item.target_table_name
    if item.capture_mode is CaptureMode.CDC:
        raise UsageProblem(
            f"{name} is a cdc table: its runs read the changes after its committed checkpoint, not "
            "from a watermark; `icetide reload` loads it again"
        )
    if item.filter_operator not in WATERMARK_BOUNDED:
        operator = item.filter_operator or "no filteroperator"
        raise UsageProblem(
            f"{name} is filtered with {operator}: its runs do not start from the watermark (only gte "
            "and between do), so a reset would change nothing"
        )


def locked(name: str, item: dict[str, Any]) -> Refused:
    return Refused(
        f"{name} is locked by run {item.get('lockHolder')} since {item.get('lockTime')}: reset refused. "
        "Wait for that run to end; if it is gone, `icetide unlock` removes its lock"
    )


def reset_value(text: str, item: ControlItem) -> Decimal | str:
    """``--to`` as the item's watermark will store it; UsageProblem naming the kind it must have.

    The kind to match is the stored watermark's, else (no run committed yet) the ``startvalue``'s;
    a text watermark takes any text.
    """
    value = text.strip()
    if not value:
        raise UsageProblem("--to: give the new watermark")
    given = wm.kind(value)
    reference = item.watermark if item.watermark is not None else item.start_value
    if reference is not None:
        expected = wm.kind(reference)
        if expected is wm.WatermarkKind.TEXT:
            return value
        if given is not expected:
            attribute = "watermark" if item.watermark is not None else "startvalue"
            raise UsageProblem(
                f"--to {value!r} is not a {expected}: {item.target_table_name}'s {attribute} is "
                f"the {expected} {json_ready(reference)!r}"
            )
    if given is wm.WatermarkKind.NUMBER:
        number = Decimal(value)
        return scalar_text(number) if isinstance(item.watermark, str) else number
    if given is wm.WatermarkKind.TIMESTAMP:
        try:
            moment = wm.parse_timestamp(value)
        except ValueError as invalid:
            raise UsageProblem(f"--to: {invalid}") from None
        if "T" not in value.upper() and ":" not in value:
            return value  # a date stays a date, as the lower bound keeps it
        return format_timestamp(moment, fraction="." in value)
    return value


def why_not_written(name: str, seen: Any, now: dict[str, Any] | None) -> OperatorError:
    """The refusal for a conditional write that did not happen, from the item as it is now."""
    if now is None:
        return UsageProblem(f"{name} has no control item any more")
    if now.get("lockHolder"):
        return locked(name, now)
    return Refused(
        f"{name}'s watermark changed from {_text(seen)} to {_text(now.get('watermark'))} since it was "
        "read (a run committed): nothing was written; check `icetide status` and reset again"
    )


def _text(value: Any) -> str:
    return "(none)" if value is None else str(json_ready(value))
