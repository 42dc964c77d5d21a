"""A verify run's job: silver's live keys against a key-only extraction of the source.

A verify run (icetide.run.verify) extracts the key columns of the rows the table's filter selects,
as a reconcile run's key extraction does, into ``--bronze_uri``; DMS's count of them comes as
``--expected_rows``. The job reads them like the reconcile reads its extraction (counted, no null
key, typed like silver's keys), compares them with silver's live keys (a row soft-deleted,
``_icetide_deleted_at`` set, is not live) and writes the verify report
(icetide_contracts.verify) to ``--verify_report_uri``. It commits nothing, creates no table, writes
no manifest and no tombstone: silver is read, never written.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import StringType, StructField, StructType

from icetide_contracts.verify import COMPARED_KEYS, DEFAULT_SHOWN, Difference, VerifyReport, json_values
from icetide_glue.arguments import JobArguments
from icetide_glue.bronze.read import read_bronze, translate_unreadable_file
from icetide_glue.changes.normalize import column, find_column
from icetide_glue.columns import DELETED_AT
from icetide_glue.commit.manifest import write_json_document
from icetide_glue.errors import IcetideJobError
from icetide_glue.silver import SilverTable, silver_schema, table_exists
from icetide_glue.verify.reconcile import KeyExtractionUse, read_reconcile_keys

VERIFY_EXTRACTION = KeyExtractionUse(
    name="the verify run's key extraction",
    count_argument="--expected_rows",
    if_unconfirmed_empty="or every key of silver would be reported extra; nothing was reported",
    if_null_key="they cannot be compared with silver's keys; nothing was reported",
)


class SilverKeysMissing(IcetideJobError):
    """Silver has no column for a key the run compares: it was loaded with other primary keys."""


def run_verify(spark: SparkSession, args: JobArguments, table: SilverTable) -> dict[str, Any]:
    """Compare, write the report to ``args.verify_report_uri`` and return it as JSON."""
    if args.verify_report_uri is None:
        raise ValueError("run_verify needs --verify_report_uri")
    report = verify_silver(spark, args, table)
    document = report.to_json()
    write_json_document(
        args.verify_report_uri, document, what="the verify report", argument="--verify_report_uri"
    )
    return document


def verify_silver(
    spark: SparkSession, args: JobArguments, table: SilverTable, shown: int = DEFAULT_SHOWN
) -> VerifyReport:
    """Silver's live keys against the extraction at ``args.bronze_uri``, as a report."""
    exists = table_exists(spark, table)
    silver_fields = list(silver_schema(spark, table).fields) if exists else []
    key_fields = _key_fields(spark, args, table, silver_fields)
    names = [key.name for key in key_fields]
    source = read_reconcile_keys(spark, args.bronze_uri, key_fields, args.expected_rows, VERIFY_EXTRACTION)
    if exists:
        silver = live_keys(spark.table(table.sql_name), names, [field.name for field in silver_fields])
    else:  # never loaded: every source key is missing
        silver = spark.createDataFrame([], StructType(key_fields))
    source, silver = source.persist(), silver.persist()
    try:
        with translate_unreadable_file():
            source_rows, silver_rows = source.count(), silver.count()
            duplicates = silver.groupBy(*names).count().where(F.col("count") > 1).count()
            unique_silver = silver.distinct()
            missing = _difference(
                source.distinct().join(unique_silver, on=names, how="left_anti"), names, shown
            )
            extra = _difference(unique_silver.join(source, on=names, how="left_anti"), names, shown)
    finally:
        source.unpersist()
        silver.unpersist()
    return VerifyReport(
        silver_table=str(table),
        run_id=args.run_id,
        compared=COMPARED_KEYS,
        key_columns=names,
        source_rows=source_rows,
        silver_rows=silver_rows,
        missing=missing,
        extra=extra,
        duplicate_keys_in_silver=duplicates,
    )


def live_keys(silver: DataFrame, keys: Sequence[str], columns: Sequence[str]) -> DataFrame:
    """The key columns of silver's live rows: a soft-deleted row (``_icetide_deleted_at`` set) is not
    live, whatever the table's delete mode is now."""
    deleted_at = find_column(columns, DELETED_AT)
    live = silver.where(column(deleted_at).isNull()) if deleted_at else silver
    return live.select(*[column(key) for key in keys])


def _key_fields(
    spark: SparkSession, args: JobArguments, table: SilverTable, silver_fields: list[StructField]
) -> list[StructField]:
    """The compared keys as silver names and types them; for a table never loaded, as the
    extraction does (text when it is empty too)."""
    if silver_fields:
        by_name = {field.name: field for field in silver_fields}
        found = [find_column(list(by_name), key) for key in args.primary_keys]
        lacking = [key for key, name in zip(args.primary_keys, found, strict=True) if name is None]
        if lacking:
            raise SilverKeysMissing(
                f"{table} has no column {', '.join(lacking)} of --primary_keys: it was loaded with other "
                "keys; nothing was reported"
            )
        return [by_name[name] for name in found if name is not None]
    extraction = read_bronze(spark, args.bronze_uri)
    extracted = {field.name: field for field in extraction.schema.fields} if extraction is not None else {}
    fields = []
    for key in args.primary_keys:
        name = find_column(list(extracted), key)
        fields.append(StructField(key, extracted[name].dataType if name else StringType()))
    return fields


def _difference(keys: DataFrame, names: Sequence[str], shown: int) -> Difference:
    """All of ``keys`` counted, the first ``shown`` (in key order) listed."""
    first = keys.orderBy(*[column(name) for name in names]).limit(shown).collect()
    return Difference(count=keys.count(), first=[json_values(row.asDict()) for row in first])
