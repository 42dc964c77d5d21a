"""Work a run does in a second thread, beside its own: writes and reads that do not depend on each
other overlap, and the run waits for both before it commits.

Why: a run's steps wait on different things (pyarrow decoding and encoding on one core, Iceberg's
planning and commits in the JVM, a Spark write's tasks), and a Glue driver has several cores. Both
the Spark path (silver's added rows written while the removal's delete files are) and the driver
path (silver's data file written while the tombstones are; the tombstone table read while
silver's rows are) use it.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from functools import partial
from typing import TypeVar

from pyspark import inheritable_thread_target

from icetide_glue.errors import one_line

logger = logging.getLogger(__name__)

T = TypeVar("T")


@contextmanager
def beside(
    work: Callable[[], T], what: str, decisions: tuple[type[BaseException], ...] = ()
) -> Iterator[Future[T]]:
    """Run ``work`` (``what`` it does, for the log) in a second thread while the block runs; the
    block reads its result from the future. Leaving the block waits for the thread, also when the
    block failed: that error is the run's, and the thread's own failure, if any, is logged, unless
    it is one of ``decisions`` (an exception that says what the run does next, such as a batch the
    driver leaves to Spark, not that something broke). A block that succeeds without reading the
    result still raises the thread's failure: no work done beside is lost unseen. The thread
    inherits the run's Spark job properties (its group, description, pool)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="icetide-beside") as pool:
        done = pool.submit(inheritable_thread_target(work))
        try:
            yield done
        except BaseException as error:
            done.add_done_callback(partial(_log_failure_beside, what=what, raised=error, decisions=decisions))
            raise
        done.result()


def _log_failure_beside(
    done: Future[T], what: str, raised: BaseException, decisions: tuple[type[BaseException], ...]
) -> None:
    """Log the second thread's failure unless it is the one the run raises (a result read in the
    block re-raises it) or a decision."""
    failure = done.exception()
    if failure is not None and failure is not raised and not isinstance(failure, decisions):
        logger.warning("%s failed too: %s", what, one_line(failure))
