"""Which way scores point: declared by whoever hands them over, never guessed.

A run ranks each query's documents by score, highest first (trec_eval's rule). Scores that are
*distances* (LangChain's ``similarity_search_with_score``, faiss ``IndexFlatL2``) or *ranks*
(1 = best) point the other way: declare them (``scores="distance"`` or ``"rank"``) and they are
negated, so that the best document still comes first.

Where the order of the entries is a ranking by contract (what a ``from_function`` function
returns as pairs, ``Run.from_rankings`` pairs: best first), an order that contradicts the
declared direction for most queries (ascending "similarities") is an error naming the parameter
to set, instead of a silent re-sort that turns the ranking upside down.

Where it is not (a ``{query: {doc: score}}`` dict, as for pytrec_eval), documents rank by score
descending, ties by doc id, whatever the order, with one exception: a dict whose direction is
not declared (``scores=None``, the default) and whose insertion order rises for most queries,
so regularly that an arbitrary order would do so less than once in a million times
(:data:`CHANCE`, :func:`unordered_contradiction`), is the distance trap (LangChain's scores
copied into a dict) and an error naming ``scores=``. Declaring the direction, even
``scores="similarity"``, says the order means nothing: the dict is then never refused.
``Run.from_arrays`` columns carry no order either (their direction is declared by ``kind``);
TREC files keep trec_eval's rule (their rank column is ignored), with a warning when it says the
opposite of their scores (:func:`rank_column_contradiction`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

ScoreKind = Literal["similarity", "distance", "rank"]
SCORE_KINDS: tuple[str, ...] = ("similarity", "distance", "rank")
#: For a dict whose order means nothing, the most often it may be refused as ascending: a
#: rising order is an error only when an arbitrary order rises as often less than this often.
CHANCE = 1e-6
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

    def describe(self, who: str, fix: str, unordered: str = "", *, declared: bool = True) -> str:
        """The error message: who, what was seen, what ``kind`` means, the parameter to set
        (``fix`` formatted with ``kind``); ``unordered``: how to say the order means nothing;
        ``declared`` False: no direction was given (a dict's scores taken as similarities)."""
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
        if declared:
            meaning = f"scores={self.kind!r} means {_MEANING[self.kind]}"
        else:
            meaning = (
                "no direction was declared, so they are taken as similarities (higher is "
                "better), and an order this regular is not chance"
            )
        return (
            f"{who} listed its scores in {seen} order for {self.contradicting} of "
            f"{self.counted} queries (e.g. {self.example_query!r}: {shown}{more}), but "
            f"{meaning}, so the ranking would be turned upside down; {advice}{unordered}"
        )


def _steps(
    offsets: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per query (CSR ``offsets``): its entries, its rises and its falls from one entry to the
    next in the given order."""
    counts = np.diff(offsets)
    step = np.diff(scores)
    segment = np.repeat(np.arange(len(counts)), counts)
    within = segment[1:] == segment[:-1]
    up = np.bincount(segment[1:][within & (step > 0)], minlength=len(counts))
    down = np.bincount(segment[1:][within & (step < 0)], minlength=len(counts))
    return counts, up, down


def _contradiction(
    query_ids: Any,
    offsets: npt.NDArray[np.int64],
    scores: npt.NDArray[np.float64],
    kind: ScoreKind,
    wrong: npt.NDArray[np.bool_],
    counted: npt.NDArray[np.bool_],
) -> Contradiction:
    first = int(np.flatnonzero(wrong)[0])
    lo, hi = int(offsets[first]), int(offsets[first + 1])
    return Contradiction(
        kind=kind,
        contradicting=int(wrong.sum()),
        counted=int(counted.sum()),
        example_query=str(query_ids[first]),
        example_scores=tuple(float(s) for s in scores[lo:hi]),
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
    similarities; descending distances or ranks). For entries whose order is a ranking by
    contract (pairs, best first); for dicts see :func:`unordered_contradiction`.
    """
    if len(scores) < 2 or len(offsets) < 2 or not np.isfinite(scores).all():
        return None  # nothing to order, or non-finite scores (an error of their own)
    counts, up, down = _steps(offsets, scores)
    counted = (counts >= min_entries) & ((up > 0) | (down > 0))
    wrong = counted & ((down == 0) if kind == "similarity" else (up == 0))
    if int(wrong.sum()) * 2 <= int(counted.sum()):
        return None
    return _contradiction(query_ids, offsets, scores, kind, wrong, counted)


def unordered_contradiction(
    query_ids: Any, offsets: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]
) -> Contradiction | None:
    """Whether a dict of scores whose direction was not declared is the distance trap; None
    when its order may be arbitrary.

    A dict's order means nothing, so it is not held against the scores unless it cannot be
    chance: the queries whose scores never fall and rise at least once (ascending) must be most
    of the queries whose order says something (2+ entries, not all tied), and an arbitrary
    order (each query's entries shuffled at random, independently) must give that many
    ascending queries with a probability below :data:`CHANCE`. A query of m entries whose
    values repeat t1, t2, ... times is ascending by chance with probability
    p = t1! t2! ... / m!; with mu the sum of p over the counted queries, a of them ascending,
    the chance is at most exp(-mu) (e mu / a)^a (Chernoff's bound for a sum of independent
    trials), so random orders are refused less than once in a million times whatever their
    shape. Ten or more distinct scores ascending in one query are enough on their own
    (1/10! < 1e-6); three ascending entries are not (1/6).

    Costs a few passes over the queries' first and last entries when the dict is not mostly
    rising (a dict sorted best first, the usual case); the whole check otherwise.
    """
    if len(scores) < 2 or len(offsets) < 2 or not np.isfinite(scores).all():
        return None
    counts = np.diff(offsets)
    filled = counts > 0
    first = scores[offsets[:-1][filled]]
    last = scores[offsets[1:][filled] - 1]
    # Every ascending query rises from its first entry to its last, and every counted query
    # whose first and last entries differ is counted: without a majority here, none below.
    if int((last > first).sum()) * 2 <= int((last != first).sum()):
        return None
    counts, up, down = _steps(offsets, scores)
    counted = (counts >= 2) & ((up > 0) | (down > 0))
    wrong = counted & (down == 0)
    ascending = int(wrong.sum())
    if ascending * 2 <= int(counted.sum()):
        return None
    log_mu = _log_sum(_log_chance_sorted(offsets, scores)[counted])
    mu = math.exp(log_mu)
    if ascending <= mu or -mu + ascending * (1 + log_mu - math.log(ascending)) >= math.log(CHANCE):
        return None
    return _contradiction(query_ids, offsets, scores, "similarity", wrong, counted)


def _log_chance_sorted(
    offsets: npt.NDArray[np.int64], scores: npt.NDArray[np.float64]
) -> npt.NDArray[np.float64]:
    """Per query, the log of the probability that a random order of its scores is ascending
    (never falling): log(t1! t2! ... / m!) for m entries whose values repeat t1, t2, ...
    times."""
    counts = np.diff(offsets)
    segment = np.repeat(np.arange(len(counts)), counts)
    order = np.lexsort((scores, segment))
    values, owner = scores[order], segment[order]
    starts = np.ones(len(values), dtype=bool)
    starts[1:] = (values[1:] != values[:-1]) | (owner[1:] != owner[:-1])
    run_start = np.flatnonzero(starts)
    run_length = np.diff(np.append(run_start, len(values)))
    # log(n!) for n = 0 .. the longest query, as a table.
    log_factorial = np.concatenate(([0.0], np.cumsum(np.log(np.arange(1, counts.max() + 1)))))
    ties = np.bincount(owner[run_start], weights=log_factorial[run_length], minlength=len(counts))
    return np.asarray(ties - log_factorial[counts], dtype=np.float64)


def _log_sum(logs: npt.NDArray[np.float64]) -> float:
    """log(sum(exp(logs))) without underflow; -inf for none."""
    if not len(logs):
        return -math.inf
    top = float(logs.max())
    return top + math.log(float(np.exp(logs - top).sum()))


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


def mapping_contradiction(results: object) -> Contradiction | None:
    """:func:`unordered_contradiction` of a ``{query: {doc: score}}`` dict, without building
    arrays unless most queries rise from their first score to their last (anything that is not
    a dict of numbers: None, it is an error of its own where the dict is read)."""
    if not isinstance(results, Mapping):
        return None
    rising = differ = 0
    for docs in results.values():
        if type(docs) is not dict and not isinstance(docs, Mapping):  # dict: the fast test
            return None
        if len(docs) < 2:
            continue
        values = docs.values()
        first = next(iter(values))
        last = next(reversed(values)) if type(docs) is dict else list(values)[-1]  # type: ignore[call-overload]
        try:
            if last > first:
                rising += 1
                differ += 1
            elif last != first:
                differ += 1
        except TypeError:
            return None
    if rising * 2 <= differ:
        return None
    try:
        flat = np.concatenate(
            [
                np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
                for docs in results.values()
            ]
        )
    except (TypeError, ValueError, OverflowError):  # bad scores: the run's reader names them
        return None
    counts = np.array([len(docs) for docs in results.values()], dtype=np.int64)
    offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
    return unordered_contradiction([str(q) for q in results], offsets, flat)


def undeclared_error(found: Contradiction, fix: str, who: str = "run") -> str:
    """The message refusing a dict whose undeclared scores rise (:func:`unordered_contradiction`);
    ``fix`` is the call to make, formatted with ``kind``."""
    return found.describe(
        who,
        fix,
        "; if they are similarities and the dict's order means nothing, say so: "
        + fix.format(kind="similarity"),
        declared=False,
    )
