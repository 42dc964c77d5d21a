"""`python -m icetide_acceptance` (make test-aws): the scenario against a deployed stack, or ``--dry-run``.

Against AWS it needs ICETIDE_STACK (the deployed stack's name), ICETIDE_SOURCE_URL (the source
database the stack's source endpoint reads, as a SQLAlchemy URL: postgresql+psycopg://... or
mysql+pymysql://...) and AWS credentials; without them it prints one line saying what is missing and
exits 2, having spent nothing. ``--dry-run`` runs the same scenario and checks against moto and the
local stand-ins with a SQLite source (needs the local extra).

Exit codes: 0 every check passed or was not applicable; 1 a check failed or the scenario could not
run; 2 not configured.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from pathlib import Path

from icetide_acceptance.outcome import Outcome, Status
from icetide_acceptance.preflight import Configuration, configuration
from icetide_acceptance.scenario import ScenarioFailed, run_scenario
from icetide_acceptance.source import SlotNotFound

EXIT_PASSED = 0
EXIT_FAILED = 1
EXIT_NOT_CONFIGURED = 2
ROWS_VARIABLE = "ICETIDE_ACCEPTANCE_ROWS"
# Enough rows for DMS's full load to last while the scenario changes some of them.
DEFAULT_AWS_ROWS = 200_000


def report(outcomes: Sequence[Outcome]) -> int:
    """Print each outcome's line; the exit code."""
    for outcome in outcomes:
        print(outcome.line())
    return EXIT_FAILED if any(outcome.status is Status.FAILED for outcome in outcomes) else EXIT_PASSED


def dry_run(spark: bool) -> list[Outcome]:
    """The scenario against moto and the stand-ins, with a SQLite source in a temporary folder (and
    with ``spark`` the real Glue job on local Spark, so that silver can be checked)."""
    from icetide_acceptance.dry_run import dry_run_stack, sqlite_url

    with tempfile.TemporaryDirectory(prefix="icetide-acceptance-") as folder:
        url = sqlite_url(Path(folder))
        warehouse = Path(folder) / "warehouse" if spark else None
        with dry_run_stack(url, warehouse=warehouse) as stack:
            return run_scenario(stack, url, timeout_seconds=600)


def configured() -> Configuration | None:
    """The configuration; None after printing the one line that says what is missing."""
    import boto3

    found, problem = configuration(os.environ, lambda: boto3.client("sts").get_caller_identity())
    if found is None:
        print(problem)
    return found


def on_aws() -> int:
    found = configured()
    if found is None:
        return EXIT_NOT_CONFIGURED
    from icetide_acceptance.deployed import DeployedStack

    rows = int(os.environ.get(ROWS_VARIABLE) or DEFAULT_AWS_ROWS)
    return report(run_scenario(DeployedStack(found.stack), found.source_url, rows=rows))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m icetide_acceptance", description=__doc__.split("\n")[0])
    parser.add_argument("--dry-run", action="store_true", help="against moto and the local stand-ins")
    parser.add_argument(
        "--spark", action="store_true", help="with --dry-run: the real Glue job on local Spark"
    )
    parser.add_argument(
        "--preflight",
        action="store_true",
        help="only check the configuration (one line and exit 2 if missing)",
    )
    args = parser.parse_args(argv)
    if args.preflight:
        return EXIT_PASSED if configured() else EXIT_NOT_CONFIGURED
    try:
        return report(dry_run(args.spark)) if args.dry_run else on_aws()
    except (ScenarioFailed, SlotNotFound) as error:
        print(f"the scenario could not run: {error}")
        return EXIT_FAILED


if __name__ == "__main__":
    sys.exit(main())
