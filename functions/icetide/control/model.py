"""The control item: one DynamoDB item per table, validated by one model.

Items written for the AWS blog post (all values strings, `ouputs3Prefix` misspelt) keep working; the
attributes icetide added are optional. DynamoDB attribute names are the field aliases, Python names
are snake_case. `ControlItem.parse` turns every problem into one "attribute: reason" line, so a user
fixing an item sees all field problems at once.

Two things are deliberately not problems, because the blog's own item has them: a filter value the
operator does not take (the blog sets `endvalue` on an `lte` filter) is dropped, with a note the
callers show; and values may be numbers or strings. An attribute the model does not know *is* a
problem: it is most often a typo of one that matters (`primarykeys` would silently drop the keys).
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Mapping
from decimal import Decimal
from enum import StrEnum
from typing import Annotated, Any

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    ModelWrapValidatorHandler,
    PlainValidator,
    PrivateAttr,
    ValidationError,
    model_validator,
)

from icetide.clock import parse_time
from icetide.control.operators import OPERATOR_NAMES, VALUE_SHAPES, FilterOperator, ValueShape, parse_operator
from icetide.control.problems import (
    attribute_of,
    contract_error,
    likely_meant,
    problem_lines,
    unknown_attribute_lines,
)
from icetide.control.values import as_decimal, scalar_text
from icetide.control.watermark import compare
from icetide.errors import InvalidControlItem
from icetide_contracts.json_fields import ContractViolation
from icetide_contracts.maintenance import POLICY_KEYS, MaintenancePolicy

# Re-exported: callers name the modes beside the control item; their one definition is the contract's.
from icetide_contracts.run_plan import CaptureMode as CaptureMode
from icetide_contracts.run_plan import CdcTask as CdcTask
from icetide_contracts.run_plan import DeleteMode as DeleteMode
from icetide_contracts.run_plan import LoadMode as LoadMode

TARGET_TABLE_NAME_PATTERN = re.compile(r"^[A-Za-z][A-Za-z0-9_]{0,127}$")
SOURCE_NAME_MAX_LENGTH = 128
# icetide names a table's companions in the Glue catalog `<table>__icetide_<role>` (its tombstones,
# its run ledger): a control item with such a name would write another table's companion under its
# own lock. The catalog lowercases names, so the check ignores case.
RESERVED_NAME_PART = "__icetide_"
# The bronze prefix's folders that start with "_" are icetide's own (continuous tasks, reconcile and
# verify extractions): a table's outputS3Prefix there would put its files inside another table's.
RESERVED_FOLDER_START = "_"


class RunStatus(StrEnum):
    """`lastRunStatus` as the handlers write it."""

    RUNNING = "RUNNING"
    SUCCEEDED = "SUCCEEDED"
    FAILED = "FAILED"


# --- single-attribute rules (pydantic adds the attribute name to each message) ---------------------


def _is_unset(value: object) -> bool:
    # Blog items often carry "" for attributes they do not use; empty means "not set".
    return value is None or (isinstance(value, str) and not value.strip())


def _optional_text(value: object) -> str | None:
    return None if _is_unset(value) else scalar_text(value).strip()


def _optional_instant(value: object) -> str | None:
    """An ISO-8601 instant such as ``2026-11-21T07:00:00Z`` (or unset): a time that does not parse
    makes the item invalid here, not the freshness of every table a scan looks at."""
    text = _optional_text(value)
    if text is not None:
        parse_time(text)
    return text


def _target_table_name(value: object) -> str:
    text = scalar_text(value)
    if not TARGET_TABLE_NAME_PATTERN.match(text):
        raise ValueError(
            f"{text!r} is not a valid table name: start with a letter, then letters, digits or "
            "underscores, at most 128 characters"
        )
    if RESERVED_NAME_PART in text.lower():
        raise ValueError(
            f"{text!r} contains {RESERVED_NAME_PART!r}, which icetide reserves for the tables it keeps "
            "beside each silver table (tombstones, run ledger): choose a name without it"
        )
    return text


def _source_name(value: object) -> str:
    """A schema or table name DMS can select exactly, as a source filter requires.

    The DMS guide: filters only support tables with exact names, no wildcards; `%` matches any
    characters and `[ab]` a set of characters. (`_` is also a one-character wildcard in table mappings,
    but nearly every real table name has one, DMS accepts it and the blog's `mlb_data` uses it.)
    """
    text = scalar_text(value)
    if not text.strip():
        raise ValueError("must not be blank")
    if text != text.strip():
        raise ValueError(f"{text!r} has leading or trailing spaces; DMS matches names exactly")
    if len(text) > SOURCE_NAME_MAX_LENGTH:
        raise ValueError(f"is {len(text)} characters long; at most {SOURCE_NAME_MAX_LENGTH} are allowed")
    if "%" in text:
        raise ValueError(
            f"{text!r} contains the % wildcard; DMS source filters only support tables with exact names"
        )
    if "[" in text or "]" in text:
        raise ValueError(
            f"{text!r} contains [ or ], which DMS reads as a wildcard character set; "
            "source filters need an exact name"
        )
    if any(quote in text for quote in "\"'`"):
        raise ValueError(f"{text!r} contains a quote; give the name unquoted, as the source stores it")
    if any(unicodedata.category(character) == "Cc" for character in text):
        raise ValueError(f"{text!r} contains a control character")
    return text


def _optional_source_name(value: object) -> str | None:
    """A source name (as :func:`_source_name`) that may be left unset."""
    return None if _is_unset(value) else _source_name(value)


def _active_flag(value: object) -> str:
    if value is None:
        return "Y"
    text = scalar_text(value).strip().upper()
    if text not in ("Y", "N"):
        raise ValueError(f"{value!r} is neither Y nor N")
    return text


def _optional_operator(value: object) -> FilterOperator | None:
    if _is_unset(value):
        return None
    return parse_operator(value)


def _primary_keys(value: object) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        names = value.split(",") if value.strip() else []
    elif isinstance(value, list | tuple | set | frozenset):
        # A DynamoDB string set (SS) arrives as a set: order carries no meaning for a merge key.
        names = sorted(value) if isinstance(value, set | frozenset) else list(value)
    else:
        raise ValueError(f"must be a list of column names or a comma-separated string, got {value!r}")
    columns = [scalar_text(name).strip() for name in names]
    if any(not column for column in columns):
        raise ValueError(f"{value!r} has an empty column name")
    duplicates = sorted({column for column in columns if columns.count(column) > 1})
    if duplicates:
        raise ValueError(f"lists {', '.join(duplicates)} more than once")
    return columns


def _optional_load_mode(value: object) -> LoadMode | None:
    text = _optional_text(value)
    if text is None:
        return None
    try:
        return LoadMode(text.lower())
    except ValueError:
        raise ValueError(f"{text!r} is not a load mode; use merge or append") from None


def _choice(enum: type[StrEnum], default: StrEnum) -> Any:
    """A validator reading `enum`'s values case-insensitively; unset is `default`."""

    def parse(value: object) -> StrEnum:
        text = _optional_text(value)
        if text is None:
            return default
        try:
            return enum(text.lower())
        except ValueError:
            allowed = " or ".join(member.value for member in enum)
            raise ValueError(f"{text!r} is not one of {allowed}") from None

    return parse


def _positive_whole(unit: str) -> Any:
    """A validator for an optional whole number of `unit`s, at least 1 (numbers or digit strings)."""

    def parse(value: object) -> int | None:
        if _is_unset(value):
            return None
        if isinstance(value, bool):
            raise ValueError(f"must be a whole number of {unit}, got the boolean {value}")
        number = as_decimal(value)
        if number is None or number != number.to_integral_value() or number < 1:
            raise ValueError(f"{value!r} is not a whole number of {unit} (1 or more)")
        return int(number)

    return parse


def _lookback(value: object) -> Decimal | None:
    if _is_unset(value):
        return None
    number = as_decimal(value)
    if number is None or number < 0:
        raise ValueError(f"{value!r} is not a non-negative number (seconds, for timestamp watermarks)")
    return number


def _json_number(value: object) -> int | float:
    # DynamoDB maps hold numbers as Decimal; DMS wants JSON numbers (ParallelLoadThreads: 0, not "0").
    if isinstance(value, Decimal):
        return int(value) if value == value.to_integral_value() else float(value)
    raise TypeError(f"{type(value).__name__} is not JSON")


def _task_settings(value: object) -> str | None:
    if _is_unset(value):
        return None
    if isinstance(value, Mapping):
        # A DynamoDB map is a clear way to write the same thing; keep the attribute's one type.
        try:
            return json.dumps(dict(value), default=_json_number)
        except TypeError as exc:
            raise ValueError(f"holds a value JSON cannot express ({exc})") from None
    if not isinstance(value, str):
        raise ValueError(f"must be a JSON object string, got {type(value).__name__}")
    try:
        settings = json.loads(value)
    except json.JSONDecodeError as exc:
        raise ValueError(f"is not valid JSON ({exc})") from None
    if not isinstance(settings, dict):
        raise ValueError(f"must be a JSON object, got a JSON {type(settings).__name__}")
    return value


def _instance_arn(value: object) -> str | None:
    text = _optional_text(value)
    if text is None:
        return None
    parts = text.split(":")
    if len(parts) < 7 or parts[0] != "arn" or parts[2] != "dms" or parts[5] != "rep":
        raise ValueError(f"{text!r} is not a replication instance ARN (arn:aws:dms:REGION:ACCOUNT:rep:ID)")
    return text


# S3's "safe characters" for key names, plus "/" between folders: a prefix goes into DMS's BucketFolder.
_S3_PREFIX = re.compile(r"^[A-Za-z0-9!_.*'()/-]{1,200}$")


def _s3_prefix(value: object) -> str | None:
    text = _optional_text(value)
    if text is None:
        return None
    if not _S3_PREFIX.match(text) or any(part in ("", ".", "..") for part in text.strip("/").split("/")):
        raise ValueError(
            f"{text!r} is not an S3 folder: use letters, digits and !_.*'()- in folders separated by /"
        )
    if text.strip("/").startswith(RESERVED_FOLDER_START):
        raise ValueError(
            f"{text!r} starts with {RESERVED_FOLDER_START!r}: the bronze prefix's folders that do "
            "(_continuous, _reconcile, _verify) are icetide's own, so this table's files would sit inside "
            "theirs; start the prefix with a letter or digit"
        )
    return text


def _maintenance(value: object) -> MaintenancePolicy | None:
    """The item's ``maintenance`` overrides as the contract's policy (what it leaves out: defaults).

    DynamoDB hands numbers over as Decimal, which the contract (plain JSON) does not take: whole
    ones become ints first. Every problem is one ``maintenance.<key>: reason`` line, a misspelt key
    with the key it most likely meant (a typo would silently keep the default).
    """
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise ValueError(f"must be a map of maintenance settings ({', '.join(POLICY_KEYS)}), got {value!r}")
    unknown = unknown_attribute_lines(value, POLICY_KEYS)
    known = {
        key: _json_number(entry) if isinstance(entry, Decimal) else entry
        for key, entry in value.items()
        if key not in unknown
    }
    problems = [
        (key, line.partition(": ")[2].replace("unknown attribute", "unknown key"))
        for key, line in unknown.items()
    ]
    policy = None
    try:
        policy = MaintenancePolicy.from_json(known)
    except ContractViolation as violation:
        problems = [*violation.problems, *problems]
    if problems:
        raise contract_error(ContractViolation("maintenance is invalid", tuple(problems)))
    return policy


def _watermark(value: object) -> Decimal | str | None:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    text = scalar_text(value)  # rejects bools, lists, maps
    return Decimal(text)


# The filter values each operator's DMS condition carries, by their control-item names.
_FILTER_VALUE_ATTRIBUTES = ("startvalue", "endvalue")
_VALUES_TAKEN: dict[ValueShape, tuple[str, ...]] = {
    ValueShape.ONE: ("startvalue",),
    ValueShape.RANGE: _FILTER_VALUE_ATTRIBUTES,
    ValueShape.NONE: (),
}


def _without_ignored_values(raw: Mapping[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """`raw` without the filter values its operator does not take, and one note per value dropped.

    The blog's item sets `endvalue` on an `lte` filter; DMS would never read it, so it is not an
    error, but it must not reach a run either: dropping it here means no later code can use it.
    """
    kept = dict(raw)
    if _is_unset(raw.get("filteroperator")):
        taken: tuple[str, ...] = ()
        reason = "no filteroperator is set, so the run reads the whole table"
    else:
        try:
            operator = parse_operator(raw["filteroperator"])
        except ValueError:
            return kept, []  # the operator's own problem line says what is wrong
        taken = _VALUES_TAKEN[VALUE_SHAPES[operator]]
        takes = f"takes only {taken[0]}" if taken else "takes no value"
        reason = f"filteroperator {operator} {takes}"
    notes = []
    for attribute in _FILTER_VALUE_ATTRIBUTES:
        if attribute not in taken and not _is_unset(kept.get(attribute)):
            del kept[attribute]
            notes.append(f"{attribute}: ignored, {reason}")
    return kept, notes


def _order(start: str, end: str) -> int:
    """-1, 0 or 1 as a range's start is below, at or above its end.

    Numbers compare as numbers ("9" < "10") and ISO times as instants, as the source column would;
    anything else (or a number against a time) compares as text.
    """
    try:
        return compare(start, end)
    except ValueError:
        return (start > end) - (start < end)


def _count(value: object) -> object:
    if isinstance(value, bool):
        raise ValueError(f"must be a whole number, got the boolean {value}")
    return value


# Attributes the handlers write while running a table (docs/contracts.md, "Run state"), as opposed to
# those a user writes to configure it: a re-registered table keeps these.
RUN_STATE_ATTRIBUTES = (
    "watermark",
    "cdcCheckpoint",
    "cdcFileCheckpoint",
    "cdcChangeCount",
    "lastTaskResume",
    "lastReconcileTime",
    "lastRunId",
    "lastRunStatus",
    "lastRunTime",
    "lastSuccessTime",
    "lastChangeTime",
    "lastRunError",
    "lastFailedState",
    "lastRunStats",
    "lastMaintenance",
    # Written by an operator (`icetide reload`), kept like run state: the table's next runs reload.
    "reloadRequested",
)
LOCK_ATTRIBUTES = ("lockHolder", "lockTime")

OptionalText = Annotated[str | None, BeforeValidator(_optional_text)]
Count = Annotated[int | None, BeforeValidator(_count), Field(ge=0)]


class ReloadRequest(BaseModel):
    """`reloadRequested` (icetide.run.reload): when an operator asked for a full reload, and the
    table's last run then (`lastRunId`, absent if none): the request is open until another run
    commits."""

    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    requested_at: Annotated[str, BeforeValidator(scalar_text)] = Field(alias="requestedAt", min_length=1)
    after_run: OptionalText = Field(None, alias="afterRun")


class RunStats(BaseModel):
    """`lastRunStats`: what the last successful run did (counts from the run manifest)."""

    model_config = ConfigDict(populate_by_name=True, extra="ignore", frozen=True)

    rows_read: Count = Field(None, alias="rowsRead")
    rows_inserted: Count = Field(None, alias="rowsInserted")
    rows_updated: Count = Field(None, alias="rowsUpdated")
    rows_deleted: Count = Field(None, alias="rowsDeleted")
    rows_unchanged: Count = Field(None, alias="rowsUnchanged")
    snapshot_id: Annotated[int | None, BeforeValidator(_count)] = Field(None, alias="snapshotId")
    full_load_rows: Count = Field(None, alias="fullLoadRows")
    change_rows: Count = Field(None, alias="changeRows")
    files_merged: Count = Field(None, alias="filesMerged")


def _default_load_mode(data: dict[str, Any]) -> LoadMode:
    # Blog items have neither loadMode nor keys: they load append-only, which never drops an update.
    # An item that lists keys merges on them.
    return LoadMode.MERGE if data.get("primary_keys") else LoadMode.APPEND


class ControlItem(BaseModel):
    """One table's control item.

    Build it with `ControlItem.parse(raw)`, which raises only InvalidControlItem, one line per problem,
    and also refuses what is not a mapping at all. `notes` then lists what the item sets but no run uses.
    """

    # Unknown attributes are reported (with a suggestion) before pydantic sees the item; "forbid" only
    # guards against a caller that bypasses that.
    model_config = ConfigDict(populate_by_name=True, extra="forbid", frozen=True)

    _notes: tuple[str, ...] = PrivateAttr(default=())

    # Blog attributes.
    target_table_name: Annotated[str, BeforeValidator(_target_table_name)] = Field(alias="targetTableName")
    active_flag: Annotated[str, BeforeValidator(_active_flag)] = Field("Y", alias="activeflag")
    source_schema: Annotated[str, BeforeValidator(_source_name)] = Field(alias="sourceSchema")
    source_table: Annotated[str, BeforeValidator(_source_name)] = Field(alias="sourceTable")
    filter_column: Annotated[str | None, BeforeValidator(_optional_source_name)] = Field(
        None, alias="filtercolumn"
    )
    filter_operator: Annotated[FilterOperator | None, BeforeValidator(_optional_operator)] = Field(
        None, alias="filteroperator"
    )
    start_value: OptionalText = Field(None, alias="startvalue")
    end_value: OptionalText = Field(None, alias="endvalue")
    blog_output_s3_prefix: Annotated[str | None, BeforeValidator(_s3_prefix)] = Field(
        None, alias="ouputs3Prefix"
    )
    correct_output_s3_prefix: Annotated[str | None, BeforeValidator(_s3_prefix)] = Field(
        None, alias="outputS3Prefix"
    )
    replication_task_settings: Annotated[str | None, BeforeValidator(_task_settings)] = Field(
        None, alias="replication_task_settings"
    )

    # Attributes icetide added (all optional). primary_keys precedes load_mode: its default reads it.
    primary_keys: Annotated[list[str], BeforeValidator(_primary_keys)] = Field(
        default_factory=list, alias="primaryKeys"
    )
    load_mode: Annotated[LoadMode, BeforeValidator(_optional_load_mode)] = Field(
        default_factory=_default_load_mode, alias="loadMode"
    )
    lookback: Annotated[Decimal | None, BeforeValidator(_lookback)] = Field(None, alias="lookback")
    replication_instance_arn: Annotated[str | None, BeforeValidator(_instance_arn)] = Field(
        None, alias="replicationInstanceArn"
    )
    capture_mode: Annotated[CaptureMode, BeforeValidator(_choice(CaptureMode, CaptureMode.DELTA))] = Field(
        CaptureMode.DELTA, alias="captureMode"
    )
    delete_mode: Annotated[DeleteMode, BeforeValidator(_choice(DeleteMode, DeleteMode.HARD))] = Field(
        DeleteMode.HARD, alias="deleteMode"
    )
    reconcile_every_hours: Annotated[int | None, BeforeValidator(_positive_whole("hours"))] = Field(
        None, alias="reconcileEveryHours"
    )
    cdc_max_batch_interval: Annotated[int | None, BeforeValidator(_positive_whole("seconds"))] = Field(
        None, alias="cdcMaxBatchInterval"
    )
    cdc_min_file_size: Annotated[int | None, BeforeValidator(_positive_whole("KB"))] = Field(
        None, alias="cdcMinFileSize"
    )
    cdc_task: Annotated[CdcTask, BeforeValidator(_choice(CdcTask, CdcTask.WINDOWED))] = Field(
        CdcTask.WINDOWED, alias="cdcTask"
    )
    # How much of a continuous task's backlog one run may take (at least one file, whatever its size).
    max_files_per_run: Annotated[int | None, BeforeValidator(_positive_whole("files"))] = Field(
        None, alias="maxFilesPerRun"
    )
    max_bytes_per_run: Annotated[int | None, BeforeValidator(_positive_whole("bytes"))] = Field(
        None, alias="maxBytesPerRun"
    )
    # Where a cdc table's capture starts on a source endpoint that names a PostgreSQL replication slot,
    # until a run has committed a cdcCheckpoint: the slot's confirmed_flush_lsn, noted when it was
    # created (icetide.dms.start_position).
    cdc_start_point: OptionalText = Field(None, alias="cdcStartPoint")

    # Table maintenance: overrides of the maintenance policy's defaults (enabled, retentions, thresholds).
    maintenance: Annotated[MaintenancePolicy | None, PlainValidator(_maintenance)] = Field(
        None, alias="maintenance"
    )

    # Run state, written by the handlers.
    watermark: Annotated[Decimal | str | None, BeforeValidator(_watermark)] = Field(None, alias="watermark")
    cdc_checkpoint: OptionalText = Field(None, alias="cdcCheckpoint")
    # A continuous table's last merged file (a key relative to its task's folder).
    cdc_file_checkpoint: OptionalText = Field(None, alias="cdcFileCheckpoint")
    # What bounds a continuous table's merged CDC rows by its task's counters, committed with the
    # file checkpoint (icetide_contracts.change_count).
    cdc_change_count: dict[str, Any] | None = Field(None, alias="cdcChangeCount")
    # The last time a run found the continuous task stopped or failed and resumed it.
    last_task_resume: dict[str, Any] | None = Field(None, alias="lastTaskResume")
    last_reconcile_time: OptionalText = Field(None, alias="lastReconcileTime")
    last_run_id: OptionalText = Field(None, alias="lastRunId")
    last_run_status: RunStatus | None = Field(None, alias="lastRunStatus")
    last_run_time: OptionalText = Field(None, alias="lastRunTime")
    # When the last successful run committed (kept through later failures: the lag counts from it).
    last_success_time: OptionalText = Field(None, alias="lastSuccessTime")
    # The newest source commit time among the CDC changes the last run that merged any committed
    # (its manifest's newestChangeTime): a cdc table's freshness counts from it (icetide.run.freshness).
    last_change_time: Annotated[str | None, BeforeValidator(_optional_instant)] = Field(
        None, alias="lastChangeTime"
    )
    last_run_error: OptionalText = Field(None, alias="lastRunError")
    last_failed_state: OptionalText = Field(None, alias="lastFailedState")
    last_run_stats: RunStats | None = Field(None, alias="lastRunStats")
    # What the last maintenance run did (record_maintenance writes it; docs/contracts.md).
    last_maintenance: dict[str, Any] | None = Field(None, alias="lastMaintenance")
    # An operator's request for a full reload (icetide.run.reload); it stays, as the record of the
    # last reload, once a run committed after it.
    reload_requested: ReloadRequest | None = Field(None, alias="reloadRequested")
    lock_holder: OptionalText = Field(None, alias="lockHolder")
    lock_time: OptionalText = Field(None, alias="lockTime")

    @classmethod
    def parse(cls, raw: Mapping[str, Any]) -> ControlItem:
        """Validate a plain (not typed-JSON) item; raise InvalidControlItem with one line per problem."""
        if not isinstance(raw, Mapping):
            raise InvalidControlItem([f"item: must be a JSON object, not {type(raw).__name__}"])
        try:
            return cls.model_validate(dict(raw))
        except ValidationError as exc:
            raise InvalidControlItem(problem_lines(exc)) from None

    @classmethod
    def attribute_names(cls) -> frozenset[str]:
        """Every attribute a control item may hold, spelt as in DynamoDB (run state and lock included)."""
        return frozenset(field.alias or name for name, field in cls.model_fields.items())

    @model_validator(mode="wrap")
    @classmethod
    def _read_as_written(cls, data: Any, handler: ModelWrapValidatorHandler[ControlItem]) -> ControlItem:
        # Unknown attributes and ignored values are judged on the item as written, before the fields
        # are validated; all problems then leave as one InvalidControlItem.
        if not isinstance(data, Mapping):
            return handler(data)
        known = cls.attribute_names()
        unknown = unknown_attribute_lines(data, known)
        used, notes = _without_ignored_values({key: value for key, value in data.items() if key in known})
        try:
            item = handler(used)
        except ValidationError as exc:
            problems = problem_lines(exc)
        except InvalidControlItem as exc:
            problems = exc.errors
        else:
            problems = []
        if unknown:
            # `sourcetable` for sourceTable also makes sourceTable "missing"; that echo of the typo
            # would only hide the line that names it.
            misspelt = {likely_meant(name, known) for name in unknown} - set(data)
            problems = [line for line in problems if attribute_of(line) not in misspelt]
        problems = [*problems, *unknown.values()]
        if problems:
            raise InvalidControlItem(problems)
        item._notes = tuple(notes)
        return item

    @model_validator(mode="after")
    def _check_attributes_together(self) -> ControlItem:
        # Raised as InvalidControlItem, not ValueError, so pydantic lets it through unchanged and each
        # cross-attribute problem keeps its own line.
        problems = self._filter_problems() + self._load_mode_problems() + self._capture_problems()
        if problems:
            raise InvalidControlItem(problems)
        return self

    def _filter_problems(self) -> list[str]:
        # Values the operator does not take were already dropped (with a note) before validation.
        operator = self.filter_operator
        if operator is None:
            if self.filter_column is None:
                return []
            return [f"filteroperator: required when filtercolumn is set; use one of {OPERATOR_NAMES}"]
        problems = [] if self.filter_column else [f"filtercolumn: required when filteroperator is {operator}"]
        values = {"startvalue": self.start_value, "endvalue": self.end_value}
        problems += [
            f"{attribute}: required when filteroperator is {operator}"
            for attribute in _VALUES_TAKEN[VALUE_SHAPES[operator]]
            if values[attribute] is None
        ]
        start, end = self.start_value, self.end_value
        if start is not None and end is not None and _order(start, end) > 0:
            problems.append(
                f"startvalue: {start!r} is above endvalue {end!r}; "
                f"filteroperator {operator} takes the lower value as startvalue"
            )
        return problems

    def _load_mode_problems(self) -> list[str]:
        if self.load_mode is LoadMode.MERGE and not self.primary_keys:
            return [
                "primaryKeys: required when loadMode is merge; list the key columns or set loadMode to append"
            ]
        if self.load_mode is LoadMode.APPEND and self.lookback:
            # The lookback window is re-read on purpose; only a merge on keys makes that harmless.
            # (A lookback of 0 re-reads nothing and is accepted.)
            return [
                "lookback: re-reading a window needs primaryKeys to dedupe; an append-only table would "
                "append those rows twice (set primaryKeys, or remove lookback)"
            ]
        return []

    def _capture_problems(self) -> list[str]:
        problems = []
        if self.capture_mode is CaptureMode.CDC:
            if not self.primary_keys:
                problems.append(
                    "primaryKeys: required when captureMode is cdc; changes and deletes are applied by key"
                )
            elif self.load_mode is LoadMode.APPEND:
                problems.append(
                    "loadMode: a cdc table merges its changes on the keys; remove loadMode append"
                )
            if self.lookback:
                problems.append(
                    "lookback: a cdc table reads every change from its committed checkpoint; "
                    "lookback is for delta tables"
                )
            if self.reconcile_every_hours is not None:
                problems.append(
                    "reconcileEveryHours: a cdc table sees deletes in its change stream; "
                    "reconcile is for delta tables"
                )
        elif self.cdc_task is CdcTask.CONTINUOUS:
            problems.append("cdcTask: continuous is a kind of cdc task; set captureMode cdc")
        if self.cdc_task is not CdcTask.CONTINUOUS:
            problems += [
                f"{attribute}: bounds the files a continuous task's run takes; "
                f"set cdcTask continuous or remove {attribute}"
                for attribute, value in (
                    ("maxFilesPerRun", self.max_files_per_run),
                    ("maxBytesPerRun", self.max_bytes_per_run),
                )
                if value is not None
            ]
        if self.capture_mode is not CaptureMode.CDC:
            problems += [
                f"{attribute}: only cdc tables write change files; set captureMode cdc or remove {attribute}"
                for attribute, value in (
                    ("cdcMaxBatchInterval", self.cdc_max_batch_interval),
                    ("cdcMinFileSize", self.cdc_min_file_size),
                )
                if value is not None
            ]
            if self.reconcile_every_hours is not None and self.load_mode is not LoadMode.MERGE:
                problems.append(
                    "reconcileEveryHours: needs primaryKeys (a merge table) "
                    "to know which keys the source lost"
                )
        if self.delete_mode is DeleteMode.SOFT and self.load_mode is LoadMode.APPEND:
            problems.append(
                "deleteMode: soft deletes mark rows by key; "
                "an append-only table has no keys (set primaryKeys)"
            )
        return problems

    @property
    def notes(self) -> tuple[str, ...]:
        """One `attribute: ignored, why` line for each value the item sets that no run will use.

        Worth showing (the CLI prints them, StartWorkflow logs them as warnings), never an error: the
        blog's own item has such a value.
        """
        return self._notes

    @property
    def is_continuous(self) -> bool:
        """True for a cdc table whose runs consume one long-lived task's files (`cdcTask continuous`)."""
        return self.capture_mode is CaptureMode.CDC and self.cdc_task is CdcTask.CONTINUOUS

    @property
    def maintenance_policy(self) -> MaintenancePolicy:
        """The table's maintenance policy: the item's ``maintenance`` overrides over the defaults."""
        return self.maintenance or MaintenancePolicy()

    @property
    def is_active(self) -> bool:
        """True when the scheduler should start runs for this table (`activeflag` Y, the default)."""
        return self.active_flag == "Y"

    @property
    def output_s3_prefix(self) -> str | None:
        """The extra S3 prefix: `outputS3Prefix` when set, else the blog's `ouputs3Prefix`."""
        prefix = (self.correct_output_s3_prefix or self.blog_output_s3_prefix or "").strip("/")
        return prefix or None

    @property
    def task_settings(self) -> dict[str, Any]:
        """`replication_task_settings` as a dict ({} when unset)."""
        if self.replication_task_settings is None:
            return {}
        settings: dict[str, Any] = json.loads(self.replication_task_settings)
        return settings
