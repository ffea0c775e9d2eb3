"""Where the ``ragmetrics`` commands write: stdout that survives a reader going away and shows
control characters as escapes, and tables whose cells are escaped for their sink."""

from __future__ import annotations

import io
import os
from collections.abc import Iterable, Sequence
from typing import Any, TextIO

from pytest_ragmetrics.report.escaping import for_markdown, for_terminal


class SafeOutput(io.TextIOBase):
    """``out``, with two guarantees.

    Control characters in what is written are shown as escapes (tab and newline kept), so a
    query id cannot move the cursor, conceal or erase a line of a CI log; a JSON document keeps
    its meaning (``report.escaping``). A reader that went away (``ragmetrics ... | head``) ends
    the output quietly: later writes are dropped, the command finishes and exits with its own
    code (1 still means regressed), and Python's flush at exit finds nothing to write."""

    def __init__(self, out: TextIO) -> None:
        self._out = out
        self.closed_pipe = False

    def write(self, text: str) -> int:
        return self.write_document(for_terminal(text, newlines=True))

    def write_document(self, text: str) -> int:
        """Write ``text`` as it is: a document escaped for its own sink (an HTML page keeps
        the bidirectional controls it isolates in ``<bdi>``, byte-identical to ``--out``)."""
        if not self.closed_pipe:
            try:
                self._out.write(text)
            except BrokenPipeError:
                self._drop()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._out.flush()
            except BrokenPipeError:
                self._drop()

    def _drop(self) -> None:
        self.closed_pipe = True
        try:  # what is still buffered would fail again when Python flushes at exit
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._out.fileno())
            os.close(devnull)
        except (OSError, ValueError, io.UnsupportedOperation):
            pass


def write_document(out: TextIO, text: str) -> None:
    """``text`` on ``out`` unchanged (:meth:`SafeOutput.write_document`)."""
    if isinstance(out, SafeOutput):
        out.write_document(text)
    else:
        out.write(text)


def table(
    rows: Iterable[Sequence[Any]],
    headers: Sequence[Any] = (),
    tablefmt: str = "simple",
    **options: Any,
) -> str:
    """A tabulate table, every cell and header escaped for where it is shown: ``github`` is
    Markdown (a ``|`` cannot split a cell), any other format the terminal (one line a cell)."""
    from tabulate import tabulate

    text = for_markdown if tablefmt == "github" else for_terminal
    options.setdefault("disable_numparse", True)
    return tabulate(
        [[text(cell) for cell in row] for row in rows],
        headers=[text(h) for h in headers],
        tablefmt=tablefmt,
        **options,
    )
