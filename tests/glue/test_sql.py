"""The SQL text the job sends to Spark, checked as text (no Spark needed)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from icetide_glue.maintenance.sql import (
    expire_snapshots_sql,
    file_counts_sql,
    remove_orphan_files_sql,
    rewrite_data_files_sql,
    rewrite_position_delete_files_sql,
    snapshot_count_sql,
)
from icetide_glue.merge.sql import (
    classify_changes_sql,
    fill_values_hash_sql,
    order_guard,
    reconcile_candidates_sql,
    take_image,
    tombstone_merge_sql,
    values_hash_sql,
)
from icetide_glue.table_sql import (
    add_columns_sql,
    alter_column_type_sql,
    create_namespace_sql,
    create_table_sql,
    qualified_name,
    quote_identifier,
    set_properties_sql,
    string_literal,
    write_ordered_by_sql,
)

TABLE = "`glue_catalog`.`silver`.`orders`"

BY_TIME = (
    "(t.`_icetide_change_ts` IS NULL OR s.`_icetide_change_ts` > t.`_icetide_change_ts` OR "
    "(s.`_icetide_change_ts` = t.`_icetide_change_ts` AND "
    "coalesce(s.`_icetide_change_seq`, '') > coalesce(t.`_icetide_change_seq`, '')))"
)
# The change arriving (s) is later by phase alone when it is a full-load row (0), or a CDC change
# (1) over a stored full-load row; otherwise times decide.
ARRIVES_LATER = (
    "coalesce(s.`_icetide_change_phase` = 0 OR "
    "(s.`_icetide_change_phase` = 1 AND t.`_icetide_change_phase` = 0), FALSE)"
)
GUARD = f"({ARRIVES_LATER} OR {BY_TIME})"


def test_identifiers_are_backtick_quoted_with_backticks_doubled() -> None:
    assert quote_identifier("order id") == "`order id`"
    assert quote_identifier("we`ird") == "`we``ird`"
    assert qualified_name("glue_catalog", "silver", "orders") == TABLE


def test_string_literals_escape_quotes_and_backslashes() -> None:
    assert string_literal("it's") == "'it\\'s'"
    assert string_literal("a\\b") == "'a\\\\b'"


def test_create_table_is_unpartitioned() -> None:
    statement = create_table_sql(TABLE, [("line", "string")], {"format-version": "2"})
    assert statement == (
        "CREATE TABLE `glue_catalog`.`silver`.`orders` (\n"
        "  `line` string\n"
        ")\n"
        "USING iceberg\n"
        "TBLPROPERTIES ('format-version' = '2')"
    )


def test_create_table_refuses_no_columns() -> None:
    with pytest.raises(ValueError, match="at least one column"):
        create_table_sql(TABLE, [], {})


def test_create_namespace() -> None:
    assert (
        create_namespace_sql("glue_catalog", "silver")
        == "CREATE NAMESPACE IF NOT EXISTS `glue_catalog`.`silver`"
    )


def test_schema_evolution_statements() -> None:
    assert add_columns_sql(TABLE, [("note", "string"), ("qty 2", "int")]) == (
        "ALTER TABLE `glue_catalog`.`silver`.`orders` ADD COLUMNS (\n  `note` string,\n  `qty 2` int\n)"
    )
    assert alter_column_type_sql(TABLE, "qty", "bigint") == (
        "ALTER TABLE `glue_catalog`.`silver`.`orders` ALTER COLUMN `qty` TYPE bigint"
    )


def test_order_guard_compares_change_time_then_sequence() -> None:
    assert order_guard() == GUARD


def test_order_guard_across_phases_asks_which_change_arrives() -> None:
    stored_arrives_later = ARRIVES_LATER.replace("s.", "x.").replace("t.", "s.").replace("x.", "t.")
    assert order_guard("s", "t", False) == f"(NOT {stored_arrives_later} AND {BY_TIME})"
    assert order_guard("s", "t", None) == BY_TIME


def test_classification_labels_each_change_with_the_commit_s_action_and_silver_s_row_position() -> None:
    statement = classify_changes_sql(TABLE, "icetide_changes", ["order_id"])
    # Expected text, compared and never executed.
    assert statement == (
        "SELECT s.*, CASE\n"  # noqa: S608
        "  WHEN t.`_icetide_in_silver` IS NULL AND s.`_icetide_op` <> 'D' THEN 'insert'\n"
        "  WHEN t.`_icetide_in_silver` IS NULL THEN 'unchanged'\n"
        f"  WHEN NOT {GUARD} THEN 'unchanged'\n"
        "  WHEN s.`_icetide_op` = 'D' THEN 'delete'\n"
        "  ELSE 'update'\n"
        "END AS `_icetide_action`,\n"
        "t.`_icetide_in_silver` IS NOT NULL AS `_icetide_matched`,\n"
        "t.`_icetide_silver_file`, t.`_icetide_silver_pos`,\n"
        "FALSE AS `_icetide_has_tombstone`,\n"
        f"(TRUE AND {GUARD} AND (s.`_icetide_op` = 'D' OR (t.`_icetide_in_silver` IS NOT NULL AND FALSE))) "
        "AS `_icetide_keep_tombstone`\n"
        "FROM `icetide_changes` s\n"
        "LEFT JOIN (SELECT r.`order_id`, r.`_icetide_change_ts`, r.`_icetide_change_seq`, "
        "r.`_icetide_change_phase`, "
        "r._file AS `_icetide_silver_file`, r._pos AS `_icetide_silver_pos`, "
        "TRUE AS `_icetide_in_silver` FROM `glue_catalog`.`silver`.`orders` r) t\n"
        "ON t.`order_id` = s.`order_id`"
    )


def test_a_soft_delete_classification_keeps_silver_s_values_by_position() -> None:
    statement = classify_changes_sql(
        TABLE, "v", ["order_id"], ["order_id", "note", "amount"], soft_delete=True
    )
    assert (
        "t.`_icetide_silver_file`, t.`_icetide_silver_pos`,\n"
        "t.`note` AS `_icetide_silver_value_0`,\n"
        "t.`amount` AS `_icetide_silver_value_1`,\n"
    ) in statement


def test_classification_calls_an_update_with_silver_s_values_unchanged() -> None:
    statement = classify_changes_sql(TABLE, "icetide_changes", ["order_id"], ["order_id", "note", "amount"])
    assert (
        "  WHEN s.`_icetide_op` = 'D' THEN 'delete'\n"
        "  WHEN s.`_icetide_op` <> 'D' AND s.`note` <=> t.`note` AND s.`amount` <=> t.`amount` "
        "THEN 'unchanged'\n"
        "  ELSE 'update'\n"
    ) in statement
    assert (
        "LEFT JOIN (SELECT r.`order_id`, r.`_icetide_change_ts`, r.`_icetide_change_seq`, "
        "r.`_icetide_change_phase`, r.`note`, "
        "r.`amount`, r._file AS `_icetide_silver_file`, r._pos AS `_icetide_silver_pos`, "
        "TRUE AS `_icetide_in_silver` FROM `glue_catalog`.`silver`.`orders` r) t\n"
    ) in statement


def test_classification_reads_silver_only_where_the_batch_can_match() -> None:
    # The key ranges are Iceberg's planning (icetide_glue.merge.planned_scan), never a filter in the text.
    statement = classify_changes_sql(
        "`planned_silver`",
        "icetide_changes",
        ["tenant", "order_id"],
        broadcast_changes=True,
        tombstone_table="`m`.`t`",
    )
    assert (
        "LEFT JOIN (SELECT /*+ BROADCAST(k) */ r.`tenant`, r.`order_id`, r.`_icetide_change_ts`, "
        "r.`_icetide_change_seq`, "
        "r.`_icetide_change_phase`, r._file AS `_icetide_silver_file`, r._pos AS `_icetide_silver_pos`, "
        "TRUE AS `_icetide_in_silver` FROM `planned_silver` r "
        "LEFT SEMI JOIN `icetide_changes` k ON r.`tenant` = k.`tenant` AND r.`order_id` = k.`order_id`) t\n"
        "ON t.`tenant` = s.`tenant` AND t.`order_id` = s.`order_id`\n"
    ) in statement
    assert "WHERE" not in statement
    # With a tombstone table, a change to remember says whether its key already has an entry.
    assert "m.`_icetide_in_tombstones` IS NOT NULL AS `_icetide_has_tombstone`,\n" in statement
    # The tombstone table is read the same way.
    assert statement.endswith(
        "LEFT JOIN (SELECT /*+ BROADCAST(k) */ r.`tenant`, r.`order_id`, r.`_icetide_change_ts`, "
        "r.`_icetide_change_seq`, "
        "r.`_icetide_change_phase`, r.`_icetide_op`, TRUE AS `_icetide_in_tombstones` FROM `m`.`t` r "
        "LEFT SEMI JOIN `icetide_changes` k ON r.`tenant` = k.`tenant` AND r.`order_id` = k.`order_id`) m\n"
        "ON m.`tenant` = s.`tenant` AND m.`order_id` = s.`order_id`"
    )


def test_reconcile_candidates_are_live_unchanged_since_the_start_and_not_extracted() -> None:
    statement = reconcile_candidates_sql(
        TABLE, "changes", "keys", ["order_id"], "`m`.`t`", 1_795_514_400_000_000, "9" * 40, soft_delete=True
    )
    started = "timestamp_micros(1795514400000000)"
    # A soft-deleted row is not live; this reconcile's own tombstone keeps its key a candidate.
    assert (
        "((t.`_icetide_in_silver` IS NOT NULL AND t.`_icetide_deleted_at` IS NULL) OR "
        f"(m.`_icetide_op` = 'D' AND m.`_icetide_change_ts` = {started} AND "
        f"m.`_icetide_change_seq` = '{'9' * 40}')) AS `live`"
    ) in statement
    assert "LEFT ANTI JOIN `keys` e\nON e.`order_id` = coalesce(s.`order_id`, b.`order_id`)\n" in statement
    assert statement.endswith(
        f"THEN s.`_icetide_op` <> 'D' AND s.`_icetide_change_ts` <= {started}\n"
        f"  ELSE b.`live` AND (b.`_icetide_change_ts` IS NULL OR b.`_icetide_change_ts` <= {started}) END"
    )


def test_a_soft_delete_keeps_the_values_it_carries_only_when_they_are_the_newest_known() -> None:
    # The values arriving beat silver's row of the other phase; a skipped update's entry (stored)
    # of the other phase never counts as newer than them.
    assert take_image(tombstones=True).sql() == (
        "(s.`_icetide_has_image` AND (t.`_icetide_in_silver` IS NULL OR "
        "(coalesce(s.`_icetide_image_phase` = 0 OR "
        "(s.`_icetide_image_phase` = 1 AND t.`_icetide_change_phase` = 0), FALSE) OR "
        "(t.`_icetide_change_ts` IS NULL OR "
        "s.`_icetide_image_ts` > t.`_icetide_change_ts` OR "
        "(s.`_icetide_image_ts` = t.`_icetide_change_ts` AND "
        "coalesce(s.`_icetide_image_seq`, '') > coalesce(t.`_icetide_change_seq`, ''))))) AND "
        "(m.`_icetide_in_tombstones` IS NULL OR m.`_icetide_op` = 'D' OR NOT "
        "(NOT coalesce(s.`_icetide_image_phase` = 0 OR "
        "(s.`_icetide_image_phase` = 1 AND m.`_icetide_change_phase` = 0), FALSE) AND "
        "(s.`_icetide_image_ts` IS NULL OR "
        "m.`_icetide_change_ts` > s.`_icetide_image_ts` OR "
        "(m.`_icetide_change_ts` = s.`_icetide_image_ts` AND "
        "coalesce(m.`_icetide_change_seq`, '') > coalesce(s.`_icetide_image_seq`, ''))))))"
    )


def test_the_tombstone_merge_only_moves_tombstones_it_holds_forward() -> None:
    statement = tombstone_merge_sql("`m`.`t`", "remembered", ["order_id"])
    guard = GUARD.replace("s.", "r.").replace("t.", "m.")
    assert statement == (
        "MERGE INTO `m`.`t` m\n"
        "USING `remembered` r\n"
        "ON m.`order_id` = r.`order_id`\n"
        f"WHEN MATCHED AND {guard} THEN UPDATE SET m.`_icetide_change_ts` = r.`_icetide_change_ts`, "
        "m.`_icetide_change_seq` = r.`_icetide_change_seq`, m.`_icetide_op` = r.`_icetide_op`, "
        "m.`_icetide_run_id` = r.`_icetide_run_id`, m.`_icetide_change_phase` = r.`_icetide_change_phase`"
    )


def test_sort_order_statement() -> None:
    assert write_ordered_by_sql(TABLE, ["tenant", "order`id"]) == (
        "ALTER TABLE `glue_catalog`.`silver`.`orders` WRITE ORDERED BY `tenant`, `order``id`"
    )
    with pytest.raises(ValueError, match="needs at least one column"):
        write_ordered_by_sql(TABLE, [])


# Table maintenance (icetide_glue.maintenance.sql): Iceberg's procedures as text.


def test_rewrite_data_files_names_the_quoted_table_strategy_and_options() -> None:
    sql = rewrite_data_files_sql(
        "glue_catalog", "silver", "or'ders", "sort", {"min-input-files": "5", "delete-file-threshold": "1"}
    )
    assert sql == (
        "CALL `glue_catalog`.`system`.`rewrite_data_files`(table => '`silver`.`or\\'ders`', "
        "strategy => 'sort', options => map('min-input-files', '5', 'delete-file-threshold', '1'))"
    )
    with pytest.raises(ValueError, match="unknown rewrite strategy"):
        rewrite_data_files_sql("glue_catalog", "silver", "orders", "zorder", {})


def test_rewrite_position_delete_files_sql() -> None:
    assert rewrite_position_delete_files_sql("local", "silver", "orders", {"min-input-files": "2"}) == (
        "CALL `local`.`system`.`rewrite_position_delete_files`(table => '`silver`.`orders`', "
        "options => map('min-input-files', '2'))"
    )
    assert rewrite_position_delete_files_sql("local", "silver", "orders", {}) == (
        "CALL `local`.`system`.`rewrite_position_delete_files`(table => '`silver`.`orders`')"
    )


def test_expire_snapshots_sql_uses_a_utc_timestamp_and_keeps_at_least_one() -> None:
    paris = timezone(timedelta(hours=1))
    sql = expire_snapshots_sql("local", "silver", "orders", datetime(2026, 11, 17, 11, 0, tzinfo=paris), 24)
    assert sql == (
        "CALL `local`.`system`.`expire_snapshots`(table => '`silver`.`orders`', "
        "older_than => TIMESTAMP '2026-11-17T10:00:00.000000Z', retain_last => 24)"
    )
    with pytest.raises(ValueError, match="at least one"):
        expire_snapshots_sql("local", "silver", "orders", datetime(2026, 11, 17, tzinfo=UTC), 0)
    with pytest.raises(ValueError, match="carry its zone"):
        expire_snapshots_sql("local", "silver", "orders", datetime(2026, 11, 17), 24)


def test_remove_orphan_files_sql() -> None:
    assert remove_orphan_files_sql("local", "silver", "orders", datetime(2026, 11, 21, 6, tzinfo=UTC)) == (
        "CALL `local`.`system`.`remove_orphan_files`(table => '`silver`.`orders`', "
        "older_than => TIMESTAMP '2026-11-21T06:00:00.000000Z')"
    )


def test_maintenance_measures_from_metadata_tables() -> None:
    assert file_counts_sql(TABLE) == (
        "SELECT content, count(*) AS files, coalesce(sum(file_size_in_bytes), 0) AS bytes, "
        "coalesce(sum(record_count), 0) AS records "
        "FROM `glue_catalog`.`silver`.`orders`.`files` GROUP BY content"
    )
    assert snapshot_count_sql(TABLE) == (
        "SELECT count(*) AS snapshots FROM `glue_catalog`.`silver`.`orders`.`snapshots`"
    )


def test_the_values_hash_is_xxhash64_of_exact_json_text_of_each_value() -> None:
    statement = values_hash_sql(
        [("n", "int"), ("f", "float"), ("at", "timestamp"), ("b", "binary"), ("it's `x`", "decimal(10,2)")],
        "r",
    )
    assert statement == (
        "xxhash64(to_json(named_struct("
        "'n', CAST(r.`n` AS STRING), "
        "'f', CAST(CASE WHEN r.`f` = 0 THEN 0.0D ELSE CAST(r.`f` AS DOUBLE) END AS STRING), "
        "'at', CAST(unix_micros(r.`at`) AS STRING), "
        "'b', hex(r.`b`), "
        "'it\\'s `x`', CAST(r.`it's ``x``` AS STRING)), map('ignoreNullFields', 'true')))"
    )
    assert values_hash_sql([("n", "bigint")]) == (
        "xxhash64(to_json(named_struct('n', CAST(`n` AS STRING)), map('ignoreNullFields', 'true')))"
    )
    with pytest.raises(ValueError, match="at least one column"):
        values_hash_sql([])


def test_a_hashed_classification_reads_silver_s_stored_hash_and_none_of_its_values() -> None:
    statement = classify_changes_sql(
        TABLE, "icetide_changes", ["order_id"], ["order_id", "note"], compare_hashes=True
    )
    assert (
        "  WHEN s.`_icetide_op` <> 'D' AND s.`_icetide_values_hash` <=> t.`_icetide_values_hash` "
        "THEN 'unchanged'\n"
    ) in statement
    assert (
        "LEFT JOIN (SELECT r.`order_id`, r.`_icetide_change_ts`, r.`_icetide_change_seq`, "
        "r.`_icetide_change_phase`, "
        "r.`_icetide_values_hash`, r._file AS `_icetide_silver_file`, r._pos AS `_icetide_silver_pos`, "
        "TRUE AS `_icetide_in_silver` FROM `glue_catalog`.`silver`.`orders` r) t\n"
    ) in statement
    assert "`note`" not in statement.split("LEFT JOIN", 1)[1]
    assert "UNION" not in statement
    assert "`_icetide_values_hash` IS" not in statement


def test_the_fill_stores_the_values_hash_in_rows_stored_without_one() -> None:
    assert fill_values_hash_sql(TABLE, [("note", "string"), ("it's", "binary")]) == (
        "UPDATE `glue_catalog`.`silver`.`orders` SET `_icetide_values_hash` = "
        "xxhash64(to_json(named_struct('note', CAST(`note` AS STRING), 'it\\'s', hex(`it's`)), "
        "map('ignoreNullFields', 'true'))) "
        "WHERE `_icetide_values_hash` IS NULL"
    )


def test_soft_deletes_never_compare_hashes() -> None:
    with pytest.raises(ValueError, match="soft deletes compare values"):
        classify_changes_sql(
            TABLE, "v", ["order_id"], ["order_id", "note"], soft_delete=True, compare_hashes=True
        )


def test_table_properties_are_set_as_quoted_literals() -> None:
    assert set_properties_sql(TABLE, {"write.metadata.metrics.column.a'b": "counts"}) == (
        "ALTER TABLE `glue_catalog`.`silver`.`orders` SET TBLPROPERTIES "
        "('write.metadata.metrics.column.a\\'b' = 'counts')"
    )
    with pytest.raises(ValueError, match="at least one"):
        set_properties_sql(TABLE, {})
