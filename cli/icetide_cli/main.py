"""The `icetide` console script.

Each command group lives in its own module listed in COMMAND_GROUPS and exposing
`register(subparsers)`; adding a group is one line here, never an edit of another group's module.
A command's handler is stored as the parser default `handler` and returns the exit code.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_GROUPS: list[str] = [
    "icetide_cli.tables",
    "icetide_cli.job",
    "icetide_cli.local",
]


def add_command_group(
    subparsers: argparse._SubParsersAction, name: str, *, help: str, description: str
) -> argparse._SubParsersAction:
    """Add one command group and return the sub-parsers its commands go into.

    The group parser is remembered as `group_parser`, so `icetide GROUP` alone prints the group's help.
    """
    group = subparsers.add_parser(name, help=help, description=description)
    group.set_defaults(group_parser=group)
    commands: argparse._SubParsersAction = group.add_subparsers(title="commands", metavar="COMMAND")
    return commands


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every group in COMMAND_GROUPS registered."""
    parser = argparse.ArgumentParser(
        prog="icetide",
        description="Delta and change-data loads from relational databases into Apache Iceberg.",
    )
    groups = parser.add_subparsers(title="command groups", dest="group", metavar="GROUP")
    for module_name in COMMAND_GROUPS:
        importlib.import_module(module_name).register(groups)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (argparse usage errors give 2, as usual)."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        # --help and usage errors: return argparse's code instead of exiting, so callers (and tests)
        # always get an int back.
        return exc.code if isinstance(exc.code, int) else 2
    handler = getattr(args, "handler", None)
    if handler is None:
        # A group without a command ("icetide tables"): show what it offers.
        (getattr(args, "group_parser", None) or parser).print_help(sys.stderr)
        return 2
    exit_code: int = handler(args)
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
