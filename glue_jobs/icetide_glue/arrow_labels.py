"""The classification of :func:`icetide_glue.sql.classify_changes_sql` for a hard-delete table,
computed on the driver over Arrow columns: each change's action, whether silver holds its key and
where, and whether the tombstone table must remember it.

The statement is the definition; this is the same decision table, column by column (the tests
run seeded random workloads through both and hold them to one oracle):

- ``memory_ok`` (:func:`icetide_glue.sql.passes_memory`): no tombstone entry, or a delete not
  older than it, or an insert or update newer than it;
- ``newer`` (:func:`icetide_glue.sql.order_guard`): the arriving change is a full-load row, or a
  CDC change over a stored full-load row; or silver's row has no change time, or the change's
  (time, sequence) is larger, a missing sequence below every other;
- ``same_row``: an insert or update whose compared columns all equal silver's (nulls equal, as
  ``<=>``; a float NaN equals NaN and -0.0 equals 0.0, as Spark compares them);
- action: not ``memory_ok`` → unchanged; no silver row → insert (a delete: unchanged); not
  ``newer`` → unchanged; a delete → delete; ``same_row`` → unchanged; otherwise update;
- remember: ``memory_ok`` and ``newer`` and (a delete, or a ``same_row`` of a key silver holds).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icetide_glue.arrow_silver import FILE_INDEX, POSITION, found_in_sorted
from icetide_glue.arrow_types import NotEligible, micros
from icetide_glue.columns import CDC_PHASE, CHANGE_TS, DELETE, FULL_LOAD_PHASE, OP
from icetide_glue.sql import ORDER_COLUMNS, ChangeAction

# Prefixes of silver's and the tombstone table's columns once joined with the changes.
SILVER_SIDE, MEMORY_SIDE = "_icetide_t:", "_icetide_m:"
_ROW = "_icetide_change_row"
_TWO_ROWS = "a key with more than one live silver row or tombstone entry"


@dataclass(frozen=True)
class Labels:
    """Per change (in the order of the labelled table): its action, whether silver holds its key
    (and then the row's file index and position), whether the tombstone table holds an entry for
    it and whether it must remember the change."""

    changes: pa.Table
    action: np.ndarray  # ChangeAction values
    matched: np.ndarray
    file_index: np.ndarray
    position: np.ndarray
    remembered: np.ndarray
    remember: np.ndarray

    def count(self, action: ChangeAction) -> int:
        return int((self.action == action.value).sum())

    @property
    def removes(self) -> np.ndarray:
        """The changing changes of keys silver holds: their silver rows go."""
        return self.matched & (self.action != ChangeAction.UNCHANGED.value)

    @property
    def writes(self) -> np.ndarray:
        """The changes that leave a row (hard deletes: inserts and updates)."""
        return np.isin(self.action, [ChangeAction.INSERT.value, ChangeAction.UPDATE.value])


def _side(table: pa.Table, prefix: str, keys: Sequence[str]) -> pa.Table:
    return table.rename_columns([name if name in keys else prefix + name for name in table.column_names])


@dataclass(frozen=True)
class Order:
    """What orders a change, an entry or a row: change time, sequence and phase, per row."""

    ts: pa.ChunkedArray
    seq: pa.ChunkedArray
    phase: pa.ChunkedArray

    @classmethod
    def of(cls, table: pa.Table, prefix: str = "") -> Order:
        return cls(*(table.column(prefix + name) for name in ORDER_COLUMNS))


def newer(a: Order, b: Order, a_arrives: bool) -> np.ndarray:
    """:func:`icetide_glue.sql.order_guard` of a over b (``a.ts`` never null here), ``a_arrives``
    saying which of the two the run brings (True: a; False: b, and a is stored)."""
    a_ts, b_ts = micros(a.ts), micros(b.ts)
    a_seq, b_seq = pc.fill_null(a.seq, ""), pc.fill_null(b.seq, "")
    missing = pc.is_null(b_ts)
    later = pc.fill_null(pc.greater(a_ts, b_ts), False)
    tie = pc.fill_null(pc.and_(pc.equal(a_ts, b_ts), pc.greater(a_seq, b_seq)), False)
    by_time = _numpy(pc.or_(pc.or_(missing, later), tie))
    if a_arrives:
        return _arrives_later(a, b) | by_time
    return ~_arrives_later(b, a) & by_time


def _arrives_later(arriving: Order, stored: Order) -> np.ndarray:
    """True where the arriving change is later than the stored one by their phases alone: a
    full-load row, or a CDC change over a full-load row."""
    full_load = _numpy(pc.fill_null(pc.equal(arriving.phase, FULL_LOAD_PHASE), False))
    cdc = _numpy(pc.fill_null(pc.equal(arriving.phase, CDC_PHASE), False))
    over_load = _numpy(pc.fill_null(pc.equal(stored.phase, FULL_LOAD_PHASE), False))
    return full_load | (cdc & over_load)


def _numpy(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def same_values(left: pa.ChunkedArray, right: pa.ChunkedArray) -> np.ndarray:
    """``left <=> right`` per row, as Spark compares the values of one type."""
    left, right = micros(left), micros(right)
    both_null = pc.and_(pc.is_null(left), pc.is_null(right))
    equal = pc.fill_null(pc.equal(left, right), False)
    if pa.types.is_floating(left.type):
        equal = pc.or_(equal, pc.fill_null(pc.and_(pc.is_nan(left), pc.is_nan(right)), False))
    return _numpy(pc.or_(both_null, equal))


def _joined(changes: pa.Table, silver_rows: pa.Table, memory_rows: pa.Table, keys: Sequence[str]) -> pa.Table:
    """Silver's row and the tombstone entry of each change's key (null where there is none), side
    by side in the changes' order, their columns prefixed (:data:`SILVER_SIDE`, :data:`MEMORY_SIDE`)."""
    silver_side = _found_by_search(changes, silver_rows, keys)
    memory_side = _found_by_search(changes, memory_rows, keys)
    if silver_side is not None and memory_side is not None:
        return pa.Table.from_arrays(
            [*silver_side.columns, *memory_side.columns],
            names=[SILVER_SIDE + n for n in silver_side.column_names]
            + [MEMORY_SIDE + n for n in memory_side.column_names],
        )
    # Only the keys are joined: the changes' own columns are read from ``changes``, which the
    # joined rows, put back in its order, line up with (a join of the whole table, sorted back,
    # moved every column of every change twice).
    numbered = changes.select(list(keys)).append_column(
        _ROW, pa.array(np.arange(len(changes), dtype=np.int64))
    )
    joined = numbered.join(_side(silver_rows, SILVER_SIDE, keys), list(keys), join_type="left outer")
    joined = joined.join(_side(memory_rows, MEMORY_SIDE, keys), list(keys), join_type="left outer")
    if len(joined) != len(changes):
        raise NotEligible(_TWO_ROWS)
    return joined.sort_by(_ROW)


def _found_by_search(changes: pa.Table, rows: pa.Table, keys: Sequence[str]) -> pa.Table | None:
    """``rows``' row of each change's key (null where none), without the key, in the changes'
    order, found by binary search in the sorted keys; None unless there is one whole-number key.

    A hash join of a batch's changes with silver's rows and the tombstone entries hashes every
    key of both sides; sorting the few keys of one side and searching them costs a fraction of it."""
    if len(keys) != 1:
        return None
    key = keys[0]
    if not (
        pa.types.is_integer(changes.schema.field(key).type)
        and pa.types.is_integer(rows.schema.field(key).type)
    ):
        return None
    values = rows.column(key)
    if values.null_count:
        return None
    held = values.to_numpy()
    order = np.argsort(held, kind="stable")
    ordered = held[order]
    if (ordered[1:] == ordered[:-1]).any():
        raise NotEligible(_TWO_ROWS)
    wanted = changes.column(key).to_numpy()
    if not len(ordered):
        return rows.drop_columns([key]).take(pa.nulls(len(wanted), pa.int64()))
    at, hit = found_in_sorted(ordered, wanted)
    return rows.drop_columns([key]).take(pa.array(order[at], mask=~hit))


def label_changes(
    changes: pa.Table,
    silver_rows: pa.Table,
    memory_rows: pa.Table,
    keys: Sequence[str],
    compared: Sequence[str],
) -> Labels:
    """Label ``changes`` (one per key, aligned to silver: its names and types) against
    ``silver_rows`` (keys, change time, sequence and phase, ``compared`` columns, ``FILE_INDEX``,
    ``POSITION``: the live rows of the changes' keys) and ``memory_rows`` (keys, change time,
    sequence, phase, Op: the tombstone entries of those keys). A key with two silver rows or two entries
    is :class:`NotEligible` (the Spark path's join would label the change twice)."""
    joined = _joined(changes, silver_rows, memory_rows, keys)
    op = _numpy(pc.equal(changes.column(OP), DELETE))
    change, entry = Order.of(changes), Order.of(joined, MEMORY_SIDE)
    matched = ~_numpy(pc.is_null(joined.column(SILVER_SIDE + FILE_INDEX)))
    remembered = ~_numpy(pc.is_null(joined.column(MEMORY_SIDE + CHANGE_TS)))
    memory_ok = ~remembered | np.where(op, ~newer(entry, change, False), newer(change, entry, True))
    silver_newer = newer(change, Order.of(joined, SILVER_SIDE), True)
    same_row = np.zeros(len(joined), dtype=bool)
    if compared:
        same_row = ~op
        for name in compared:
            same_row &= same_values(changes.column(name), joined.column(SILVER_SIDE + name))
    action = np.full(len(joined), ChangeAction.UPDATE.value, dtype=object)
    # The statement's CASE, last branch first, so each earlier branch overrides the later ones.
    action[same_row] = ChangeAction.UNCHANGED.value
    action[op] = ChangeAction.DELETE.value
    action[~silver_newer] = ChangeAction.UNCHANGED.value
    action[~matched] = np.where(op[~matched], ChangeAction.UNCHANGED.value, ChangeAction.INSERT.value)
    action[~memory_ok] = ChangeAction.UNCHANGED.value
    remember = memory_ok & silver_newer & (op | (matched & same_row))
    file_index = joined.column(SILVER_SIDE + FILE_INDEX).fill_null(-1).to_numpy()
    position = joined.column(SILVER_SIDE + POSITION).fill_null(-1).to_numpy()
    return Labels(
        changes=changes,
        action=action,
        matched=matched,
        file_index=file_index,
        position=position,
        remembered=remembered,
        remember=remember,
    )
