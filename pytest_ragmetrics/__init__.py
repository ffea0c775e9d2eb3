"""pytest-ragmetrics: regression-test retrieval-augmented generation with pytest.

The public API is this module's ``__all__``; everything else may change between releases.
Names load on first use, so importing the package (pytest does, on every run) is free.
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports
from pytest_ragmetrics._version import __version__
from pytest_ragmetrics.errors import (
    BaselineError,
    CacheError,
    ConfigError,
    DataFormatError,
    JudgeError,
    MetricError,
    OutputError,
    RagMetricsError,
    RagMetricsWarning,
    ReportError,
    RetrieverError,
)

if TYPE_CHECKING:
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim
    from pytest_ragmetrics.data.judged import JudgedRankings, read_judged_rankings
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries, Run
    from pytest_ragmetrics.data.trec import read_qrels, read_run, write_qrels, write_run
    from pytest_ragmetrics.metrics.answer import evaluate_answers
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.metrics.names import parse_metric, register_metric, unregister_metric
    from pytest_ragmetrics.metrics.ranked import RankedJudgments
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.metrics.semantics import MetricSemantics
    from pytest_ragmetrics.plugin.per_query import RagQuery


_EXPORTS = {
    "AnswerAssessment": "pytest_ragmetrics.data.assessments",
    "Claim": "pytest_ragmetrics.data.assessments",
    "Corpus": "pytest_ragmetrics.data.model",
    "Dataset": "pytest_ragmetrics.data.model",
    "Evaluation": "pytest_ragmetrics.metrics.evaluation",
    "JudgedRankings": "pytest_ragmetrics.data.judged",
    "MetricSemantics": "pytest_ragmetrics.metrics.semantics",
    "Qrels": "pytest_ragmetrics.data.model",
    "Queries": "pytest_ragmetrics.data.model",
    "RagQuery": "pytest_ragmetrics.plugin.per_query",
    "RankedJudgments": "pytest_ragmetrics.metrics.ranked",
    "Run": "pytest_ragmetrics.data.model",
    "evaluate": "pytest_ragmetrics.metrics.retrieval",
    "evaluate_answers": "pytest_ragmetrics.metrics.answer",
    "load_dataset": "pytest_ragmetrics.data.layouts",
    "parse_metric": "pytest_ragmetrics.metrics.names",
    "read_judged_rankings": "pytest_ragmetrics.data.judged",
    "read_qrels": "pytest_ragmetrics.data.trec",
    "read_run": "pytest_ragmetrics.data.trec",
    "register_metric": "pytest_ragmetrics.metrics.names",
    "unregister_metric": "pytest_ragmetrics.metrics.names",
    "write_qrels": "pytest_ragmetrics.data.trec",
    "write_run": "pytest_ragmetrics.data.trec",
}
__all__ = [
    "AnswerAssessment",
    "BaselineError",
    "CacheError",
    "Claim",
    "ConfigError",
    "Corpus",
    "DataFormatError",
    "Dataset",
    "Evaluation",
    "JudgeError",
    "JudgedRankings",
    "MetricError",
    "MetricSemantics",
    "OutputError",
    "Qrels",
    "Queries",
    "RagMetricsError",
    "RagMetricsWarning",
    "RagQuery",
    "RankedJudgments",
    "ReportError",
    "RetrieverError",
    "Run",
    "__version__",
    "evaluate",
    "evaluate_answers",
    "load_dataset",
    "parse_metric",
    "read_judged_rankings",
    "read_qrels",
    "read_run",
    "register_metric",
    "unregister_metric",
    "write_qrels",
    "write_run",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
