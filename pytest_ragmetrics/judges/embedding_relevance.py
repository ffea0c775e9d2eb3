"""The embedding relevance judge: a passage is relevant to a question when their cosine
similarity, with the embedding judge's model, reaches a threshold that calibration can tune.
Similarities are cached, so a new threshold re-uses them."""

from __future__ import annotations

import contextlib
import copy as copy_module
from collections.abc import Sequence
from typing import Any

from pytest_ragmetrics.judges.base import CacheLike, VerdictCache, make_identity
from pytest_ragmetrics.judges.embedder import Embedder, Encoder, check_cosine, judging
from pytest_ragmetrics.judges.relevance import RelevancePair, RelevanceVerdict, relevance_pairs
from pytest_ragmetrics.values import finite_number

# `ragmetrics calibrate --question relevance --judge embedding` on SciFact test (339 relevant pairs
# against 339 random corpus documents, seed 0) chooses 0.31 with kappa 0.93 on the held-out half:
# random documents are easy to reject. On a pool of dense and BM25 top-10 documents 0.31 calls 80%
# relevant (people found about one per query), so the default stays at a stricter 0.5 (28%).
DEFAULT_RELEVANCE_THRESHOLD = 0.5
EMBEDDING_RUBRIC = (
    "Embed the question and the whole passage with the model (mean pooling, L2-normalised; "
    "the model truncates long passages). The passage is relevant when the cosine similarity "
    "is at least the threshold."
)


class EmbeddingRelevanceJudge:
    """Relevant ⇔ cosine(question, passage) ≥ ``threshold``, with the embedding judge's model.

    ``model``, ``encoder``, ``model_name``, ``device`` and ``batch_size`` are those of
    :class:`~pytest_ragmetrics.judges.embedding.EmbeddingJudge` (or pass ``embedder=`` an
    existing :class:`~pytest_ragmetrics.judges.embedder.Embedder`, an embedding judge's
    ``embedder``, to share its loaded model). Similarities are cached in ``cache`` keyed by
    the model, so :meth:`with_threshold` copies and calibration re-use them.
    """

    name = "embedding-relevance"

    def __init__(
        self,
        model: str | None = None,
        *,
        threshold: float = DEFAULT_RELEVANCE_THRESHOLD,
        cache: CacheLike = None,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Encoder | None = None,
        model_name: str | None = None,
        embedder: Embedder | None = None,
    ) -> None:
        self._threshold = _threshold(threshold)
        self._embedder = embedder or Embedder(
            model, device=device, batch_size=batch_size, encoder=encoder, model_name=model_name
        )
        self.model_name = self._embedder.model_name
        self._similarities = VerdictCache(cache, self._model_identity())

    def __repr__(self) -> str:
        return f"EmbeddingRelevanceJudge(model={self.model_name!r}, threshold={self._threshold})"

    @property
    def threshold(self) -> float:
        return self._threshold

    def with_threshold(self, threshold: float) -> EmbeddingRelevanceJudge:
        """The same model and cache with another threshold (and so another identity)."""
        copy = copy_module.copy(self)
        copy._threshold = _threshold(threshold)
        return copy

    def identity(self) -> dict[str, Any]:
        return make_identity(
            self.name,
            self.model_name,
            EMBEDDING_RUBRIC,
            {**self._embedder.parameters, "threshold": self._threshold},
        )

    def _model_identity(self) -> dict[str, Any]:
        """What the similarities depend on (the model, not the threshold): their cache key."""
        return make_identity(
            self.name, self.model_name, EMBEDDING_RUBRIC, self._embedder.parameters
        )

    def _judging(self) -> contextlib.AbstractContextManager[None]:
        return self._embedder.judging(self._similarities, self._model_identity)

    @judging
    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        """Similarities from the cache, the missing ones embedded in one batch (each distinct
        text once)."""
        checked = relevance_pairs(pairs)
        scores, missing = self._similarities.peek_all(
            (_embedding_inputs(pair), _is_cosine) for pair in checked
        )
        cached = [score is not None for score in scores]
        if missing:
            texts = list(
                dict.fromkeys(t for i in missing for t in (checked[i].query, checked[i].passage))
            )
            vectors = self._embedder.embed(texts)
            row = {t: k for k, t in enumerate(texts)}
            for i in missing:
                pair = checked[i]
                score = round(float(vectors[row[pair.query]] @ vectors[row[pair.passage]]), 6)
                scores[i] = score
                self._similarities.put(_embedding_inputs(pair), score)
        verdicts: list[RelevanceVerdict] = []
        for i, (pair, found_score) in enumerate(zip(checked, scores, strict=True)):
            assert found_score is not None
            score = found_score
            relevant = score >= self._threshold
            verdicts.append(
                RelevanceVerdict(
                    pair.query_id,
                    pair.doc_id,
                    relevant,
                    f"cosine(question, passage) {score:.4f} "
                    f"{'>=' if relevant else '<'} {self._threshold}",
                    score,
                    cached=cached[i],
                )
            )
        return verdicts


def _embedding_inputs(pair: RelevancePair) -> dict[str, Any]:
    return {"task": "passage-relevance", "query": pair.query, "passage": pair.passage}


def _is_cosine(value: Any) -> bool:
    number = finite_number(value)
    return number is not None and -1.000001 <= number <= 1.000001


def _threshold(value: object) -> float:
    return check_cosine(value, "relevance judge: threshold")


__all__ = ["DEFAULT_RELEVANCE_THRESHOLD", "EmbeddingRelevanceJudge"]
