"""Pooling: the unjudged (query, document) pairs that runs bring into their top ``depth``, a
JSONL pool file a person can review and fill in, relevance labels from a judge, and the
supplementary qrels those labels make (human judgments always win).

Files:

- pool file (JSONL), one row per pair: ``query_id``, ``doc_id``, ``query``, ``title``,
  ``text``, ``runs`` (which runs retrieved it, at which rank), ``relevant`` (null until
  judged: true/false), ``judge`` (identity of the judge that labelled it, null for a person),
  ``verdict`` (its raw verdict), ``prompt_tokens`` / ``completion_tokens``, ``dataset``
  (``{"corpus": fingerprint}`` of the dataset the texts came from; null without one).
- supplementary qrels: TREC qrels (``qid 0 docno grade``, 1 relevant, 0 not) after a header
  line ``# ragmetrics supplementary qrels; judge: {identity JSON}`` naming the judge, which
  :func:`read_supplementary_qrels` reads back (the κ gate looks the judge up by it), and one
  naming the dataset the labels were made for (see :mod:`pytest_ragmetrics.provenance`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.data.model import Corpus, Qrels, Queries, Run
from pytest_ragmetrics.data.textfile import read_jsonl, resolve
from pytest_ragmetrics.errors import ConfigError, DataFormatError
from pytest_ragmetrics.fileio import (
    atomic_write_text,
    exclusive_lock,
    is_stream,
    lock_beside,
)
from pytest_ragmetrics.supplementary import HEADER_PREFIX as HEADER_PREFIX
from pytest_ragmetrics.supplementary import Supplement as Supplement
from pytest_ragmetrics.supplementary import SupplementaryQrels as SupplementaryQrels
from pytest_ragmetrics.supplementary import labels_text
from pytest_ragmetrics.supplementary import load_supplement as load_supplement
from pytest_ragmetrics.supplementary import read_supplementary_qrels as read_supplementary_qrels
from pytest_ragmetrics.supplementary import supplement as supplement
from pytest_ragmetrics.supplementary import supplemented_note as supplemented_note

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.relevance import RelevanceJudge, RelevanceVerdict

PathLike = str | os.PathLike[str]
BATCH = 64  # pairs handed to a judge at once (progress granularity, the verdict cache)


@dataclass(frozen=True)
class PoolEntry:
    """One unjudged (query, document) pair of a pool, and its label once judged."""

    query_id: str
    doc_id: str
    query: str | None = None
    title: str | None = None
    text: str | None = None
    runs: Mapping[str, int] = field(default_factory=dict)  # run label -> rank
    relevant: bool | None = None
    judge: Mapping[str, Any] | None = None
    verdict: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    line: int = 0  # where it was read from (0: built here)
    dataset: Mapping[str, str] | None = None  # the dataset its texts came from

    @property
    def passage(self) -> str | None:
        """What a judge reads: title and text, as the retrievers index them."""
        if self.text is None:
            return None
        return f"{self.title} {self.text}".strip() if self.title else self.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "query": self.query,
            "title": self.title,
            "text": self.text,
            "runs": dict(self.runs),
            "relevant": self.relevant,
            "judge": None if self.judge is None else dict(self.judge),
            "verdict": self.verdict,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "dataset": None if self.dataset is None else dict(self.dataset),
        }


# -- building ----------------------------------------------------------------------------------


def build_pool(
    qrels: Qrels,
    runs: Sequence[tuple[str, Run]],
    depth: int,
    *,
    queries: Queries | None = None,
    corpus: Corpus | None = None,
) -> list[PoolEntry]:
    """The unjudged pairs in the union of the runs' top ``depth``, for the judged queries.

    A pair is unjudged when the qrels give it no grade >= 0 (TREC's -1, "pooled but not
    judged", is unjudged). Rows come by query (qrels order), then by best rank over the runs.
    With ``queries``/``corpus`` the rows carry the texts a reviewer or a judge reads and the
    corpus fingerprint; a document missing from ``corpus`` is a DataFormatError naming the run.
    """
    from pytest_ragmetrics.provenance import made_for

    if depth < 1:
        raise DataFormatError(f"pool depth must be at least 1, got {depth}")
    if not runs:
        raise DataFormatError("a pool needs at least one run")
    judged_queries = [q for q in qrels.query_ids.tolist() if qrels.judgments(q)]
    entries: list[PoolEntry] = []
    for qid in judged_queries:
        judged = {d for d, g in qrels.judgments(qid).items() if g >= 0}
        found: dict[str, dict[str, int]] = {}
        for label, run in runs:
            for rank, (doc, _) in enumerate(run.ranking(qid)[:depth], start=1):
                if doc not in judged:
                    found.setdefault(doc, {})[label] = rank
        for doc, ranks in sorted(found.items(), key=lambda item: (min(item[1].values()), item[0])):
            title = text = None
            if corpus is not None:
                if doc not in corpus:
                    where = ", ".join(ranks)
                    raise DataFormatError(
                        f"run {where}: document {doc!r} (query {qid!r}) is not in the corpus"
                    )
                document = corpus[doc]
                title, text = document.title, document.text
            query = None
            if queries is not None:
                try:
                    query = queries[qid]
                except (KeyError, DataFormatError):
                    query = None
            entries.append(
                PoolEntry(qid, doc, query, title, text, ranks)
                if corpus is None
                else PoolEntry(qid, doc, query, title, text, ranks, dataset=made_for(corpus))
            )
    return entries


# -- the pool file -----------------------------------------------------------------------------


def write_pool(path: PathLike, entries: Sequence[PoolEntry], *, hint: str = "") -> None:
    """Write the pool file atomically, under a lock against concurrent writers; a refused
    write is an OutputError naming the file, with ``hint`` (how to write elsewhere)."""
    text = "".join(json.dumps(e.to_dict(), ensure_ascii=False) + "\n" for e in entries)
    _write_locked(path, text, "pool file", hint)


def keep_decisions(
    entries: Sequence[PoolEntry], earlier: Sequence[PoolEntry]
) -> tuple[list[PoolEntry], int, list[PoolEntry]]:
    """``entries`` with the verdicts (a person's or a judge's) of the ``earlier`` pool file's
    rows for the same pair on the same corpus; returns them, how many were kept, and the
    decided earlier rows that found no place (their pair left the pool, or its corpus changed).
    """
    decided = {(e.query_id, e.doc_id): e for e in earlier if e.relevant is not None}
    out, kept = [], 0
    for entry in entries:
        key = (entry.query_id, entry.doc_id)
        old = decided.get(key)
        if old is None or _other_corpus(old, entry):
            out.append(entry)
            continue
        del decided[key]
        kept += 1
        out.append(
            replace(
                entry,
                relevant=old.relevant,
                judge=old.judge,
                verdict=old.verdict,
                prompt_tokens=old.prompt_tokens,
                completion_tokens=old.completion_tokens,
            )
        )
    return out, kept, list(decided.values())


def keep_verdicts(
    target: Path, entries: list[PoolEntry], qrels: Qrels, *, label: str
) -> tuple[list[PoolEntry], int]:
    """``entries`` with the verdicts of the pool file ``target`` (named ``label`` in errors)
    they replace, kept for the pairs still pooled, and how many; a ConfigError when a verdict
    would be lost (its pair left the pool, or its corpus changed) without being in the qrels.
    A stream, a missing or an empty file holds none."""
    if is_stream(target) or not target.is_file() or target.stat().st_size == 0:
        return entries, 0
    entries, kept, lost = keep_decisions(entries, read_pool(target))
    # A pair the qrels judge now needs no verdict of ours: human judgments win.
    lost = [e for e in lost if qrels.judgments(e.query_id).get(e.doc_id, -1) < 0]
    if lost:
        pairs = ", ".join(f"{e.query_id}/{e.doc_id} (line {e.line})" for e in lost[:3])
        more = f" and {len(lost) - 3} more" if len(lost) > 3 else ""
        raise ConfigError(
            f"{label}: {len(lost)} rows there carry a verdict (relevant true/false) for "
            f"pairs this pool no longer holds, or holds for another corpus: {pairs}{more}; "
            "replacing the file would lose them. Add them to the qrels first, or write the new "
            "pool to another file"
        )
    return entries, kept


def _other_corpus(a: PoolEntry, b: PoolEntry) -> bool:
    """Whether two rows name different corpora: a verdict on other texts is none on these."""
    return a.dataset is not None and b.dataset is not None and a.dataset != b.dataset


def _write_locked(path: PathLike, text: str, what: str, hint: str) -> None:
    target = Path(path)
    with exclusive_lock(lock_beside(target), what=what, hint=hint):
        atomic_write_text(target, text, what=what, hint=hint)


def read_pool(path: PathLike) -> list[PoolEntry]:
    """Read a pool file; a malformed line is a DataFormatError naming the file and line."""
    p = resolve(path)
    entries: list[PoolEntry] = []
    seen: dict[tuple[str, str], int] = {}
    for line, record in read_jsonl(p):
        entry = _entry(record, p, line)
        key = (entry.query_id, entry.doc_id)
        if key in seen:
            raise DataFormatError(
                f"query {key[0]!r}, document {key[1]!r} already appears on line {seen[key]}",
                p,
                line,
            )
        seen[key] = line
        entries.append(entry)
    if not entries:
        raise DataFormatError("the pool is empty (no rows)", p)
    return entries


def _entry(record: Mapping[str, Any], path: Path, line: int) -> PoolEntry:
    relevant, judge, dataset, runs = _labels(record, path, line)
    query_id, doc_id = (
        _text(record, key, path, line, required=True) for key in ("query_id", "doc_id")
    )
    assert query_id is not None and doc_id is not None
    # In the order of the row's fields: the first bad one is the one reported.
    query, title, text, verdict = (
        _text(record, key, path, line) for key in ("query", "title", "text", "verdict")
    )
    prompt_tokens, completion_tokens = (
        _count(record, key, path, line) for key in ("prompt_tokens", "completion_tokens")
    )
    return PoolEntry(
        query_id,
        doc_id,
        query,
        title,
        text,
        runs,
        relevant,
        judge,
        verdict,
        prompt_tokens,
        completion_tokens,
        line,
        dataset,
    )


def _text(
    record: Mapping[str, Any], key: str, path: Path, line: int, *, required: bool = False
) -> str | None:
    """A row's text field (an integer id as text); None when absent and not ``required``."""
    value = record.get(key)
    if value is None and not required:
        return None
    if isinstance(value, int) and not isinstance(value, bool) and key.endswith("_id"):
        return str(value)
    if not isinstance(value, str) or (required and not value):
        raise DataFormatError(
            f"{key!r} must be a{' non-empty' if required else ''} string, got {value!r}",
            path,
            line,
        )
    return value


def _count(record: Mapping[str, Any], key: str, path: Path, line: int) -> int | None:
    """A row's token count: a non-negative integer or None."""
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise DataFormatError(f"{key!r} must be a non-negative integer or null", path, line)
    return value


def _labels(
    record: Mapping[str, Any], path: Path, line: int
) -> tuple[bool | None, dict[str, Any] | None, dict[str, Any] | None, dict[str, int]]:
    """A row's verdict (``relevant``), its ``judge``, ``dataset`` and ``runs``, checked."""
    relevant = record.get("relevant")
    if isinstance(relevant, int) and not isinstance(relevant, bool) and relevant in (0, 1):
        relevant = bool(relevant)
    if relevant is not None and not isinstance(relevant, bool):
        raise DataFormatError(
            f"'relevant' must be true, false or null (not judged yet), got {relevant!r}",
            path,
            line,
        )
    judge = record.get("judge")
    if judge is not None and not isinstance(judge, dict):
        raise DataFormatError("'judge' must be a judge identity (an object) or null", path, line)
    dataset = record.get("dataset")
    if dataset is not None and not (
        isinstance(dataset, dict) and isinstance(dataset.get("corpus"), str)
    ):
        raise DataFormatError('\'dataset\' must be {"corpus": "<fingerprint>"} or null', path, line)
    runs = record.get("runs") or {}
    if not isinstance(runs, dict) or not all(
        isinstance(r, int) and not isinstance(r, bool) for r in runs.values()
    ):
        raise DataFormatError("'runs' must map run names to ranks", path, line)
    return relevant, judge, dataset, runs


# -- judging -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class JudgedPool:
    """A pool after judging: its rows, and what judging it cost."""

    entries: list[PoolEntry]
    judged: int  # rows the judge labelled now
    kept: int  # rows that already had a label (a person's, or an earlier run's) and were kept
    unjudged: int  # rows left without a verdict (the judge gave none)
    asked: int  # verdicts not from the cache
    prompt_tokens: int
    completion_tokens: int

    def summary(self) -> dict[str, int]:
        return {
            "rows": len(self.entries),
            "judged": self.judged,
            "kept": self.kept,
            "unjudged": self.unjudged,
            "relevant": sum(1 for e in self.entries if e.relevant is True),
            "asked": self.asked,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
        }


def judge_pool(
    entries: Sequence[PoolEntry],
    judge: RelevanceJudge,
    *,
    path: PathLike | None = None,
    rejudge: bool = False,
    batch: int = BATCH,
    advance: Any = None,
) -> JudgedPool:
    """Label every row without a verdict with ``judge`` (all rows with ``rejudge``).

    Rows need their query and document text; a row without is a DataFormatError naming the
    pool file and line. ``advance(n)`` is told of progress.
    """
    todo = [i for i, e in enumerate(entries) if rejudge or e.relevant is None]
    for i in todo:
        entry = entries[i]
        if entry.query is None or entry.passage is None:
            missing = "query" if entry.query is None else "text"
            raise DataFormatError(
                f"query {entry.query_id!r}, document {entry.doc_id!r} has no {missing}; build "
                "the pool with --dataset so that rows carry the texts a judge reads",
                path,
                entry.line or None,
            )
    out = list(entries)
    verdicts: list[RelevanceVerdict] = []
    size = max(1, batch)
    for start in range(0, len(todo), size):
        chunk = todo[start : start + size]
        verdicts += _judge_rows(judge, entries, chunk, out)
        if advance is not None:
            advance(len(chunk))
    fresh = [v for v in verdicts if not v.cached]
    return JudgedPool(
        out,
        judged=sum(1 for v in verdicts if v.relevant is not None),
        kept=len(entries) - len(todo),
        unjudged=sum(1 for v in verdicts if v.relevant is None),
        asked=len(fresh),
        prompt_tokens=sum(v.prompt_tokens or 0 for v in fresh),
        completion_tokens=sum(v.completion_tokens or 0 for v in fresh),
    )


def _judge_rows(
    judge: RelevanceJudge, entries: Sequence[PoolEntry], rows: list[int], out: list[PoolEntry]
) -> list[RelevanceVerdict]:
    """Judge the ``rows`` of ``entries`` in one call; each row, labelled with the verdict and
    the judge's identity as of that judging (an embedding judge's encoder is read again at
    each), goes into ``out``."""
    from pytest_ragmetrics.judges.relevance import RelevancePair

    pairs = [
        RelevancePair(
            entries[i].query or "", entries[i].passage or "", entries[i].query_id, entries[i].doc_id
        )
        for i in rows
    ]
    found = judge.judge_relevance(pairs)
    identity = judge.identity()
    for i, verdict in zip(rows, found, strict=True):
        out[i] = replace(
            entries[i],
            relevant=verdict.relevant,
            judge=identity,
            verdict=verdict.verdict,
            prompt_tokens=verdict.prompt_tokens,
            completion_tokens=verdict.completion_tokens,
        )
    return list(found)


# -- supplementary qrels -----------------------------------------------------------------------


def supplementary_lines(entries: Sequence[PoolEntry]) -> tuple[dict[str, Any] | None, str]:
    """(the judge named in the header, the qrels text) of the labelled rows of a pool.

    The header names the judge when one judge labelled every labelled row (``{"name":
    "person"}`` for rows a person labelled, ``judge`` null); rows of several make it
    ``{"name": "mixed", ...}`` and each labeller's rows follow a line naming it, so the κ gate
    decides per labeller (see :mod:`pytest_ragmetrics.supplementary`).
    """
    labelled = [e for e in entries if e.relevant is not None]
    from pytest_ragmetrics.provenance import dataset_line, one_dataset

    judge, header, body = labels_text(
        [(e.judge, e.query_id, e.doc_id, bool(e.relevant)) for e in labelled]
    )
    made_for = one_dataset([e.dataset for e in labelled], "the pool")
    if made_for is not None:
        header += dataset_line(made_for)
    return judge, header + body


def write_supplementary_qrels(
    path: PathLike, entries: Sequence[PoolEntry], *, hint: str = ""
) -> int:
    """Write the labelled rows as TREC qrels with the judge header; returns the rows written.
    No labelled row is a DataFormatError (the file would add nothing)."""
    labelled = sum(1 for e in entries if e.relevant is not None)
    if not labelled:
        raise DataFormatError("no row of the pool has a verdict: nothing to write")
    _, text = supplementary_lines(entries)
    _write_locked(path, text, "supplementary qrels", hint)
    return labelled
