"""icetide_glue.beside without Spark (no gateway: the thread target is the work itself): what a
run sees of the second thread's work when either side fails, and when neither does."""

from __future__ import annotations

import logging
import threading
import time
from concurrent.futures import Future
from contextlib import AbstractContextManager

import pytest

from icetide_glue.beside import beside


class _Decision(Exception):
    """Stands in for an exception that says what the run does next (NotEligible)."""


def _slow(outcome: BaseException | None = None, finished: threading.Event | None = None) -> object:
    """The work beside: it takes a while, then says it finished, then fails with ``outcome``."""
    time.sleep(0.2)
    if finished is not None:
        finished.set()
    if outcome is not None:
        raise outcome
    return "written"


def _disk_full(finished: threading.Event | None = None) -> AbstractContextManager[Future[object]]:
    """Silver's data file, failing after a while in the second thread."""
    return beside(lambda: _slow(OSError("disk full"), finished), "the data file")


def test_a_failing_block_waits_for_the_work_beside_it_and_logs_its_failure(
    caplog: pytest.LogCaptureFixture,
) -> None:
    finished = threading.Event()
    with pytest.raises(RuntimeError, match="the block broke"), _disk_full(finished):
        raise RuntimeError("the block broke")
    assert finished.is_set()
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        "the data file failed too: disk full"
    ]


def test_a_failure_read_in_the_block_is_the_run_s_and_is_not_logged_again(
    caplog: pytest.LogCaptureFixture,
) -> None:
    with pytest.raises(OSError, match="disk full"), _disk_full() as done:
        done.result()
    assert "failed too" not in caplog.text


def test_a_decision_beside_a_failing_block_is_not_logged(caplog: pytest.LogCaptureFixture) -> None:
    finished = threading.Event()
    with (
        pytest.raises(_Decision, match="left to Spark"),
        beside(lambda: _slow(_Decision("also"), finished), "the read", decisions=(_Decision,)),
    ):
        raise _Decision("left to Spark")
    assert finished.is_set()
    assert "failed too" not in caplog.text


def test_a_block_that_succeeds_without_reading_the_result_still_raises_the_work_s_failure() -> None:
    with pytest.raises(OSError, match="disk full"), _disk_full():
        pass


def test_the_block_gets_the_work_s_result() -> None:
    with beside(_slow, "the data file") as done:
        assert done.result() == "written"
