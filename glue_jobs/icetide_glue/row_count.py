"""The run's bronze rows against the rows DMS reported writing (``--expected_rows``).

DMS counts the rows it unloads (DescribeTableStatistics ``FullLoadRows``); the job counts the rows
its bronze files hold. A file lost (a lifecycle rule, a hand) or added (a rerun's leftovers, a copy)
between the two makes them differ, and nothing downstream would notice: a lost file's rows never
reach silver while the watermark moves past them. So the job compares the two before any DDL or
commit, and refuses.
"""

from __future__ import annotations

import logging

from icetide_glue.errors import BronzeRowCountMismatch

logger = logging.getLogger(__name__)


def check_row_count(
    expected_rows: int | None, rows_read: int, bronze_uri: str, argument: str = "--expected_rows"
) -> None:
    """Raise :class:`BronzeRowCountMismatch` when ``rows_read`` is not ``expected_rows``.

    ``argument`` names the count's job argument (``--reconcile_expected_rows`` for a reconcile's
    key extraction). ``expected_rows`` None means nobody counted (a run started by hand, without
    it): the run goes on, with a warning, because there is nothing to compare
    with; refusing would make every manual run impossible. The state machine always passes DMS's
    count, and fails the run before the job when DMS cannot give it.
    """
    if expected_rows is None:
        logger.warning(
            "no %s: the %d row(s) in %s are not checked against DMS's count",
            argument,
            rows_read,
            bronze_uri,
        )
        return
    if rows_read != expected_rows:
        difference = "missing" if rows_read < expected_rows else "extra"
        raise BronzeRowCountMismatch(
            f"the bronze files hold {rows_read} row(s) but DMS reported {expected_rows} ({argument}, "
            f"DMS fullLoadRows) for this run: {abs(expected_rows - rows_read)} row(s) {difference}, so a "
            f"file was lost or added between the DMS task and this job ({bronze_uri}); nothing was "
            "committed and the table is unchanged"
        )
