"""The Spark session of a Glue job run (both entrypoints): Glue's own, its catalog set by the
job's ``--conf`` / ``--datalake-formats``, compared in UTC whatever zone the cluster runs in."""

from __future__ import annotations

from pyspark.sql import SparkSession


def build_session() -> SparkSession:
    """The Glue job's session; its catalog comes from the job's configuration."""
    spark = SparkSession.builder.getOrCreate()
    # Watermarks and change times are compared in UTC, whatever zone the cluster runs in.
    spark.conf.set("spark.sql.session.timeZone", "UTC")
    return spark
