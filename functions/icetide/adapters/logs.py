"""CloudWatch Logs: giving the log group DMS writes a run's task logs to a retention.

DMS writes task logs to ``dms-tasks-<replication instance identifier>``, a group it creates itself
when none exists, with no retention: one group per run instance, kept for ever. Creating the group
first, with the stack's retention, is the only way to bound it (the template cannot own a group
named after an instance a run creates).
"""

from __future__ import annotations

from icetide.adapters.clients import client, error_code


def keep_log_group_for(name: str, retention_days: int) -> None:
    """Create log group ``name`` unless it exists, and set its retention (both idempotent)."""
    logs = client("logs")
    try:
        logs.create_log_group(logGroupName=name)
    except Exception as error:
        if error_code(error) != "ResourceAlreadyExistsException":
            raise
    logs.put_retention_policy(logGroupName=name, retentionInDays=retention_days)
