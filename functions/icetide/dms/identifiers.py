"""Run ids, Step Functions execution names and the DMS identifiers and tags of a run.

One run of one table in one schedule slot has one id, `<targetTableName>-<YYYYMMDDTHHMMZ>` (a
maintenance run's: `<targetTableName>-maintain-<YYYYMMDDTHHMMZ>`). It is
also the execution name, so a duplicate schedule event cannot start a second execution (Step
Functions refuses a name it has seen), and every DMS resource of the run is named after it, so a
failed run's leftovers are easy to find and delete.

DMS names live in one namespace per account and Region, shared by every stack, and DMS folds
replication instance identifiers to lower case. So a run's DMS identifiers carry a digest of the
exact (stack, table, run id) triple: two stacks, or two tables that differ only in case or in
characters DMS does not allow (`Orders`/`orders`, `a_b`/`a__b`), never share a name, and cleanup
never finds another stack's resource under its own name.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from icetide.control.model import TARGET_TABLE_NAME_PATTERN

EXECUTION_NAME_MAX_LENGTH = 80
TASK_IDENTIFIER_MAX_LENGTH = 255
ENDPOINT_IDENTIFIER_MAX_LENGTH = 255
INSTANCE_IDENTIFIER_MAX_LENGTH = 63
IDENTIFIER_PREFIX = "icetide-"
SLOT_FORMAT = "%Y%m%dT%H%MZ"
# DMS names the log group of an instance's task logs after the instance.
DMS_TASK_LOG_GROUP_PREFIX = "dms-tasks-"
# Tags on every DMS resource a run creates; template.yaml's IAM conditions name the same keys.
STACK_TAG = "icetide:stack"
TABLE_TAG = "icetide:table"
RUN_ID_TAG = "icetide:run-id"
# Only a continuous table's task and endpoint carry it: no run's cleanup ever deletes them.
LONG_LIVED_TAG = "icetide:long-lived"
CONTINUOUS_RUN_SUFFIX = "-continuous"
# 16 hex characters (64 bits) of sha256: a collision between two live runs is out of reach even for
# names chosen to collide, yet an instance identifier (63 characters) keeps room for table and slot.
DMS_DIGEST_LENGTH = 16
_HASH_LENGTH = 8
_SLOT_SUFFIX = re.compile(r"-([0-9]{8}T[0-9]{4}Z)$")
MAINTENANCE_MARKER = "-maintain-"
_MAINTENANCE_SUFFIX = re.compile(rf"{MAINTENANCE_MARKER}[0-9]{{8}}T[0-9]{{4}}Z$")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Step Functions execution names may not contain these (AWS StartExecution API reference).
_EXECUTION_NAME_FORBIDDEN = set(' <>{}[]?*"#%\\^|~`$&,;:/')


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:_HASH_LENGTH]


def _as_utc(moment: datetime) -> datetime:
    # A naive datetime is taken as UTC: schedule times (EventBridge `time`) are UTC.
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


def schedule_slot(moment: datetime, slot_minutes: int = 60) -> datetime:
    """The start (UTC) of the schedule slot holding `moment`; slots are counted from the Unix epoch."""
    if slot_minutes <= 0:
        raise ValueError(f"slot length must be a positive number of minutes, got {slot_minutes}")
    slot = timedelta(minutes=slot_minutes)
    return _EPOCH + ((_as_utc(moment) - _EPOCH) // slot) * slot


def _slot_name(table: str, slot_start: datetime, marker: str) -> str:
    """`<table><marker><YYYYMMDDTHHMMZ>`, at most 80 characters.

    A table name too long for that is cut and followed by 8 hex characters of its sha256, so the
    slot stays readable at the end and two long names sharing a beginning still get different ids.
    """
    if not TARGET_TABLE_NAME_PATTERN.match(table):
        raise ValueError(f"{table!r} is not a valid targetTableName")
    slot = _as_utc(slot_start).strftime(SLOT_FORMAT)
    room = EXECUTION_NAME_MAX_LENGTH - len(slot) - len(marker)
    table_part = table if len(table) <= room else table[: room - _HASH_LENGTH] + _digest(table)
    return validate_execution_name(f"{table_part}{marker}{slot}")


def run_id(table: str, slot_start: datetime) -> str:
    """`<table>-<YYYYMMDDTHHMMZ>`, at most 80 characters (a long table name is cut, see `_slot_name`)."""
    return _slot_name(table, slot_start, "-")


def maintenance_run_id(table: str, slot_start: datetime) -> str:
    """`<table>-maintain-<YYYYMMDDTHHMMZ>`: the id (and execution name) of a table's maintenance run.

    One per maintenance slot, so a repeated schedule event starts nothing new. It holds the table's
    lock like a merge run's id does; the marker lets a scheduler tell the two apart in `lockHolder`
    (a table name has no hyphen, so no merge run id ever carries it).
    """
    return _slot_name(table, slot_start, MAINTENANCE_MARKER)


def is_maintenance_run_id(run_id: str) -> bool:
    """True when `run_id` (e.g. a lock holder) names a maintenance run, not a merge run."""
    return _MAINTENANCE_SUFFIX.search(run_id) is not None


def execution_name(table: str, slot_start: datetime) -> str:
    """The Step Functions execution name of a run: by contract, the run id itself."""
    return run_id(table, slot_start)


def _is_control_or_space(character: str) -> bool:
    return ord(character) < 0x20 or 0x7F <= ord(character) <= 0x9F or character.isspace()


def validate_execution_name(name: str) -> str:
    """Return `name` if Step Functions accepts it as an execution name, else ValueError saying why."""
    if not 1 <= len(name) <= EXECUTION_NAME_MAX_LENGTH:
        raise ValueError(f"execution name {name!r} must be 1 to {EXECUTION_NAME_MAX_LENGTH} characters long")
    bad = sorted({character for character in name if character in _EXECUTION_NAME_FORBIDDEN})
    if bad:
        raise ValueError(f"execution name {name!r} must not contain {' '.join(repr(c) for c in bad)}")
    if any(_is_control_or_space(character) for character in name):
        raise ValueError(f"execution name {name!r} must not contain white space or control characters")
    return name


def validate_identifier(value: str, kind: str, max_len: int) -> str:
    """Return `value` if DMS accepts it as an identifier of `kind`, else ValueError naming the rule.

    DMS: 1 to `max_len` ASCII letters, digits and hyphens; starts with a letter; no two consecutive
    hyphens; does not end with a hyphen.
    """
    if not 1 <= len(value) <= max_len:
        raise ValueError(f"{kind} identifier {value!r} must be 1 to {max_len} characters long")
    if not re.fullmatch(r"[A-Za-z0-9-]+", value):
        raise ValueError(f"{kind} identifier {value!r} may contain only ASCII letters, digits and hyphens")
    if not value[0].isalpha():
        raise ValueError(f"{kind} identifier {value!r} must start with a letter")
    if "--" in value:
        raise ValueError(f"{kind} identifier {value!r} must not contain two consecutive hyphens")
    if value.endswith("-"):
        raise ValueError(f"{kind} identifier {value!r} must not end with a hyphen")
    return value


def _readable(run: str, room: int) -> str:
    """`run` lowered to DMS's alphabet, at most `room` characters, keeping a trailing slot whole."""

    def sanitized(text: str) -> str:
        return re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", text.lower())).strip("-")

    text = sanitized(run)
    if len(text) <= room:
        return text
    slot = _SLOT_SUFFIX.search(run)
    if slot is None:
        return text[:room].rstrip("-")
    tail = slot.group(1).lower()
    head = sanitized(run[: slot.start()])[: room - len(tail) - 1].rstrip("-")
    return f"{head}-{tail}" if head else tail


