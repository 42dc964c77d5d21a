"""The merge's SQL text (the Spark path's classification, a reconcile's candidates, the tombstone
table's writes), built as plain strings so it can be read and tested without Spark.

Every identifier is quoted with backticks and every value is a quoted literal: source column names
come from other people's databases and may contain anything.
"""

from __future__ import annotations

from collections.abc import Sequence

from icetide_glue.columns import (
    ACTION,
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DELETE,
    DELETED_AT,
    HAS_IMAGE,
    HAS_TOMBSTONE,
    IMAGE_PHASE,
    IMAGE_SEQ,
    IMAGE_TS,
    IN_SILVER,
    IN_TOMBSTONES,
    KEEP_TOMBSTONE,
    MATCHED,
    OP,
    SILVER_FILE,
    SILVER_POS,
    TAKE_IMAGE,
    TOMBSTONE_COLUMNS,
    VALUES_HASH,
    silver_value_column,
)
from icetide_glue.decision import (
    CHANGE,
    FALSE,
    KEY_HAS_TOMBSTONE,
    ORDER_COLUMNS,
    SILVER,
    TOMBSTONE,
    And,
    Col,
    Compare,
    Expr,
    Facts,
    IsNull,
    Lit,
    Not,
    Or,
    SameValues,
    Side,
    action_case_sql,
    newer,
    tombstone_rule,
)
from icetide_glue.sql_text import quote_identifier, string_literal


def order_guard(source: str = CHANGE, target: str = SILVER, source_arrives: bool | None = True) -> str:
    """:func:`icetide_glue.decision.newer` of the change, row or tombstone ``source`` over
    ``target`` (aliases), as SQL text."""
    return newer(Side(source), Side(target), source_arrives).sql()


def take_image(tombstones: bool) -> Expr:
    """True when a soft delete keeps the values it carries (``_icetide_image_ts`` / ``_seq`` /
    ``_phase`` say whose they are): they are newer than silver's row, and not older than an update
    the key's tombstone says was skipped (silver holds its values). A delete tombstone says
    nothing about values (and may be this very delete, remembered before a failed silver commit)."""
    image = Side(CHANGE, IMAGE_TS, IMAGE_SEQ, IMAGE_PHASE)
    parts: list[Expr] = [
        Col(CHANGE, HAS_IMAGE),
        Or((IsNull(Col(SILVER, IN_SILVER)), newer(image, Side(SILVER)))),
    ]
    if tombstones:
        parts.append(
            Or(
                (
                    IsNull(Col(TOMBSTONE, IN_TOMBSTONES)),
                    Compare(Col(TOMBSTONE, OP), "=", Lit(DELETE)),
                    Not(newer(Side(TOMBSTONE), image, False)),
                )
            )
        )
    return And(tuple(parts))


def key_condition(keys: Sequence[str], source: str = "s", target: str = "t") -> str:
    """``t.k1 = s.k1 AND t.k2 = s.k2`` (keys are validated non-null before the merge)."""
    if not keys:
        raise ValueError("a key condition needs at least one key column")
    return " AND ".join(f"{target}.{quote_identifier(k)} = {source}.{quote_identifier(k)}" for k in keys)


def values_hash_sql(columns: Sequence[tuple[str, str]], alias: str | None = None) -> str:
    """An 8-byte hash (Spark's ``xxhash64``) of a row's ``columns``, given as (name, Spark type
    name as ``DataType.simpleString()`` spells it), of the table ``alias`` (none: unqualified).

    Two rows of scalar columns hash alike when :class:`icetide_glue.decision.SameValues` holds for
    them (strings as text), however silver's schema moved in between: the hash covers JSON text of
    the values (null fields left out, whatever the session's
    ``spark.sql.jsonGenerator.ignoreNullFields``, so a column added later with nulls changes
    nothing; an int reads as a bigint does, a decimal as its wider precision with the same scale
    does); a float is read as the double it widens to, and
    -0.0 as 0.0 (``<=>`` holds for them); a timestamp is its microseconds since the epoch (the
    session's time zone cannot change it); binary is hex. A changed row hashes alike only by a
    64-bit collision. One definition for the batch's side, silver's stored rows and the fill of
    rows stored without it (:func:`fill_values_hash_sql`); the driver path computes the same number
    (icetide_glue.driver.values_hash).
    Not for struct, array or map columns: Spark's text of those is ambiguous
    (icetide_glue.merge.apply.values_hash_types compares their values instead).
    """
    if not columns:
        raise ValueError("hashing values needs at least one column")
    prefix = f"{alias}." if alias else ""
    fields = ", ".join(
        f"{string_literal(name)}, {_exact_text(prefix + quote_identifier(name), kind)}"
        for name, kind in columns
    )
    return f"xxhash64(to_json(named_struct({fields}), map('ignoreNullFields', 'true')))"


