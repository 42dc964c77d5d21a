"""Reading one run's bronze files: the parquet DMS wrote below the run's folder.

DMS names full-load files ``LOAD00000001.parquet`` … counting in hexadecimal (``LOAD00000009`` comes
before ``LOAD0000000A``) and CDC files by time (``yyyyMMdd-HHmmssSSS``). When two changes to one key
share a commit time and sequence, the later file and the later row in it win, so every row carries
a file rank that sorts files in the order DMS wrote them, and its position in the file.
"""

from __future__ import annotations

import re

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, StructType, _parse_datatype_string

from icetide_glue.columns import FILE_RANK, ROW_INDEX, is_metadata_column
from icetide_glue.errors import BronzeSchemaError

# DMS writes no folder for a table without rows: an absent or empty run folder is an empty batch.
_NO_FILES_ERRORS = frozenset({"PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"})
_LOAD_FILE = r"^LOAD([0-9A-Fa-f]+)"
# Spark 3.5 cannot merge parquet schemas whose column types differ (even int and bigint).
_MERGE_FAILURE = re.compile(
    r'Initial schema:\s*"(?P<initial>.*?)"\s*'
    r'Schema that cannot be merged with the initial schema:\s*"(?P<other>.*?)"',
    re.DOTALL,
)
# 2**64 has 20 decimal digits: enough to left-pad any LOAD number so strings sort as numbers.
_LOAD_NUMBER_DIGITS = 20


def file_rank(file_name: Column) -> Column:
    """A string that sorts bronze files in write order: full-load files by their hexadecimal
    number, then every other file (CDC files, named by time) by name."""
    load_number = F.regexp_extract(file_name, _LOAD_FILE, 1)
    return F.when(
        load_number != "",
        F.concat(F.lit("0"), F.lpad(F.conv(load_number, 16, 10), _LOAD_NUMBER_DIGITS, "0")),
    ).otherwise(F.concat(F.lit("1"), file_name))


def read_bronze(spark: SparkSession, uri: str) -> DataFrame | None:
    """Every parquet file below ``uri`` (any depth), or None when there is none.

    Files of one run may differ in columns (an Op column only in CDC files, a column added
    mid-run), so their schemas are merged; columns a file lacks read as null.
    """
    try:
        frame = (
            spark.read.option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.parquet")
            .option("mergeSchema", "true")
            .parquet(uri)
        )
    except AnalysisException as error:
        if error.getErrorClass() in _NO_FILES_ERRORS:
            return None
        raise
    except Py4JJavaError as error:
        if "CANNOT_MERGE_SCHEMAS" in str(error):
            raise BronzeSchemaError(
                f"the parquet files below {uri} disagree on column types ({_type_conflicts(str(error))}), so "
                "they cannot be read as one batch: the source changed a column's type during this run. The "
                "next run, whose files all carry the new type, loads it (and widens silver if that is safe)."
            ) from None
        raise
    reserved = [name for name in frame.columns if is_metadata_column(name)]
    if reserved:
        raise BronzeSchemaError(
            f"bronze files in {uri} have column(s) {', '.join(reserved)}: the _icetide_ prefix is "
            "reserved for icetide's metadata columns; rename them in the DMS table mapping"
        )
    # _metadata is Spark's hidden file-source column; it only exists on the DataFrame read here.
    return frame.select(
        "*",
        file_rank(F.col("_metadata.file_name")).alias(FILE_RANK),
        F.col("_metadata.row_index").alias(ROW_INDEX),
    )


def _type_conflicts(spark_message: str) -> str:
    """Name the columns whose types differ between two of a run's files, from Spark's message."""
    found = _MERGE_FAILURE.search(spark_message)
    if found is None:
        return "Spark could not merge their schemas"
    raw = f"{found['initial']} vs {found['other']}"
    try:
        initial, other = (_parse_datatype_string(found[group]) for group in ("initial", "other"))
    except Exception:  # an unparseable schema still leaves Spark's own text to show
        return raw
    if not (isinstance(initial, StructType) and isinstance(other, StructType)):
        return raw
    other_types: dict[str, DataType] = {f.name.lower(): f.dataType for f in other.fields}
    conflicts = [
        f"column {f.name}: {f.dataType.simpleString()} in one file, "
        f"{other_types[f.name.lower()].simpleString()} in another"
        for f in initial.fields
        if f.name.lower() in other_types and other_types[f.name.lower()] != f.dataType
    ]
    return "; ".join(conflicts) or raw
