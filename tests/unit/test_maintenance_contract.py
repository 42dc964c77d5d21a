"""The maintenance policy and report (icetide_contracts.maintenance): what each side reads back."""

from __future__ import annotations

import json

import pytest

from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.maintenance import MaintenancePolicy, MaintenanceReport

FILES = {"dataFiles": 16, "deleteFiles": 3, "positionDeleteFiles": 3, "totalBytes": 4096, "snapshots": 25}
SILVER = {"table": "silver.orders", "strategy": "sort", "before": FILES, "after": {**FILES, "deleteFiles": 0}}


def test_a_report_reads_back_to_the_same_json_with_defaults_filled() -> None:
    report = MaintenanceReport.from_text(
        json.dumps({"runId": "m1", "table": "silver.orders", "silver": SILVER})
    )

    assert report.silver is not None and report.silver.after.delete_files == 0
    written = report.to_json()
    assert written["silver"]["rowsPruned"] == 0
    assert written["policy"] == {
        "enabled": True,
        "snapshotRetentionHours": 168,
        "minSnapshots": 24,
        "orphanAgeHours": 72,
        "minInputFiles": 5,
        "deleteFileThreshold": 1,
        "targetFileSizeBytes": None,
    }
    assert MaintenanceReport.from_json(written) == report


@pytest.mark.parametrize(
    ("document", "message"),
    [
        ({"runId": "m1", "table": "t"}, "exactly one of silver and skipped must be set"),
        (
            {"runId": "m1", "table": "t", "silver": SILVER, "skipped": "x"},
            "exactly one of silver and skipped",
        ),
        (
            {"runId": "m1", "table": "t", "silver": {**SILVER, "before": {**FILES, "dataFiles": -1}}},
            "silver: before: dataFiles: Input should be greater than or equal to 0",
        ),
        (
            {"runId": "m1", "table": "t", "skipped": "x", "policy": {"minSnapshot": 2}},
            "unknown key(s) minSnapshot",
        ),
        ({"table": "t", "skipped": "x"}, "runId: required attribute is missing"),
    ],
)
def test_a_broken_report_is_refused_naming_what(document: dict[str, object], message: str) -> None:
    with pytest.raises(ContractViolation) as refused:
        MaintenanceReport.from_json(document)
    assert message in str(refused.value)


def test_a_report_that_is_not_json_is_refused() -> None:
    with pytest.raises(ContractViolation, match="maintenance report is not valid JSON"):
        MaintenanceReport.from_text(b"{truncated")


def test_the_policy_becomes_the_jobs_arguments_and_back() -> None:
    policy = MaintenancePolicy.from_json(
        {"minSnapshots": 48, "targetFileSizeBytes": 134217728, "enabled": False}
    )

    assert policy.job_arguments() == {
        "--snapshot_retention_hours": "168",
        "--min_snapshots": "48",
        "--orphan_age_hours": "72",
        "--min_input_files": "5",
        "--delete_file_threshold": "1",
        "--target_file_size_bytes": "134217728",
    }
    back = MaintenancePolicy.from_job_arguments(
        {k.removeprefix("--"): v for k, v in policy.job_arguments().items()}
    )
    # `enabled` is the scheduler's business: the job never sees it.
    assert back == MaintenancePolicy.from_json({"minSnapshots": 48, "targetFileSizeBytes": 134217728})
