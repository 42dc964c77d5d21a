"""The one local SparkSession builder: Spark + the Iceberg runtime + a file-system catalog.

Tests, the local stack, the ``icetide job run`` command and the benchmarks all build their session
here, so the local job runs under one configuration. On AWS the Glue job gets its catalog (Glue Data
Catalog + S3FileIO) from the job's ``--conf`` and ``--datalake-formats``; locally the same catalog
name points at a Hadoop catalog on a warehouse directory, which leaves plain Iceberg tables that any
engine (pyiceberg, DuckDB) can open from their metadata files.
"""

from __future__ import annotations

import os
import platform
import tempfile
from pathlib import Path

from pyspark import SparkContext
from pyspark.sql import SparkSession

from icetide_local.jars import (
    ICEBERG_ARTIFACTS,
    LOCAL_FILE_SYSTEM_ARTIFACT,
    LOCAL_FILE_SYSTEM_CLASS,
    ensure_jars,
    jar_paths,
    jars_dir,
)

ICEBERG_EXTENSIONS = "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions"
ICEBERG_SPARK_CATALOG = "org.apache.iceberg.spark.SparkCatalog"
DEFAULT_LOCAL_CATALOG = "local"
# Two cores on a laptop: the default 200 shuffle partitions would turn tiny batches into 200 tasks.
LOCAL_SHUFFLE_PARTITIONS = 4
# Spark keeps the classes it generates for a plan (whole-stage and expression code) in one cache per
# process, of 100 classes by default. One merge run compiles about 80, so in a process that runs
# several (the local stack, `icetide job run` over several tables, the tests, the benchmarks) each
# run evicted the previous one's classes: it compiled them all again, and ran them interpreted until
# the JVM's JIT caught up. With room for 1,000, a repeated run compiles only the code its literals
# change (its key ranges), a handful instead of all of them (docs/benchmarks/merge-cost.md).
# A Glue run has a JVM of its own: nothing to keep.
LOCAL_CODEGEN_CACHE_ENTRIES = 1000
# Hadoop's setting of the class that serves ``file:`` paths (icetide_local.jars: why another one).
LOCAL_FILE_SYSTEM_SETTING = "fs.file.impl"
# Spark's own log4j2 defaults print WARN lines (loopback host, native-hadoop library) before any
# setLogLevel can run, on the terminal where `icetide job run` promises one error line. The JVM starts
# with this configuration instead: those two loggers quiet, the rest at WARN (the level PySpark sets
# anyway; another root level makes it announce the change) until setLogLevel("ERROR") below.
QUIET_LOG4J2 = """status = error
rootLogger.level = warn
rootLogger.appenderRef.stderr.ref = stderr
appender.stderr.type = Console
appender.stderr.name = stderr
appender.stderr.target = SYSTEM_ERR
appender.stderr.layout.type = PatternLayout
appender.stderr.layout.pattern = %d{yy/MM/dd HH:mm:ss} %p %c{1}: %m%n
logger.host.name = org.apache.spark.util.Utils
logger.host.level = error
logger.native.name = org.apache.hadoop.util.NativeCodeLoader
logger.native.level = error
"""


# Extra options for the local driver's JVM (a heap size, a JIT setting), appended to icetide's own.
# None by default: a JIT held at its quick compiler spends half the CPU of one short run of a tiny
# table, but a worker that runs the whole test suite in one JVM, or a benchmark, pays it back.
SPARK_JAVA_OPTIONS_VARIABLE = "ICETIDE_SPARK_JAVA_OPTIONS"


def driver_java_options() -> str:
    """The local driver JVM's options: the quiet log configuration, then $ICETIDE_SPARK_JAVA_OPTIONS."""
    options = f"-Dlog4j2.configurationFile=file:{quiet_log_configuration()}"
    extra = os.environ.get(SPARK_JAVA_OPTIONS_VARIABLE, "").strip()
    return f"{options} {extra}" if extra else options


def quiet_log_configuration() -> Path:
    """The log4j2 file the local JVM starts with (its text is this module's).

    Written whole under another name, then renamed over the old one: a JVM that another process
    starts at the same moment (two pytest workers) reads either file whole, never a truncated one.
    """
    path = Path(tempfile.gettempdir()) / "icetide-log4j2.properties"
    if path.is_file() and path.read_text(encoding="utf-8") == QUIET_LOG4J2:
        return path
    with tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=path.parent, delete=False) as new:
        new.write(QUIET_LOG4J2)
    os.chmod(new.name, 0o644)  # as write_text made it: a temporary file is the owner's alone
    os.replace(new.name, path)
    return path


def hadoop_catalog_conf(catalog: str, warehouse: Path) -> dict[str, str]:
    """Spark settings that make ``catalog`` an Iceberg Hadoop catalog rooted at ``warehouse``."""
    prefix = f"spark.sql.catalog.{catalog}"
    return {
        prefix: ICEBERG_SPARK_CATALOG,
        f"{prefix}.type": "hadoop",
        f"{prefix}.warehouse": str(warehouse.resolve()),
    }


def local_spark_session(
    warehouse: Path, catalog: str = DEFAULT_LOCAL_CATALOG, app_name: str = "icetide"
) -> SparkSession:
    """Build (or reuse) the local session with ``catalog`` on ``warehouse``.

    Spark keeps one session per process: a second call reuses it and only registers the catalog,
    which is a runtime setting. A catalog name already used with another warehouse keeps its first
    warehouse (Spark caches loaded catalogs), so give each warehouse its own catalog name.
    """
    warehouse.mkdir(parents=True, exist_ok=True)
    cache = jars_dir()
    ensure_jars(cache)
    (file_system_jar,) = jar_paths(cache, (LOCAL_FILE_SYSTEM_ARTIFACT,))
    builder = (
        SparkSession.builder.master("local[2]")
        .appName(app_name)
        .config("spark.jars", ",".join(str(jar) for jar in jar_paths(cache, ICEBERG_ARTIFACTS)))
        # Local only: files without a process started per file (icetide_local.jars).
        .config("spark.driver.extraClassPath", str(file_system_jar))
        .config(f"spark.hadoop.{LOCAL_FILE_SYSTEM_SETTING}", LOCAL_FILE_SYSTEM_CLASS)
        .config("spark.sql.extensions", ICEBERG_EXTENSIONS)
        .config("spark.sql.shuffle.partitions", str(LOCAL_SHUFFLE_PARTITIONS))
        .config("spark.default.parallelism", "2")
        .config("spark.sql.codegen.cache.maxEntries", str(LOCAL_CODEGEN_CACHE_ENTRIES))
        # Watermarks and change times are compared in UTC, whatever the laptop's zone.
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.driver.extraJavaOptions", driver_java_options())
    )
    spark = builder.getOrCreate()
    spark.sparkContext.setLogLevel("ERROR")
    for key, value in hadoop_catalog_conf(catalog, warehouse).items():
        spark.conf.set(key, value)
    return spark


def spark_running() -> bool:
    """Whether this process already runs Spark (a session of any thread): a caller that finds it
    running reuses it and must leave it running. ``SparkSession.getActiveSession`` is no answer: it
    says only whether the calling thread has a session set, which another thread's work or a
    stopped session can leave unset while the process's one SparkContext runs on."""
    return SparkContext._active_spark_context is not None


def runtime_versions(spark: SparkSession) -> dict[str, str]:
    """Spark's, Iceberg's and Python's versions in this session, as the benchmarks record them."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    return {
        "spark": spark.version,
        "iceberg": str(jvm.org.apache.iceberg.IcebergBuild.version()),
        "python": platform.python_version(),
    }
