"""The `icetide` console script.

Each command group lives in its own module listed in COMMAND_GROUPS and exposing
`register(subparsers)`; adding a group is one line here, never an edit of another group's module. A
module may also add top-level commands (the operator verbs: `icetide status --stack NAME`). A
command's handler is stored as the parser default `handler` and returns the exit code.

`icetide --help` must answer at once, and a plain `pip install icetide` (no extras) must give a
working CLI for the AWS verbs. So registering a command imports argparse-level code only; a handler
imports what it needs when it runs (boto3 for the AWS verbs; Spark, moto and the DMS stand-in for the
local ones). A handler whose optional dependency is not installed ends with one line naming the extra
to install (`MISSING_EXTRA`), not a traceback.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

COMMAND_GROUPS: list[str] = [
    # The operator verbs, each top-level and working on --workspace DIR or --stack NAME
    # (icetide_cli.operator_target).
    "icetide_cli.operator_verbs",
    "icetide_cli.reload",
    "icetide_cli.verify",
    # Command groups.
    "icetide_cli.tables",
    "icetide_cli.job",
    "icetide_cli.local",
]

DISTRIBUTION = "icetide"
# Modules only an extra installs (pyproject.toml's optional dependencies), and that extra. pyspark
# alone is enough for `icetide job`; everything local (`icetide local`, `--workspace` runs) needs the
# local extra, which includes it.
SPARK_EXTRA = "spark"
LOCAL_EXTRA = "local"
OPTIONAL_MODULES: dict[str, str] = {
    "pyspark": SPARK_EXTRA,
    "moto": LOCAL_EXTRA,
    "sqlalchemy": LOCAL_EXTRA,
    "pyarrow": LOCAL_EXTRA,
    "pyiceberg": LOCAL_EXTRA,
    "psycopg": LOCAL_EXTRA,
}
# Groups whose every command runs on the local stack; an operator verb given --workspace DIR does too.
# Then any missing optional module means the local extra.
LOCAL_GROUPS = frozenset({"local"})
EXIT_MISSING_EXTRA = 1


def installed_version() -> str:
    """The installed package's version (importlib.metadata), or why there is none."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown (icetide is not installed as a package here)"


class _VersionAction(argparse.Action):
    """`--version`: reads the package metadata only when asked (argparse's own action reads it at
    parser build time, on every command)."""

    def __init__(self, option_strings: Sequence[str], dest: str = argparse.SUPPRESS, **_: object) -> None:
        super().__init__(
            option_strings, dest, nargs=0, default=argparse.SUPPRESS, help="print the version and exit"
        )

    def __call__(self, parser: argparse.ArgumentParser, *_: object) -> None:
        print(f"icetide {installed_version()}")
        parser.exit(0)


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
        description=(
            "Delta and change-data loads from relational databases into Apache Iceberg. The operator "
            "commands (status, runs, run, reset, unlock, ...) work on a local workspace (--workspace DIR) "
            "or a deployed stack (--stack NAME); `icetide COMMAND --help` says more."
        ),
    )
    parser.add_argument("--version", action=_VersionAction)
    groups = parser.add_subparsers(title="commands", dest="group", metavar="COMMAND")
    for module_name in COMMAND_GROUPS:
        importlib.import_module(module_name).register(groups)
    return parser


def missing_extra(missing: ModuleNotFoundError, args: argparse.Namespace) -> str | None:
    """The extra that installs the module ``missing`` names for this command, or None when no extra does."""
    top = (missing.name or "").partition(".")[0]
    extra = OPTIONAL_MODULES.get(top)
    if extra is not None and (args.group in LOCAL_GROUPS or getattr(args, "workspace", None)):
        return LOCAL_EXTRA
    return extra


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
    try:
        exit_code: int = handler(args)
    except ModuleNotFoundError as missing:
        extra = missing_extra(missing, args)
        if extra is None:
            raise
        print(
            f"icetide {args.group}: this command needs {missing.name}, which is not installed "
            f"(a plain install has the AWS commands only): install the {extra} extra: "
            f"pip install 'icetide[{extra}]'",
            file=sys.stderr,
        )
        return EXIT_MISSING_EXTRA
    return exit_code


if __name__ == "__main__":
    sys.exit(main())
