"""The jars a local SparkSession needs, downloaded once from Maven Central.

On AWS, Glue provides Iceberg (``--datalake-formats iceberg``). Locally, Spark needs the official
runtime jar on its classpath, or ``MERGE INTO`` and ``USING iceberg`` do not exist. It also gets a
local file system that does not start a process per file (``LOCAL_FILE_SYSTEM_ARTIFACT``). The jars are
cached outside git in ``$ICETIDE_JARS_DIR`` (default ``~/.cache/icetide/jars``), each downloaded over
HTTPS and checked against the SHA-1 that Maven Central publishes beside it. Neither Maven nor
Spark's own ``spark.jars.packages`` is used: Maven would be one more thing to install, and Ivy
re-resolves on every session start, prints a report each time and keeps two copies of 110 MB.
Once the jars are cached, sessions start without the network.

Run as ``python -m icetide_local.jars`` (the Makefile's ``jars`` target does).
"""

from __future__ import annotations

import hashlib
import http.client
import os
import sys
import tempfile
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

JARS_DIR_VARIABLE = "ICETIDE_JARS_DIR"
DEFAULT_JARS_DIR = Path.home() / ".cache" / "icetide" / "jars"
MAVEN_CENTRAL = "https://repo1.maven.org/maven2"
# Long enough for a slow link to deliver the next chunk, short enough that a dead one is reported.
DOWNLOAD_TIMEOUT_SECONDS = 60


class JarFetchError(RuntimeError):
    """A jar could not be fetched: the repository is unreachable, or the download is corrupt."""


@dataclass(frozen=True)
class MavenArtifact:
    """One Maven coordinate, ``group:artifact:version``."""

    group: str
    artifact: str
    version: str

    @property
    def coordinate(self) -> str:
        return f"{self.group}:{self.artifact}:{self.version}"

    @property
    def jar_name(self) -> str:
        # The file name the jar has in a Maven repository, and so in the cache.
        return f"{self.artifact}-{self.version}.jar"

    def jar_url(self, repository: str = MAVEN_CENTRAL) -> str:
        """Where a Maven repository (Maven Central by default) serves the jar."""
        group_path = self.group.replace(".", "/")
        return f"{repository.rstrip('/')}/{group_path}/{self.artifact}/{self.version}/{self.jar_name}"


# Pinned so the local job runs the same Iceberg as the one the docs and benchmarks describe.
ICEBERG_ARTIFACTS: tuple[MavenArtifact, ...] = (
    MavenArtifact("org.apache.iceberg", "iceberg-spark-runtime-3.5_2.12", "1.10.0"),
    MavenArtifact("org.apache.iceberg", "iceberg-aws-bundle", "1.10.0"),
)
# Hadoop's local file system sets each file's and folder's permissions it creates by running
# ``chmod`` in a new process when Hadoop's native library is missing, as it is from PySpark's
# download (S3, where Glue writes, has no permissions to set). Forking a JVM of this size for
# each file makes a local write of many small files several times slower than it is with this
# file system, which sets them through Java's own file API (GlobalMentor's
# ``BareLocalFileSystem``, for Hadoop 3.3.4, the Hadoop PySpark 3.5 ships). Local sessions only
# (icetide_local.spark), on the driver's class path: with only ``spark.jars``, which Spark loads
# after it has used the local file system, the session did not start ("class not found").
# It lists a link to a folder as a folder holding itself, so a listing through one never ends
# (docs/local.md's named differences; `icetide job run` refuses such folders).
LOCAL_FILE_SYSTEM_ARTIFACT = MavenArtifact("com.globalmentor", "hadoop-bare-naked-local-fs", "0.1.0")
LOCAL_FILE_SYSTEM_CLASS = "com.globalmentor.apache.hadoop.fs.BareLocalFileSystem"
# Every jar a local session needs, in the order they are fetched and listed.
LOCAL_ARTIFACTS: tuple[MavenArtifact, ...] = (*ICEBERG_ARTIFACTS, LOCAL_FILE_SYSTEM_ARTIFACT)


def jars_dir() -> Path:
    """The jar cache: ``$ICETIDE_JARS_DIR`` when set, else ``~/.cache/icetide/jars``."""
    configured = os.environ.get(JARS_DIR_VARIABLE, "").strip()
    return Path(configured).expanduser() if configured else DEFAULT_JARS_DIR


