"""Which way scores point: declared by whoever hands them over, never guessed.

A run ranks each query's documents by score, highest first (trec_eval's rule). Scores that are
*distances* (LangChain's ``similarity_search_with_score``, faiss ``IndexFlatL2``) or *ranks*
(1 = best) point the other way: declare them (``scores="distance"`` or ``"rank"``) and they are
negated, so that the best document still comes first.

Where the order of the entries is a ranking by contract (what a ``from_function`` function
returns, ``Run.from_rankings`` pairs: best first), an order that contradicts the declared
direction for most queries (ascending "similarities") is an error naming the parameter to set,
instead of a silent re-sort that turns the ranking upside down. Where it is not (a
``{query: {doc: score}}`` dict, as for pytrec_eval; ``Run.from_arrays`` columns; the lines of a
TREC file), documents rank by score descending, ties by doc id, whatever the order; a TREC
file whose rank column says the opposite of its scores gets a warning
(:func:`rank_column_contradiction`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

ScoreKind = Literal["similarity", "distance", "rank"]
SCORE_KINDS: tuple[str, ...] = ("similarity", "distance", "rank")
_MEANING = {
    "similarity": "higher is better",
    "distance": "lower is better",
    "rank": "lower is better, 1 = best",
}


def check_score_kind(kind: object, where: str) -> ScoreKind:
    """``kind`` if it is one of :data:`SCORE_KINDS`, else a ValueError-like ConfigError."""
    from pytest_ragmetrics.errors import ConfigError

    if kind not in SCORE_KINDS:
        raise ConfigError(
            f"{where}: scores={kind!r} is not one of {', '.join(map(repr, SCORE_KINDS))} "
            "(similarity: higher is better; distance or rank: lower is better)"
        )
    return kind  # type: ignore[return-value]


def oriented(scores: npt.NDArray[np.float64], kind: ScoreKind) -> npt.NDArray[np.float64]:
    """Scores where higher is better: distances and ranks negated, similarities unchanged."""
    return scores if kind == "similarity" else -scores


@dataclass(frozen=True)
class Contradiction:
    """Most queries list their scores in the order opposite to the declared direction."""

    kind: ScoreKind
    contradicting: int  # queries whose given order runs against ``kind``
    counted: int  # queries whose given order says something (2+ entries, not all tied)
    example_query: str
    example_scores: tuple[float, ...]

    def describe(self, who: str, fix: str, unordered: str = "") -> str:
        """The error message: who, what was seen, what ``kind`` means, the parameter to set
        (``fix`` formatted with ``kind``); ``unordered``: how to say the order means nothing."""
        seen = "ascending (lowest first)" if self.kind == "similarity" else "descending"
        shown = ", ".join(f"{s:.4g}" for s in self.example_scores[:4])
        more = ", ..." if len(self.example_scores) > 4 else ""
        if self.kind == "similarity":
            advice = (
                f"if they are distances (LangChain's similarity_search_with_score, faiss "
                f"IndexFlatL2), set {fix.format(kind='distance')}; if ranks (1 = best), "
                f"{fix.format(kind='rank')}"
            )
        else:
            advice = f"if they are similarities, set {fix.format(kind='similarity')}"
        return (
            f"{who} listed its scores in {seen} order for {self.contradicting} of "
            f"{self.counted} queries (e.g. {self.example_query!r}: {shown}{more}), but "
            f"scores={self.kind!r} means {_MEANING[self.kind]}, so the ranking would be "
            f"turned upside down; {advice}{unordered}"
        )


def order_contradiction(
    query_ids: Any,
    offsets: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    kind: ScoreKind,
    *,
    min_entries: int = 2,
) -> Contradiction | None:
    """How the given order of each query's ``scores`` (CSR: ``offsets``) contradicts ``kind``;
    None unless it does for most of the queries whose order says something.

    A query counts when it has ``min_entries`` or more entries, not all tied; it contradicts
    when its scores never go the declared way and go the other way at least once (ascending
    similarities; descending distances or ranks). Where the order of entries may be arbitrary
    (a dict filled in document order), pass ``min_entries=3``: two entries are in ascending
    order half of the time by chance.
    """
    n = len(scores)
    if n < 2 or len(offsets) < 2 or not np.isfinite(scores).all():
        return None  # nothing to order, or non-finite scores (an error of their own)
    counts = np.diff(offsets)
    step = np.diff(scores)
    segment = np.repeat(np.arange(len(counts)), counts)
    within = segment[1:] == segment[:-1]
    up = np.bincount(segment[1:][within & (step > 0)], minlength=len(counts))
    down = np.bincount(segment[1:][within & (step < 0)], minlength=len(counts))
    counted = (counts >= min_entries) & ((up > 0) | (down > 0))
    wrong = counted & ((down == 0) if kind == "similarity" else (up == 0))
    if int(wrong.sum()) * 2 <= int(counted.sum()):
        return None
    first = int(np.flatnonzero(wrong)[0])
    lo, hi = int(offsets[first]), int(offsets[first + 1])
    return Contradiction(
        kind=kind,
        contradicting=int(wrong.sum()),
        counted=int(counted.sum()),
        example_query=str(query_ids[first]),
        example_scores=tuple(float(s) for s in scores[lo:hi]),
    )


def rank_column_contradiction(ranks: list[tuple[str, int, float]]) -> Contradiction | None:
    """Whether a TREC file's rank column says the opposite of its scores: for most queries of
    3+ lines, scores that never fall and rise at least once from rank 1 down (distances
    written as scores). trec_eval ignores the rank column and ranks by score descending."""
    by_query: dict[str, list[tuple[int, float]]] = {}
    for qid, rank, score in ranks:
        by_query.setdefault(qid, []).append((rank, score))
    ordered = [sorted(entries, key=lambda e: e[0]) for entries in by_query.values()]
    counts = np.array([len(e) for e in ordered], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    values = np.array([score for e in ordered for _, score in e], dtype=np.float64)
    return order_contradiction(list(by_query), offsets, values, "similarity", min_entries=3)


def check_pairs_order(scored: Mapping[str, list[float]], kind: ScoreKind) -> None:
    """A DataFormatError when most rankings of pairs run against ``kind`` (see data.scores)."""
    if not scored:
        return
    counts = np.array([len(v) for v in scored.values()], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    values = np.array([s for v in scored.values() for s in v], dtype=np.float64)
    found = order_contradiction(list(scored), offsets, values, kind)
    if found is not None:
        from pytest_ragmetrics.errors import DataFormatError

        raise DataFormatError(found.describe("run", "Run.from_rankings(rankings, scores={kind!r})"))
