"""SQL text for icetide's tables (silver, its tombstone table, its run ledger): their creation,
schema changes, properties, Iceberg's procedures and the ledger's records, built as plain strings
so it can be read and tested without Spark. The merge's own SQL is icetide_glue.merge.sql.

Every identifier is quoted with backticks and every value is a quoted literal: source column names
come from other people's databases and may contain anything.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from icetide_glue.sql_text import qualified_name, quote_identifier, string_literal

# Snapshot summary keys of the commit that brings a run onto main (icetide_glue.merge.apply).
RUN_ID_PROPERTY = "icetide.run-id"
RUN_STATS_PROPERTY = "icetide.run-stats"
# Which of the job's merge paths committed a run: "driver" (icetide_glue.driver.merge) or "spark".
MERGE_PATH_PROPERTY = "icetide.merge-path"


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
) -> str:
    """CREATE TABLE for an unpartitioned Iceberg table (silver, its tombstone table, its ledger).

    ``table`` is an already qualified name (see :func:`qualified_name`).
    """
    if not columns:
        raise ValueError(f"CREATE TABLE {table} needs at least one column")
    lines = [f"CREATE TABLE {table} (", column_definitions(columns), ")", "USING iceberg"]
    if properties:
        pairs = ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in properties.items())
        lines.append(f"TBLPROPERTIES ({pairs})")
    return "\n".join(lines)


def set_properties_sql(table: str, properties: Mapping[str, str]) -> str:
    """ALTER TABLE ... SET TBLPROPERTIES for ``properties`` (at least one)."""
    if not properties:
        raise ValueError(f"setting properties of {table} needs at least one")
    pairs = ", ".join(f"{string_literal(k)} = {string_literal(v)}" for k, v in properties.items())
    return f"ALTER TABLE {table} SET TBLPROPERTIES ({pairs})"


def write_ordered_by_sql(table: str, columns: Sequence[str]) -> str:
    """Give the table a sort order: Iceberg then writes (and compacts) rows in this order, so each
    data file covers a narrow band of it and its bounds let a read skip the file."""
    if not columns:
        raise ValueError(f"a sort order for {table} needs at least one column")
    return f"ALTER TABLE {table} WRITE ORDERED BY {', '.join(quote_identifier(c) for c in columns)}"


# The namespace Iceberg registers its procedures in, in every Iceberg catalog.
PROCEDURE_NAMESPACE = "system"


def procedure_name(catalog: str, procedure: str) -> str:
    """``catalog.system.<procedure>``, each part quoted."""
    return qualified_name(catalog, PROCEDURE_NAMESPACE, procedure)


def table_argument(database: str, table: str) -> str:
    """A procedure's ``table =>`` argument: ``'`db`.`table`'`` (Iceberg parses the quoted parts
    back, so a name with a dot, a quote or a backtick still means exactly that table)."""
    return string_literal(qualified_name(database, table))


def call_procedure_sql(catalog: str, procedure: str, arguments: Sequence[tuple[str, str]]) -> str:
    """``CALL catalog.system.<procedure>(name => value, ...)``; values are already SQL literals."""
    named = ", ".join(f"{name} => {value}" for name, value in arguments)
    return f"CALL {procedure_name(catalog, procedure)}({named})"


MAIN_BRANCH = "main"


def add_columns_sql(table: str, columns: Sequence[tuple[str, str]]) -> str:
    """One ALTER TABLE that adds every new column (one metadata commit, nullable columns)."""
    return f"ALTER TABLE {table} ADD COLUMNS (\n{column_definitions(columns)}\n)"


def alter_column_type_sql(table: str, column: str, sql_type: str) -> str:
    """Widen one column (Iceberg accepts int→bigint, float→double, a larger decimal precision)."""
    return f"ALTER TABLE {table} ALTER COLUMN {quote_identifier(column)} TYPE {sql_type}"


# The run ledger: the runs whose snapshots maintenance may expire (icetide_glue.commit.run_ledger).
LEDGER_COLUMNS = (
    ("run_id", "string"),
    ("snapshot_id", "bigint"),
    ("committed_at", "timestamp"),
    ("run_stats", "string"),
)


def record_committed_runs_sql(ledger: str, table: str) -> str:
    """Add to the ledger every run that committed one of ``table``'s current ancestors and that
    the ledger does not hold yet (idempotent: a maintenance retry records nothing twice)."""
    snapshots, history = f"{table}.{quote_identifier('snapshots')}", f"{table}.{quote_identifier('history')}"
    run_id = f"s.summary[{string_literal(RUN_ID_PROPERTY)}]"
    return "\n".join(
        [
            f"INSERT INTO {ledger}",
            f"SELECT {run_id} AS run_id, s.snapshot_id, s.committed_at,",
            f"       s.summary[{string_literal(RUN_STATS_PROPERTY)}] AS run_stats",
            f"FROM {snapshots} s JOIN {history} h ON s.snapshot_id = h.snapshot_id",
            f"WHERE h.is_current_ancestor AND {run_id} IS NOT NULL",
            f"  AND NOT EXISTS (SELECT 1 FROM {ledger} l WHERE l.snapshot_id = s.snapshot_id)",  # noqa: S608
        ]
    )


def rolled_back_snapshots_sql(table: str) -> str:
    """``table``'s snapshots that main never made current (rolled back, staged on a branch, or
    under the published head of a run an earlier version staged): the runs they carry, if any,
    must load again, so the ledger must not hold them. Such a staged removal's snapshot carries no
    run id: nothing to forget."""
    snapshots, history = f"{table}.{quote_identifier('snapshots')}", f"{table}.{quote_identifier('history')}"
    return "\n".join(
        [
            f"SELECT s.snapshot_id FROM {snapshots} s",  # noqa: S608
            f"LEFT JOIN {history} h ON s.snapshot_id = h.snapshot_id AND h.is_current_ancestor",
            "WHERE h.snapshot_id IS NULL",
        ]
    )


def forget_snapshots_sql(ledger: str, snapshot_ids: Sequence[int]) -> str:
    """Delete the ledger's records of these snapshots."""
    if not snapshot_ids:
        raise ValueError("no snapshot to forget")
    listed = ", ".join(str(int(snapshot_id)) for snapshot_id in snapshot_ids)
    return f"DELETE FROM {ledger} WHERE snapshot_id IN ({listed})"  # noqa: S608


def recorded_run_sql(ledger: str, table: str, run_id: str) -> str:
    """Find ``run_id`` in the ledger, if the snapshot it committed is gone (expired).

    A snapshot still in ``table``'s metadata but not found by ``find_committed_run`` is no
    ancestor any more (rolled back): its run must be loaded again, so the ledger does not count.
    """
    snapshots = f"{table}.{quote_identifier('snapshots')}"
    return "\n".join(
        [
            f"SELECT l.snapshot_id, l.run_stats FROM {ledger} l",  # noqa: S608
            f"WHERE l.run_id = {string_literal(run_id)}",
            f"  AND NOT EXISTS (SELECT 1 FROM {snapshots} s WHERE s.snapshot_id = l.snapshot_id)",  # noqa: S608
            "ORDER BY l.committed_at DESC",
            "LIMIT 1",
        ]
    )
