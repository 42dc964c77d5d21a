"""UTC time as the control table stores it.

Lock times and run times are ISO-8601 UTC strings of one fixed shape (``2026-11-21T07:00:00Z``),
so that DynamoDB can compare them as strings: the stale-lock condition ``lockTime < :stale_before``
is a string comparison, which orders instants correctly only when every value has the same shape.
"""

from __future__ import annotations

from datetime import UTC, datetime

STORED_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def utc_now() -> datetime:
    """The current instant, timezone-aware in UTC."""
    return datetime.now(UTC)


def stored_time(moment: datetime) -> str:
    """``moment`` in the control table's time format (a naive datetime is taken as UTC)."""
    utc = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return utc.strftime(STORED_FORMAT)


def parse_time(text: str) -> datetime:
    """An ISO-8601 instant (EventBridge ``time``, a stored lock time) as an aware UTC datetime."""
    try:
        moment = datetime.fromisoformat(text.strip())
    except ValueError:
        raise ValueError(f"{text!r} is not an ISO-8601 time such as 2026-11-21T07:00:00Z") from None
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
