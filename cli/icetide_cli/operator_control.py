"""The control items of a target, read and written alike for a local workspace and a deployed stack.

A verb that changes a control item (reset, unlock) says what the item must still hold for the write
to happen (:class:`Expect`) and what to change; the write is then ONE conditional operation, so a
run that takes the lock between the verb's read and its write makes the write fail instead of being
overwritten. On a stack that is DynamoDB's ``ConditionExpression`` (as ``icetide.adapters.control_table``
writes the runs' own changes); in a workspace the same condition is checked and the state file
rewritten while the verb holds the workspace (``Workspace.exclusive``), which no cycle shares.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol

import botocore.exceptions

from icetide.adapters.control_table import ConditionalWrite
from icetide.control.codec import encode_value, from_typed_json
from icetide_cli.operator_output import Refused, UnknownTable, UsageProblem
from icetide_cli.operator_target import (
    CONTROL_TABLE_OUTPUT,
    StackTarget,
    Target,
    TargetError,
    WorkspaceTarget,
)
from icetide_local.workspace import Workspace, WorkspaceBusy, WorkspaceError, table_name

KEY = "targetTableName"
_CONDITION_FAILED = "ConditionalCheckFailedException"


@dataclass(frozen=True)
class Expect:
    """What a control item must still hold for a write to go ahead.

    ``unlocked``: no ``lockHolder`` (or an empty one). ``lock_holder``: exactly this holder.
    ``watermark``: the stored watermark is one of these values (an empty tuple: it has none);
    ``last_run_id``: the same for ``lastRunId`` (no run slipped in since the item was read);
    None: not checked. The item must exist in every case.
    """

    unlocked: bool = False
    lock_holder: str | None = None
    watermark: tuple[Any, ...] | None = None
    last_run_id: tuple[str, ...] | None = None

    def holds(self, item: Mapping[str, Any]) -> bool:
        """Whether ``item`` (plain values, as DynamoDB returns them) meets the expectation."""
        if self.unlocked and item.get("lockHolder"):
            return False
        if self.lock_holder is not None and item.get("lockHolder") != self.lock_holder:
            return False
        return all(
            _one_of(item, name, expected)
            for name, expected in (("watermark", self.watermark), ("lastRunId", self.last_run_id))
            if expected is not None
        )

    def condition(self) -> tuple[str, dict[str, Any]]:
        """The same expectation as a DynamoDB ``ConditionExpression`` and its plain values."""
        parts = [f"attribute_exists({KEY})"]
        values: dict[str, Any] = {}
        if self.unlocked:
            parts.append("(attribute_not_exists(lockHolder) OR lockHolder = :noHolder)")
            values[":noHolder"] = ""
        if self.lock_holder is not None:
            parts.append("lockHolder = :holder")
            values[":holder"] = self.lock_holder
        for name, expected in (("watermark", self.watermark), ("lastRunId", self.last_run_id)):
            if expected is None:
                continue
            if not expected:
                parts.append(f"attribute_not_exists({name})")
            else:
                names = [f":{name}{index}" for index in range(len(expected))]
                values.update(zip(names, expected, strict=True))
                parts.append(f"{name} IN ({', '.join(names)})")
        return " AND ".join(parts), values


def _one_of(item: Mapping[str, Any], name: str, expected: tuple[Any, ...]) -> bool:
    """Whether ``item[name]`` is one of ``expected`` (an empty tuple: the item has no ``name``)."""
    if not expected:
        return name not in item
    # DynamoDB's = compares a number with numbers (Decimal == Decimal) and a string with strings:
    # the same as Python's == on the values it returns, with the types kept apart.
    stored = item.get(name)
    return any(type(stored) is type(value) and stored == value for value in expected)


class ControlItems(Protocol):
    """The control items of one target."""

    where: str

    def items(self) -> list[dict[str, Any]]:
        """Every control item (plain values), sorted by table."""
        ...

    def item(self, target_table_name: str) -> dict[str, Any]:
        """One table's item; UnknownTable when there is none."""
        ...

    def update(
        self, target_table_name: str, expect: Expect, *, set_values: Mapping[str, Any], remove: Sequence[str]
    ) -> ConditionalWrite:
        """Set and remove attributes of one item if ``expect`` holds; the item as it was before."""
        ...


def control_items_of(target: Target) -> ControlItems:
    """The control items of a workspace or a stack."""
    if isinstance(target, WorkspaceTarget):
        return WorkspaceControlItems(target)
    return StackControlItems(target)


def unknown_table(target_table_name: str, where: str, names: Sequence[str]) -> UnknownTable:
    known = ", ".join(sorted(names)) or "none"
    return UnknownTable(f"{where} has no control item {target_table_name!r} (its tables: {known})")


