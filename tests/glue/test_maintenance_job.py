"""The maintenance job's arguments, its report, and its Glue entrypoint (awsglue faked)."""

from __future__ import annotations

import json
from pathlib import Path
from types import ModuleType

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver
from icetide_contracts.maintenance import MaintenanceReport
from icetide_glue.errors import InvalidJobArguments
from icetide_glue.maintenance.job import NO_TABLE_YET, MaintenanceJobArguments, run_maintenance_job

BRONZE = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)


def test_arguments_take_the_policy_and_default_the_rest() -> None:
    args = MaintenanceJobArguments.from_options(
        {"target_table": "silver.orders", "run_id": "orders-maintain-20261124T0000Z", "min_snapshots": "3"}
    )
    assert (args.table.catalog, args.table.database, args.table.name) == ("glue_catalog", "silver", "orders")
    assert args.policy.min_snapshots == 3
    assert args.policy.snapshot_retention_hours == 168
    assert args.policy.orphan_age_hours == 72
    assert args.report_uri is None


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"run_id": "r1"}, "missing required argument(s): --target_table"),
        ({"target_table": "orders", "run_id": "r1"}, "--target_table must be database.table, got 'orders'"),
        ({"target_table": "silver.orders", "run_id": "r 1"}, "--run_id 'r 1' is not a valid run id"),
        (
            {"target_table": "silver.orders", "run_id": "r1", "orphan_age_hours": "12"},
            "--orphan_age_hours: must be at least 24 hours",
        ),
        (
            {"target_table": "silver.orders", "run_id": "r1", "min_snapshots": "many"},
            "--min_snapshots: must be a whole number, got 'many'",
        ),
        (
            {"target_table": "silver.orders", "run_id": "r1", "min_snapshots": "0"},
            "--min_snapshots: Input should be greater than or equal to 1",
        ),
    ],
)
def test_bad_arguments_are_refused_by_name(options: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidJobArguments) as refused:
        MaintenanceJobArguments.from_options(options)
    assert message in str(refused.value)


@pytest.mark.spark
def test_a_table_not_loaded_yet_is_skipped_with_a_report(spark: SparkSession, tmp_path: Path) -> None:
    report_path = tmp_path / "reports" / "never.maintenance.json"
    args = MaintenanceJobArguments.from_options(
        {
            "target_table": f"{SILVER_DATABASE}.never_loaded",
            "run_id": "never-m1",
            "report_uri": str(report_path),
            "catalog": CATALOG,
        }
    )
    report = run_maintenance_job(spark, args)
    written = MaintenanceReport.from_text(report_path.read_text())
    assert written == report
    assert (written.run_id, written.table, written.skipped, written.silver) == (
        "never-m1",
        "silver.never_loaded",
        NO_TABLE_YET,
        None,
    )


@pytest.mark.spark
def test_glue_entrypoint_maintains_and_prints_the_report(
    spark: SparkSession,
    maintenance_entrypoint: ModuleType,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    for number in (1, 2, 3):
        bronze = tmp_path / f"run{number}"
        rows = [
            ("I" if number == 1 else "U", f"2026-11-21 0{number}:00:00", key, f"v{number}") for key in (1, 2)
        ]
        write_dms_file(bronze, f"2026112{number}-000000000.parquet", BRONZE, rows)
        load_into_silver(spark, "via_maintenance_entrypoint", f"entry-{number}", bronze)
    report_path = tmp_path / "report.json"
    returned = maintenance_entrypoint.main(
        [
            "--target_table",
            f"{SILVER_DATABASE}.via_maintenance_entrypoint",
            "--run_id",
            "entry-m1",
            "--report_uri",
            f"file://{report_path}",
            "--catalog",
            CATALOG,
            "--snapshot_retention_hours",
            "0",
            "--min_snapshots",
            "1",
            "--min_input_files",
            "2",
            "--JOB_ID",
            "j_glue_adds_its_own",
        ]
    )
    printed = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert printed == returned == json.loads(report_path.read_text())
    silver = returned["silver"]
    # Runs 2 and 3 update: each one commit that removes the old rows and adds the new ones.
    assert (silver["before"]["snapshots"], silver["runsRecorded"]) == (3, 3)
    # The three runs' three snapshots expired; maintenance's two commits came after the cutoff
    # (now). The rewrite of the data files leaves the last run's delete file (its files take the
    # sequence number the table had when it started, the last run's commit's, which that delete
    # file carries too); the rewrite of delete files then drops it, as it names no live file.
    assert (silver["after"]["snapshots"], silver["snapshotsExpired"]) == (2, 3)
    assert silver["deleteFilesRewritten"] == 1
    assert silver["after"]["deleteFiles"] == 0
    assert returned["policy"]["minSnapshots"] == 1


def test_glue_entrypoint_refusal_is_one_named_line(maintenance_entrypoint: ModuleType) -> None:
    with pytest.raises(InvalidJobArguments) as refused:
        maintenance_entrypoint.main(
            ["--target_table", "silver.t", "--run_id", "m1", "--orphan_age_hours", "1"]
        )
    assert str(refused.value).startswith("InvalidJobArguments: ")
    assert "\n" not in str(refused.value)