def _exact_text(value: str, kind: str) -> str:
    """SQL text of a value that compares as the value does (see :func:`values_hash_sql`)."""
    if kind == "binary":
        return f"hex({value})"
    if kind == "timestamp":
        return f"CAST(unix_micros({value}) AS STRING)"
    if kind in ("float", "double"):
        return f"CAST(CASE WHEN {value} = 0 THEN 0.0D ELSE CAST({value} AS DOUBLE) END AS STRING)"
    return f"CAST({value} AS STRING)"


def compared_columns(value_columns: Sequence[str], keys: Sequence[str]) -> list[str]:
    """The source columns the classification compares with silver's: all but the keys (names
    case-insensitive, as the batch's key may be spelled otherwise than silver's)."""
    lowered = {key.lower() for key in keys}
    return [c for c in value_columns if c.lower() not in lowered]


def classify_changes_sql(
    table: str,
    source_view: str,
    keys: Sequence[str],
    value_columns: Sequence[str] = (),
    tombstone_table: str | None = None,
    soft_delete: bool = False,
    broadcast_changes: bool = False,
    compare_hashes: bool = False,
) -> str:
    """Label each deduplicated change with the :class:`ChangeAction` the run's commit takes, and
    whether the key's order memory must keep it (``_icetide_keep_tombstone``).

    Its labels are the commit: ``_icetide_matched`` says whether silver holds the key, and then
    ``_icetide_silver_file`` / ``_icetide_silver_pos`` say where (Iceberg's ``_file`` and ``_pos``):
    the run removes that row by position and appends the change's row
    (icetide_glue.merge.position_deletes), so the manifest's counts are the commit's counts. An update
    whose ``value_columns`` (the source's columns, not icetide's) all equal silver's is
    ``unchanged``: a ``gte`` watermark re-reads its boundary rows every run, and DMS stamps them
    with a new transfer time, so without this check every re-read would rewrite an identical row.
    Only those columns of silver are read (and, with soft deletes, kept for the commit), or,
    with ``value_types``, the stored hash of them.

    ``tombstone_table`` (the tombstone table) holds, per key, the newest delete and the newest update
    skipped as unchanged: a change it does not pass (:func:`passes_memory`) is ``unchanged``. The
    changes to remember are the deletes and the skipped updates newer than silver's row and the
    memory. With ``soft_delete`` a delete keeps the row (so a delete of a key silver lacks, when
    it carries values, inserts it as deleted), a revived row is never unchanged, and
    ``_icetide_take_image`` (:func:`take_image`) says whether a delete keeps the values it carries
    or silver's (``_icetide_silver_value_<i>``: silver's value of the i-th compared column).

    Silver and the tombstone table are read only where the batch can match
    (:func:`rows_of_batch`): ``table`` and ``tombstone_table`` may be views of their rows in the files
    the batch's key ranges can touch (icetide_glue.merge.planned_scan), and with ``broadcast_changes``
    the batch's keys are broadcast into their scans, so only their rows of the batch's keys reach
    the joins, never whole tables.

    ``compare_hashes`` says silver stores the hash of its values (``_icetide_values_hash``, hard
    deletes only; every row, once the job has filled those stored without one:
    :func:`fill_values_hash_sql`) and the batch view carries the hash of its own: the hashes are
    compared instead of the values, and no value column of silver is read.
    """
    in_silver = f"t.{quote_identifier(IN_SILVER)}"
    compared = compared_columns(value_columns, keys)
    hashed = compare_hashes and bool(compared)
    if hashed and soft_delete:
        raise ValueError("a soft delete may keep silver's values: soft deletes compare values, not hashes")
    silver_values = [VALUES_HASH] if hashed else [*compared, *([DELETED_AT] if soft_delete else [])]
    silver_rows = rows_of_batch(
        table,
        source_view,
        keys,
        [*keys, *ORDER_COLUMNS, *silver_values],
        IN_SILVER,
        broadcast_changes,
        row_positions=True,
    )
    kept_values = (
        [
            f"t.{quote_identifier(c)} AS {quote_identifier(silver_value_column(i))},"
            for i, c in enumerate(compared)
        ]
        if soft_delete
        else []
    )
    same: Expr | None = None
    if compared:
        same = SameValues((VALUES_HASH,)) if hashed else SameValues(tuple(compared))
    tombstones = tombstone_table is not None
    keeps_image = take_image(tombstones)
    facts = Facts(tombstones=tombstones, same=same, soft_delete=soft_delete, keeps_image=keeps_image)
    has_tombstone = KEY_HAS_TOMBSTONE if tombstones else FALSE
    tombstone_join = []
    if tombstone_table is not None:
        tombstone_rows = rows_of_batch(
            tombstone_table,
            source_view,
            keys,
            (*keys, *ORDER_COLUMNS, OP),
            IN_TOMBSTONES,
            broadcast_changes,
        )
        tombstone_join = [f"LEFT JOIN ({tombstone_rows}) m", f"ON {key_condition(keys, 's', 'm')}"]
    case = action_case_sql(facts)
    return "\n".join(
        [
            f"SELECT s.*, {case[0]}",
            *case[1:-1],
            f"{case[-1]} AS {quote_identifier(ACTION)},",
            *([f"{keeps_image.sql()} AS {quote_identifier(TAKE_IMAGE)},"] if soft_delete else []),
            f"{in_silver} IS NOT NULL AS {quote_identifier(MATCHED)},",
            f"t.{quote_identifier(SILVER_FILE)}, t.{quote_identifier(SILVER_POS)},",
            *kept_values,
            f"{has_tombstone.sql()} AS {quote_identifier(HAS_TOMBSTONE)},",
            f"{tombstone_rule(facts).sql()} AS {quote_identifier(KEEP_TOMBSTONE)}",
            f"FROM {quote_identifier(source_view)} s",
            f"LEFT JOIN ({silver_rows}) t",
            f"ON {key_condition(keys)}",
            *tombstone_join,
        ]
    )


