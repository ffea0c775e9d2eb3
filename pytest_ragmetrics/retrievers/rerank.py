"""Two-stage retrieval: any first stage, then a sentence-transformers CrossEncoder over its top
``rerank_k``. Both stages are exposed (:meth:`RerankRetriever.search_stages`) so a test can
report what reranking bought. torch and sentence_transformers are imported only to score.
"""

from __future__ import annotations

import os
import warnings
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.data.model import Corpus, Queries, Run
from pytest_ragmetrics.encoders import (
    ModelSource,
    batch_progress,
    load_cross_encoder,
    resolve_model,
    text_weights,
)
from pytest_ragmetrics.errors import ConfigError, RetrieverError
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.retrievers.base import (
    CacheLike,
    Named,
    Retriever,
    ShortRankingWarning,
    as_cache,
    check_k,
    check_run,
)
from pytest_ragmetrics.values import positive_int

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder

FIRST_STAGE = "first_stage"
RERANKED = "reranked"
PASSAGE_SEPARATOR = " "


class RerankRetriever(Named):
    """``first_stage`` retrieves ``max(k, rerank_k)`` documents; a cross-encoder rescores the top
    ``rerank_k``. Documents ranked below ``rerank_k`` by the first stage (when ``k`` is larger)
    follow the reranked ones in their first-stage order.

    Cross-encoder scores are raw logits (no sigmoid, which would saturate into ties).
    ``corpus`` defaults to the first stage's ``corpus`` attribute. What makes the identity is
    read-only once built (:class:`~pytest_ragmetrics.retrievers.named.Named`).
    """

    fixed: ClassVar[frozenset[str]] = Named.fixed | {
        "first_stage",
        "corpus",
        "source",
        "rerank_k",
        "max_length",
    }

    stages = (FIRST_STAGE, RERANKED)

    def __init__(
        self,
        first_stage: Retriever,
        model: str | os.PathLike[str],
        *,
        corpus: Corpus | None = None,
        rerank_k: int = 100,
        name: str | None = None,
        revision: str | None = None,
        batch_size: int = 32,
        max_length: int | None = None,
        device: str | None = None,
        chunk_size: int | None = None,
        cache: CacheLike = None,
        allow_download: bool = False,
    ) -> None:
        if not isinstance(first_stage, Retriever):
            raise ConfigError(
                f"RerankRetriever: first_stage must be a retriever (name, identity(), search()), "
                f"got {type(first_stage).__name__}"
            )
        found_corpus = corpus if corpus is not None else getattr(first_stage, "corpus", None)
        if not isinstance(found_corpus, Corpus):
            raise ConfigError(
                f"RerankRetriever: the first stage {first_stage.name!r} has no corpus; pass "
                "corpus=... so the cross-encoder can read the documents"
            )
        for option, value in (("rerank_k", rerank_k), ("batch_size", batch_size)):
            positive_int(value, f"RerankRetriever: {option}")
        if max_length is not None:
            positive_int(max_length, "RerankRetriever: max_length")
        self.first_stage = first_stage
        self.corpus: Corpus = found_corpus
        self.source: ModelSource = resolve_model(model, revision=revision)
        self.rerank_k = rerank_k
        self.batch_size = batch_size
        self.max_length = max_length
        self.device = device
        self.chunk_size = chunk_size or max(batch_size * 16, 256)
        self.cache = as_cache(cache)
        self.allow_download = allow_download
        self._name = name or f"{first_stage.name}+rerank:{self.source.label}"
        self._model: CrossEncoder | None = None
        self.pairs_scored = 0

    def __repr__(self) -> str:
        return f"RerankRetriever({self._name!r}, rerank_k={self.rerank_k})"

    def reranker_identity(self, *, for_cache: bool = False) -> dict[str, Any]:
        """The cross-encoder and its settings; ``for_cache``: only what its scores depend on."""
        return {
            **(self.source.content_key() if for_cache else self.source.identity()),
            "max_length": self.max_length,
            "passage": "title + ' ' + text",
            "score": "logit",
        }

    def identity(self) -> dict[str, Any]:
        return {
            "kind": "rerank",
            "name": self._name,
            "first_stage": self.first_stage.identity(),
            "reranker": self.reranker_identity(),
            "rerank_k": self.rerank_k,
        }

    def stage_identity(self, stage: str) -> dict[str, Any]:
        """The identity to record with the run of ``stage`` (see :attr:`stages`)."""
        if stage == FIRST_STAGE:
            return self.first_stage.identity()
        if stage == RERANKED:
            return self.identity()
        raise ConfigError(f"RerankRetriever: unknown stage {stage!r}; use one of {self.stages}")

    @property
    def model(self) -> CrossEncoder:
        """The cross-encoder, loaded on first use."""
        if self._model is None:
            self._model = load_cross_encoder(
                self.source,
                device=self.device,
                max_length=self.max_length,
                allow_download=self.allow_download,
            )
        return self._model

    def search(self, queries: Queries, k: int) -> Run:
        """The reranked run."""
        return self.search_stages(queries, k)[RERANKED]

    def search_stages(self, queries: Queries, k: int) -> dict[str, Run]:
        """``{"first_stage": run, "reranked": run}``, both cut at ``k``."""
        k = check_k(k, self._name)
        depth = max(k, self.rerank_k)
        with warnings.catch_warnings():
            # Checked (and warned about) once, at k, below.
            warnings.simplefilter("ignore", ShortRankingWarning)
            first = self.first_stage.search(queries, depth)
        first_k = first.truncate(k) if depth > k else first
        check_run(first_k, queries, k, retriever=self.first_stage.name, corpus=self.corpus)
        candidates = first.truncate(self.rerank_k)
        scores = self._candidate_scores(queries, candidates)
        reranked = _merge(first, candidates, scores, k)
        return {FIRST_STAGE: first_k, RERANKED: reranked}

    def _candidate_scores(self, queries: Queries, candidates: Run) -> npt.NDArray[np.float64]:
        """Cross-encoder logits for every (query, candidate) entry, cached when possible."""
        if candidates.num_entries == 0:
            return np.zeros(0, dtype=np.float64)
        unknown_queries = [q for q in candidates.query_ids.tolist() if q not in queries.position]
        if unknown_queries:
            raise RetrieverError(
                f"first stage {self.first_stage.name!r} returned query {unknown_queries[0]!r} "
                "that was not asked"
            )

        def compute() -> dict[str, np.ndarray[Any, Any]]:
            return {"scores": self._score(queries, candidates)}

        if self.cache is not None and self.cache.enabled:
            key = {
                "reranker": self.reranker_identity(for_cache=True),
                "candidates": candidates.fingerprint,
                "queries": queries.fingerprint,
                "corpus": self.corpus.text_fingerprint,
            }
            found = self.cache.arrays(
                "rerank-scores", key, compute, meta={"pairs": candidates.num_entries}
            )["scores"]
            if found.shape != (candidates.num_entries,):
                raise RetrieverError(
                    f"retriever {self._name!r}: cached rerank scores have shape {found.shape}, "
                    f"expected ({candidates.num_entries},); clear the cache"
                )
            return np.asarray(found, dtype=np.float64)
        return compute()["scores"]

    def _pairs(self, queries: Queries, candidates: Run) -> list[tuple[str, str]]:
        """(query text, passage) for every candidate entry, in entry order."""
        seg = np.repeat(np.arange(len(candidates)), np.diff(candidates.offsets))
        query_rows = [queries.position[q] for q in candidates.query_ids.tolist()]
        query_texts = [queries.texts[query_rows[i]] for i in seg.tolist()]
        names = candidates.doc_ids[candidates.doc_codes].tolist()
        position = self.corpus.position
        missing = [d for d in names if d not in position]
        if missing:
            raise RetrieverError(
                f"first stage {self.first_stage.name!r} returned document {missing[0]!r}, which "
                "is not in the reranker's corpus; pass the corpus the first stage searches"
            )
        passages = self.corpus.passages(PASSAGE_SEPARATOR)
        return [
            (query, passages[position[doc]]) for query, doc in zip(query_texts, names, strict=True)
        ]

    def _score(self, queries: Queries, candidates: Run) -> npt.NDArray[np.float64]:
        pairs = self._pairs(queries, candidates)
        # Longest first over all pairs, in chunks; the progress bar moves per batch.
        order = np.argsort([-(len(q) + len(p)) for q, p in pairs], kind="stable")
        model = self.model
        identity = _identity_activation()
        parts: list[npt.NDArray[np.float64]] = []
        try:
            with progress(
                f"reranking {len(pairs)} pairs ({self.source.label})",
                len(pairs),
                weights=text_weights(
                    (len(q) + len(p) for q, p in (pairs[i] for i in order)),
                    getattr(model, "max_seq_length", None),
                ),
            ) as advance:
                for start in range(0, len(pairs), self.chunk_size):
                    chunk = [pairs[i] for i in order[start : start + self.chunk_size].tolist()]
                    with batch_progress(model, advance) as counted:
                        out = np.asarray(
                            model.predict(
                                chunk,
                                batch_size=self.batch_size,
                                show_progress_bar=False,
                                activation_fn=identity,
                                convert_to_numpy=True,
                            ),
                            dtype=np.float64,
                        )
                    if out.ndim == 2 and out.shape[1] == 1:
                        out = out[:, 0]
                    if out.ndim != 1:
                        raise RetrieverError(
                            f"cross-encoder {self.source.label!r} gives {out.shape[-1]} scores per "
                            "pair; a reranker needs a model with one relevance score (num_labels=1)"
                        )
                    parts.append(out)
                    if len(chunk) > counted():
                        advance(len(chunk) - counted())
        except RetrieverError:
            raise
        except Exception as exc:
            raise RetrieverError(
                f"retriever {self._name!r}: cross-encoder scoring failed "
                f"({type(exc).__name__}: {exc})"
            ) from exc
        self.pairs_scored += len(pairs)
        scores = np.empty(len(pairs), dtype=np.float64)
        scores[order] = np.concatenate(parts)
        if not np.isfinite(scores).all():
            raise RetrieverError(
                f"cross-encoder {self.source.label!r} produced non-finite scores; check the model"
            )
        return scores


