"""``dataset.json``: how to read a collection that is not in BEIR or FlagEmbedding layout.

A classic collection (SMART files such as Cranfield's, TREC SGML documents and topics) comes
with habits that cannot be guessed from its files: how the qrels number the queries, which way
the relevance scale runs, which fields hold the text. The manifest states them once, next to
the files, so that ``load_dataset(folder, split)`` reads the folder like any other. Only the
standard library reads it (JSON; ``tomllib`` needs Python 3.11). See README ("Datasets").
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, cast

from pytest_ragmetrics.data import sgml, smart
from pytest_ragmetrics.data.documents import read_documents
from pytest_ragmetrics.data.fields import TextRecord, queries_from_records, shared_names
from pytest_ragmetrics.data.model import Corpus, Qrels, Queries
from pytest_ragmetrics.data.textfile import resolve
from pytest_ragmetrics.data.trec import QrelsColumns, read_qrels
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.fileio import json_problem, unique_keys
from pytest_ragmetrics.values import python_only

MANIFEST = "dataset.json"
FORMATS = ("smart", "trec", "beir")
QUERY_ID_SCHEMES = ("id", "number", "ordinal")
QRELS_COLUMNS = ("auto", "pairs")
Format = Literal["smart", "trec", "beir"]
QueryIdScheme = Literal["id", "number", "ordinal"]

_DEFAULT_FIELDS: dict[str, dict[str, tuple[str, ...]]] = {
    "smart": {
        "title_fields": smart.DOCUMENT_TITLE_FIELDS,
        "text_fields": smart.DOCUMENT_TEXT_FIELDS,
        "query_fields": smart.QUERY_FIELDS,
    },
    "trec": {
        "title_fields": sgml.DOCUMENT_TITLE_TAGS,
        "text_fields": sgml.DOCUMENT_TEXT_TAGS,
        "query_fields": sgml.TOPIC_FIELDS,
    },
}
_REQUIRED = ("format", "documents", "queries", "qrels")
# What only the classic formats need: how to read their fields, ids and grades.
_CLASSIC_ONLY = (
    "qrels_columns",
    "query_ids",
    "grades",
    "title_fields",
    "text_fields",
    "query_fields",
    "encoding",
)
_OPTIONAL = ("name", "about", *_CLASSIC_ONLY, "provenance")


@dataclass(frozen=True)
class Manifest:
    """The contents of a ``dataset.json``, checked; paths are resolved against its folder."""

    path: Path
    format: Format
    documents: tuple[Path, ...]
    queries: Path
    qrels: dict[str, Path]
    qrels_columns: QrelsColumns = "auto"
    query_ids: QueryIdScheme = "id"
    grades: dict[int, int | None] | None = None
    title_fields: tuple[str, ...] = ()
    text_fields: tuple[str, ...] = ()
    query_fields: tuple[str, ...] = ()
    encoding: str = "utf-8"
    name: str | None = None
    provenance: dict[str, Any] | None = None

    @property
    def folder(self) -> Path:
        return self.path.parent


def read_manifest(path: Path) -> Manifest:
    """Read and check a ``dataset.json``; every error names the file and the key."""
    raw = _manifest_text(path)
    try:
        data = json.loads(raw, object_pairs_hook=unique_keys)
    except json.JSONDecodeError as exc:
        raise DataFormatError(f"not valid JSON ({json_problem(exc)})", path, exc.lineno) from None
    except (ValueError, RecursionError) as exc:  # thousands of digits, deep nesting, a key twice
        raise DataFormatError(f"cannot read this JSON ({exc})", path) from None
    if not isinstance(data, dict):
        raise DataFormatError(f"expected a JSON object, got {type(data).__name__}", path)
    unknown = sorted(set(data) - {*_REQUIRED, *_OPTIONAL})
    if unknown:
        raise DataFormatError(
            f"unknown key {unknown[0]!r}; the keys are {', '.join((*_REQUIRED, *_OPTIONAL))}",
            path,
        )
    missing = [key for key in _REQUIRED if key not in data]
    if missing:
        raise DataFormatError(f"missing {', '.join(repr(k) for k in missing)}", path)
    check = _Checker(path)
    fmt = check.choice(data, "format", FORMATS, None)
    documents = check.files(data["documents"], "documents")
    qrels = data["qrels"]
    if not isinstance(qrels, dict) or not qrels:
        raise DataFormatError(
            '\'qrels\' must be an object {split: file}, e.g. {"test": "qrels.txt"}', path
        )
    provenance = data.get("provenance")
    if provenance is not None and not isinstance(provenance, dict):
        raise check.fail("provenance", f"must be an object, got {type(provenance).__name__}")
    if fmt == "beir":
        return _beir_manifest(path, data, check, documents, qrels, provenance)
    defaults = _DEFAULT_FIELDS[fmt]
    title_fields, text_fields = check.document_fields(data, defaults)
    return Manifest(
        path=path,
        format=cast(Format, fmt),
        documents=documents,
        queries=check.file(data["queries"], "queries"),
        qrels={str(split): check.file(f, f"qrels.{split}") for split, f in qrels.items()},
        qrels_columns=cast(
            QrelsColumns, check.choice(data, "qrels_columns", QRELS_COLUMNS, "auto")
        ),
        query_ids=cast(QueryIdScheme, check.choice(data, "query_ids", QUERY_ID_SCHEMES, "id")),
        grades=check.grades(data.get("grades")),
        title_fields=title_fields,
        text_fields=text_fields,
        query_fields=check.names(data, "query_fields", defaults),
        encoding=check.encoding(data.get("encoding", "utf-8")),
        name=check.optional_text(data, "name"),
        provenance=provenance,
    )


def _manifest_text(path: Path) -> str:
    """The text of a ``dataset.json``: UTF-8, a byte order mark (as Notepad writes) dropped;
    an error names the line and column of a byte that is not UTF-8."""
    try:
        data = path.read_bytes().removeprefix(b"\xef\xbb\xbf")
        raw = data.decode("utf-8")
    except OSError as exc:
        raise DataFormatError(f"cannot read: {exc.strerror or exc}", path) from None
    except UnicodeDecodeError as exc:
        line = data[: exc.start].count(b"\n") + 1
        column = exc.start - (data.rfind(b"\n", 0, exc.start) + 1) + 1
        raise DataFormatError(
            f"not valid UTF-8 (byte {data[exc.start]:#04x} at column {column})", path, line
        ) from None
    return raw


def _beir_manifest(
    path: Path,
    data: dict[str, Any],
    check: _Checker,
    documents: tuple[Path, ...],
    qrels: dict[str, Any],
    provenance: dict[str, Any] | None,
) -> Manifest:
    """A manifest of BEIR files (corpus JSONL, queries JSONL, qrels TSV per split)."""
    classic = [key for key in _CLASSIC_ONLY if key in data]
    if classic:
        raise check.fail(classic[0], "applies to the smart and trec formats only, not beir")
    if len(documents) != 1:
        raise check.fail("documents", "format beir reads one corpus file (corpus.jsonl)")
    return Manifest(
        path=path,
        format="beir",
        documents=documents,
        queries=check.file(data["queries"], "queries"),
        qrels={str(split): check.file(f, f"qrels.{split}") for split, f in qrels.items()},
        name=check.optional_text(data, "name"),
        provenance=provenance,
    )


@dataclass(frozen=True)
class _Checker:
    """Checks of manifest values, each error naming the manifest and the key."""

    path: Path

    def fail(self, key: str, message: str) -> DataFormatError:
        return DataFormatError(f"{key!r}: {message}", self.path)

    def choice(
        self, data: dict[str, Any], key: str, allowed: Sequence[str], default: str | None
    ) -> str:
        value = data.get(key, default)
        if not isinstance(value, str) or value not in allowed:
            raise self.fail(key, f"must be one of {', '.join(allowed)}, got {value!r}")
        return value

    def file(self, value: object, key: str) -> Path:
        if not isinstance(value, str) or not value:
            raise self.fail(key, f"must be a file name, got {value!r}")
        path = resolve(self.path.parent / value)
        if path.is_dir():
            raise self.fail(key, f"{value} is a folder, not a file (name its files, or a glob)")
        if not path.is_file():
            raise self.fail(key, f"{value} not found in {self.path.parent} (nor {value}.gz)")
        return path

    def files(self, value: object, key: str) -> tuple[Path, ...]:
        """File names or glob patterns (``docs/*.gz``), each matching at least one file."""
        items = [value] if isinstance(value, str) else value
        if not isinstance(items, list) or not items:
            raise self.fail(key, f"must be a file name or a list of them, got {value!r}")
        paths: list[Path] = []
        for item in items:
            if isinstance(item, str) and any(ch in item for ch in "*?["):
                pattern = Path(item)
                # Path.glob takes relative patterns only: an absolute one globs from its root.
                base = Path(pattern.anchor) if pattern.is_absolute() else self.path.parent
                relative = str(pattern.relative_to(base)) if pattern.is_absolute() else item
                matched = sorted(p for p in base.glob(relative) if p.is_file())
                if not matched:
                    raise self.fail(key, f"the pattern {item} matches no file")
                paths += matched
            else:
                paths.append(self.file(item, key))
        first: dict[Path, Path] = {}
        for path in paths:  # read twice, each of its documents would 'appear twice'
            same = first.setdefault(path.resolve(), path)
            if same is not path:
                raise self.fail(key, f"{path.name} is listed twice (as {same} and {path})")
        return tuple(paths)

    def names(
        self, data: dict[str, Any], key: str, defaults: Mapping[str, tuple[str, ...]]
    ) -> tuple[str, ...]:
        value = data.get(key, list(defaults[key]))
        if isinstance(value, str):
            value = [value]
        if (
            not isinstance(value, list)
            or not value
            or not all(isinstance(v, str) and v.strip() for v in value)
        ):
            raise self.fail(key, f"must be a list of field names, got {value!r}")
        return tuple(v.strip().upper() for v in value)

    def document_fields(
        self, data: dict[str, Any], defaults: Mapping[str, tuple[str, ...]]
    ) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """``title_fields`` and ``text_fields``; a field in both is an error."""
        title = self.names(data, "title_fields", defaults)
        text = self.names(data, "text_fields", defaults)
        both = shared_names(title, text)
        if both:
            raise self.fail(
                "text_fields",
                f"names {both[0]}, which title_fields names too: its words would count twice",
            )
        return title, text

    def grades(self, value: object) -> dict[int, int | None] | None:
        if value is None:
            return None
        if not isinstance(value, dict) or not value:
            raise self.fail(
                "grades", 'must be an object {code: grade or null}, e.g. {"1": 4, "-1": null}'
            )
        mapping: dict[int, int | None] = {}
        written: dict[int, str] = {}
        for code, grade in value.items():
            try:
                if python_only(code):
                    raise ValueError(code)
                number = int(code)
            except ValueError:
                raise self.fail("grades", f"code {code!r} is not an integer") from None
            if number in written:  # "1" and "01": the second would replace the first
                raise self.fail(
                    "grades", f"codes {written[number]!r} and {code!r} are the same number"
                )
            written[number] = code
            if grade is not None and (isinstance(grade, bool) or not isinstance(grade, int)):
                raise self.fail(
                    "grades", f"the grade of code {code} must be an integer or null, got {grade!r}"
                )
            mapping[number] = grade
        return mapping

    def encoding(self, value: object) -> str:
        try:
            if not isinstance(value, str):
                raise LookupError(value)
            codec = codecs.lookup(value)
        except LookupError:
            raise self.fail("encoding", f"unknown text encoding {value!r}") from None
        if not codec._is_text_encoding:  # rot13, base64, zlib: bytes codecs
            raise self.fail("encoding", f"{value!r} is not a text encoding")
        if "\n".encode(value) != b"\n":
            raise self.fail("encoding", f"{value} is not line-compatible with ASCII")
        return value

    def optional_text(self, data: dict[str, Any], key: str) -> str | None:
        value = data.get(key)
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise self.fail(key, f"must be a non-empty string, got {value!r}")
        return value


@dataclass(frozen=True)
class ManifestParts:
    """What a manifest folder holds for one split, before the split's queries are chosen."""

    corpus: Corpus
    queries: Queries
    qrels: Qrels
    queries_path: Path
    qrels_path: Path
    name: str | None


def split_qrels(manifest: Manifest, split: str) -> Path:
    """The qrels file of ``split``, or an error listing the splits the manifest has."""
    if split not in manifest.qrels:
        raise DataFormatError(
            f"split {split!r} not found in {MANIFEST}'s 'qrels'; available splits: "
            f"{', '.join(manifest.qrels)}",
            manifest.folder,
        )
    return manifest.qrels[split]


def load_manifest_parts(manifest: Manifest, split: str) -> ManifestParts:
    """Corpus, every query, and the split's qrels (query ids and grades translated) of a
    smart or trec manifest (a beir one names files the BEIR readers read)."""
    split_qrels(manifest, split)
    if manifest.format == "beir":
        raise ValueError("a beir manifest is read by the BEIR readers (data.layouts)")
    enc = manifest.encoding
    corpus = read_documents(
        manifest.documents,
        manifest.format,
        title_fields=manifest.title_fields,
        text_fields=manifest.text_fields,
        encoding=enc,
    )
    if manifest.format == "smart":
        query_records = smart.parse_smart(manifest.queries, what="query", encoding=enc)
    else:
        query_records = sgml.parse_trec_topics(manifest.queries, encoding=enc)
    queries = queries_from_records(query_records, manifest.query_fields, manifest.queries)
    qrels_path = manifest.qrels[split]
    qrels = read_qrels(
        qrels_path,
        columns=manifest.qrels_columns,
        grades=manifest.grades,
        query_ids=_query_id_translation(manifest.query_ids, query_records, manifest.queries),
        encoding=enc,
    )
    if manifest.format == "smart" and manifest.grades is None:
        _check_scale_declared(qrels, qrels_path)
    return ManifestParts(corpus, queries, qrels, manifest.queries, qrels_path, manifest.name)


def _check_scale_declared(qrels: Qrels, path: Path) -> None:
    """A DataFormatError when SMART qrels hold several relevance codes and the manifest has no
    ``grades``: the SMART collections share no scale (Cranfield's code 1 is a complete answer,
    4 minimal interest), so its codes taken as grades could rank the least relevant highest."""
    codes = sorted(set(qrels.grades.tolist()))
    relevant = [code for code in codes if code > 0]
    if len(relevant) < 2:
        return  # relevant or not: no direction to get wrong
    listed = ", ".join(f'"{code}": {code}' for code in codes)
    raise DataFormatError(
        f"the qrels hold relevance codes {', '.join(map(str, relevant))}, and the SMART format "
        "does not say which way its scale runs (Cranfield's 1 is the most relevant); say it in "
        f'{MANIFEST}\'s "grades", e.g. {{{listed}}} to take the codes as grades, higher '
        "more relevant (every code the file holds must be listed)",
        path,
    )


def _query_id_translation(
    scheme: QueryIdScheme, records: Sequence[TextRecord], queries_path: Path
) -> Callable[[str], str]:
    """qrels query id -> the queries file's id, or an error saying why there is none."""
    name = queries_path.name
    if scheme == "ordinal":
        count = len(records)

        def by_position(token: str) -> str:
            position = _integer(token, "ordinal")
            if not 1 <= position <= count:
                raise LookupError(
                    f"query {token}: {name} has {count} queries, and with query_ids = "
                    "ordinal the qrels number them by position from 1"
                )
            return records[position - 1].id

        return by_position
    if scheme == "number":
        by_number: dict[int, str] = {}
        for record in records:
            try:
                number = int(record.id)
            except ValueError:
                raise DataFormatError(
                    f"query id {record.id!r} is not a number (query_ids = number)",
                    record.path,
                    record.line,
                ) from None
            if number in by_number:
                raise DataFormatError(
                    f"query ids {by_number[number]!r} and {record.id!r} are the same number "
                    "(query_ids = number)",
                    record.path,
                    record.line,
                )
            by_number[number] = record.id

        def by_value(token: str) -> str:
            number = _integer(token, "number")
            if number not in by_number:
                raise LookupError(f"query {token} is not in {name}")
            return by_number[number]

        return by_value
    known = {record.id for record in records}

    def as_is(token: str) -> str:
        if token not in known:
            raise LookupError(
                f"query {token!r} is not in {name} (query_ids = id; the qrels may number "
                "queries differently: see 'query_ids' number or ordinal)"
            )
        return token

    return as_is


def _integer(token: str, scheme: str) -> int:
    try:
        if python_only(token):
            raise ValueError(token)
        return int(token)
    except ValueError:
        raise ValueError(f"query id {token!r} is not a number (query_ids = {scheme})") from None
