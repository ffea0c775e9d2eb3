"""Dataset folder layouts: BEIR, FlagEmbedding's local layout, and folders with a dataset.json."""

from __future__ import annotations

import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.manifest import (
    MANIFEST,
    Manifest,
    ManifestParts,
    load_manifest_parts,
    read_manifest,
    split_qrels,
)
from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries
from pytest_ragmetrics.data.selection import check_split_name
from pytest_ragmetrics.data.stale import (
    check_relevant_in_corpus,
    examples,
    near_miss_hint,
    stale_note,
)
from pytest_ragmetrics.data.textfile import (
    PathLike,
    optional_text,
    read_jsonl,
    require_str,
    resolve,
)
from pytest_ragmetrics.data.trec import parse_grade, read_qrels
from pytest_ragmetrics.errors import (
    ConfigError,
    DataFormatError,
    StaleLabelsWarning,
    how_to_silence,
)

_ID_KEYS = ("_id", "id")


def read_corpus(path: PathLike) -> Corpus:
    """Read ``corpus.jsonl`` (``{"_id" or "id", "title"?, "text"}`` per line)."""
    p = resolve(path)
    ids: list[str] = []
    titles: list[str] = []
    texts: list[str] = []
    for lineno, doc_id, record in _records(p, "document", "no documents in corpus file"):
        ids.append(doc_id)
        titles.append(optional_text(record, "title", p, lineno))
        texts.append(optional_text(record, "text", p, lineno))
    return Corpus(ids, titles, texts, source=str(p))


def read_queries(path: PathLike) -> Queries:
    """Read ``queries.jsonl`` (``{"_id" or "id", "text"}`` per line)."""
    p = resolve(path)
    ids: list[str] = []
    texts: list[str] = []
    for lineno, qid, record in _records(p, "query", "no queries in queries file"):
        ids.append(qid)
        texts.append(optional_text(record, "text", p, lineno))
    return Queries(ids, texts, source=str(p))


def _records(p: Path, what: str, empty: str) -> Iterator[tuple[int, str, dict[str, Any]]]:
    """(line, id, record) of a JSONL file of ``what`` records: each has a new id (``_id`` or
    ``id``) and a ``text``; a file without records is an error (``empty``: what it says)."""
    first_line: dict[str, int] = {}
    for lineno, record in read_jsonl(p):
        rid = require_str(record, _ID_KEYS, p, lineno, what=f"{what} id")
        if rid in first_line:
            raise DataFormatError(
                f"{what} id {rid!r} appears twice (first at line {first_line[rid]})", p, lineno
            )
        first_line[rid] = lineno
        if "text" not in record:
            raise DataFormatError(f"{what} {rid!r} has no 'text'", p, lineno)
        yield lineno, rid, record
    if not first_line:
        raise DataFormatError(f"{empty} (it is empty)", p)


def read_qrels_jsonl(path: PathLike) -> Qrels:
    """Read FlagEmbedding's ``<split>_qrels.jsonl`` (``{"qid", "docid", "relevance"}``)."""
    p = resolve(path)
    by_query: dict[str, dict[str, int]] = {}
    first_line: dict[tuple[str, str], int] = {}
    for lineno, record in read_jsonl(p):
        qid = require_str(record, ("qid", "query_id", "query-id"), p, lineno, what="query id")
        doc = require_str(record, ("docid", "doc_id", "corpus-id"), p, lineno, what="doc id")
        raw = record.get("relevance", record.get("score"))
        if raw is None or isinstance(raw, bool):
            raise DataFormatError("missing integer 'relevance'", p, lineno)
        grade = parse_grade(str(raw), p, lineno)
        if (qid, doc) in first_line:
            raise DataFormatError(
                f"document {doc!r} is judged twice for query {qid!r} (first at line "
                f"{first_line[(qid, doc)]})",
                p,
                lineno,
            )
        first_line[(qid, doc)] = lineno
        by_query.setdefault(qid, {})[doc] = grade
    if not by_query:
        raise DataFormatError("no judgments in qrels file (it is empty)", p)
    return Qrels.from_dict(by_query)


