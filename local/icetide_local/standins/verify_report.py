"""A Glue stand-in runner for verify runs that needs no Spark: it writes a fixture verify report.

Like :func:`icetide_local.standins.glue.manifest_writer` for merge runs: the state-machine tests of
verify runs, and the CLI's tests against a stack, need a job run that ends the way the real job's
verify does (a report at ``--verify_report_uri``), not the real comparison, which the Spark tests
make.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

import boto3

from icetide_contracts.verify import COMPARED_KEYS, Difference, VerifyReport
from icetide_local.standins.glue import JobRunner, ManifestUriInvalid


def verify_report_writer(
    *, missing: Difference | None = None, extra: Difference | None = None, rows: int = 0
) -> JobRunner:
    """A runner writing a verify report of the run (``--run_id``, ``--target_table``,
    ``--primary_keys``) to ``--verify_report_uri``: ``rows`` on both sides, ``missing`` and
    ``extra`` as given (none by default), the source's count adjusted by them."""

    def run(arguments: Mapping[str, str]) -> None:
        uri = arguments.get("--verify_report_uri") or ""
        if not uri.startswith("s3://") or "/" not in uri.removeprefix("s3://"):
            raise ManifestUriInvalid(f"--verify_report_uri must be s3://bucket/key, got {uri!r}")
        lacking, surplus = missing or Difference(count=0), extra or Difference(count=0)
        report = VerifyReport(
            silver_table=arguments.get("--target_table", ""),
            run_id=arguments.get("--run_id"),
            compared=COMPARED_KEYS,
            key_columns=[
                key.strip() for key in arguments.get("--primary_keys", "").split(",") if key.strip()
            ],
            source_rows=rows + lacking.count - surplus.count,
            silver_rows=rows,
            missing=lacking,
            extra=surplus,
        )
        bucket, key = uri.removeprefix("s3://").split("/", 1)
        body = json.dumps(report.to_json()) + "\n"  # one line, as the job writes it
        boto3.client("s3").put_object(Bucket=bucket, Key=key, Body=body.encode("utf-8"))

    return run
