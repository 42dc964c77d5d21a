"""The merge on the driver (icetide_glue.driver.merge) against the Spark path it stands in for.

The random workloads (test_random_workloads.py) hold both paths to one oracle; these tests hold
the driver's reading of a batch to Spark's on seeded random batches (DMS's spellings of times,
Ops and sequences, LOAD and CDC files, equal times), the two paths to the same silver and
manifests across schema changes and column types, and the driver's one commit to the Spark
path's guarantees (another writer, a compaction, at most four delete files per data file).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StructType

from glue.dms_files import write_dms_file
from glue.silver_tables import (
    LoadedTable,
    load_into_silver,
    main_snapshots,
    merge_path,
    roll_back,
    silver_table,
)
from icetide_glue.bronze.read import file_rank as spark_file_rank
from icetide_glue.bronze.read import read_bronze
from icetide_glue.changes.batch import deduplicate_batch
from icetide_glue.changes.normalize import normalize_changes
from icetide_glue.columns import CHANGE_SEQ, CHANGE_TS, OP, RUN_ID, VALUES_HASH
from icetide_glue.driver import merge as driver_module
from icetide_glue.driver.arrow_types import NotEligible
from icetide_glue.driver.batch import file_rank, read_batch
from icetide_glue.driver.merge import folder_bronze, spark_bronze
from icetide_glue.errors import InvalidChangeData, InvalidJobArguments
from icetide_glue.iceberg_tables import iceberg_table
from icetide_glue.merge.sql import values_hash_sql
from seeds import EachSeed

pytestmark = pytest.mark.spark

BASE = datetime(2026, 11, 21, 7, 0, tzinfo=UTC)
RANDOM_SCHEMA = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("AR_H_CHANGE_SEQ", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.decimal128(10, 2)),
        ("score", pa.float64()),
        ("updated", pa.timestamp("us", tz="UTC")),
    ]
)


def _dms_time(rng: random.Random, seconds: int) -> str:
    """A DMS change time with 0-6 fraction digits, sometimes padded with spaces."""
    moment = BASE + timedelta(seconds=seconds, microseconds=rng.choice([0, 500_000, 123_456, 10]))
    text = moment.strftime("%Y-%m-%d %H:%M:%S")
    digits = rng.randint(0, 6)
    if digits:
        text += "." + moment.strftime("%f")[:digits]
    return rng.choice(["", " "]) + text + rng.choice(["", "  "])


def _random_batch(rng: random.Random, folder: Path) -> None:
    """1-3 files of random changes to a few keys: LOAD files (hexadecimal numbers, no sequence
    sometimes no Op) and CDC files, equal times, blank Ops, missing sequences."""
    names = rng.sample(
        [
            "LOAD00000009.parquet",
            "LOAD0000000A.parquet",
            "20261121-070000000.parquet",
            "20261121-070100000.parquet",
        ],
        rng.randint(1, 3),
    )
    for name in names:
        schema = RANDOM_SCHEMA
        if name.startswith("LOAD") and rng.random() < 0.5:
            schema = pa.schema([f for f in RANDOM_SCHEMA if f.name not in ("Op", "AR_H_CHANGE_SEQ")])
        rows = []
        for _ in range(rng.randint(1, 12)):
            row = {
                "Op": rng.choice(["I", "U", "D", " U ", "", None]),
                "dms_timestamp": _dms_time(rng, rng.randint(0, 3)),
                "AR_H_CHANGE_SEQ": rng.choice([None, f"{rng.randint(0, 5):020d}", ""]),
                "id": rng.randint(1, 8),
                "name": rng.choice(["a", "b", None, "é"]),
                "amount": rng.choice([Decimal("1.50"), Decimal("-0.01"), None]),
                "score": rng.choice([0.0, -0.0, 1.5, math.nan, None]),
                "updated": rng.choice([BASE, BASE + timedelta(microseconds=1), None]),
            }
            rows.append(tuple(row[field.name] for field in schema))
        write_dms_file(folder, name, schema, rows)


def _spark_latest(spark: SparkSession, folder: Path) -> tuple[dict[int, tuple[Any, ...]], Any]:
    bronze = read_bronze(spark, str(folder))
    assert bronze is not None
    changes = normalize_changes(bronze, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-1")
    batch = deduplicate_batch(changes, ["id"], "updated", "dms_timestamp", "AR_H_CHANGE_SEQ", 10_000)
    columns = ["id", OP, "name", "amount", "score", "updated", CHANGE_SEQ, RUN_ID]
    rows = batch.latest.select(*columns, F.unix_micros(CHANGE_TS).alias("ts")).collect()
    return {row["id"]: _comparable([*row[1:]]) for row in rows}, batch.summary


def _comparable(values: list[Any]) -> tuple[Any, ...]:
    """Values as one tuple compares them: NaN as text, times as UTC microseconds."""
    out = []
    for value in values:
        if isinstance(value, float) and math.isnan(value):
            value = "NaN"
        elif isinstance(value, bytearray):
            value = bytes(value)
        elif isinstance(value, datetime):
            value = value.replace(tzinfo=UTC) if value.tzinfo is None else value
            value = round(value.timestamp() * 1_000_000)
        out.append(value)
    return tuple(out)


def test_the_driver_reads_a_batch_as_spark_deduplicates_it(
    spark: SparkSession, tmp_path: Path, each_seed: EachSeed
) -> None:
    """The files and schema as Spark read them (a bronze file selection's run), and as the driver
    finds them in the folder itself (icetide_glue.driver.bronze): both against Spark's one reading."""

    def check(seed: int) -> None:
        folder = tmp_path / f"seed-{seed}"
        _random_batch(random.Random(seed), folder)
        expected, summary = _spark_latest(spark, folder)
        bronze = read_bronze(spark, str(folder))
        assert bronze is not None
        for listing, (files, schema) in (
            ("spark", spark_bronze(bronze)),
            ("pyarrow", folder_bronze(str(folder))),
        ):
            batch = read_batch(files, schema, ["id"], "updated", "dms_timestamp", "AR_H_CHANGE_SEQ", "run-1")
            got = {
                row["id"]: _comparable(
                    [
                        row[OP],
                        row["name"],
                        row["amount"],
                        row["score"],
                        row["updated"],
                        row[CHANGE_SEQ],
                        row[RUN_ID],
                        row[CHANGE_TS],
                    ]
                )
                for row in batch.latest.to_pylist()
            }
            assert got == expected, listing
            assert batch.summary == summary, listing

    each_seed(range(6), check)


def test_file_ranks_are_the_spark_path_s(spark: SparkSession) -> None:
    names = [
        "LOAD00000001.parquet",
        "LOAD0000000A.parquet",
        "LOADFFFFFFFFFFFFFFFF.parquet",
        "20261121-070000000.parquet",
        "x.parquet",
    ]
    expected = {
        "LOAD00000001.parquet": "0" + "1".rjust(20, "0"),
        "LOAD0000000A.parquet": "0" + "10".rjust(20, "0"),
        "LOADFFFFFFFFFFFFFFFF.parquet": "018446744073709551615",
        "20261121-070000000.parquet": "120261121-070000000.parquet",
        "x.parquet": "1x.parquet",
    }
    assert {name: file_rank(name) for name in names} == expected
    frame = spark.createDataFrame([(name,) for name in names], "name string")
    ranks = frame.select("name", spark_file_rank(F.col("name")).alias("rank")).collect()
    assert {row["name"]: row["rank"] for row in ranks} == expected


def test_change_times_pyarrow_cannot_read_as_spark_does_take_the_spark_path(tmp_path: Path) -> None:
    """A time of DMS's form that is not a date (30 February) is refused by the Spark path's check;
    the driver does not read it either."""
    schema = pa.schema([("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64())])
    path = write_dms_file(tmp_path, "20261121-070000000.parquet", schema, [("I", "2026-02-30 07:00:00", 1)])
    from pyspark.sql.types import LongType, StringType, StructField

    spark_schema = StructType(
        [
            StructField("Op", StringType()),
            StructField("dms_timestamp", StringType()),
            StructField("id", LongType()),
        ]
    )
    with pytest.raises(NotEligible):
        read_batch([str(path)], spark_schema, ["id"], None, "dms_timestamp", "AR_H_CHANGE_SEQ", "run-1")


# --- the values hash the driver stores ---------------------------------------------------------------

HASHED = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int64()),
        ("name", pa.string()),
        ("amount", pa.decimal128(12, 6)),
        ("score", pa.float64()),
        ("blob", pa.binary()),
        ("at", pa.timestamp("us", tz="UTC")),
    ]
)


def _hashed(
    op: str, seconds: int, key: int, name: str | None, amount: str, score: float | None
) -> tuple[Any, ...]:
    at = datetime(1969, 7, 20, 20, 17, tzinfo=UTC) + timedelta(microseconds=key)
    time = (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S")
    return (op, time, key, name, Decimal(amount), score, name.encode() if name else None, at)


def _stored_and_spark_hashes(spark: SparkSession, table: str) -> list[tuple[int, Any, Any]]:
    """Each silver row's key, stored hash and the hash Spark's ``values_hash_sql`` gives its values."""
    columns = [(f.name, f.dataType.simpleString()) for f in spark.table(silver_table(table)).schema.fields]
    compared = [(name, kind) for name, kind in columns if name != "id" and not name.startswith("_icetide")]
    frame = spark.table(silver_table(table)).select(
        "id", VALUES_HASH, F.expr(values_hash_sql(compared)).alias("spark_hash")
    )
    return [(row["id"], row[VALUES_HASH], row["spark_hash"]) for row in frame.collect()]


def test_rows_the_driver_writes_store_the_hash_the_spark_path_compares(
    spark: SparkSession, tmp_path: Path
) -> None:
    table = "driver_hashes"
    load = [_hashed("I", 0, key, f"row {key}", "1.5", float(key)) for key in range(1, 11)]
    write_dms_file(tmp_path / "1", "LOAD00000001.parquet", HASHED, load)
    load_into_silver(spark, table, "h-1", tmp_path / "1", merge_plan="spark")
    # Updates and inserts with text Jackson escapes, tiny decimals, doubles Java prints its own way.
    merged = [
        _hashed("U", 10, 1, 'quote " back \\ tab \t bell \x07 é 中', "0.000001", 1e23),
        _hashed("U", 10, 2, "", "-0.000000", -0.0),
        _hashed("U", 10, 3, None, "123456.000000", None),
        _hashed("I", 10, 30, "new\n", "-42.100000", 1e-3),
        _hashed("I", 10, 31, "😀", "0.000010", 9999999.0),
    ]
    write_dms_file(tmp_path / "2", "20261121-070000000.parquet", HASHED, merged)
    manifest = load_into_silver(spark, table, "h-2", tmp_path / "2", merge_plan="driver")
    assert merge_path(spark, table, manifest["snapshotId"]) == "driver"
    assert (manifest["rowsUpdated"], manifest["rowsInserted"]) == (3, 2)
    hashes = _stored_and_spark_hashes(spark, table)
    assert len(hashes) == 12
    assert [key for key, stored, _ in hashes if stored is None] == []
    assert [(key, stored, got) for key, stored, got in hashes if stored != got] == []
    # The Spark path reads the driver's rows again unchanged, and one changed.
    again = [*merged[:2], merged[3], _hashed("U", 20, 31, "😀", "0.000011", 9999999.0)]
    again = [
        (op, (BASE + timedelta(seconds=20)).strftime("%Y-%m-%d %H:%M:%S"), *rest) for op, _, *rest in again
    ]
    write_dms_file(tmp_path / "3", "20261121-070100000.parquet", HASHED, again)
    manifest = load_into_silver(spark, table, "h-3", tmp_path / "3", merge_plan="spark")
    assert (manifest["rowsUnchanged"], manifest["rowsUpdated"], manifest["rowsInserted"]) == (3, 1, 0)


# --- both paths, one silver ----------------------------------------------------------------------


def _silver(spark: SparkSession, table: str) -> set[tuple[Any, ...]]:
    """Silver's rows but their run ids, values hash included: both paths store the same."""
    frame = spark.table(silver_table(table)).drop(RUN_ID)
    return {_comparable(list(row)) for row in frame.collect()}


def _manifest(manifest: dict[str, Any], table: str) -> dict[str, Any]:
    """A manifest without what differs between two tables (their names, snapshots)."""
    kept = {k: v for k, v in manifest.items() if k not in ("snapshotId", "runId", "targetTable")}
    return {**kept, "schemaChanges": [c.replace(table, "<table>") for c in manifest["schemaChanges"]]}


def _write(
    folder: Path, name: str, schema: pa.Schema, rows: list[tuple[Any, ...]], int96: bool = False
) -> Path:
    target = folder / "dbo" / "source_table"
    target.mkdir(parents=True, exist_ok=True)
    table = pa.table({f.name: pa.array([r[i] for r in rows], f.type) for i, f in enumerate(schema)})
    pq.write_table(table, target / name, use_deprecated_int96_timestamps=int96)
    return folder


def _tombstones(spark: SparkSession, table: str) -> set[tuple[Any, ...]]:
    """The tombstone table's entries but their run ids."""
    frame = spark.table(silver_table(f"{table}__icetide_tombstones")).drop(RUN_ID)
    return {_comparable(list(row)) for row in frame.collect()}


class BothPaths:
    """Each run the job gives to the driver merged by both paths from one state: by Spark
    (forced), then, main and the tombstone table rolled back (or, after a first load, both
    dropped), by the driver. Both must leave the same silver (its schema too), tombstones and
    manifest. A run the job gives to Spark itself (a schema change) is merged once, by Spark:
    both paths go on from its state."""

    def __init__(self, spark: SparkSession, name: str) -> None:
        self.spark, self.table = spark, name

    def run(self, run_id: str, bronze: Path, driver: bool, **arguments: Any) -> dict[str, Any]:
        if not driver:
            return self._merged(run_id, bronze, "spark", **arguments)
        silver = silver_table(self.table)
        before = main_snapshots(self.spark, self.table) if self.spark.catalog.tableExists(silver) else None
        by_spark = load_into_silver(
            self.spark, self.table, f"{run_id}-by-spark", bronze, merge_plan="spark", **arguments
        )
        left_by_spark = self._left()
        if before is None:
            for name in (silver, silver_table(f"{self.table}__icetide_tombstones")):
                self.spark.sql(f"DROP TABLE {name}")
        else:
            roll_back(self.spark, self.table, before)
        by_driver = self._merged(run_id, bronze, "driver", **arguments)
        assert _manifest(by_driver, self.table) == _manifest(by_spark, self.table), run_id
        assert self._left() == left_by_spark, run_id
        return by_driver

    def _left(self) -> tuple[Any, ...]:
        """What a run leaves: silver's schema and rows, and the tombstones."""
        schema = self.spark.table(silver_table(self.table)).schema
        return schema, _silver(self.spark, self.table), _tombstones(self.spark, self.table)

    def _merged(self, run_id: str, bronze: Path, path: str, **arguments: Any) -> dict[str, Any]:
        """The run as the job chooses its path, which must be ``path``."""
        manifest = load_into_silver(self.spark, self.table, run_id, bronze, **arguments)
        if manifest["snapshotId"] is not None:
            assert merge_path(self.spark, self.table, manifest["snapshotId"]) == path, run_id
        return manifest


TYPED = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.int32()),
        ("v", pa.int32()),
        ("price", pa.decimal128(9, 2)),
        ("day", pa.date32()),
        ("at", pa.timestamp("us")),
        ("ratio", pa.float64()),
        ("blob", pa.binary()),
        ("ok", pa.bool_()),
    ]
)