class WorkspaceControlItems:
    """A workspace's ``state/control-table.json``; writes hold the workspace, as a cycle does."""

    def __init__(self, target: WorkspaceTarget) -> None:
        try:
            self.workspace = Workspace.existing(target.workspace)
        except WorkspaceError as problem:
            raise TargetError(str(problem)) from None
        self.where = f"workspace {self.workspace.root}"

    def _typed(self) -> list[dict[str, Any]]:
        try:
            return self.workspace.load_control_items()
        except WorkspaceError as problem:
            raise TargetError(str(problem)) from None

    def items(self) -> list[dict[str, Any]]:
        return sorted((from_typed_json(item) for item in self._typed()), key=lambda item: str(item[KEY]))

    def item(self, target_table_name: str) -> dict[str, Any]:
        typed = self._typed()
        for item in typed:
            if table_name(item) == target_table_name:
                return from_typed_json(item)
        raise unknown_table(target_table_name, self.where, [table_name(item) for item in typed])

    def update(
        self, target_table_name: str, expect: Expect, *, set_values: Mapping[str, Any], remove: Sequence[str]
    ) -> ConditionalWrite:
        with self._exclusive():
            typed = self._typed()
            position = next(
                (index for index, item in enumerate(typed) if table_name(item) == target_table_name), None
            )
            if position is None:
                return ConditionalWrite(written=False, item=None)
            item = typed[position]
            before = from_typed_json(item)
            if not expect.holds(before):
                return ConditionalWrite(written=False, item=before)
            changed = {name: value for name, value in item.items() if name not in remove}
            changed.update({name: encode_value(value) for name, value in set_values.items()})
            typed[position] = changed
            self.workspace.save_control_items(typed)
            return ConditionalWrite(written=True, item=before)

    @contextmanager
    def _exclusive(self) -> Iterator[None]:
        try:
            with self.workspace.exclusive():
                yield
        except WorkspaceBusy as busy:
            raise Refused(f"{busy}; try again when it has finished") from None


class StackControlItems:
    """The stack's DynamoDB control table (its ``ControlTableName`` output)."""

    def __init__(self, target: StackTarget) -> None:
        self.table_name = target.output(CONTROL_TABLE_OUTPUT)
        self.where = f"stack {target.stack_name} (control table {self.table_name})"
        self.dynamodb = target.client("dynamodb")

    def items(self) -> list[dict[str, Any]]:
        pages = self.dynamodb.get_paginator("scan").paginate(TableName=self.table_name, ConsistentRead=True)
        found = [from_typed_json(typed) for page in pages for typed in page.get("Items", [])]
        return sorted(found, key=lambda item: str(item[KEY]))

    def item(self, target_table_name: str) -> dict[str, Any]:
        found = self.find(target_table_name)
        if found is None:
            raise unknown_table(target_table_name, self.where, [str(item[KEY]) for item in self.items()])
        return found

    def find(self, target_table_name: str) -> dict[str, Any] | None:
        """One table's item (plain values, read consistently), or None."""
        response = self.dynamodb.get_item(
            TableName=self.table_name, Key={KEY: {"S": target_table_name}}, ConsistentRead=True
        )
        return from_typed_json(response["Item"]) if "Item" in response else None

    def update(
        self, target_table_name: str, expect: Expect, *, set_values: Mapping[str, Any], remove: Sequence[str]
    ) -> ConditionalWrite:
        condition, values = expect.condition()
        values.update({f":set{index}": value for index, value in enumerate(set_values.values())})
        clauses = []
        if set_values:
            assignments = (f"{name} = :set{index}" for index, name in enumerate(set_values))
            clauses.append("SET " + ", ".join(assignments))
        if remove:
            clauses.append("REMOVE " + ", ".join(remove))
        if not clauses:
            raise UsageProblem("nothing to write")
        typed_values = {name: encode_value(value) for name, value in values.items()}
        try:
            response = self.dynamodb.update_item(
                TableName=self.table_name,
                Key={KEY: {"S": target_table_name}},
                UpdateExpression=" ".join(clauses),
                ConditionExpression=condition,
                ReturnValues="ALL_OLD",
                ReturnValuesOnConditionCheckFailure="ALL_OLD",
                # DynamoDB refuses an empty map of values.
                **({"ExpressionAttributeValues": typed_values} if typed_values else {}),
            )
        except botocore.exceptions.ClientError as error:
            if error.response.get("Error", {}).get("Code") != _CONDITION_FAILED:
                raise
            # ReturnValuesOnConditionCheckFailure puts the item as it is into the error response.
            current: Mapping[str, Any] | None = error.response.get("Item")  # type: ignore[assignment]
            return ConditionalWrite(written=False, item=from_typed_json(current) if current else None)
        before = response.get("Attributes")
        return ConditionalWrite(written=True, item=from_typed_json(before) if before else None)
