"""Relevance judges' words: is this passage relevant to this question? (yes / no / not judged)

One narrow question per (question, passage) pair, asked in batches: what pooling needs to label
documents no person judged, and what a context-relevance metric needs to grade what a retriever
handed the generator. Here are the pair (:class:`RelevancePair`), the verdict
(:class:`RelevanceVerdict`) and the protocols (:class:`RelevanceJudge`,
:class:`ThresholdRelevanceJudge`); the judges are by backend:
:class:`~pytest_ragmetrics.judges.embedding_relevance.EmbeddingRelevanceJudge` (cosine against
a threshold), :class:`~pytest_ragmetrics.judges.http_relevance.HttpRelevanceJudge` (a yes/no
question to an OpenAI-compatible endpoint) and
:class:`~pytest_ragmetrics.judges.recorded.RecordedRelevanceJudge` (verdicts replayed from
JSONL); :func:`~pytest_ragmetrics.judges.factory.build_relevance_judge` builds one by kind.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from pytest_ragmetrics.data.assessments import Verdict
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import check_text, normalise_contexts


@dataclass(frozen=True)
class RelevancePair:
    """One question to a relevance judge: is ``passage`` relevant to ``query``?

    ``query_id`` and ``doc_id`` name the pair in verdicts and errors (a recorded judge looks
    verdicts up by them); without them the pair is known by its texts.
    """

    query: str
    passage: str
    query_id: str | None = None
    doc_id: str | None = None

    @property
    def label(self) -> str:
        """How errors name the pair."""
        if self.query_id is None and self.doc_id is None:
            return f"question {self.query[:60]!r}, passage {self.passage[:60]!r}"
        return f"query {self.query_id!r}, document {self.doc_id!r}"


@dataclass(frozen=True)
class RelevanceVerdict:
    """A relevance judge's answer for one pair.

    ``relevant`` is True/False, or None when the judge gave no usable verdict. ``verdict`` is
    the raw verdict text (the model's reply, the similarity and threshold, the recorded note).
    ``score`` is the similarity for a threshold judge. Token counts are those the endpoint
    reported for the request that produced the verdict; ``cached`` says it came from the
    verdict cache (no request was sent this time).
    """

    query_id: str | None
    doc_id: str | None
    relevant: bool | None
    verdict: str
    score: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "relevant": self.relevant,
            "verdict": self.verdict,
            "score": self.score,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
        }


@runtime_checkable
class RelevanceJudge(Protocol):
    """Anything that says whether passages are relevant to questions."""

    def identity(self) -> dict[str, Any]:
        """What determines the verdicts: name, model, rubric, rubric_sha256, parameters."""
        ...

    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        """One verdict per pair, in order."""
        ...


@runtime_checkable
class ThresholdRelevanceJudge(RelevanceJudge, Protocol):
    """A relevance judge whose verdict is ``score >= threshold``; calibration can tune it."""

    @property
    def threshold(self) -> float: ...

    def with_threshold(self, threshold: float) -> ThresholdRelevanceJudge: ...


def relevance_pairs(pairs: Sequence[RelevancePair | tuple[str, str]]) -> list[RelevancePair]:
    """``pairs`` as checked :class:`RelevancePair` objects (tuples are (question, passage))."""
    out: list[RelevancePair] = []
    for position, pair in enumerate(pairs):
        if isinstance(pair, RelevancePair):
            item = pair
        elif isinstance(pair, tuple) and len(pair) == 2:
            item = RelevancePair(pair[0], pair[1])
        else:
            raise JudgeError(
                f"relevance pair {position} is {type(pair).__name__}; give a RelevancePair or "
                "(question, passage)"
            )
        check_text(item.query, f"the question of relevance pair {position}")
        check_text(item.passage, f"the passage of relevance pair {position}")
        out.append(item)
    return out


def judge_pairs(
    judge: RelevanceJudge, pairs: Sequence[RelevancePair | tuple[str, str]]
) -> list[RelevanceVerdict]:
    """``judge.judge_relevance`` on pairs given as RelevancePair or (question, passage)."""
    return judge.judge_relevance(relevance_pairs(pairs))


def grouped_verdicts(
    judge: RelevanceJudge, groups: Sequence[Sequence[tuple[str, RelevancePair]]], *, who: str
) -> list[list[Verdict]]:
    """Per group of (subject, pair), one :class:`~pytest_ragmetrics.data.assessments.Verdict`
    per pair, named by its subject (a context id): every pair of every group judged in one
    ``judge_relevance`` call. A judge returning another number of verdicts is a JudgeError
    naming ``who``."""
    pairs = [pair for group in groups for _, pair in group]
    verdicts = list(judge.judge_relevance(pairs))
    if len(verdicts) != len(pairs):
        raise JudgeError(
            f"judge {who!r}: judge_relevance returned {len(verdicts)} verdicts for "
            f"{len(pairs)} (question, context) pairs"
        )
    found = iter(verdicts)
    return [
        [Verdict(subject, v.relevant, v.score, v.verdict)
         for subject, _ in group for v in (next(found),)]
        for group in groups
    ]  # fmt: skip


def judge_context_groups(
    judge: RelevanceJudge, items: Sequence[tuple[str, Sequence[str] | Mapping[str, str]]]
) -> list[list[Verdict]]:
    """Per (question, contexts), one verdict per context (named by its id: "0", "1", ... for
    a list), from ``judge``: how a judge that asks its context question of a relevance judge
    answers ``judge_contexts``."""
    groups = [
        [(cid, RelevancePair(query, text)) for cid, text in normalise_contexts(contexts)]
        for query, contexts in items
    ]
    return grouped_verdicts(judge, groups, who=str(getattr(judge, "name", "relevance")))


def token_totals(verdicts: Sequence[RelevanceVerdict]) -> dict[str, int]:
    """Tokens the endpoint reported for the verdicts asked now (cached ones excluded)."""
    fresh = [v for v in verdicts if not v.cached]
    return {
        "prompt_tokens": sum(v.prompt_tokens or 0 for v in fresh),
        "completion_tokens": sum(v.completion_tokens or 0 for v in fresh),
        "asked": len(fresh),
    }


__all__ = [
    "RelevanceJudge",
    "RelevancePair",
    "RelevanceVerdict",
    "ThresholdRelevanceJudge",
    "grouped_verdicts",
    "judge_context_groups",
    "judge_pairs",
    "relevance_pairs",
    "token_totals",
]
