"""The job's arguments: their names and meaning through Glue's resolver (getResolvedOptions).

``icetide job run`` maps its own options onto the same model (tests/glue/test_entrypoints.py runs
it; its reconcile and bronze file selection options are checked here, without Spark).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path

import pytest

from glue.awsglue_fake import get_resolved_options
from icetide_cli.job import bronze_copy, runs_arguments
from icetide_cli.main import build_parser
from icetide_contracts.bronze_files import BronzeFiles
from icetide_glue.arguments import DeleteMode, JobArguments, LoadMode, parse_glue_options
from icetide_glue.errors import InvalidBronzeFileSelection, InvalidJobArguments, MissingPrimaryKeys

REQUIRED = [
    "--target_table",
    "icetide_silver.dbo_orders",
    "--run_id",
    "dbo_orders-20261121T0700Z",
    "--bronze_uri",
    "s3://raw/bronze/dbo_orders/dbo_orders-20261121T0700Z/",
]


def parse_glue_arguments(arguments: list[str]) -> JobArguments:
    """``arguments`` (no program name) as a Glue job run receives and resolves them."""
    return parse_glue_options(["bronze_to_silver.py", *arguments], get_resolved_options)


def test_command_line_with_only_required_arguments_takes_the_documented_defaults() -> None:
    args = parse_glue_arguments([*REQUIRED, "--primary_keys", "order_id"])
    assert args == JobArguments(
        target_table="icetide_silver.dbo_orders",
        run_id="dbo_orders-20261121T0700Z",
        bronze_uri="s3://raw/bronze/dbo_orders/dbo_orders-20261121T0700Z/",
        manifest_uri=None,
        primary_keys=("order_id",),
        load_mode=LoadMode.MERGE,
        watermark_column=None,
        timestamp_column="dms_timestamp",
        change_sequence_column="AR_H_CHANGE_SEQ",
        catalog="glue_catalog",
        expected_rows=None,
    )
    assert (args.database, args.table_name) == ("icetide_silver", "dbo_orders")
    assert args.driver_merge_max_changes == 500_000


def test_command_line_reads_every_argument() -> None:
    args = parse_glue_arguments(
        [
            *REQUIRED,
            "--manifest_uri",
            "s3://raw/manifests/x.json",
            "--primary_keys",
            "tenant, order_id,",
            "--load_mode",
            "MERGE",
            "--watermark_column",
            "updated_at",
            "--timestamp_column",
            "ts",
            "--change_sequence_column",
            "seq",
            "--catalog",
            "local",
            "--expected_rows",
            "1200",
            "--driver_merge_max_changes",
            "0",
        ]
    )
    assert args.expected_rows == 1200
    assert args.driver_merge_max_changes == 0
    assert args.manifest_uri == "s3://raw/manifests/x.json"
    assert args.primary_keys == ("tenant", "order_id")
    assert args.load_mode is LoadMode.MERGE
    assert (args.watermark_column, args.timestamp_column, args.change_sequence_column) == (
        "updated_at",
        "ts",
        "seq",
    )
    assert args.catalog == "local"


def test_glue_resolver_is_asked_only_for_arguments_the_run_carries() -> None:
    asked: list[list[str]] = []

    def fake_get_resolved_options(argv: list[str], names: list[str]) -> Mapping[str, str]:
        # Stands in for awsglue.utils.getResolvedOptions: it fails on any absent name it is given.
        asked.append(names)
        pairs = dict(zip(argv[1::2], argv[2::2], strict=True))
        return {name: pairs[f"--{name}"] for name in names}

    argv = ["bronze_to_silver.py", *REQUIRED, "--load_mode", "append", "--JOB_ID", "j_1"]
    args = parse_glue_options(argv, fake_get_resolved_options)
    assert asked == [["target_table", "run_id", "bronze_uri", "load_mode"]]
    assert args.load_mode is LoadMode.APPEND
    assert args.primary_keys == ()
    assert args.expected_rows is None

    # The state machine passes DMS's count as a string, like every Glue argument.
    counted = parse_glue_options([*argv, "--expected_rows", "10"], fake_get_resolved_options)
    assert asked[-1] == ["target_table", "run_id", "bronze_uri", "load_mode", "expected_rows"]
    assert counted.expected_rows == 10


def test_merge_without_keys_is_refused_with_the_way_out() -> None:
    with pytest.raises(
        MissingPrimaryKeys,
        match="needs --primary_keys; a table without keys must be loaded with --load_mode append",
    ):
        parse_glue_arguments(REQUIRED)


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--load_mode", "upsert"], "--load_mode 'upsert' is not one of merge, append"),
        (["--primary_keys", "id,ID"], "--primary_keys 'id,ID' names a column twice"),
        (["--catalog", "my-catalog", "--primary_keys", "id"], "--catalog 'my-catalog' is not a valid"),
        (["--primary_keys", "id", "--expected_rows", "-1"], "--expected_rows '-1' must be a whole number"),
        (["--primary_keys", "id", "--expected_rows", "1.5"], "--expected_rows '1.5' must be a whole number"),
        (
            ["--primary_keys", "id", "--expected_rows", "null"],
            "--expected_rows 'null' must be a whole number",
        ),
        (
            ["--primary_keys", "id", "--driver_merge_max_changes", "-5"],
            "--driver_merge_max_changes '-5' must be a whole number of changes",
        ),
        (
            ["--primary_keys", "id", "--merge_plan", "local"],
            "--merge_plan 'local' is not one of auto, driver, spark",
        ),
    ],
)
def test_bad_values_name_the_argument(extra: list[str], message: str) -> None:
    with pytest.raises(InvalidJobArguments, match=message):
        parse_glue_arguments([*REQUIRED, *extra])


def test_bad_table_and_run_id_are_refused() -> None:
    with pytest.raises(InvalidJobArguments, match=r"--target_table 'orders' must be database\.table"):
        JobArguments.from_options(
            {"target_table": "orders", "run_id": "r", "bronze_uri": "b", "load_mode": "append"}
        )
    with pytest.raises(InvalidJobArguments, match="--run_id 'run 1' must be"):
        JobArguments.from_options(
            {"target_table": "d.t", "run_id": "run 1", "bronze_uri": "b", "load_mode": "append"}
        )


def test_missing_required_arguments_are_listed() -> None:
    with pytest.raises(InvalidJobArguments, match="missing required argument\\(s\\): --run_id, --bronze_uri"):
        JobArguments.from_options({"target_table": "d.t", "run_id": " "})


def test_expected_rows_blank_means_not_counted_and_zero_is_a_count() -> None:
    merge = [*REQUIRED, "--primary_keys", "id"]

    assert parse_glue_arguments([*merge, "--expected_rows", ""]).expected_rows is None
    assert parse_glue_arguments([*merge, "--expected_rows", " 0 "]).expected_rows == 0


def test_a_negative_expected_row_count_is_refused_when_built_directly() -> None:
    with pytest.raises(InvalidJobArguments, match="--expected_rows -3 must not be negative"):
        JobArguments(target_table="d.t", run_id="r", bronze_uri="b", primary_keys=("id",), expected_rows=-3)


def test_reconcile_arguments_are_read_and_blank_means_no_reconcile() -> None:
    merge = [*REQUIRED, "--primary_keys", "id"]
    args = parse_glue_arguments(
        [
            *merge,
            "--reconcile_uri",
            "s3://raw/bronze/_reconcile/orders/run-1/",
            "--reconcile_expected_rows",
            "12",
            "--reconcile_started_at",
            "2026-11-24T10:00:00.1234567Z",
        ]
    )
    assert args.reconcile_uri == "s3://raw/bronze/_reconcile/orders/run-1/"
    assert args.reconcile_expected_rows == 12
    # Digits beyond microseconds are dropped: the instant moves earlier, never later.
    assert args.reconcile_started_at == datetime(2026, 11, 24, 10, 0, 0, 123456, tzinfo=UTC)
    assert parse_glue_arguments(
        [*merge, "--reconcile_started_at", "2026-11-24 11:00:00+01:00", "--reconcile_uri", "s3://k/"]
    ).reconcile_started_at == datetime(2026, 11, 24, 10, 0, tzinfo=UTC)

    # What the state machine passes when the run does not reconcile.
    blank = ["--reconcile_uri", "", "--reconcile_expected_rows", "", "--reconcile_started_at", ""]
    args = parse_glue_arguments([*merge, "--delete_mode", "", *blank])
    assert (args.reconcile_uri, args.reconcile_expected_rows, args.reconcile_started_at) == (None, None, None)


@pytest.mark.parametrize(
    ("extra", "error", "message"),
    [
        (
            ["--primary_keys", "id", "--reconcile_uri", "s3://k/"],
            InvalidJobArguments,
            "--reconcile_uri needs --reconcile_started_at",
        ),
        (
            [
                "--load_mode",
                "append",
                "--reconcile_uri",
                "s3://k/",
                "--reconcile_started_at",
                "2026-11-24T10:00:00Z",
            ],
            InvalidJobArguments,
            "--reconcile_uri needs --load_mode merge",
        ),
        (
            ["--primary_keys", "id", "--reconcile_started_at", "2026-11-24T10:00:00Z"],
            InvalidJobArguments,
            "--reconcile_started_at given without --reconcile_uri",
        ),
        (
            [
                "--primary_keys",
                "id",
                "--reconcile_uri",
                "s3://k/",
                "--reconcile_started_at",
                "2026-11-24T10:00:00",
            ],
            InvalidJobArguments,
            "--reconcile_started_at '2026-11-24T10:00:00' must be an ISO-8601 UTC time",
        ),
        (
            [
                "--primary_keys",
                "id",
                "--reconcile_uri",
                "s3://k/",
                "--reconcile_started_at",
                "2026-11-31T10:00:00Z",
            ],
            InvalidJobArguments,
            "--reconcile_started_at '2026-11-31T10:00:00Z' is not a valid time",
        ),
        (
            [
                "--primary_keys",
                "id",
                "--reconcile_uri",
                "s3://k/",
                "--reconcile_started_at",
                "2026-11-24T10:00:00Z",
                "--reconcile_expected_rows",
                "-1",
            ],
            InvalidJobArguments,
            "--reconcile_expected_rows '-1' must be a whole number",
        ),
    ],
)
def test_bad_reconcile_arguments_are_refused(extra: list[str], error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        parse_glue_arguments([*REQUIRED, *extra])


def test_icetide_job_run_maps_its_reconcile_options_onto_the_job_arguments(tmp_path: Path) -> None:
    command = [
        *("job", "run", "--bronze", "b", "--warehouse", "w", "--table", "silver.t", "--keys", "id"),
        *("--reconcile", str(tmp_path), "--reconcile-expected-rows", "3"),
        *("--reconcile-started-at", "2026-11-24T10:00:00Z", "--delete-mode", "soft"),
    ]
    [args] = runs_arguments(build_parser().parse_args(command))
    assert (args.reconcile_uri, args.reconcile_expected_rows, args.reconcile_started_at) == (
        str(tmp_path.resolve()),
        3,
        datetime(2026, 11, 24, 10, 0, tzinfo=UTC),
    )
    assert args.delete_mode is DeleteMode.SOFT
    [plain] = runs_arguments(build_parser().parse_args(command[:10]))
    assert (plain.reconcile_uri, plain.reconcile_expected_rows, plain.reconcile_started_at) == (
        None,
        None,
        None,
    )


def test_a_bronze_file_selection_is_read_and_blank_means_the_whole_folder() -> None:
    continuous = [
        *("--target_table", "icetide_silver.dbo_orders", "--run_id", "dbo_orders-20261124T1205Z"),
        *("--bronze_uri", "s3://raw/bronze/_continuous/dbo_orders/", "--primary_keys", "id"),
    ]
    selection = "s3://raw/manifests/dbo_orders/dbo_orders-20261124T1205Z.bronze-files.json"
    # A continuous run has no DMS row count: the state machine passes an empty --expected_rows.
    args = parse_glue_arguments([*continuous, "--bronze_files_uri", selection, "--expected_rows", ""])
    assert (args.bronze_files_uri, args.expected_rows) == (selection, None)

    assert parse_glue_arguments([*continuous, "--bronze_files_uri", " "]).bronze_files_uri is None
    assert parse_glue_arguments(continuous).bronze_files_uri is None


def test_icetide_job_run_maps_bronze_files_onto_the_selection_s_folder_and_run(tmp_path: Path) -> None:
    selection = tmp_path / "orders-7.bronze-files.json"
    selection.write_text(
        json.dumps(
            BronzeFiles(
                run_id="orders-7",
                bronze_uri="s3://raw/bronze/_continuous/orders/",
                files=["dbo/orders/LOAD00000001.parquet"],
                total_bytes=10,
            ).to_json()
        )
    )
    command = [
        *("job", "run", "--bronze", str(tmp_path / "copy"), "--warehouse", "w", "--table", "silver.t"),
        *("--keys", "id", "--bronze-files", str(selection)),
    ]
    parsed = build_parser().parse_args(command)
    [args] = runs_arguments(parsed)
    # The job checks the selection against the S3 folder and reads the files from the --bronze copy.
    assert (args.run_id, args.bronze_uri, args.bronze_files_uri) == (
        "orders-7",
        "s3://raw/bronze/_continuous/orders/",
        str(selection.resolve()),
    )
    assert bronze_copy(parsed, parsed.bronze[0]) == str((tmp_path / "copy").resolve())
    # Another run id is passed on as given: the job refuses the selection (BronzeFileSelectionMismatch).
    [other] = runs_arguments(build_parser().parse_args([*command, "--run-id", "orders-8"]))
    assert other.run_id == "orders-8"

    selection.write_text("{}")
    with pytest.raises(InvalidBronzeFileSelection, match="bronze file selection is invalid: runId: required"):
        runs_arguments(parsed)
    with pytest.raises(InvalidBronzeFileSelection, match=r"cannot read the bronze file selection .*absent"):
        runs_arguments(build_parser().parse_args([*command[:-1], str(tmp_path / "absent.json")]))
