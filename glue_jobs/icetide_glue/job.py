"""One run of the bronze → silver job, the same on Glue, from the command line and from the CLI.

Order of work, chosen so that a failure leaves silver untouched and a rerun changes nothing:
1. a snapshot already carrying this run id (or, once maintenance expired it, the run ledger's
   record of it) → hand back its manifest (``alreadyCommitted``);
2. read the run's DMS files (every file below its folder, or exactly the files its bronze file
   selection lists: a continuous cdc run); none → an empty manifest (if DMS reported no rows
   either), unless the run reconciles an existing table (the source may only have lost rows: an
   empty batch). A small merge, or a small first load, may be done here, without a Spark job
   (icetide_glue.driver.merge, the same order of work on the driver: a folder's files listed and
   typed by pyarrow first, Spark's read skipped when it lands);
3. check the whole batch (a merge's in the one read that deduplicates it), its row counts against
   DMS's (``--expected_rows``, ``--max_change_rows``), a reconcile's key extraction
   (``--reconcile_expected_rows``, null keys) and the whole schema change before any DDL;
4. create or evolve the table; turn the keys a reconcile removes into deletes of the batch;
   remember the run's deletes and skipped updates in the table's tombstone table (idempotent,
   committed before silver's commit, written while silver's files are: harmless if the silver
   commit fails); then ONE new state of main that carries
   the run id and the run's statistics in its snapshot summary (a removal by position of the silver
   rows the changes replace or delete, an append of the rows they leave, or both in one Iceberg
   commit: icetide_glue.merge.apply; for key-less tables an append without the
   rows silver already holds); then, if the run remembered something, forget tombstones
   older than the retention (after the commit: a retry must classify as the first attempt did);
5. write the manifest.

A verify run (``--verify_report_uri``) does none of this: it compares silver's live keys with a
key-only extraction and writes a verify report (icetide_glue.verify.compare).
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql.types import StructField, StructType

from icetide_contracts.run_manifest import RunManifest
from icetide_glue.arguments import DeleteMode, JobArguments, LoadMode
from icetide_glue.bronze.read import read_bronze
from icetide_glue.bronze.selection import read_selected_bronze
from icetide_glue.changes.batch import BatchSummary, deduplicate_batch, inspect_batch
from icetide_glue.changes.key_ranges import batch_key_ranges
from icetide_glue.changes.normalize import (
    align_to_silver,
    empty_changes,
    find_column,
    mark_deletes,
    normalize_changes,
    require_column,
    source_schema,
)
from icetide_glue.changes.row_count import BronzeRows, check_bronze_rows
from icetide_glue.changes.schema_evolution import plan_schema_changes
from icetide_glue.columns import is_metadata_column
from icetide_glue.commit.append_once import rows_not_in_silver, with_row_hash
from icetide_glue.commit.manifest import write_manifest
from icetide_glue.commit.run_ledger import find_run
from icetide_glue.commit.run_record import (
    committed_snapshot_id,
    snapshot_properties,
)
from icetide_glue.merge.apply import (
    append_changes,
    classify_changes,
    commit_changes,
    fill_values_hashes,
    forget_expired_changes_after_commit,
    values_hash_types,
    write_tombstones,
)
from icetide_glue.merge.plan import Chosen, MergePlan, choose_merge_plan
from icetide_glue.silver import (
    SilverTable,
    add_missing_metadata_columns,
    create_silver_table,
    ensure_tombstone_table,
    evolve_silver_table,
    main_snapshot_id,
    silver_schema,
    table_exists,
)
from icetide_glue.verify.compare import run_verify
from icetide_glue.verify.reconcile import add_reconcile_deletes, read_reconcile_keys

logger = logging.getLogger(__name__)

# Up to this many changes, the batch's keys are broadcast into silver's scan (a few tens of MB on
# the driver at most); a larger batch is a large share of the table anyway, and is joined by shuffle.
MAX_BROADCAST_CHANGES = 1_000_000


def run_job(spark: SparkSession, args: JobArguments, *, bronze_copy: str | None = None) -> dict[str, Any]:
    """Load one run into silver, write its manifest to ``args.manifest_uri`` (when given) and
    return the manifest as the contract's JSON object; for a verify run (``--verify_report_uri``)
    compare instead, and return the verify report it wrote.

    ``bronze_copy`` (local runs of a bronze file selection only: their Spark has no S3): a local
    folder holding the selection's files at their keys, read instead of the selection's
    ``bronzeUri``, which must still be ``--bronze_uri``.
    """
    table = SilverTable(args.catalog, args.database, args.table_name)
    if args.verify_report_uri is not None:
        # A verify run (icetide_glue.verify.compare) compares and reports; it never reaches a commit.
        return run_verify(spark, args, table)
    manifest = _load_run(spark, args, table, bronze_copy)
    if args.manifest_uri:
        write_manifest(args.manifest_uri, manifest)
    return manifest.to_json()


def _load_run(
    spark: SparkSession, args: JobArguments, table: SilverTable, bronze_copy: str | None
) -> RunManifest:
    exists = table_exists(spark, table)
    if exists:
        committed = find_run(spark, table, args.run_id)
        if committed is not None:
            return RunManifest.already_committed_run(
                args.run_id, str(table), committed.snapshot_id, committed.run_stats
            )
    chosen = choose_merge_plan(args, exists) if args.load_mode is LoadMode.MERGE else None
    if args.bronze_files_uri is None:
        if chosen is not None and chosen.plan is MergePlan.DRIVER:
            # The folder is listed and its footers read by pyarrow, Spark's read skipped.
            merged = _merge_on_driver(spark, args, table, chosen, None)
            if merged is not None:
                return merged
            # A first load the driver gave up after it created silver (it checks the table it
            # would create first, so only for what it finds then): the run goes on with it, empty.
            exists = exists or table_exists(spark, table)
        bronze = read_bronze(spark, args.bronze_uri)
    else:
        bronze = read_selected_bronze(spark, args.bronze_files_uri, args.run_id, args.bronze_uri, bronze_copy)
        if chosen is not None and chosen.plan is MergePlan.DRIVER and bronze is not None:
            # A bronze file selection's batch, as Spark listed it.
            merged = _merge_on_driver(spark, args, table, chosen, bronze)
            if merged is not None:
                return merged
            exists = exists or table_exists(spark, table)
    if bronze is None and not (exists and args.reconcile_uri):
        # DMS writes no folder for a table without rows; a folder gone missing is not an empty run.
        # An empty selection (no new file) is an empty run too.
        check_bronze_rows(args, lambda: BronzeRows(0, 0, 0))
        return RunManifest(args.run_id, str(table), watermark_column=args.watermark_column)
    if bronze is None:
        # A reconcile still runs when nothing changed: the source may only have lost rows.
        changes = empty_changes(spark, silver_schema(spark, table))
    else:
        changes = normalize_changes(bronze, args.timestamp_column, args.change_sequence_column, args.run_id)
    # A merge reads its batch once: the check rides in the deduplication, whose result is kept
    # (icetide_glue.changes.batch.deduplicate_batch). An append reads its batch three more times after the
    # check (watermark range, content hashes, copies): cached. Every read sees the same files: the
    # listing is made once, when the batch is opened.
    if args.load_mode is LoadMode.APPEND:
        changes = changes.persist()
    try:
        return _land_changes(spark, args, table, exists, changes, bronze)
    finally:
        changes.unpersist()


def _merge_on_driver(
    spark: SparkSession, args: JobArguments, table: SilverTable, chosen: Chosen, bronze: DataFrame | None
) -> RunManifest | None:
    """The run merged by the driver path (icetide_glue.driver.merge), or None when the plan was
    chosen (not forced) and that path finds the run is not one it can read exactly as Spark would:
    nothing is written then, and the run goes on as Spark's. ``bronze``: Spark's read of a bronze
    file selection (None: the run's folder, listed by pyarrow)."""
    # Imported only once the plan is the driver's: it needs pyarrow, which the chooser checked.
    from icetide_glue.driver.merge import folder_bronze, merge_on_driver, spark_bronze

    files = (lambda: folder_bronze(args.bronze_uri)) if bronze is None else (lambda: spark_bronze(bronze))
    return merge_on_driver(spark, args, table, files, forced=chosen.forced)


def _land_changes(
    spark: SparkSession,
    args: JobArguments,
    table: SilverTable,
    exists: bool,
    changes: DataFrame,
    bronze: DataFrame | None,
) -> RunManifest:
    merging = args.load_mode is LoadMode.MERGE
    # Append mode ignores keys: they need not even be in the files.
    keys = [
        require_column(changes.columns, k, "primary key column (--primary_keys)")
        for k in (args.primary_keys if merging else ())
    ]
    watermark = None
    if args.watermark_column:
        watermark = require_column(
            changes.columns, args.watermark_column, "watermark column (--watermark_column)"
        )
    latest = None
    if merging:
        # DMS's row count bounds the batch's keys before it is read: the check finds the key
        # ranges too (a wrong count fails the run just below, as before). A reconcile reads silver
        # whole: no ranges.
        range_key_count = args.bronze_rows_bound if args.reconcile_uri is None else None
        deduplicated = deduplicate_batch(
            changes, keys, watermark, args.timestamp_column, args.change_sequence_column, range_key_count
        )
        latest, summary = deduplicated.latest, deduplicated.summary
    else:
        summary = inspect_batch(changes, keys, watermark, args.timestamp_column, args.change_sequence_column)
    # Before any DDL or commit: a lost or added bronze file must not reach silver.
    files = 0 if bronze is None else len(bronze.inputFiles())
    check_bronze_rows(args, lambda: BronzeRows.of_batch(summary, files))
    source = source_schema(changes)
    reconcile_keys = None
    if args.reconcile_uri is not None and merging:
        key_fields = _final_key_fields(spark, table, exists, source, keys)
        reconcile_keys = read_reconcile_keys(
            spark, args.reconcile_uri, key_fields, args.reconcile_expected_rows
        )
    if exists:
        # Raises before any ALTER when one column cannot follow: the table stays as it was.
        schema_changes = evolve_silver_table(
            spark, table, plan_schema_changes(silver_schema(spark, table), source)
        ) + add_missing_metadata_columns(spark, table, args.load_mode, args.delete_mode)
    else:
        schema_changes = create_silver_table(spark, table, source, keys, args.load_mode, args.delete_mode)
    manifest = RunManifest(
        run_id=args.run_id,
        target_table=str(table),
        rows_read=summary.rows_read,
        watermark_column=args.watermark_column,
        new_watermark=summary.new_watermark,
        schema_changes=list(schema_changes),
        newest_change_time=summary.newest_change_time,
    )
    silver = silver_schema(spark, table)
    if latest is not None:
        return _merge(spark, args, table, latest, keys, silver, manifest, reconcile_keys, summary)
    return _append(spark, table, changes, silver, manifest, watermark, created=not exists)


def _merge(
    spark: SparkSession,
    args: JobArguments,
    table: SilverTable,
    deduplicated: DataFrame,
    keys: list[str],
    silver: StructType,
    manifest: RunManifest,
    reconcile_keys: DataFrame | None,
    summary: BatchSummary,
) -> RunManifest:
    soft = args.delete_mode is DeleteMode.SOFT
    # A projection of the kept deduplication: the classification reads it twice (changes and
    # their keys), and the key ranges when the check did not find them, none of them from bronze.
    latest = mark_deletes(align_to_silver(deduplicated, silver), soft)
    value_columns = [name for name in silver.fieldNames() if not is_metadata_column(name)]
    tombstones = ensure_tombstone_table(spark, table, silver, keys)
    if reconcile_keys is not None and args.reconcile_started_at is not None:
        silver_keys = [find_column(silver.fieldNames(), key) or key for key in keys]
        latest = add_reconcile_deletes(
            spark,
            table,
            latest,
            reconcile_keys,
            silver_keys,
            tombstones,
            args.reconcile_started_at,
            args.run_id,
            soft,
        )
    key_ranges: list[tuple[int, int]] = []
    if reconcile_keys is None:
        # A reconcile's deletes can be anywhere in silver: its runs read silver whole, as before.
        # The deduplicated batch holds the bronze batch's keys: the check may have found the ranges.
        if summary.key_ranges is not None:
            key_ranges = summary.key_ranges
        else:
            first_key = find_column(latest.columns, keys[0]) or keys[0]
            key_ranges = batch_key_ranges(latest, first_key, manifest.rows_read, unique=len(keys) == 1)
    broadcast = reconcile_keys is None and manifest.rows_read <= MAX_BROADCAST_CHANGES
    value_types = values_hash_types(silver, value_columns, keys, soft)
    if value_types is not None:
        fill_values_hashes(spark, table, value_types)
    # Before the classification reads silver: the run's commit is validated against this state of
    # main, so a commit by anything else after it fails the run instead of meeting stale labels.
    base_snapshot_id = main_snapshot_id(spark, table)
    classified = classify_changes(
        spark,
        table,
        latest,
        keys,
        value_columns,
        tombstones=tombstones,
        soft_delete=soft,
        key_ranges=key_ranges,
        broadcast_changes=broadcast,
        value_types=value_types,
        snapshot_id=base_snapshot_id,
    )
    try:
        counts = classified.counts
        manifest = replace(
            manifest,
            rows_inserted=counts.inserted,
            rows_updated=counts.updated,
            rows_deleted=counts.deleted,
            rows_unchanged=counts.unchanged,
        )
        newest = classified.newest_change_micros
        wrote_tombstones = False

        def tombstones_first() -> None:
            nonlocal wrote_tombstones
            wrote_tombstones = write_tombstones(spark, tombstones, classified, keys)

        if counts.changing > 0:
            properties = snapshot_properties(manifest, MergePlan.SPARK)
            # The tombstones land before silver's commit (a rerun of a committed run writes
            # nothing, so they must be there), written beside silver's files.
            commit_changes(
                spark,
                table,
                classified,
                silver.fieldNames(),
                properties,
                soft,
                base_snapshot_id,
                before_commit=tombstones_first,
            )
            manifest = replace(manifest, snapshot_id=committed_snapshot_id(spark, table, manifest.run_id))
        else:
            # Nothing to commit (e.g. boundary rows re-read by a gte watermark): no empty snapshot.
            tombstones_first()
    finally:
        classified.release()
    if wrote_tombstones and newest is not None:
        forget_expired_changes_after_commit(spark, tombstones, newest, args.tombstone_retention_days)
    return manifest


def _append(
    spark: SparkSession,
    table: SilverTable,
    changes: DataFrame,
    silver: StructType,
    manifest: RunManifest,
    watermark: str | None,
    created: bool,
) -> RunManifest:
    """Append the batch's rows silver does not hold yet (icetide_glue.commit.append_once).
    ``created``: this run created silver, so it holds none of them, and every row is appended
    without a read of silver or a count (the batch's check counted them)."""
    aligned = align_to_silver(changes, silver, keep_op=False)
    if created:
        manifest = replace(manifest, rows_inserted=manifest.rows_read)
        if manifest.rows_inserted:
            append_changes(
                table.sql_name,
                with_row_hash(aligned),
                snapshot_properties(manifest),
                row_count=manifest.rows_inserted,
            )
        return _appended(spark, table, manifest)
    new_rows = rows_not_in_silver(spark, table, aligned, watermark).persist()
    try:
        inserted = new_rows.count()
        # Rows silver already holds (re-read by the filter) were appended by an earlier run: unchanged.
        manifest = replace(manifest, rows_inserted=inserted, rows_unchanged=manifest.rows_read - inserted)
        if inserted == 0:
            return manifest
        append_changes(table.sql_name, new_rows, snapshot_properties(manifest), row_count=inserted)
    finally:
        new_rows.unpersist()
    return _appended(spark, table, manifest)


def _appended(spark: SparkSession, table: SilverTable, manifest: RunManifest) -> RunManifest:
    """``manifest`` with the snapshot its append committed (none when it appended no row)."""
    if not manifest.rows_inserted:
        return manifest
    return replace(manifest, snapshot_id=committed_snapshot_id(spark, table, manifest.run_id))


def _final_key_fields(
    spark: SparkSession, table: SilverTable, exists: bool, source: StructType, keys: list[str]
) -> list[StructField]:
    """The key columns as silver names and types them (the batch's, for a table not created yet)."""
    by_name = {field.name.lower(): field for field in source.fields}
    if exists:
        by_name.update({field.name.lower(): field for field in silver_schema(spark, table).fields})
    return [by_name[key.lower()] for key in keys]
