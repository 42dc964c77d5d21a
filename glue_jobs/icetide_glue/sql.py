"""SQL text for the silver table, built as plain strings so it can be read and tested without Spark.

Every identifier is quoted with backticks and every value is a quoted literal: source column names
come from other people's databases and may contain anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from enum import StrEnum

from icetide_glue.columns import ACTION, CHANGE_SEQ, CHANGE_TS, DELETE, IN_SILVER, OP

# Snapshot summary keys written with every icetide commit (see commit.py).
RUN_ID_PROPERTY = "icetide.run-id"
RUN_STATS_PROPERTY = "icetide.run-stats"


class ChangeAction(StrEnum):
    """What one deduplicated change does to silver; the MERGE applies the first three."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    UNCHANGED = "unchanged"


def quote_identifier(name: str) -> str:
    """Backtick-quote one name part (a backtick inside is doubled, as Spark SQL expects)."""
    return "`" + name.replace("`", "``") + "`"


def qualified_name(*parts: str) -> str:
    """``catalog.database.table`` (or any number of parts), each part quoted."""
    return ".".join(quote_identifier(part) for part in parts)


def string_literal(value: str) -> str:
    """A Spark SQL string literal: backslashes and single quotes escaped."""
    return "'" + value.replace("\\", "\\\\").replace("'", "\\'") + "'"


def column_definitions(columns: Sequence[tuple[str, str]]) -> str:
    """``name type`` pairs for CREATE TABLE / ADD COLUMNS, one per line."""
    return ",\n".join(f"  {quote_identifier(name)} {sql_type}" for name, sql_type in columns)


def create_namespace_sql(catalog: str, database: str) -> str:
    """Create the silver database when it is missing (on AWS the stack creates it first)."""
    return f"CREATE NAMESPACE IF NOT EXISTS {qualified_name(catalog, database)}"


def create_table_sql(
    table: str,
    columns: Sequence[tuple[str, str]],
    properties: Mapping[str, str],
    bucket_column: str | None = None,
    buckets: int = 0,
) -> str:
    """CREATE TABLE for an Iceberg silver table, optionally bucketed on one key column.

    ``table`` is an already qualified name (see :func:`qualified_name`).
    """
    if not columns:
        raise ValueError(f"CREATE TABLE {table} needs at least one column")
    lines = [f"CREATE TABLE {table} (", column_definitions(columns), ")", "USING iceberg"]
    if bucket_column is not None:
        if buckets < 1:
            raise ValueError(f"bucket count for {bucket_column} must be positive, got {buckets}")
        lines.append(f"PARTITIONED BY (bucket({buckets}, {quote_identifier(bucket_column)}))")
    if properties:
        pairs = ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in properties.items())
        lines.append(f"TBLPROPERTIES ({pairs})")
    return "\n".join(lines)


def add_columns_sql(table: str, columns: Sequence[tuple[str, str]]) -> str:
    """One ALTER TABLE that adds every new column (one metadata commit, nullable columns)."""
    return f"ALTER TABLE {table} ADD COLUMNS (\n{column_definitions(columns)}\n)"


def alter_column_type_sql(table: str, column: str, sql_type: str) -> str:
    """Widen one column (Iceberg accepts int→bigint, float→double, a larger decimal precision)."""
    return f"ALTER TABLE {table} ALTER COLUMN {quote_identifier(column)} TYPE {sql_type}"


def order_guard(source: str = "s", target: str = "t") -> str:
    """True when the source change is newer than the silver row: (change time, sequence) is larger.

    A silver row without a change time (written by something else) is always overwritten; a missing
    sequence sorts below every sequence. Equal time and sequence means the same change read twice
    (a ``gte`` watermark re-reads its boundary rows): not newer, so it changes nothing.
    """
    s_ts, t_ts = f"{source}.{quote_identifier(CHANGE_TS)}", f"{target}.{quote_identifier(CHANGE_TS)}"
    s_seq = f"coalesce({source}.{quote_identifier(CHANGE_SEQ)}, '')"
    t_seq = f"coalesce({target}.{quote_identifier(CHANGE_SEQ)}, '')"
    return f"({t_ts} IS NULL OR {s_ts} > {t_ts} OR ({s_ts} = {t_ts} AND {s_seq} > {t_seq}))"


def key_condition(keys: Sequence[str], source: str = "s", target: str = "t") -> str:
    """``t.k1 = s.k1 AND t.k2 = s.k2`` (keys are validated non-null before the merge)."""
    if not keys:
        raise ValueError("a key condition needs at least one key column")
    return " AND ".join(f"{target}.{quote_identifier(k)} = {source}.{quote_identifier(k)}" for k in keys)


