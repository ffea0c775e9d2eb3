"""Judged rankings: a ranking per query together with its own relevance grades."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_ragmetrics.data.model import Qrels, Run
from pytest_ragmetrics.data.textfile import PathLike, read_jsonl, require_str, resolve
from pytest_ragmetrics.data.trec import parse_grade
from pytest_ragmetrics.errors import DataFormatError


@dataclass(frozen=True)
class JudgedRankings:
    """Rankings (best first) with the grades judges gave them, evaluable on their own."""

    run: Run
    qrels: Qrels
    source: str | None = None

    @classmethod
    def from_dict(
        cls, rankings: Mapping[str, Sequence[str]], grades: Mapping[str, Mapping[str, int]]
    ) -> JudgedRankings:
        """Build from ``{query_id: [doc_id, ...]}`` and ``{query_id: {doc_id: grade}}``."""
        return cls(Run.from_rankings(rankings), Qrels.from_dict(grades))

    def __len__(self) -> int:
        return len(self.run)


def read_judged_rankings(path: PathLike) -> JudgedRankings:
    """Read JSONL lines ``{"query_id": ..., "ranking": [ids], "grades": {id: grade}}``."""
    p = resolve(path)
    rankings: dict[str, list[str]] = {}
    grades: dict[str, dict[str, int]] = {}
    for lineno, record in read_jsonl(p):
        qid = require_str(record, ("query_id", "qid", "_id"), p, lineno, what="query id")
        if qid in rankings:
            raise DataFormatError(f"query {qid!r} appears twice", p, lineno)
        ranking = record.get("ranking")
        if not isinstance(ranking, list) or not all(isinstance(d, str) for d in ranking):
            raise DataFormatError("'ranking' must be a list of document ids", p, lineno)
        if len(set(ranking)) != len(ranking):
            dup = next(d for i, d in enumerate(ranking) if d in ranking[:i])
            raise DataFormatError(
                f"document {dup!r} appears twice in the ranking of query {qid!r}", p, lineno
            )
        raw_grades = record.get("grades", {})
        if not isinstance(raw_grades, dict):
            raise DataFormatError("'grades' must be an object {doc_id: grade}", p, lineno)
        query_grades: dict[str, int] = {}
        for doc, grade in raw_grades.items():
            if isinstance(grade, bool) or not isinstance(grade, (int, float, str)):
                raise DataFormatError(
                    f"grade {grade!r} of document {doc!r} is not an integer", p, lineno
                )
            query_grades[doc] = parse_grade(str(grade), p, lineno)
        rankings[qid] = ranking
        grades[qid] = query_grades
    if not rankings:
        raise DataFormatError("no judged rankings in file (it is empty)", p)
    return JudgedRankings(Run.from_rankings(rankings), Qrels.from_dict(grades), source=str(p))
