"""Named exceptions of the Glue job.

The Step Functions Catch sees a Glue job failure as ``States.TaskFailed`` with the job's error
message, so every message names what was wrong (the argument, the column, the types) and why.
"""

from __future__ import annotations


class IcetideJobError(Exception):
    """Base class: the job refused or failed to load a run, and silver was left as it was."""


class InvalidJobArguments(IcetideJobError):
    """An argument is missing or malformed (the message names the argument)."""


class MissingPrimaryKeys(IcetideJobError):
    """A merge needs keys; a key-less table must be loaded with ``--load_mode append``."""


class BronzeSchemaError(IcetideJobError):
    """The bronze files lack a column the run needs (key, watermark, DMS timestamp) or use a
    column name reserved for icetide's metadata."""


class InvalidChangeData(IcetideJobError):
    """Bronze rows that cannot be ordered or applied: an unknown ``Op``, an unparseable DMS
    timestamp, or a null primary key."""


class IncompatibleSchemaChange(IcetideJobError):
    """A source column changed type in a way Iceberg cannot follow without losing data."""


class ManifestWriteError(IcetideJobError):
    """The run manifest could not be written to its URI."""
