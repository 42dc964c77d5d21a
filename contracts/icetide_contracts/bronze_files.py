"""The bronze file selection (docs/contracts.md, "Bronze file selection") of a continuous cdc run.

A continuous table's long-lived DMS task writes into one fixed folder all the time, so a run cannot
read "the folder": it reads the files after the committed file checkpoint, in the order DMS wrote
them, at most a bounded number of them. select_bronze_files lists them, writes `to_json()` to the
plan's `bronzeFilesUri`; the Glue job reads exactly these files (`--bronze_files_uri`), and
commit_watermark commits `last_file` as the table's file checkpoint, in the run's final conditional
write. Both read it with `from_text`, so the job merges and the commit records the same files.

Keys are relative to `bronze_uri` (the task's folder), e.g. ``public/orders/LOAD00000001.parquet``.
`dms_file_order` is the one definition of DMS's order: full-load files by their hexadecimal number,
then the time-named CDC files by name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from icetide_contracts.change_count import ChangeCount
from icetide_contracts.json_fields import (
    Invalid,
    json_key,
    nested,
    optional,
    read_object,
    read_text,
    text,
    whole_number,
    write_object,
)

S3_FOLDER_URI = r"^s3://[^/]+/(.+/)?$"
# DMS's S3 target names: full load `LOAD` + hexadecimal counter; CDC files by the time DMS wrote
# them, `yyyyMMdd-HHmmssSSS` (docs: "Using Amazon S3 as a target").
_LOAD_NAME = re.compile(r"^LOAD(?P<number>[0-9A-Fa-f]+)\.parquet$")
_CDC_NAME = re.compile(r"^[0-9]{8}-[0-9]{9}[^/]*\.parquet$")
FULL_LOAD_PHASE = 0
CDC_PHASE = 1


class NotADmsFileName(ValueError):
    """A key whose file name is neither a DMS full-load nor a DMS CDC file name."""


def is_full_load_file(file_name: str) -> bool:
    """True for a DMS full-load file's name (``LOAD0000000A.parquet``), without its folder."""
    return _LOAD_NAME.match(file_name) is not None


def dms_file_order(key: str) -> tuple[int, int, str]:
    """Where ``key`` sorts among one task's files: full-load files by number, then CDC files by name.

    Plain string order would put ``20261124-...`` before ``LOAD...`` and ``LOAD0000000A`` after
    ``LOAD00000009`` only by luck of the padding; this order is DMS's own.
    """
    name = key.rsplit("/", 1)[-1]
    load = _LOAD_NAME.match(name)
    if load is not None:
        return (FULL_LOAD_PHASE, int(load.group("number"), 16), name)
    if _CDC_NAME.match(name):
        return (CDC_PHASE, 0, name)
    raise NotADmsFileName(f"{key!r} is not a DMS file name (LOAD<hex>.parquet or yyyyMMdd-HHmmssSSS.parquet)")


def _relative_keys(value: object) -> list[str]:
    if not isinstance(value, list):
        raise Invalid("Input should be a valid list")
    keys: list[str] = []
    for position, key in enumerate(value):
        if not isinstance(key, str):
            raise Invalid("Input should be a valid string", at=str(position))
        if key.startswith("/") or "://" in key or any(part in ("", ".", "..") for part in key.split("/")):
            raise Invalid(f"{key!r} must be a key relative to bronzeUri", at=str(position))
        try:
            dms_file_order(key)
        except NotADmsFileName as error:
            raise Invalid(str(error), at=str(position)) from None
        keys.append(key)
    if keys != sorted(keys, key=dms_file_order):
        raise Invalid("files must be listed in DMS's order (full-load files by number, then CDC files)")
    if len(set(keys)) != len(keys):
        raise Invalid("files must not repeat")
    return keys


@dataclass(frozen=True, kw_only=True)
class BronzeFiles:
    """The files one continuous run merges, in DMS's order, and their total size in bytes."""

    run_id: str = field(metadata=json_key("runId", text(min_length=1)))
    bronze_uri: str = field(metadata=json_key("bronzeUri", text(pattern=S3_FOLDER_URI)))
    files: list[str] = field(metadata=json_key("files", _relative_keys))
    total_bytes: int = field(metadata=json_key("totalBytes", whole_number(minimum=0)))
    # The CDC rows the files hold (their parquet footers' row counts; full-load files left out).
    change_rows: int = field(default=0, metadata=json_key("changeRows", whole_number(minimum=0)))
    # The table's change count once these files are merged (icetide_contracts.change_count), which
    # the commit stores with `last_file`; None: the run did not count (a selection written by hand).
    change_count: ChangeCount | None = field(
        default=None, metadata=json_key("changeCount", optional(nested(ChangeCount, "change count")))
    )

    @property
    def last_file(self) -> str | None:
        """The key the run commits as the file checkpoint (None: the selection is empty)."""
        return self.files[-1] if self.files else None

    @property
    def uris(self) -> list[str]:
        """The files' full URIs, in order."""
        return [self.bronze_uri + key for key in self.files]

    def not_for(self, run_id: str, bronze_uri: str) -> list[str]:
        """Why this is not run ``run_id``'s selection of files below ``bronze_uri`` (a trailing "/"
        aside); empty when it is. Both readers refuse such a selection: merging or committing another
        run's files would move the checkpoint past files this run never merged."""
        problems = []
        if self.run_id != run_id:
            problems.append(f"its runId is {self.run_id}, not {run_id}")
        if self.bronze_uri.rstrip("/") != bronze_uri.rstrip("/"):
            problems.append(f"its bronzeUri is {self.bronze_uri}, not {bronze_uri}")
        return problems

    def to_json(self) -> dict[str, Any]:
        """The selection as the contract spells it."""
        return write_object(self)

    @classmethod
    def from_json(cls, data: object) -> BronzeFiles:
        """The selection from its JSON object; ContractViolation names every attribute that breaks it."""
        return read_object(cls, data, "bronze file selection")

    @classmethod
    def from_text(cls, content: str | bytes) -> BronzeFiles:
        """The selection from the text of its object; ContractViolation says what is wrong."""
        return cls.from_json(read_text(content, "bronze file selection"))