KEYS_SUFFIX = "-keys"


@dataclass(frozen=True)
class RunDmsResources:
    """The identifiers and tags of the DMS resources one run of one stack creates.

    Each identifier is `icetide-<readable run id>-<digest>`: the readable part (lower case, `_` and
    other characters DMS refuses become `-`, cut to fit) is for people; the digest, 16 hex
    characters of sha256 over the exact stack name, targetTableName and run id, is what keeps
    runs, tables and stacks apart. Identifiers are lower case because DMS stores replication
    instance identifiers in lower case.
    """

    stack: str
    target_table_name: str
    run_id: str

    def __post_init__(self) -> None:
        for field, value in (
            ("stack", self.stack),
            ("targetTableName", self.target_table_name),
            ("run id", self.run_id),
        ):
            if not value:
                raise ValueError(f"a DMS resource name needs a non-empty {field}")

    def _identifier(self, kind: str, max_len: int) -> str:
        exact = json.dumps([self.stack, self.target_table_name, self.run_id], ensure_ascii=True)
        digest = hashlib.sha256(exact.encode("utf-8")).hexdigest()[:DMS_DIGEST_LENGTH]
        room = max_len - len(IDENTIFIER_PREFIX) - len(digest) - 1
        readable = _readable(self.run_id, room)
        text = f"{IDENTIFIER_PREFIX}{readable}-{digest}" if readable else f"{IDENTIFIER_PREFIX}{digest}"
        return validate_identifier(text, kind, max_len)

    @property
    def task_identifier(self) -> str:
        """The replication task identifier (at most 255 characters)."""
        return self._identifier("replication task", TASK_IDENTIFIER_MAX_LENGTH)

    @property
    def endpoint_identifier(self) -> str:
        """The S3 target endpoint identifier (at most 255 characters)."""
        return self._identifier("endpoint", ENDPOINT_IDENTIFIER_MAX_LENGTH)

    @property
    def key_task_identifier(self) -> str:
        """The task identifier of a reconcile run's key extraction (the run's identifier + `-keys`)."""
        return (
            self._identifier("replication task", TASK_IDENTIFIER_MAX_LENGTH - len(KEYS_SUFFIX)) + KEYS_SUFFIX
        )

    @property
    def key_endpoint_identifier(self) -> str:
        """The S3 target endpoint identifier of a reconcile run's key extraction."""
        return self._identifier("endpoint", ENDPOINT_IDENTIFIER_MAX_LENGTH - len(KEYS_SUFFIX)) + KEYS_SUFFIX

    @property
    def instance_identifier(self) -> str:
        """The replication instance identifier (at most 63 characters)."""
        return self._identifier("replication instance", INSTANCE_IDENTIFIER_MAX_LENGTH)

    @property
    def task_log_group(self) -> str:
        """The CloudWatch log group DMS writes the task logs of the run's instance to (DMS's naming:
        ``dms-tasks-<instance identifier>``); template.yaml scopes the logs permissions to it."""
        return f"{DMS_TASK_LOG_GROUP_PREFIX}{self.instance_identifier}"

    @property
    def tags(self) -> dict[str, str]:
        """Tags of every resource of the run: the stack's tag scopes template.yaml's IAM conditions."""
        return {STACK_TAG: self.stack, TABLE_TAG: self.target_table_name, RUN_ID_TAG: self.run_id}


def continuous_resources(stack: str, target_table_name: str) -> RunDmsResources:
    """The long-lived task and endpoint of a continuous table: named after the table, not a run.

    Every run of the table finds the same task under the same identifier; the first creates it.
    """
    return RunDmsResources(stack, target_table_name, f"{target_table_name}{CONTINUOUS_RUN_SUFFIX}")


def continuous_tags(resources: RunDmsResources) -> dict[str, str]:
    """The tags of a continuous table's task and endpoint: a run's tags plus the long-lived mark."""
    return resources.tags | {LONG_LIVED_TAG: "true"}
