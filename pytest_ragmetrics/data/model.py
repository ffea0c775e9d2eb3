"""The data model: Qrels, Run, Corpus, Queries and Dataset, backed by numpy arrays."""

from __future__ import annotations

import hashlib
import operator
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.data.scores import (
    check_pairs_order,
    check_score_kind,
    oriented,
)
from pytest_ragmetrics.errors import DataFormatError

IntArray: TypeAlias = npt.NDArray[np.int64]
FloatArray: TypeAlias = npt.NDArray[np.float64]
StrArray: TypeAlias = npt.NDArray[np.str_]


def as_str_array(values: Iterable[str]) -> StrArray:
    """Turn ids into a numpy unicode array (code-point order equals UTF-8 byte order)."""
    items = values if isinstance(values, (list, tuple)) else list(values)
    if len(items) == 0:
        return np.empty(0, dtype="<U1")
    array = np.asarray(items)
    if array.dtype.kind != "U":
        items = [str(item) for item in items]
        array = np.asarray(items)
    if "\x00" in "".join(items):
        # numpy drops trailing NUL characters: "d2\x00" would silently become "d2".
        bad = next(item for item in items if "\x00" in item)
        raise DataFormatError(f"id {bad!r} contains a NUL character; ids must be text")
    return array


def encode_ids(groups: Sequence[Iterable[str]]) -> tuple[StrArray, IntArray, IntArray]:
    """Map the ids of several groups to codes into one vocabulary.

    Returns (vocabulary, codes of all ids concatenated, group offsets). One pass in C through
    ``dict.fromkeys`` and ``map``: no Python-level loop per entry. Ids that are not strings
    are converted with ``str()``.
    """
    vocab, codes, offsets, _ = _encode_ids(groups)
    return vocab, codes, offsets


def _encode_ids(groups: Sequence[Iterable[object]]) -> tuple[StrArray, IntArray, IntArray, bool]:
    """:func:`encode_ids`, also saying whether some ids had to be converted to strings.

    After a conversion two different keys (``5`` and ``"5"``) may share one id, so callers
    must then check for duplicates.
    """
    flat: list[object] = []
    offsets = np.zeros(len(groups) + 1, dtype=np.int64)
    for i, group in enumerate(groups):
        flat.extend(group)
        offsets[i + 1] = len(flat)
    unique = list(dict.fromkeys(flat))
    converted = not set(map(type, unique)) <= {str}
    if converted:
        flat = list(map(str, flat))
        unique = list(dict.fromkeys(flat))
    index = {doc: code for code, doc in enumerate(unique)}
    codes = np.fromiter(map(index.__getitem__, flat), dtype=np.int64, count=len(flat))
    return as_str_array(cast("list[str]", unique)), codes, offsets, converted


def _segment_ids(offsets: IntArray) -> IntArray:
    """Index of the segment (query) of every entry, from CSR offsets."""
    return np.repeat(np.arange(len(offsets) - 1, dtype=np.int64), np.diff(offsets))


def _check_unique_ids(ids: StrArray, what: str, kind: str = "query") -> None:
    """A DataFormatError naming the first ``kind`` id (in sorted order) that appears twice."""
    if len(np.unique(ids)) != len(ids):
        values, counts = np.unique(ids, return_counts=True)
        raise DataFormatError(f"{what}: {kind} id {str(values[counts > 1][0])!r} appears twice")


def _canonical_positions(vocab: StrArray, codes: IntArray) -> IntArray | None:
    """Map each position of ``vocab`` to the first position holding the same id, or None.

    None means the ids at the positions ``codes`` uses are all distinct (the usual case). When
    the run is smaller than the vocabulary only the used positions are checked, so the cost
    follows the smaller of the two.
    """
    if len(vocab) <= codes.size:
        positions = np.arange(len(vocab), dtype=np.int64)
    else:
        used = np.zeros(len(vocab), dtype=bool)
        used[codes] = True
        positions = np.flatnonzero(used)
    names = vocab[positions]
    # A stable sort is fastest on ids that come in order, as corpus ids often do.
    ordered = np.sort(names, kind="stable")
    if not (ordered[1:] == ordered[:-1]).any():
        return None
    _, first, inverse = np.unique(names, return_index=True, return_inverse=True)
    canonical = np.arange(len(vocab), dtype=np.int64)
    canonical[positions] = positions[first][inverse]
    return canonical


