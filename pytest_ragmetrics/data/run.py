"""Ranked results: per query, documents with float scores, in trec_eval's order."""

from __future__ import annotations

import contextlib
import numbers
import operator
from collections.abc import Iterable, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.data.arrays import (
    Entries,
    FloatArray,
    IntArray,
    StrArray,
    as_str_array,
    canonical_positions,
    check_no_duplicate_docs,
    check_unique_ids,
    encode_ids_converted,
    offsets_from_counts,
    require_nested_mapping,
    segment_ids,
    sha256_lines,
)
from pytest_ragmetrics.data.ranking import in_canonical_order
from pytest_ragmetrics.data.scores import (
    check_pairs_order,
    check_score_kind,
    oriented,
    undeclared_error,
    unordered_contradiction,
)
from pytest_ragmetrics.data.segments import QuerySegments
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.twins import same_class
from pytest_ragmetrics.values import real_number, shown


def _as_score(score: object, query_id: str, doc_id: str) -> float:
    number = real_number(score)
    if number is not None:
        return number  # an int beyond float range is inf, refused as not finite
    raise DataFormatError(
        f"run: score {shown(score)} of document {doc_id!r} for query {query_id!r} is not a number"
    )


def _is_score_type(kind: type) -> bool:
    """A number type (int, float, a numpy number); not bool, str or None."""
    return issubclass(kind, numbers.Real) and not issubclass(kind, bool)