def _typed(op: str, seconds: int, key: int, v: int, ratio: float | None, **extra: Any) -> tuple[Any, ...]:
    values = {
        "Op": op,
        "dms_timestamp": (BASE + timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.%f"),
        "id": key,
        "v": v,
        "price": Decimal(f"{v % 1000}.25"),
        "day": date(2026, 1, 1) + timedelta(days=v % 1000),
        "at": datetime(2026, 1, 1, 8, 0) + timedelta(seconds=v % 1000),
        "ratio": ratio,
        "blob": bytes([v % 256]),
        "ok": v % 2 == 0,
        **extra,
    }
    return tuple(values[name] for name in values)


def test_both_paths_agree_across_types_schema_changes_and_widening(
    spark: SparkSession, tmp_path: Path
) -> None:
    both = BothPaths(spark, "both_types")
    first = [_typed("I", 0, key, key, 0.0 if key == 4 else float(key)) for key in range(1, 21)]
    both.run("t-1", _write(tmp_path / "1", "LOAD00000001.parquet", TYPED, first, int96=True), driver=True)
    # Updates, one re-read unchanged, NaN over a number, -0.0 against 0.0, a delete, an insert.
    second = [
        _typed("U", 10, 1, 100, 1.0),
        _typed("U", 10, 2, 2, 2.0),
        _typed("U", 10, 3, 3, math.nan),
        _typed("U", 10, 4, 4, -0.0),
        _typed("D", 10, 5, 5, 5.0),
        _typed("I", 10, 30, 30, None),
    ]
    manifest = both.run(
        "t-2", _write(tmp_path / "2", "20261121-070000000.parquet", TYPED, second, True), driver=True
    )
    assert (manifest["rowsUpdated"], manifest["rowsUnchanged"], manifest["rowsDeleted"]) == (2, 2, 1)
    # NaN read again equals NaN; by the Spark path, a column added (files before it lack it) and v
    # widened to bigint in one run.
    extra = pa.schema([*TYPED, ("note", pa.string())])
    wide = pa.schema([f if f.name != "v" else pa.field("v", pa.int64()) for f in extra])
    third = [
        (*_typed("U", 20, 3, 3, math.nan), None),
        (*_typed("U", 20, 6, 6, 6.0), "new"),
        (*_typed("U", 20, 8, 8_000_000_000, 8.0), None),
    ]
    both.run("t-3", _write(tmp_path / "3", "20261121-070100000.parquet", wide, third, True), driver=False)
    # The driver then compares a row of the new column, and reads the older files' int: 9 and 10
    # are rows of the first run's file, read again unchanged.
    fourth = [
        (*_typed("U", 30, 7, 7, 7.0), "seven"),
        (*_typed("U", 30, 6, 6, 6.0), "new"),
        (*_typed("U", 30, 9, 9, 9.0), None),
        (*_typed("U", 30, 10, 10, 10.0), None),
    ]
    manifest = both.run(
        "t-4", _write(tmp_path / "4", "20261121-070200000.parquet", wide, fourth, True), driver=True
    )
    assert (manifest["rowsUpdated"], manifest["rowsUnchanged"]) == (1, 3)


KEYED = pa.schema(
    [("Op", pa.string()), ("dms_timestamp", pa.string()), ("id", pa.int64()), ("v", pa.int64())]
)


def _keyed(folder: Path, name: str, rows: list[tuple[str, int, int, int]]) -> Path:
    text = [
        (op, (BASE + timedelta(seconds=s)).strftime("%Y-%m-%d %H:%M:%S"), key, v) for op, s, key, v in rows
    ]
    write_dms_file(folder, name, KEYED, text)
    return folder


def test_both_paths_agree_on_tombstones_and_late_changes(spark: SparkSession, tmp_path: Path) -> None:
    both = BothPaths(spark, "both_memory")
    # A first load whose window holds a delete too: a key silver never held, remembered.
    loaded = _keyed(tmp_path / "1", "LOAD00000001.parquet", [("I", 0, k, k) for k in range(1, 11)])
    both.run("m-1", _keyed(loaded, "20261121-070000000.parquet", [("D", 1, 11, 11)]), True)
    # Deletes and a re-read, remembered; then older changes of the deleted keys arrive late.
    both.run(
        "m-2", _keyed(tmp_path / "2", "a.parquet", [("D", 10, 1, 1), ("D", 10, 2, 2), ("U", 0, 3, 3)]), True
    )
    late = [("U", 5, 1, 100), ("I", 5, 2, 200), ("D", 10, 1, 1), ("U", 0, 3, 3), ("U", 20, 4, 40)]
    manifest = both.run("m-3", _keyed(tmp_path / "3", "b.parquet", late), True)
    assert (manifest["rowsUnchanged"], manifest["rowsUpdated"]) == (3, 1)
    # Newer changes of the same keys (their entries move forward), and a delete again.
    newer = [("I", 30, 1, 1000), ("D", 30, 3, 3), ("D", 31, 2, 2)]
    both.run("m-4", _keyed(tmp_path / "4", "c.parquet", newer), True)


def test_both_paths_report_the_newest_cdc_change_time_and_leave_full_load_rows_out(
    spark: SparkSession, tmp_path: Path
) -> None:
    """``newestChangeTime`` is the latest commit time among the batch's CDC rows: a full-load row's
    time is when DMS transferred it (the replication instance's clock), here later than every change."""
    both = BothPaths(spark, "both_newest_change")
    loaded = both.run(
        "n-1", _keyed(tmp_path / "1", "LOAD00000001.parquet", [("I", 90, k, k) for k in range(1, 5)]), True
    )
    assert loaded["newestChangeTime"] is None
    folder = _keyed(tmp_path / "2", "LOAD00000001.parquet", [("I", 90, 5, 5)])
    _keyed(folder, "20261121-070000000.parquet", [("U", 20, 1, 10), ("D", 30, 2, 2), ("U", 10, 3, 30)])
    _keyed(folder, "20261121-070100000.parquet", [("U", 25, 4, 40)])
    changed = both.run("n-2", folder, True)
    assert changed["newestChangeTime"] == "2026-11-21 07:00:30"


DECIMAL_KEYED = pa.schema(
    [
        ("Op", pa.string()),
        ("dms_timestamp", pa.string()),
        ("id", pa.decimal128(10, 0)),
        ("v", pa.int64()),
    ]
)


def test_both_paths_agree_on_a_decimal_key_parquet_stores_as_a_long(
    spark: SparkSession, tmp_path: Path
) -> None:
    """Iceberg's writer stores a decimal(10,0) as INT64, whose row-group bounds pyarrow does not
    extract: the driver then tests every wanted key, and still lands the run itself."""

    def keyed(folder: Path, name: str, rows: list[tuple[str, int, int, int]]) -> Path:
        text = [
            (op, (BASE + timedelta(seconds=t)).strftime("%Y-%m-%d %H:%M:%S"), Decimal(key), v)
            for op, t, key, v in rows
        ]
        write_dms_file(folder, name, DECIMAL_KEYED, text)
        return folder

    both = BothPaths(spark, "both_decimal_key")
    both.run(
        "d-1", keyed(tmp_path / "1", "LOAD00000001.parquet", [("I", 0, k, k) for k in range(1, 11)]), True
    )
    manifest = both.run(
        "d-2",
        keyed(tmp_path / "2", "a.parquet", [("D", 10, 1, 1), ("U", 10, 3, 30), ("I", 10, 11, 11)]),
        True,
    )
    assert (manifest["rowsDeleted"], manifest["rowsUpdated"], manifest["rowsInserted"]) == (1, 1, 1)
    both.run("d-3", keyed(tmp_path / "3", "b.parquet", [("U", 5, 1, 100), ("U", 20, 11, 12)]), True)


def _live_delete_files(spark: SparkSession, table: str) -> dict[str, int]:
    rows = spark.table(f"{silver_table(table)}.delete_files").select("referenced_data_file").collect()
    counts: dict[str, int] = {}
    for row in rows:
        counts[row[0]] = counts.get(row[0], 0) + 1
    return counts


def test_a_data_file_keeps_at_most_four_delete_files_on_the_driver_too(
    spark: SparkSession, tmp_path: Path
) -> None:
    """The driver's runs, held to a dictionary replaying the changes; the Spark path is held to the
    same rule, against its own replay, in test_position_deletes.py (a data file keeps few delete
    files)."""
    table = "driver_deletes"
    oracle = {key: key for key in range(1, 41)}
    load_into_silver(
        spark, table, "d-0", _keyed(tmp_path / "0", "LOAD00000001.parquet", [("I", 0, k, k) for k in oracle])
    )
    most = []
    for run in range(1, 6):
        rows = [("U", run, run, -run), ("D", run, 20 + run, 0)]
        manifest = load_into_silver(spark, table, f"d-{run}", _keyed(tmp_path / str(run), "a.parquet", rows))
        oracle[run] = -run
        del oracle[20 + run]
        assert merge_path(spark, table, manifest["snapshotId"]) == "driver"
        assert (manifest["rowsUpdated"], manifest["rowsDeleted"], manifest["rowsInserted"]) == (1, 1, 0)
        assert {row["id"]: row["v"] for row in spark.table(silver_table(table)).collect()} == oracle, run
        most.append(max(_live_delete_files(spark, table).values()))
        assert most[-1] <= 4, most
    # Four runs fill the loaded files' room, the fifth passes it: its file takes over the others.
    assert most == [1, 2, 3, 4, 1], most


# --- the driver's one commit ---------------------------------------------------------------------


def _other_writer(spark: SparkSession, table: str, kind: str) -> Callable[[], None]:
    def write() -> None:
        if kind == "insert":
            row = (
                spark.table(silver_table(table))
                .where("id = 1")
                .withColumns({"id": F.lit(99), "v": F.lit(990)})
            )
            row.writeTo(silver_table(table)).append()
        elif kind == "delete":
            spark.sql(f"DELETE FROM {silver_table(table)} WHERE id = 8")  # noqa: S608
        else:
            spark.sql(
                f"CALL local.system.rewrite_data_files(table => 'silver.{table}', "
                "options => map('rewrite-all', 'true'))"
            ).collect()

    return write


@pytest.fixture(scope="module")
def eight_loaded(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> LoadedTable:
    """Keys 1 to 8 (values ten times the key), loaded once: the tests of a driver run that fails
    each start from this load (LoadedTable.restore)."""
    bronze = _keyed(
        tmp_path_factory.mktemp("eight"), "LOAD00000001.parquet", [("I", 0, k, k * 10) for k in range(1, 9)]
    )
    return LoadedTable.load(spark, "driver_eight", bronze)


@pytest.mark.parametrize(
    ("kind", "when"),
    [("insert", "noted"), ("delete", "noted"), ("insert", "labelled"), ("compaction", "labelled")],
)
def test_a_commit_by_another_writer_fails_a_driver_run_and_the_rerun_lands(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    eight_loaded: LoadedTable,
    kind: str,
    when: str,
) -> None:
    """Another writer commits after the run noted main (or after it labelled its changes): the
    run's one commit is refused (the validation the Spark path's commit makes), main keeps the
    other writer's commit only, and the rerun lands on top of it."""
    table = eight_loaded.restore()
    run_id = f"race_{kind}_{when}-2"
    second = _keyed(tmp_path / "2", "a.parquet", [("D", 10, 2, 0), ("U", 10, 5, 55), ("I", 10, 9, 90)])
    other = _other_writer(spark, table, kind)
    target = "branch_snapshot_id" if when == "noted" else "label_changes"
    real = getattr(driver_module, target)

    def then_other(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        other()
        return result

    monkeypatch.setattr(driver_module, target, then_other)
    with pytest.raises(Exception, match=r"[Cc]onflicting|[Mm]issing|[Cc]annot commit"):
        load_into_silver(spark, table, run_id, second)
    monkeypatch.undo()
    rows = {row["id"]: row["v"] for row in spark.table(silver_table(table)).collect()}
    before = {k: k * 10 for k in range(1, 9)}
    if kind == "insert":
        before[99] = 990
    if kind == "delete":
        del before[8]
    assert rows == before
    manifest = load_into_silver(spark, table, run_id, second)
    assert merge_path(spark, table, manifest["snapshotId"]) == "driver"
    after = {**before, 5: 55, 9: 90}
    del after[2]
    assert {row["id"]: row["v"] for row in spark.table(silver_table(table)).collect()} == after


@pytest.fixture(scope="module")
def one_row_table(spark: SparkSession, tmp_path_factory: pytest.TempPathFactory) -> str:
    """A table loaded with key 1, for the tests of which path a run takes: the refused run leaves
    it as it was, so either test may come first."""
    table = "driver_one_row"
    bronze = _keyed(tmp_path_factory.mktemp("one_row"), "LOAD00000001.parquet", [("I", 0, 1, 1)])
    load_into_silver(spark, table, "o-1", bronze)
    return table


def test_a_batch_a_check_refuses_is_named_by_the_spark_path(
    spark: SparkSession, tmp_path: Path, one_row_table: str
) -> None:
    table = one_row_table
    before = iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId()
    write_dms_file(tmp_path / "2", "a.parquet", KEYED, [("X", "2026-11-21 07:00:00", 1, 2)])
    with pytest.raises(InvalidChangeData, match="an Op other than I, U or D"):
        load_into_silver(spark, table, "x-2", tmp_path / "2")
    assert iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId() == before


def test_a_batch_over_the_driver_s_limit_is_merged_by_spark(
    spark: SparkSession, tmp_path: Path, one_row_table: str
) -> None:
    table = one_row_table
    rows = [("U", 10, 1, 2), ("I", 10, 2, 2), ("I", 10, 3, 3)]
    manifest = load_into_silver(
        spark, table, "l-2", _keyed(tmp_path / "2", "a.parquet", rows), driver_merge_max_changes=2
    )
    assert merge_path(spark, table, manifest["snapshotId"]) == "spark"
    manifest = load_into_silver(
        spark,
        table,
        "l-3",
        _keyed(tmp_path / "3", "a.parquet", [("U", 20, 1, 5)]),
        driver_merge_max_changes=2,
    )
    assert merge_path(spark, table, manifest["snapshotId"]) == "driver"


def test_a_silver_row_stored_without_its_values_hash_leaves_the_run_to_spark_which_fills_it(
    spark: SparkSession, tmp_path: Path
) -> None:
    # The driver compares stored hashes, as the Spark path does; a row without one (an earlier
    # icetide's) would read as changed, so the run goes to the Spark path, which fills it first.
    table = "driver_unhashed"
    load_into_silver(
        spark, table, "u-1", _keyed(tmp_path / "1", "a.parquet", [("I", 0, 1, 1), ("I", 0, 2, 2)])
    )
    spark.sql(f"UPDATE {silver_table(table)} SET {VALUES_HASH} = NULL WHERE id = 1")  # noqa: S608
    changes = _keyed(tmp_path / "2", "a.parquet", [("U", 10, 1, 1), ("U", 10, 2, 3)])
    before = iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId()
    with pytest.raises(
        InvalidJobArguments, match="cannot merge this run: a silver row stored without its values"
    ):
        load_into_silver(spark, table, "u-2", changes, merge_plan="driver")
    assert iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId() == before
    manifest = load_into_silver(spark, table, "u-2", changes)
    assert merge_path(spark, table, manifest["snapshotId"]) == "spark"
    assert (manifest["rowsUnchanged"], manifest["rowsUpdated"]) == (1, 1)
    # Every row stores its hash now: the next run is the driver's again, and finds key 1 unchanged.
    again = load_into_silver(
        spark, table, "u-3", _keyed(tmp_path / "3", "a.parquet", [("U", 20, 1, 1), ("U", 20, 2, 4)])
    )
    assert merge_path(spark, table, again["snapshotId"]) == "driver"
    assert (again["rowsUnchanged"], again["rowsUpdated"]) == (1, 1)


class _Injected(RuntimeError):
    pass


def _fails(what: str) -> Callable[..., Any]:
    def fail(*_: Any, **__: Any) -> Any:
        raise _Injected(what)

    return fail


@pytest.mark.parametrize(
    "failing",
    [
        ("_data_files",),
        ("write_position_deletes",),
        ("_data_files", "write_position_deletes"),
        ("_read_tombstones",),
    ],
)
def test_a_failure_beside_the_run_s_own_work_leaves_silver_as_it_was_and_the_rerun_lands(
    spark: SparkSession,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    eight_loaded: LoadedTable,
    failing: tuple[str, ...],
) -> None:
    """Silver's data file is written in a second thread while the delete files and the tombstones
    are, and the tombstone table is read while silver is (icetide_glue.beside): a failure on
    either side fails the run with its own error, silver keeps its snapshot, and when both fail
    the other error is logged. The rerun lands as if nothing had happened."""
    table = eight_loaded.restore()
    run_id = "beside_" + "_".join(name.strip("_") for name in failing) + "-2"
    before = iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId()
    second = _keyed(tmp_path / "2", "a.parquet", [("D", 10, 2, 0), ("U", 10, 5, 55), ("I", 10, 9, 90)])
    for name in failing:
        monkeypatch.setattr(driver_module, name, _fails(f"{name} was injected to fail"))
    with pytest.raises(_Injected, match=f"{failing[-1]} was injected to fail"):
        load_into_silver(spark, table, run_id, second)
    if len(failing) == 2:
        assert f"{failing[0]} was injected to fail" in caplog.text
        assert "silver's data file failed too" in caplog.text
    else:
        assert "failed too" not in caplog.text
    monkeypatch.undo()
    assert iceberg_table(spark, silver_table(table), refreshed=True).currentSnapshot().snapshotId() == before
    assert {row["id"]: row["v"] for row in spark.table(silver_table(table)).collect()} == {
        k: k * 10 for k in range(1, 9)
    }
    manifest = load_into_silver(spark, table, run_id, second)
    assert merge_path(spark, table, manifest["snapshotId"]) == "driver"
    assert (manifest["rowsInserted"], manifest["rowsUpdated"], manifest["rowsDeleted"]) == (1, 1, 1)
    assert {row["id"]: row["v"] for row in spark.table(silver_table(table)).collect()} == {
        1: 10,
        3: 30,
        4: 40,
        5: 55,
        6: 60,
        7: 70,
        8: 80,
        9: 90,
    }
    # The failed run may have committed its tombstones before its other writes failed; the rerun
    # remembers the delete once, not twice.
    memory = spark.table(silver_table(f"{table}__icetide_tombstones")).select("id", "_icetide_op")
    assert sorted(tuple(row) for row in memory.collect()) == [(2, "D")]
