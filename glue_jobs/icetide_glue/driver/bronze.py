"""A run's bronze folder as the driver path finds it without Spark: the Parquet files Spark's
reader lists there (:func:`icetide_glue.bronze.read.read_bronze`) and the schema Spark merges from
their footers.

Why: Spark opens a folder by listing it and running a job that reads every footer for the merged
schema, and the driver path needs only those two answers (a Spark job is a noticeable share of
a small merge on the driver, docs/benchmarks/merge-cost.md). pyarrow reads the same footers here.

Only what both read alike is answered here. A folder with nothing to read, a hidden file or
folder that holds Parquet (Spark's rules for those have exceptions), a footer pyarrow cannot
read, a type Spark reads otherwise or refuses (nanosecond times, unsigned or nested columns),
names that clash or that Spark or icetide reserve, and columns whose types differ between files
are :class:`~icetide_glue.driver.arrow_types.NotEligible`: the run takes the Spark path, which reads the
folder itself and names what is wrong with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pyarrow as pa
import pyarrow.parquet as pq
from pyarrow import fs
from pyspark.sql.types import StructField, StructType

from icetide_contracts.bronze_files import is_full_load_file
from icetide_glue.changes.row_count import BronzeRows
from icetide_glue.columns import is_metadata_column
from icetide_glue.driver.arrow_types import NotEligible, spark_type_of
from icetide_glue.driver.files import file_system, open_input

PARQUET_SUFFIX = ".parquet"
# Byte columns pyarrow and Spark type alike only when plain, text or decimal.
_BYTES = ("BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY")
_READ_ALIKE = ("NONE", "STRING", "DECIMAL")
# Spark's file-source column, which a bronze column must not shadow (icetide_glue.bronze.read).
_SPARK_METADATA = "_metadata"


def listed_bronze_files(uri: str) -> list[str]:
    """The Parquet files below ``uri`` (any depth) that Spark's reader lists there, sorted."""
    try:
        system, root = file_system(uri)
        found = system.get_file_info(fs.FileSelector(root, recursive=True, allow_not_found=True))
    except (OSError, pa.ArrowException) as error:
        raise NotEligible(f"the bronze folder cannot be listed here: {error}") from None
    prefix = uri.split("://", 1)[0] + "://" if "://" in uri and system.type_name != "local" else ""
    files = []
    for info in found:
        if info.type != fs.FileType.File or not info.base_name.endswith(PARQUET_SUFFIX):
            continue
        relative = info.path[len(root) :].strip("/")
        if any(part.startswith(("_", ".")) or part.endswith("._COPYING_") for part in relative.split("/")):
            raise NotEligible(f"a hidden Parquet file or folder in bronze ({relative})")
        files.append(prefix + info.path)
    if not files:
        raise NotEligible("no Parquet file in the bronze folder")
    return sorted(files)


def merged_bronze_schema(files: Sequence[str]) -> StructType:
    """The schema Spark merges from the footers of ``files``: each file's columns in order, a
    column first seen in a later file after them."""
    merged: dict[str, StructField] = {}
    for path in files:
        for field in _file_fields(path):
            known = merged.get(field.name)
            if known is None:
                merged[field.name] = field
            elif known.dataType != field.dataType:
                raise NotEligible(f"bronze column {field.name}'s type differs between files")
    fields = list(merged.values())
    lowered = {field.name.lower() for field in fields}
    if len(lowered) != len(fields):
        raise NotEligible("bronze columns whose names differ only in case")
    if _SPARK_METADATA in lowered or any(is_metadata_column(field.name) for field in fields):
        raise NotEligible("a bronze column with a reserved name")
    return StructType(fields)


def _file_fields(path: str) -> list[StructField]:
    try:
        with open_input(path) as source:
            parquet = pq.ParquetFile(source, coerce_int96_timestamp_unit="us")
            columns = parquet.schema
            arrow = parquet.schema_arrow
    except (OSError, pa.ArrowException) as error:
        raise NotEligible(f"bronze file {path}'s footer: {error}") from None
    if len(columns) != len(arrow):
        raise NotEligible(f"bronze file {path} has nested columns")
    if len({name.lower() for name in arrow.names}) != len(arrow.names):
        raise NotEligible(f"bronze file {path} has columns whose names differ only in case, or repeat")
    fields = []
    for index, field in enumerate(arrow):
        column = columns.column(index)
        int96 = column.physical_type == "INT96"
        if column.physical_type in _BYTES and column.logical_type.type not in _READ_ALIKE:
            # pyarrow reads an ENUM (and, before 19, a JSON) column as binary; Spark as a string.
            raise NotEligible(f"bronze column {field.name} is annotated {column.logical_type.type}")
        if pa.types.is_timestamp(field.type) and field.type.unit == "ns" and not int96:
            raise NotEligible(f"bronze column {field.name} holds nanoseconds, which Spark does not read")
        spark_type = spark_type_of(field.type, int96)
        if spark_type is None:
            raise NotEligible(f"bronze column {field.name} is {field.type}, which the driver does not read")
        fields.append(StructField(field.name, spark_type, nullable=True))
    return fields


__all__ = ["listed_bronze_files", "merged_bronze_schema"]


def arrow_bronze_rows(paths: Iterable[str]) -> BronzeRows:
    """The rows of the bronze files at ``paths`` (the driver merge's listing), from their footers."""
    full_load = change = files = 0
    for path in paths:
        files += 1
        with open_input(path) as source:
            rows = pq.read_metadata(source).num_rows
        if is_full_load_file(path.rsplit("/", 1)[-1]):
            full_load += rows
        else:
            change += rows
    return BronzeRows(full_load, change, files)
