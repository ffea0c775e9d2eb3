"""Executors: where per-item calls and the heavy steps run, in this process or on a Ray cluster.

``LocalExecutor`` fans calls out over threads; ``RayExecutor`` over actors on a cluster, and it
also runs the dense retriever's encoding and exact search there. Importing this package never
imports Ray. :func:`resolve_executor` lives here, above both, so that neither module imports
the other.
"""

from __future__ import annotations

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.executors.base import Executor, LocalExecutor
from pytest_ragmetrics.executors.ray_cluster import RayExecutor
from pytest_ragmetrics.vocabulary import EXECUTOR_KINDS

__all__ = ["EXECUTOR_KINDS", "Executor", "LocalExecutor", "RayExecutor", "resolve_executor"]


def resolve_executor(spec: object, where: str) -> Executor:
    """An executor from ``None``/``"local"`` (this process), ``"ray"`` (a Ray cluster: RAY_ADDRESS,
    else a local one) or an :class:`Executor` object; anything else is a ConfigError."""
    if spec is None or spec == "local":
        return LocalExecutor()
    if spec == "ray":
        return RayExecutor()  # Ray itself is imported when it first connects
    if isinstance(spec, Executor) and not isinstance(spec, (str, type)):
        return spec
    raise ConfigError(
        f"{where}: executor must be {' or '.join(map(repr, EXECUTOR_KINDS))} or an Executor "
        f"object such as RayExecutor(address, actors=4), got {spec!r}"
    )