def rows_of_batch(
    table: str,
    source_view: str,
    keys: Sequence[str],
    columns: Sequence[str],
    marker: str,
    broadcast_changes: bool = False,
    row_positions: bool = False,
) -> str:
    """For the rows a batch can match of a keyed table (silver, or its tombstone table): its
    ``columns``, with ``row_positions`` each row's data file and position in it (Iceberg's
    ``_file`` and ``_pos``) as ``_icetide_silver_file`` / ``_pos``, and last a ``marker`` column
    that is true.

    ``table`` is the table, or a view of its rows in the files the batch's keys can be in
    (icetide_glue.merge.planned_scan: the key ranges go to Iceberg's planning, never into this text;
    such a view must be read with its key, as here);
    ``broadcast_changes`` adds a semi join with the batch's keys, broadcast into the scan, so the
    classification's join sees only matching rows instead of shuffling all of silver's. It drops
    only rows whose key is not in the batch, which the classification's left join would not match
    anyway.
    """
    hint = "/*+ BROADCAST(k) */ " if broadcast_changes else ""
    selected = ", ".join(f"r.{quote_identifier(c)}" for c in columns)
    if row_positions:
        selected += f", r._file AS {quote_identifier(SILVER_FILE)}, r._pos AS {quote_identifier(SILVER_POS)}"
    lines = [
        # Every name is quoted by quote_identifier: nothing in this text comes unquoted from input.
        f"SELECT {hint}{selected}, TRUE AS {quote_identifier(marker)} FROM {table} r",  # noqa: S608
    ]
    if broadcast_changes:
        lines.append(f"LEFT SEMI JOIN {quote_identifier(source_view)} k ON {key_condition(keys, 'k', 'r')}")
    return " ".join(lines)


