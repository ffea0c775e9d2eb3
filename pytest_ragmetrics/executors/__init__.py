"""Executors: where per-item calls and the heavy steps run, in this process or on a Ray cluster.

``LocalExecutor`` fans calls out over threads; ``RayExecutor`` over actors on a cluster, and it
also runs the dense retriever's encoding and exact search there. Importing this package never
imports Ray.
"""

from pytest_ragmetrics.executors.base import Executor, LocalExecutor, resolve_executor
from pytest_ragmetrics.executors.ray_cluster import RayExecutor
from pytest_ragmetrics.vocabulary import EXECUTOR_KINDS

__all__ = ["EXECUTOR_KINDS", "Executor", "LocalExecutor", "RayExecutor", "resolve_executor"]
