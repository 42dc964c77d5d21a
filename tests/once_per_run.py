"""A session fixture's value computed once per test run, however many pytest-xdist workers ask.

``make test`` runs the suite in two worker processes, and a session fixture runs once in each.
Where that is wrong, not just slower (``make lint-deploy`` creates .venv-sam and .venv-checkov
when they are missing, and two at once would install into one folder), the first worker computes
the value under a lock and leaves it as JSON in the run's shared temporary folder; the other reads
it. This is pytest-xdist's own recipe ("making session-scoped fixtures execute only once").
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

from filelock import FileLock


class BaseTemporaryFolder(Protocol):
    """What of pytest's ``tmp_path_factory`` this needs: the worker's base temporary folder."""

    def getbasetemp(self) -> Path: ...


def once_per_run(
    tmp_path_factory: BaseTemporaryFolder, worker_id: str, name: str, produce: Callable[[], Any]
) -> Any:
    """``produce()`` (JSON-serialisable) for this run: called here, or read from the worker that did.

    Without workers (``worker_id`` "master") nothing is shared: the parent of the base temporary
    folder is then pytest's folder for every run, and a value left there would outlive this one.
    """
    if worker_id == "master":
        return produce()
    shared = tmp_path_factory.getbasetemp().parent / f"{name}.json"
    with FileLock(f"{shared}.lock"):
        if shared.is_file():
            return json.loads(shared.read_text(encoding="utf-8"))
        value = produce()
        shared.write_text(json.dumps(value), encoding="utf-8")
        return value
