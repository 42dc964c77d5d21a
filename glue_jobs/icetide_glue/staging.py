"""Two writes published as one: stage them on a branch, then fast-forward main to it.

A run that both removes rows silver holds (the rows its changes replace or delete) and adds rows (an
append) makes two commits. Readers must still see the run whole or not at all, and a rerun must know
whether it landed. So both go to the table's staging branch, made from the snapshot of main the run
read before it classified its changes; then one metadata commit moves main to the branch's head
(Iceberg's ``fast_forward``). Until then main is untouched: a run that fails in between leaves only
the branch, which its rerun (or the next run, or maintenance) replaces or drops. The run id sits on
the last staged snapshot, so the rerun's committed check (main's ancestors only) finds it exactly
when main carries the whole run.

Runs of one table never overlap (the control item's lock), so one branch name serves them all.
A commit to main by anything else after that read makes the fast-forward fail (main's head is
no longer an ancestor of the branch), and the run with it: its labels may be stale.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from pyspark.sql import SparkSession

from icetide_glue.errors import one_line
from icetide_glue.silver import SilverTable
from icetide_glue.sql import (
    STAGING_BRANCH,
    drop_branch_sql,
    fast_forward_sql,
    replace_branch_sql,
)

logger = logging.getLogger(__name__)


def staged_commit(
    spark: SparkSession, table: SilverTable, base_snapshot_id: int, *writes: Callable[[str], object]
) -> None:
    """Run each write against the staging branch (made at ``base_snapshot_id``, the snapshot of
    main the writes were planned from), given the branch's name, in order, then publish them at
    once."""
    spark.sql(replace_branch_sql(table.sql_name, STAGING_BRANCH, base_snapshot_id))
    for write in writes:
        write(STAGING_BRANCH)
    spark.sql(fast_forward_sql(table.catalog, table.database, table.name, STAGING_BRANCH))
    drop_staging_branch(spark, table)


def drop_staging_branch(spark: SparkSession, table: SilverTable) -> None:
    """Drop the staging branch if it is there. Housekeeping: a failure only leaves it for later
    (its snapshots keep their files until it goes), so it is logged, never raised."""
    try:
        spark.sql(drop_branch_sql(table.sql_name, STAGING_BRANCH))
    except Exception as error:  # the run's commit already stands
        logger.warning("%s: staging branch not dropped: %s", table, one_line(error))
