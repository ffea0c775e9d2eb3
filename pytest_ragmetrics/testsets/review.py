"""The review file: a person accepts, rejects or edits each generated query before it is used.

``review.jsonl`` holds one row per query (``query_id``, ``query``, ``relevant`` {doc id: grade},
``style``, ``answer``, ``documents`` to read, ``decision`` null, ``note``). A reviewer sets
``decision`` to ``accept``, ``reject`` or ``edit`` (and changes ``query``, ``answer`` or
``relevant`` as needed: the row's texts are taken as written). ``ragmetrics generate
--apply-review`` rebuilds the folder's queries, qrels and answers from the rows: rejected rows
go, and with ``--accepted-only`` so do rows without a decision. The rows' ``documents`` (and the
``testset`` fingerprint that new rows carry) tie the file to its test set: a review
made for another set (another corpus, another seed) is refused.
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
from pytest_ragmetrics.testsets.model import Candidate, normalised, tsv_id_problem

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


def read_review(
    path: str | Path, corpus: Corpus, *, fingerprint: str | None = None, where: str = "the corpus"
) -> list[ReviewRow]:
    """The rows of a review file; a malformed row, an unknown decision, a query id given
    twice, an id a qrels TSV cannot hold or a document not in ``corpus`` (``where``: how to
    name it) is a DataFormatError naming the file and line. So is a row made for another test
    set: one whose ``documents`` differ from ``corpus``'s, or whose ``testset`` fingerprint is
    not ``fingerprint`` (the folder's; None: not compared)."""
    p = resolve(path)
    rows: list[ReviewRow] = []
    first: dict[str, int] = {}
    for line, row in read_jsonl(p):
        qid = _text(row, "query_id", p, line, required=True)
        assert qid is not None
        _check_id(qid, "query id", qid, p, line)
        if qid in first:
            raise DataFormatError(f"query id {qid!r} already on line {first[qid]}", p, line)
        first[qid] = line
        decision = row.get("decision")
        if decision is not None and decision not in DECISIONS:
            raise DataFormatError(
                f"'decision' must be {', '.join(DECISIONS)} or null, got {decision!r}", p, line
            )
        _check_same_set(row, qid, corpus, fingerprint, where, p, line)
        relevant = _relevant(row, p, line)
        for doc, _ in relevant:
            if doc not in corpus:
                raise DataFormatError(f"query {qid!r}: document {doc!r} is not in {where}", p, line)
            _check_id(doc, "document id", qid, p, line)
        text = _text(row, "query", p, line, required=decision != "reject")
        answer = _text(row, "answer", p, line, required=False)
        style = _text(row, "style", p, line, required=False) or "reviewed"
        candidate = Candidate(qid, text or "", relevant, style, answer or None)
        rows.append(ReviewRow(candidate, decision, line))
    if not rows:
        raise DataFormatError("the review file is empty", p)
    return rows


def _check_id(value: str, what: str, qid: str, path: Path, line: int) -> None:
    problem = tsv_id_problem(value)
    if problem:
        raise DataFormatError(f"query {qid!r}: {what} {value!r} {problem}", path, line)


_OTHER_SET = (
    "this review was made for another test set; apply the review.jsonl written with this "
    "folder's test set"
)


def _check_same_set(
    row: Mapping[str, Any],
    qid: str,
    corpus: Corpus,
    fingerprint: str | None,
    where: str,
    path: Path,
    line: int,
) -> None:
    """Refuse a row of another test set: its fingerprint (when it has one) is not the
    folder's, or a document it shows is not the one of that id in ``corpus``. A row written
    without a fingerprint (by an earlier version) is known by its documents alone."""
    own = row.get("testset")
    if own is not None and not isinstance(own, str):
        raise DataFormatError(f"query {qid!r}: 'testset' must be a string", path, line)
    if own is not None and fingerprint is not None and own != fingerprint:
        raise DataFormatError(
            f"query {qid!r}: the row's testset fingerprint {own[:12]}... is not the folder's "
            f"({fingerprint[:12]}..., dataset.json provenance.testset_fingerprint): {_OTHER_SET}",
            path,
            line,
        )
    documents = row.get("documents", [])
    if not isinstance(documents, list):
        raise DataFormatError(f"query {qid!r}: 'documents' must be a list", path, line)
    for shown in documents:
        doc_id = shown.get("id") if isinstance(shown, dict) else None
        if not isinstance(doc_id, str):
            raise DataFormatError(
                f"query {qid!r}: each of 'documents' must be an object with an 'id'", path, line
            )
        if doc_id not in corpus:
            raise DataFormatError(
                f"query {qid!r}: document {doc_id!r} (in 'documents') is not in {where}: "
                f"{_OTHER_SET}",
                path,
                line,
            )
        doc = corpus[doc_id]
        if (shown.get("title"), shown.get("text")) != (doc.title, doc.text):
            raise DataFormatError(
                f"query {qid!r}: document {doc_id!r} as the row shows it is not the document "
                f"{doc_id!r} of {where} (another title or text): {_OTHER_SET}",
                path,
                line,
            )


def apply_review(
    rows: Sequence[ReviewRow], path: str | Path, *, accepted_only: bool = False
) -> tuple[list[Candidate], dict[str, Any]]:
    """The queries the review keeps, in file order, and what it decided (for provenance)."""
    counts = {d: sum(1 for r in rows if r.decision == d) for d in DECISIONS}
    counts["undecided"] = sum(1 for r in rows if r.decision is None)
    kept_rows = [
        r for r in rows if r.decision != "reject" and (r.decision is not None or not accepted_only)
    ]
    _refuse_duplicates(kept_rows, Path(path))
    keep = [r.candidate for r in kept_rows]
    summary = {
        "file": Path(path).name,
        "sha256": hashlib.sha256(Path(path).read_bytes()).hexdigest(),
        "accepted_only": accepted_only,
        **counts,
        "kept": len(keep),
    }
    return keep, summary


def _refuse_duplicates(rows: Sequence[ReviewRow], path: Path) -> None:
    """A DataFormatError when two kept rows ask the same query (case, punctuation and spacing
    aside): an edit made one the other's twin, and their qrels would contradict each other
    (generate merges such twins into one query relevant to both documents)."""
    first: dict[str, ReviewRow] = {}
    for row in rows:
        key = normalised(row.candidate.text)
        if key in first:
            earlier = first[key]
            raise DataFormatError(
                f"query {row.candidate.query_id!r} asks what query "
                f"{earlier.candidate.query_id!r} (line {earlier.line}) asks: "
                f"{row.candidate.text!r}; their relevant documents would contradict each "
                "other. Make one row of them listing both relevant documents, or reject one",
                path,
                row.line,
            )
        first[key] = row
