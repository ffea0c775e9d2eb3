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
from pathlib import Path

from pytest_ragmetrics.data.fields import (
    TextRecord,
    clean_block,
    note_first,
    one_line,
    queries_from_records,
)
from pytest_ragmetrics.data.model import Queries
from pytest_ragmetrics.data.textfile import PathLike, read_lines, resolve
from pytest_ragmetrics.errors import DataFormatError

DOCUMENT_TITLE_TAGS = ("HEAD", "HEADLINE", "TITLE", "HL")
DOCUMENT_TEXT_TAGS = ("TEXT",)
TOPIC_FIELDS = ("title",)

# An element tag: <NAME attributes>, </NAME>. Comments (<!-- -->, over any number of lines, with
# the tags inside them) and declarations (<?xml ...?>, <!DOCTYPE ...>) are removed first, and a
# CDATA section is its text.
_TAG = re.compile(r"<(/?)\s*([A-Za-z][\w.:-]*)(?:\s[^<>]*)?>")
_DECLARATION = re.compile(r"<[!?][^<>]*>")
# What may span lines: (opener, closer) by kind, as messages name them.
_SECTIONS = {"comment": ("<!--", "-->"), "CDATA section": ("<![CDATA[", "]]>")}
# The labels TREC topics put at the start of a field ("Number: 301", "Description:").
_LABEL = re.compile(
    r"^\s*(?:number|topic|title|description|narrative|summary|domain|nationality|"
    r"concepts?|concept\(s\)|definitions?|definition\(s\)|factors?|factor\(s\))\s*:",
    re.IGNORECASE,
)


def _events(path: PathLike, encoding: str) -> Iterator[tuple[int, str | None, bool, str]]:
    """(line, tag name or None for text, is a closing tag, text) in document order.

    Every line ends with a newline text event, so multi-line elements keep their lines. A
    comment or CDATA section still open at the end of the file is an error naming the line it
    opened on.
    """
    opened: tuple[str, int] | None = None  # a comment or CDATA section open: its kind, line
    for lineno, raw in read_lines(path, encoding):
        line, still, fresh = _unwrapped(raw, opened[0] if opened else None)
        opened = None if still is None else (still, lineno) if fresh else opened
        line = _DECLARATION.sub("", line)
        pos = 0
        for match in _TAG.finditer(line):
            if match.start() > pos:
                yield lineno, None, False, line[pos : match.start()]
            yield lineno, match.group(2).upper(), match.group(1) == "/", ""
            pos = match.end()
        yield lineno, None, False, line[pos:] + "\n"
    if opened is not None:
        opener, closer = _SECTIONS[opened[0]]
        raise DataFormatError(
            f"a {opened[0]} {opener!r} is not closed by {closer!r}", path, opened[1]
        )


def _unwrapped(line: str, open_kind: str | None) -> tuple[str, str | None, bool]:
    """The line without its comments and with its CDATA sections' text escaped (so no tag or
    entity is read in them), the kind of section still open at its end (``open_kind``: the one
    open at its start), and whether that one opened on this line."""
    kept: list[str] = []
    pos, fresh = 0, False
    while True:
        if open_kind is not None:
            closer = _SECTIONS[open_kind][1]
            end = line.find(closer, pos)
            if open_kind == "CDATA section":
                kept.append(html.escape(line[pos:] if end < 0 else line[pos:end], quote=False))
            if end < 0:
                return "".join(kept), open_kind, fresh
            pos, open_kind = end + len(closer), None
        found = [(line.find(o, pos), kind) for kind, (o, _) in _SECTIONS.items()]
        starts = [(at, kind) for at, kind in found if at >= 0]
        if not starts:
            kept.append(line[pos:])
            return "".join(kept), None, False
        start, open_kind = min(starts)
        kept.append(line[pos:start])
        pos, fresh = start + len(_SECTIONS[open_kind][0]), True


@dataclass
class _Open:
    """An element being collected: its name, where it opened, its text so far."""

    name: str
    line: int
    depth: int = 1
    parts: list[str] = field(default_factory=list)

    def value(self) -> str:
        return html.unescape(clean_block("".join(self.parts)))


Event = tuple[int, str | None, bool, str]


