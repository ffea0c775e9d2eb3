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
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextvars import ContextVar, Token
from typing import Protocol, TextIO, TypeVar


class ProgressReporter(Protocol):
    """Receives the progress of one task at a time.

    A reporter may also have ``explain(note)``: :func:`progress` then hands it the task's note
    (what the step does and why it takes a while) before ``start``; and ``weigh(weights)``:
    the relative cost of each unit, in the order they are done, for its estimate.
    """

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


#: A note is shown only for a step expected to take at least this long (seconds).
NOTE_AFTER = 10.0
#: The bar is redrawn at most this often (seconds), and on every advance after that.
REDRAW_EVERY = 0.25


_T = TypeVar("_T")
_R = TypeVar("_R")


def format_duration(seconds: float) -> str:
    """``42 s``, ``3 min 05 s``, ``1 h 02 min``: how long, for people."""
    whole = max(0, round(seconds))
    if whole < 60:
        return f"{whole} s"
    if whole < 3600:
        return f"{whole // 60} min {whole % 60:02d} s"
    return f"{whole // 3600} h {whole % 3600 // 60:02d} min"


class LineProgress:
    """A one-line text bar rewritten in place with ``\\r``, with an honest time estimate.

    The rate is measured from the first advance on: the first batch carries the step's one-off
    start-up (loading a model, opening a connection), which would make an estimate from it too
    high many times over. So until a second advance the bar says it is estimating (never "0 s
    left"); after that, time left = units left x the time per unit since the first advance.
    Units of unequal cost (texts encoded longest first) are weighed (:meth:`weigh`): then
    time left = the weight left x the time per weight since the first advance.
    Redrawn on an advance at most every :data:`REDRAW_EVERY` seconds (callers advance per
    batch, every few seconds at most). A note given with :meth:`explain` is written on its own
    line once the estimate shows the step will take at least :data:`NOTE_AFTER` seconds in
    all, with the estimate (or, when no estimate exists yet but :data:`NOTE_AFTER` seconds have
    passed, without one): a warm cache says nothing.
    With ``bar=False`` (output that is not a terminal: a CI log) only the notes are written,
    one line each. ``clock`` is for tests.
    """

    def __init__(
        self,
        write: Callable[[str], None],
        *,
        width: int = 30,
        clock: Callable[[], float] = time.monotonic,
        bar: bool = True,
    ) -> None:
        self._write = write
        self._draws = bar
        self._width = width
        self._clock = clock
        self._lock = threading.Lock()  # advance may be called from worker threads
        self._description = ""
        self._total = 0
        self._done = 0
        self._started = 0.0
        self._first: tuple[float, int] | None = None  # (time, units done) at the first advance
        self._awaiting_estimate = False  # a note went out before any estimate
        self._last = 0.0
        self._shown = 0  # length of the line on screen, to blank it before a note
        self._note: str | None = None
        self._weights: list[float] | None = None  # given for the next task
        self._work: list[float] | None = None  # this task's cumulative weights, from 0

    def explain(self, note: str) -> None:
        """What the next task does and why it may take a while (shown if it does)."""
        self._note = note

    def weigh(self, weights: Sequence[float]) -> None:
        """The relative cost of each unit of the next task, in the order they are done."""
        self._weights = [max(float(w), 0.0) for w in weights]

    def start(self, description: str, total: int) -> None:
        with self._lock:
            self._description, self._total, self._done = description, max(total, 0), 0
            self._started = self._last = self._clock()
            self._first, self._awaiting_estimate = None, False
            self._work, weights, self._weights = None, self._weights, None
            if weights is not None and len(weights) == self._total and sum(weights) > 0:
                self._work = list(itertools.accumulate(weights, initial=0.0))
            self._render(self._started)

    def advance(self, done: int) -> None:
        with self._lock:
            self._done += done
            now = self._clock()
            if self._first is None and self._done > 0:
                self._first = (now, self._done)
            if self._done > 0 and self._maybe_note(now):
                self._last = now  # the note redrew the bar under it
            elif now - self._last >= REDRAW_EVERY or self._done >= self._total:
                self._last = now
                self._render(now)

    def finish(self) -> None:
        with self._lock:
            now = self._clock()
            self._note, self._awaiting_estimate = None, False
            if not self._draws:
                return
            self._line(
                f"{self._description} [{self._bar()}] {self._done}/{self._total}, done in "
                f"{format_duration(now - self._started)}"
            )
            self._write("\n")
            self._shown = 0

    def _left(self, now: float) -> float | None:
        """Seconds left at the rate since the first advance; None until a later one."""
        if self._first is None:
            return None
        since, done = self._first
        if self._done <= done or now <= since:
            return None
        if self._work is None:
            return (self._total - self._done) * (now - since) / (self._done - done)
        work = self._work
        current, first = work[min(self._done, self._total)], work[min(done, self._total)]
        if current <= first:
            return None
        return (work[-1] - current) * (now - since) / (current - first)

    def _note_text(self, now: float) -> str | None:
        """The note's line if it is due now (the step is long), else None.

        A note written before any estimate existed is followed, once one does, by a line with it.
        """
        if self._done >= self._total:  # over: the finished bar says how long it took
            self._note, self._awaiting_estimate = None, False
            return None
        left = self._left(now)
        elapsed = now - self._started
        if self._awaiting_estimate:
            if left is None:
                return None
            self._awaiting_estimate = False
            return f"{self._description}: about {format_duration(elapsed + left)} in all"
        if self._note is None:
            return None
        if left is None and elapsed >= NOTE_AFTER:
            self._awaiting_estimate = True
            text = f"{self._note}; estimating how long"
        elif left is not None and elapsed + left >= NOTE_AFTER:
            text = f"{self._note}; about {format_duration(elapsed + left)} in all"
        else:
            if left is not None:  # the estimate says the step is short: no note
                self._note = None
            return None
        self._note = None
        return text

    def _maybe_note(self, now: float) -> bool:
        """Write the note if it is due (and the bar under it); whether it did."""
        text = self._note_text(now)
        if text is None:
            return False
        self._line(text)
        self._write("\n")
        self._shown = 0
        if self._draws:
            self._render(now)
        return True

    def _bar(self) -> str:
        total = max(self._total, 1)
        filled = int(self._width * min(self._done, total) / total)
        return "#" * filled + "-" * (self._width - filled)

    def _render(self, now: float) -> None:
        if not self._draws:
            return
        left = self._left(now)
        estimate = "estimating time left" if left is None else f"{format_duration(left)} left"
        self._line(
            f"{self._description} [{self._bar()}] {self._done}/{self._total} "
            f"{format_duration(now - self._started)} elapsed, {estimate}"
        )

    def _line(self, text: str) -> None:
        """``text`` over the line on screen (blanking what a shorter text leaves)."""
        if not self._draws:
            self._write(text)
            return
        self._write("\r" + text + " " * max(self._shown - len(text), 0))
        self._shown = len(text)


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
# Whether a step is being reported in this context: a step inside it (a judge's questions
# inside a calibration) moves no bar of its own, the outer one moves.
_inside: ContextVar[bool] = ContextVar("ragmetrics_progress_inside", default=False)


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
def progress(
    description: str,
    total: int,
    *,
    note: str | None = None,
    weights: Sequence[float] | None = None,
) -> Iterator[Callable[[int], None]]:
    """Report a task of ``total`` units; the block calls the yielded function with each chunk.

    ``note`` says what a possibly long step does and why it takes a while (e.g. nothing is
    cached yet); a reporter that can (``explain``) shows it when the step turns out to be long.
    ``weights``: each unit's relative cost in the order the units are done, when they differ
    (texts encoded longest first: see :func:`pytest_ragmetrics.encoders.text_weights`); a
    reporter that can (``weigh``) estimates the time left from them.
    Advance at least every few seconds (per batch, not per thousand items). Inside another
    step's block, a step reports nothing: the outer step's bar is the one that moves.
    """
    if _inside.get():
        yield _ignore
        return
    reporter = _reporter.get() or _Silent()
    explain = getattr(reporter, "explain", None)
    if note is not None and callable(explain):
        explain(note)
    weigh = getattr(reporter, "weigh", None)
    if weights is not None and callable(weigh):
        weigh(weights)
    reporter.start(description, total)
    token = _inside.set(True)
    try:
        yield reporter.advance
    finally:
        _inside.reset(token)
        reporter.finish()


def _ignore(done: int) -> None:
    """The advance of a step inside another: nothing to move."""


def counted(function: Callable[[_T], _R], advance: Callable[[int], None]) -> Callable[[_T], _R]:
    """``function`` that advances a progress bar by one each time it returns (from any
    thread): for calls fanned out by an executor's ``map``."""

    def call(item: _T) -> _R:
        result = function(item)
        advance(1)
        return result

    return call
