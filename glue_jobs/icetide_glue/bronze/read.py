"""Reading one run's bronze files: the parquet DMS wrote below the run's folder, or exactly the files
a continuous run's bronze file selection lists (:mod:`icetide_glue.bronze.selection`).

DMS names full-load files ``LOAD00000001.parquet`` … counting in hexadecimal (``LOAD00000009`` comes
before ``LOAD0000000A``) and CDC files by time (``yyyyMMdd-HHmmssSSS``). When two changes to one key
share a commit time and sequence, the later file and the later row in it win, so every row carries
a file rank that sorts files in the order DMS wrote them, and its position in the file.

A file Spark cannot read (truncated, corrupt, CSV under a ``.parquet`` name) fails the run with
:class:`UnreadableBronzeFile` naming the file, never with Spark's stack trace: the footers are all
read when the files are opened (schemas are merged), the pages at the batch's first action
(:func:`translate_unreadable_file`). The file's path is taken from Spark's own error chain, which
works for ``s3://`` on Glue as for a local folder.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from py4j.protocol import Py4JJavaError
from pyspark.errors import AnalysisException, PySparkException
from pyspark.sql import Column, DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import DataType, IntegerType, StructType, _parse_datatype_string

from icetide_glue.columns import CDC_PHASE, FILE_RANK, FULL_LOAD_PHASE, ROW_INDEX, is_metadata_column
from icetide_glue.errors import (
    BronzeSchemaError,
    MissingBronzeFile,
    NoParquetInBronze,
    UnreadableBronzeFile,
)

# DMS writes no folder for a table without rows: an absent or empty run folder is an empty batch.
_NO_FILES_ERRORS = frozenset({"PATH_NOT_FOUND", "UNABLE_TO_INFER_SCHEMA"})
_LOAD_FILE = r"^LOAD([0-9A-Fa-f]+)"
# Spark 3.5 cannot merge parquet schemas whose column types differ (even int and bigint).
_MERGE_FAILURE = re.compile(
    r'Initial schema:\s*"(?P<initial>.*?)"\s*'
    r'Schema that cannot be merged with the initial schema:\s*"(?P<other>.*?)"',
    re.DOTALL,
)
# Where Spark 3.5 names the file it could not read (a footer at open, a page at an action); a
# RuntimeException from parquet-mr starts with the path itself.
_UNREADABLE_FILE = (
    re.compile(r"Could not read footer for file: (?P<path>\S.*?)\.(?=\s|$)"),
    re.compile(r"Encountered error while reading file (?P<path>\S.*?)\.(?=\s|$)"),
    re.compile(r"^(?P<path>\S.*?) is not a Parquet file"),
)
# A Java cause chain is short; the bound only guards against a cycle.
_MAX_CAUSES = 20
# How many of the files found in a folder without parquet an error message names.
_EXAMPLE_FILES = 3
# 2**64 has 20 decimal digits: enough to left-pad any LOAD number so strings sort as numbers.
_LOAD_NUMBER_DIGITS = 20


def file_rank(file_name: Column) -> Column:
    """A string that sorts bronze files in write order: its first character the file's phase
    (:func:`rank_phase`), then full-load files by their hexadecimal number, every other file (CDC
    files, named by time) by name."""
    load_number = F.regexp_extract(file_name, _LOAD_FILE, 1)
    return F.when(
        load_number != "",
        F.concat(F.lit(str(FULL_LOAD_PHASE)), F.lpad(F.conv(load_number, 16, 10), _LOAD_NUMBER_DIGITS, "0")),
    ).otherwise(F.concat(F.lit(str(CDC_PHASE)), file_name))


def rank_phase(rank: Column) -> Column:
    """The phase of a file rank's file: FULL_LOAD_PHASE for DMS's LOAD files (their rows carry
    DMS's transfer time), CDC_PHASE for every other (their rows carry the source's commit time)."""
    return F.substring(rank, 1, 1).cast(IntegerType())


def read_bronze(spark: SparkSession, uri: str) -> DataFrame | None:
    """Every parquet file below ``uri`` (any depth), or None when there is none.

    Files of one run may differ in columns (an Op column only in CDC files, a column added
    mid-run), so their schemas are merged; columns a file lacks read as null.
    """
    frame = _read_parquet(spark, [uri], uri, listed=False)
    if frame is None:
        _refuse_files_without_parquet(spark, uri)
    return frame


def read_bronze_files(spark: SparkSession, uris: Sequence[str], where: str) -> DataFrame | None:
    """Exactly the parquet files ``uris`` (schemas merged as in :func:`read_bronze`), or None when
    the list is empty; ``where`` says in errors where the list comes from. A listed file that is
    gone fails with :class:`MissingBronzeFile`, never silently as a smaller batch."""
    if not uris:
        return None
    return _read_parquet(spark, uris, where, listed=True)


def _read_parquet(spark: SparkSession, paths: Sequence[str], where: str, *, listed: bool) -> DataFrame | None:
    """The parquet of ``paths`` (folders read at any depth, or files) as one batch, each row with its
    file rank and position in the file; None when a folder holds no parquet file."""
    try:
        frame = (
            # Also for listed files: it turns off partition discovery from the folder names.
            spark.read.option("recursiveFileLookup", "true")
            .option("pathGlobFilter", "*.parquet")
            .option("mergeSchema", "true")
            .parquet(*paths)
        )
    except AnalysisException as error:
        error_class = error.getErrorClass()
        if not listed and error_class in _NO_FILES_ERRORS:
            return None
        if error_class == "PATH_NOT_FOUND":
            path = (error.getMessageParameters() or {}).get("path") or " ".join(str(error).split())
            raise MissingBronzeFile(
                f"bronze file {path} is missing: {where} lists it, but it was deleted (or expired by the "
                "bronze lifecycle rule) since; nothing was merged"
            ) from None
        if error_class == "COLUMN_ALREADY_EXISTS":
            raise BronzeSchemaError(
                f"bronze files in {where} have columns whose names differ only in case "
                f"({' '.join(str(error).split())[:300]}): silver's catalog does not tell them apart; "
                "rename one in the DMS table mapping"
            ) from None
        raise
    except Py4JJavaError as error:
        unreadable = unreadable_file_error(error)
        if unreadable is not None:
            raise unreadable from None
        if "CANNOT_MERGE_SCHEMAS" in str(error):
            raise BronzeSchemaError(
                f"the parquet files in {where} disagree on column types ({_type_conflicts(str(error))}), so "
                "they cannot be read as one batch: the source changed a column's type during this run. The "
                "next run, whose files all carry the new type, loads it (and widens silver if that is safe)."
            ) from None
        raise
    if any(name.lower() == "_metadata" for name in frame.columns):
        raise BronzeSchemaError(
            f"bronze files in {where} have a column named _metadata, which Spark reserves for its file "
            "metadata; rename it in the DMS table mapping"
        )
    reserved = [name for name in frame.columns if is_metadata_column(name)]
    if reserved:
        raise BronzeSchemaError(
            f"bronze files in {where} have column(s) {', '.join(reserved)}: the _icetide_ prefix is "
            "reserved for icetide's metadata columns; rename them in the DMS table mapping"
        )
    # _metadata is Spark's hidden file-source column; it only exists on the DataFrame read here.
    return frame.select(
        "*",
        file_rank(F.col("_metadata.file_name")).alias(FILE_RANK),
        F.col("_metadata.row_index").alias(ROW_INDEX),
    )


def _refuse_files_without_parquet(spark: SparkSession, uri: str) -> None:
    """An endpoint that writes CSV leaves files but no parquet: that is a misconfiguration to fix,
    not an empty run (which would commit nothing and let the next run read past the rows)."""
    files = _visible_files(spark, uri)
    if files:
        listed = ", ".join(files[:_EXAMPLE_FILES])
        raise NoParquetInBronze(
            f"{uri} holds file(s) but no .parquet file (e.g. {listed}): the DMS S3 endpoint must write "
            "parquet (DataFormat=parquet); nothing was loaded"
        )


def _visible_files(spark: SparkSession, uri: str) -> list[str]:
    """Names of the files below ``uri`` Spark would read, through Hadoop's file system (the one
    Spark uses, so s3:// on Glue and local paths alike); hidden ones (``_SUCCESS``, ``.crc``) are
    skipped as Spark skips them. At most ``_EXAMPLE_FILES`` + 1 names: only examples are needed."""
    file_system, root = hadoop_path(spark, uri)
    if not file_system.exists(root):
        return []
    root_text = file_system.makeQualified(root).toString().rstrip("/")
    found: list[str] = []
    listing = file_system.listFiles(root, True)
    while listing.hasNext() and len(found) <= _EXAMPLE_FILES:
        path = listing.next().getPath().toString()
        relative = path[len(root_text) :].strip("/") if path.startswith(root_text) else path
        if not any(part.startswith(("_", ".")) for part in relative.split("/")):
            found.append(relative)
    return found


def hadoop_path(spark: SparkSession, uri: str) -> tuple[Any, Any]:
    """The Hadoop file system and path of ``uri``: the ones Spark reads through (``s3://`` on Glue,
    a local path or ``file://`` locally), as py4j objects."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    path = jvm.org.apache.hadoop.fs.Path(uri)
    return path.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration()), path


