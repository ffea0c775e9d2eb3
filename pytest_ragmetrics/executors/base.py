"""The Executor protocol and the local one: per-item calls fanned out with a concurrency limit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import Protocol, TypeVar, runtime_checkable

from pytest_ragmetrics.values import positive_int

T = TypeVar("T")
R = TypeVar("R")


@runtime_checkable
class Executor(Protocol):
    """Where per-item calls run: ``map(function, items)`` with at most ``concurrency`` in flight.

    Results come back in the order of ``items``; when calls fail, the error of the first failing
    item (in that order) is raised. An executor never changes what is computed, only where, so
    it is never part of an identity or a cache key.
    """

    @property
    def kind(self) -> str:
        """``"local"`` or ``"ray"`` (for messages)."""
        ...

    def map(
        self, function: Callable[[T], R], items: Sequence[T], *, concurrency: int | None = None
    ) -> list[R]:
        """``[function(item) for item in items]``, up to ``concurrency`` calls at a time."""
        ...


class LocalExecutor:
    """Calls in this process: one after the other, or on up to ``concurrency`` threads.

    Threads suit calls that wait (an HTTP judge); the function must then be safe to call from
    several threads at once.
    """

    kind = "local"

    def __init__(self, concurrency: int = 1) -> None:
        self.concurrency = positive_int(concurrency, "LocalExecutor: concurrency")

    def __repr__(self) -> str:
        return f"LocalExecutor(concurrency={self.concurrency})"

    def map(
        self, function: Callable[[T], R], items: Sequence[T], *, concurrency: int | None = None
    ) -> list[R]:
        """``function`` over ``items`` in order; the first failing item's error is raised."""
        limit = (
            self.concurrency if concurrency is None else positive_int(concurrency, "concurrency")
        )
        items = list(items)
        if limit == 1 or len(items) < 2:
            return [function(item) for item in items]
        pool = ThreadPoolExecutor(max_workers=min(limit, len(items)))
        try:
            futures = [pool.submit(function, item) for item in items]
            return [future.result() for future in futures]
        finally:
            pool.shutdown(wait=True, cancel_futures=True)
