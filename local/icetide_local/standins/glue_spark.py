"""The real bronze-to-silver job on local Spark, as the Glue stand-in's job runner.

This is the one place where the local stack differs from AWS in more than endpoints: Spark here has
no S3 file system for moto, so each job run first copies (stages) its bronze files from moto's S3 to
a local directory and reads them from there. Everything after that is the Glue job's own code
(`icetide_glue.job.run_job`): the silver table lands in the workspace's Iceberg warehouse, and the
run manifest goes to the run's `--manifest_uri` in moto's S3, where commit_watermark reads it.

Each job run gets its own Spark session (sharing the one SparkContext of the process), as each Glue
job run has its own: the job names its temporary views, and two tables' runs in parallel must not
see each other's.
"""
from __future__ import annotations

import tempfile
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

import boto3
from pyspark.sql import SparkSession

from icetide_glue.arguments import DEFAULT_CATALOG, JobArguments
from icetide_glue.job import run_job
from icetide_local.spark import hadoop_catalog_conf, local_spark_session


class BronzeUriInvalid(ValueError):
    """`--bronze_uri` is not an s3://bucket/prefix URI."""


def stage_bronze(bronze_uri: str, directory: Path) -> int:
    """Copy every object below `bronze_uri` (moto S3) into `directory`, keeping relative paths.

    Returns the number of files copied.
    """
    parsed = urlparse(bronze_uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise BronzeUriInvalid(f"--bronze_uri must be s3://bucket/prefix/, got {bronze_uri!r}")
    prefix = parsed.path.lstrip("/")
    s3 = boto3.client("s3")
    copied = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=parsed.netloc, Prefix=prefix):
        for entry in page.get("Contents", []):
            relative = entry["Key"][len(prefix):].lstrip("/")
            if not relative or relative.endswith("/"):
                continue
            target = directory / relative
            target.parent.mkdir(parents=True, exist_ok=True)
            s3.download_file(parsed.netloc, entry["Key"], str(target))
            copied += 1
    return copied


@dataclass
class SparkGlueJob:
    """A Glue stand-in job runner: stage the run's bronze files, then run the Glue job on local Spark."""

    warehouse: Path
    catalog: str = DEFAULT_CATALOG
    progress: Callable[[str], None] = field(default=lambda _: None, repr=False)
    _base_session: SparkSession | None = field(default=None, init=False, repr=False)
    _session_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def __call__(self, arguments: Mapping[str, str]) -> None:
        options = {name.removeprefix("--"): value for name, value in arguments.items()}
        with (
            tempfile.TemporaryDirectory(prefix="icetide-bronze-") as staging,
            tempfile.TemporaryDirectory(prefix="icetide-keys-") as keys,
        ):
            files = stage_bronze(options.get("bronze_uri", ""), Path(staging))
            self.progress(f"{options.get('target_table')}: Spark job on {files} staged bronze file(s)")
            options.update(bronze_uri=staging, catalog=self.catalog)
            if options.get("reconcile_uri"):
                # A reconcile run's key extraction lives in moto S3 too; the job reads a local copy.
                stage_bronze(options["reconcile_uri"], Path(keys))
                options["reconcile_uri"] = keys
            run_job(self._job_session(), JobArguments.from_options(options))

    def _job_session(self) -> SparkSession:
        with self._session_lock:
            if self._base_session is None:
                self._base_session = local_spark_session(self.warehouse, catalog=self.catalog)
        session = self._base_session.newSession()
        # A new session starts from the context's configuration; the catalog is a runtime setting.
        for key, value in hadoop_catalog_conf(self.catalog, self.warehouse).items():
            session.conf.set(key, value)
        session.conf.set("spark.sql.session.timeZone", "UTC")
        return session
