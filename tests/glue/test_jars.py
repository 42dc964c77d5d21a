"""Fetching the Iceberg jars: skip what is cached, say clearly when Maven is missing."""

from __future__ import annotations

import io
import subprocess
from pathlib import Path

import pytest

from icetide_local import jars
from icetide_local.jars import ICEBERG_ARTIFACTS, JarFetchError, ensure_jars, maven_copy_command


def test_the_pinned_artifacts() -> None:
    assert [a.coordinate for a in ICEBERG_ARTIFACTS] == [
        "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
        "org.apache.iceberg:iceberg-aws-bundle:1.10.0",
    ]


def test_maven_command_copies_one_artifact(tmp_path: Path) -> None:
    assert maven_copy_command(ICEBERG_ARTIFACTS[0], tmp_path) == [
        "mvn",
        "-q",
        "-B",
        "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy",
        "-Dartifact=org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
        f"-DoutputDirectory={tmp_path}",
    ]


def test_jars_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ICETIDE_JARS_DIR", str(tmp_path))
    assert jars.jars_dir() == tmp_path


def test_cached_jars_are_not_fetched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("iceberg-spark-runtime-3.5_2.12-1.10.0.jar", "iceberg-aws-bundle-1.10.0.jar"):
        (tmp_path / name).write_bytes(b"jar")

    def no_maven(*args: object, **kwargs: object) -> None:
        raise AssertionError("mvn must not run when every jar is cached")

    monkeypatch.setattr(subprocess, "run", no_maven)
    progress = io.StringIO()
    assert ensure_jars(tmp_path, progress) == [
        tmp_path / "iceberg-spark-runtime-3.5_2.12-1.10.0.jar",
        tmp_path / "iceberg-aws-bundle-1.10.0.jar",
    ]
    assert progress.getvalue() == ""


def test_only_missing_jars_are_fetched_with_a_progress_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "iceberg-spark-runtime-3.5_2.12-1.10.0.jar").write_bytes(b"jar")
    commands: list[list[str]] = []

    def fake_maven(command: list[str], **kwargs: object) -> subprocess.CompletedProcess[str]:
        commands.append(command)
        (tmp_path / "iceberg-aws-bundle-1.10.0.jar").write_bytes(b"jar")
        return subprocess.CompletedProcess(command, 0, "", "")

    monkeypatch.setattr(jars.shutil, "which", lambda name: "/usr/bin/mvn")
    monkeypatch.setattr(subprocess, "run", fake_maven)
    progress = io.StringIO()
    ensure_jars(tmp_path, progress)
    assert [c[4] for c in commands] == ["-Dartifact=org.apache.iceberg:iceberg-aws-bundle:1.10.0"]
    assert (
        progress.getvalue()
        == f"fetching org.apache.iceberg:iceberg-aws-bundle:1.10.0 (1/1) into {tmp_path}\n"
    )


def test_missing_maven_is_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jars.shutil, "which", lambda name: None)
    with pytest.raises(JarFetchError, match="Maven \\(mvn\\) is not on PATH"):
        ensure_jars(tmp_path, io.StringIO())


def test_a_failing_maven_run_is_reported_with_its_output(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(jars.shutil, "which", lambda name: "/usr/bin/mvn")
    monkeypatch.setattr(
        subprocess,
        "run",
        lambda command, **kwargs: subprocess.CompletedProcess(command, 1, "", "Could not resolve"),
    )
    with pytest.raises(JarFetchError, match="exit code 1\\): Could not resolve"):
        ensure_jars(tmp_path, io.StringIO())
