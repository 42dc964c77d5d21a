"""A corpus of bad bronze input through `icetide job run` against a table that already holds rows.

Every case must exit non-zero with ONE error line naming what was wrong, and leave the table as it
was: its snapshot, schema and rows are read back with pyiceberg straight from the warehouse's
Iceberg metadata, never through the job's own code or Spark's cached catalog.

The cases run in this process through the CLI's `main`, on the tests' one Spark session (a fresh
`icetide` process per case would start a new JVM each, longer than the case itself). `icetide job
run` uses the catalog ``local`` on ``--warehouse``, which is the Glue tests' catalog on their
warehouse, so the corpus uses that warehouse and a table of its own.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from pyiceberg.table import StaticTable
from pyspark.sql import SparkSession

from glue.dms_files import write_dms_file
from glue.silver_tables import SILVER_DATABASE
from glue.values_hash import values_hash
from icetide_cli.main import main as icetide

pytestmark = pytest.mark.spark

TABLE = "bad_input_corpus"
GOOD = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.string())]
)
FIRST_LOAD = [("I", "2026-11-21 06:00:00", 1, "a"), ("I", "2026-11-21 06:00:00", 2, "b")]

# What silver holds after the first load, written out (pyiceberg's type names; phase 0 is the
# full load, docs/glue-job.md "Ordering").
SILVER_SCHEMA = [
    ("id", "long"),
    ("v", "string"),
    ("_icetide_change_ts", "timestamptz"),
    ("_icetide_change_seq", "string"),
    ("_icetide_run_id", "string"),
    ("_icetide_values_hash", "long"),
    ("_icetide_change_phase", "int"),
]
SILVER_ROWS = [
    {
        "id": 1,
        "v": "a",
        "_icetide_change_ts": datetime(2026, 11, 21, 6, tzinfo=UTC),
        "_icetide_change_seq": None,
        "_icetide_run_id": "corpus-first-load",
        "_icetide_values_hash": values_hash({"v": "a"}),
        "_icetide_change_phase": 0,  # a LOAD file's row: the full-load phase
    },
    {
        "id": 2,
        "v": "b",
        "_icetide_change_ts": datetime(2026, 11, 21, 6, tzinfo=UTC),
        "_icetide_change_seq": None,
        "_icetide_run_id": "corpus-first-load",
        "_icetide_values_hash": values_hash({"v": "b"}),
        "_icetide_change_phase": 0,  # a LOAD file's row: the full-load phase
    },
]


def _dms_folder(bronze: Path) -> Path:
    """Where write_dms_file puts a run's files (schema/table below the run's folder)."""
    return bronze / "dbo" / "source_table"


def _one_file(schema: pa.Schema, rows: list[tuple[Any, ...]]) -> Callable[[Path], None]:
    def write(bronze: Path) -> None:
        write_dms_file(bronze, "LOAD00000001.parquet", schema, rows)

    return write


def _truncated(bronze: Path) -> None:
    write_dms_file(bronze, "LOAD00000001.parquet", GOOD, [("U", "2026-11-21 07:00:00", 1, "a2")])
    whole = write_dms_file(bronze, "LOAD00000002.parquet", GOOD, [("U", "2026-11-21 07:00:00", 2, "b2")])
    whole.write_bytes(whole.read_bytes()[:-40])  # the footer's end and the closing magic are gone


def _csv_named_parquet(bronze: Path) -> None:
    write_dms_file(bronze, "LOAD00000001.parquet", GOOD, [("U", "2026-11-21 07:00:00", 1, "a2")])
    (_dms_folder(bronze) / "LOAD00000002.parquet").write_text(
        "Op,dms_timestamp,id,v\nU,2026-11-21 07:00:00,2,b2\n"
    )


def _only_csv(bronze: Path) -> None:
    _dms_folder(bronze).mkdir(parents=True)
    (_dms_folder(bronze) / "LOAD00000001.csv").write_text("U,2026-11-21 07:00:00,1,a2\n")


def _with(name: str, data_type: pa.DataType) -> pa.Schema:
    """GOOD with one column's type replaced."""
    return pa.schema([pa.field(f.name, data_type if f.name == name else f.type) for f in GOOD])


