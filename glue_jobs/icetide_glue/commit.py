"""Commit SQL with custom snapshot-summary properties (the run id), through Iceberg's CommitMetadata.

Spark 3.5 SQL has no way to pass write options to a MERGE; Iceberg's documented route is
``org.apache.iceberg.spark.CommitMetadata.withCommitProperties(properties, callable, exClass)``,
which sets the properties for commits made by the calling JVM thread while the callable runs.
From Python the callable is a py4j callback: PySpark pins each Python thread to one JVM thread,
so the MERGE issued inside the callback commits on the thread that holds the properties.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from typing import ClassVar

from py4j.clientserver import ClientServer
from pyspark.java_gateway import ensure_callback_server_started
from pyspark.sql import SparkSession

from icetide_glue.errors import IcetideJobError

# Runs of different tables may commit from parallel threads; the callback server starts once.
_CALLBACK_SERVER_LOCK = threading.Lock()


class _PythonCallable:
    """A ``java.util.concurrent.Callable`` implemented in Python.

    The action's own exception is kept here and re-raised in Python, so callers see the original
    error rather than a py4j wrapper.
    """

    def __init__(self, action: Callable[[], object]) -> None:
        self._action = action
        self.error: BaseException | None = None

    def call(self) -> None:
        try:
            self._action()
        except BaseException as error:  # handed back to Python by commit_with_properties
            self.error = error

    class Java:
        implements: ClassVar[list[str]] = ["java.util.concurrent.Callable"]


def commit_with_properties(
    spark: SparkSession, properties: Mapping[str, str], action: Callable[[], object]
) -> None:
    """Run ``action`` (SQL that commits to an Iceberg table) with ``properties`` in its snapshot summary."""
    context = spark.sparkContext
    gateway = context._gateway
    jvm = context._jvm
    if not isinstance(gateway, ClientServer) or jvm is None:
        # Without pinned threads the MERGE could run on another JVM thread than the properties.
        raise IcetideJobError(
            "committing with snapshot properties needs PySpark's pinned-thread mode "
            "(PYSPARK_PIN_THREAD=true, the default since Spark 3.2)"
        )
    with _CALLBACK_SERVER_LOCK:
        ensure_callback_server_started(gateway)
    java_properties = jvm.java.util.HashMap()
    for key, value in properties.items():
        java_properties.put(key, value)
    callable_ = _PythonCallable(action)
    exception_class = jvm.java.lang.Class.forName("java.lang.RuntimeException")
    jvm.org.apache.iceberg.spark.CommitMetadata.withCommitProperties(
        java_properties, callable_, exception_class
    )
    if callable_.error is not None:
        raise callable_.error
