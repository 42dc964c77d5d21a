"""Named exceptions of the Glue job.

The Step Functions Catch sees a Glue job failure as ``States.TaskFailed`` with the job's error
message, so every message names what was wrong (the argument, the column, the types) and why.
"""

from __future__ import annotations


def one_line(error: object) -> str:
    """An error's text on one line (whitespace runs, newlines included, become one space)."""
    return " ".join(str(error).split())


class IcetideJobError(Exception):
    """Base class: the job refused or failed to load a run, and silver was left as it was.

    The message is kept on one line (whitespace runs, newlines included, become one space): it is
    what ``icetide job run`` prints as its one error line and what Glue shows as the job run's
    ``ErrorMessage``, which the failure record keeps.
    """

    def __init__(self, message: str = "") -> None:
        super().__init__(one_line(message))

    def summary(self) -> str:
        """``<ErrorName>: <message>``: the one line an operator reads, name first so the failure
        record can tell which refusal it was."""
        return f"{type(self).__name__}: {self}"


class InvalidJobArguments(IcetideJobError):
    """An argument is missing or malformed (the message names the argument)."""


class MissingPrimaryKeys(IcetideJobError):
    """A merge needs keys; a key-less table must be loaded with ``--load_mode append``."""


class BronzeSchemaError(IcetideJobError):
    """The bronze files lack a column the run needs (key, watermark, DMS timestamp), use a
    column name reserved for icetide's metadata, or carry a DMS column (timestamp, change sequence,
    Op) of a type DMS never writes: a mistyped change time would be stored and would order every
    later change of those keys wrongly, for good."""


class UnreadableBronzeFile(IcetideJobError):
    """A bronze file cannot be read as parquet (truncated, corrupt, or another format under a
    ``.parquet`` name); the message names the file and Spark's reason."""


class MissingBronzeFile(UnreadableBronzeFile):
    """A file the run's bronze file selection (``--bronze_files_uri``) lists is gone (deleted, or
    expired by the bronze lifecycle rule, after it was listed); the message names the file."""


class InvalidBronzeFileSelection(IcetideJobError):
    """The bronze file selection (``--bronze_files_uri``) cannot be read or breaks its contract
    (``icetide_contracts.bronze_files``): the job cannot know which files the run merges."""


class BronzeFileSelectionMismatch(IcetideJobError):
    """The bronze file selection belongs to another run (``runId`` is not ``--run_id``) or another
    folder (``bronzeUri`` is not ``--bronze_uri``): merging it would merge files the run's file
    checkpoint does not describe."""


class NoParquetInBronze(IcetideJobError):
    """The run's bronze folder holds files but no parquet file: the DMS endpoint writes another
    format (``DataFormat`` must be ``parquet``). Not an empty run, which would move nothing."""


class InvalidChangeData(IcetideJobError):
    """Bronze rows that cannot be ordered or applied: an unknown ``Op``, an unparseable DMS
    timestamp, a change sequence that is not a string of digits, or a null primary key."""


class IncompatibleSchemaChange(IcetideJobError):
    """A source column changed type in a way Iceberg cannot follow without losing data."""


class ManifestWriteError(IcetideJobError):
    """The run manifest could not be written to its URI."""


class BronzeRowCountMismatch(IcetideJobError):
    """The bronze files hold another number of rows than DMS reported loading for the run
    (``--expected_rows``): a file was lost or added between the DMS task and the job, and merging
    what is there would put a wrong picture of the source into silver."""


class MissingReconcileExtraction(IcetideJobError):
    """A reconcile's key extraction (``--reconcile_uri``) holds no files and DMS's count for it
    (``--reconcile_expected_rows``) is unknown: an empty source table and a lost extraction look
    alike, and taking the second for the first would delete every row of silver."""