CASES = [
    pytest.param(
        _truncated,
        "UnreadableBronzeFile",
        "LOAD00000002.parquet is not a Parquet file",
        id="truncated-parquet",
    ),
    pytest.param(
        _csv_named_parquet,
        "UnreadableBronzeFile",
        "LOAD00000002.parquet is not a Parquet file",
        id="csv-named-parquet",
    ),
    pytest.param(
        _only_csv,
        "NoParquetInBronze",
        "holds file(s) but no .parquet file (e.g. dbo/source_table/LOAD00000001.csv)",
        id="only-non-parquet-files",
    ),
    pytest.param(
        _one_file(_with("dms_timestamp", pa.int64()), [("U", 1_795_334_400_000_000, 1, "a2")]),
        "BronzeSchemaError",
        "the DMS timestamp column (--timestamp_column) 'dms_timestamp' is bigint, not a "
        "'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp",
        id="int64-timestamp",
    ),
    pytest.param(
        _one_file(_with("dms_timestamp", pa.bool_()), [("U", True, 1, "a2")]),
        "BronzeSchemaError",
        "'dms_timestamp' is boolean, not a 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' string or a timestamp",
        id="boolean-timestamp",
    ),
    pytest.param(
        _one_file(GOOD, [("U", "2026-11-21 07:00:00", 1, "a2"), ("U", "yesterday at noon", 2, "b2")]),
        "InvalidChangeData",
        "1 row(s) have a dms_timestamp that is not a 'yyyy-MM-dd HH:mm:ss[.SSSSSS]' time",
        id="string-garbage-timestamp",
    ),
    pytest.param(
        _one_file(GOOD, [("X", "2026-11-21 07:00:00", 1, "a2")]),
        "InvalidChangeData",
        "1 row(s) have an Op other than I, U or D (e.g. 'X')",
        id="op-outside-IUD",
    ),
    pytest.param(
        _one_file(
            pa.schema([("Op", pa.string()), ("dms_timestamp", pa.string()), ("v", pa.string())]),
            [("U", "2026-11-21 07:00:00", "a2")],
        ),
        "BronzeSchemaError",
        # The DMS columns are icetide's by then: only source columns are listed.
        "the primary key column (--primary_keys) 'id' is not in the bronze files (their columns: v)",
        id="key-missing",
    ),
    pytest.param(
        _one_file(GOOD, [("U", "2026-11-21 07:00:00", None, "a2")]),
        "InvalidChangeData",
        "1 row(s) have a null primary key (id)",
        id="null-key",
    ),
    pytest.param(
        _one_file(
            pa.schema([*GOOD, ("_icetide_run_id", pa.string())]), [("U", "2026-11-21 07:00:00", 1, "a2", "x")]
        ),
        "BronzeSchemaError",
        "have column(s) _icetide_run_id: the _icetide_ prefix is reserved",
        id="reserved-column-name",
    ),
    pytest.param(
        _one_file(_with("v", pa.int64()), [("U", "2026-11-21 07:00:00", 1, 7)]),
        "IncompatibleSchemaChange",
        "incompatible source schema change, silver left untouched: column v: silver has string, "
        "the source now sends bigint",
        id="incompatible-type-change",
    ),
    pytest.param(
        _one_file(
            pa.schema([*GOOD, ("AR_H_CHANGE_SEQ", pa.string())]),
            [("U", "2026-11-21 07:00:00", 1, "a2", "seq-42")],
        ),
        "InvalidChangeData",
        "1 row(s) have a AR_H_CHANGE_SEQ that is not a string of digits (e.g. 'seq-42')",
        id="change-sequence-not-digits",
    ),
    pytest.param(
        _one_file(pa.schema([*GOOD, ("V", pa.string())]), [("U", "2026-11-21 07:00:00", 1, "a2", "A2")]),
        "BronzeSchemaError",
        "have columns whose names differ only in case",
        id="names-differing-only-in-case",
    ),
    pytest.param(
        _one_file(
            pa.schema([*GOOD, ("_metadata", pa.string())]), [("U", "2026-11-21 07:00:00", 1, "a2", "m")]
        ),
        "BronzeSchemaError",
        "have a column named _metadata, which Spark reserves",
        id="spark-reserved-column-name",
    ),
]


def _job_run(warehouse: Path, bronze: Path, run_id: str) -> int:
    return icetide(
        [
            "job", "run", "--bronze", str(bronze), "--warehouse", str(warehouse),
            "--table", f"{SILVER_DATABASE}.{TABLE}", "--keys", "id", "--run-id", run_id,
        ]
    )  # fmt: skip


def _silver(warehouse: Path) -> StaticTable:
    """The table as pyiceberg reads it from the Hadoop catalog's files (latest version-hint)."""
    return StaticTable.from_metadata(str(warehouse / SILVER_DATABASE / TABLE))


def _state(warehouse: Path) -> tuple[int | None, list[tuple[str, str]], list[dict[str, Any]]]:
    """Snapshot id, schema (name, type) and rows (by id) of the table."""
    silver = _silver(warehouse)
    snapshot = silver.current_snapshot()
    schema = [(field.name, str(field.field_type)) for field in silver.schema().fields]
    rows = sorted(silver.scan().to_arrow().to_pylist(), key=lambda row: row["id"])
    return (snapshot.snapshot_id if snapshot else None), schema, rows


@pytest.fixture(scope="module")
def loaded(spark: SparkSession, warehouse: Path, tmp_path_factory: pytest.TempPathFactory) -> int:
    """The corpus table after one good load; returns its snapshot id as pyiceberg reads it."""
    bronze = tmp_path_factory.mktemp("corpus-first-load")
    write_dms_file(bronze, "LOAD00000001.parquet", GOOD, FIRST_LOAD)
    assert _job_run(warehouse, bronze, "corpus-first-load") == 0
    snapshot_id, schema, rows = _state(warehouse)
    assert (schema, rows) == (SILVER_SCHEMA, SILVER_ROWS)
    assert snapshot_id is not None
    return snapshot_id


@pytest.mark.parametrize(("write_bronze", "error", "fragment"), CASES)
def test_bad_input_exits_with_one_error_line_and_leaves_the_table_as_it_was(
    loaded: int,
    warehouse: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    write_bronze: Callable[[Path], None],
    error: str,
    fragment: str,
) -> None:
    write_bronze(tmp_path / "bronze")
    capsys.readouterr()

    exit_code = _job_run(warehouse, tmp_path / "bronze", f"corpus-{error}")

    printed = capsys.readouterr()
    assert exit_code == 1
    assert printed.out == ""
    lines = printed.err.splitlines()
    assert len(lines) == 1, printed.err
    assert lines[0].startswith(f"error: {error}: "), lines[0]
    assert fragment in lines[0]
    assert "Traceback" not in printed.err and "\tat " not in printed.err
    assert _state(warehouse) == (loaded, SILVER_SCHEMA, SILVER_ROWS)
