"""The Spark session of a Glue job run (both entrypoints): Glue's own, its catalog set by the
job's ``--conf`` / ``--datalake-formats``, compared in UTC whatever zone the cluster runs in."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager

from pyspark.sql import SparkSession

SESSION_TIME_ZONE = "spark.sql.session.timeZone"
# The job's SQL is written for Spark's default, non-ANSI mode: under ANSI a decimal's text has no
# exponent (silver's stored values hash, icetide_glue.merge.sql.values_hash_sql, would change with
# a cluster's default) and a cast that cannot convert fails instead of giving null.
ANSI_MODE = "spark.sql.ansi.enabled"


def build_session() -> SparkSession:
    """The Glue job's session; its catalog comes from the job's configuration."""
    spark = SparkSession.builder.getOrCreate()
    # Watermarks and change times are compared in UTC, whatever zone the cluster runs in.
    spark.conf.set(SESSION_TIME_ZONE, "UTC")
    spark.conf.set(ANSI_MODE, "false")
    return spark


@contextmanager
def session_settings(spark: SparkSession, settings: Mapping[str, str]) -> Iterator[None]:
    """Spark SQL settings for what runs inside, the session's own values put back after (also
    when it fails). Settings are per session: a run in another thread of it sees them too."""
    previous: dict[str, str | None] = {name: spark.conf.get(name, None) for name in settings}
    for name, value in settings.items():
        spark.conf.set(name, value)
    try:
        yield
    finally:
        for name, kept in previous.items():
            if kept is None:
                spark.conf.unset(name)
            else:
                spark.conf.set(name, kept)
