"""Run files and evaluations outside pytest: what ``ragmetrics evaluate`` writes and
``ragmetrics compare`` reads (:mod:`.inputs`), systems compared with a reference on the same
judgments (:mod:`.systems`), and systems over several (dataset, split) pairs
(:mod:`.datasets`)."""

from pytest_ragmetrics.comparison.inputs import (
    EVALUATION_SCHEMA,
    EVALUATION_VERSION,
    KIND_WORDS,
    Input,
    InputKind,
    Judgments,
    evaluation_document,
    load_judgments,
    read_input,
)
from pytest_ragmetrics.comparison.systems import (
    COMPARISON_SCHEMA,
    COMPARISON_VERSION,
    MOST_CHANGED,
    SIGNIFICANCE,
    QueryChange,
    System,
    SystemsComparison,
    Versus,
    compare_systems,
    k_text,
    load_systems,
    rank_move,
    semantics_text,
)

__all__ = [
    "COMPARISON_SCHEMA",
    "COMPARISON_VERSION",
    "EVALUATION_SCHEMA",
    "EVALUATION_VERSION",
    "KIND_WORDS",
    "MOST_CHANGED",
    "SIGNIFICANCE",
    "Input",
    "InputKind",
    "Judgments",
    "QueryChange",
    "System",
    "SystemsComparison",
    "Versus",
    "compare_systems",
    "evaluation_document",
    "k_text",
    "load_judgments",
    "load_systems",
    "rank_move",
    "read_input",
    "semantics_text",
]
