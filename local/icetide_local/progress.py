"""Where a local run says what it is doing while it runs: messages, and each table's current state.

The local stack reports through a :class:`RunProgress`: one-off messages ("starting the local
stack"), each table's state as its execution moves (:mod:`icetide_local.execution_progress`), a
detail under that state (Spark's stage progress, :mod:`icetide_local.spark_progress`) and the
table's end. :class:`ProgressConsole` writes them to standard error, so whatever a command prints on
standard output (``--json``) stays parseable: on a terminal, a block of one line per running table is
redrawn in place; anywhere else (a CI log, a pipe, a test) every change is a line of its own.
``--quiet`` gives :data:`SILENT`, which shows nothing.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import threading
from collections.abc import Iterator
from typing import Protocol, TextIO

MESSAGE_PREFIX = "... "
# Erase the live block: cursor up over its lines, to the line's start, clear to the end of the screen.
_ERASE_LINES = "\x1b[{count}A\r\x1b[J"
_DETAIL_SEPARATOR = " | "


class RunProgress(Protocol):
    """What a local run reports while it runs (all of it optional to show)."""

    def message(self, text: str) -> None:
        """A one-off message: what the run starts doing now."""

    def table_state(self, table: str, state: str) -> None:
        """``table``'s execution entered a state (its text says which, and since when)."""

    def table_detail(self, table: str, detail: str) -> None:
        """Progress within ``table``'s current state (Spark stages while its Glue job runs)."""

    def table_done(self, table: str, outcome: str) -> None:
        """``table``'s execution ended; ``outcome`` says how."""


class SilentProgress:
    """Shows nothing: ``--quiet``, and the default of every function that takes a RunProgress."""

    def message(self, text: str) -> None:
        return None

    def table_state(self, table: str, state: str) -> None:
        return None

    def table_detail(self, table: str, detail: str) -> None:
        return None

    def table_done(self, table: str, outcome: str) -> None:
        return None


SILENT = SilentProgress()


class ProgressConsole:
    """A RunProgress written to ``stream`` (standard error), safe to call from any thread.

    ``live`` (default: ``stream`` is a terminal that can move its cursor) redraws one line per running
    table below the messages; otherwise every state, detail and end is appended as a line, the form a
    log keeps. Messages are always appended lines. :meth:`close` erases the live block.
    """

    def __init__(self, stream: TextIO, *, live: bool | None = None) -> None:
        self._stream = stream
        self._live = _is_terminal(stream) if live is None else live
        # The moto executions' threads, the Glue job runs' threads and the caller all report.
        self._lock = threading.Lock()
        self._states: dict[str, str] = {}
        self._details: dict[str, str] = {}
        self._drawn = 0

    def message(self, text: str) -> None:
        self._append(f"{MESSAGE_PREFIX}{text}")

    def table_state(self, table: str, state: str) -> None:
        if not self._live:
            self._append(f"{MESSAGE_PREFIX}{table}: {state}")
            return
        with self._lock:
            self._states[table] = state
            self._details.pop(table, None)
            self._redraw()

    def table_detail(self, table: str, detail: str) -> None:
        if not self._live:
            self._append(f"{MESSAGE_PREFIX}{table}: {detail}")
            return
        with self._lock:
            self._details[table] = detail
            self._redraw()

    def table_done(self, table: str, outcome: str) -> None:
        with self._lock:
            self._states.pop(table, None)
            self._details.pop(table, None)
        # A table's end stays on screen, above the tables still running.
        self._append(f"{MESSAGE_PREFIX}{table}: {outcome}")

    def close(self) -> None:
        """Erase the live block (the tables still shown); the messages stay."""
        with self._lock:
            self._states.clear()
            self._details.clear()
            self._redraw()

    def _append(self, line: str) -> None:
        with self._lock:
            self._erase()
            self._stream.write(line + "\n")
            self._draw()
            self._stream.flush()

    def _redraw(self) -> None:
        self._erase()
        self._draw()
        self._stream.flush()

    def _erase(self) -> None:
        if self._drawn:
            self._stream.write(_ERASE_LINES.format(count=self._drawn))
            self._drawn = 0

    def _draw(self) -> None:
        if not self._live:
            return
        # A line wider than the terminal would wrap, and the erase would miss its second half.
        width = shutil.get_terminal_size().columns - 1
        for table, state in self._states.items():
            detail = self._details.get(table)
            line = f"  {table}: {state}" + (f"{_DETAIL_SEPARATOR}{detail}" if detail else "")
            self._stream.write(line[:width] + "\n")
        self._drawn = len(self._states)


def _is_terminal(stream: TextIO) -> bool:
    return stream.isatty() and os.environ.get("TERM", "") != "dumb"


@contextlib.contextmanager
def command_progress(stream: TextIO, *, quiet: bool) -> Iterator[RunProgress]:
    """The progress a command shows on ``stream``: none with ``--quiet``; its live block erased at the end."""
    if quiet:
        yield SILENT
        return
    console = ProgressConsole(stream)
    try:
        yield console
    finally:
        console.close()