def _exists(path: Path) -> bool:
    return resolve(path).exists()


def detect_layout(folder: Path, split: str) -> str:
    """'manifest', 'beir' or 'flagembedding', from the files present; an error says what is
    missing."""
    if (folder / MANIFEST).is_file():
        return "manifest"
    if _exists(folder / f"{split}_queries.jsonl") or _exists(folder / f"{split}_qrels.jsonl"):
        return "flagembedding"
    if _exists(folder / "queries.jsonl") or (folder / "qrels").is_dir():
        return "beir"
    splits = available_splits(folder)
    if splits:
        # A FlagEmbedding folder holding other splits only.
        raise DataFormatError(
            f"split {split!r} not found (no {split}_qrels.jsonl); available splits: "
            f"{', '.join(splits)}",
            folder,
        )
    raise DataFormatError(
        "not a dataset folder: expected BEIR files (corpus.jsonl, queries.jsonl, "
        f"qrels/{split}.tsv), FlagEmbedding files (corpus.jsonl, {split}_queries.jsonl, "
        f"{split}_qrels.jsonl), or a {MANIFEST} describing other files (TREC, SMART, BEIR)",
        folder,
    )


def available_splits(folder: Path) -> list[str]:
    """Splits present in a dataset folder (any layout)."""
    if (folder / MANIFEST).is_file():
        return list(read_manifest(folder / MANIFEST).qrels)
    # The name before the suffix the split's file has (a split may hold dots: "test.v2");
    # other files (a backup "test.tsv.bak") are no split that load_dataset would read.
    qrels_dir = folder / "qrels"
    found = (
        [(f.name, (".tsv", ".tsv.gz")) for f in qrels_dir.iterdir()] if qrels_dir.is_dir() else []
    )
    found += [(f.name, ("_qrels.jsonl", "_qrels.jsonl.gz")) for f in folder.iterdir()]
    names = {
        name.removesuffix(suffix)
        for name, suffixes in found
        for suffix in suffixes
        if name.endswith(suffix) and _is_split(name.removesuffix(suffix))
    }
    return sorted(names)


def _is_split(name: str) -> bool:
    try:
        check_split_name(name, "")
    except ConfigError:
        return False
    return True


def check_dataset_files(folder: PathLike, split: str = "test") -> None:
    """Whether a dataset folder and the files of ``split`` are there, without reading them:
    a DataFormatError naming the folder or file otherwise (missing folder, unknown layout,
    split or qrels file, no corpus or queries file; a dataset.json is read and checked)."""
    root, layout = _folder_layout(folder, split, "check_dataset_files")
    if layout == "manifest":
        manifest = read_manifest(root / MANIFEST)
        if split not in manifest.qrels:
            raise DataFormatError(
                f"split {split!r} not found; {MANIFEST} has {', '.join(manifest.qrels)}", root
            )
        return
    files = _layout_files(root, split, layout)
    if not _exists(files[0]):
        splits = available_splits(root)
        raise DataFormatError(
            f"split {split!r} not found (no {files[0].relative_to(root)}); available splits: "
            f"{', '.join(splits) or 'none'}",
            root,
        )
    for path in files[1:]:
        if not _exists(path):
            raise DataFormatError("file not found", path)


def _folder_layout(folder: PathLike, split: str, caller: str) -> tuple[Path, str]:
    """The dataset folder and its layout; a split that is no name, a missing folder or an
    unknown layout is an error (``caller``: the function that names itself in it)."""
    root = Path(folder)
    check_split_name(split, f"{caller}({os.fspath(folder)!r})")
    if not root.is_dir():
        raise DataFormatError("dataset folder not found", root)
    return root, detect_layout(root, split)


def _layout_files(root: Path, split: str, layout: str) -> tuple[Path, Path, Path]:
    """(qrels, queries, corpus) of a split in the BEIR or FlagEmbedding layout."""
    if layout == "beir":
        return root / "qrels" / f"{split}.tsv", root / "queries.jsonl", root / "corpus.jsonl"
    return (
        root / f"{split}_qrels.jsonl",
        root / f"{split}_queries.jsonl",
        root / "corpus.jsonl",
    )


