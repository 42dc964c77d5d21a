"""The local session keeps the code Spark generates for a run while the process runs others.

Spark compiles the code of a plan once and keeps the class in a cache shared by the process; a
run whose classes were evicted compiles them again and runs them interpreted until the JIT
catches up (icetide_local.spark.LOCAL_CODEGEN_CACHE_ENTRIES).
"""

from __future__ import annotations

import pytest
from pyspark.sql import SparkSession
from pyspark.sql import functions as F

pytestmark = pytest.mark.spark

# Spark's own default size of the cache of generated classes.
SPARK_DEFAULT_CACHE_ENTRIES = 100
QUERY = "SELECT sum(id * 7) FROM range(0, 10, 1, 1) WHERE id % 3 = 1"


def compilations(spark: SparkSession) -> int:
    """How many classes Spark has compiled in this process (a cache hit compiles none)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    return int(jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())


def test_a_querys_classes_outlive_more_other_queries_than_sparks_default_cache_holds(
    spark: SparkSession,
) -> None:
    spark.sql(QUERY).collect()
    others_start = compilations(spark)
    # Each with code of its own: Spark writes a long literal into the generated code.
    for factor in range(1000, 1000 + SPARK_DEFAULT_CACHE_ENTRIES + 50):
        spark.range(0, 10, 1, 1).select(F.sum(F.col("id") * F.lit(factor))).collect()
    others_end = compilations(spark)
    assert others_end - others_start > SPARK_DEFAULT_CACHE_ENTRIES  # they did fill Spark's default

    spark.sql(QUERY).collect()

    assert compilations(spark) == others_end
