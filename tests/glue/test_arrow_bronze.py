"""The driver path's own reading of a bronze folder (icetide_glue.driver.bronze) held to Spark's
reader (icetide_glue.bronze.read.read_bronze) on seeded random folders: the same files listed, the
same merged schema, or NotEligible where the two might differ (the Spark path then reads it)."""

from __future__ import annotations

import random
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from pyspark.sql import SparkSession

from icetide_glue.bronze.read import read_bronze
from icetide_glue.columns import FILE_RANK, ROW_INDEX
from icetide_glue.driver.arrow_types import NotEligible
from icetide_glue.driver.bronze import listed_bronze_files, merged_bronze_schema
from icetide_glue.driver.files import local_path

# Column name -> the Arrow types a file may give it (Spark merges equal types only).
_COLUMNS: dict[str, list[pa.DataType]] = {
    "Op": [pa.string()],
    "dms_timestamp": [pa.string(), pa.timestamp("us", tz="UTC")],
    "id": [pa.int64(), pa.int32()],
    "name": [pa.string(), pa.large_string(), pa.binary()],
    "amount": [pa.decimal128(10, 2), pa.float64()],
    "day": [pa.date32()],
    "at": [pa.timestamp("us"), pa.timestamp("ms", tz="UTC")],
}


def _random_folder(rng: random.Random, root: Path) -> None:
    """1-4 Parquet files at several depths (columns and order drawn per file, one type per column
    per folder unless ``mixed``), plus files Spark skips: markers, checksums, text."""
    types = {name: rng.choice(choices) for name, choices in _COLUMNS.items()}
    for index in range(rng.randint(1, 4)):
        folder = root.joinpath(*rng.choice([[], ["dbo", "t"], ["dbo", "t", "2026", "12"]]))
        folder.mkdir(parents=True, exist_ok=True)
        names = rng.sample(list(_COLUMNS), rng.randint(1, len(_COLUMNS)))
        if rng.random() < 0.1:  # a type change mid-run: Spark cannot merge the two
            types[names[0]] = rng.choice(_COLUMNS[names[0]])
        table = pa.table({name: pa.nulls(3, types[name]) for name in names})
        pq.write_table(table, folder / f"2026120{index}-000000000.parquet")
    (root / "_SUCCESS").write_text("")
    (root / ".part.parquet.crc").write_bytes(b"\0")
    (root / "notes.csv").write_text("a,b\n")


@pytest.mark.spark
@pytest.mark.parametrize("seed", range(16))
def test_the_driver_lists_and_types_a_folder_as_spark_does(
    spark: SparkSession, tmp_path: Path, seed: int
) -> None:
    rng = random.Random(seed)
    _random_folder(rng, tmp_path)
    try:
        files = listed_bronze_files(str(tmp_path))
        schema = merged_bronze_schema(files)
    except NotEligible:
        files, schema = [], None
    try:
        bronze = read_bronze(spark, str(tmp_path))
    except Exception:  # Spark refuses the folder (types that do not merge): the driver must too
        assert schema is None
        return
    assert bronze is not None
    assert sorted(local_path(path) for path in bronze.inputFiles()) == files
    spark_fields = [
        (f.name, f.dataType) for f in bronze.schema.fields if f.name not in (FILE_RANK, ROW_INDEX)
    ]
    assert schema is not None
    assert [(f.name, f.dataType) for f in schema.fields] == spark_fields


@pytest.mark.spark
def test_int96_times_read_as_spark_reads_them(spark: SparkSession, tmp_path: Path) -> None:
    table = pa.table({"id": [1], "at": pa.array([1_000_000], pa.timestamp("us"))})
    pq.write_table(table, tmp_path / "a.parquet", use_deprecated_int96_timestamps=True)
    bronze = read_bronze(spark, str(tmp_path))
    assert bronze is not None
    schema = merged_bronze_schema(listed_bronze_files(str(tmp_path)))
    expected = [(f.name, f.dataType) for f in bronze.schema.fields if f.name not in (FILE_RANK, ROW_INDEX)]
    assert [(f.name, f.dataType) for f in schema.fields] == expected


def test_what_spark_reads_otherwise_or_not_at_all_is_left_to_it(tmp_path: Path) -> None:
    hidden = tmp_path / "_tmp"
    hidden.mkdir()
    pq.write_table(pa.table({"id": [1]}), hidden / "a.parquet")
    with pytest.raises(NotEligible, match="hidden"):
        listed_bronze_files(str(tmp_path))
    with pytest.raises(NotEligible, match="no Parquet file"):
        listed_bronze_files(str(tmp_path / "missing"))
    cases = {
        "nanos": pa.table({"t": pa.array([1], pa.timestamp("ns"))}),
        "unsigned": pa.table({"n": pa.array([1], pa.uint32())}),
        "nested": pa.table({"s": pa.array([{"a": 1}])}),
        "reserved": pa.table({"_icetide_op": ["I"]}),
        "case": pa.table({"ID": [1], "id": [2]}),
        "twice": pa.table([pa.array([1]), pa.array([2])], names=["id", "id"]),
        # pyarrow reads a JSON column (an ENUM one too) otherwise than Spark's string.
        "json": pa.table({"j": pa.array(["{}"], pa.json_(pa.string()))}),
    }
    for name, table in cases.items():
        pq.write_table(
            table, tmp_path / f"{name}.parquet", coerce_timestamps=None, allow_truncated_timestamps=False
        )
        with pytest.raises(NotEligible):
            merged_bronze_schema([str(tmp_path / f"{name}.parquet")])
    (tmp_path / "broken.parquet").write_bytes(b"PAR1 not really")
    with pytest.raises(NotEligible, match="footer"):
        merged_bronze_schema([str(tmp_path / "broken.parquet")])