def _record_events(path: Path, encoding: str, tag: str, shown: str) -> Iterator[tuple[str, Event]]:
    """The events of a file of ``<tag>`` records (``shown`` as written in messages), each
    marked "open", "close" or "inside".

    Text outside the records, a record inside another, a closing tag without its record and a
    record never closed are errors; markup outside the records (a wrapper element) is skipped.
    """
    start: int | None = None
    for event in _events(path, encoding):
        lineno, name, closing, text = event
        if name == tag and not closing:
            if start is not None:
                raise DataFormatError(
                    f"<{shown}> inside the <{shown}> opened at line {start}; is a </{shown}> "
                    "missing?",
                    path,
                    lineno,
                )
            start = lineno
            yield "open", event
        elif name == tag:
            if start is None:
                raise DataFormatError(f"</{shown}> without an opening <{shown}>", path, lineno)
            yield "close", event
            start = None
        elif start is not None:
            yield "inside", event
        elif name is None and text.strip():
            raise DataFormatError(
                f"text outside <{shown}>...</{shown}>: {text.strip()[:40]!r}", path, lineno
            )
    if start is not None:
        raise DataFormatError(f"<{shown}> is never closed (the file ends first)", path, start)


@dataclass
class _Document:
    """The ``<DOC>`` being read: where it opened, its DOCNO, its kept fields, the open element."""

    line: int
    kept: set[str]
    docno: str | None = None
    docno_line: int = 0
    fields: dict[str, list[str]] = field(default_factory=dict)
    current: _Open | None = None

    def take(self, path: Path, lineno: int, tag: str | None, closing: bool, text: str) -> None:
        """One event between ``<DOC>`` and ``</DOC>``."""
        current = self.current
        if tag is None:
            if current is not None:
                current.parts.append(text)
        elif current is not None:
            if tag == current.name:
                current.depth += -1 if closing else 1
                if current.depth == 0:
                    if tag == "DOCNO":
                        self.docno = _docno(current.value(), path, current.line)
                    else:
                        self.fields.setdefault(tag, []).append(current.value())
                    self.current = None
            # other markup inside a kept element (<P>, <F P=105>) is dropped
        elif not closing and tag == "DOCNO":
            if self.docno is not None:
                raise DataFormatError(
                    f"second <DOCNO> in one document (the first, {self.docno!r}, at line "
                    f"{self.docno_line})",
                    path,
                    lineno,
                )
            self.current, self.docno_line = _Open(tag, lineno), lineno
        elif not closing and tag in self.kept:
            self.current = _Open(tag, lineno)

    def finish(self, path: Path, lineno: int, seen: dict[str, tuple[str, int]]) -> TextRecord:
        """The record, at ``</DOC>`` (line ``lineno``)."""
        if self.current is not None:
            raise DataFormatError(
                f"<{self.current.name}> opened at line {self.current.line} is not closed "
                "before </DOC>",
                path,
                lineno,
            )
        if self.docno is None:
            raise DataFormatError(
                f"document without a <DOCNO> (it ends at line {lineno})", path, self.line
            )
        note_first(seen, self.docno, "DOCNO", path, self.docno_line)
        return TextRecord(self.docno, str(path), self.line, self.fields)


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
    document = _Document(0, kept)
    for kind, (lineno, tag, closing, text) in _record_events(p, encoding, "DOC", "DOC"):
        if kind == "open":
            document = _Document(lineno, kept)
        elif kind == "close":
            records.append(document.finish(p, lineno, seen))
        else:
            document.take(p, lineno, tag, closing, text)
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


@dataclass
class _Topic:
    """The ``<top>`` being read: where it opened, its fields so far, the open field."""

    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)
    field_line: dict[str, int] = field(default_factory=dict)
    current: _Open | None = None

    def _close_field(self) -> None:
        if self.current is not None:
            value = _LABEL.sub("", self.current.value(), count=1).strip()
            self.fields[self.current.name] = [value]
        self.current = None

    def take(self, path: Path, lineno: int, tag: str | None, closing: bool, text: str) -> None:
        """One event between ``<top>`` and ``</top>``: a field runs until the next tag."""
        if tag is None:
            if self.current is not None:
                self.current.parts.append(text)
        elif closing:
            if self.current is not None and tag == self.current.name:
                self._close_field()
        else:
            self._close_field()
            if tag in self.field_line:
                raise DataFormatError(
                    f"second <{tag.lower()}> in one topic (first at line "
                    f"{self.field_line[tag]}); is a </top> missing?",
                    path,
                    lineno,
                )
            self.field_line[tag] = lineno
            self.current = _Open(tag, lineno)

    def finish(self, path: Path, first_line: dict[str, int]) -> TextRecord:
        """The record, at ``</top>``."""
        self._close_field()
        return _topic(self.fields, path, self.line, first_line)


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
    topic = _Topic(0)
    for kind, (lineno, tag, closing, text) in _record_events(p, encoding, "TOP", "top"):
        if kind == "open":
            topic = _Topic(lineno)
        elif kind == "close":
            records.append(topic.finish(p, first_line))
        else:
            topic.take(p, lineno, tag, closing, text)
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
