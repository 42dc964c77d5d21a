"""What every operator verb shares: exit codes, named refusals, and text or JSON output.

A verb's body gets its target and returns an exit code; :func:`run_verb` turns every foreseen problem
into ONE line on standard error (``icetide VERB: ...``) and its exit code, so a script can tell "bad
arguments" (2) from "refused or failed" (1), and a person never sees a traceback for a typo.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Mapping, Sequence
from decimal import Decimal
from typing import Any

import botocore.exceptions

from icetide_cli.operator_target import Target, TargetError, target_from_args
from icetide_local.cycle_report import format_rows

EXIT_OK = 0
EXIT_FAILED = 1  # the operation was refused (a lock, a change meanwhile) or failed
EXIT_USAGE = 2  # bad arguments: an unknown table, a value of the wrong kind, no such target


class OperatorError(Exception):
    """A verb cannot do what was asked; the message says why, ``exit_code`` how it ends."""

    exit_code = EXIT_FAILED


class UsageProblem(OperatorError):
    """The request itself is wrong: an unknown table, a value of the wrong kind, options that clash."""

    exit_code = EXIT_USAGE


class Refused(OperatorError):
    """The table's state forbids it now: a lock is held, or the item changed since it was read."""


class UnknownTable(UsageProblem):
    """The control table has no item of that name."""


def run_verb(verb: str, args: argparse.Namespace, body: Callable[[Target], int], **target: bool) -> int:
    """Run ``body`` on the target the options name; a foreseen problem ends as one stderr line."""
    try:
        return body(target_from_args(args, **target))
    except TargetError as problem:
        return _fail(verb, str(problem), EXIT_USAGE)
    except OperatorError as problem:
        return _fail(verb, str(problem), problem.exit_code)
    except botocore.exceptions.ClientError as error:
        failure = error.response.get("Error", {})
        return _fail(verb, f"AWS refused: {failure.get('Code')}: {failure.get('Message')}", EXIT_FAILED)
    except botocore.exceptions.BotoCoreError as error:
        return _fail(verb, f"cannot call AWS: {error}", EXIT_FAILED)


def _fail(verb: str, message: str, exit_code: int) -> int:
    print(f"icetide {verb}: {' '.join(message.split())}", file=sys.stderr)
    return exit_code


def json_ready(value: Any) -> Any:
    """``value`` with DynamoDB's Decimals as plain JSON numbers (whole ones as ints)."""
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    if isinstance(value, Mapping):
        return {str(key): json_ready(inner) for key, inner in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_ready(inner) for inner in value]
    return value


def print_json(value: Any) -> None:
    print(json.dumps(json_ready(value), indent=2, sort_keys=True))


def print_rows(header: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """A table of left-aligned columns; a missing value shows as ``-``."""
    cells = [tuple(header), *(tuple(cell(value) for value in row) for row in rows)]
    for line in format_rows(cells):
        print(line.removeprefix("  "))


def cell(value: Any) -> str:
    return "-" if value is None or value == "" else str(json_ready(value))


def duration(seconds: float | None) -> str:
    """``45s``, ``12m 05s``, ``3h 07m``, ``2d 04h``: a lag or an age at a glance (``-``: unknown)."""
    if seconds is None:
        return "-"
    whole = int(seconds)
    days, rest = divmod(whole, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}d {hours:02d}h"
    if hours:
        return f"{hours}h {minutes:02d}m"
    if minutes:
        return f"{minutes}m {secs:02d}s"
    return f"{secs}s"
