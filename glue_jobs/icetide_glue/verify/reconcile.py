"""A reconcile run: silver keys the source no longer holds become deletes of this run.

Filtered delta loads cannot see deletes. Every ``reconcileEveryHours`` the run also extracts the
source's key columns (a key-only full-load task, ``--reconcile_uri``), and the job deletes the
keys that are live in silver after this run's changes, were last changed at or before the
extraction started (``--reconcile_started_at``), and are absent from it. A key changed after the
start may have been inserted after the extraction read its part of the table, so it is kept.

The deletes are changes like any other: a D at the extraction's start, with a sequence above any
real one (:data:`RECONCILE_SEQUENCE`, so a real change at that very instant, which the rule says
to delete, does not outrank it), joined to the run's changes before the classification. The
order guard, the tombstones, the counts (``rowsDeleted``) and soft deletes (``_icetide_deleted_at``
= the start, the row's last known values kept) then apply unchanged, in the run's one commit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import BooleanType, IntegerType, StringType, StructField, StructType

from icetide_contracts.watermark_text import epoch_micros
from icetide_glue.bronze.read import read_bronze, translate_unreadable_file
from icetide_glue.changes.normalize import column, require_column
from icetide_glue.changes.row_count import check_row_count
from icetide_glue.columns import (
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DELETE,
    DELETED_AT,
    HAS_IMAGE,
    OP,
    RUN_ID,
)
from icetide_glue.errors import InvalidChangeData, MissingReconcileExtraction
from icetide_glue.merge.sql import reconcile_candidates_sql
from icetide_glue.silver import SilverTable

# Above every sequence a source writes (DMS's AR_H_CHANGE_SEQ has 35 digits; numeric sequences are
# padded to 40 with leading zeros), so a reconcile delete outranks any real change at its instant.
RECONCILE_SEQUENCE = "9" * 40
EXTRACTION_VIEW = "icetide_reconcile_keys"
RECONCILE_CHANGES_VIEW = "icetide_reconcile_changes"


@dataclass(frozen=True)
class KeyExtractionUse:
    """What a key-only extraction is read for, in the words its refusals use: its name, the job
    argument with DMS's count of it, and what would go wrong if an unconfirmed empty extraction or
    a null key were taken at its word."""

    name: str
    count_argument: str
    if_unconfirmed_empty: str
    if_null_key: str


RECONCILE_EXTRACTION = KeyExtractionUse(
    name="the reconcile's key extraction",
    count_argument="--reconcile_expected_rows",
    if_unconfirmed_empty="or every row of silver would be deleted; nothing was committed",
    if_null_key="their silver rows would be deleted; nothing was committed",
)


def read_reconcile_keys(
    spark: SparkSession,
    uri: str,
    keys: Sequence[StructField],
    expected_rows: int | None,
    use: KeyExtractionUse = RECONCILE_EXTRACTION,
) -> DataFrame:
    """The key extraction's keys, named and typed like silver's (``keys``), checked against
    DMS's count and for nulls (a key that cannot be compared would delete its silver row).

    No files: the source table is empty when DMS counted 0 rows; with rows counted, a file was
    lost (:class:`BronzeRowCountMismatch`); uncounted, nobody can tell (refused). ``use`` words the
    refusals (a verify run reads its extraction too: icetide_glue.verify.compare).
    """
    extraction = read_bronze(spark, uri)
    if extraction is None:
        if expected_rows is None:
            raise MissingReconcileExtraction(
                f"{use.name} {uri} holds no files and {use.count_argument} is not given: an empty "
                f"source table must be confirmed by DMS's count (0), {use.if_unconfirmed_empty}"
            )
        check_row_count(expected_rows, 0, uri, use.count_argument)
        return spark.createDataFrame([], StructType(list(keys)))
    found = [require_column(extraction.columns, k.name, f"primary key column ({use.name})") for k in keys]
    typed = extraction.select(
        *[column(name).cast(key.dataType).alias(key.name) for name, key in zip(found, keys, strict=True)]
    )
    any_null = (
        F.greatest(*[column(k.name).isNull() for k in keys])
        if len(keys) > 1
        else column(keys[0].name).isNull()
    )
    with translate_unreadable_file():
        totals = typed.agg(F.count(F.lit(1)).alias("rows"), F.count_if(any_null).alias("nulls")).first()
    assert totals is not None  # a global aggregate always returns one row
    check_row_count(expected_rows, int(totals["rows"]), uri, use.count_argument)
    if totals["nulls"]:
        raise InvalidChangeData(
            f"{totals['nulls']} row(s) of {use.name} {uri} have a null key, or one "
            f"that is not a {', '.join(k.dataType.simpleString() for k in keys)} like silver's "
            f"({', '.join(k.name for k in keys)}): {use.if_null_key}"
        )
    return typed


def add_reconcile_deletes(
    spark: SparkSession,
    table: SilverTable,
    latest: DataFrame,
    extraction: DataFrame,
    keys: Sequence[str],
    tombstones: SilverTable,
    started_at: datetime,
    run_id: str,
    soft_delete: bool,
) -> DataFrame:
    """The run's changes (one per key, aligned to silver, ``keys`` spelled as silver's) with each
    key to reconcile (:func:`reconcile_candidates_sql`) turned into, or added as, a delete at
    ``started_at``.

    A delete replacing a change of the batch keeps that change's values and their time
    (``_icetide_image_ts``): a soft delete keeps them if they are newer than silver's, as for any
    keys-only D. A key only silver holds gets a keys-only delete (silver's values are kept).
    """
    started_micros = epoch_micros(started_at)
    latest.createOrReplaceTempView(RECONCILE_CHANGES_VIEW)
    extraction.createOrReplaceTempView(EXTRACTION_VIEW)
    statement = reconcile_candidates_sql(
        table.sql_name,
        RECONCILE_CHANGES_VIEW,
        EXTRACTION_VIEW,
        keys,
        tombstones.sql_name,
        started_micros,
        RECONCILE_SEQUENCE,
        soft_delete=soft_delete,
    )
    try:
        # Analysed at once: the views can go (a session may run many jobs).
        candidates = spark.sql(statement)
    finally:
        spark.catalog.dropTempView(RECONCILE_CHANGES_VIEW)
        spark.catalog.dropTempView(EXTRACTION_VIEW)
    started = F.timestamp_micros(F.lit(started_micros))
    overrides = {
        OP: F.lit(DELETE),
        CHANGE_TS: started,
        CHANGE_SEQ: F.lit(RECONCILE_SEQUENCE).cast(StringType()),
        # Neither phase: the extraction's start is compared with every change by time alone.
        CHANGE_PHASE: F.lit(None).cast(IntegerType()),
        RUN_ID: F.lit(run_id),
        HAS_IMAGE: F.coalesce(F.col(HAS_IMAGE), F.lit(False)).cast(BooleanType()),
        DELETED_AT: started,
    }
    deletes = candidates.join(latest, on=list(keys), how="left").select(
        *[overrides[name].alias(name) if name in overrides else column(name) for name in latest.columns]
    )
    return latest.join(candidates, on=list(keys), how="left_anti").unionByName(deletes)
