"""The dataset folder a test set is written to, in BEIR layout with a ``dataset.json``::

    corpus.jsonl        the corpus the queries were made from (so the folder stands alone);
                        with removed sentences (inverse cloze), the copy that lacks them
    queries.jsonl       {"_id", "text"}
    qrels/<split>.tsv   query-id, corpus-id, score (each query's source document(s), grade 1)
    answers.jsonl       reference answers, where the generator gave them
    review.jsonl        one row per query for a person to accept, reject or edit
    generated.jsonl     each query as generated, which a review is checked against
    dataset.json        {"format": "beir", ..., "provenance": {generator, seed, corpus, filters}}

``load_dataset(folder)``, ``ragmetrics_dataset`` and every command read it as it is. The files
are made in memory and checked first, then replaced all together or not at all, under a lock
on the folder, ``dataset.json`` last: a failure leaves the folder's earlier test set whole.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.layouts import detect_layout, load_dataset, read_corpus
from pytest_ragmetrics.data.manifest import MANIFEST, read_manifest
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.data.selection import check_split_name
from pytest_ragmetrics.errors import ConfigError, DataFormatError
from pytest_ragmetrics.fileio import exclusive_lock, writing
from pytest_ragmetrics.testsets.model import Candidate, TestSet, check_candidates, tsv_id_problem
from pytest_ragmetrics.testsets.replace import replace_files
from pytest_ragmetrics.testsets.review import GENERATED, apply_review, read_generated, read_review

CREATED_BY = "ragmetrics generate"
REVIEW = "review.jsonl"
ANSWERS = "answers.jsonl"
# The fingerprint of a generated test set: its key in a review row and in the provenance.
FINGERPRINT_KEY = "testset"
PROVENANCE_FINGERPRINT = "testset_fingerprint"


def load_corpus(path: str | Path) -> Corpus:
    """The corpus of ``path``: a corpus JSONL file, a folder holding ``corpus.jsonl``, or a
    dataset folder of any layout (a SMART or TREC one through its ``dataset.json``)."""
    source = Path(path)
    if source.is_file():
        return read_corpus(source)
    if not source.is_dir():
        raise ConfigError(f"--corpus {path}: no such file or folder")
    if not (source / MANIFEST).is_file() and (
        (source / "corpus.jsonl").exists() or (source / "corpus.jsonl.gz").exists()
    ):
        return read_corpus(source / "corpus.jsonl")
    if detect_layout(source, "test") == "manifest":
        splits = list(read_manifest(source / MANIFEST).qrels)
        return load_dataset(source, splits[0], warn=False).corpus
    raise DataFormatError("no corpus.jsonl here, nor a dataset.json naming the documents", source)


def generated_provenance(folder: Path) -> dict[str, Any] | None:
    """The provenance of a test set written here, or None when the folder holds none."""
    if not (folder / MANIFEST).is_file():
        return None
    manifest = read_manifest(folder / MANIFEST)
    provenance = manifest.provenance
    if provenance is None or provenance.get("created_by") != CREATED_BY:
        return None
    return dict(provenance)


def check_output_folder(out: Path, corpus_path: str | Path | None) -> None:
    """Refuse an output that is a file, lies inside the corpus folder, or is a non-empty
    folder that holds no generated test set (it would be overwritten)."""
    if out.exists() and not out.is_dir():
        raise ConfigError(f"--out {out}: is a file; give a folder")
    if corpus_path is not None:
        from pytest_ragmetrics.fileio import is_within

        source = Path(corpus_path)
        folder = source if source.is_dir() else source.parent
        if is_within(out, folder) or is_within(folder, out):
            raise ConfigError(
                f"--out {out}: overlaps the --corpus folder {folder}; write the test set elsewhere"
            )
    if out.is_dir() and any(out.iterdir()) and generated_provenance(out) is None:
        raise ConfigError(
            f"--out {out}: the folder holds files but no test set that {CREATED_BY} wrote; "
            "give an empty or new folder"
        )


@contextmanager
def locked(out: Path) -> Iterator[None]:
    """The folder's lock: two writers of one folder never interleave."""
    what, hint = "test-set folder", "pass --out DIR to write it elsewhere"
    with writing(out / MANIFEST, what=what, hint=hint):
        out.mkdir(parents=True, exist_ok=True)
    lock = out / ".generate.lock"
    with (
        exclusive_lock(lock, what=what, error=ConfigError, hint=hint),
        writing(out / MANIFEST, what=what, hint=hint),
    ):
        yield


