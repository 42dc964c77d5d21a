"""The decision table of a merge: what one arriving change does to the stored row of its key.

Defined once, here, as data: the Spark path renders it as the classification's SQL CASE
(:func:`icetide_glue.merge.sql.classify_changes_sql`) and the driver path evaluates the very same rows
over Arrow columns (:func:`icetide_glue.driver.labels.label_changes`), so the two engines cannot
drift apart. A condition is a small expression (:class:`Expr`) with two renderings beside each
other: SQL text (:meth:`Expr.sql`) and an evaluation over Arrow arrays (:meth:`Expr.arrow`), both
with SQL's three-valued logic, a null condition never taken.

Three sides are named by their SQL aliases: ``s`` the arriving change (one per key), ``t`` silver's
row of its key, ``m`` the key's tombstone (null where there is none).

The rows, first that holds wins (:data:`ACTION_RULES`; ``update`` when none holds):

==========================================  =========  ==========================================
condition                                   action     why
==========================================  =========  ==========================================
the key's tombstone stops it                unchanged  a deleted key stays deleted; a skipped
                                                       update stays skipped (:func:`passes_tombstone`)
no silver row, not a delete                 insert
no silver row, a soft delete with values    delete     (soft deletes) the key lands as deleted
no silver row                               unchanged  a delete of a key silver lacks
not newer than silver's row                 unchanged  an older change never overwrites (:func:`newer`)
a delete                                    delete
the same values as silver's row             unchanged  a re-read boundary row rewrites nothing
==========================================  =========  ==========================================

and the change becomes the key's tombstone (:data:`TOMBSTONE_RULE`) when it passes the tombstone
and is newer than silver's row, and is a delete or an update silver already holds (skipped).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, ClassVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from icetide_glue.columns import (
    CDC_PHASE,
    CHANGE_PHASE,
    CHANGE_SEQ,
    CHANGE_TS,
    DELETE,
    DELETED_AT,
    FILE_RANK,
    FULL_LOAD_PHASE,
    IN_SILVER,
    IN_TOMBSTONES,
    OP,
    ROW_INDEX,
)
from icetide_glue.sql_text import quote_identifier, string_literal


class ChangeAction(StrEnum):
    """What one deduplicated change does to silver; the run's commit applies the first three."""

    INSERT = "insert"
    UPDATE = "update"
    DELETE = "delete"
    UNCHANGED = "unchanged"


# Within a batch, the latest change of a key is the largest by these columns, in this order, nulls
# lowest (a full load's phase above CDC's, then change time, change sequence, DMS's file order and
# the row's position in its file): both engines sort by them (icetide_glue.changes.normalize, arrow_batch).
LATEST_CHANGE_ORDER = (CHANGE_PHASE, CHANGE_TS, CHANGE_SEQ, FILE_RANK, ROW_INDEX)

# What orders a change against silver's row and the key's tombstone (:func:`newer`).
ORDER_COLUMNS = (CHANGE_TS, CHANGE_SEQ, CHANGE_PHASE)

# The sides of the table, by their aliases in the classification's SQL.
CHANGE, SILVER, TOMBSTONE = "s", "t", "m"

# Resolves (alias, column) to that side's values, one per change, for the Arrow evaluation.
Resolver = Callable[[str, str], pa.ChunkedArray | pa.Array]


