"""Generated answers and reference answers: the records, their JSONL files, and how a
label-style reference is matched.

A **generated answer** is what the pipeline under test said for one query, with the contexts
it was given (``answers`` files the ``rag_answers`` fixture records and replays)::

    {"query_id": "1", "query": "...", "answer": "...",
     "contexts": [{"id": "doc-7", "text": "..."}, ...],
     "usage": {"prompt_tokens": 812, "completion_tokens": 41}}      # usage optional

A **reference** is what a correct answer says (a dataset's ``answers.jsonl``)::

    {"query_id": "1", "answer": "free text of a correct answer"}    # judged: agrees?
    {"query_id": "1", "label": "SUPPORT"}                            # exact match, normalised
    {"query_id": "1", "label": "SUPPORT", "answer": "..."}           # both: the label decides

``_id`` or ``id`` may stand for ``query_id``. Where the file lives: a BEIR folder has
``answers.jsonl`` next to ``queries.jsonl``; a FlagEmbedding folder has
``{split}_answers.jsonl`` next to ``{split}_queries.jsonl`` (or one ``answers.jsonl``).
Gzipped files (``.jsonl.gz``) are read too.
"""

from __future__ import annotations

import json
import os
import re
import unicodedata
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.textfile import PathLike, read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError

_ID_KEYS = ("query_id", "_id", "id")


def _query_id(record: Mapping[str, Any], path: Path, line: int) -> str:
    for key in _ID_KEYS:
        value = record.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            value = str(value)
        if isinstance(value, str) and value:
            return value
    raise DataFormatError("no query id: give 'query_id' (or '_id', 'id') as a string", path, line)


def _optional_str(record: Mapping[str, Any], key: str, path: Path, line: int) -> str | None:
    value = record.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise DataFormatError(f"{key!r} must be a string, got {type(value).__name__}", path, line)
    return value


# -- generated answers --------------------------------------------------------------------------


@dataclass(frozen=True)
class GeneratedAnswer:
    """What the pipeline under test answered to one query, from which contexts.

    ``contexts`` are ``(context id, text)`` pairs in the order the generator saw them;
    ``prompt_tokens``/``completion_tokens`` are what the endpoint reported (None: unknown).
    """

    query_id: str
    query: str
    answer: str
    contexts: tuple[tuple[str, str], ...] = ()
    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    def __post_init__(self) -> None:
        contexts = tuple(tuple(pair) for pair in self.contexts)
        object.__setattr__(self, "contexts", contexts)
        seen: set[str] = set()
        for pair in contexts:
            if len(pair) != 2 or not all(isinstance(part, str) for part in pair):
                raise DataFormatError(
                    f"query {self.query_id!r}: each context must be an (id, text) pair of "
                    f"strings, got {pair!r:.80}"
                )
            if pair[0] in seen:
                # Verdicts are named by context id: two contexts with one id would share one.
                raise DataFormatError(
                    f"query {self.query_id!r}: context id {pair[0]!r} appears twice; give each "
                    "context its own id"
                )
            seen.add(pair[0])

    @property
    def context_texts(self) -> list[str]:
        """The contexts' texts, in order."""
        return [text for _, text in self.contexts]

    def to_dict(self) -> dict[str, Any]:
        """The JSON-ready line of an answers file."""
        data: dict[str, Any] = {
            "query_id": self.query_id,
            "query": self.query,
            "answer": self.answer,
            "contexts": [{"id": cid, "text": text} for cid, text in self.contexts],
        }
        if self.prompt_tokens is not None or self.completion_tokens is not None:
            data["usage"] = {
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
            }
        return data

    @classmethod
    def from_dict(
        cls, data: Mapping[str, Any], path: PathLike = "<answers>", line: int = 0
    ) -> GeneratedAnswer:
        """Rebuild from :meth:`to_dict` output; a DataFormatError names ``path`` and ``line``."""
        where = Path(path)
        qid = _query_id(data, where, line)
        answer = data.get("answer")
        if not isinstance(answer, str):
            raise DataFormatError(f"query {qid!r}: 'answer' must be a string", where, line)
        query = _optional_str(data, "query", where, line) or ""
        raw = data.get("contexts", [])
        if not isinstance(raw, list):
            raise DataFormatError(f"query {qid!r}: 'contexts' must be a list", where, line)
        contexts: list[tuple[str, str]] = []
        for position, item in enumerate(raw):
            if isinstance(item, str):
                contexts.append((str(position), item))
            elif isinstance(item, Mapping) and isinstance(item.get("text"), str):
                contexts.append((str(item.get("id", position)), item["text"]))
            else:
                raise DataFormatError(
                    f"query {qid!r}: context {position} must be a string or "
                    '{"id": ..., "text": ...}',
                    where,
                    line,
                )
        usage = data.get("usage") or {}
        if not isinstance(usage, Mapping):
            raise DataFormatError(f"query {qid!r}: 'usage' must be an object", where, line)
        tokens = [usage.get("prompt_tokens"), usage.get("completion_tokens")]
        for value in tokens:
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int) or value < 0
            ):
                raise DataFormatError(
                    f"query {qid!r}: usage token counts must be non-negative integers",
                    where,
                    line,
                )
        try:
            return cls(qid, query, answer, tuple(contexts), tokens[0], tokens[1])
        except DataFormatError as exc:
            raise DataFormatError(exc.reason, where, line) from None