def rows_without_values_hash_sql(table: str) -> str:
    """One row of ``table`` stored without a values hash, if any: Iceberg reads only the data
    files whose null counts say they may hold one. The table as it is now, not as of a snapshot:
    a snapshot's time travel reads the schema of its time, where a hash column dropped and added
    again since is another column."""
    hash_column = quote_identifier(VALUES_HASH)
    return f"SELECT 1 FROM {table} WHERE {hash_column} IS NULL LIMIT 1"  # noqa: S608 (quoted names)


def fill_values_hash_sql(table: str, columns: Sequence[tuple[str, str]]) -> str:
    """Store the values hash (:func:`values_hash_sql` of ``columns``, (name, type)) in every row of
    ``table`` stored without one: rows written before the table stored it. A commit of its own,
    before a classification that compares stored hashes only."""
    hash_column = quote_identifier(VALUES_HASH)
    return (
        f"UPDATE {table} SET {hash_column} = {values_hash_sql(columns)} "  # noqa: S608 (quoted names)
        f"WHERE {hash_column} IS NULL"
    )


def reconcile_candidates_sql(
    table: str,
    changes_view: str,
    extraction_view: str,
    keys: Sequence[str],
    tombstone_table: str,
    started_at_micros: int,
    reconcile_sequence: str,
    soft_delete: bool = False,
) -> str:
    """The keys a reconcile deletes: live after this run's changes, changed at or before the key
    extraction started (``started_at_micros``, epoch microseconds), and absent from it.

    A key's state before the run is silver's row (live unless soft-deleted) with the newer change
    time of silver's row and the key's tombstone entry (a skipped update newer than the row says
    the source still had the key then; a delete entry newer than a live row is a failed silver
    commit, which the retry repeats). The run's change of the key (``changes_view``, one per key)
    decides instead when it passes that state as the classification would: an I or U newer,
    a D not older. A key only in the batch is live after an I or U.

    A tombstone entry that is this reconcile's own delete (``started_at_micros``,
    ``reconcile_sequence``) keeps its key a candidate: a retry after a failed silver commit reads
    the tombstones this run wrote and must reach the same result as the first attempt.
    """
    in_silver, in_tombstones = quote_identifier(IN_SILVER), quote_identifier(IN_TOMBSTONES)
    ts, seq, op = quote_identifier(CHANGE_TS), quote_identifier(CHANGE_SEQ), quote_identifier(OP)
    phase = quote_identifier(CHANGE_PHASE)
    quoted = [quote_identifier(k) for k in keys]
    alive = f" AND t.{quote_identifier(DELETED_AT)} IS NULL" if soft_delete else ""
    # Two stored rows: neither arrives now, so times alone say which is later.
    tombstone_rows = f"SELECT {', '.join(quoted)}, {ts}, {seq}, {phase}, {op}, TRUE AS {in_tombstones}"
    tombstone_rows += f" FROM {tombstone_table}"
    tombstone_newer = (
        f"m.{in_tombstones} IS NOT NULL AND (t.{in_silver} IS NULL OR {order_guard('m', 't', None)})"
    )
    silver_columns = ", ".join(
        [*quoted, ts, seq, phase, *([quote_identifier(DELETED_AT)] if soft_delete else [])]
    )
    state_keys = ", ".join(f"coalesce(t.{k}, m.{k}) AS {k}" for k in quoted)
    batch_wins = (
        f"s.{quoted[0]} IS NOT NULL AND (b.{quoted[0]} IS NULL"
        f" OR (s.{op} <> '{DELETE}' AND {order_guard('s', 'b')})"
        f" OR (s.{op} = '{DELETE}' AND NOT {order_guard('b', 's', False)}))"
    )
    started = f"timestamp_micros({int(started_at_micros)})"
    own_delete = (
        f"m.{op} = '{DELETE}' AND m.{ts} = {started} AND m.{seq} = {string_literal(reconcile_sequence)}"
    )
    return "\n".join(
        [
            f"SELECT {', '.join(f'coalesce(s.{k}, b.{k}) AS {k}' for k in quoted)}",
            f"FROM {quote_identifier(changes_view)} s",
            "FULL OUTER JOIN (",
            f"  SELECT {state_keys}, ((t.{in_silver} IS NOT NULL{alive}) OR ({own_delete})) AS `live`,",
            f"    CASE WHEN {tombstone_newer} THEN m.{ts} ELSE t.{ts} END AS {ts},",
            f"    CASE WHEN {tombstone_newer} THEN m.{seq} ELSE t.{seq} END AS {seq},",
            f"    CASE WHEN {tombstone_newer} THEN m.{phase} ELSE t.{phase} END AS {phase}",
            # Quoted names only: nothing in this text comes unquoted from input.
            f"  FROM (SELECT {silver_columns}, TRUE AS {in_silver} FROM {table}) t",  # noqa: S608
            f"  FULL OUTER JOIN ({tombstone_rows}) m",
            f"  ON {key_condition(keys, 'm', 't')}",
            ") b",
            f"ON {key_condition(keys, 's', 'b')}",
            f"LEFT ANTI JOIN {quote_identifier(extraction_view)} e",
            "ON " + " AND ".join(f"e.{k} = coalesce(s.{k}, b.{k})" for k in quoted),
            f"WHERE CASE WHEN {batch_wins} THEN s.{op} <> '{DELETE}' AND s.{ts} <= {started}",
            f"  ELSE b.`live` AND (b.{ts} IS NULL OR b.{ts} <= {started}) END",
        ]
    )


