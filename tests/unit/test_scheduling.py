"""make test's workers take the costliest scopes first (tests/scheduling.py), as collected here."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


def test_an_end_to_end_file_is_queued_before_unit_tests_whose_order_is_kept() -> None:
    unit, e2e = "tests/unit/test_comments_say_why.py", "tests/e2e/test_demo.py"

    node_ids = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider", unit, e2e],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.splitlines()

    files = [node_id.split("::", 1)[0] for node_id in node_ids if "::" in node_id]
    assert list(dict.fromkeys(files)) == [e2e, unit]
    unit_tests = [node_id.split("::")[1].split("[")[0] for node_id in node_ids if node_id.startswith(unit)]
    defined = [
        line.removeprefix("def ").split("(")[0]
        for line in (REPO_ROOT / unit).read_text(encoding="utf-8").splitlines()
        if line.startswith("def test_")
    ]
    assert list(dict.fromkeys(unit_tests)) == defined