def load_dataset(
    folder: PathLike, split: str = "test", *, name: str | None = None, warn: bool = True
) -> Dataset:
    """Load a dataset folder; queries are restricted to those judged in the split.

    The folder is in BEIR or FlagEmbedding layout, or holds a ``dataset.json`` that names
    other files (TREC SGML, SMART) and how to read them. Judged documents missing from the
    corpus ("stale labels") are a note in ``dataset.notes`` and, unless ``warn=False`` (the
    pytest plugin reports the note instead), a :class:`StaleLabelsWarning` with their count.
    """
    root, layout = _folder_layout(folder, split, "load_dataset")
    if layout == "manifest":
        parts = _manifest_parts(read_manifest(root / MANIFEST), split)
        return _assemble(
            root,
            split,
            name or parts.name or root.name,
            parts.corpus,
            parts.queries,
            parts.qrels,
            parts.queries_path,
            parts.qrels_path,
            warn,
        )
    qrels_path, queries_path, _ = _layout_files(root, split, layout)
    if not _exists(qrels_path):
        splits = available_splits(root)
        raise DataFormatError(
            f"split {split!r} not found (no {qrels_path.relative_to(root)}); available splits: "
            f"{', '.join(splits) or 'none'}",
            root,
        )
    qrels = (
        read_qrels(qrels_path, layout="beir") if layout == "beir" else read_qrels_jsonl(qrels_path)
    )
    corpus = read_corpus(root / "corpus.jsonl")
    all_queries = read_queries(queries_path)
    return _assemble(
        root, split, name or root.name, corpus, all_queries, qrels, queries_path, qrels_path, warn
    )


def _manifest_parts(manifest: Manifest, split: str) -> ManifestParts:
    """What a dataset.json names: BEIR files read here, the classic formats by the manifest."""
    if manifest.format != "beir":
        return load_manifest_parts(manifest, split)
    qrels_path = split_qrels(manifest, split)
    return ManifestParts(
        read_corpus(manifest.documents[0]),
        read_queries(manifest.queries),
        read_qrels(qrels_path, layout="beir"),
        manifest.queries,
        qrels_path,
        manifest.name,
    )


def _assemble(
    root: Path,
    split: str,
    name: str,
    corpus: Corpus,
    all_queries: Queries,
    qrels: Qrels,
    queries_path: Path,
    qrels_path: Path,
    warn: bool = True,
) -> Dataset:
    """The dataset of the judged queries; an error for judged queries without text, a note
    (and a warning if ``warn``) for judged documents missing from the corpus."""
    judged = [q for q in qrels if q in all_queries]
    missing = [q for q in qrels if q not in all_queries]
    notes: list[str] = []
    if missing:
        raise DataFormatError(
            f"{len(missing)} judged queries have no text in {resolve(queries_path).name} "
            f"(e.g. {examples(missing)})"
            + near_miss_hint(missing, all_queries.query_ids.tolist(), resolve(queries_path).name),
            resolve(qrels_path),
        )
    queries = all_queries.subset(judged)
    _refuse_blank_queries(queries, resolve(queries_path))
    check_relevant_in_corpus(qrels, corpus, resolve(qrels_path))
    message = stale_note(str(resolve(qrels_path)), qrels, corpus)
    if message is not None:
        notes.append(message)
        if warn:
            warnings.warn(
                f"{message}; {how_to_silence(StaleLabelsWarning)}", StaleLabelsWarning, stacklevel=3
            )
    return Dataset(corpus, queries, qrels, name=name, split=split, source=str(root), notes=notes)


def _refuse_blank_queries(queries: Queries, path: Path) -> None:
    """A judged query without words ranks the corpus by nothing and lowers every mean; the
    SMART and TREC readers refuse one already (an empty or missing query field)."""
    blank = [qid for qid, text in queries.items() if not text.strip()]
    if blank:
        raise DataFormatError(
            f"{len(blank)} judged queries have an empty text (e.g. {examples(blank)}); write "
            "their text, or remove their judgments from the qrels",
            path,
        )
