"""trec_eval's ranking order: score descending (compared as float32), ties by doc id
descending; the canonical order of a :class:`~pytest_ragmetrics.data.run.Run`."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.data.arrays import FloatArray, IntArray, StrArray, segment_ids


def ranking_key(scores: FloatArray) -> npt.NDArray[np.float32]:
    """Scores as trec_eval compares them: rounded to 32-bit floats.

    trec_eval keeps each score in a C ``float``, so two scores that differ only beyond float32
    precision (0.1 and 0.1 + 1e-12) tie there, and the tie goes to the larger doc id; pytrec_eval
    behaves the same. Ranking by these keys keeps our order identical to theirs. The Run keeps the
    float64 values (files round-trip exactly); only the order comes from the keys.
    """
    with np.errstate(over="ignore"):  # beyond float32's range is +-inf there too
        return scores.astype(np.float32)


def in_canonical_order(
    offsets: IntArray, doc_ids: StrArray, codes: IntArray, scores: FloatArray
) -> tuple[IntArray, FloatArray]:
    """``codes`` and ``scores`` sorted per query by score desc, doc id desc.

    Scores are compared as :func:`ranking_key` gives them. Input already in score order (faiss
    output, a written run read back) costs a few linear passes: only tied entries move. The
    inputs are never modified; they are returned as they are when nothing has to move.
    """
    n = len(scores)
    if n < 2:
        return codes, scores
    key = ranking_key(scores)
    same_query = _same_query_as_next(offsets, n)
    tied = same_query & (key[1:] == key[:-1])
    copied = False
    if (same_query & (key[1:] > key[:-1])).any():
        order = np.lexsort((-key, segment_ids(offsets)))
        codes, scores, key = codes[order], scores[order], key[order]
        tied = same_query & (key[1:] == key[:-1])
        copied = True
    if tied.any():
        positions, source = _tie_order(codes, doc_ids, tied)
        if not copied:
            codes, scores = codes.copy(), scores.copy()
        codes[positions] = codes[source]
        scores[positions] = scores[source]
    return codes, scores


def _same_query_as_next(offsets: IntArray, n: int) -> npt.NDArray[np.bool_]:
    """For entries 0..n-2: does the next entry belong to the same query? (O(queries) work)."""
    same = np.ones(n - 1, dtype=bool)
    ends = offsets[1:-1]
    ends = ends[(ends > 0) & (ends < n)]
    same[ends - 1] = False
    return same


def _tie_order(
    codes: IntArray, doc_ids: StrArray, tied: npt.NDArray[np.bool_]
) -> tuple[IntArray, IntArray]:
    """Break ties by doc id descending: entry ``source[i]`` moves to ``positions[i]``.

    ``tied[i]`` says entries i and i + 1 are in one query with equal scores. Only entries that
    take part in a tie are sorted.
    """
    in_tie = np.zeros(len(codes), dtype=bool)
    in_tie[1:] |= tied
    in_tie[:-1] |= tied
    positions = np.flatnonzero(in_tie)
    unique_codes, inverse = np.unique(codes[positions], return_inverse=True)
    name_rank = np.argsort(np.argsort(doc_ids[unique_codes], kind="stable"), kind="stable")
    doc_rank = name_rank[inverse]
    # Tie groups are runs of equal scores; a group starts where an entry is not tied to the one
    # before it.
    starts = np.ones(len(positions), dtype=bool)
    starts[1:] = ~tied[positions[1:] - 1]
    group = np.cumsum(starts)
    within = np.lexsort((-doc_rank, group))
    return positions, positions[within]