def tombstone_merge_sql(tombstone_table: str, source_view: str, keys: Sequence[str]) -> str:
    """Move the entries of keys the order memory already holds forward, newest change winning.

    Only keys with an entry (the classification's ``_icetide_remembered``) are in the view: the
    run appends the others, so the MERGE is an inner join and never rewrites or shuffles the whole
    tombstone table to find keys it does not hold. Idempotent: the same changes merged again
    change nothing, so a retry after a failed silver commit re-applies them harmlessly. Only moves
    entries forward: what the run's classification saw stays true (a retry classifies again
    after this commit, and then finds the entries it appended: it merges them, changing nothing).
    """
    updates = ", ".join(f"m.{quote_identifier(c)} = r.{quote_identifier(c)}" for c in TOMBSTONE_COLUMNS)
    return "\n".join(
        [
            f"MERGE INTO {tombstone_table} m",
            f"USING {quote_identifier(source_view)} r",
            f"ON {key_condition(keys, 'r', 'm')}",
            f"WHEN MATCHED AND {order_guard('r', 'm')} THEN UPDATE SET {updates}",
        ]
    )


def expired_tombstones_condition(prune_before_micros: int) -> str:
    """Tombstone entries older than the retention (``prune_before_micros``, epoch microseconds,
    measured from a batch's newest change time, not the wall clock)."""
    return f"{quote_identifier(CHANGE_TS)} < timestamp_micros({int(prune_before_micros)})"


def newest_change_sql(table: str) -> str:
    """The newest change time a merge table (or its tombstone table) holds, as epoch microseconds
    (NULL: empty). Iceberg answers ``max`` from file metadata when the table has no delete files."""
    return f"SELECT unix_micros(max({quote_identifier(CHANGE_TS)})) AS newest FROM {table}"  # noqa: S608


def prune_tombstones_sql(tombstone_table: str, prune_before_micros: int) -> str:
    """Forget the tombstone entries older than the retention (one small commit)."""
    return f"DELETE FROM {tombstone_table} WHERE {expired_tombstones_condition(prune_before_micros)}"  # noqa: S608
