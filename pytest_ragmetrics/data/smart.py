"""The SMART format of the classic test collections (Cranfield, CISI, MED, ADI, CACM).

A record starts with ``.I <id>``; a line holding only a field marker (``.T`` title, ``.A``
authors, ``.B`` bibliography, ``.W`` text, ``.K``, ``.X``, ...) starts a field, whose text runs
until the next marker. Documents and queries share the format.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pytest_ragmetrics.data.fields import (
    TextRecord,
    clean_block,
    note_first,
    queries_from_records,
)
from pytest_ragmetrics.data.model import Queries
from pytest_ragmetrics.data.textfile import PathLike, read_lines, resolve
from pytest_ragmetrics.errors import DataFormatError

DOCUMENT_TITLE_FIELDS = ("T",)
DOCUMENT_TEXT_FIELDS = ("W",)
QUERY_FIELDS = ("W",)

_MARKER = re.compile(r"\.([A-Z])")


def parse_smart(
    path: PathLike,
    *,
    what: str = "document",
    encoding: str = "utf-8",
    first_seen: dict[str, tuple[str, int]] | None = None,
) -> list[TextRecord]:
    """The records of one SMART file, in file order.

    ``first_seen`` (id -> file and line) spans several files, so that an id repeated in another
    file is an error too. A field repeated inside a record keeps both values: the Cranfield
    distribution itself has records with two ``.W`` (document 576) or an ``.A``/``.B`` inside
    the abstract (document 240), so refusing them would refuse the collection.
    """
    p = resolve(path)
    seen = {} if first_seen is None else first_seen
    records: list[TextRecord] = []
    record: TextRecord | None = None
    name: str | None = None
    lines: list[str] = []

    def close_field() -> None:
        if record is not None and name is not None:
            record.fields.setdefault(name, []).append(clean_block("\n".join(lines)))
        lines.clear()

    for lineno, text in read_lines(p, encoding):
        stripped = text.strip()
        if stripped.startswith(".I") and (len(stripped) == 2 or stripped[2].isspace()):
            close_field()
            record = _record_start(stripped, p, lineno, seen, what)
            records.append(record)
            name = None
        elif _MARKER.fullmatch(stripped):
            if record is None:
                raise DataFormatError(
                    f"field marker {stripped} before the first '.I <id>' line", p, lineno
                )
            close_field()
            name = stripped[1]
        elif record is None:
            raise DataFormatError(
                f"text before the first '.I <id>' line ({stripped[:40]!r}); SMART files start "
                "each record with '.I <id>'",
                p,
                lineno,
            )
        elif name is None:
            raise DataFormatError(
                f"text after '.I {record.id}' (line {record.line}) before any field marker "
                "such as .T or .W",
                p,
                lineno,
            )
        else:
            lines.append(text)
    close_field()
    if not records:
        raise DataFormatError(f"no '.I <id>' {what} records in this file (it is empty)", p)
    return records


def _record_start(
    stripped: str, path: Path, lineno: int, seen: dict[str, tuple[str, int]], what: str
) -> TextRecord:
    """The record a ``.I <id>`` line starts; its id must be new."""
    parts = stripped.split()
    if len(parts) != 2:
        raise DataFormatError(f"expected '.I <id>' (one id), got {stripped!r}", path, lineno)
    note_first(seen, parts[1], f"{what} id", path, lineno)
    return TextRecord(parts[1], str(path), lineno)


def read_smart_queries(
    path: PathLike, *, fields: Sequence[str] = QUERY_FIELDS, encoding: str = "utf-8"
) -> Queries:
    """Read SMART queries (e.g. Cranfield's ``cran.qry``): the text is the ``.W`` field.

    Ids are kept as written (``001``); their relation to the qrels' query numbers depends on
    the collection (Cranfield's qrels number queries 1..225 by position).
    """
    p = resolve(path)
    return queries_from_records(parse_smart(p, what="query", encoding=encoding), fields, p)
