"""The Glue job's session: UTC and Spark's non-ANSI mode, whatever the cluster's defaults say."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pyspark.sql import SparkSession

from icetide_glue.merge.sql import values_hash_sql
from icetide_glue.session import ANSI_MODE, SESSION_TIME_ZONE, build_session

pytestmark = pytest.mark.spark


def test_the_job_session_hashes_a_decimal_as_under_the_default_mode_whatever_the_cluster_says(
    spark: SparkSession,
) -> None:
    def hash_of_a_small_decimal() -> int:
        # A new query each time: a cast's mode is fixed when its query is analysed.
        frame = spark.createDataFrame([(Decimal("0E-10"),)], "amount decimal(20,10)")
        row = frame.selectExpr(f"{values_hash_sql([('amount', 'decimal(20,10)')])} AS h").first()
        assert row is not None
        return int(row[0])

    expected = hash_of_a_small_decimal()
    previous = {name: spark.conf.get(name) or "" for name in (ANSI_MODE, SESSION_TIME_ZONE)}
    try:
        spark.conf.set(ANSI_MODE, "true")
        spark.conf.set(SESSION_TIME_ZONE, "America/New_York")
        under_ansi = hash_of_a_small_decimal()

        session = build_session()

        assert session.conf.get(SESSION_TIME_ZONE) == "UTC"
        assert session.conf.get(ANSI_MODE) == "false"
        assert under_ansi != expected, "under ANSI the decimal's text differs: the check below could fail"
        assert hash_of_a_small_decimal() == expected
    finally:
        for name, value in previous.items():
            spark.conf.set(name, value)
