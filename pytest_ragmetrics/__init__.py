"""pytest-ragmetrics: regression-test retrieval-augmented generation with pytest.

The public API is this module's ``__all__`` (the protocols your retriever, generator and
judges meet, the data types, the functions, every error and warning) and the framework
adapters ``pytest_ragmetrics.integrations.langchain`` and
``pytest_ragmetrics.integrations.llama_index``; everything else may change between releases.
Names load on first use, so importing the package (pytest does, on every run) is free.
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports
from pytest_ragmetrics._version import __version__
from pytest_ragmetrics.errors import (
    BaselineError,
    BudgetError,
    CacheError,
    CacheWarning,
    ConfigError,
    DataFormatError,
    DryRun,
    ExecutorError,
    GeneratorError,
    JudgeError,
    MetricError,
    OutputError,
    RagMetricsError,
    RagMetricsWarning,
    ReadOnlyOptionError,
    ReportError,
    RetrieverError,
    ScoreOrderWarning,
    ShortRankingWarning,
    StaleLabelsWarning,
)

if TYPE_CHECKING:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.answers import GeneratedAnswer, Reference, References
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict
    from pytest_ragmetrics.data.judged import JudgedRankings, read_judged_rankings
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries, Run
    from pytest_ragmetrics.data.trec import read_qrels, read_run, write_qrels, write_run
    from pytest_ragmetrics.executors.ray_cluster import RayExecutor
    from pytest_ragmetrics.generation.answering import AnswerSet
    from pytest_ragmetrics.generation.generators import FunctionGenerator, Generator
    from pytest_ragmetrics.generation.pipelines import Pipeline
    from pytest_ragmetrics.judges.answers import judge_answers
    from pytest_ragmetrics.judges.many import assess_many
    from pytest_ragmetrics.judges.protocols import Judge
    from pytest_ragmetrics.judges.relevance import RelevanceJudge
    from pytest_ragmetrics.metrics.answer import evaluate_answers
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.metrics.names import parse_metric, register_metric, unregister_metric
    from pytest_ragmetrics.metrics.ranked import RankedJudgments
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.metrics.semantics import MetricSemantics
    from pytest_ragmetrics.plugin.per_query import RagQuery
    from pytest_ragmetrics.plugin.recording import RagEval
    from pytest_ragmetrics.retrievers.base import Retriever, from_function
    from pytest_ragmetrics.retrievers.dense import DenseRetriever

_DATA = "pytest_ragmetrics.data.model"
_ANSWERS = "pytest_ragmetrics.data.answers"
_ASSESSMENTS = "pytest_ragmetrics.data.assessments"
_TREC = "pytest_ragmetrics.data.trec"
_NAMES = "pytest_ragmetrics.metrics.names"
_GENERATORS = "pytest_ragmetrics.generation.generators"
_RETRIEVERS = "pytest_ragmetrics.retrievers.base"
_EXPORTS = {
    # the protocols your code meets
    "Retriever": _RETRIEVERS,
    "Generator": _GENERATORS,
    "Judge": "pytest_ragmetrics.judges.protocols",
    "RelevanceJudge": "pytest_ragmetrics.judges.relevance",
    "Pipeline": "pytest_ragmetrics.generation.pipelines",
    # the data types
    "Corpus": _DATA,
    "Dataset": _DATA,
    "Qrels": _DATA,
    "Queries": _DATA,
    "Run": _DATA,
    "JudgedRankings": "pytest_ragmetrics.data.judged",
    "RankedJudgments": "pytest_ragmetrics.metrics.ranked",
    "Evaluation": "pytest_ragmetrics.metrics.evaluation",
    "MetricSemantics": "pytest_ragmetrics.metrics.semantics",
    "GeneratedAnswer": _ANSWERS,
    "Reference": _ANSWERS,
    "References": _ANSWERS,
    "AnswerSet": "pytest_ragmetrics.generation.answering",
    "AnswerAssessment": _ASSESSMENTS,
    "Claim": _ASSESSMENTS,
    "Verdict": _ASSESSMENTS,
    "Cache": "pytest_ragmetrics.cache",
    # the fixtures' types
    "RagEval": "pytest_ragmetrics.plugin.recording",
    "RagQuery": "pytest_ragmetrics.plugin.per_query",
    # building blocks
    "from_function": _RETRIEVERS,
    "DenseRetriever": "pytest_ragmetrics.retrievers.dense",
    "FunctionGenerator": _GENERATORS,
    "RayExecutor": "pytest_ragmetrics.executors.ray_cluster",
    "assess_many": "pytest_ragmetrics.judges.many",
    "judge_answers": "pytest_ragmetrics.judges.answers",
    # functions
    "evaluate": "pytest_ragmetrics.metrics.retrieval",
    "evaluate_answers": "pytest_ragmetrics.metrics.answer",
    "load_dataset": "pytest_ragmetrics.data.layouts",
    "parse_metric": _NAMES,
    "register_metric": _NAMES,
    "unregister_metric": _NAMES,
    "read_judged_rankings": "pytest_ragmetrics.data.judged",
    "read_qrels": _TREC,
    "read_run": _TREC,
    "write_qrels": _TREC,
    "write_run": _TREC,
}
__all__ = [
    "AnswerAssessment",
    "AnswerSet",
    "BaselineError",
    "BudgetError",
    "Cache",
    "CacheError",
    "CacheWarning",
    "Claim",
    "ConfigError",
    "Corpus",
    "DataFormatError",
    "Dataset",
    "DenseRetriever",
    "DryRun",
    "Evaluation",
    "ExecutorError",
    "FunctionGenerator",
    "GeneratedAnswer",
    "Generator",
    "GeneratorError",
    "Judge",
    "JudgeError",
    "JudgedRankings",
    "MetricError",
    "MetricSemantics",
    "OutputError",
    "Pipeline",
    "Qrels",
    "Queries",
    "RagEval",
    "RagMetricsError",
    "RagMetricsWarning",
    "RagQuery",
    "RankedJudgments",
    "RayExecutor",
    "ReadOnlyOptionError",
    "Reference",
    "References",
    "RelevanceJudge",
    "ReportError",
    "Retriever",
    "RetrieverError",
    "Run",
    "ScoreOrderWarning",
    "ShortRankingWarning",
    "StaleLabelsWarning",
    "Verdict",
    "__version__",
    "assess_many",
    "evaluate",
    "evaluate_answers",
    "from_function",
    "judge_answers",
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
