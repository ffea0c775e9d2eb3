"""Records with named text fields (SMART ``.T``/``.W``, TREC ``<TEXT>``/``<title>``), and the
corpus or queries built from the fields a collection chooses."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ragmetrics.data.model import Corpus, Queries
from pytest_ragmetrics.data.textfile import PathLike, resolve
from pytest_ragmetrics.errors import DataFormatError


@dataclass
class TextRecord:
    """One document or query of a collection file: its id, where it starts, its fields.

    Field names are upper case (``T``, ``W``, ``TEXT``, ``TITLE``); a field that appears
    several times in one record keeps every value, in order.
    """

    id: str
    path: str
    line: int
    fields: dict[str, list[str]] = field(default_factory=dict)

    def text(self, names: Sequence[str], separator: str) -> str:
        """The values of the fields ``names`` (in that order), joined by ``separator``."""
        values = [v for name in names for v in self.fields.get(name.upper(), ()) if v]
        return separator.join(values)


def path_list(paths: PathLike | Sequence[PathLike]) -> list[Path]:
    """One path or several, each resolved (``x.gz`` when only that exists)."""
    items = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    if not items:
        raise DataFormatError("no document files given")
    return [resolve(item) for item in items]


def note_first(
    seen: dict[str, tuple[str, int]], record_id: str, label: str, path: PathLike, line: int
) -> None:
    """Note where ``record_id`` first appears (``seen`` may span files); an error naming
    ``label`` (``DOCNO``, ``document id``) when it appeared before."""
    if record_id in seen:
        where, first = seen[record_id]
        at = f"line {first}" if where == str(path) else f"{where}:{first}"
        raise DataFormatError(f"{label} {record_id!r} appears twice (first at {at})", path, line)
    seen[record_id] = (str(path), line)


def clean_block(raw: str) -> str:
    """Lines stripped, blank ones dropped, joined by newlines."""
    return "\n".join(stripped for line in raw.splitlines() if (stripped := line.strip()))


def one_line(text: str) -> str:
    """Whitespace runs collapsed to single spaces."""
    return " ".join(text.split())


def corpus_from_records(
    records: Iterable[TextRecord],
    title_fields: Sequence[str],
    text_fields: Sequence[str],
    source: PathLike,
) -> Corpus:
    """A corpus: title = the title fields on one line, text = the text fields' lines.

    A document whose fields are empty stays, with empty text (Cranfield has two).
    """
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    for record in records:
        ids.append(record.id)
        titles.append(one_line(record.text(title_fields, " ")))
        texts.append(record.text(text_fields, "\n"))
    if not ids:
        raise DataFormatError("no documents found", source)
    return Corpus(ids, titles, texts, source=str(source))


def queries_from_records(
    records: Iterable[TextRecord], fields: Sequence[str], source: PathLike
) -> Queries:
    """Queries whose text is the chosen fields on one line; a query without text is an error."""
    ids: list[str] = []
    texts: list[str] = []
    names = ", ".join(fields)
    for record in records:
        text = one_line(record.text(fields, " "))
        if not text:
            present = ", ".join(record.fields) or "none"
            raise DataFormatError(
                f"query {record.id!r} has no text in its {names} field (fields present: {present})",
                record.path,
                record.line,
            )
        ids.append(record.id)
        texts.append(text)
    if not ids:
        raise DataFormatError("no queries found", source)
    return Queries(ids, texts, source=str(source))
