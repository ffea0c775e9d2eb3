"""Recorded answers of several (dataset, split) pairs in one answers file.

With one dataset an answers file is plain JSONL of generated answers (see
:mod:`pytest_ragmetrics.data.answers`). With several, each line also says which pair it
answers, ``"dataset": {"name": "beta", "split": "test"}``, and recording one pair rewrites
only its own lines: recording two datasets keeps both, and replay finds each pair's own.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.answers import GeneratedAnswer, answers_of
from pytest_ragmetrics.data.textfile import PathLike, read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError

Pair = tuple[str, str]  # (dataset name, split)
TAG = "dataset"
# The fingerprint of the corpus the answers' contexts came from (written when recording; a
# hand-made file without it is not checked).
CORPUS = "corpus_sha256"


def _tag_of(record: Any, path: Path, line: int) -> Pair | None:
    tag = record.get(TAG) if isinstance(record, dict) else None
    if tag is None:
        return None
    if not (
        isinstance(tag, dict)
        and isinstance(tag.get("name"), str)
        and isinstance(tag.get("split"), str)
    ):
        raise DataFormatError(
            f'\'{TAG}\' must be {{"name": ..., "split": ...}}, got {tag!r:.80}', path, line
        )
    return tag["name"], tag["split"]


def _describe(pair: Pair) -> str:
    return f"dataset {pair[0]!r}, split {pair[1]!r}"


def read_recording(
    path: PathLike, pair: Pair | None = None, corpus: str | None = None
) -> tuple[list[GeneratedAnswer], str]:
    """The answers of ``pair`` in a recording and the sha256 of their lines.

    ``pair=None`` (one dataset configured): the untagged lines, or the lines of the only pair
    the file holds. A file of several pairs, an untagged file read for a pair, or a pair the
    file has no line of is a DataFormatError naming the file and what to do. With ``corpus``
    (the fingerprint of the corpus they are replayed on), a line recorded on another corpus
    is one too: its contexts are not this corpus's documents.
    """
    p = resolve(path)
    by_pair: dict[Pair | None, list[tuple[int, dict[str, Any]]]] = {}
    for line, record in read_jsonl(p):
        if not isinstance(record, dict):
            raise DataFormatError("each line must be a JSON object", p, line)
        by_pair.setdefault(_tag_of(record, p, line), []).append((line, record))
    if not by_pair:
        raise DataFormatError("no answers in the file (it is empty)", p)
    tagged = sorted(k for k in by_pair if k is not None)
    if pair is None:
        if len(by_pair) > 1:
            shown = ", ".join(_describe(k) if k else "untagged lines" for k in by_pair)
            raise DataFormatError(
                f"the recording holds the answers of several datasets ({shown}); configure "
                "them (ragmetrics_dataset) or record this dataset again",
                p,
            )
        chosen = next(iter(by_pair.values()))
    elif pair in by_pair:
        chosen = by_pair[pair]
    elif None in by_pair:
        raise DataFormatError(
            f"the recording does not say which dataset it answers (recorded with one "
            f"dataset configured), so it cannot answer {_describe(pair)}; record again with "
            "--ragmetrics-record-answers",
            p,
        )
    else:
        held = ", ".join(_describe(k) for k in tagged)
        raise DataFormatError(
            f"no answers recorded for {_describe(pair)} (the file holds {held}); record them "
            "with --ragmetrics-record-answers",
            p,
        )
    if corpus is not None:
        _check_corpus(chosen, corpus, p)
    answers = answers_of(chosen, p)
    digest = hashlib.sha256(
        "".join(json.dumps(r, sort_keys=True) + "\n" for _, r in chosen).encode("utf-8")
    ).hexdigest()
    return answers, digest


def _check_corpus(lines: list[tuple[int, dict[str, Any]]], corpus: str, path: Path) -> None:
    for line, record in lines:
        found = record.get(CORPUS)
        if found is None or found == corpus:
            continue
        if not isinstance(found, str):
            raise DataFormatError(f"'{CORPUS}' must be a string, got {found!r:.80}", path, line)
        raise DataFormatError(
            f"query {record.get('query_id')!r} was answered on another corpus (fingerprint "
            f"{found[:12]}, the dataset's is {corpus[:12]}): its contexts are not this "
            "corpus's documents; record the answers again with --ragmetrics-record-answers",
            path,
            line,
        )


def write_recording(
    path: PathLike,
    answers: Iterable[GeneratedAnswer],
    pair: Pair,
    *,
    hint: str = "",
    extra: dict[str, Any] | None = None,
) -> None:
    """Record the answers of ``pair``, keeping the other pairs' lines (under the file's
    lock, atomically: xdist workers recording different pairs keep each other's); a refused
    write is an OutputError naming the file, with ``hint``. ``extra`` keys go on each of
    this pair's lines."""
    from pytest_ragmetrics.fileio import atomic_write_text, exclusive_lock, lock_beside, writing

    target = Path(path)
    what = "recorded answers"
    with writing(target, what=what, hint=hint):
        target.parent.mkdir(parents=True, exist_ok=True)
    tag = {"name": pair[0], "split": pair[1]}
    with exclusive_lock(lock_beside(target, hidden=False), what=what, hint=hint):
        kept = [record for record in _readable(target) if _kept(record, pair)]
        mine = [{**a.to_dict(), **(extra or {}), TAG: tag} for a in answers]
        text = "".join(
            json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in kept + mine
        )
        atomic_write_text(target, text, what=what, hint=hint)


def _kept(record: Any, pair: Pair) -> bool:
    """Another pair's line (untagged lines, of a one-dataset recording, are replaced)."""
    tag = record.get(TAG) if isinstance(record, dict) else None
    return isinstance(tag, dict) and (tag.get("name"), tag.get("split")) != pair


def _readable(path: Path) -> list[Any]:
    """The lines of an existing recording; a missing or unreadable one holds nothing to keep
    (recording rewrites it, as it always did)."""
    if not path.exists():
        return []
    try:
        return [record for _, record in read_jsonl(path)]
    except (DataFormatError, OSError):
        return []
