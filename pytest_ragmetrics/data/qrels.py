"""Relevance judgments: query id -> document id -> integer grade."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cached_property

import numpy as np

from pytest_ragmetrics.data.arrays import (
    Entries,
    IntArray,
    as_str_array,
    check_no_duplicate_docs,
    check_unique_ids,
    encode_ids,
    require_nested_mapping,
    segment_ids,
    sha256_lines,
)
from pytest_ragmetrics.data.segments import QuerySegments
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.twins import same_class
from pytest_ragmetrics.values import shown


class Qrels(QuerySegments):
    """Relevance judgments: query id -> document id -> integer grade, stored as CSR arrays."""

    __slots__ = ("grades",)

    def __init__(self, entries: Entries, grades: IntArray, *, validate: bool = True) -> None:
        super().__init__(entries)
        self.grades = grades
        if validate:
            check_unique_ids(entries.query_ids, "qrels")
            check_no_duplicate_docs(entries, "qrels")

    @classmethod
    def from_dict(cls, judgments: Qrels | Mapping[str, Mapping[str, int]]) -> Qrels:
        """Build from ``{query_id: {doc_id: grade}}``; grades must be integers (Qrels are
        returned as they are)."""
        if isinstance(judgments, Qrels):
            return judgments
        if same_class(judgments, Qrels):  # from another import of this module: a copy of ours
            j = judgments
            return cls(j.entries, j.grades, validate=False)
        require_nested_mapping(judgments, "qrels", "{query_id: {doc_id: grade}}")
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
        return cls(Entries(as_str_array(query_ids), offsets, vocab, codes), grades)

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
        seg = segment_ids(self.offsets)
        relevant = (self.grades >= relevance_level).astype(np.int64)
        return np.bincount(seg, weights=relevant, minlength=len(self)).astype(np.int64)

    def restrict(self, query_ids: Iterable[str]) -> Qrels:
        """The judgments of the given queries only (unknown ids are ignored)."""
        rows, offsets, take = self._select(dict.fromkeys(query_ids))
        # A vocabulary of the documents kept, in order of first use, as from_dict makes it.
        vocab, codes, _ = encode_ids([self.doc_ids[self.doc_codes[take]].tolist()])
        kept = Entries(as_str_array(self.query_ids[rows].tolist()), offsets, vocab, codes)
        return Qrels(kept, self.grades[take])

    @cached_property
    def fingerprint(self) -> str:
        """sha256 of the judgments, independent of their order in the file."""
        return sha256_lines(f"{q}\t{d}\t{g}" for q, d, g in sorted(self._rows(self.grades)))


# Grades are C ints in trec_eval and pytrec_eval; larger ones are typos, not judgments.
MIN_GRADE, MAX_GRADE = -(2**31), 2**31 - 1
GRADE_RANGE_HINT = f"grades must be integers from {MIN_GRADE} to {MAX_GRADE}"


def _as_grade(grade: object, query_id: str, doc_id: str) -> int:
    where = f"qrels: grade {shown(grade)} of query {query_id!r}, document {doc_id!r}"
    if isinstance(grade, bool) or not isinstance(grade, (int, np.integer, float, np.floating)):
        raise DataFormatError(f"{where} is not an integer")
    if isinstance(grade, (float, np.floating)) and not float(grade).is_integer():
        raise DataFormatError(f"{where} is not an integer")
    value = int(grade)
    if not MIN_GRADE <= value <= MAX_GRADE:
        raise DataFormatError(f"{where} is out of range; {GRADE_RANGE_HINT}")
    return value
