"""The Iceberg jars a local SparkSession needs, fetched once from Maven Central.

On AWS, Glue provides Iceberg (``--datalake-formats iceberg``). Locally, Spark needs the official
runtime jar on its classpath, or ``MERGE INTO`` and ``USING iceberg`` do not exist. The jars are
cached outside git in ``$ICETIDE_JARS_DIR`` (default ``~/.cache/icetide/jars``) and fetched with
Maven, which reuses ``~/.m2`` when the artifacts are already there.

Run as ``python -m icetide_local.jars`` (the Makefile's ``jars`` target does).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

JARS_DIR_VARIABLE = "ICETIDE_JARS_DIR"
DEFAULT_JARS_DIR = Path.home() / ".cache" / "icetide" / "jars"
# Pinned so the local job runs the same Iceberg as the one the docs and benchmarks describe.
DEPENDENCY_PLUGIN = "org.apache.maven.plugins:maven-dependency-plugin:3.8.1:copy"


class JarFetchError(RuntimeError):
    """A jar could not be fetched: Maven is missing, or it failed to download an artifact."""


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
        # The name maven-dependency-plugin:copy gives the jar in the output directory.
        return f"{self.artifact}-{self.version}.jar"


ICEBERG_ARTIFACTS: tuple[MavenArtifact, ...] = (
    MavenArtifact("org.apache.iceberg", "iceberg-spark-runtime-3.5_2.12", "1.10.0"),
    MavenArtifact("org.apache.iceberg", "iceberg-aws-bundle", "1.10.0"),
)


def jars_dir() -> Path:
    """The jar cache: ``$ICETIDE_JARS_DIR`` when set, else ``~/.cache/icetide/jars``."""
    configured = os.environ.get(JARS_DIR_VARIABLE, "").strip()
    return Path(configured).expanduser() if configured else DEFAULT_JARS_DIR


def jar_paths(directory: Path | None = None) -> list[Path]:
    """Where each Iceberg jar lives (or will live) in the cache, in classpath order."""
    target = directory or jars_dir()
    return [target / artifact.jar_name for artifact in ICEBERG_ARTIFACTS]


def missing_jars(directory: Path | None = None) -> list[MavenArtifact]:
    """The artifacts whose jar is not in the cache yet."""
    target = directory or jars_dir()
    return [artifact for artifact in ICEBERG_ARTIFACTS if not (target / artifact.jar_name).is_file()]


def maven_copy_command(artifact: MavenArtifact, directory: Path) -> list[str]:
    """The mvn command line that copies one artifact's jar into ``directory``."""
    return [
        "mvn",
        "-q",
        "-B",
        DEPENDENCY_PLUGIN,
        f"-Dartifact={artifact.coordinate}",
        f"-DoutputDirectory={directory}",
    ]


def ensure_jars(directory: Path | None = None, progress: TextIO = sys.stderr) -> list[Path]:
    """Fetch the jars that are not cached yet and return every jar's path.

    Jars already in the cache are skipped, so this is cheap to call before every session.
    """
    target = directory or jars_dir()
    missing = missing_jars(target)
    if missing and shutil.which("mvn") is None:
        names = ", ".join(artifact.coordinate for artifact in missing)
        raise JarFetchError(
            f"Maven (mvn) is not on PATH, and the local Spark job needs {names} in {target}. "
            "Install Maven (e.g. apt-get install maven) or copy the jars into that directory."
        )
    target.mkdir(parents=True, exist_ok=True)
    for number, artifact in enumerate(missing, start=1):
        print(f"fetching {artifact.coordinate} ({number}/{len(missing)}) into {target}", file=progress)
        result = subprocess.run(
            maven_copy_command(artifact, target), capture_output=True, text=True, check=False
        )
        if result.returncode != 0 or not (target / artifact.jar_name).is_file():
            detail = (result.stdout + result.stderr).strip()[-2000:]
            raise JarFetchError(
                f"mvn could not fetch {artifact.coordinate} (exit code {result.returncode}): {detail}"
            )
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
