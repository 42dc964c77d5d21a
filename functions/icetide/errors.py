"""Named exceptions of icetide.

The state machine matches these by class name (`ErrorEquals`), so a name here is part of the
contract with `statemachine/table_run.asl.json`: rename one only together with the ASL. Each
docstring says when the error is raised and whether the state machine retries it.
"""

from __future__ import annotations


class IcetideError(Exception):
    """Base class of every icetide error, so callers can catch "ours" apart from library errors."""


class InvalidControlItem(IcetideError):
    """A control item breaks the rules of `icetide.control.model.ControlItem`.

    Raised when an item is parsed (start of a run, `icetide tables validate`). Not retried: the item
    has to be fixed by a person; the other tables run regardless.
    """

    def __init__(self, errors: list[str]) -> None:
        # Each entry is one "attribute: reason" line, so a person can fix them all in one go.
        self.errors = list(errors)
        super().__init__("\n".join(self.errors) if self.errors else "invalid control item")


class ControlItemNotFound(IcetideError):
    """No control item exists for the requested `targetTableName`. Not retried."""


class TableLocked(IcetideError):
    """Another run holds the table's lock (and the lock is not stale yet).

    Not retried: the next schedule slot tries again, which keeps two runs from merging the same table.
    """


class TableUnderMaintenance(TableLocked):
    """A maintenance run holds the table's lock: the merge run is refused and ends without failing.

    Not a failure: maintenance is scheduled work on the same table, and the next slot's run merges
    what this one would have. StartWorkflow already skips such a table; this covers a run started
    in the moment between its check and maintenance taking the lock.
    """


class LockLost(IcetideError):
    """The run no longer holds its table's lock when it commits (a later run broke it as stale).

    Not retried: the other run now owns the table; committing would overwrite its state. Nothing is
    stored, so the watermark stays where it was and the next run re-reads the rows.
    """


class WatermarkConflict(IcetideError):
    """The conditional watermark write found a different previous value than the run started from.

    Means another writer moved the watermark during the run. Not retried: retrying would overwrite
    that writer's progress; the run fails and a person looks.
    """


class ManifestInvalid(IcetideError):
    """The Glue job's run manifest is missing, not JSON, or breaks its contract
    (`icetide_contracts.run_manifest.RunManifest`).

    Not retried: the same manifest would be read again.
    """


class InvalidTableMapping(IcetideError):
    """A DMS table mapping cannot be built: an operator or value DMS would reject.

    Raised before any AWS call. Not retried.
    """


class DmsResourceNotReady(IcetideError):
    """A DMS task or instance is still being created/modified and cannot be used yet.

    Retried by the state machine (with backoff) until the resource is ready.
    """


class DmsResourceBusy(IcetideError):
    """A DMS resource cannot be deleted yet (e.g. a task still stopping, an instance with tasks).

    Retried by the state machine (with backoff) until the delete is accepted.
    """


class DmsQuotaExceeded(IcetideError):
    """DMS refused to create a resource because an account quota is reached.

    Not retried: waiting does not raise a quota; the run fails with this name so the cause is plain.
    """


class DmsResourceNotOurs(IcetideError):
    """A DMS resource holds the run's identifier but not the run's stack and run-id tags.

    Someone else's resource (made by hand, or by another stack): the run neither adopts nor deletes
    it. Not retried: the name stays taken until a person removes that resource.
    """


class ContinuousFolderInUse(IcetideError):
    """A continuous table needs a new task, but its folder or its control item still holds an earlier
    task's files or file checkpoint (the table was turned off and on again, or its task deleted by
    hand). A new task's full load would reuse the earlier file names and the earlier changes would be
    merged again, so nothing is created until someone empties the folder and removes the checkpoint.

    Not retried.
    """


class MaintenanceDisabled(IcetideError):
    """A maintenance run was started for a table whose control item sets ``maintenance.enabled``
    false. The run takes no lock and changes nothing; the maintenance state machine ends it as a
    refusal, not a failure. Not retried."""


class MaintenanceReportInvalid(IcetideError):
    """The maintenance job's report is missing, not JSON, breaks its contract
    (`icetide_contracts.maintenance.MaintenanceReport`) or belongs to another run.

    Not retried: the same report would be read again.
    """
