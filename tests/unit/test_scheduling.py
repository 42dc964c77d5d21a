"""make test's workers take the costliest scopes first (tests/scheduling.py), as collected here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import cast

import pytest

from scheduling import ScopeCostRecorder, costliest_first

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


def _item(nodeid: str, group: str | None = None) -> pytest.Item:
    marker = pytest.mark.xdist_group(group).mark if group else None
    item = SimpleNamespace(
        nodeid=nodeid,
        path=REPO_ROOT / nodeid.split("::", 1)[0],
        get_closest_marker=lambda name: marker if name == "xdist_group" else None,
    )
    return cast(pytest.Item, item)


def test_recorded_seconds_order_the_scopes_and_an_unrecorded_scope_is_guessed_by_its_directory() -> None:
    # By their directories the e2e file (25 a test) would go first; the recorded seconds say the
    # glue file and the PostgreSQL group cost more. The unit file, never recorded, is guessed.
    items = [
        _item("tests/unit/test_a.py::test_one"),
        _item("tests/e2e/test_b.py::test_one"),
        _item("tests/glue/test_c.py::test_one"),
        _item("tests/glue/test_c.py::test_two"),
        _item("tests/local/test_d.py::test_one", group="postgres"),
    ]
    recorded = {"tests/e2e/test_b.py": 10.0, "tests/glue/test_c.py": 40.0, "@postgres": 30.0}

    costliest_first(items, recorded)

    assert [item.nodeid for item in items] == [
        "tests/glue/test_c.py::test_one",
        "tests/glue/test_c.py::test_two",
        "tests/local/test_d.py::test_one",
        "tests/e2e/test_b.py::test_one",
        "tests/unit/test_a.py::test_one",
    ]


def test_the_recorder_adds_up_each_scope_and_keeps_only_scopes_that_still_exist(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_kept.py").touch()
    costs = tmp_path / "costs.json"
    costs.write_text(
        json.dumps({"tests/test_kept.py": 7.0, "tests/test_gone.py": 9.0, "tests/test_run.py": 99.0}),
        encoding="utf-8",
    )
    recorder = ScopeCostRecorder(costs, tmp_path)
    reports = [
        ("tests/test_run.py::test_one", 1.25),
        ("tests/test_run.py::test_two[a@b]", 2.0),  # an '@' in a parameter is not a group
        ("tests/test_pg.py::test_one@postgres", 3.0),
        ("tests/test_other_pg.py::test_two[x]@postgres", 4.0),
    ]
    for nodeid, seconds in reports:
        report = SimpleNamespace(nodeid=nodeid, duration=seconds)
        recorder.pytest_runtest_logreport(cast(pytest.TestReport, report))

    recorder.pytest_sessionfinish()

    written = json.loads(costs.read_text(encoding="utf-8"))
    assert written == {"@postgres": 7.0, "tests/test_run.py": 3.2, "tests/test_kept.py": 7.0}
    assert list(written) == ["@postgres", "tests/test_kept.py", "tests/test_run.py"]
