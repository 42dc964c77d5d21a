"""Spark's code generation for a test that must run as Glue, `make demo` and `make bench` do.

The suite's Spark compiles no whole-stage code and evaluates expressions interpreted
(tests/spark_conf/spark-defaults.conf says why). That is Spark's own fallback and gives the same
results; these tests run the generated code's path all the same: the end-to-end demo (every job
session of it), the driver's values hash against Spark's, and the local session's class cache.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from pyspark.sql import SparkSession

from icetide_glue.session import session_settings
from icetide_local.standins.glue_spark import LocalSparkJob

# Spark's defaults, which the suite's configuration file overrides.
CODE_GENERATION = {"spark.sql.codegen.wholeStage": "true", "spark.sql.codegen.factoryMode": "FALLBACK"}


@contextmanager
def generating_code(spark: SparkSession) -> Iterator[None]:
    """``spark`` generates code for what runs inside (its settings put back after). Settings are
    per session: a session made with ``newSession()`` starts from the suite's file again."""
    with session_settings(spark, CODE_GENERATION):
        yield


def job_sessions_generating_code(monkeypatch: pytest.MonkeyPatch) -> list[SparkSession]:
    """From now on, every session the local Glue stand-in makes for a job run generates code; the
    list those sessions are added to as they are made."""
    made: list[SparkSession] = []
    job_session = LocalSparkJob._job_session

    def generating(self: LocalSparkJob) -> SparkSession:
        session = job_session(self)
        for key, value in CODE_GENERATION.items():
            session.conf.set(key, value)
        made.append(session)
        return session

    monkeypatch.setattr(LocalSparkJob, "_job_session", generating)
    return made


def plans_generated_code(spark: SparkSession) -> bool:
    """Whether ``spark`` plans a query into whole-stage generated code (the executed plan's text
    marks each operator of a generated stage ``*(stage id)``)."""
    plan = spark.range(3).selectExpr("id * 2 AS doubled")._jdf.queryExecution().executedPlan()
    return "*(" in plan.toString()


def compilations(spark: SparkSession) -> int:
    """How many classes Spark has compiled in this process (a cache hit compiles none)."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    return int(jvm.org.apache.spark.metrics.source.CodegenMetrics.METRIC_COMPILATION_TIME().getCount())
