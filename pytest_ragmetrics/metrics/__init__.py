"""Metric names, the retrieval engine and answer-layer metrics."""

from pytest_ragmetrics.metrics.evaluation import Evaluation, MetricSemantics
from pytest_ragmetrics.metrics.names import (
    MetricSpec,
    parse_metric,
    parse_metrics,
    register_metric,
    unregister_metric,
)
from pytest_ragmetrics.metrics.retrieval import RankedJudgments, evaluate

__all__ = [
    "Evaluation",
    "MetricSemantics",
    "MetricSpec",
    "RankedJudgments",
    "evaluate",
    "parse_metric",
    "parse_metrics",
    "register_metric",
    "unregister_metric",
]
