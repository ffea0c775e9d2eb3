"""The review file: a person accepts, rejects or edits each generated query before it is used.

``review.jsonl`` holds one row per query (``query_id``, ``query``, ``relevant`` {doc id: grade},
``style``, ``answer``, ``documents`` to read, ``decision`` null, ``note``). A reviewer sets
``decision`` to ``accept``, ``reject`` or ``edit`` (and changes ``query``, ``answer`` or
``relevant`` as needed: the row's texts are taken as written). ``ragmetrics generate
--apply-review`` rebuilds the folder's queries, qrels and answers from the rows: rejected rows
go, and with ``--accepted-only`` so do rows without a decision.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.data.textfile import read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.testsets.model import Candidate

DECISIONS = ("accept", "reject", "edit")


@dataclass(frozen=True)
class ReviewRow:
    candidate: Candidate
    decision: str | None
    line: int


def _text(row: Mapping[str, Any], key: str, path: Path, line: int, *, required: bool) -> str | None:
    value = row.get(key)
    if value is None and not required:
        return None
    if not isinstance(value, str) or (required and not value.strip()):
        raise DataFormatError(f"{key!r} must be a non-empty string, got {value!r}", path, line)
    return value


def _relevant(row: Mapping[str, Any], path: Path, line: int) -> tuple[tuple[str, int], ...]:
    value = row.get("relevant")
    if not isinstance(value, dict) or not value:
        raise DataFormatError(
            "'relevant' must be an object {document id: grade} naming at least one document",
            path,
            line,
        )
    pairs = []
    for doc, grade in value.items():
        if isinstance(grade, bool) or not isinstance(grade, int) or not 0 <= grade <= 2**31 - 1:
            raise DataFormatError(
                f"the grade of document {doc!r} must be a non-negative integer", path, line
            )
        pairs.append((str(doc), grade))
    return tuple(pairs)


def read_review(path: str | Path, corpus: Corpus) -> list[ReviewRow]:
    """The rows of a review file; a malformed row, an unknown decision, a query id given
    twice or a document not in ``corpus`` is a DataFormatError naming the file and line."""
    p = resolve(path)
    rows: list[ReviewRow] = []
    first: dict[str, int] = {}
    for line, row in read_jsonl(p):
        qid = _text(row, "query_id", p, line, required=True)
        assert qid is not None
        if qid in first:
            raise DataFormatError(f"query id {qid!r} already on line {first[qid]}", p, line)
        first[qid] = line
        decision = row.get("decision")
        if decision is not None and decision not in DECISIONS:
            raise DataFormatError(
                f"'decision' must be {', '.join(DECISIONS)} or null, got {decision!r}", p, line
            )
        relevant = _relevant(row, p, line)
        for doc, _ in relevant:
            if doc not in corpus:
                raise DataFormatError(
                    f"query {qid!r}: document {doc!r} is not in the corpus", p, line
                )
        text = _text(row, "query", p, line, required=decision != "reject")
        answer = _text(row, "answer", p, line, required=False)
        style = _text(row, "style", p, line, required=False) or "reviewed"
        candidate = Candidate(qid, text or "", relevant, style, answer or None)
        rows.append(ReviewRow(candidate, decision, line))
    if not rows:
        raise DataFormatError("the review file is empty", p)
    return rows


def apply_review(
    rows: Sequence[ReviewRow], path: str | Path, *, accepted_only: bool = False
) -> tuple[list[Candidate], dict[str, Any]]:
    """The queries the review keeps, in file order, and what it decided (for provenance)."""
    counts = {d: sum(1 for r in rows if r.decision == d) for d in DECISIONS}
    counts["undecided"] = sum(1 for r in rows if r.decision is None)
    keep = [
        r.candidate
        for r in rows
        if r.decision != "reject" and (r.decision is not None or not accepted_only)
    ]
    summary = {
        "file": Path(path).name,
        "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
        "accepted_only": accepted_only,
        **counts,
        "kept": len(keep),
    }
    return keep, summary
