"""SQL text of table maintenance: Iceberg's own Spark procedures and the metadata tables that
measure a table, built as plain strings so they can be read and tested without Spark.

Procedures take the table as a string argument that Iceberg parses as a multi-part name: its parts
are backtick-quoted by :func:`icetide_glue.table_sql.qualified_name` inside a quoted string literal, so a
name with a dot, a quote or a backtick still means exactly that table. Times are ISO-8601 UTC
literals with their zone, whatever the session's time zone.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime

from icetide_glue.table_sql import call_procedure_sql, quote_identifier, string_literal, table_argument


class RewriteStrategy:
    """``rewrite_data_files`` strategies: sort when the table has a sort order, else bin-pack."""

    BINPACK = "binpack"
    SORT = "sort"


def timestamp_literal(moment: datetime) -> str:
    """``TIMESTAMP '2026-11-24T10:00:00.000000Z'`` for an aware time (naive times are refused:
    the session's zone would decide which instant they mean)."""
    if moment.tzinfo is None:
        raise ValueError(f"a maintenance time must carry its zone, got {moment.isoformat()}")
    return f"TIMESTAMP {string_literal(moment.astimezone(UTC).strftime('%Y-%m-%dT%H:%M:%S.%fZ'))}"


def options_map(options: Mapping[str, str]) -> str:
    """``map('key', 'value', ...)``, the form procedures take their options in."""
    pairs = ", ".join(f"{string_literal(k)}, {string_literal(v)}" for k, v in options.items())
    return f"map({pairs})"


def rewrite_data_files_sql(
    catalog: str, database: str, table: str, strategy: str, options: Mapping[str, str]
) -> str:
    """Compact small data files, and rewrite data files with deletes (the rows they no longer
    hold are dropped); ``sort`` writes the rows in the table's own sort order."""
    if strategy not in (RewriteStrategy.BINPACK, RewriteStrategy.SORT):
        raise ValueError(f"unknown rewrite strategy {strategy!r}")
    arguments = [("table", table_argument(database, table)), ("strategy", string_literal(strategy))]
    if options:
        arguments.append(("options", options_map(options)))
    return call_procedure_sql(catalog, "rewrite_data_files", arguments)


def rewrite_position_delete_files_sql(
    catalog: str, database: str, table: str, options: Mapping[str, str]
) -> str:
    """Compact position-delete files (and drop those whose data files are gone)."""
    arguments = [("table", table_argument(database, table))]
    if options:
        arguments.append(("options", options_map(options)))
    return call_procedure_sql(catalog, "rewrite_position_delete_files", arguments)


def expire_snapshots_sql(
    catalog: str, database: str, table: str, older_than: datetime, retain_last: int
) -> str:
    """Expire snapshots older than ``older_than``, keeping at least the newest ``retain_last``,
    and delete the files only they referenced."""
    if retain_last < 1:
        raise ValueError(f"expiring snapshots must keep at least one, got retain_last={retain_last}")
    return call_procedure_sql(
        catalog,
        "expire_snapshots",
        [
            ("table", table_argument(database, table)),
            ("older_than", timestamp_literal(older_than)),
            ("retain_last", str(int(retain_last))),
        ],
    )


def remove_orphan_files_sql(catalog: str, database: str, table: str, older_than: datetime) -> str:
    """Delete files under the table's location that no snapshot references and that were written
    before ``older_than`` (a younger file may belong to a commit still in flight)."""
    return call_procedure_sql(
        catalog,
        "remove_orphan_files",
        [("table", table_argument(database, table)), ("older_than", timestamp_literal(older_than))],
    )


def file_counts_sql(table: str) -> str:
    """Live files of the current snapshot by content (0 data, 1 position deletes, 2 equality
    deletes): count, bytes and records. ``table`` is an already qualified name (metadata only)."""
    return (
        "SELECT content, count(*) AS files, coalesce(sum(file_size_in_bytes), 0) AS bytes, "  # noqa: S608
        f"coalesce(sum(record_count), 0) AS records FROM {table}.{quote_identifier('files')} GROUP BY content"
    )


def snapshot_count_sql(table: str) -> str:
    """How many snapshots the table's metadata keeps (what expiry shrinks)."""
    return f"SELECT count(*) AS snapshots FROM {table}.{quote_identifier('snapshots')}"  # noqa: S608
