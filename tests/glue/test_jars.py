"""Fetching the Iceberg jars: skip what is cached, verify what is downloaded, say clearly what failed.

The downloads here come from a Maven repository laid out in a temporary folder (a ``file://`` URL),
so these tests never reach the network.
"""

from __future__ import annotations

import hashlib
import io
import urllib.request
from pathlib import Path

import pytest

from icetide_local import jars
from icetide_local.jars import ICEBERG_ARTIFACTS, LOCAL_ARTIFACTS, JarFetchError, ensure_jars

RUNTIME_JAR = "iceberg-spark-runtime-3.5_2.12-1.10.0.jar"
AWS_BUNDLE_JAR = "iceberg-aws-bundle-1.10.0.jar"
AWS_BUNDLE_IN_REPOSITORY = "org/apache/iceberg/iceberg-aws-bundle/1.10.0/iceberg-aws-bundle-1.10.0.jar"
FILE_SYSTEM_JAR = "hadoop-bare-naked-local-fs-0.1.0.jar"


def publish(repository: Path, path: str, content: bytes, sha1_text: str | None = None) -> None:
    """Put a jar and its ``.sha1`` file where a Maven repository serves them."""
    jar = repository / path
    jar.parent.mkdir(parents=True, exist_ok=True)
    jar.write_bytes(content)
    published = (
        sha1_text if sha1_text is not None else hashlib.sha1(content, usedforsecurity=False).hexdigest()
    )
    jar.with_name(jar.name + ".sha1").write_text(published)


def test_the_pinned_artifacts() -> None:
    assert [a.coordinate for a in ICEBERG_ARTIFACTS] == [
        "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
        "org.apache.iceberg:iceberg-aws-bundle:1.10.0",
    ]


def test_a_local_session_also_gets_a_local_file_system() -> None:
    assert [a.coordinate for a in LOCAL_ARTIFACTS] == [
        "org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0",
        "org.apache.iceberg:iceberg-aws-bundle:1.10.0",
        "com.globalmentor:hadoop-bare-naked-local-fs:0.1.0",
    ]


def test_jars_come_from_maven_central_over_https() -> None:
    assert [a.jar_url() for a in ICEBERG_ARTIFACTS] == [
        "https://repo1.maven.org/maven2/org/apache/iceberg/iceberg-spark-runtime-3.5_2.12/1.10.0/"
        "iceberg-spark-runtime-3.5_2.12-1.10.0.jar",
        "https://repo1.maven.org/maven2/org/apache/iceberg/iceberg-aws-bundle/1.10.0/"
        "iceberg-aws-bundle-1.10.0.jar",
    ]


def test_jars_dir_follows_the_environment(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("ICETIDE_JARS_DIR", str(tmp_path))
    assert jars.jars_dir() == tmp_path


def test_cached_jars_are_not_fetched_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (RUNTIME_JAR, AWS_BUNDLE_JAR, FILE_SYSTEM_JAR):
        (tmp_path / name).write_bytes(b"jar")

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("nothing may be downloaded when every jar is cached")

    monkeypatch.setattr(urllib.request, "urlopen", no_network)
    progress = io.StringIO()
    assert ensure_jars(tmp_path, progress) == [
        tmp_path / RUNTIME_JAR,
        tmp_path / AWS_BUNDLE_JAR,
        tmp_path / FILE_SYSTEM_JAR,
    ]
    assert progress.getvalue() == ""


def test_only_missing_jars_are_fetched_with_a_progress_line(tmp_path: Path) -> None:
    cache, repository = tmp_path / "cache", tmp_path / "repository"
    cache.mkdir()
    (cache / RUNTIME_JAR).write_bytes(b"cached runtime")
    (cache / FILE_SYSTEM_JAR).write_bytes(b"cached file system")
    publish(repository, AWS_BUNDLE_IN_REPOSITORY, b"aws bundle")

    progress = io.StringIO()
    paths = ensure_jars(cache, progress, repository=repository.as_uri())

    assert paths == [cache / RUNTIME_JAR, cache / AWS_BUNDLE_JAR, cache / FILE_SYSTEM_JAR]
    assert [path.read_bytes() for path in paths] == [b"cached runtime", b"aws bundle", b"cached file system"]
    assert sorted(path.name for path in cache.iterdir()) == [FILE_SYSTEM_JAR, AWS_BUNDLE_JAR, RUNTIME_JAR]
    assert (
        progress.getvalue() == f"fetching org.apache.iceberg:iceberg-aws-bundle:1.10.0 (1/1) into {cache}\n"
    )


def test_a_sha1_file_with_the_name_after_the_digest_is_accepted(tmp_path: Path) -> None:
    cache, repository = tmp_path / "cache", tmp_path / "repository"
    cache.mkdir()
    (cache / RUNTIME_JAR).write_bytes(b"jar")
    (cache / FILE_SYSTEM_JAR).write_bytes(b"jar")
    digest = hashlib.sha1(b"aws bundle", usedforsecurity=False).hexdigest().upper()
    publish(repository, AWS_BUNDLE_IN_REPOSITORY, b"aws bundle", f"{digest}  {AWS_BUNDLE_JAR}\n")

    ensure_jars(cache, io.StringIO(), repository=repository.as_uri())

    assert (cache / AWS_BUNDLE_JAR).read_bytes() == b"aws bundle"


def test_a_download_whose_sha1_differs_is_refused_and_leaves_nothing(tmp_path: Path) -> None:
    cache, repository = tmp_path / "cache", tmp_path / "repository"
    cache.mkdir()
    (cache / RUNTIME_JAR).write_bytes(b"jar")
    (cache / FILE_SYSTEM_JAR).write_bytes(b"jar")
    publish(
        repository,
        AWS_BUNDLE_IN_REPOSITORY,
        b"truncated",
        hashlib.sha1(b"aws bundle", usedforsecurity=False).hexdigest(),
    )

    with pytest.raises(JarFetchError, match=r"has SHA-1 .* but the repository publishes .*corrupt"):
        ensure_jars(cache, io.StringIO(), repository=repository.as_uri())

    assert sorted(path.name for path in cache.iterdir()) == [FILE_SYSTEM_JAR, RUNTIME_JAR]


def test_an_unreachable_repository_is_a_clear_error(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(JarFetchError) as raised:
        ensure_jars(cache, io.StringIO(), repository=(tmp_path / "no-repository").as_uri())

    message = str(raised.value)
    assert message.startswith("cannot read file://")
    assert f"{RUNTIME_JAR}.sha1" in message
    assert (
        "The local Spark job needs org.apache.iceberg:iceberg-spark-runtime-3.5_2.12:1.10.0 in "
        f"{cache} ($ICETIDE_JARS_DIR); without network access, copy {RUNTIME_JAR} there."
    ) in message
    assert list(cache.iterdir()) == []


def test_a_sha1_file_without_a_digest_is_refused(tmp_path: Path) -> None:
    cache, repository = tmp_path / "cache", tmp_path / "repository"
    cache.mkdir()
    (cache / RUNTIME_JAR).write_bytes(b"jar")
    (cache / FILE_SYSTEM_JAR).write_bytes(b"jar")
    publish(repository, AWS_BUNDLE_IN_REPOSITORY, b"aws bundle", "<html>not found</html>")

    with pytest.raises(JarFetchError, match="does not hold a SHA-1"):
        ensure_jars(cache, io.StringIO(), repository=repository.as_uri())
