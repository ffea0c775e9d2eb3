"""pytest-ragmetrics: regression-test retrieval-augmented generation with pytest.

The public API is this module's ``__all__``; everything else may change between releases.
"""

from pytest_ragmetrics.data import (
    Corpus,
    Dataset,
    JudgedRankings,
    Qrels,
    Queries,
    Run,
    load_dataset,
    read_judged_rankings,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)
from pytest_ragmetrics.errors import (
    BaselineError,
    CacheError,
    ConfigError,
    DataFormatError,
    JudgeError,
    MetricError,
    RagMetricsError,
    RagMetricsWarning,
    RetrieverError,
)
from pytest_ragmetrics.metrics import (
    Evaluation,
    MetricSemantics,
    RankedJudgments,
    evaluate,
    parse_metric,
    register_metric,
    unregister_metric,
)

__version__ = "0.1.0"

__all__ = [
    "BaselineError",
    "CacheError",
    "ConfigError",
    "Corpus",
    "DataFormatError",
    "Dataset",
    "Evaluation",
    "JudgeError",
    "JudgedRankings",
    "MetricError",
    "MetricSemantics",
    "Qrels",
    "Queries",
    "RagMetricsError",
    "RagMetricsWarning",
    "RankedJudgments",
    "RetrieverError",
    "Run",
    "__version__",
    "evaluate",
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
