"""The staging branch of earlier versions: maintenance drops what a failed run of theirs left.

Before one commit per run (icetide_glue.unpublished_files), a run that both removed and appended
rows committed both on the branch ``icetide_staging`` and fast-forwarded main to it. A run that
failed in between left the branch, and a branch keeps its snapshots' files from expiry. No run
makes the branch now; maintenance drops a leftover one before it expires snapshots.
"""

from __future__ import annotations

import logging

from pyspark.sql import SparkSession

from icetide_glue.errors import one_line
from icetide_glue.silver import SilverTable
from icetide_glue.sql import STAGING_BRANCH, drop_branch_sql

logger = logging.getLogger(__name__)


def drop_staging_branch(spark: SparkSession, table: SilverTable) -> None:
    """Drop the staging branch if it is there. Housekeeping: a failure only leaves it for later
    (its snapshots keep their files until it goes), so it is logged, never raised."""
    try:
        spark.sql(drop_branch_sql(table.sql_name, STAGING_BRANCH))
    except Exception as error:  # the table's maintenance goes on without it
        logger.warning("%s: staging branch not dropped: %s", table, one_line(error))
