"""The run joined with the qrels, as flat arrays: the rows every retrieval metric sums over.

Kept apart from the engine (:mod:`pytest_ragmetrics.metrics.retrieval`) so that the metric
registry (:mod:`pytest_ragmetrics.metrics.names`) can name the type its functions take without
importing the engine.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.data.model import FloatArray, IntArray
from pytest_ragmetrics.metrics.semantics import Gain

BoolArray = npt.NDArray[np.bool_]


@dataclass(frozen=True)
class RankedJudgments:
    """The run joined with the qrels: one row per retrieved document that has a judgment.

    Rows are grouped by query (in evaluation order) and ordered by rank inside each query.
    Retrieved documents without a judgment are not rows (they would add nothing but zeros);
    they are counted in ``num_retrieved``. Custom metrics registered with
    :func:`~pytest_ragmetrics.metrics.names.register_metric` receive this object, and its
    :attr:`condensed` view for their ``_judged`` form.
    """

    n_queries: int
    query: IntArray  # row -> query index
    rank: IntArray  # row -> 1-based rank of the document in its query's ranking
    grade: IntArray  # row -> judged grade
    num_relevant: IntArray  # query -> R, judged documents with grade >= relevance level
    num_retrieved: IntArray  # query -> documents retrieved (judged or not)
    ideal_query: IntArray  # all judged docs, by grade descending per query: query index
    ideal_rank: IntArray  # ... 1-based position in that ideal ranking
    ideal_grade: IntArray  # ... grade
    gain: Gain
    relevance_level: int

    @cached_property
    def relevant(self) -> BoolArray:
        """row -> grade >= relevance level."""
        return self.grade >= self.relevance_level

    def per_query_sum(self, weights: npt.ArrayLike, mask: BoolArray | None = None) -> FloatArray:
        """Sum ``weights`` over the rows of each query (optionally only rows in ``mask``)."""
        w = np.broadcast_to(np.asarray(weights, dtype=np.float64), self.query.shape)
        if mask is None:
            return _bincount(self.query, w, self.n_queries)
        return _bincount(self.query[mask], w[mask], self.n_queries)

    def count(self, mask: BoolArray) -> FloatArray:
        """Rows in ``mask`` per query."""
        return np.bincount(self.query[mask], minlength=self.n_queries).astype(np.float64)

    def hits(self, k: int | None) -> FloatArray:
        """Relevant documents in the top ``k`` (all retrieved when k is None), per query."""
        return self.count(self.relevant if k is None else self.relevant & (self.rank <= k))

    @cached_property
    def nonrelevant(self) -> BoolArray:
        """row -> judged non-relevant: 0 <= grade < relevance level (trec_eval's reading).

        Rows neither relevant nor non-relevant have a negative grade: TREC's -1, "pooled but
        not judged".
        """
        return (self.grade >= 0) & ~self.relevant

    @cached_property
    def num_nonrelevant(self) -> IntArray:
        """query -> judged non-relevant documents in the qrels (retrieved or not)."""
        grade = self.ideal_grade
        mask = (grade >= 0) & (grade < self.relevance_level)
        return np.bincount(self.ideal_query[mask], minlength=self.n_queries).astype(np.int64)

    @cached_property
    def position(self) -> IntArray:
        """row -> 0-based position among its query's rows (judged documents ranked above)."""
        return _positions(self.query, self.n_queries)

    def cumulative_count(self, mask: BoolArray) -> IntArray:
        """row -> rows in ``mask`` at or above it, within its query."""
        flags = mask.astype(np.int64)
        total = np.cumsum(flags)
        first_row = np.arange(len(flags)) - self.position
        counts: IntArray = total - (total - flags)[first_row]
        return counts

    @cached_property
    def cumulative_hits(self) -> IntArray:
        """Relevant documents at or above each row's rank, within its query."""
        return self.cumulative_count(self.relevant)

    @cached_property
    def condensed(self) -> RankedJudgments:
        """The judged-only view (trec_eval ``-J``): unjudged documents removed, ranks recomputed.

        A row's rank becomes its position among its query's judged rows, and the query's
        ``num_retrieved`` the number of such rows. Like trec_eval, a negative grade (-1,
        "pooled but not judged") counts as unjudged here and is removed too. Everything
        computed from the qrels alone (R, the ideal ranking) is unchanged.
        """
        keep = self.grade >= 0
        query = self.query[keep]
        return RankedJudgments(
            n_queries=self.n_queries,
            query=query,
            rank=_positions(query, self.n_queries) + 1,
            grade=self.grade[keep],
            num_relevant=self.num_relevant,
            num_retrieved=np.bincount(query, minlength=self.n_queries).astype(np.int64),
            ideal_query=self.ideal_query,
            ideal_rank=self.ideal_rank,
            ideal_grade=self.ideal_grade,
            gain=self.gain,
            relevance_level=self.relevance_level,
        )

    @cached_property
    def first_relevant_rank(self) -> IntArray:
        """Rank of the first relevant document per query; 0 when none was retrieved."""
        out = np.zeros(self.n_queries, dtype=np.int64)
        rows = np.flatnonzero(self.relevant)
        if len(rows):
            queries, first = np.unique(self.query[rows], return_index=True)
            out[queries] = self.rank[rows[first]]
        return out

    def gains(self, grades: IntArray) -> FloatArray:
        """Gain of each grade: the grade (linear) or 2^grade - 1; negative grades gain 0."""
        positive = np.maximum(grades, 0).astype(np.float64)
        if self.gain == "exponential":
            return np.exp2(positive) - 1.0
        return positive

    def dcg(self, k: int | None) -> FloatArray:
        mask = None if k is None else self.rank <= k
        return self.per_query_sum(self.gains(self.grade) / np.log2(self.rank + 1.0), mask)

    def ideal_dcg(self, k: int | None) -> FloatArray:
        weights = self.gains(self.ideal_grade) / np.log2(self.ideal_rank + 1.0)
        if k is not None:
            keep = self.ideal_rank <= k
            return _bincount(self.ideal_query[keep], weights[keep], self.n_queries)
        return _bincount(self.ideal_query, weights, self.n_queries)


def _positions(groups: IntArray, n: int) -> IntArray:
    """0-based position of each element within its group; ``groups`` sorted, values < n."""
    counts = np.bincount(groups, minlength=n)
    return np.arange(len(groups)) - np.repeat(np.cumsum(counts) - counts, counts)


def _bincount(index: IntArray, weights: FloatArray, n: int) -> FloatArray:
    """Per-bin sums of ``weights`` (float64, length ``n``)."""
    return np.asarray(np.bincount(index, weights=weights, minlength=n), dtype=np.float64)


def _divide(numerator: FloatArray, denominator: npt.ArrayLike) -> FloatArray:
    """numerator / denominator, 0 where the denominator is 0."""
    den = np.asarray(denominator, dtype=np.float64)
    out = np.zeros_like(numerator)
    np.divide(numerator, den, out=out, where=den > 0)
    return out
