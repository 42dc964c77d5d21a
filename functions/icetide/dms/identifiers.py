"""Run ids, Step Functions execution names and the DMS identifiers derived from them.

One run of one table in one schedule slot has one id, `<targetTableName>-<YYYYMMDDTHHMMZ>`. It is
also the execution name, so a duplicate schedule event cannot start a second execution (Step
Functions refuses a name it has seen), and every DMS resource of the run is named after it, so a
failed run's leftovers are easy to find and delete.
"""

from __future__ import annotations

import hashlib
import re
from datetime import UTC, datetime, timedelta

from icetide.control.model import TARGET_TABLE_NAME_PATTERN

EXECUTION_NAME_MAX_LENGTH = 80
TASK_IDENTIFIER_MAX_LENGTH = 255
ENDPOINT_IDENTIFIER_MAX_LENGTH = 255
INSTANCE_IDENTIFIER_MAX_LENGTH = 63
IDENTIFIER_PREFIX = "icetide-"
SLOT_FORMAT = "%Y%m%dT%H%MZ"
_HASH_LENGTH = 8
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)

# Step Functions execution names may not contain these (AWS StartExecution API reference).
_EXECUTION_NAME_FORBIDDEN = set(" <>{}[]?*\"#%\\^|~`$&,;:/")


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


def run_id(table: str, slot_start: datetime) -> str:
    """`<table>-<YYYYMMDDTHHMMZ>`, at most 80 characters.

    A table name too long for that is cut and followed by 8 hex characters of its sha256, so the
    slot stays readable at the end and two long names sharing a beginning still get different ids.
    """
    if not TARGET_TABLE_NAME_PATTERN.match(table):
        raise ValueError(f"{table!r} is not a valid targetTableName")
    slot = _as_utc(slot_start).strftime(SLOT_FORMAT)
    room = EXECUTION_NAME_MAX_LENGTH - len(slot) - 1
    table_part = table if len(table) <= room else table[: room - _HASH_LENGTH] + _digest(table)
    return validate_execution_name(f"{table_part}-{slot}")


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


def _dms_identifier(run: str, kind: str, max_len: int) -> str:
    text = IDENTIFIER_PREFIX + run.lower().replace("_", "-")
    text = re.sub(r"-{2,}", "-", re.sub(r"[^a-z0-9-]", "-", text)).strip("-")
    if len(text) > max_len:
        # Cut, then keep runs apart by a digest of the full run id (the cut may drop the slot).
        text = text[: max_len - _HASH_LENGTH - 1].rstrip("-") + "-" + _digest(run)
    return validate_identifier(text, kind, max_len)


def task_identifier(run_id: str) -> str:
    """The replication task identifier of run `run_id` (at most 255 characters)."""
    return _dms_identifier(run_id, "replication task", TASK_IDENTIFIER_MAX_LENGTH)


def endpoint_identifier(run_id: str) -> str:
    """The per-run S3 target endpoint identifier of run `run_id` (at most 255 characters)."""
    return _dms_identifier(run_id, "endpoint", ENDPOINT_IDENTIFIER_MAX_LENGTH)


def instance_identifier(run_id: str) -> str:
    """The per-run replication instance identifier of run `run_id` (at most 63 characters)."""
    return _dms_identifier(run_id, "replication instance", INSTANCE_IDENTIFIER_MAX_LENGTH)