def read_answers(path: PathLike) -> list[GeneratedAnswer]:
    """Generated answers from JSONL, in file order; a query id twice is an error naming both
    lines."""
    p = resolve(path)
    found = answers_of(read_jsonl(p), p)
    if not found:
        raise DataFormatError("no answers in the file (it is empty)", p)
    return found


def answers_of(lines: Iterable[tuple[int, dict[str, Any]]], path: Path) -> list[GeneratedAnswer]:
    """The answers of ``(line number, JSON object)`` pairs read from ``path``, in order; a
    query id answered twice is an error naming both lines."""
    found: list[GeneratedAnswer] = []
    first: dict[str, int] = {}
    for line, record in lines:
        answer = GeneratedAnswer.from_dict(record, path, line)
        if answer.query_id in first:
            raise DataFormatError(
                f"query id {answer.query_id!r} already answered on line "
                f"{first[answer.query_id]}; keep one answer per query",
                path,
                line,
            )
        first[answer.query_id] = line
        found.append(answer)
    return found


def answers_jsonl(
    answers: Iterable[GeneratedAnswer], extra: Mapping[str, Any] | None = None
) -> str:
    """The text of an answers file (one sorted-key JSON object per line, each with the keys
    of ``extra`` too)."""
    return "".join(
        json.dumps({**a.to_dict(), **(extra or {})}, ensure_ascii=False, sort_keys=True) + "\n"
        for a in answers
    )


def write_answers(
    path: PathLike,
    answers: Iterable[GeneratedAnswer],
    *,
    hint: str = "",
    extra: Mapping[str, Any] | None = None,
) -> None:
    """Write an answers file atomically (under a lock: parallel writers never interleave); a
    refused write is an OutputError naming the file, with ``hint`` (how to write elsewhere).
    ``extra`` keys go on every line (the corpus a recording was made on)."""
    from pytest_ragmetrics.fileio import atomic_write_text, exclusive_lock, lock_beside, writing

    target = Path(path)
    what = "recorded answers"
    with writing(target, what=what, hint=hint):
        target.parent.mkdir(parents=True, exist_ok=True)
    text = answers_jsonl(answers, extra)
    with exclusive_lock(lock_beside(target, hidden=False), what=what, hint=hint):
        atomic_write_text(target, text, what=what, hint=hint)


# -- references ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reference:
    """What a correct answer to one query says: free ``text``, a ``label``, or both (the
    label then decides: exact match after :func:`normalise_label`). A blank text or label
    (whitespace only) is none: a blank label would otherwise decide, and match no answer."""

    query_id: str
    text: str | None = None
    label: str | None = None

    def __post_init__(self) -> None:
        for name in ("text", "label"):
            value = getattr(self, name)
            if isinstance(value, str) and not value.strip():
                object.__setattr__(self, name, None)


class References(Mapping[str, Reference]):
    """Reference answers by query id, with the file they came from."""

    def __init__(self, references: Iterable[Reference], source: str | None = None) -> None:
        self._by_id = {r.query_id: r for r in references}
        self.source = source

    def __getitem__(self, query_id: str) -> Reference:
        return self._by_id[query_id]

    def __iter__(self) -> Iterator[str]:
        return iter(self._by_id)

    def __len__(self) -> int:
        return len(self._by_id)

    def __repr__(self) -> str:
        return f"References({len(self)} queries, source={self.source!r})"

    @property
    def labels(self) -> list[str]:
        """The distinct labels, in first-seen order."""
        return list(dict.fromkeys(r.label for r in self._by_id.values() if r.label is not None))


