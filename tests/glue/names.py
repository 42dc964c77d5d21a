"""Where the Glue tests' silver tables live: one catalog on the session's warehouse."""

from __future__ import annotations

from pyspark.sql import SparkSession

CATALOG = "local"
SILVER_DATABASE = "silver"


def silver_table(table: str) -> str:
    """The Spark name of a test's silver table."""
    return f"{CATALOG}.{SILVER_DATABASE}.{table}"


def snapshot_ids(spark: SparkSession, table: str) -> list[int]:
    """Every snapshot id of a test's table, oldest first."""
    rows = spark.sql(f"SELECT snapshot_id FROM {silver_table(table)}.snapshots ORDER BY committed_at").collect()
    return [row[0] for row in rows]
