"""Records with named text fields (SMART ``.T``/``.W``, TREC ``<TEXT>``/``<title>``), and the
corpus or queries built from the fields a collection chooses."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_ragmetrics.data.model import Corpus, Queries
from pytest_ragmetrics.data.textfile import PathLike, resolve
from pytest_ragmetrics.errors import ConfigError, DataFormatError


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


@dataclass(frozen=True)
class FieldNames:
    """The fields a reader takes a document's title and text from, and how its format writes
    a field's name (``.{}`` SMART, ``<{}>`` TREC). A group equal to the format's default
    (``default_title``, ``default_text``) lists alternatives some documents hold; a group the
    user chose names fields each of which some document must hold."""

    title: Sequence[str]
    text: Sequence[str]
    default_title: Sequence[str]
    default_text: Sequence[str]
    mark: str
    records_hold_all: bool = True  # False: a record keeps only the fields named (TREC)

    def check_distinct(self) -> None:
        """A ConfigError when a field is both a title and a text field (its words would count
        twice)."""
        both = shared_names(self.title, self.text)
        if both:
            raise ConfigError(
                f"{self.mark.format(both[0])} is named both as a title field and as a text "
                "field: its words would count twice; name it in one of them"
            )

    def check_found(self, records: Sequence[TextRecord], source: PathLike) -> None:
        """A DataFormatError naming a chosen field that no document holds, or the text
        fields when no document holds any of them: every text would be empty."""
        found = {name for record in records for name in record.fields}
        for group, names, default in (
            ("title", self.title, self.default_title),
            ("text", self.text, self.default_text),
        ):
            chosen = [n.upper() for n in names]
            missing = [n for n in chosen if n not in found]
            if not missing:
                continue
            if chosen == [n.upper() for n in default] and (
                group == "title" or len(missing) < len(chosen)
            ):
                continue  # the defaults are alternatives; a collection may have no title
            raise DataFormatError(
                f"no document holds {self.mark.format(missing[0])} (named as a {group} field); "
                f"{_present(found, self)}",
                source,
            )


def shared_names(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """The names (upper case) ``first`` and ``second`` both hold, in ``first``'s order."""
    upper = {n.upper() for n in second}
    return [n.upper() for n in first if n.upper() in upper]


def _present(found: set[str], names: FieldNames) -> str:
    shown = ", ".join(names.mark.format(n) for n in sorted(found))
    if names.records_hold_all:
        return f"the documents hold {shown or 'no field'}"
    return f"of the fields named, the documents hold {shown or 'none'}"


def corpus_from_records(
    records: Sequence[TextRecord], names: FieldNames, source: PathLike
) -> Corpus:
    """A corpus: title = the title fields on one line, text = the text fields' lines.

    A document whose fields are empty stays, with empty text (Cranfield has two); a field
    named that no document holds is an error (:meth:`FieldNames.check_found`).
    """
    if not records:
        raise DataFormatError("no documents found", source)
    names.check_found(records, source)
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    for record in records:
        ids.append(record.id)
        titles.append(one_line(record.text(names.title, " ")))
        texts.append(record.text(names.text, "\n"))
    return Corpus(ids, titles, texts, source=str(source))


def queries_from_records(
    records: Iterable[TextRecord], fields: Sequence[str], source: PathLike
) -> Queries:
    """Queries whose text is the chosen fields on one line; a query without text is an error."""
    ids: list[str] = []
    texts: list[str] = []
    names = ", ".join(fields)
    records = list(records)
    found = {name for record in records for name in record.fields}
    missing = [n for n in fields if n.upper() not in found]
    if records and missing:
        held = ", ".join(sorted(found)) or "no field"
        raise DataFormatError(f"no query has a {missing[0]} field; the queries hold {held}", source)
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