class Run(QuerySegments):
    """Ranked results: per query, documents with float scores, in canonical order.

    Canonical order is trec_eval's: score descending, compared at float32 precision as trec_eval
    stores scores (see :func:`ranking_key`), ties broken by document id descending (byte order).
    So ``ranking()`` may list 0.1 before 0.1 + 1e-12 when the first document's id is larger.
    Entries are CSR arrays: ``doc_codes`` index ``doc_ids`` (the vocabulary, for instance the
    corpus ids), ``offsets`` delimit queries.
    """

    __slots__ = ("k", "retriever", "scores")

    def __init__(
        self,
        entries: Entries,
        scores: FloatArray,
        *,
        check_duplicates: bool = True,
        canonical: bool = False,
        source: str = "run",
    ) -> None:
        query_ids, offsets, doc_ids, doc_codes = entries
        check_unique_ids(query_ids, source)
        if len(scores) and not np.isfinite(scores).all():
            bad = int(np.flatnonzero(~np.isfinite(scores))[0])
            seg = int(np.searchsorted(offsets, bad, side="right") - 1)
            raise DataFormatError(
                f"{source}: score {float(scores[bad])!r} of document "
                f"{str(doc_ids[doc_codes[bad]])!r} for query {str(query_ids[seg])!r} is not a "
                "finite number"
            )
        if check_duplicates:
            check_no_duplicate_docs(entries, source)
        if not canonical:
            doc_codes, scores = in_canonical_order(offsets, doc_ids, doc_codes, scores)
        super().__init__(entries._replace(doc_codes=doc_codes))
        self.scores = scores
        # Where the run came from, when known: the retriever's identity and the k it was
        # asked for (kept by truncate, restrict and without_identical_ids).
        self.retriever: Mapping[str, Any] | None = None
        self.k: int | None = None

    @classmethod
    def from_dict(
        cls,
        results: Run | Mapping[str, Mapping[str, float]],
        *,
        scores: str | None = None,
    ) -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (a Run is returned as it is).

        The order of a dict's entries means nothing (as for pytrec_eval): documents rank by
        score descending, ties by doc id (trec_eval's rule). ``scores`` says which way the
        scores point: ``"similarity"`` (higher is better), ``"distance"`` or ``"rank"`` (lower
        is better: negated here, so the nearest document ranks first). Undeclared (None), they
        are similarities, unless the dict rises from its first score to its last for most
        queries, too regularly to be chance (distances copied in the order they came: see
        :mod:`pytest_ragmetrics.data.scores`): a DataFormatError naming ``scores=``.
        """
        return run_from_dict(results, scores, fix="Run.from_dict(results, scores={kind!r})")

    @classmethod
    def from_rankings(
        cls,
        rankings: Mapping[str, Sequence[str] | Sequence[tuple[str, float]]],
        *,
        scores: str = "similarity",
    ) -> Run:
        """Build from ``{query_id: [doc_id, ...]}`` (best first) or ``[(doc_id, score), ...]``.

        Plain lists get scores that keep their order (n, n-1, ..., 1). Pairs are listed best
        first: ``scores`` says which way their scores point (``"similarity"``, higher is
        better; ``"distance"`` or ``"rank"``, lower is better), and pairs listed against it for
        most queries are a DataFormatError naming ``scores=``.
        """
        kind = check_score_kind(scores, "Run.from_rankings")
        if not isinstance(rankings, Mapping):
            raise DataFormatError(
                "rankings must be a dict {query_id: [doc_id, ...]}, got "
                f"{type(rankings).__name__}"
            )
        results: dict[str, dict[str, float]] = {}
        scored: dict[str, list[float]] = {}
        paired: dict[str, list[str]] = {}
        for qid, ranking in rankings.items():
            docs: dict[str, float] = {}
            n = len(ranking)
            for position, item in enumerate(ranking):
                if isinstance(item, str):
                    doc, score = item, float(n - position)
                elif isinstance(item, (tuple, list)) and len(item) == 2:
                    doc, score = str(item[0]), _as_score(item[1], str(qid), str(item[0]))
                    scored.setdefault(str(qid), []).append(score)
                    paired.setdefault(str(qid), []).append(doc)
                else:
                    raise DataFormatError(
                        f"run: the ranking of query {str(qid)!r} must hold document ids or "
                        f"(doc_id, score) pairs, got {item!r}"
                    )
                if doc in docs:
                    raise DataFormatError(
                        f"run: document {doc!r} appears twice for query {qid!r}; each "
                        "(query, document) pair may appear once"
                    )
                docs[doc] = score
            results[str(qid)] = docs
        check_pairs_order(scored, kind)
        if kind != "similarity":  # lower is better: negate the given scores
            for qid, names in paired.items():
                for name in names:
                    results[qid][name] = -results[qid][name]
        return cls.from_dict(results, scores="similarity")  # pairs are checked above

    @classmethod
    def from_arrays(
        cls,
        query_ids: Sequence[str] | StrArray,
        indices: npt.ArrayLike,
        scores: npt.ArrayLike,
        doc_ids: Sequence[str] | StrArray,
        *,
        kind: str = "similarity",
    ) -> Run:
        """Build from a search result matrix, e.g. faiss's ``(n_queries, k)`` output.

        ``indices[i, j]`` is a position in ``doc_ids``; negative positions (faiss's -1 padding)
        are skipped, whatever their score. Columns may come in any order: documents rank by
        score descending, ties by doc id (trec_eval's rule). ``kind`` says which way ``scores``
        point: ``"similarity"`` (higher is better: faiss ``IndexFlatIP``, the default),
        ``"distance"`` (faiss ``IndexFlatL2``) or ``"rank"`` (lower is better: negated here).
        ``doc_ids`` must be unique (corpus ids). No Python loop
        runs per entry, and no copy is made when none is needed: the Run may share memory with
        ``indices`` and ``scores``, so do not modify them afterwards.
        """
        qids = as_str_array(list(query_ids))
        vocab = doc_ids if isinstance(doc_ids, np.ndarray) else as_str_array(list(doc_ids))
        idx = np.asarray(indices)
        sc = np.asarray(scores, dtype=np.float64)
        if idx.ndim != 2 or sc.shape != idx.shape or idx.shape[0] != len(qids):
            raise DataFormatError(
                f"run arrays: indices {idx.shape} and scores {sc.shape} must both be "
                f"(n_queries={len(qids)}, k)"
            )
        if not np.issubdtype(idx.dtype, np.integer):
            raise DataFormatError(f"run arrays: indices must be integers, got {idx.dtype}")
        idx = idx.astype(np.int64, copy=False)
        if idx.size and int(idx.max()) >= len(vocab):
            raise DataFormatError(
                f"run arrays: index {int(idx.max())} is out of range for {len(vocab)} documents"
            )
        valid = idx >= 0
        sc = oriented(sc, check_score_kind(kind, "Run.from_arrays"))
        if valid.all():
            offsets = np.arange(len(qids) + 1, dtype=np.int64) * idx.shape[1]
            codes, flat_scores = idx.ravel(), sc.ravel()
        else:
            counts = valid.sum(axis=1)
            offsets = offsets_from_counts(counts)
            codes, flat_scores = idx[valid], sc[valid]
        if idx.shape[1] > 1:
            _check_rows_unique(qids, vocab, idx, valid, codes)
        # faiss rows come sorted by score: the Run then only reorders tied entries.
        return cls(Entries(qids, offsets, vocab, codes), flat_scores, check_duplicates=False)

    def __repr__(self) -> str:
        return f"Run({len(self)} queries, {len(self.scores)} entries)"

    @property
    def num_entries(self) -> int:
        return len(self.scores)

    def ranking(self, query_id: str) -> list[tuple[str, float]]:
        """This query's ranked (doc id, score) pairs, best first; [] for an unknown query."""
        return list(self._entries(query_id, self.scores))

    def to_dict(self) -> dict[str, dict[str, float]]:
        """``{query_id: {doc_id: score}}`` in rank order."""
        return {qid: dict(self.ranking(qid)) for qid in self.query_ids.tolist()}

    def depths(self) -> IntArray:
        """Number of retrieved documents per query."""
        return np.diff(self.offsets)

    def with_retriever(self, identity: Mapping[str, Any] | None, k: int | None) -> Run:
        """The same results, recorded as produced by a retriever (its identity) asked for k."""
        copy = Run.__new__(Run)
        for name in ("query_ids", "offsets", "doc_ids", "doc_codes", "scores"):
            setattr(copy, name, getattr(self, name))
        copy.retriever = None if identity is None else dict(identity)
        copy.k = k
        return copy

    def _keep_source(self, run: Run, cutoff: int | None = None) -> Run:
        """``run``, made from this one, with this one's retriever and k (at most ``cutoff``)."""
        run.retriever = self.retriever
        run.k = self.k if cutoff is None or self.k is None else min(self.k, cutoff)
        return run

    def truncate(self, k: int) -> Run:
        """Keep the top ``k`` documents of every query."""
        seg = segment_ids(self.offsets)
        rank = np.arange(len(self.scores)) - self.offsets[seg]
        keep = rank < k
        counts = np.bincount(seg[keep], minlength=len(self))
        entries = self.entries._replace(
            offsets=offsets_from_counts(counts), doc_codes=self.doc_codes[keep]
        )
        truncated = Run(entries, self.scores[keep], check_duplicates=False)
        return self._keep_source(truncated, k)

    def without_identical_ids(self) -> Run:
        """This run without every document whose id equals its query's id (BEIR's
        ``ignore_identical_ids``); itself when there is none.

        The documents below a removed one move up a rank and the query's list gets one shorter
        (no document is fetched to replace it); a query stays even when nothing is left of its
        list. Qrels are not touched. Meant for corpora that contain the queries themselves
        (ArguAna, Quora); see METRICS.md.
        """
        # Only documents whose id is also some query's id can match: find those in the
        # vocabulary (or in the part of it the run uses, when that is smaller), then compare
        # the candidates' names with their own query's id.
        if len(self.doc_ids) <= len(self.doc_codes):
            is_query_id = np.isin(self.doc_ids, self.query_ids)
        else:
            used = np.unique(self.doc_codes)
            is_query_id = np.zeros(len(self.doc_ids), dtype=bool)
            is_query_id[used[np.isin(self.doc_ids[used], self.query_ids)]] = True
        candidates = np.flatnonzero(is_query_id[self.doc_codes])
        seg = np.searchsorted(self.offsets, candidates, side="right") - 1
        same = self.doc_ids[self.doc_codes[candidates]] == self.query_ids[seg]
        if not same.any():
            return self
        keep = np.ones(len(self.scores), dtype=bool)
        keep[candidates[same]] = False
        removed = np.bincount(seg[same], minlength=len(self))
        offsets = self.offsets - offsets_from_counts(removed)
        kept = Run(
            self.entries._replace(offsets=offsets, doc_codes=self.doc_codes[keep]),
            self.scores[keep],
            check_duplicates=False,
            canonical=True,  # removing entries keeps the remaining ones in order
        )
        return self._keep_source(kept)

    def restrict(self, query_ids: Iterable[str]) -> Run:
        """The results of the given queries only, in the given order (unknown ids are ignored)."""
        keep, offsets, take = self._select(query_ids)
        entries = Entries(self.query_ids[keep], offsets, self.doc_ids, self.doc_codes[take])
        restricted = Run(entries, self.scores[take], check_duplicates=False)
        return self._keep_source(restricted)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the ranked entries, queries sorted by id, each in canonical order.

        Independent of the order of the input lines (or dict entries): the same results give
        the same fingerprint.
        """
        # A stable sort by query id keeps each query's entries in rank order.
        rows = sorted(self._rows(self.scores), key=operator.itemgetter(0))
        return sha256_lines(f"{q}\t{d}\t{s!r}" for q, d, s in rows)


def _check_rows_unique(
    query_ids: StrArray,
    vocab: StrArray,
    idx: IntArray,
    valid: npt.NDArray[np.bool_],
    codes: IntArray,
) -> None:
    """A DataFormatError when a row of a search result matrix holds one document twice (by
    name: ``vocab`` may repeat an id at two positions); ``codes`` are the valid positions."""
    canonical = canonical_positions(vocab, codes)
    if canonical is not None:  # a repeated id: compare names, not positions
        idx = np.where(valid, canonical[np.maximum(idx, 0)], -1)
    # int32 sorts twice as fast; padding becomes distinct negatives so it never matches.
    narrow = idx.astype(np.int32) if len(vocab) < 2**31 else idx
    if not valid.all():
        narrow = np.where(valid, narrow, -1 - np.arange(idx.shape[1], dtype=narrow.dtype))
    rows = np.sort(narrow, axis=1)
    dup = rows[:, 1:] == rows[:, :-1]
    if dup.any():
        r, c = np.argwhere(dup)[0]
        raise DataFormatError(
            f"run arrays: document {str(vocab[rows[r, c]])!r} appears twice for query "
            f"{str(query_ids[r])!r}; each (query, document) pair may appear once"
        )


def _own(run: Run) -> Run:
    """A copy of ours of a Run from another import of this module (see
    :mod:`pytest_ragmetrics.twins`)."""
    own = Run(run.entries, run.scores, canonical=True)
    own.retriever, own.k = run.retriever, run.k
    return own


def run_from_dict(
    results: Run | Mapping[str, Mapping[str, float]], scores: str | None, *, fix: str
) -> Run:
    """:meth:`Run.from_dict`, an error naming ``fix`` (the call to make, formatted with
    ``kind``: ``"evaluate(qrels, run, scores={kind!r})"``) when undeclared scores rise."""
    kind = None if scores is None else check_score_kind(scores, fix.split("(")[0])
    if isinstance(results, Run):
        return results
    if same_class(results, Run):
        return _own(results)
    require_nested_mapping(results, "run", "{query_id: {doc_id: score}}")
    query_ids = [str(q) for q in results]
    vocab, codes, offsets, converted = encode_ids_converted(
        [docs.keys() for docs in results.values()]
    )
    values = _scores_of(results)
    if kind is None:
        found = unordered_contradiction(query_ids, offsets, values)
        if found is not None:
            raise DataFormatError(undeclared_error(found, fix))
    else:
        values = oriented(values, kind)
    # Distinct keys are distinct ids unless str() made two of them equal (5 and "5").
    entries = Entries(as_str_array(query_ids), offsets, vocab, codes)
    return Run(entries, values, check_duplicates=converted)


def _scores_of(results: Mapping[str, Mapping[str, float]]) -> FloatArray:
    """Every score of a ``{query_id: {doc_id: score}}`` dict, in order (:func:`score_array`)."""
    if not results:
        return np.empty(0)
    return np.concatenate([score_array(str(qid), docs) for qid, docs in results.items()])


def score_array(query_id: str, docs: Mapping[str, object]) -> FloatArray:
    """One query's ``{doc_id: score}`` scores as float64, each a finite number (an int, a float,
    a numpy number); anything else is a DataFormatError naming the query and the document.

    numpy alone would read True as 1.0, "0.5" as 0.5 and None as NaN: the types are checked first
    (the set of them: cheap), and scores are read one by one only where one is off."""
    scores: FloatArray | None = None
    if all(map(_is_score_type, set(map(type, docs.values())))):
        # An int beyond float range overflows: then read one by one, as inf.
        with contextlib.suppress(OverflowError):
            scores = np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
    if scores is None:
        scores = np.array([_as_score(v, query_id, str(d)) for d, v in docs.items()], np.float64)
    if not np.isfinite(scores).all():
        bad = int(np.flatnonzero(~np.isfinite(scores))[0])
        doc, value = list(docs.items())[bad]
        raise DataFormatError(
            f"run: score {shown(value)} of document {str(doc)!r} for query {query_id!r} is not a "
            "finite number"
        )
    return scores
