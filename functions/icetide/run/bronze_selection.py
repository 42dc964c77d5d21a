"""Which of a continuous task's files one run merges: those after the file checkpoint, in DMS's
order, at most a bounded number of them.

A backlog (a table turned on with a large full load, or runs that failed for a while) is consumed
over several bounded runs, each a short Glue job and one commit, instead of one run that outgrows
its workers. A file larger than the byte bound is still taken alone: the table must never stall.

Files are chosen by name, and the checkpoint a run commits is a name, so a name is trusted only
where DMS could have written it: in the table's own ``<schema>/<table>/`` folder below the task's,
and, for a CDC file (named by the time DMS wrote it), not later than S3 says the object was written.
A file that breaks either fails the run naming it; skipping it silently would leave a forged
far-future file to move the checkpoint past every real file to come.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from icetide.errors import IcetideError
from icetide.run.bronze_listing import hidden_by_spark
from icetide_contracts.bronze_files import CDC_PHASE, NotADmsFileName, dms_file_order

# Examples an error message names, at most.
_EXAMPLES = 3
# DMS names a CDC file by the replication instance's clock when it starts writing it, and S3 stamps
# LastModified when the upload completes, so a real file's name is earlier than its LastModified.
# The allowance covers the instance's clock running ahead of S3's; a name further ahead was not
# written by DMS at the time S3 received it.
MAX_NAME_AHEAD_OF_WRITE = timedelta(minutes=15)
# The time in a CDC file's name, yyyyMMdd-HHmmssSSS (UTC), as DMS's S3 target writes it.
_CDC_NAME_TIME = "%Y%m%d-%H%M%S%f"
_CDC_NAME_TIME_LENGTH = len("20261121-070000000")


class BronzeFolderInvalid(IcetideError):
    """A continuous task's folder holds a file DMS would not write there (not parquet, another name).

    Not retried: the endpoint must write parquet with DMS's names, or the stray file must go.
    """


class BronzeFileNotFromDms(BronzeFolderInvalid):
    """A file in a continuous task's folder that DMS cannot have written: outside the table's own
    ``<schema>/<table>/`` folder, or a CDC file named later than S3 received it.

    Not retried: nothing is merged and the checkpoint stays until the file is removed (only a
    principal the bronze bucket's policy lets write there can have put it).
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
    # A file Spark would not list is not one a run takes either.
    return hidden_by_spark(key.rsplit("/", 1)[-1])


def cdc_name_time(key: str) -> datetime:
    """The UTC time in a CDC file's name (``yyyyMMdd-HHmmssSSS...parquet``)."""
    name = key.rsplit("/", 1)[-1][:_CDC_NAME_TIME_LENGTH]
    return datetime.strptime(name, _CDC_NAME_TIME).replace(tzinfo=UTC)


def _not_from_dms(file: ListedFile, phase: int, table_folder: str) -> str | None:
    """Why DMS cannot have written ``file`` where it lies (None: it can have)."""
    if file.key.rsplit("/", 1)[0] + "/" != table_folder:
        return f"{file.key} is outside the table's own folder {table_folder}"
    if phase == CDC_PHASE and file.written is not None:
        named = cdc_name_time(file.key)
        if named > file.written + MAX_NAME_AHEAD_OF_WRITE:
            return (
                f"{file.key} is named {named:%Y-%m-%d %H:%M:%S} UTC but S3 received it at "
                f"{file.written:%Y-%m-%d %H:%M:%S} UTC"
            )
    return None


def select_files(
    listed: Iterable[ListedFile], *, table_folder: str, after: str | None, max_files: int, max_bytes: int
) -> list[ListedFile]:
    """The files a run takes: in DMS's order, strictly after ``after`` (None: from the first), at most
    ``max_files`` of them and, beyond the first, at most ``max_bytes`` in all. ``table_folder`` is
    the table's ``<schema>/<table>/`` folder, relative as the keys are; every file after ``after``
    must be one DMS can have written there (:class:`BronzeFileNotFromDms`)."""
    if max_files < 1 or max_bytes < 1:
        raise ValueError("a run takes at least one file and one byte")
    start = dms_file_order(after) if after is not None else None
    candidates: list[tuple[tuple[int, int, str], ListedFile]] = []
    strangers: list[str] = []
    forged: list[str] = []
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
            if (why := _not_from_dms(file, order[0], table_folder)) is not None:
                forged.append(why)
    if strangers:
        raise BronzeFolderInvalid(
            f"{len(strangers)} file(s) below the continuous task's folder are not DMS parquet files "
            f"(e.g. {', '.join(sorted(strangers)[:_EXAMPLES])}): the S3 endpoint must write parquet "
            "(DataFormat=parquet); nothing was merged"
        )
    if forged:
        raise BronzeFileNotFromDms(
            f"{len(forged)} file(s) below the continuous task's folder cannot have been written by DMS "
            f"({'; '.join(sorted(forged)[:_EXAMPLES])}): nothing was merged and the file checkpoint "
            "stays; remove the file(s) and look into who wrote them"
        )
    taken: list[ListedFile] = []
    total = 0
    for _, file in sorted(candidates, key=lambda pair: pair[0]):
        if len(taken) == max_files or (taken and total + file.size > max_bytes):
            break
        taken.append(file)
        total += file.size
    return taken


def takes_every_file(listed: list[ListedFile], after: str | None, taken: list[ListedFile]) -> bool:
    """True when ``taken`` (from :func:`select_files` over ``listed``) holds every file after
    ``after``: nothing the listing saw is left for a later run."""
    start = dms_file_order(after) if after is not None else None
    remaining = sum(
        1
        for file in listed
        if not _is_hidden(file.key) and (start is None or dms_file_order(file.key) > start)
    )
    return remaining == len(taken)


def listing_start(after: str | None) -> str | None:
    """Where an S3 listing may start (``StartAfter``, relative to the folder), or None for the start.

    After a CDC file, every later CDC file sorts after it as a string too, so S3 can skip what was
    merged. A full-load checkpoint cannot: CDC names (digits) sort before ``LOAD`` names.
    """
    if after is not None and dms_file_order(after)[0] == CDC_PHASE:
        return after
    return None