def read_references(path: PathLike) -> References:
    """References from JSONL (the format in this module's docstring); every error names the
    file and line."""
    p = resolve(path)
    found: list[Reference] = []
    first: dict[str, int] = {}
    for line, record in read_jsonl(p):
        qid = _query_id(record, p, line)
        text = _optional_str(record, "answer", p, line)
        label = _optional_str(record, "label", p, line)
        reference = Reference(qid, text, label)
        if reference.text is None and reference.label is None:
            raise DataFormatError(
                f"query {qid!r}: a reference needs a non-empty 'answer' (free text) or 'label'",
                p,
                line,
            )
        if reference.label is not None and not normalise_label(reference.label):
            raise DataFormatError(
                f"query {qid!r}: label {label!r} has no letter or digit, so no answer can "
                "match it (labels are compared after normalise_label)",
                p,
                line,
            )
        if qid in first:
            raise DataFormatError(
                f"query id {qid!r} already has a reference on line {first[qid]}", p, line
            )
        first[qid] = line
        found.append(reference)
    if not found:
        raise DataFormatError("no references in the file (it is empty)", p)
    return References(found, os.fspath(p))


def references_file(folder: PathLike, split: str = "test") -> Path | None:
    """A dataset folder's references: ``{split}_answers.jsonl`` (FlagEmbedding layout) or
    ``answers.jsonl`` (BEIR layout, or one file for every split); None when it has none."""
    root = Path(folder)
    for name in (f"{split}_answers.jsonl", "answers.jsonl"):
        candidate = resolve(root / name)
        if candidate.is_file():
            return candidate
    return None


def load_references(folder: PathLike, split: str = "test") -> References | None:
    """The references of a dataset folder (see :func:`references_file`), or None."""
    path = references_file(folder, split)
    return None if path is None else read_references(path)


# -- label matching -----------------------------------------------------------------------------

_NOT_WORD = re.compile(r"[^0-9a-z]+")


def normalise_label(text: str) -> str:
    """How labels and answers are compared: Unicode NFKC, case-folded, every run of
    characters other than a-z and 0-9 (punctuation, underscores, white space) one space,
    stripped. ``"Not-enough_info."`` and ``"NOT ENOUGH INFO"`` both become
    ``"not enough info"``."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return _NOT_WORD.sub(" ", folded).strip()


_LEAD_IN = re.compile(r"^\W*(?:verdict|answer|label|final answer)\s*[:\-]", re.IGNORECASE)


def answer_label(answer: str, labels: Sequence[str]) -> str | None:
    """The label an answer gives: the longest of ``labels`` that the normalised answer equals
    or starts with as whole words (``"SUPPORT. The abstract shows ..."`` gives ``SUPPORT``);
    a lead-in ``Verdict:``, ``Answer:``, ``Label:`` or ``Final answer:`` is skipped first.
    None when it starts with none of them."""
    said = normalise_label(_LEAD_IN.sub("", answer, count=1))
    best: str | None = None
    for label in labels:
        wanted = normalise_label(label)
        matched = wanted and (said == wanted or said.startswith(wanted + " "))
        if matched and (best is None or len(wanted) > len(normalise_label(best))):
            best = label
    return best


def label_matches(answer: str, label: str, labels: Sequence[str] = ()) -> bool:
    """Whether ``answer`` gives ``label``: :func:`answer_label` among ``labels`` (plus
    ``label``) is ``label``, after normalisation."""
    given = answer_label(answer, [label, *labels])
    return given is not None and normalise_label(given) == normalise_label(label)


def split_label(answer: str, labels: Sequence[str]) -> tuple[str | None, str]:
    """(the label the answer starts with, the rest of the answer after it): for answers
    shaped "LABEL. rationale", whose rationale alone makes claims. Without a known label,
    (None, the whole answer)."""
    label = answer_label(answer, labels)
    if label is None:
        return None, answer
    words = len(normalise_label(label).split())
    answer = _LEAD_IN.sub("", answer, count=1)
    # Skip the label's words (and what separates them) in the original text.
    rest = re.sub(r"^\W*" + r"\W+".join([r"\w+"] * words), "", answer, count=1)
    return label, rest.lstrip(" \t\n.:;,-)]*")
