"""Spark's code generation for a test that must run as Glue, `make demo` and `make bench` do.

The suite's Spark evaluates queries interpreted (tests/spark_conf/spark-defaults.conf says why).
Interpreted evaluation is Spark's own fallback and gives the same results, so one test of the local
session's class cache and the end-to-end demo are enough to keep the generated code's path run.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from pyspark.sql import SparkSession

from icetide_glue.session import session_settings

# Spark's defaults, which the suite's configuration file overrides.
CODE_GENERATION = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}


@contextmanager
def generating_code(spark: SparkSession) -> Iterator[None]:
    """``spark`` generates code for what runs inside (its settings put back after)."""
    with session_settings(spark, CODE_GENERATION):
        yield


def compilations(spark: SparkSession) -> int:
    """How many classes Spark has compiled in this process (a cache hit compiles none)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    return int(jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())
