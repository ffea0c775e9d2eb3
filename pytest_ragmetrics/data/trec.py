"""TREC qrels and run files: read and write."""

from __future__ import annotations

import contextlib
import math
import re
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from pytest_ragmetrics.data.model import GRADE_RANGE_HINT, MAX_GRADE, MIN_GRADE, Qrels, Run
from pytest_ragmetrics.data.scores import rank_column_contradiction
from pytest_ragmetrics.data.textfile import PathLike, read_lines, resolve, split_fields
from pytest_ragmetrics.errors import DataFormatError, ScoreOrderWarning, how_to_silence
from pytest_ragmetrics.fileio import atomic_write_text
from pytest_ragmetrics.values import python_only

_NANS = ("nan", "+nan", "-nan")


_ZERO_FRACTION = re.compile(r"[+-]?[0-9]+\.0*")


def parse_grade(token: str, path: PathLike, line: int) -> int:
    """An integer grade, or an error naming file and line."""
    if python_only(token):
        raise DataFormatError(
            f"grade {token!r} is not an integer in ASCII digits (trec_eval would read it "
            "differently)",
            path,
            line,
        )
    try:
        grade = int(token)
    except ValueError:
        # "2.0" is 2 for trec_eval (atol) as for us; "1e1" is 1 for atol but 10 for float().
        if not _ZERO_FRACTION.fullmatch(token.strip()):
            lead = re.match(r"\s*[+-]?[0-9]+", token)
            why = f" (trec_eval would read its leading digits, {lead[0].strip()})" if lead else ""
            raise DataFormatError(f"grade {token!r} is not an integer{why}", path, line) from None
        grade = int(float(token))
    if not MIN_GRADE <= grade <= MAX_GRADE:
        raise DataFormatError(f"grade {token!r} is out of range; {GRADE_RANGE_HINT}", path, line)
    return grade


QrelsColumns = Literal["auto", "pairs"]
# A BEIR header's first column, compared case-folded ("Query-ID" too).
_HEADER_FIRST = {"query-id", "query_id", "queryid", "query", "qid"}


def _is_header(fields: Sequence[str]) -> bool:
    """Whether a qrels file's first line is a BEIR header ("query-id corpus-id score"): three
    columns, a query column's name first, and no digit in the last (a judgment's grade has one,
    so a query called "qid" is judged, not skipped)."""
    return (
        len(fields) == 3
        and fields[0].casefold() in _HEADER_FIRST
        and not any(c.isdigit() for c in fields[2])
    )


def read_qrels(
    path: PathLike,
    *,
    layout: str = "auto",
    columns: QrelsColumns = "auto",
    grades: Mapping[int, int | None] | None = None,
    query_ids: Callable[[str], str] | None = None,
    encoding: str = "utf-8",
    comments: bool = False,
) -> Qrels:
    """Read TREC qrels (``qid iter docno grade``) or BEIR qrels TSV (``qid docno grade``).

    A BEIR header line (``query-id corpus-id score``) is skipped. In a BEIR file (one with that
    header, or ``layout="beir"``) whose lines hold tabs, fields are separated by tabs only, so
    ids may contain spaces, as BEIR's own reader allows; otherwise fields are separated by
    ASCII spaces and tabs, as trec_eval reads them (a no-break space stays inside its id). A
    (query, doc) pair judged twice is an error, as in trec_eval. The keywords serve
    collections with other habits:

    - ``columns="pairs"``: lines ``qid docno [anything ...]`` list relevant pairs (grade 1),
      as some SMART collections' files do (CISI's ``CISI.REL`` writes ``1 28 0 0.000000``,
      which the 4-column TREC rule would misread as document ``0``).
    - ``grades``: code in the file -> grade; ``None`` drops the judgment. A code missing from
      the mapping is an error (Cranfield's inverted scale: ``{1: 4, 2: 3, 3: 2, 4: 1, -1: 0}``).
    - ``query_ids``: turns a query id of the file into the dataset's id; a ``LookupError`` or
      ``ValueError`` it raises becomes an error naming the line.
    - ``comments=True``: lines starting with ``#`` are skipped (supplementary qrels' header;
      trec_eval itself reads no comments, so plain qrels never have them).
    """
    if layout not in ("auto", "trec", "beir"):
        raise ValueError(f"layout must be 'auto', 'trec' or 'beir', got {layout!r}")
    p = resolve(path)
    by_query: dict[str, dict[str, int]] = {}
    seen_line: dict[tuple[str, str], int] = {}
    for lineno, qid, doc, grade in _qrels_rows(p, _QrelsLines(layout, columns), encoding, comments):
        if query_ids is not None:
            qid = _renamed(query_ids, qid, p, lineno)
        key = (qid, doc)
        if key in seen_line:
            raise DataFormatError(
                f"document {doc!r} is judged twice for query {qid!r} (first at line "
                f"{seen_line[key]})",
                p,
                lineno,
            )
        seen_line[key] = lineno
        mapped = grade if grades is None else _mapped_grade(grades, grade, p, lineno)
        if mapped is not None:
            by_query.setdefault(qid, {})[doc] = mapped
    if not by_query:
        if seen_line:
            raise DataFormatError("the grade mapping dropped every judgment of this file", p)
        raise DataFormatError("no judgments in qrels file (it is empty)", p)
    return Qrels.from_dict(by_query)


