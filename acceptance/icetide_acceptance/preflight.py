"""What `make test-aws` needs before it spends anything, and the one line that says what is missing."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

STACK_VARIABLE = "ICETIDE_STACK"
SOURCE_VARIABLE = "ICETIDE_SOURCE_URL"
NEEDS = f"make test-aws needs {STACK_VARIABLE}, {SOURCE_VARIABLE} and AWS credentials"


@dataclass(frozen=True)
class Configuration:
    """The deployed stack's name and the source database (a SQLAlchemy URL) the scenario uses."""

    stack: str
    source_url: str


def configuration(
    environ: Mapping[str, str], caller_identity: Callable[[], Any]
) -> tuple[Configuration | None, str]:
    """The configuration, or None and the one line that says what is missing.

    ``caller_identity`` is ``sts:GetCallerIdentity`` (aws-facts: sts-identity): it needs no
    permission, so it fails only when there are no usable credentials.
    """
    problems = [
        f"{name} is not set"
        for name in (STACK_VARIABLE, SOURCE_VARIABLE)
        if not environ.get(name, "").strip()
    ]
    try:
        caller_identity()
    except Exception as error:  # any failure means: no usable credentials; its text says which
        problems.append(f"aws sts get-caller-identity failed: {' '.join(str(error).split())}")
    if problems:
        return None, f"{NEEDS} ({'; '.join(problems)})"
    return Configuration(environ[STACK_VARIABLE].strip(), environ[SOURCE_VARIABLE].strip()), ""