def _jsonl(rows: Sequence[dict[str, Any]]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)


def corpus_jsonl(corpus: Corpus) -> str:
    return _jsonl([{"_id": d.id, "title": d.title, "text": d.text} for d in corpus])


def qrels_tsv(queries: Sequence[Candidate]) -> str:
    """BEIR qrels: a header, then tab-separated rows (ids may hold spaces, not tabs)."""
    lines = ["query-id\tcorpus-id\tscore\n"]
    for c in queries:
        for doc_id, grade in c.relevant:
            for what, value in (("query id", c.query_id), ("document id", doc_id)):
                problem = tsv_id_problem(value)
                if problem:
                    raise DataFormatError(f"query {c.query_id!r}: {what} {value!r} {problem}")
            lines.append(f"{c.query_id}\t{doc_id}\t{grade}\n")
    return "".join(lines)


def testset_fingerprint(corpus_text: str, queries_text: str, qrels_text: str) -> str:
    """What tells one generated test set from another: the SHA-256 of its corpus, queries and
    qrels as written. ``dataset.json`` records it (``provenance.testset_fingerprint``) and each
    review row carries it (``testset``), so a review made for another set is refused."""
    digest = hashlib.sha256()
    for text in (corpus_text, queries_text, qrels_text):
        data = text.encode("utf-8")
        digest.update(f"{len(data)}:".encode())
        digest.update(data)
    return digest.hexdigest()


def review_rows(
    queries: Sequence[Candidate], corpus: Corpus, fingerprint: str | None = None
) -> list[dict[str, Any]]:
    """One row per query: what it is, the documents it names, a decision to fill in, and the
    fingerprint of the test set it belongs to."""
    rows = []
    for c in queries:
        documents = []
        for doc_id, _ in c.relevant:
            doc = corpus[doc_id]
            documents.append({"id": doc.id, "title": doc.title, "text": doc.text})
        row = {**c.to_dict(), "decision": None, "note": None, "documents": documents}
        if fingerprint is not None:
            row[FINGERPRINT_KEY] = fingerprint
        rows.append(row)
    return rows


def existing_decisions(path: Path) -> int:
    """How many rows of a review file carry a decision (0 when there is no file)."""
    if not path.is_file():
        return 0
    from pytest_ragmetrics.data.textfile import read_jsonl

    return sum(1 for _, row in read_jsonl(path) if row.get("decision") is not None)


def write_testset(
    out: Path, corpus: Corpus, testset: TestSet, *, split: str = "test", review: bool = True
) -> None:
    """Write the folder (see the module); ``review=False`` leaves review.jsonl as it is. The
    folder's corpus is ``testset.corpus`` when it has one (the copy without the removed
    sentences), else ``corpus``.

    Every file's text is made, and everything that can be refused checked, before the first
    file is written; the files are then replaced all together or not at all
    (:func:`~pytest_ragmetrics.testsets.replace.replace_files`), ``dataset.json`` last, so a
    failure never leaves a folder that mixes two test sets. A folder this call created is
    removed again when the write fails."""
    check_split_name(split, f"test set for {out}")
    check_candidates(testset.queries, f"test set for {out}")
    decided = existing_decisions(out / REVIEW) if review else 0
    if decided:
        raise ConfigError(
            f"{out / REVIEW}: {decided} rows carry a person's decision; apply them with "
            f"`ragmetrics generate --apply-review {out / REVIEW} --out {out}`, or move the file "
            "away before generating again"
        )
    if testset.corpus is not None:
        corpus = testset.corpus
    files = folder_texts(out, corpus, testset, split=split, review=review)
    created = not out.exists()
    try:
        with locked(out):
            replace_files(
                out, files, what="test-set folder", hint="pass --out DIR to write it elsewhere"
            )
    except BaseException:
        if created:
            _remove_empty(out)
        raise


