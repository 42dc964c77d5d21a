"""A Glue job whose runs run a Python callable, inside moto's Glue backend.

moto's Glue job runs do nothing and always succeed, so a state machine's ``startJobRun.sync`` task
could never fail and no manifest would ever be written. :class:`GlueStandIn` makes every job run
call a :data:`JobRunner` with the run's arguments (``{"--run_id": ..., "--manifest_uri": ...}``,
the job's default arguments overlaid with the run's, as Glue merges them) in a background thread.
The run is ``RUNNING`` until the runner returns (``SUCCEEDED``) or raises (``FAILED``, with the
exception as ``ErrorMessage``), which is what ``startJobRun.sync`` waits for.

Runners: :func:`manifest_writer` writes a fixture run manifest to ``--manifest_uri`` (tests of the
state machine); :func:`maintenance_report_writer` writes a fixture maintenance report to
``--report_uri`` (the maintenance job's runs); :func:`failing_job` fails; the local stack plugs in
the real Spark jobs (:mod:`icetide_local.standins.glue_spark`).
"""

from __future__ import annotations

import contextlib
import functools
import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any
from unittest import mock
from urllib.parse import urlparse

import boto3
from moto.core.utils import utcnow
from moto.glue import models as glue_models

from icetide_contracts.run_manifest import RunManifest

JobRunner = Callable[[Mapping[str, str]], None]
"""Runs one job run given its arguments; returning means SUCCEEDED, raising means FAILED."""


class GlueJobFailed(RuntimeError):
    """Raised by :func:`failing_job`: the stand-in's way of saying the Spark job failed."""


class ManifestUriInvalid(ValueError):
    """``--manifest_uri`` (or a maintenance run's ``--report_uri``) is missing or not an
    ``s3://bucket/key`` URI."""


@dataclass
class GlueStandIn:
    """Serves moto's Glue job runs with ``runner``; :meth:`install` patches moto for a block.

    ``job_runners`` serve the runs of the jobs they name instead (the maintenance job's runs, in a
    stack that has both jobs); every other job's runs go to ``runner``.
    """

    runner: JobRunner
    runs: list[StandInJobRun] = field(default_factory=list)
    job_runners: dict[str, JobRunner] = field(default_factory=dict)

    def runner_for(self, job_name: str) -> JobRunner:
        """The runner of ``job_name``'s runs."""
        return self.job_runners.get(job_name, self.runner)

    @contextlib.contextmanager
    def install(self) -> Iterator[GlueStandIn]:
        """Patch moto's Glue backend (inside ``mock_aws``) so new job runs call :attr:`runner`."""
        # FakeJob.start_job_run builds its runs through this module-level name.
        with mock.patch.object(glue_models, "FakeJobRun", functools.partial(StandInJobRun, standin=self)):
            yield self

    def wait_for_runs(self, timeout_seconds: float) -> None:
        """Block until every run started so far has finished (their threads outlive the execution)."""
        for run in list(self.runs):
            run.finished.wait(timeout_seconds)


class StandInJobRun(glue_models.FakeJobRun):
    """A moto job run whose state is the outcome of its runner, not moto's state manager."""

    def __init__(self, *, standin: GlueStandIn, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._state = "RUNNING"
        self.error_message: str | None = None
        self.finished = threading.Event()
        standin.runs.append(self)
        threading.Thread(
            target=self._run,
            args=(standin.runner_for(self.job_name),),
            name=f"glue-standin-{self.job_run_id[:12]}",
            daemon=True,
        ).start()

    # moto's ManagedState would move the run to SUCCEEDED on the first describe.
    @property
    def status(self) -> str:
        return self._state

    @status.setter
    def status(self, value: str) -> None:
        self._state = value

    def _run(self, runner: JobRunner) -> None:
        try:
            runner(dict(self.arguments or {}))
        except Exception as error:  # the job's failure is the run's outcome, not the thread's
            self.error_message = f"{type(error).__name__}: {error}"
            self._state = "FAILED"
        else:
            self._state = "SUCCEEDED"
        finally:
            self.completed_on = utcnow()
            self.finished.set()

    def as_dict(self) -> dict[str, Any]:
        described = super().as_dict()
        if self.error_message:
            described["ErrorMessage"] = self.error_message
        return described


def failing_job(message: str = "the Spark job failed") -> JobRunner:
    """A runner that fails every run with ``message`` (a GlueJobFailed)."""

    def run(arguments: Mapping[str, str]) -> None:
        raise GlueJobFailed(message)

    return run


def manifest_writer(**manifest_fields: Any) -> JobRunner:
    """A runner that writes a run manifest (docs/contracts.md) to the run's ``--manifest_uri``.

    ``runId``, ``targetTable`` and ``watermarkColumn`` come from the run's arguments, as the real
    job's would; ``manifest_fields`` (JSON names: ``rowsRead=4, newWatermark=...``) give the rest,
    over the contract's defaults (``icetide_contracts.run_manifest``: zero counts, no new watermark).
    They are written as given, so a test may also write a manifest that breaks the contract.
    """

    def run(arguments: Mapping[str, str]) -> None:
        defaults = RunManifest(
            run_id=arguments.get("--run_id", ""),
            target_table=arguments.get("--target_table", ""),
            watermark_column=arguments.get("--watermark_column") or None,
        )
        manifest = {**defaults.to_json(), **manifest_fields}
        bucket, key = _s3_location(arguments.get("--manifest_uri"))
        boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(manifest).encode())

    return run


def maintenance_report_writer(**report_fields: Any) -> JobRunner:
    """A maintenance job runner that writes a maintenance report (docs/contracts.md) to the run's
    ``--report_uri``, as the real job would, without Spark.

    ``runId`` and ``table`` come from the run's arguments (``--run_id``, ``--target_table``);
    ``report_fields`` (JSON names: ``silver={...}``, ``skipped="..."``) give the rest. Without
    ``silver`` or ``skipped`` the report says the table was skipped. Written as given, so a test may
    also write a report that breaks the contract.
    """

    def run(arguments: Mapping[str, str]) -> None:
        report: dict[str, Any] = {
            "runId": arguments.get("--run_id", ""),
            "table": arguments.get("--target_table", ""),
            **report_fields,
        }
        if "silver" not in report and "skipped" not in report:
            report["skipped"] = "fixture report: nothing maintained"
        bucket, key = _s3_location(arguments.get("--report_uri"), "--report_uri")
        boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=json.dumps(report).encode())

    return run


def _s3_location(uri: str | None, argument: str = "--manifest_uri") -> tuple[str, str]:
    parsed = urlparse(uri or "")
    if parsed.scheme != "s3" or not parsed.netloc or not parsed.path.strip("/"):
        raise ManifestUriInvalid(f"{argument} must be s3://bucket/key, got {uri!r}")
    return parsed.netloc, parsed.path.lstrip("/")
