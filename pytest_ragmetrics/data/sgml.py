"""TREC SGML: documents (``<DOC><DOCNO>...</DOCNO><TEXT>...</TEXT></DOC>``, as on the TREC disks)
and topics (``<top><num> Number: 301 <title> ... <desc> Description: ... </top>``).

Tags are matched case-insensitively and may carry attributes (``<DOC id="x">``, ``<F P=105>``).
In documents, text inside the title and text elements is kept (markup inside them is dropped,
``&amp;``-style entities are decoded); everything else between ``<DOC>`` and ``</DOC>`` is
ignored. Topic fields have no closing tags: each runs until the next tag.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

from pytest_ragmetrics.data.fields import (
    TextRecord,
    clean_block,
    corpus_from_records,
    one_line,
    path_list,
    queries_from_records,
)
from pytest_ragmetrics.data.model import Corpus, Queries
from pytest_ragmetrics.data.textfile import PathLike, read_lines, resolve
from pytest_ragmetrics.errors import DataFormatError

DOCUMENT_TITLE_TAGS = ("HEAD", "HEADLINE", "TITLE", "HL")
DOCUMENT_TEXT_TAGS = ("TEXT",)
TOPIC_FIELDS = ("title",)

# An element tag: <NAME attributes>, </NAME>. Declarations and comments (<?xml ...?>, <!-- -->)
# are removed first.
_TAG = re.compile(r"<(/?)\s*([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>")
_DECLARATION = re.compile(r"<[!?][^<>]*>")
# The labels TREC topics put at the start of a field ("Number: 301", "Description:").
_LABEL = re.compile(
    r"^\s*(?:number|topic|title|description|narrative|summary|domain|nationality|"
    r"concepts?|concept\(s\)|definitions?|definition\(s\)|factors?|factor\(s\))\s*:",
    re.IGNORECASE,
)


def _events(path: PathLike, encoding: str) -> Iterator[tuple[int, str | None, bool, str]]:
    """(line, tag name or None for text, is a closing tag, text) in document order.

    Every line ends with a newline text event, so multi-line elements keep their lines.
    """
    for lineno, line in read_lines(path, encoding):
        line = _DECLARATION.sub("", line)
        pos = 0
        for match in _TAG.finditer(line):
            if match.start() > pos:
                yield lineno, None, False, line[pos : match.start()]
            yield lineno, match.group(2).upper(), match.group(1) == "/", ""
            pos = match.end()
        yield lineno, None, False, line[pos:] + "\n"


@dataclass
class _Open:
    """An element being collected: its name, where it opened, its text so far."""

    name: str
    line: int
    depth: int = 1
    parts: list[str] = field(default_factory=list)

    def value(self) -> str:
        return html.unescape(clean_block("".join(self.parts)))


def parse_trec_documents(
    path: PathLike,
    *,
    title_tags: Sequence[str] = DOCUMENT_TITLE_TAGS,
    text_tags: Sequence[str] = DOCUMENT_TEXT_TAGS,
    encoding: str = "utf-8",
    first_seen: dict[str, tuple[str, int]] | None = None,
) -> list[TextRecord]:
    """The ``<DOC>`` records of one file, in file order.

    Errors (with file:line): a ``<DOC>`` inside another or never closed, ``</DOC>`` without
    ``<DOC>``, a title or text element not closed before ``</DOC>``, a document without a
    ``<DOCNO>`` or with two, an empty DOCNO or one containing spaces, a DOCNO seen before
    (also in another file, through ``first_seen``), text outside any ``<DOC>``, and a file
    without documents.
    """
    p = resolve(path)
    seen = {} if first_seen is None else first_seen
    kept = {t.upper() for t in (*title_tags, *text_tags)}
    records: list[TextRecord] = []
    doc_line: int | None = None
    docno: str | None = None
    docno_line = 0
    fields: dict[str, list[str]] = {}
    current: _Open | None = None
    for lineno, tag, closing, text in _events(p, encoding):
        if tag is None:
            if current is not None:
                current.parts.append(text)
            elif doc_line is None and text.strip():
                raise DataFormatError(
                    f"text outside <DOC>...</DOC>: {text.strip()[:40]!r}", p, lineno
                )
        elif tag == "DOC" and not closing:
            if doc_line is not None:
                raise DataFormatError(
                    f"<DOC> inside the <DOC> opened at line {doc_line}; is a </DOC> missing?",
                    p,
                    lineno,
                )
            doc_line, docno, fields, current = lineno, None, {}, None
        elif tag == "DOC":
            if doc_line is None:
                raise DataFormatError("</DOC> without an opening <DOC>", p, lineno)
            if current is not None:
                raise DataFormatError(
                    f"<{current.name}> opened at line {current.line} is not closed before </DOC>",
                    p,
                    lineno,
                )
            if docno is None:
                raise DataFormatError(
                    f"document without a <DOCNO> (it ends at line {lineno})", p, doc_line
                )
            if docno in seen:
                where, first = seen[docno]
                at = f"line {first}" if where == str(p) else f"{where}:{first}"
                raise DataFormatError(
                    f"DOCNO {docno!r} appears twice (first at {at})", p, docno_line
                )
            seen[docno] = (str(p), docno_line)
            records.append(TextRecord(docno, str(p), doc_line, fields))
            doc_line = None
        elif doc_line is None:
            continue  # a wrapper element around the documents
        elif current is not None:
            if tag == current.name:
                current.depth += -1 if closing else 1
                if current.depth == 0:
                    if tag == "DOCNO":
                        docno = _docno(current.value(), p, current.line)
                    else:
                        fields.setdefault(tag, []).append(current.value())
                    current = None
            # other markup inside a kept element (<P>, <F P=105>) is dropped
        elif not closing and tag == "DOCNO":
            if docno is not None:
                raise DataFormatError(
                    f"second <DOCNO> in one document (the first, {docno!r}, at line {docno_line})",
                    p,
                    lineno,
                )
            current, docno_line = _Open(tag, lineno), lineno
        elif not closing and tag in kept:
            current = _Open(tag, lineno)
    if doc_line is not None:
        raise DataFormatError("<DOC> is never closed (the file ends first)", p, doc_line)
    if not records:
        raise DataFormatError("no <DOC> elements in this file", p)
    return records


def _docno(value: str, path: PathLike, line: int) -> str:
    if not value:
        raise DataFormatError("empty <DOCNO>", path, line)
    if len(value.split()) != 1:
        raise DataFormatError(
            f"DOCNO {value!r} contains whitespace; run and qrels files cannot hold it", path, line
        )
    return value


def read_trec_documents(
    paths: PathLike | Sequence[PathLike],
    *,
    title_tags: Sequence[str] = DOCUMENT_TITLE_TAGS,
    text_tags: Sequence[str] = DOCUMENT_TEXT_TAGS,
    encoding: str = "utf-8",
) -> Corpus:
    """Read TREC SGML documents from one file or several (a DOCNO must be unique across all).

    The title joins the title elements (``<HEAD>``, ``<HEADLINE>``, ``<TITLE>``, ``<HL>`` by
    default), the text the text elements (``<TEXT>``); repeated elements are all kept.
    """
    files = path_list(paths)
    seen: dict[str, tuple[str, int]] = {}
    records = [
        record
        for f in files
        for record in parse_trec_documents(
            f, title_tags=title_tags, text_tags=text_tags, encoding=encoding, first_seen=seen
        )
    ]
    return corpus_from_records(records, title_tags, text_tags, files[0])


def parse_trec_topics(path: PathLike, *, encoding: str = "utf-8") -> list[TextRecord]:
    """The ``<top>`` records of a TREC topics file; the id is the ``<num>`` without its label.

    Field names are upper case; labels such as ``Description:`` are removed from the values.
    Errors (with file:line): ``<top>`` inside another or never closed, ``</top>`` without
    ``<top>``, a field twice in one topic, a topic without ``<num>``, a number seen before,
    text outside any ``<top>``, and a file without topics.
    """
    p = resolve(path)
    records: list[TextRecord] = []
    first_line: dict[str, int] = {}
    top_line: int | None = None
    fields: dict[str, list[str]] = {}
    field_line: dict[str, int] = {}
    current: _Open | None = None

    def close_field() -> None:
        if current is not None:
            fields[current.name] = [_LABEL.sub("", current.value(), count=1).strip()]

    for lineno, tag, closing, text in _events(p, encoding):
        if tag is None:
            if current is not None:
                current.parts.append(text)
            elif top_line is None and text.strip():
                raise DataFormatError(
                    f"text outside <top>...</top>: {text.strip()[:40]!r}", p, lineno
                )
        elif tag == "TOP" and not closing:
            if top_line is not None:
                raise DataFormatError(
                    f"<top> inside the <top> opened at line {top_line}; is a </top> missing?",
                    p,
                    lineno,
                )
            top_line, fields, field_line, current = lineno, {}, {}, None
        elif tag == "TOP":
            if top_line is None:
                raise DataFormatError("</top> without an opening <top>", p, lineno)
            close_field()
            current = None
            records.append(_topic(fields, p, top_line, first_line))
            top_line = None
        elif top_line is None:
            continue
        elif closing:
            if current is not None and tag == current.name:
                close_field()
                current = None
        else:
            close_field()
            if tag in field_line:
                raise DataFormatError(
                    f"second <{tag.lower()}> in one topic (first at line {field_line[tag]}); "
                    "is a </top> missing?",
                    p,
                    lineno,
                )
            field_line[tag] = lineno
            current = _Open(tag, lineno)
    if top_line is not None:
        raise DataFormatError("<top> is never closed (the file ends first)", p, top_line)
    if not records:
        raise DataFormatError("no <top> topics in this file", p)
    return records


def _topic(
    fields: dict[str, list[str]], path: PathLike, line: int, first_line: dict[str, int]
) -> TextRecord:
    number = one_line(fields.get("NUM", [""])[0])
    if "NUM" not in fields or not number:
        raise DataFormatError("topic without a <num>", path, line)
    if len(number.split()) != 1:
        raise DataFormatError(f"topic number {number!r} contains whitespace", path, line)
    if number in first_line:
        raise DataFormatError(
            f"topic {number!r} appears twice (first at line {first_line[number]})", path, line
        )
    first_line[number] = line
    return TextRecord(number, str(path), line, fields)


def read_trec_topics(
    path: PathLike, *, fields: Sequence[str] = TOPIC_FIELDS, encoding: str = "utf-8"
) -> Queries:
    """Read TREC topics; the query text is the ``<title>`` (or the ``fields`` given, joined).

    ``fields=("title", "desc")`` gives title and description; a topic whose chosen fields are
    empty is an error.
    """
    p = resolve(path)
    return queries_from_records(parse_trec_topics(p, encoding=encoding), fields, p)
