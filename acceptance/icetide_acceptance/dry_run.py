"""The dry run: the scenario against moto and the local stand-ins, with a SQLite source.

The real state machine runs in moto with the real handlers (icetide_local's TableRunHarness), the DMS
stand-in moves the SQLite table's rows and changes into bronze files, and the checks read everything
through boto3 as they do on AWS. What differs, named:

- without a ``warehouse`` no Glue job writes silver (a stand-in writes an empty manifest), so the
  ordering check is not applicable; with one, the real job runs on local Spark (icetide_local's
  LocalStack) and silver is read back with pyiceberg from the local Hadoop catalog;
- the stand-in's full load is over before a describe could show it running: the changes "during
  the full load" are made through its hook between the load's read and its transfer
  (``replicator.DURING_FULL_LOAD``), as a source commits them while DMS transfers;
- moto has no IAM policy simulator: each function gets a role of its own whose inline policy allows
  ``allowed`` actions, judged by :class:`AllowListSimulator`;
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from icetide.clock import utc_now
from icetide_acceptance.iam_simulation import RUN_NEEDS, AllowListSimulator, PolicySimulator
from icetide_acceptance.scenario import KEY_COLUMN, upcoming_run
from icetide_local.local_stack import FAST_WAITS, LocalStack
from icetide_local.standins.dms import replicator
from icetide_local.standins.dms.data_mover import replicator_mover
from icetide_local.standins.dms.lifecycle import DmsLifecycle
from icetide_local.stepfunctions.harness import TableRunHarness

# The harness's functions use the Settings default (hourly slots); LocalStack's one-minute slots
# only make the scenario's next slot nearer.
HARNESS_SLOT_MINUTES = 60
RUN_ENVIRONMENT = {"DMS_LOG_RETENTION_DAYS": "7"}  # as the template sets it
# A windowed task runs until the stand-in's clock passes its stop position, a second or more away:
# polls a second apart, so the run waits for it rather than counting out its polls at once.
RUN_WAITS = {**FAST_WAITS, "PollSeconds": "1", "MaxPollWaitSeconds": "1", "MaxPolls": "60"}

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

    def __init__(
        self, harness: TableRunHarness, allowed: Mapping[str, Sequence[str]], warehouse: Path | None = None
    ) -> None:
        self._harness = harness
        self._warehouse = warehouse
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
        if self._warehouse is None:
            return None
        from pyiceberg.table import StaticTable

        folder = self._warehouse / self._harness.names.glue_database / table.lower()
        rows = StaticTable.from_metadata(str(folder)).scan(selected_fields=(KEY_COLUMN, "note")).to_arrow()
        return dict(zip(rows.column(KEY_COLUMN).to_pylist(), rows.column("note").to_pylist(), strict=True))

    def during_full_load(self, change: Callable[[], None]) -> Callable[[], None] | None:
        pending = [change]

        def once(schema: str, table: str) -> None:
            while pending:
                pending.pop()()

        replicator.DURING_FULL_LOAD = once
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
    source_url: str, allowed: Mapping[str, Sequence[str]] | None = None, warehouse: Path | None = None
) -> Iterator[DryRunStack]:
    """The moto stack with the DMS stand-in moving ``source_url``'s rows (a SQLAlchemy URL); with
    ``warehouse``, the real Glue job on local Spark writing silver there."""
    harness = _harness(source_url, warehouse)
    with harness:
        try:
            yield DryRunStack(harness, every_needed_action() if allowed is None else allowed, warehouse)
        finally:
            replicator.DURING_FULL_LOAD = None


def _harness(source_url: str, warehouse: Path | None) -> TableRunHarness:
    if warehouse is None:
        return TableRunHarness(
            substitutions=RUN_WAITS,
            dms=DmsLifecycle(mover=replicator_mover(source_url)),
            environment=RUN_ENVIRONMENT,
        )
    # Its windows last until their stop positions, as on AWS: the scenario rehearses the real run.
    stack = LocalStack(
        source_url=source_url, warehouse=warehouse, substitutions=RUN_WAITS, windows_end_once_read=False
    )
    # LocalStack fixes its functions' environment; the template sets this one too.
    stack._environment_overrides.update(RUN_ENVIRONMENT)
    return stack


def sqlite_url(folder: Path) -> str:
    """A fresh SQLite source in ``folder``."""
    return f"sqlite:///{folder / 'source.db'}"