def _check_no_duplicate_docs(
    query_ids: StrArray, offsets: IntArray, doc_ids: StrArray, codes: IntArray, what: str
) -> None:
    """Raise naming query and doc when a doc appears twice within one query."""
    if len(codes) < 2:
        return
    seg = _segment_ids(offsets)
    keys = seg * max(len(doc_ids), 1) + codes
    order = np.argsort(keys, kind="stable")
    same = keys[order][1:] == keys[order][:-1]
    if same.any():
        where = order[1:][same][0]
        raise DataFormatError(
            f"{what}: document {str(doc_ids[codes[where]])!r} appears twice for query "
            f"{str(query_ids[seg[where]])!r}; each (query, document) pair may appear once"
        )


def _sha256_lines(lines: Iterable[str]) -> str:
    digest = hashlib.sha256()
    for line in lines:
        digest.update(line.encode("utf-8", "surrogatepass"))
        digest.update(b"\n")
    return digest.hexdigest()


def _offsets_from_counts(counts: npt.ArrayLike) -> IntArray:
    """CSR offsets of segments holding ``counts`` entries each."""
    return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)


class QueryKeyed:
    """Rows keyed by unique query ids, in order: its length, iteration over the ids, membership
    and the row of an id (what :class:`Queries`, :class:`Qrels` and :class:`Run` share)."""

    __slots__ = ("__dict__", "query_ids")

    query_ids: StrArray

    def __len__(self) -> int:
        return len(self.query_ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.query_ids.tolist())

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._position

    @cached_property
    def _position(self) -> dict[str, int]:
        return {qid: i for i, qid in enumerate(self.query_ids.tolist())}


class QuerySegments(QueryKeyed):
    """Per query, a segment of document entries, in CSR arrays: the entries of ``query_ids[i]``
    are ``offsets[i]:offsets[i + 1]``, and ``doc_codes`` index ``doc_ids`` (the vocabulary).

    The storage, lookups and selections :class:`Qrels` and :class:`Run` share; each adds one
    value per entry (grades, scores).
    """

    __slots__ = ("doc_codes", "doc_ids", "offsets")

    offsets: IntArray
    doc_ids: StrArray
    doc_codes: IntArray

    def __init__(
        self, query_ids: StrArray, offsets: IntArray, doc_ids: StrArray, doc_codes: IntArray
    ) -> None:
        self.query_ids = query_ids
        self.offsets = offsets
        self.doc_ids = doc_ids
        self.doc_codes = doc_codes

    def _entries(self, query_id: str, values: npt.NDArray[Any]) -> Iterator[tuple[str, Any]]:
        """(doc id, value) of one query's entries in stored order; none for an unknown query."""
        i = self._position.get(query_id)
        if i is None:
            return iter(())
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return zip(
            self.doc_ids[self.doc_codes[lo:hi]].tolist(), values[lo:hi].tolist(), strict=True
        )

    def _rows(self, values: npt.NDArray[Any]) -> Iterator[tuple[str, str, Any]]:
        """(query id, doc id, value) of every entry in stored order (what fingerprints hash)."""
        seg = _segment_ids(self.offsets)
        return zip(
            self.query_ids[seg].tolist(),
            self.doc_ids[self.doc_codes].tolist(),
            values.tolist(),
            strict=True,
        )

    def _select(self, query_ids: Iterable[str]) -> tuple[list[int], IntArray, IntArray]:
        """The rows of the known ``query_ids`` (in that order, unknown ones ignored), the
        offsets of their segments once taken out, and the entries they hold."""
        keep = [self._position[q] for q in query_ids if q in self._position]
        lo, hi = self.offsets[keep], self.offsets[np.asarray(keep, dtype=np.int64) + 1]
        take = (
            np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)])
            if keep
            else np.empty(0, dtype=np.int64)
        )
        return keep, _offsets_from_counts(hi - lo), take


