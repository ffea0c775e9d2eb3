"""Progress bars in a pytest run: on pytest's terminal (controller), or on the controlling
terminal from an xdist worker when the controller said its output is one."""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any, TextIO

from pytest_ragmetrics.progress import LineProgress, ProgressReporter
from pytest_ragmetrics.report.escaping import for_terminal

# Set by the xdist controller in each worker's workerinput: may the worker draw bars?
WORKER_TTY_KEY = "ragmetrics_progress_tty"
TTY_PATH = "/dev/tty"


def controller_shows_progress(config: Any) -> bool:
    """Whether bars belong on this (controller's) terminal: a TTY and not ``-q``."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    return reporter is not None and bool(reporter.isatty) and config.get_verbosity() >= 0


class _TerminalFileProgress:
    """A :class:`LineProgress` on the controlling terminal, opened per task and closed after.

    Each line is prefixed with the worker id. A terminal that cannot be opened means silence.
    """

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._tty: TextIO | None = None
        self._bar = LineProgress(self._write)

    def _write(self, text: str) -> None:
        if self._tty is None:
            return
        if text.startswith("\r"):
            text = "\r" + self._prefix + text[1:]
        try:
            self._tty.write(text)
            self._tty.flush()
        except OSError:
            self._close()

    def _close(self) -> None:
        if self._tty is not None:
            with contextlib.suppress(OSError):
                self._tty.close()
            self._tty = None

    def start(self, description: str, total: int) -> None:
        try:
            self._tty = open(TTY_PATH, "w", encoding="utf-8")  # noqa: SIM115 (closed in finish)
        except OSError:  # no controlling terminal after all
            self._tty = None
        # A new line first: the controller may be half-way through a line of dots.
        self._write("\n")
        self._bar.start(description, total)

    def explain(self, note: str) -> None:
        self._bar.explain(note)

    def weigh(self, weights: Sequence[float]) -> None:
        self._bar.weigh(weights)

    def advance(self, done: int) -> None:
        self._bar.advance(done)

    def finish(self) -> None:
        self._bar.finish()
        self._close()


class _Shown:
    """A reporter whose descriptions and notes (which may quote a dataset, a retriever or a
    pipeline by name) are shown with their control characters escaped; the bar's own carriage
    returns are the bar's."""

    def __init__(self, inner: LineProgress | _TerminalFileProgress) -> None:
        self._inner = inner

    def start(self, description: str, total: int) -> None:
        self._inner.start(for_terminal(description), total)

    def explain(self, note: str) -> None:
        self._inner.explain(for_terminal(note))

    def weigh(self, weights: Sequence[float]) -> None:
        self._inner.weigh(weights)

    def advance(self, done: int) -> None:
        self._inner.advance(done)

    def finish(self) -> None:
        self._inner.finish()


def worker_reporter(workerinput: dict[str, Any]) -> ProgressReporter | None:
    """A bar on the controlling terminal, prefixed with the worker id; None if not allowed."""
    if not workerinput.get(WORKER_TTY_KEY):
        return None
    return _Shown(_TerminalFileProgress(f"[{workerinput.get('workerid', 'worker')}] "))


def pytest_terminal_reporter(config: Any) -> ProgressReporter | None:
    """A progress reporter writing through pytest's terminal (None when it should stay silent).

    Silent with -q; when stdout is not a TTY, only long steps' notes are written. On an xdist
    worker, bars go to the controlling terminal when the controller said its output is one
    (:data:`WORKER_TTY_KEY`).
    """
    workerinput = getattr(config, "workerinput", None)
    if workerinput is not None:
        return worker_reporter(workerinput)
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if capture is None or reporter is None or config.get_verbosity() < 0:
        return None
    # Not a terminal (a CI log): no bar, but a long step's note still says what is going on.
    bar = controller_shows_progress(config)

    def write(text: str) -> None:
        with capture.global_and_fixture_disabled():
            # A line of test progress ("test_x.py ..") may have been started meanwhile.
            reporter.ensure_newline()
            reporter.write(text)
            reporter.flush()

    return _Shown(LineProgress(write, bar=bar))
