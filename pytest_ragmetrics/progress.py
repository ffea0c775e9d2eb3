"""Progress reporting for long steps (encoding a corpus), routed to whoever owns the terminal.

Library code calls :func:`progress`; the pytest plugin installs a reporter that writes through
pytest's terminal writer (so the bar shows although pytest captures output), the CLI installs
one that writes to stderr. An xdist worker has no terminal writer: when the controller's output
is a terminal, the worker writes its bar, prefixed with its id, to the controlling terminal
(``/dev/tty``). With no reporter installed, or when the reporter is silent (not a TTY, ``-q``),
nothing is printed.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator
from contextvars import ContextVar, Token
from typing import Protocol, TextIO


class ProgressReporter(Protocol):
    """Receives the progress of one task at a time."""

    def start(self, description: str, total: int) -> None: ...

    def advance(self, done: int) -> None: ...

    def finish(self) -> None: ...


class _Silent:
    def start(self, description: str, total: int) -> None:
        pass

    def advance(self, done: int) -> None:
        pass

    def finish(self) -> None:
        pass


class LineProgress:
    """A one-line text bar rewritten in place with ``\\r``; rate-limited to 10 updates/s."""

    def __init__(self, write: Callable[[str], None], *, width: int = 30) -> None:
        self._write = write
        self._width = width
        self._description = ""
        self._total = 0
        self._done = 0
        self._started = 0.0
        self._last = 0.0

    def start(self, description: str, total: int) -> None:
        self._description, self._total, self._done = description, max(total, 0), 0
        self._started = self._last = time.monotonic()
        self._render()

    def advance(self, done: int) -> None:
        self._done += done
        now = time.monotonic()
        if now - self._last >= 0.1 or self._done >= self._total:
            self._last = now
            self._render()

    def finish(self) -> None:
        self._render()
        self._write("\n")

    def _render(self) -> None:
        total = max(self._total, 1)
        filled = int(self._width * min(self._done, total) / total)
        elapsed = time.monotonic() - self._started
        rate = self._done / elapsed if elapsed > 0 else 0.0
        eta = (self._total - self._done) / rate if rate > 0 else 0.0
        bar = "#" * filled + "-" * (self._width - filled)
        self._write(
            f"\r{self._description} [{bar}] {self._done}/{self._total} "
            f"{elapsed:.0f}s elapsed, {eta:.0f}s left "
        )


def stream_reporter(stream: TextIO | None = None) -> ProgressReporter:
    """A line bar on ``stream`` (stderr by default) when it is a TTY, else silence."""
    target = stream or sys.stderr
    if not target.isatty():
        return _Silent()

    def write(text: str) -> None:
        target.write(text)
        target.flush()

    return LineProgress(write)


_reporter: ContextVar[ProgressReporter | None] = ContextVar("ragmetrics_progress", default=None)


def set_reporter(reporter: ProgressReporter | None) -> Token[ProgressReporter | None]:
    """Route :func:`progress` to ``reporter`` until :func:`reset_reporter` (for long scopes)."""
    return _reporter.set(reporter)


def reset_reporter(token: Token[ProgressReporter | None]) -> None:
    """Undo :func:`set_reporter`."""
    _reporter.reset(token)


@contextlib.contextmanager
def use_reporter(reporter: ProgressReporter | None) -> Iterator[None]:
    """Route :func:`progress` to ``reporter`` inside the block."""
    token = _reporter.set(reporter)
    try:
        yield
    finally:
        _reporter.reset(token)


@contextlib.contextmanager
def progress(description: str, total: int) -> Iterator[Callable[[int], None]]:
    """Report a task of ``total`` units; the block calls the yielded function with each chunk."""
    reporter = _reporter.get() or _Silent()
    reporter.start(description, total)
    try:
        yield reporter.advance
    finally:
        reporter.finish()
