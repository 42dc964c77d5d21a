"""The files of a continuous cdc run: its bronze file selection (``--bronze_files_uri``).

A continuous table's long-lived DMS task writes into one fixed folder all the time, so its run
cannot read "the folder": it merges exactly the files its selection lists
(:class:`icetide_contracts.bronze_files.BronzeFiles`, written by the state machine before the job),
and the run's commit records the last of them as the table's file checkpoint. A selection of
another run or of another folder is refused before anything is read: its files are not the ones
that checkpoint will say this run merged.

The selection is read through Hadoop's file system, the one Spark reads the files with (``s3://``
on Glue, a path or ``file://`` locally).
"""

from __future__ import annotations

from py4j.protocol import Py4JJavaError
from pyspark.sql import DataFrame, SparkSession

from icetide_contracts.bronze_files import BronzeFiles
from icetide_contracts.json_fields import ContractViolation
from icetide_glue.bronze.read import hadoop_path, read_bronze_files
from icetide_glue.errors import BronzeFileSelectionMismatch, InvalidBronzeFileSelection, one_line


def read_selected_bronze(
    spark: SparkSession, selection_uri: str, run_id: str, bronze_uri: str, bronze_copy: str | None = None
) -> DataFrame | None:
    """The files the selection at ``selection_uri`` lists, as :func:`icetide_glue.bronze.read.read_bronze`
    reads a folder's (None: the selection is empty), once it is known to be run ``run_id``'s
    selection of files below ``bronze_uri``.

    ``bronze_copy``: where a local run reads them, a local folder holding them at their keys (Spark
    there has no S3); None reads them below the selection's ``bronzeUri``.
    """
    selection = read_selection(spark, selection_uri)
    check_selection(selection, selection_uri, run_id, bronze_uri)
    if bronze_copy is None:
        uris = selection.uris
    else:
        uris = [f"{bronze_copy.rstrip('/')}/{key}" for key in selection.files]
    return read_bronze_files(spark, uris, f"the bronze file selection {selection_uri}")


def read_selection(spark: SparkSession, uri: str) -> BronzeFiles:
    """The selection at ``uri``; :class:`InvalidBronzeFileSelection` when it cannot be read or
    breaks its contract."""
    try:
        file_system, path = hadoop_path(spark, uri)
        stream = file_system.open(path)
        try:
            content = bytes(stream.readAllBytes())
        finally:
            stream.close()
    except Py4JJavaError as error:
        reason = one_line(error.java_exception)
        raise InvalidBronzeFileSelection(f"cannot read the bronze file selection {uri}: {reason}") from None
    return selection_from_text(content, uri)


def selection_from_text(content: str | bytes, uri: str) -> BronzeFiles:
    """The selection from its text (read from ``uri``), through its contract."""
    try:
        return BronzeFiles.from_text(content)
    except ContractViolation as violation:
        raise InvalidBronzeFileSelection(f"{uri}: {violation}") from None


def check_selection(selection: BronzeFiles, selection_uri: str, run_id: str, bronze_uri: str) -> None:
    """Refuse, with :class:`BronzeFileSelectionMismatch`, a selection that is not run ``run_id``'s
    selection of files below ``bronze_uri`` (a trailing ``/`` aside)."""
    problems = selection.not_for(run_id, bronze_uri)
    if problems:
        raise BronzeFileSelectionMismatch(
            f"the bronze file selection {selection_uri} is not this run's: {'; '.join(problems)}. "
            "Nothing was merged: each run merges the files its own selection lists"
        )
