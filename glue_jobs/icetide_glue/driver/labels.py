"""The classification of a hard-delete merge computed on the driver over Arrow columns: each
change's action, whether silver holds its key and where, and whether it becomes the key's
tombstone. The decision itself is :mod:`icetide_glue.decision`'s table, evaluated here over the
changes joined with silver's rows and the tombstones of their keys, as the Spark path's SQL CASE
renders the same table.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icetide_glue.columns import CHANGE_TS, IN_SILVER, IN_TOMBSTONES
from icetide_glue.decision import (
    CHANGE,
    SILVER,
    TOMBSTONE,
    ChangeAction,
    Facts,
    actions,
    holds,
    same_values_of,
    tombstone_rule,
)
from icetide_glue.driver.arrow_types import NotEligible
from icetide_glue.driver.silver import FILE_INDEX, POSITION, found_in_sorted

# Prefixes of silver's and the tombstone table's columns once joined with the changes.
SILVER_SIDE, TOMBSTONE_SIDE = "_icetide_t:", "_icetide_m:"
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
    has_tombstone: np.ndarray
    keep_tombstone: np.ndarray

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


def _numpy(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    return np.asarray(values.to_numpy(zero_copy_only=False), dtype=bool)


def _joined(
    changes: pa.Table, silver_rows: pa.Table, tombstone_rows: pa.Table, keys: Sequence[str]
) -> pa.Table:
    """Silver's row and the tombstone entry of each change's key (null where there is none), side
    by side in the changes' order, their columns prefixed (:data:`SILVER_SIDE`, :data:`TOMBSTONE_SIDE`)."""
    silver_side = _found_by_search(changes, silver_rows, keys)
    tombstone_side = _found_by_search(changes, tombstone_rows, keys)
    if silver_side is not None and tombstone_side is not None:
        return pa.Table.from_arrays(
            [*silver_side.columns, *tombstone_side.columns],
            names=[SILVER_SIDE + n for n in silver_side.column_names]
            + [TOMBSTONE_SIDE + n for n in tombstone_side.column_names],
        )
    # Only the keys are joined: the changes' own columns are read from ``changes``, which the
    # joined rows, put back in its order, line up with (a join of the whole table, sorted back,
    # moved every column of every change twice).
    numbered = changes.select(list(keys)).append_column(
        _ROW, pa.array(np.arange(len(changes), dtype=np.int64))
    )
    joined = numbered.join(_side(silver_rows, SILVER_SIDE, keys), list(keys), join_type="left outer")
    joined = joined.join(_side(tombstone_rows, TOMBSTONE_SIDE, keys), list(keys), join_type="left outer")
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
    tombstone_rows: pa.Table,
    keys: Sequence[str],
    compared: Sequence[str],
) -> Labels:
    """Label ``changes`` (one per key, aligned to silver: its names and types) against
    ``silver_rows`` (keys, change time, sequence and phase, ``compared`` columns, ``FILE_INDEX``,
    ``POSITION``: the live rows of the changes' keys) and ``tombstone_rows`` (keys, change time,
    sequence, phase, Op: the tombstone entries of those keys). A key with two silver rows or two entries
    is :class:`NotEligible` (the Spark path's join would label the change twice)."""
    joined = _joined(changes, silver_rows, tombstone_rows, keys)
    matched = ~_numpy(pc.is_null(joined.column(SILVER_SIDE + FILE_INDEX)))
    has_tombstone = ~_numpy(pc.is_null(joined.column(TOMBSTONE_SIDE + CHANGE_TS)))
    sides = {CHANGE: (changes, ""), SILVER: (joined, SILVER_SIDE), TOMBSTONE: (joined, TOMBSTONE_SIDE)}
    markers = {(SILVER, IN_SILVER): matched, (TOMBSTONE, IN_TOMBSTONES): has_tombstone}

    def resolve(alias: str, name: str) -> pa.ChunkedArray | pa.Array:
        if (alias, name) in markers:
            return pa.array(np.ones(len(changes), dtype=bool), mask=~markers[alias, name])
        table, prefix = sides[alias]
        return table.column(prefix + name)

    facts = Facts(tombstones=True, same=same_values_of(compared))
    rows = len(joined)
    file_index = joined.column(SILVER_SIDE + FILE_INDEX).fill_null(-1).to_numpy()
    position = joined.column(SILVER_SIDE + POSITION).fill_null(-1).to_numpy()
    return Labels(
        changes=changes,
        action=actions(facts, resolve, rows),
        matched=matched,
        file_index=file_index,
        position=position,
        has_tombstone=has_tombstone,
        keep_tombstone=holds(tombstone_rule(facts), resolve, rows),
    )
