"""The review file: a person accepts, rejects or edits each generated query before it is used.

``review.jsonl`` holds one row per query (``query_id``, ``query``, ``relevant`` {doc id: grade},
``style``, ``answer``, ``documents`` to read, ``decision`` null, ``note``). A reviewer sets
``decision`` to ``accept``, ``reject`` or ``edit`` (and changes ``query``, ``answer`` or
``relevant`` as needed: the row's texts are taken as written). ``ragmetrics generate
--apply-review`` rebuilds the folder's queries, qrels and answers from the rows: rejected rows
go, and with ``--accepted-only`` so do rows without a decision. The rows' ``documents`` (and the
``testset`` fingerprint that new rows carry) tie the file to its test set: a review
made for another set (another corpus, another seed) is refused.

What a person writes is applied or refused, never dropped without a word: each row is checked
against the query as generated (the folder's ``generated.jsonl``), so a change in a row without
a decision, a change to a column recording what the generator made (``style``, the text cut
from the source document), a deleted row, a row of a query the set did not generate and a
column no row has are each a DataFormatError naming the file, the line and the query."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.data.textfile import read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.testsets.model import Candidate, normalised, tsv_id_problem

DECISIONS = ("accept", "reject", "edit")
# The columns of a review row: those a person may change (with a decision), those recording what
# the generator made (a change is refused: --apply-review cannot apply it), and the rest.
EDITABLE = ("query", "answer", "relevant")
RECORDED = ("style", "removed_from_source", "echoes_removed_from_source")
COLUMNS = ("query_id", *EDITABLE, *RECORDED, "decision", "note", "documents", "testset")
# The folder's file of the queries as generated, one row each (Candidate.to_dict()), that a
# review is checked against.
GENERATED = "generated.jsonl"


@dataclass(frozen=True)
class ReviewRow:
    candidate: Candidate
    decision: str | None
    line: int
    columns: Mapping[str, Any] = field(default_factory=dict, compare=False)


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
        unknown = [key for key in row if key not in COLUMNS]
        if unknown:
            raise DataFormatError(
                f"query {qid!r}: unknown column {unknown[0]!r}; a review row has the columns "
                f"{', '.join(map(repr, COLUMNS))}: rename it (a misspelt column decides nothing)",
                p,
                line,
            )
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
        # A blank answer is no answer (answers.jsonl gets none for the query).
        answer = answer if answer and answer.strip() else None
        candidate = Candidate(qid, text or "", relevant, style, answer)
        rows.append(ReviewRow(candidate, decision, line, row))
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
                f"{doc_id!r} of {where} (another title or text): {_OTHER_SET}. Or, if a "
                "person changed it here: 'documents' is shown for reading and never applied; "
                "restore the document as generated (a change to the corpus needs a new generate)",
                path,
                line,
            )


@dataclass(frozen=True)
class Generated:
    """The queries of a test set as generated (its folder's generated.jsonl), by id."""

    path: Path
    rows: Mapping[str, Mapping[str, Any]]


def read_generated(path: Path) -> Generated:
    """The rows of a folder's generated.jsonl; one without an id of its own is a
    DataFormatError naming the file and line."""
    rows: dict[str, Mapping[str, Any]] = {}
    for line, row in read_jsonl(path):
        qid = row.get("query_id")
        if not isinstance(qid, str) or qid in rows:
            raise DataFormatError(
                "each row needs a 'query_id' string of its own; ragmetrics generate writes "
                "this file: generate again rather than edit it",
                path,
                line,
            )
        rows[qid] = row
    return Generated(path, rows)


_RECORDS = {
    "style": "the style that made the query",
    "removed_from_source": "the text cut from its document in the folder's corpus copy",
    "echoes_removed_from_source": "the sentences cut besides from that document",
}
_UNCHECKED = (
    f"no {GENERATED} (a folder an earlier version wrote): deleted rows, and changes to rows "
    "without a decision or to recorded columns, could not be told; generate again to have "
    "a review checked"
)


def check_generated(rows: Sequence[ReviewRow], generated: Generated, path: Path) -> list[str]:
    """Refuse what applying the review would lose without a word: a row of a query the set
    did not generate, a change to a recorded column, a change without a decision, a deleted
    row (each a DataFormatError naming the file, line and query). Return notices: rows set to
    ``edit`` that change nothing."""
    notices = []
    for row in rows:
        changed = _changes(row, generated, path)
        if row.decision == "edit" and not changed:
            notices.append(
                f"query {row.candidate.query_id!r} (line {row.line}): decision 'edit' but the "
                "row changes nothing; kept as generated"
            )
    seen = {row.candidate.query_id for row in rows}
    missing = [qid for qid in generated.rows if qid not in seen]
    if missing:
        raise DataFormatError(_deleted(missing, generated.path), path)
    return notices


def _deleted(missing: Sequence[str], source: Path) -> str:
    """What a review without the rows of the generated queries ``missing`` is told."""
    what = "query" if len(missing) == 1 else "queries"
    more = ", ..." if len(missing) > 10 else ""
    return (
        f"the review has no row for {len(missing)} generated {what} "
        f"({', '.join(map(repr, missing[:10]))}{more}): a deleted row decides nothing. Put "
        f'each back ({source} holds the queries as generated) with a decision: "decision": '
        '"reject" drops its query'
    )


def _changes(row: ReviewRow, generated: Generated, path: Path) -> list[str]:
    """The editable columns ``row`` changes from the query as generated; refuses a row the
    set did not generate, a change to a recorded column, and a change without a decision."""
    qid = row.candidate.query_id
    made = generated.rows.get(qid)
    if made is None:
        raise DataFormatError(
            f"query id {qid!r} is not one of this test set's queries ({generated.path}): a "
            "review accepts, rejects or edits the generated queries and adds none; give the row "
            "its generated id back, or remove it",
            path,
            row.line,
        )
    for column in RECORDED:
        if row.columns.get(column) != made.get(column):
            raise DataFormatError(
                f"query {qid!r}: {column!r} records what the generator made "
                f"({_RECORDS[column]}) and --apply-review does not apply it; the row changes it "
                f"from {made.get(column)!r}: restore it (generate again to change it)",
                path,
                row.line,
            )
    changed = [c for c in EDITABLE if row.columns.get(c) != made.get(c)]
    if changed and row.decision is None:
        raise DataFormatError(
            f"query {qid!r}: the row changes {', '.join(map(repr, changed))} but has no "
            'decision: set "decision": "edit" to apply the change, or restore the row as '
            f"generated ({generated.path}) to leave it undecided",
            path,
            row.line,
        )
    return changed


def apply_review(
    rows: Sequence[ReviewRow],
    path: str | Path,
    *,
    accepted_only: bool = False,
    generated: Generated | None = None,
) -> tuple[list[Candidate], dict[str, Any]]:
    """The queries the review keeps, in file order, and what it decided (for provenance).
    Checked against ``generated`` (:func:`check_generated`) when given; the summary's
    ``notices`` say what a person may want to know (and, without ``generated``, what could
    not be checked)."""
    notices = check_generated(rows, generated, Path(path)) if generated else [_UNCHECKED]
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
    if notices:
        summary["notices"] = notices
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
