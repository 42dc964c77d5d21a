"""Verify runs: an operator's check of a silver table against its source, through the state machine.

A verify run is an execution of the table-run state machine whose name, its run id, carries the
verify marker: ``<targetTableName>-verify-<YYYYMMDDTHHMMSSZ>`` (``icetide verify TABLE --stack``
starts it). The name is the request, as a maintenance run's marker is (``-maintain-``): it reaches
every handler as the run id, it is the lock holder an operator sees while the run holds the table,
and no merge run's id can carry it (a table name has no hyphen). Whole seconds, because an operator
may verify a table twice in a minute; two verifies started in the same second are one execution
(Step Functions refuses a name it has seen).

Its plan (``icetide.run.plan``) extracts the source's keys only, the Glue job compares them with
silver's live keys and writes a verify report (``icetide_contracts.verify``), and the state machine
releases the lock without committing anything: no watermark, checkpoint or statistics move.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from pydantic import BaseModel, ConfigDict, Field

from icetide.control.model import TARGET_TABLE_NAME_PATTERN
from icetide.dms.identifiers import EXECUTION_NAME_MAX_LENGTH, validate_execution_name

VERIFY_MARKER = "-verify-"
VERIFY_TIME_FORMAT = "%Y%m%dT%H%M%SZ"
_VERIFY_SUFFIX = re.compile(rf"{VERIFY_MARKER}[0-9]{{8}}T[0-9]{{6}}Z$")


def verify_run_id(target_table_name: str, moment: datetime) -> str:
    """``<table>-verify-<YYYYMMDDTHHMMSSZ>`` (UTC), at most 80 characters: a table name too long for
    that is cut (a verify run id is only ever compared whole, never parsed back into the table)."""
    if not TARGET_TABLE_NAME_PATTERN.match(target_table_name):
        raise ValueError(f"{target_table_name!r} is not a valid targetTableName")
    stamp = (moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)).strftime(
        VERIFY_TIME_FORMAT
    )
    room = EXECUTION_NAME_MAX_LENGTH - len(VERIFY_MARKER) - len(stamp)
    return validate_execution_name(f"{target_table_name[:room]}{VERIFY_MARKER}{stamp}")


def is_verify_run_id(run_id: str) -> bool:
    """True when ``run_id`` (an execution name, a lock holder) names a verify run."""
    return _VERIFY_SUFFIX.search(run_id) is not None


class VerifyRequest(BaseModel):
    """What a caller of StartVerifyRun names: a table, and nothing else.

    No run id and no execution input: the run id is made here (:func:`verify_run_id`), so whoever
    may invoke StartVerifyRun can start verify runs and no other run. An unknown key is refused,
    not ignored, so that a caller who means to pass more learns that it cannot.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    target_table_name: str = Field(alias="targetTableName", pattern=TARGET_TABLE_NAME_PATTERN.pattern)

    def execution_input(self) -> dict[str, str]:
        """The verify run's execution input: its table (the run id is the execution's name)."""
        return {"targetTableName": self.target_table_name}
