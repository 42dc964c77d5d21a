"""The physical plans of the SQL executions one call makes: what a run reads, told from its plans."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pyspark.sql import SparkSession

T = TypeVar("T")


def plans_of(spark: SparkSession, action: Callable[[], T]) -> tuple[T, list[str]]:
    """``action``'s result and the physical plan of every SQL execution it made, oldest first (from
    Spark's UI store, which keeps the newest ``spark.sql.ui.retainedExecutions``)."""
    last_before = max((execution.executionId() for execution in _executions(spark)), default=-1)
    result = action()
    plans = [e.physicalPlanDescription() for e in _executions(spark) if e.executionId() > last_before]
    return result, plans


def _executions(spark: SparkSession) -> list[Any]:
    spark.sparkContext._jsc.sc().listenerBus().waitUntilEmpty()  # the store is fed by the listener
    kept = spark._jsparkSession.sharedState().statusStore().executionsList()
    return [kept.apply(i) for i in range(kept.size())]
