"""A stand-in for ``awsglue.utils.getResolvedOptions``, which exists only on AWS Glue.

Like Glue's resolver: each name asked for is a required ``--name`` option, the program name
(``argv[0]``) is skipped, and arguments nobody asked for (Glue's own ``--JOB_ID``, ...) are ignored.
"""

from __future__ import annotations

import argparse
import sys
import types
from collections.abc import Iterator
from contextlib import contextmanager
from unittest import mock


def get_resolved_options(argv: list[str], names: list[str]) -> dict[str, str]:
    """``{name: value}`` for every name in ``names``; a missing one fails, as on Glue."""
    parser = argparse.ArgumentParser(prog=argv[0] if argv else "glue-job", add_help=False)
    for name in names:
        parser.add_argument(f"--{name}", required=True)
    parsed, _ = parser.parse_known_args(argv[1:])
    return dict(vars(parsed))


@contextmanager
def awsglue_installed() -> Iterator[None]:
    """Make ``from awsglue.utils import getResolvedOptions`` find :func:`get_resolved_options`."""
    awsglue = types.ModuleType("awsglue")
    utils = types.ModuleType("awsglue.utils")
    utils.getResolvedOptions = get_resolved_options  # type: ignore[attr-defined]
    awsglue.utils = utils  # type: ignore[attr-defined]
    with mock.patch.dict(sys.modules, {"awsglue": awsglue, "awsglue.utils": utils}):
        yield
