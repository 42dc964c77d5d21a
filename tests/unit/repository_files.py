"""The files of the repository a layout or text check reads: what git tracks, and new files it does
not ignore, that exist in the working tree (so a check sees a directory before it is committed and
never sees build output or a virtual environment)."""

from __future__ import annotations

import subprocess
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def repository_files(root: Path = REPO_ROOT) -> list[str]:
    """Paths relative to ``root``, with ``/`` separators, in git's order."""
    listed = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard"],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()
    return [name for name in listed if (root / name).is_file()]
