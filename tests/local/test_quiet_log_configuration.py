"""The log4j2 file every local JVM starts with: replaced whole, readable as before, nothing left over."""

from __future__ import annotations

import stat
import tempfile
from pathlib import Path

import pytest

from icetide_local.spark import QUIET_LOG4J2, quiet_log_configuration


def test_a_stale_file_is_replaced_whole_and_stays_readable_by_all(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    stale = tmp_path / "icetide-log4j2.properties"
    stale.write_text("rootLogger.level = info\n", encoding="utf-8")

    path = quiet_log_configuration()

    assert path == stale
    assert path.read_text(encoding="utf-8") == QUIET_LOG4J2
    assert stat.S_IMODE(path.stat().st_mode) == 0o644
    assert sorted(p.name for p in tmp_path.iterdir()) == ["icetide-log4j2.properties"]


def test_a_current_file_is_left_as_it_is(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    first = quiet_log_configuration()
    inode = first.stat().st_ino

    again = quiet_log_configuration()

    assert again.stat().st_ino == inode
    assert again.read_text(encoding="utf-8") == QUIET_LOG4J2
