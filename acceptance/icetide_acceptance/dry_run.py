"""The dry run: the scenario against moto and the local stand-ins, with a SQLite source.

The real state machine runs in moto with the real handlers (icetide_local's TableRunHarness), the DMS
stand-in moves the SQLite table's rows and changes into bronze files, and the checks read everything
through boto3 as they do on AWS. What differs, named:

- no Glue job writes silver (no Spark here), so the ordering check is not applicable;
- moto has no IAM policy simulator: each function gets a role of its own whose inline policy allows
  ``allowed`` actions, judged by :class:`AllowListSimulator`;
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from icetide.clock import utc_now
from icetide_acceptance.iam_simulation import RUN_NEEDS, AllowListSimulator, PolicySimulator
from icetide_acceptance.scenario import upcoming_run
from icetide_local.local_stack import FAST_WAITS
from icetide_local.standins.dms.data_mover import replicator_mover
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions.harness import TableRunHarness

# The harness's functions use the Settings default (hourly slots).
HARNESS_SLOT_MINUTES = 60

TRUST_LAMBDA = json.dumps(
    {
        "Version": "2012-10-17",
        "Statement": [
            {"Effect": "Allow", "Principal": {"Service": "lambda.amazonaws.com"}, "Action": "sts:AssumeRole"}
        ],
    }
)


def every_needed_action() -> dict[str, tuple[str, ...]]:
    """Each function of RUN_NEEDS allowed exactly the actions it needs."""
    return {
        function: tuple(dict.fromkeys(need.action for need in needs)) for function, needs in RUN_NEEDS.items()
    }


class DryRunStack:
    """A :class:`ScenarioStack` over the table-run harness in moto."""

    kind = "dry-run"

    def __init__(self, harness: TableRunHarness, allowed: Mapping[str, Sequence[str]]) -> None:
        self._harness = harness
        self.state_machine_arn = harness.state_machine_arn
        self.control_table = harness.names.control_table
        self.source_endpoint_arn = harness.source_endpoint_arn
        self._runs = 0
        self._roles = {function: self._role(function, actions) for function, actions in allowed.items()}

    def client(self, service: str) -> Any:
        return self._harness.client(service)

    def next_run_id(self, table: str) -> tuple[str, dict[str, str]]:
        self._runs += 1
        return upcoming_run(table, utc_now(), HARNESS_SLOT_MINUTES, self._runs)

    def function_roles(self) -> dict[str, str]:
        return dict(self._roles)

    def simulator(self) -> PolicySimulator:
        return AllowListSimulator(self.client("iam"))

    def silver_rows(self, table: str) -> dict[Any, Any] | None:
        return None

    def _role(self, function: str, actions: Sequence[str]) -> str:
        iam = self.client("iam")
        arn = str(iam.create_role(RoleName=function, AssumeRolePolicyDocument=TRUST_LAMBDA)["Role"]["Arn"])
        statement = {"Effect": "Allow", "Action": list(actions), "Resource": "*"}
        policy = json.dumps({"Version": "2012-10-17", "Statement": [statement]})
        iam.put_role_policy(RoleName=function, PolicyName="run", PolicyDocument=policy)
        return arn


@contextmanager
def dry_run_stack(
    source_url: str, allowed: Mapping[str, Sequence[str]] | None = None
) -> Iterator[DryRunStack]:
    """The moto stack with the DMS stand-in moving ``source_url``'s rows (a SQLAlchemy URL)."""
    with TableRunHarness(
        substitutions=FAST_WAITS,
        dms=DmsLifecycle(mover=replicator_mover(source_url)),
        environment={"DMS_LOG_RETENTION_DAYS": "7"},  # as the template sets it
    ) as harness:
        yield DryRunStack(harness, every_needed_action() if allowed is None else allowed)


def sqlite_url(folder: Path) -> str:
    """A fresh SQLite source in ``folder``."""
    return f"sqlite:///{folder / 'source.db'}"
