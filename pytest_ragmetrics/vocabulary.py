"""The words shared by every part of pytest-ragmetrics, each defined once.

Plain data with no imports: pytest reads the option help (which names these) on every run.
"""

from __future__ import annotations

from typing import Literal

Layer = Literal["retrieval", "answer"]
LAYERS: tuple[Layer, ...] = ("retrieval", "answer")

# A baseline verdict's status, of an evaluation or of one of its metrics ("lost": queries that
# had a value in the baseline have none now; only metrics are lost).
VERDICT_STATUSES: tuple[str, ...] = (
    "ok",
    "improved",
    "regressed",
    "lost",
    "new",
    "not comparable",
)

RETRIEVER_KINDS: tuple[str, ...] = ("dense", "bm25")
JUDGE_KINDS: tuple[str, ...] = ("embedding", "http", "recorded")
EXECUTOR_KINDS: tuple[str, ...] = ("local", "ray")

# Metrics shown when none are configured. The library and the `ragmetrics evaluate` command
# report MTEB's usual four; the plugin adds the top-5 ones a RAG pipeline's context is cut at.
DEFAULT_METRICS: tuple[str, ...] = ("ndcg_at_10", "recall_at_100", "map_at_100", "mrr_at_10")
DEFAULT_PLUGIN_METRICS: tuple[str, ...] = (
    "ndcg_at_10",
    "recall_at_5",
    "recall_at_100",
    "precision_at_5",
    "mrr_at_10",
    "map_at_100",
)
# Every answer-layer metric; the first two are shown when none is configured (the others need a
# reference or the contexts the generator was given).
ANSWER_METRICS: tuple[str, ...] = (
    "groundedness",
    "answer_relevance",
    "answer_correctness",
    "context_relevance",
)
DEFAULT_ANSWER_METRICS: tuple[str, ...] = ANSWER_METRICS[:2]