def _bools(values: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """A condition's values as taken by a CASE branch: null is not taken."""
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def micros(values: pa.ChunkedArray | pa.Array) -> pa.ChunkedArray | pa.Array:
    """A timestamp as int64 microseconds since the epoch (UTC for a zone-less one, as the job's
    UTC session reads it), so a column with a zone and one without compare as Spark compares them."""
    if pa.types.is_timestamp(values.type):
        return pc.cast(pc.cast(values, pa.timestamp("us")), pa.int64())
    return values


class Expr:
    """A condition or value of the table, rendered as SQL or evaluated over Arrow arrays."""

    def sql(self) -> str:
        raise NotImplementedError

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        raise NotImplementedError


@dataclass(frozen=True)
class Col(Expr):
    alias: str
    name: str

    def sql(self) -> str:
        return f"{self.alias}.{quote_identifier(self.name)}"

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        return micros(resolve(self.alias, self.name))


@dataclass(frozen=True)
class Lit(Expr):
    value: bool | int | str

    def sql(self) -> str:
        if isinstance(self.value, bool):
            return "TRUE" if self.value else "FALSE"
        if isinstance(self.value, str):
            return string_literal(self.value)
        return str(int(self.value))

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        return pa.scalar(self.value)  # broadcast by pyarrow.compute


TRUE, FALSE = Lit(True), Lit(False)


@dataclass(frozen=True)
class Compare(Expr):
    left: Expr
    operator: str  # "=", "<>" or ">"
    right: Expr

    def sql(self) -> str:
        return f"{self.left.sql()} {self.operator} {self.right.sql()}"

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        function = {"=": pc.equal, "<>": pc.not_equal, ">": pc.greater}[self.operator]
        return function(self.left.arrow(resolve), self.right.arrow(resolve))


@dataclass(frozen=True)
class IsNull(Expr):
    value: Expr
    negated: bool = False  # IS NOT NULL

    def sql(self) -> str:
        return f"{self.value.sql()} IS {'NOT ' if self.negated else ''}NULL"

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        values = self.value.arrow(resolve)
        return pc.is_valid(values) if self.negated else pc.is_null(values)


def is_not_null(value: Expr) -> Expr:
    return IsNull(value, negated=True)


@dataclass(frozen=True)
class Coalesce(Expr):
    value: Expr
    otherwise: Expr

    def sql(self) -> str:
        return f"coalesce({_bare(self.value)}, {self.otherwise.sql()})"

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        return pc.coalesce(self.value.arrow(resolve), self.otherwise.arrow(resolve))


@dataclass(frozen=True)
class Not(Expr):
    value: Expr

    def sql(self) -> str:
        return f"NOT {self.value.sql()}"

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        return pc.invert(self.value.arrow(resolve))


@dataclass(frozen=True)
class _Junction(Expr):
    """Its parts joined by one of SQL's three-valued AND and OR (Kleene's logic in Arrow)."""

    parts: tuple[Expr, ...]
    word: ClassVar[str]
    join: ClassVar[Callable[..., Any]]

    def sql(self) -> str:
        return "(" + f" {self.word} ".join(part.sql() for part in self.parts) + ")"

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        result = self.parts[0].arrow(resolve)
        for part in self.parts[1:]:
            result = type(self).join(result, part.arrow(resolve))
        return result


class And(_Junction):
    word, join = "AND", pc.and_kleene


class Or(_Junction):
    word, join = "OR", pc.or_kleene


@dataclass(frozen=True)
class SameValues(Expr):
    """Every listed column of the change equals silver's, nulls equal (Spark's ``<=>``; a float
    NaN equals NaN and -0.0 equals 0.0, as Spark compares them)."""

    columns: tuple[str, ...]

    def sql(self) -> str:
        return " AND ".join(
            f"{CHANGE}.{quote_identifier(c)} <=> {SILVER}.{quote_identifier(c)}" for c in self.columns
        )

    def arrow(self, resolve: Resolver) -> pa.ChunkedArray | pa.Array:
        same = np.ones(len(resolve(CHANGE, OP)), dtype=bool)
        for name in self.columns:
            left, right = micros(resolve(CHANGE, name)), micros(resolve(SILVER, name))
            equal = pc.fill_null(pc.equal(left, right), False)
            if pa.types.is_floating(left.type):
                equal = pc.or_(equal, pc.fill_null(pc.and_(pc.is_nan(left), pc.is_nan(right)), False))
            same &= _bools(pc.or_(pc.and_(pc.is_null(left), pc.is_null(right)), equal))
        return pa.array(same)


def _bare(expr: Expr) -> str:
    """SQL text of ``expr`` without the parentheses around a top-level AND or OR."""
    text = expr.sql()
    return text[1:-1] if isinstance(expr, And | Or) else text


@dataclass(frozen=True)
class Side:
    """What orders one side: its alias and its change time, sequence and phase columns."""

    alias: str
    ts: str = CHANGE_TS
    seq: str = CHANGE_SEQ
    phase: str = CHANGE_PHASE


def _by_time(a: Side, b: Side) -> Expr:
    a_ts, b_ts = Col(a.alias, a.ts), Col(b.alias, b.ts)
    a_seq, b_seq = Coalesce(Col(a.alias, a.seq), Lit("")), Coalesce(Col(b.alias, b.seq), Lit(""))
    return Or(
        (IsNull(b_ts), Compare(a_ts, ">", b_ts), And((Compare(a_ts, "=", b_ts), Compare(a_seq, ">", b_seq))))
    )


def _arrives_later(arriving: Side, stored: Side) -> Expr:
    """True when the arriving change is later than the stored one by their phases alone."""
    a_phase, s_phase = Col(arriving.alias, arriving.phase), Col(stored.alias, stored.phase)
    return Coalesce(
        Or(
            (
                Compare(a_phase, "=", Lit(FULL_LOAD_PHASE)),
                And((Compare(a_phase, "=", Lit(CDC_PHASE)), Compare(s_phase, "=", Lit(FULL_LOAD_PHASE)))),
            )
        ),
        FALSE,
    )


def newer(a: Side, b: Side, a_arrives: bool | None = True) -> Expr:
    """True when ``a``'s change is later than ``b``'s (a silver row, a tombstone).

    ``a_arrives`` says which of the two is the change this run brings (True: ``a``; False: ``b``;
    None: neither, two stored rows). The arriving change is later, whatever the times, when it is
    a full-load row (a full load reads the source as it is now: whatever silver holds came from an
    earlier task, or from this task's own full load), or a CDC change over a stored full-load row
    (DMS delivers a task's full load before its CDC changes, in one folder and across runs: a
    windowed task's full load is in its first run's folder, a continuous task's LOAD files are
    taken before its CDC files). The two phases' times cannot be compared: a full-load row's is
    when DMS transferred it (the replication instance's clock), a CDC row's its commit at the
    source (the source's clock), and a change committed during the full load may be read by it
    afterwards.

    Otherwise (CDC against CDC, a row without phase: written before silver stored it, or a
    reconcile delete) by (change time, sequence): ``b`` without a change time (written by
    something else) is always overwritten; a missing sequence sorts below every sequence; equal
    time and sequence is the same change read twice: not later, so it changes nothing.
    """
    by_time = _by_time(a, b)
    if a_arrives is None:
        return by_time
    if a_arrives:
        return Or((_arrives_later(a, b), by_time))
    return And((Not(_arrives_later(b, a)), by_time))


IS_DELETE = Compare(Col(CHANGE, OP), "=", Lit(DELETE))
NOT_DELETE = Compare(Col(CHANGE, OP), "<>", Lit(DELETE))
IN_SILVER_ROW = is_not_null(Col(SILVER, IN_SILVER))
NO_SILVER_ROW = IsNull(Col(SILVER, IN_SILVER))
KEY_HAS_TOMBSTONE = is_not_null(Col(TOMBSTONE, IN_TOMBSTONES))
NEWER_THAN_SILVER = newer(Side(CHANGE), Side(SILVER))


def passes_tombstone() -> Expr:
    """True when the key's tombstone does not stop the change.

    An insert or update must be newer than the tombstone. A delete must not be older: the same
    delete read again must still remove a silver row that a failed silver commit left behind
    (tombstones are written before the silver commit). No tombstone: nothing stops it.
    """
    change, tombstone = Side(CHANGE), Side(TOMBSTONE)
    return Or(
        (
            IsNull(Col(TOMBSTONE, IN_TOMBSTONES)),
            And((IS_DELETE, Not(newer(tombstone, change, False)))),
            And((NOT_DELETE, newer(change, tombstone))),
        )
    )


@dataclass(frozen=True)
class Facts:
    """What the table's conditions depend on in one classification: whether a tombstone table is
    joined, the ``same`` comparison of a change with silver's row (None: no column is compared),
    and, with soft deletes, whether a delete keeps the values it carries."""

    tombstones: bool = True
    same: Expr | None = None
    soft_delete: bool = False
    keeps_image: Expr = FALSE

    @property
    def passes(self) -> Expr:
        return passes_tombstone() if self.tombstones else TRUE

    @property
    def same_row(self) -> Expr:
        if self.same is None:
            return FALSE
        alive = (IsNull(Col(SILVER, DELETED_AT)),) if self.soft_delete else ()
        return And((NOT_DELETE, *alive, self.same))


@dataclass(frozen=True)
class Rule:
    """One row of the table: when ``condition`` holds (and no earlier row's did), ``action``."""

    condition: Callable[[Facts], Expr | None]  # None: the row does not apply to these facts
    action: ChangeAction


ACTION_RULES: tuple[Rule, ...] = (
    Rule(lambda f: Not(f.passes) if f.tombstones else None, ChangeAction.UNCHANGED),
    Rule(lambda f: And((NO_SILVER_ROW, NOT_DELETE)), ChangeAction.INSERT),
    Rule(lambda f: And((NO_SILVER_ROW, f.keeps_image)) if f.soft_delete else None, ChangeAction.DELETE),
    Rule(lambda f: NO_SILVER_ROW, ChangeAction.UNCHANGED),
    Rule(lambda f: Not(NEWER_THAN_SILVER), ChangeAction.UNCHANGED),
    Rule(lambda f: IS_DELETE, ChangeAction.DELETE),
    Rule(lambda f: f.same_row if f.same is not None else None, ChangeAction.UNCHANGED),
)
OTHERWISE = ChangeAction.UPDATE


def rules(facts: Facts) -> list[tuple[Expr, ChangeAction]]:
    """The table's rows that apply to ``facts``, in order."""
    applied = [(rule.condition(facts), rule.action) for rule in ACTION_RULES]
    return [(condition, action) for condition, action in applied if condition is not None]


def tombstone_rule(facts: Facts) -> Expr:
    """The change becomes its key's tombstone: it passes the tombstone, is newer than silver's
    row, and is a delete or an update skipped because silver holds its values."""
    skipped_update = And((IN_SILVER_ROW, facts.same_row))
    return And((facts.passes, NEWER_THAN_SILVER, Or((IS_DELETE, skipped_update))))


def action_case_sql(facts: Facts) -> list[str]:
    """The table as the lines of a SQL CASE (``CASE`` to ``END``, without the alias)."""
    return [
        "CASE",
        *(f"  WHEN {_bare(condition)} THEN '{action}'" for condition, action in rules(facts)),
        f"  ELSE '{OTHERWISE}'",
        "END",
    ]


def actions(facts: Facts, resolve: Resolver, rows: int) -> np.ndarray:
    """The table evaluated over Arrow columns: each change's :class:`ChangeAction` value (the first
    row whose condition holds, as the CASE takes them)."""
    applied = rules(facts)
    return np.select(
        [holds(condition, resolve, rows) for condition, _ in applied],
        [action.value for _, action in applied],
        OTHERWISE.value,
    )


def holds(condition: Expr, resolve: Resolver, rows: int) -> np.ndarray:
    """``condition`` per change, null as false (as a CASE branch or a WHERE takes it)."""
    values = condition.arrow(resolve)
    if isinstance(values, pa.Scalar):
        return np.full(rows, bool(values.as_py()), dtype=bool)
    return _bools(values)


def same_values_of(columns: Sequence[str]) -> Expr | None:
    """The comparison of ``columns`` with silver's (None when there is none to compare)."""
    return SameValues(tuple(columns)) if columns else None
