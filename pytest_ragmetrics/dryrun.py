"""A dry run: count what a run would generate and ask, send nothing.

While a dry run is on (``--ragmetrics-dry-run`` turns it on for the pytest session, in every
process), :func:`~pytest_ragmetrics.generation.answer_all` with answers to generate and
:func:`~pytest_ragmetrics.judges.answers.judge_answers` raise :class:`~pytest_ragmetrics.errors.
DryRun` saying what they would have done, and no request leaves through
:class:`~pytest_ragmetrics.transport.ChatClient` (anything asked of the generator or an HTTP
judge that is not in the cache). Work that stays here (retrieval, the embedding judge) runs.

The switch is process-wide, not per thread: generation and judging fan out to threads.
"""

from __future__ import annotations

import threading

_lock = threading.Lock()
_depth = 0


def active() -> bool:
    """Whether a dry run is on in this process."""
    return _depth > 0


def start() -> None:
    """Turn a dry run on (nested calls count: each :func:`start` needs its :func:`stop`)."""
    global _depth
    with _lock:
        _depth += 1


def stop() -> None:
    """Undo one :func:`start`."""
    global _depth
    with _lock:
        _depth = max(0, _depth - 1)
