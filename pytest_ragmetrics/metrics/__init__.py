"""Metric names, the retrieval engine and answer-layer metrics (loaded on first use)."""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.metrics.answer import evaluate_answers
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.metrics.names import (
        MetricSpec,
        parse_metric,
        parse_metrics,
        register_metric,
        unregister_metric,
    )
    from pytest_ragmetrics.metrics.ranked import RankedJudgments
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.metrics.semantics import MetricSemantics

_EXPORTS = {
    "Evaluation": "pytest_ragmetrics.metrics.evaluation",
    "MetricSemantics": "pytest_ragmetrics.metrics.semantics",
    "MetricSpec": "pytest_ragmetrics.metrics.names",
    "parse_metric": "pytest_ragmetrics.metrics.names",
    "parse_metrics": "pytest_ragmetrics.metrics.names",
    "register_metric": "pytest_ragmetrics.metrics.names",
    "unregister_metric": "pytest_ragmetrics.metrics.names",
    "RankedJudgments": "pytest_ragmetrics.metrics.ranked",
    "evaluate": "pytest_ragmetrics.metrics.retrieval",
    "evaluate_answers": "pytest_ragmetrics.metrics.answer",
}
__all__ = [
    "Evaluation",
    "MetricSemantics",
    "MetricSpec",
    "RankedJudgments",
    "evaluate",
    "evaluate_answers",
    "parse_metric",
    "parse_metrics",
    "register_metric",
    "unregister_metric",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