def _qrels_rows(
    path: Path, splitter: _QrelsLines, encoding: str, comments: bool
) -> Iterator[tuple[int, str, str, int]]:
    """(line number, query id, doc id, grade) of every judgment line of a qrels file: no BEIR
    header, no ``#`` comment with ``comments``."""
    for lineno, text in read_lines(path, encoding):
        if comments and text.startswith("#"):
            continue
        row = splitter.row(text, path, lineno)
        if row is not None:  # None: the BEIR header
            yield (lineno, *row)


class _QrelsLines:
    """Splits qrels lines into (query id, doc id, grade); the first line with a tab, or the
    first judgment, settles whether fields are separated by tabs only, and for graded lines
    the first judgment how many columns every line has."""

    def __init__(self, layout: str, columns: QrelsColumns) -> None:
        self.layout = layout
        self.columns = columns
        self.tabs: bool | None = None
        self.header: bool | None = None  # whether the first line was a BEIR header
        self.width = 0

    def row(self, text: str, path: PathLike, lineno: int) -> tuple[str, str, int] | None:
        """The judgment on this line; None for a BEIR header (the first non-blank line)."""
        starts = self.header is None
        if starts:
            first = split_fields(text)
            self.header = _is_header(first)
        if self.tabs is None and (not starts or not self.header or "\t" in text):
            # A header written with spaces leaves it to the first judgment (a BEIR file whose
            # rows hold "doc 1" between tabs would else be read as document "1").
            tabbed = self.layout != "trec" and (self.header or self.layout == "beir")
            self.tabs = "\t" in text and tabbed
        if starts and self.header:
            return None
        fields = [f.strip(" ") for f in text.split("\t")] if self.tabs else split_fields(text)
        if not all(fields):
            raise DataFormatError("an empty field (two tabs in a row?)", path, lineno)
        if self.tabs and len(fields) == 1 and len(split_fields(text)) > 1:
            raise DataFormatError(
                "no tab on this line: in a BEIR qrels file with tabs, as its first lines have, "
                "fields are separated by tabs only (ids may hold spaces)",
                path,
                lineno,
            )
        if self.columns == "pairs":
            if len(fields) < 2:
                raise DataFormatError(
                    f"expected 'qid docno' (relevant pairs), got {len(fields)} column",
                    path,
                    lineno,
                )
            return fields[0], fields[1], 1
        if self.width == 0:
            self.width = len(fields)
            if self.width not in (3, 4):
                raise DataFormatError(
                    f"expected 4 columns 'qid iter docno grade' (TREC) or 3 columns "
                    f"'qid docno grade' (BEIR), got {len(fields)}",
                    path,
                    lineno,
                )
        if len(fields) != self.width:
            raise DataFormatError(
                f"expected {self.width} columns like the first line, got {len(fields)}",
                path,
                lineno,
            )
        return fields[0], fields[self.width - 2], parse_grade(fields[-1], path, lineno)


def _renamed(query_ids: Callable[[str], str], qid: str, path: PathLike, lineno: int) -> str:
    """The dataset's id of a file's query id; the mapping's LookupError or ValueError names the
    line."""
    try:
        return query_ids(qid)
    except (LookupError, ValueError) as exc:
        reason = exc.args[0] if exc.args else str(exc)
        raise DataFormatError(str(reason), path, lineno) from None


def _mapped_grade(
    grades: Mapping[int, int | None], grade: int, path: PathLike, lineno: int
) -> int | None:
    """The grade a code of the file maps to (None: dropped); an unmapped code is an error."""
    if grade not in grades:
        known = ", ".join(str(code) for code in grades)
        raise DataFormatError(
            f"grade {grade} has no entry in the grade mapping (it maps {known})", path, lineno
        )
    return grades[grade]


def read_run(path: PathLike) -> Run:
    """Read a TREC run (``qid Q0 docno rank score tag [ignored ...]``).

    As trec_eval does, the rank column is ignored, whatever it holds, and so is what follows
    the tag: documents are ranked by score descending, ties by document id. A file whose
    scores rise from rank 1 down for most queries (distances written as scores) is read the
    same way, with a :class:`ScoreOrderWarning` saying so. A line of fewer than six columns
    is an error (trec_eval's "Malformed line"), and so is a second tag: one file is one
    system's run (trec_eval keeps the last line's tag unchecked, so two runs concatenated
    would be read as one).
    """
    p = resolve(path)
    by_query: dict[str, dict[str, float]] = {}
    ranks: list[tuple[str, int, float]] = []
    seen_line: dict[tuple[str, str], int] = {}
    first_tag: tuple[str, int] | None = None  # the tag and the line that set it
    for lineno, text in read_lines(p):
        fields = _run_fields(text, p, lineno)
        first_tag = first_tag or (fields[5], lineno)
        if fields[5] != first_tag[0]:
            raise DataFormatError(
                f"run tag {fields[5]!r} where line {first_tag[1]} has {first_tag[0]!r}: a run "
                "file holds one system's run (two runs concatenated?); split the file, or give "
                "every line one tag",
                p,
                lineno,
            )
        qid, doc, score = fields[0], fields[2], _run_score(fields[4], p, lineno)
        docs = by_query.setdefault(qid, {})
        if doc in docs:
            raise DataFormatError(
                f"document {doc!r} appears twice for query {qid!r} (first at line "
                f"{seen_line[(qid, doc)]})",
                p,
                lineno,
            )
        seen_line[(qid, doc)] = lineno
        docs[doc] = score
        with contextlib.suppress(ValueError):
            ranks.append((qid, int(fields[3]), score))
    if not by_query:
        raise DataFormatError("no results in run file (it is empty)", p)
    _warn_on_rank_column(ranks, p)
    return Run.from_dict(by_query, scores="similarity")  # trec_eval's rule: by score