def same_values(columns: Sequence[str], source: str = "s", target: str = "t") -> str:
    """True when every listed column of the change equals silver's, nulls included (``<=>``)."""
    if not columns:
        raise ValueError("comparing values needs at least one column")
    return " AND ".join(f"{source}.{quote_identifier(c)} <=> {target}.{quote_identifier(c)}" for c in columns)


def classify_changes_sql(
    table: str, source_view: str, keys: Sequence[str], value_columns: Sequence[str] = ()
) -> str:
    """Label each deduplicated change with the :class:`ChangeAction` the MERGE will take.

    It uses the same key join and order guard as :func:`merge_sql`, which is what makes the
    manifest's counts the MERGE's counts. An update whose ``value_columns`` (the source's columns,
    not icetide's) all equal silver's is ``unchanged``: a ``gte`` watermark re-reads its boundary
    rows every run, and DMS stamps them with a new transfer time, so without this check every
    re-read would rewrite an identical row. Only those columns of silver are read.
    """
    op = f"s.{quote_identifier(OP)}"
    in_silver = f"t.{quote_identifier(IN_SILVER)}"
    compared = [c for c in value_columns if c not in keys]
    silver_columns = ", ".join(quote_identifier(c) for c in (*keys, CHANGE_TS, CHANGE_SEQ, *compared))
    same_row = (
        [f"  WHEN {op} <> '{DELETE}' AND {same_values(compared)} THEN '{ChangeAction.UNCHANGED}'"]
        if compared
        else []
    )
    return "\n".join(
        [
            "SELECT s.*, CASE",
            f"  WHEN {in_silver} IS NULL AND {op} <> '{DELETE}' THEN '{ChangeAction.INSERT}'",
            f"  WHEN {in_silver} IS NULL THEN '{ChangeAction.UNCHANGED}'",
            f"  WHEN NOT {order_guard()} THEN '{ChangeAction.UNCHANGED}'",
            f"  WHEN {op} = '{DELETE}' THEN '{ChangeAction.DELETE}'",
            *same_row,
            f"  ELSE '{ChangeAction.UPDATE}'",
            f"END AS {quote_identifier(ACTION)}",
            f"FROM {quote_identifier(source_view)} s",
            # Every name is quoted by quote_identifier: nothing in this text comes unquoted from input.
            f"LEFT JOIN (SELECT {silver_columns}, TRUE AS {quote_identifier(IN_SILVER)} FROM {table}) t",  # noqa: S608
            f"ON {key_condition(keys)}",
        ]
    )


def merge_sql(table: str, source_view: str, keys: Sequence[str], columns: Sequence[str]) -> str:
    """The one MERGE that inserts, updates and deletes a run's changes in a single commit.

    ``columns`` are every silver column (source and metadata): the source view carries all of
    them, with nulls for columns the source no longer has. The order guard sits in the matched
    clauses, so an older change never overwrites a newer row even if the view holds one.
    """
    if not columns:
        raise ValueError(f"MERGE INTO {table} needs the silver column list")
    op = f"s.{quote_identifier(OP)}"
    guard = order_guard()
    assignments = ", ".join(f"t.{quote_identifier(c)} = s.{quote_identifier(c)}" for c in columns)
    names = ", ".join(quote_identifier(c) for c in columns)
    values = ", ".join(f"s.{quote_identifier(c)}" for c in columns)
    return "\n".join(
        [
            f"MERGE INTO {table} t",
            f"USING {quote_identifier(source_view)} s",
            f"ON {key_condition(keys)}",
            f"WHEN MATCHED AND {op} = '{DELETE}' AND {guard} THEN DELETE",
            f"WHEN MATCHED AND {op} <> '{DELETE}' AND {guard} THEN UPDATE SET {assignments}",
            f"WHEN NOT MATCHED AND {op} <> '{DELETE}' THEN INSERT ({names}) VALUES ({values})",  # noqa: S608
        ]
    )


def committed_snapshot_sql(table: str, run_id: str) -> str:
    """Find the snapshot, among the current table state's ancestors, committed by ``run_id``.

    Snapshots that were rolled back are not ancestors: their run must be loaded again.
    """
    snapshots, history = f"{table}.{quote_identifier('snapshots')}", f"{table}.{quote_identifier('history')}"
    return "\n".join(
        [
            f"SELECT s.snapshot_id, s.summary[{string_literal(RUN_STATS_PROPERTY)}] AS run_stats",
            f"FROM {snapshots} s JOIN {history} h ON s.snapshot_id = h.snapshot_id",
            f"WHERE h.is_current_ancestor AND s.summary[{string_literal(RUN_ID_PROPERTY)}] = "
            f"{string_literal(run_id)}",
            "ORDER BY s.committed_at DESC",
            "LIMIT 1",
        ]
    )