def _merge(first: Run, candidates: Run, scores: npt.NDArray[np.float64], k: int) -> Run:
    """Reranked candidates, then the first stage's remaining documents below them; top ``k``."""
    n = len(first)
    first_seg = np.repeat(np.arange(n), np.diff(first.offsets))
    first_rank = np.arange(first.num_entries) - first.offsets[first_seg]
    candidate_count = np.diff(candidates.offsets)
    tail = first_rank >= candidate_count[first_seg]
    final = np.empty(first.num_entries, dtype=np.float64)
    in_head = ~tail
    # ``candidates`` is ``first`` cut per query, so its entries are ``first``'s head entries.
    final[in_head] = scores
    if tail.any():
        cand_seg = np.repeat(np.arange(n), candidate_count)
        floor = np.full(n, np.inf)
        np.minimum.at(floor, cand_seg, scores)
        floor[~np.isfinite(floor)] = 0.0
        tail_rank = first_rank[tail] - candidate_count[first_seg[tail]]
        final[tail] = floor[first_seg[tail]] - 1.0 - tail_rank
    merged = Run(first.entries, final, check_duplicates=False)
    return merged.truncate(k) if int(merged.depths().max(initial=0)) > k else merged


def _identity_activation() -> Any:
    import torch

    return torch.nn.Identity()