def _run_fields(text: str, path: Path, lineno: int) -> list[str]:
    """The fields of a run line, or an error naming the line. As trec_eval does, a line of
    fewer than six is refused ("Malformed line": a five-column line has no tag) and what
    follows the tag is not read (trec_eval's own results.trunc has words there)."""
    fields = split_fields(text)
    if len(fields) < 6:
        why = " (no run tag? trec_eval refuses such a line too)" if len(fields) == 5 else ""
        raise DataFormatError(
            f"expected 'qid Q0 docno rank score tag', got {len(fields)} columns{why}",
            path,
            lineno,
        )
    return fields


def _run_score(token: str, path: Path, lineno: int) -> float:
    """A run line's score: a finite number in ASCII digits, as trec_eval reads it."""
    try:
        score = math.nan if python_only(token) else float(token)
    except ValueError:
        score = math.nan
    if math.isnan(score) and token.lower() not in _NANS:
        raise DataFormatError(
            f"score {token!r} is not a number in ASCII digits, as trec_eval reads them (e.g. "
            "0.5, -1.25e-3)",
            path,
            lineno,
        )
    if not math.isfinite(score):
        raise DataFormatError(f"score {token!r} is not a finite number", path, lineno)
    return score


def _warn_on_rank_column(ranks: list[tuple[str, int, float]], path: PathLike) -> None:
    found = rank_column_contradiction(ranks)
    if found is not None:
        warnings.warn(
            f"{path}: from rank 1 down, the scores rise in {found.contradicting} of "
            f"{found.counted} queries (e.g. {found.example_query!r}); as trec_eval does, the rank "
            "column is ignored and documents are ranked by score descending (ties by document "
            "id), which reverses the file's order. If its scores are distances, write negated "
            "scores (Run.from_dict(..., scores='distance') negates them). "
            + how_to_silence(ScoreOrderWarning),
            ScoreOrderWarning,
            stacklevel=3,
        )


def run_tag(path: PathLike) -> str | None:
    """The tag (sixth column) of a TREC run's first line: the system's name; None if none."""
    for _, text in read_lines(resolve(path)):
        fields = split_fields(text)
        return fields[5] if len(fields) > 5 else None
    return None


def format_run(run: Run, tag: str = "ragmetrics") -> Iterable[str]:
    """Lines of a TREC run, ranks 1.. in canonical order."""
    tag = re.sub(r"\s", "_", tag) or "ragmetrics"  # one column: no space, tab or line break
    doc_ids = run.doc_ids
    for i, qid in enumerate(run.query_ids.tolist()):
        lo, hi = int(run.offsets[i]), int(run.offsets[i + 1])
        docs = doc_ids[run.doc_codes[lo:hi]].tolist()
        scores = run.scores[lo:hi].tolist()
        for rank, (doc, score) in enumerate(zip(docs, scores, strict=True), start=1):
            yield f"{qid} Q0 {doc} {rank} {score!r} {tag}\n"


def write_run(run: Run, path: PathLike, tag: str = "ragmetrics") -> None:
    """Write a TREC run atomically."""
    _check_ids_writable(run.query_ids, "query")
    _check_ids_writable(run.doc_ids, "document")
    atomic_write_text(path, "".join(format_run(run, tag)))


def write_qrels(qrels: Qrels, path: PathLike) -> None:
    """Write TREC qrels (``qid 0 docno grade``) atomically."""
    _check_ids_writable(qrels.query_ids, "query")
    _check_ids_writable(qrels.doc_ids, "document")
    lines = []
    for qid in qrels:
        for doc, grade in qrels.judgments(qid).items():
            lines.append(f"{qid} 0 {doc} {grade}\n")
    atomic_write_text(path, "".join(lines))


def _check_ids_writable(ids: np.ndarray, what: str) -> None:
    for value in ids.tolist():
        if not value or any(ch in " \t\n\r\f\v" for ch in value):
            raise DataFormatError(
                f"{what} id {value!r} is empty or contains whitespace (a space, tab or line "
                "break); TREC files cannot hold it"
            )