def folder_texts(
    out: Path, corpus: Corpus, testset: TestSet, *, split: str, review: bool
) -> dict[str, str | None]:
    """The text of every file the folder gets (None: a file to remove), ``dataset.json`` last;
    raises what would refuse the test set (an id a qrels TSV cannot hold) before any write."""
    corpus_text = corpus_jsonl(corpus)
    queries_text = _jsonl([{"_id": c.query_id, "text": c.text} for c in testset])
    qrels_text = qrels_tsv(testset.queries)
    answers = [{"query_id": c.query_id, "answer": c.answer} for c in testset if c.answer]
    provenance = dict(testset.provenance)
    files: dict[str, str | None] = {
        "corpus.jsonl": corpus_text,
        "queries.jsonl": queries_text,
        f"qrels/{split}.tsv": qrels_text,
        # No answers: an earlier set's references would name these ids.
        ANSWERS: _jsonl(answers) if answers else None,
    }
    if review:
        fingerprint = testset_fingerprint(corpus_text, queries_text, qrels_text)
        provenance[PROVENANCE_FINGERPRINT] = fingerprint
        files[REVIEW] = _jsonl(review_rows(testset.queries, corpus, fingerprint))
        files[GENERATED] = _jsonl([c.to_dict() for c in testset.queries])
    manifest = {
        "format": "beir",
        "name": testset.provenance.get("name") or out.name,
        "about": "A test set generated from a corpus by ragmetrics generate; see provenance.",
        "documents": "corpus.jsonl",
        "queries": "queries.jsonl",
        "qrels": {split: f"qrels/{split}.tsv"},
        "provenance": provenance,
    }
    files[MANIFEST] = json.dumps(manifest, indent=2, ensure_ascii=False, sort_keys=True) + "\n"
    return files


def _remove_empty(out: Path) -> None:
    """Remove the folder a failed first write created, when nothing else is in it."""
    for folder in (out / "qrels", out):
        with contextlib.suppress(OSError):
            folder.rmdir()


def rebuild_from_review(
    target: Path, review: str | Path, *, accepted_only: bool, split: str
) -> TestSet:
    """Rewrite the test set in ``target`` from a person's ``review`` of it (``ragmetrics
    generate --apply-review``) and return it. A review of another test set (another corpus,
    another seed) is refused: its rows' documents and fingerprint are those of its own set."""
    provenance = generated_provenance(target) if target.is_dir() else None
    if provenance is None:
        raise ConfigError(f"--out {target}: holds no test set that ragmetrics generate wrote")
    corpus = read_corpus(target / "corpus.jsonl")
    fingerprint = provenance.get(PROVENANCE_FINGERPRINT)
    rows = read_review(
        review,
        corpus,
        fingerprint=fingerprint if isinstance(fingerprint, str) else None,
        where=str(target / "corpus.jsonl"),
    )
    generated = read_generated(target / GENERATED) if (target / GENERATED).is_file() else None
    kept, summary = apply_review(rows, review, accepted_only=accepted_only, generated=generated)
    if not kept:
        raise ConfigError(
            f"--apply-review {review}: the review keeps no query (rejected "
            f"{summary['reject']}, undecided {summary['undecided']}"
            f"{' and --accepted-only' if accepted_only else ''}); nothing was written: a test "
            "set of 0 queries tests nothing"
        )
    provenance.update(review=summary, queries=len(kept))
    provenance["references"] = sum(1 for c in kept if c.answer)
    testset = TestSet(tuple(kept), provenance)
    write_testset(target, corpus, testset, split=split, review=False)
    return testset
