"""The real bronze-to-silver job (and the maintenance job) on local Spark, as the Glue stand-in's runners.

This is the one place where the local stack differs from AWS in more than endpoints: Spark here has
no S3 file system for moto, so each job run first copies (stages) its bronze files from moto's S3 to
a local directory and reads them from there. A continuous run's (``--bronze_files_uri``) stages its
bronze file selection and only the files it lists; the job checks the selection against the S3
``--bronze_uri``, as on Glue, and reads the listed files from the local copy (``bronze_copy``).
Everything after that is the Glue job's own code
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
from typing import Any
from urllib.parse import urlparse

import boto3
from botocore.exceptions import ClientError
from pyspark.sql import SparkSession

from icetide_glue.arguments import DEFAULT_CATALOG, JobArguments
from icetide_glue.bronze.selection import selection_from_text
from icetide_glue.errors import InvalidBronzeFileSelection
from icetide_glue.job import run_job
from icetide_glue.maintenance.job import MaintenanceJobArguments, run_maintenance_job
from icetide_local.spark import hadoop_catalog_conf, local_spark_session


class BronzeUriInvalid(ValueError):
    """`--bronze_uri` (or `--bronze_files_uri`, a file it lists) is not an s3:// URI."""


def stage_bronze(bronze_uri: str, directory: Path) -> int:
    """Copy every object below `bronze_uri` (moto S3) into `directory`, keeping relative paths.

    Returns the number of files copied.
    """
    bucket, prefix = _s3_location(bronze_uri, "--bronze_uri", "s3://bucket/prefix/")
    s3 = boto3.client("s3")
    copied = 0
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        for entry in page.get("Contents", []):
            relative = entry["Key"][len(prefix) :].lstrip("/")
            if not relative or relative.endswith("/"):
                continue
            _download(s3, bucket, entry["Key"], directory / relative)
            copied += 1
    return copied


def stage_bronze_files(selection_uri: str, selection_directory: Path, directory: Path) -> tuple[str, int]:
    """Copy a bronze file selection (moto S3) into `selection_directory`, and the files it lists into
    `directory` at their keys. Returns the local selection's path and the number of files copied.

    What is missing (the selection, a listed file) is not copied, and a selection that breaks its
    contract stages no file: the job then refuses the run, naming what is wrong, as it would on Glue.
    """
    bucket, key = _s3_location(selection_uri, "--bronze_files_uri", "s3://bucket/key")
    local = selection_directory / key.rsplit("/", 1)[-1]
    s3 = boto3.client("s3")
    if not _download(s3, bucket, key, local):
        return str(local), 0
    try:
        selection = selection_from_text(local.read_bytes(), selection_uri)
    except InvalidBronzeFileSelection:
        return str(local), 0
    copied = 0
    for relative, uri in zip(selection.files, selection.uris, strict=True):
        file_bucket, file_key = _s3_location(uri, "a listed bronze file", "s3://bucket/key")
        if _download(s3, file_bucket, file_key, directory / relative):
            copied += 1
    return str(local), copied


def _s3_location(uri: str, name: str, form: str) -> tuple[str, str]:
    parsed = urlparse(uri)
    if parsed.scheme != "s3" or not parsed.netloc:
        raise BronzeUriInvalid(f"{name} must be {form}, got {uri!r}")
    return parsed.netloc, parsed.path.lstrip("/")


def _download(s3: Any, bucket: str, key: str, target: Path) -> bool:
    """Copy one object to `target`; False when there is no such object."""
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        s3.download_file(bucket, key, str(target))
    except ClientError as error:
        if error.response.get("Error", {}).get("Code") in ("404", "NoSuchKey"):
            return False
        raise
    return True


@dataclass
class LocalSparkJob:
    """A Glue job on local Spark: each run gets its own session on the workspace's warehouse."""

    warehouse: Path
    catalog: str = DEFAULT_CATALOG
    progress: Callable[[str], None] = field(default=lambda _: None, repr=False)
    _base_session: SparkSession | None = field(default=None, init=False, repr=False)
    _session_lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

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


@dataclass
class SparkMaintenanceJob(LocalSparkJob):
    """The maintenance Glue job's runs on local Spark (`icetide_glue.maintenance.job`).

    Nothing to stage: the job works on the silver table in the warehouse, and writes its report to
    the run's ``--report_uri`` in moto's S3, where record_maintenance reads it.
    """

    def __call__(self, arguments: Mapping[str, str]) -> None:
        options: dict[str, str | None] = {name.removeprefix("--"): value for name, value in arguments.items()}
        options["catalog"] = self.catalog
        self.progress(f"{options.get('target_table')}: maintenance job on local Spark")
        run_maintenance_job(self._job_session(), MaintenanceJobArguments.from_options(options))


@dataclass
class SparkGlueJob(LocalSparkJob):
    """A Glue stand-in job runner: stage the run's bronze files, then run the Glue job on local Spark."""

    def __call__(self, arguments: Mapping[str, str]) -> None:
        options = {name.removeprefix("--"): value for name, value in arguments.items()}
        with (
            tempfile.TemporaryDirectory(prefix="icetide-bronze-") as staging,
            tempfile.TemporaryDirectory(prefix="icetide-keys-") as keys,
            tempfile.TemporaryDirectory(prefix="icetide-selection-") as selection,
        ):
            selection_uri = options.get("bronze_files_uri")
            if selection_uri:
                # --bronze_uri stays the S3 folder: the job checks the selection against it.
                local_selection, files = stage_bronze_files(selection_uri, Path(selection), Path(staging))
                options["bronze_files_uri"] = local_selection
            else:
                files = stage_bronze(options.get("bronze_uri", ""), Path(staging))
                options["bronze_uri"] = staging
            self.progress(f"{options.get('target_table')}: Spark job on {files} staged bronze file(s)")
            options["catalog"] = self.catalog
            if options.get("reconcile_uri"):
                # A reconcile run's key extraction lives in moto S3 too; the job reads a local copy.
                stage_bronze(options["reconcile_uri"], Path(keys))
                options["reconcile_uri"] = keys
            job_arguments = JobArguments.from_options(options)
            if selection_uri:
                run_job(self._job_session(), job_arguments, bronze_copy=staging)
            else:
                run_job(self._job_session(), job_arguments)
