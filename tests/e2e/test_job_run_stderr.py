"""`icetide job run` as a user runs it, in its own process: a refused run prints exactly one line on
stderr, with nothing from the JVM around it (in-process tests cannot see what Java writes)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.spark


def test_a_refused_run_prints_one_line_and_nothing_from_the_jvm(tmp_path: Path) -> None:
    bronze = tmp_path / "bronze"
    bronze.mkdir()
    (bronze / "LOAD00000001.parquet").write_text("Op,dms_timestamp,id\nI,2026-11-21 07:00:00,1\n")

    finished = subprocess.run(
        [sys.executable, "-m", "icetide_cli.main", "job", "run", "--bronze", str(bronze),
         "--warehouse", str(tmp_path / "warehouse"), "--table", "silver.orders", "--keys", "id"],
        capture_output=True, text=True, timeout=300, check=False,
    )  # fmt: skip

    assert finished.returncode == 1
    assert finished.stdout == ""
    [line] = finished.stderr.splitlines()
    assert line.startswith("error: UnreadableBronzeFile: bronze file file:")
    assert "LOAD00000001.parquet is not a Parquet file" in line
