"""The test run's shared fixture values: computed by one worker, read by the others."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest

from once_per_run import once_per_run


class RunTemporaryFolders:
    """Stands for pytest's TempPathFactory under xdist: each worker's base folder in the run's one."""

    def __init__(self, run_folder: Path, worker_id: str) -> None:
        self.base = run_folder / f"popen-{worker_id}"

    def getbasetemp(self) -> Path:
        self.base.mkdir(parents=True, exist_ok=True)
        return self.base


def test_two_workers_asking_at_once_compute_the_value_once_and_both_get_it(tmp_path: Path) -> None:
    calls: list[str] = []
    start = threading.Barrier(2)
    got: dict[str, object] = {}

    def produce() -> dict[str, object]:
        calls.append(threading.current_thread().name)
        time.sleep(0.3)  # long enough that the other worker asks while this one computes
        return {"returncode": 0, "lines": ["valid"]}

    def worker(worker_id: str) -> None:
        start.wait()
        factory = RunTemporaryFolders(tmp_path, worker_id)
        got[worker_id] = once_per_run(factory, worker_id, "lint", produce)

    threads = [threading.Thread(target=worker, args=(w,), name=w) for w in ("gw0", "gw1")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)

    assert len(calls) == 1
    assert got == {"gw0": {"returncode": 0, "lines": ["valid"]}, "gw1": {"returncode": 0, "lines": ["valid"]}}


def test_a_failed_computation_leaves_nothing_and_the_next_worker_computes_again(tmp_path: Path) -> None:
    def fail() -> dict[str, object]:
        raise RuntimeError("sam is not installed")

    with pytest.raises(RuntimeError, match="sam is not installed"):
        once_per_run(RunTemporaryFolders(tmp_path, "gw0"), "gw0", "lint", fail)
    second = once_per_run(RunTemporaryFolders(tmp_path, "gw1"), "gw1", "lint", lambda: {"ok": True})

    assert second == {"ok": True}


def test_without_workers_nothing_is_shared_between_calls(tmp_path: Path) -> None:
    values = iter([1, 2])
    factory = RunTemporaryFolders(tmp_path, "master")

    first = once_per_run(factory, "master", "lint", lambda: next(values))
    second = once_per_run(factory, "master", "lint", lambda: next(values))

    assert (first, second) == (1, 2)
    assert list(tmp_path.rglob("*.json")) == []