def unreadable_file_error(error: Exception) -> UnreadableBronzeFile | None:
    """The :class:`UnreadableBronzeFile` a Spark failure amounts to, or None when it is not about
    reading a bronze file."""
    return unreadable_file_in(_error_chain(error))


def unreadable_file_in(messages: Sequence[str]) -> UnreadableBronzeFile | None:
    """From the messages of a Java exception and its causes (outermost first): the file Spark
    could not read and why, as one line. Outer messages quote inner ones, so the deepest message
    naming a file is used; the reason is the message just below it (a page decoding error), or
    its own text (parquet-mr's "… is not a Parquet file. Expected magic number at tail …")."""
    for index in reversed(range(len(messages))):
        found = next(
            (match for pattern in _UNREADABLE_FILE if (match := pattern.search(messages[index]))), None
        )
        if found is None:
            continue
        path = found["path"]
        causes = [cause for cause in messages[index + 1 :] if cause.strip()]
        reason = (causes[0] if causes else messages[index]).removeprefix(path).strip(" .:")
        what = reason if reason.startswith("is not") else f"cannot be read as parquet: {reason}"
        return UnreadableBronzeFile(
            f"bronze file {path} {what}; it is truncated or corrupt, or not parquet at all (an endpoint "
            "writing CSV?): replace or remove it, then rerun"
        )
    return None


def _error_chain(error: Exception) -> list[str]:
    """The messages of the Java exception behind a PySpark error and of each of its causes."""
    throwable = getattr(error, "java_exception", None)  # Py4JJavaError
    if throwable is None and isinstance(error, PySparkException):
        throwable = getattr(error, "_origin", None)  # a PySpark-converted exception keeps its origin
    messages: list[str] = []
    while throwable is not None and len(messages) < _MAX_CAUSES:
        messages.append(str(throwable.getMessage() or ""))
        throwable = throwable.getCause()
    return messages or [str(error)]


@contextmanager
def translate_unreadable_file() -> Iterator[None]:
    """Around an action on bronze rows: a file Spark cannot read becomes :class:`UnreadableBronzeFile`
    (without Spark's stack trace), any other failure passes through unchanged."""
    try:
        yield
    except (Py4JJavaError, PySparkException) as error:
        unreadable = unreadable_file_error(error)
        if unreadable is None:
            raise
        raise unreadable from None


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
