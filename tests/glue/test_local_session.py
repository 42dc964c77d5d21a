"""The local session keeps the code Spark generates for a run while the process runs others, and
writes local files without starting a process per file.

Spark compiles the code of a plan once and keeps the class in a cache shared by the process; a
run whose classes were evicted compiles them again and runs them interpreted until the JIT
catches up (icetide_local.spark.LOCAL_CODEGEN_CACHE_ENTRIES). Hadoop's own local file system runs
``chmod`` in a new process for each file and folder it creates (icetide_local.jars).
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark.sql import SparkSession

from code_generation import generating_code, plans_generated_code

pytestmark = pytest.mark.spark

# More other queries than Spark's default cache of 100 classes keeps a given class through.
OTHER_QUERIES = 200
QUERY = "SELECT sum(id * 7) FROM range(0, 10, 1, 1) WHERE id % 3 = 1"


def test_the_suites_spark_plans_no_generated_code_and_a_test_can_ask_for_it(spark: SparkSession) -> None:
    # tests/spark_conf/spark-defaults.conf reached the session (through SPARK_CONF_DIR).
    assert not plans_generated_code(spark)
    with generating_code(spark):
        assert plans_generated_code(spark)
    assert not plans_generated_code(spark)


def test_a_querys_classes_outlive_more_other_queries_than_sparks_default_cache_holds(tmp_path: Path) -> None:
    # In a process of its own, as `icetide local` runs: Spark sizes its class cache once, from the
    # settings in force at the process's first compilation, which in a test worker could be any
    # earlier test's. Without the suite's Spark defaults, so Spark generates code as it does there.
    environment = {name: value for name, value in os.environ.items() if name != "SPARK_CONF_DIR"}
    environment["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).parents[1]), *sys.path])
    checked = subprocess.run(
        [sys.executable, "-c", CLASS_CACHE_CHECK, str(tmp_path / "warehouse")],
        env=environment,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert checked.returncode == 0, checked.stderr[-3000:]
    first, others, again = (int(count) for count in checked.stdout.split())
    assert first > 0  # the query compiled code of its own
    assert others >= OTHER_QUERIES  # each other query compiled code of its own
    assert again == 0  # and the query's classes were still cached


# Prints the classes the query compiled, those the other queries compiled, and those the query
# compiled when it ran again. Each other query has code of its own: Spark writes a number literal
# into the generated code. Spark's cache is split in 4 parts that each drop their own oldest
# classes, so 100 new classes need not evict a given one: 200 (about 50 per part, twice what a
# part keeps) evict the query's from a cache of 100 (25 per part: it then compiles its 2 again), not
# from one of 1,000. Which part a class lands in depends on its code's hash, so check that again
# (with the cache at 100 the script must print 2 for the last figure) after a Spark upgrade.
# Each is planned, not run: preparing a plan's RDD compiles its code (whole-stage codegen) into
# the same cache, without a Spark job.
CLASS_CACHE_CHECK = f"""
import sys
from pathlib import Path
from pyspark.sql import functions as F
from code_generation import compilations
from icetide_local.spark import local_spark_session

spark = local_spark_session(Path(sys.argv[1]))
start = compilations(spark)
spark.sql({QUERY!r}).collect()
first = compilations(spark)
for factor in range(1000, 1000 + {OTHER_QUERIES}):
    spark.range(0, 10, 1, 1).select(F.sum(F.col("id") * F.lit(factor)))._jdf.queryExecution().toRdd()
others = compilations(spark)
spark.sql({QUERY!r}).collect()
print(first - start, others - first, compilations(spark) - others)
"""


def local_file_system(spark: SparkSession) -> Any:
    """The Hadoop file system the session serves ``file:`` paths with."""
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    uri = jvm.java.net.URI("file:///")
    return jvm.org.apache.hadoop.fs.FileSystem.get(uri, spark.sparkContext._jsc.hadoopConfiguration())


def test_local_paths_are_served_by_a_file_system_that_starts_no_process(spark: SparkSession) -> None:
    file_system = local_file_system(spark)
    assert file_system.getClass().getName() == "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"


def test_the_local_file_system_sets_the_permissions_asked_for(spark: SparkSession, tmp_path: Path) -> None:
    jvm = spark.sparkContext._jvm
    assert jvm is not None
    file_system = local_file_system(spark)
    written, made = tmp_path / "written", tmp_path / "made"
    written.write_text("x")
    written.chmod(0o600)

    hadoop_path, permission = jvm.org.apache.hadoop.fs.Path, jvm.org.apache.hadoop.fs.permission.FsPermission
    file_system.setPermission(hadoop_path(written.as_uri()), permission("604"))
    # 701 passes Hadoop's umask (022) as it is, and no usual process umask leaves it by itself.
    assert file_system.mkdirs(hadoop_path(made.as_uri()), permission("701"))

    assert stat.S_IMODE(written.stat().st_mode) == 0o604
    assert stat.S_IMODE(made.stat().st_mode) == 0o701


def test_the_driver_jvm_runs_with_icetide_s_driver_options(spark: SparkSession) -> None:
    # What the session gives as the driver's options reaches the JVM (what they hold, the
    # environment's additions included: tests/local/test_spark_java_options.py).
    jvm = spark.sparkContext._jvm
    assert jvm is not None  # a live session has a JVM
    arguments = list(jvm.java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments())

    assert any(argument.startswith("-Dlog4j2.configurationFile=file:") for argument in arguments)
