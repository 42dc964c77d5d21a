"""Which of a continuous task's files one run merges: those after the file checkpoint, in DMS's
order, at most a bounded number of them.

A backlog (a table turned on with a large full load, or runs that failed for a while) is consumed
over several bounded runs, each a short Glue job and one commit, instead of one run that outgrows
its workers. A file larger than the byte bound is still taken alone: the table must never stall.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta

from icetide.errors import IcetideError
from icetide_contracts.bronze_files import CDC_PHASE, NotADmsFileName, dms_file_order

# Examples an error message names, at most.
_EXAMPLES = 3


class BronzeFolderInvalid(IcetideError):
    """A continuous task's folder holds a file DMS would not write there (not parquet, another name).

    Not retried: the endpoint must write parquet with DMS's names, or the stray file must go.
    """


@dataclass(frozen=True)
class ListedFile:
    """One object below the task's folder: its key relative to the folder, its size in bytes, and
    when it was written (None: not known)."""

    key: str
    size: int
    written: datetime | None = None


def at_risk(taken: list[ListedFile], now: datetime, retention_days: int) -> timedelta | None:
    """The age of the oldest file a run takes, when it has lived more than half the time the
    lifecycle rule keeps it (else None): a table that falls this far behind may lose files unmerged,
    with nothing else to say so (docs/continuous-cdc.md, "The lifecycle rule")."""
    written = [file.written for file in taken if file.written is not None]
    if not written:
        return None
    age = now - min(written)
    return age if age > timedelta(days=retention_days) / 2 else None


def _is_hidden(key: str) -> bool:
    # Spark and Hadoop skip names starting with "_" or "." (markers, checksums); so does a run.
    return key.rsplit("/", 1)[-1].startswith(("_", "."))


def select_files(
    listed: Iterable[ListedFile], *, after: str | None, max_files: int, max_bytes: int
) -> list[ListedFile]:
    """The files a run takes: in DMS's order, strictly after ``after`` (None: from the first), at most
    ``max_files`` of them and, beyond the first, at most ``max_bytes`` in all."""
    if max_files < 1 or max_bytes < 1:
        raise ValueError("a run takes at least one file and one byte")
    start = dms_file_order(after) if after is not None else None
    candidates: list[tuple[tuple[int, int, str], ListedFile]] = []
    strangers: list[str] = []
    for file in listed:
        if _is_hidden(file.key):
            continue
        try:
            order = dms_file_order(file.key)
        except NotADmsFileName:
            strangers.append(file.key)
            continue
        if start is None or order > start:
            candidates.append((order, file))
    if strangers:
        raise BronzeFolderInvalid(
            f"{len(strangers)} file(s) below the continuous task's folder are not DMS parquet files "
            f"(e.g. {', '.join(sorted(strangers)[:_EXAMPLES])}): the S3 endpoint must write parquet "
            "(DataFormat=parquet); nothing was merged"
        )
    taken: list[ListedFile] = []
    total = 0
    for _, file in sorted(candidates, key=lambda pair: pair[0]):
        if len(taken) == max_files or (taken and total + file.size > max_bytes):
            break
        taken.append(file)
        total += file.size
    return taken


def listing_start(after: str | None) -> str | None:
    """Where an S3 listing may start (``StartAfter``, relative to the folder), or None for the start.

    After a CDC file, every later CDC file sorts after it as a string too, so S3 can skip what was
    merged. A full-load checkpoint cannot: CDC names (digits) sort before ``LOAD`` names.
    """
    if after is not None and dms_file_order(after)[0] == CDC_PHASE:
        return after
    return None