class Qrels(QuerySegments):
    """Relevance judgments: query id -> document id -> integer grade, stored as CSR arrays."""

    __slots__ = ("grades",)

    def __init__(
        self,
        query_ids: StrArray,
        offsets: IntArray,
        doc_ids: StrArray,
        doc_codes: IntArray,
        grades: IntArray,
        *,
        validate: bool = True,
    ) -> None:
        super().__init__(query_ids, offsets, doc_ids, doc_codes)
        self.grades = grades
        if validate:
            _check_unique_ids(query_ids, "qrels")
            _check_no_duplicate_docs(query_ids, offsets, doc_ids, doc_codes, "qrels")

    @classmethod
    def from_dict(cls, judgments: Qrels | Mapping[str, Mapping[str, int]]) -> Qrels:
        """Build from ``{query_id: {doc_id: grade}}``; grades must be integers (Qrels are
        returned as they are)."""
        if isinstance(judgments, Qrels):
            return judgments
        _require_nested_mapping(judgments, "qrels", "{query_id: {doc_id: grade}}")
        query_ids = [str(q) for q in judgments]
        groups = [[str(d) for d in docs] for docs in judgments.values()]
        vocab, codes, offsets = encode_ids(groups)
        grades = np.empty(len(codes), dtype=np.int64)
        position = 0
        for qid, docs in zip(query_ids, judgments.values(), strict=True):
            for doc, grade in docs.items():
                grades[position] = _as_grade(grade, qid, str(doc))
                position += 1
        # Validation catches ids that collide once converted to strings (5 and "5").
        return cls(as_str_array(query_ids), offsets, vocab, codes, grades)

    @classmethod
    def from_triples(
        cls, triples: Iterable[tuple[str, str, int]], *, source: str = "qrels"
    ) -> Qrels:
        """Build from (query id, doc id, grade) triples; duplicates are an error."""
        by_query: dict[str, dict[str, int]] = {}
        for qid, doc, grade in triples:
            docs = by_query.setdefault(qid, {})
            if doc in docs:
                raise DataFormatError(f"{source}: document {doc!r} appears twice for query {qid!r}")
            docs[doc] = grade
        return cls.from_dict(by_query)

    def __repr__(self) -> str:
        return f"Qrels({len(self)} queries, {len(self.grades)} judgments)"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Qrels):
            return NotImplemented
        return self.fingerprint == other.fingerprint

    __hash__ = None  # type: ignore[assignment]

    def judgments(self, query_id: str) -> dict[str, int]:
        """The judged documents of one query with their grades."""
        return dict(self._entries(query_id, self.grades))

    def to_dict(self) -> dict[str, dict[str, int]]:
        """``{query_id: {doc_id: grade}}``."""
        return {qid: self.judgments(qid) for qid in self.query_ids.tolist()}

    @property
    def num_judgments(self) -> int:
        return len(self.grades)

    def num_relevant(self, relevance_level: int = 1) -> IntArray:
        """Number of documents with grade >= relevance_level, per query (aligned with query_ids)."""
        seg = _segment_ids(self.offsets)
        relevant = (self.grades >= relevance_level).astype(np.int64)
        return np.bincount(seg, weights=relevant, minlength=len(self)).astype(np.int64)

    def restrict(self, query_ids: Iterable[str]) -> Qrels:
        """The judgments of the given queries only (unknown ids are ignored)."""
        rows, offsets, take = self._select(dict.fromkeys(query_ids))
        # A vocabulary of the documents kept, in order of first use, as from_dict makes it.
        vocab, codes, _ = encode_ids([self.doc_ids[self.doc_codes[take]].tolist()])
        return Qrels(
            as_str_array(self.query_ids[rows].tolist()), offsets, vocab, codes, self.grades[take]
        )

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the judgments, independent of their order in the file."""
        return _sha256_lines(f"{q}\t{d}\t{g}" for q, d, g in sorted(self._rows(self.grades)))


def _require_nested_mapping(value: object, what: str, shape: str) -> None:
    """Raise unless ``value`` is a mapping of mappings (``{query_id: {doc_id: ...}}``)."""
    if not isinstance(value, Mapping):
        raise DataFormatError(f"{what} must be a dict {shape}, got {type(value).__name__}")
    for qid, docs in value.items():
        if not isinstance(docs, Mapping):
            raise DataFormatError(
                f"{what}: the entry of query {str(qid)!r} must be a dict, got "
                f"{type(docs).__name__}; expected {shape}"
            )


# Grades are C ints in trec_eval and pytrec_eval; larger ones are typos, not judgments.
MIN_GRADE, MAX_GRADE = -(2**31), 2**31 - 1
GRADE_RANGE_HINT = f"grades must be integers from {MIN_GRADE} to {MAX_GRADE}"


def _as_grade(grade: object, query_id: str, doc_id: str) -> int:
    if isinstance(grade, bool) or not isinstance(grade, (int, np.integer, float, np.floating)):
        raise DataFormatError(
            f"qrels: grade {grade!r} of query {query_id!r}, document {doc_id!r} is not an integer"
        )
    if isinstance(grade, (float, np.floating)) and not float(grade).is_integer():
        raise DataFormatError(
            f"qrels: grade {grade!r} of query {query_id!r}, document {doc_id!r} is not an integer"
        )
    value = int(grade)
    if not MIN_GRADE <= value <= MAX_GRADE:
        raise DataFormatError(
            f"qrels: grade {grade!r} of query {query_id!r}, document {doc_id!r} is out of range; "
            + GRADE_RANGE_HINT
        )
    return value


def _as_score(score: object, query_id: str, doc_id: str) -> float:
    if isinstance(score, (int, float, np.integer, np.floating)) and not isinstance(score, bool):
        return float(score)
    raise DataFormatError(
        f"run: score {score!r} of document {doc_id!r} for query {query_id!r} is not a number"
    )


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
        query_ids: StrArray,
        offsets: IntArray,
        doc_ids: StrArray,
        doc_codes: IntArray,
        scores: FloatArray,
        *,
        check_duplicates: bool = True,
        canonical: bool = False,
        source: str = "run",
    ) -> None:
        _check_unique_ids(query_ids, source)
        if len(scores) and not np.isfinite(scores).all():
            bad = int(np.flatnonzero(~np.isfinite(scores))[0])
            seg = int(np.searchsorted(offsets, bad, side="right") - 1)
            raise DataFormatError(
                f"{source}: score {float(scores[bad])!r} of document "
                f"{str(doc_ids[doc_codes[bad]])!r} for query {str(query_ids[seg])!r} is not a "
                "finite number"
            )
        if check_duplicates:
            _check_no_duplicate_docs(query_ids, offsets, doc_ids, doc_codes, source)
        if not canonical:
            doc_codes, scores = _in_canonical_order(offsets, doc_ids, doc_codes, scores)
        super().__init__(query_ids, offsets, doc_ids, doc_codes)
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
        scores: str = "similarity",
    ) -> Run:
        """Build from ``{query_id: {doc_id: score}}`` (a Run is returned as it is).

        The order of a dict's entries means nothing (as for pytrec_eval): documents rank by
        score descending, ties by doc id (trec_eval's rule). ``scores`` says which way the
        scores point: ``"similarity"`` (higher is better, the default), ``"distance"`` or
        ``"rank"`` (lower is better: negated here, so the nearest document ranks first).
        """
        kind = check_score_kind(scores, "Run.from_dict")
        if isinstance(results, Run):
            return results
        _require_nested_mapping(results, "run", "{query_id: {doc_id: score}}")
        query_ids = [str(q) for q in results]
        vocab, codes, offsets, converted = _encode_ids([docs.keys() for docs in results.values()])
        try:
            values = (
                np.concatenate(
                    [
                        np.fromiter(docs.values(), dtype=np.float64, count=len(docs))
                        for docs in results.values()
                    ]
                )
                if results
                else np.empty(0)
            )
        except (TypeError, ValueError) as exc:
            for qid, docs in results.items():
                for doc, score in docs.items():
                    if not isinstance(score, (int, float, np.integer, np.floating)):
                        raise DataFormatError(
                            f"run: score {score!r} of document {doc!r} for query {qid!r} is not "
                            "a number"
                        ) from exc
            raise
        values = oriented(values, kind)
        # Distinct keys are distinct ids unless str() made two of them equal (5 and "5").
        return cls(
            as_str_array(query_ids), offsets, vocab, codes, values, check_duplicates=converted
        )

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
        return cls.from_dict(results)

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
            offsets = np.arange(0, idx.size + 1, idx.shape[1], dtype=np.int64)
            codes, flat_scores = idx.ravel(), sc.ravel()
        else:
            counts = valid.sum(axis=1)
            offsets = _offsets_from_counts(counts)
            codes, flat_scores = idx[valid], sc[valid]
        if idx.shape[1] > 1:
            canonical = _canonical_positions(vocab, codes)
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
                    f"{str(qids[r])!r}; each (query, document) pair may appear once"
                )
        # faiss rows come sorted by score: the Run then only reorders tied entries.
        return cls(qids, offsets, vocab, codes, flat_scores, check_duplicates=False)

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
        seg = _segment_ids(self.offsets)
        rank = np.arange(len(self.scores)) - self.offsets[seg]
        keep = rank < k
        truncated = Run(
            self.query_ids,
            _offsets_from_counts(np.bincount(seg[keep], minlength=len(self))),
            self.doc_ids,
            self.doc_codes[keep],
            self.scores[keep],
            check_duplicates=False,
        )
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
        offsets = self.offsets - _offsets_from_counts(removed)
        kept = Run(
            self.query_ids,
            offsets,
            self.doc_ids,
            self.doc_codes[keep],
            self.scores[keep],
            check_duplicates=False,
            canonical=True,  # removing entries keeps the remaining ones in order
        )
        return self._keep_source(kept)

    def restrict(self, query_ids: Iterable[str]) -> Run:
        """The results of the given queries only, in the given order (unknown ids are ignored)."""
        keep, offsets, take = self._select(query_ids)
        restricted = Run(
            self.query_ids[keep],
            offsets,
            self.doc_ids,
            self.doc_codes[take],
            self.scores[take],
            check_duplicates=False,
        )
        return self._keep_source(restricted)

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the ranked entries, queries sorted by id, each in canonical order.

        Independent of the order of the input lines (or dict entries): the same results give
        the same fingerprint.
        """
        # A stable sort by query id keeps each query's entries in rank order.
        rows = sorted(self._rows(self.scores), key=operator.itemgetter(0))
        return _sha256_lines(f"{q}\t{d}\t{s!r}" for q, d, s in rows)


def ranking_key(scores: FloatArray) -> npt.NDArray[np.float32]:
    """Scores as trec_eval compares them: rounded to 32-bit floats.

    trec_eval keeps each score in a C ``float``, so two scores that differ only beyond float32
    precision (0.1 and 0.1 + 1e-12) tie there, and the tie goes to the larger doc id; pytrec_eval
    behaves the same. Ranking by these keys keeps our order identical to theirs. The Run keeps the
    float64 values (files round-trip exactly); only the order comes from the keys.
    """
    with np.errstate(over="ignore"):  # beyond float32's range is +-inf there too
        return scores.astype(np.float32)


def _in_canonical_order(
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
        order = np.lexsort((-key, _segment_ids(offsets)))
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


def _row(position: Mapping[str, int], item_id: str, what: str) -> int:
    row = position.get(item_id)
    if row is None:
        raise DataFormatError(f"unknown {what} id {item_id!r}")
    return row


@dataclass(frozen=True)
class Document:
    """One corpus document."""

    id: str
    title: str
    text: str


class Corpus:
    """The documents a retriever searches: ids, titles and texts in file order."""

    __slots__ = ("__dict__", "doc_ids", "texts", "titles")

    def __init__(
        self,
        doc_ids: Sequence[str] | StrArray,
        titles: Sequence[str],
        texts: Sequence[str],
        *,
        source: str = "corpus",
    ) -> None:
        ids = doc_ids if isinstance(doc_ids, np.ndarray) else as_str_array(list(doc_ids))
        if not len(ids) == len(titles) == len(texts):
            raise DataFormatError(f"{source}: ids, titles and texts differ in length")
        _check_unique_ids(ids, source, "document")
        self.doc_ids = ids
        self.titles = list(titles)
        self.texts = list(texts)

    @classmethod
    def from_dict(cls, documents: Mapping[str, str | Mapping[str, str]]) -> Corpus:
        """Build from ``{doc_id: text}`` or ``{doc_id: {"title": ..., "text": ...}}``."""
        ids, titles, texts = [], [], []
        for doc_id, value in documents.items():
            ids.append(str(doc_id))
            if isinstance(value, str):
                titles.append("")
                texts.append(value)
            else:
                titles.append(str(value.get("title", "") or ""))
                texts.append(str(value.get("text", "") or ""))
        return cls(ids, titles, texts)

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __iter__(self) -> Iterator[Document]:
        for doc_id, title, text in zip(self.doc_ids.tolist(), self.titles, self.texts, strict=True):
            yield Document(doc_id, title, text)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.position

    def __getitem__(self, doc_id: str) -> Document:
        i = self.position[doc_id]
        return Document(doc_id, self.titles[i], self.texts[i])

    def __repr__(self) -> str:
        return f"Corpus({len(self)} documents)"

    @cached_property
    def position(self) -> dict[str, int]:
        """doc id -> row in this corpus (and in its embedding matrix)."""
        return {doc_id: i for i, doc_id in enumerate(self.doc_ids.tolist())}

    def passages(self, separator: str = " ") -> list[str]:
        """``title + separator + text`` per document, stripped (MTEB's convention)."""
        return [
            (title + separator + text).strip() if title else text.strip()
            for title, text in zip(self.titles, self.texts, strict=True)
        ]

    def subset(self, doc_ids: Iterable[str]) -> Corpus:
        """A corpus of the given documents (in the given order); unknown ids are an error."""
        rows = [_row(self.position, d, "document") for d in doc_ids]
        return Corpus(
            self.doc_ids[rows], [self.titles[i] for i in rows], [self.texts[i] for i in rows]
        )

    @cached_property
    def doc_digests(self) -> dict[str, str]:
        """doc id -> short digest of its title and text, to say which documents changed."""
        return {
            doc_id: hashlib.blake2b(
                f"{title}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=8
            ).hexdigest()
            for doc_id, title, text in zip(
                self.doc_ids.tolist(), self.titles, self.texts, strict=True
            )
        }

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over documents sorted by id: the same texts give the same fingerprint."""
        digests = self.doc_digests
        return _sha256_lines(f"{d}\t{digests[d]}" for d in sorted(digests))

    @cached_property
    def text_fingerprint(self) -> str:
        """sha256 of the exact texts in corpus order (what an embedding matrix depends on)."""
        return _sha256_lines(
            f"{d}\x00{t}\x00{x}"
            for d, t, x in zip(self.doc_ids.tolist(), self.titles, self.texts, strict=True)
        )


class Queries(QueryKeyed):
    """Query ids and texts in file order."""

    __slots__ = ("texts",)

    def __init__(
        self, query_ids: Sequence[str] | StrArray, texts: Sequence[str], *, source: str = "queries"
    ) -> None:
        ids = query_ids if isinstance(query_ids, np.ndarray) else as_str_array(list(query_ids))
        if len(ids) != len(texts):
            raise DataFormatError(f"{source}: ids and texts differ in length")
        _check_unique_ids(ids, source)
        self.query_ids = ids
        self.texts = list(texts)

    @classmethod
    def from_dict(cls, queries: Mapping[str, str]) -> Queries:
        """Build from ``{query_id: text}``."""
        return cls([str(q) for q in queries], [str(t) for t in queries.values()])

    def __getitem__(self, query_id: str) -> str:
        return self.texts[self.position[query_id]]

    def __repr__(self) -> str:
        return f"Queries({len(self)} queries)"

    def items(self) -> Iterator[tuple[str, str]]:
        return zip(self.query_ids.tolist(), self.texts, strict=True)

    @property
    def position(self) -> dict[str, int]:
        """query id -> row (in ``query_ids`` and ``texts``)."""
        return self._position

    def subset(self, query_ids: Iterable[str]) -> Queries:
        """The given queries, in the given order (unknown ids are an error)."""
        rows = [_row(self.position, q, "query") for q in query_ids]
        return Queries(self.query_ids[rows], [self.texts[i] for i in rows])

    @cached_property
    def fingerprint(self) -> str:
        return _sha256_lines(f"{q}\t{t}" for q, t in sorted(self.items()))


@dataclass
class Dataset:
    """A corpus, its queries and their relevance judgments, plus where they came from."""

    corpus: Corpus
    queries: Queries
    qrels: Qrels
    name: str = "dataset"
    split: str = "test"
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fingerprints(self) -> dict[str, str]:
        """Separate fingerprints of corpus, queries and qrels."""
        return {
            "corpus": self.corpus.fingerprint,
            "queries": self.queries.fingerprint,
            "qrels": self.qrels.fingerprint,
        }

    @property
    def fingerprint(self) -> str:
        """One fingerprint over all three parts."""
        parts = self.fingerprints
        return _sha256_lines(f"{k}\t{parts[k]}" for k in sorted(parts))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "split": self.split,
            "documents": len(self.corpus),
            "queries": len(self.queries),
            "judgments": self.qrels.num_judgments,
            **{f"{k}_fingerprint": v for k, v in self.fingerprints.items()},
        }