def jar_paths(
    directory: Path | None = None, artifacts: tuple[MavenArtifact, ...] = LOCAL_ARTIFACTS
) -> list[Path]:
    """Where each jar of ``artifacts`` (default: all) lives, or will live, in the cache, in order."""
    target = directory or jars_dir()
    return [target / artifact.jar_name for artifact in artifacts]


def missing_jars(directory: Path | None = None) -> list[MavenArtifact]:
    """The artifacts whose jar is not in the cache yet."""
    target = directory or jars_dir()
    return [artifact for artifact in LOCAL_ARTIFACTS if not (target / artifact.jar_name).is_file()]


def _read_url(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:  # noqa: S310
        return bytes(response.read())


def published_sha1(artifact: MavenArtifact, repository: str = MAVEN_CENTRAL) -> str:
    """The SHA-1 the repository publishes in ``<jar>.sha1`` (some files add the name after it)."""
    url = f"{artifact.jar_url(repository)}.sha1"
    try:
        text = _read_url(url).decode("ascii").strip()
    except (OSError, http.client.HTTPException, UnicodeDecodeError) as error:
        raise JarFetchError(f"cannot read {url}: {error}") from error
    digest = text.split()[0].lower() if text else ""
    if len(digest) != 40 or any(char not in "0123456789abcdef" for char in digest):
        raise JarFetchError(f"{url} does not hold a SHA-1: {text[:80]!r}")
    return digest


def download_jar(artifact: MavenArtifact, directory: Path, repository: str = MAVEN_CENTRAL) -> Path:
    """Download one jar into ``directory`` and return its path, only once its SHA-1 matches.

    The jar is written to a temporary file beside its final name and renamed when verified, so an
    interrupted or corrupt download never leaves a jar that the next session would load.
    """
    expected = published_sha1(artifact, repository)
    url = artifact.jar_url(repository)
    digest = hashlib.sha1(usedforsecurity=False)
    with tempfile.NamedTemporaryFile(dir=directory, prefix=f".{artifact.jar_name}.", delete=False) as part:
        try:
            with urllib.request.urlopen(url, timeout=DOWNLOAD_TIMEOUT_SECONDS) as response:  # noqa: S310
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    part.write(chunk)
        except (OSError, http.client.HTTPException) as error:  # HTTPException: e.g. a cut-off body
            Path(part.name).unlink()
            raise JarFetchError(f"cannot download {url}: {error!r}") from error
    if digest.hexdigest() != expected:
        Path(part.name).unlink()
        raise JarFetchError(
            f"{url} has SHA-1 {digest.hexdigest()}, but the repository publishes {expected}: "
            "the download is corrupt (nothing was cached; run it again)"
        )
    jar = directory / artifact.jar_name
    os.chmod(part.name, 0o644)  # the temporary file is private; the cached jar is an ordinary file
    os.replace(part.name, jar)
    return jar


def ensure_jars(
    directory: Path | None = None, progress: TextIO = sys.stderr, repository: str = MAVEN_CENTRAL
) -> list[Path]:
    """Fetch the jars that are not cached yet and return every jar's path.

    Jars already in the cache are skipped without touching the network, so this is cheap to call
    before every session and works offline once the cache is warm.
    """
    target = directory or jars_dir()
    missing = missing_jars(target)
    if missing:
        target.mkdir(parents=True, exist_ok=True)
    for number, artifact in enumerate(missing, start=1):
        print(f"fetching {artifact.coordinate} ({number}/{len(missing)}) into {target}", file=progress)
        try:
            download_jar(artifact, target, repository)
        except JarFetchError as error:
            raise JarFetchError(
                f"{error}. The local Spark job needs {artifact.coordinate} in {target} "
                f"(${JARS_DIR_VARIABLE}); without network access, copy {artifact.jar_name} there."
            ) from error
    return jar_paths(target)


def main() -> int:
    """Command-line entry: fetch what is missing and list the cached jars."""
    try:
        paths = ensure_jars()
    except JarFetchError as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    for path in paths:
        print(f"ok {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
