"""The Executor protocol and the local one: per-item calls fanned out with a concurrency limit."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Any, Protocol, TypeVar, runtime_checkable

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.vocabulary import EXECUTOR_KINDS

if TYPE_CHECKING:
    from pytest_ragmetrics.executors.ray_cluster import RayExecutor

T = TypeVar("T")
R = TypeVar("R")

#: The names ``executor=`` (and ``ragmetrics_executor``) accept.


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
        self,
        function: Callable[[T], R],
        items: Sequence[T],
        *,
        concurrency: int | None = None,
    ) -> list[R]:
        """``[function(item) for item in items]``, up to ``concurrency`` calls at a time."""
        ...


def positive_int(value: object, what: str) -> int:
    """``value`` if it is a positive int, else a ConfigError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ConfigError(f"{what} must be a positive integer, got {value!r}")
    return value


def non_negative(value: object, what: str) -> float:
    """``value`` as a float if it is a number >= 0, else a ConfigError naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise ConfigError(f"{what} must be a number >= 0, got {value!r}")
    return float(value)


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
        self,
        function: Callable[[T], R],
        items: Sequence[T],
        *,
        concurrency: int | None = None,
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


def resolve_executor(spec: object, where: str) -> Executor:
    """An executor from ``None``/``"local"`` (this process), ``"ray"`` (a Ray cluster: RAY_ADDRESS,
    else a local one) or an :class:`Executor` object; anything else is a ConfigError."""
    if spec is None or spec == "local":
        return LocalExecutor()
    if spec == "ray":
        return ray_executor()
    if isinstance(spec, Executor) and not isinstance(spec, (str, type)):
        return spec
    raise ConfigError(
        f"{where}: executor must be {' or '.join(map(repr, EXECUTOR_KINDS))} or an Executor "
        f"object such as RayExecutor(address, actors=4), got {spec!r}"
    )


def ray_executor(**options: Any) -> RayExecutor:
    """A :class:`~pytest_ragmetrics.executors.ray_cluster.RayExecutor` (Ray itself is imported
    only when the executor first connects)."""
    from pytest_ragmetrics.executors.ray_cluster import RayExecutor

    return RayExecutor(**options)
