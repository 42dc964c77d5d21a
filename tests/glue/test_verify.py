"""The Glue job's verify mode (--verify_report_uri): silver's live keys against a key-only extraction.

Silver is loaded by the real job from DMS-shaped files; the extraction is what a key-only full-load
task writes. Each test checks the report the job wrote, with literal expectations, and that silver
gained no snapshot.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pytest
from pyspark.sql import SparkSession

from glue.dms_files import write_dms_file
from glue.silver_tables import CATALOG, SILVER_DATABASE, load_into_silver, snapshot_ids
from icetide_contracts.verify import Difference, VerifyReport
from icetide_glue.arguments import DeleteMode, JobArguments
from icetide_glue.errors import BronzeRowCountMismatch, InvalidChangeData, InvalidJobArguments
from icetide_glue.job import run_job
from icetide_glue.verify.compare import SilverKeysMissing

pytestmark = pytest.mark.spark

CDC = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("AR_H_CHANGE_SEQ", pa.string()),
        ("id", pa.int32()),
        ("name", pa.string()),
    ]
)
KEYS_ONLY = pa.schema([("dms_timestamp", pa.string()), ("id", pa.int32())])
T0 = "2026-11-21 06:00:00.000000"


def _load(spark: SparkSession, tmp_path: Path, table: str, rows: list[tuple], **options: object) -> None:
    bronze = tmp_path / f"bronze-{table}"
    write_dms_file(bronze, "20261121-060000000.parquet", CDC, rows)
    load_into_silver(spark, table, f"{table}-load", bronze, **options)


def _extraction(tmp_path: Path, keys: list[int], name: str = "keys") -> Path:
    folder = tmp_path / name
    write_dms_file(folder, "LOAD00000001.parquet", KEYS_ONLY, [(T0, key) for key in keys])
    return folder


def _verify(
    spark: SparkSession,
    tmp_path: Path,
    table: str,
    extraction: Path,
    expected_rows: int | None,
    **more: object,
) -> VerifyReport:
    report_path = tmp_path / f"{table}.verify.json"
    arguments = JobArguments(
        target_table=f"{SILVER_DATABASE}.{table}",
        run_id=f"{table}-verify-20261121T070000Z",
        bronze_uri=str(extraction),
        primary_keys=("id",),
        catalog=CATALOG,
        expected_rows=expected_rows,
        verify_report_uri=str(report_path),
        **more,  # type: ignore[arg-type]
    )
    returned = run_job(spark, arguments)
    written = VerifyReport.from_text(report_path.read_text(encoding="utf-8"))
    assert returned == written.to_json()
    return written


@pytest.fixture(scope="module")
def orders(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``verify_orders``, keys 1 to 5, loaded once: a verify run leaves silver as it is (asserted
    below), so every test that verifies a loaded table may use it."""
    folder = tmp_path_factory.mktemp("verify_orders")
    _load(spark, folder, "verify_orders", [("I", T0, f"{n:03d}", n, f"order {n}") for n in range(1, 6)])
    return "verify_orders"


def test_keys_missing_from_silver_and_extra_in_it_are_counted_and_listed(spark, tmp_path, orders) -> None:
    before = snapshot_ids(spark, "verify_orders")

    report = _verify(spark, tmp_path, "verify_orders", _extraction(tmp_path, [1, 3, 4, 6, 7]), 5)

    assert report == VerifyReport(
        silver_table="silver.verify_orders",
        run_id="verify_orders-verify-20261121T070000Z",
        compared="keys",
        key_columns=["id"],
        source_rows=5,
        silver_rows=5,
        missing=Difference(count=2, first=[{"id": 6}, {"id": 7}]),
        extra=Difference(count=2, first=[{"id": 2}, {"id": 5}]),
    )
    assert snapshot_ids(spark, "verify_orders") == before


def test_a_soft_deleted_row_is_not_a_live_key(spark, tmp_path) -> None:
    rows = [
        ("I", T0, "001", 1, "a"),
        ("I", T0, "002", 2, "b"),
        ("D", "2026-11-21 06:05:00.000000", "003", 2, "b"),
    ]
    _load(spark, tmp_path, "verify_soft", rows, delete_mode=DeleteMode.SOFT)

    report = _verify(spark, tmp_path, "verify_soft", _extraction(tmp_path, [1, 2]), 2)

    assert (report.silver_rows, report.missing, report.extra) == (
        1,
        Difference(count=1, first=[{"id": 2}]),
        Difference(count=0),
    )


def test_a_table_never_loaded_misses_every_source_key(spark, tmp_path) -> None:
    report = _verify(spark, tmp_path, "verify_never_loaded", _extraction(tmp_path, [2, 1]), 2)

    assert (report.source_rows, report.silver_rows) == (2, 0)
    assert report.missing == Difference(count=2, first=[{"id": 1}, {"id": 2}])
    assert not spark.catalog.tableExists(f"{CATALOG}.{SILVER_DATABASE}.verify_never_loaded")


def test_an_extraction_that_is_not_dms_count_is_refused(spark, tmp_path, orders) -> None:
    with pytest.raises(BronzeRowCountMismatch, match=r"hold 2 row\(s\) but DMS reported 3 \(--expected_rows"):
        _verify(spark, tmp_path, orders, _extraction(tmp_path, [1, 2]), 3)
    assert not (tmp_path / f"{orders}.verify.json").exists()


def test_a_null_key_in_the_extraction_cannot_be_compared(spark, tmp_path, orders) -> None:
    folder = tmp_path / "null-keys"
    write_dms_file(folder, "LOAD00000001.parquet", KEYS_ONLY, [(T0, 1), (T0, None)])

    with pytest.raises(InvalidChangeData, match=r"the verify run's key extraction .* cannot be compared"):
        _verify(spark, tmp_path, orders, folder, 2)


def test_silver_loaded_with_other_keys_is_named(spark, tmp_path, orders) -> None:
    arguments = JobArguments(
        target_table=f"{SILVER_DATABASE}.{orders}",
        run_id=f"{orders}-verify-20261121T070000Z",
        bronze_uri=str(_extraction(tmp_path, [1])),
        primary_keys=("order_no",),
        catalog=CATALOG,
        verify_report_uri=str(tmp_path / "other.json"),
    )

    with pytest.raises(
        SilverKeysMissing, match=r"silver\.verify_orders has no column order_no of --primary_keys"
    ):
        run_job(spark, arguments)


def test_verify_arguments_that_cannot_work_are_refused() -> None:
    common = {"target_table": "silver.t", "run_id": "t-verify-20261121T070000Z", "bronze_uri": "/tmp/keys"}

    with pytest.raises(InvalidJobArguments, match="--verify_report_uri needs --load_mode merge"):
        JobArguments.from_options({**common, "load_mode": "append", "verify_report_uri": "/tmp/r.json"})
    with pytest.raises(InvalidJobArguments, match="--verify_report_uri with --reconcile_uri"):
        JobArguments.from_options(
            {
                **common,
                "primary_keys": "id",
                "verify_report_uri": "/tmp/r.json",
                "reconcile_uri": "/tmp/k",
                "reconcile_started_at": "2026-11-21T06:00:00Z",
            }
        )
    # A merge run's empty --verify_report_uri (the state machine always passes one) means "no verify".
    assert (
        JobArguments.from_options({**common, "primary_keys": "id", "verify_report_uri": ""}).verify_report_uri
        is None
    )
