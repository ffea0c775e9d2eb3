"""Calibrating the answer-relevance question: how well a judge's "does this answer address the
question?" (what decides answer_relevance) agrees with human labels, read from a labels file
of (question, answer, RELEVANT / NOT_RELEVANT) items. A threshold judge (the embedding judge's
``relevance_threshold``) gets its threshold tuned on one seeded part of the labels and is
scored on the rest."""

from __future__ import annotations

import functools
import os
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.assessments import Verdict
from pytest_ragmetrics.data.textfile import read_jsonl
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.calibration import answer_questions, figures
from pytest_ragmetrics.judges.protocols import AnswerRelevanceJudge, Judge

PathLike = str | os.PathLike[str]
ANSWER_RELEVANCE_LABELS = {"RELEVANT": True, "NOT_RELEVANT": False}
QUESTION = "answer-relevance"
_QUESTION = answer_questions.AnswerQuestion(
    "relevance", "answer-relevance", "judge_answer_relevance", "relevance_threshold"
)


@dataclass(frozen=True)
class LabelledResponse:
    """One (question, answer) with a human label; ``addresses`` ⇔ the answer addresses the
    question (label RELEVANT)."""

    id: str
    question: str
    answer: str
    addresses: bool
    label: str
    line: int = 0


def _text(record: Mapping[str, Any], key: str, path: PathLike, line: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        what = "missing" if key not in record else "not a non-empty string"
        raise DataFormatError(f"{key!r} is {what}", path, line)
    return value


def _label(record: Mapping[str, Any], path: PathLike, line: int) -> tuple[bool, str]:
    """(addresses, the label's name) of an item: RELEVANT / NOT_RELEVANT in any case, a
    space or hyphen for the underscore, or a JSON boolean."""
    label = record.get("label")
    if isinstance(label, bool):
        return label, "RELEVANT" if label else "NOT_RELEVANT"
    if isinstance(label, str):
        name = "_".join(label.replace("-", " ").upper().split())
        if name in ANSWER_RELEVANCE_LABELS:
            return ANSWER_RELEVANCE_LABELS[name], name
    what = "missing" if "label" not in record else f"got {label!r}"
    raise DataFormatError(
        f"'label' must be RELEVANT or NOT_RELEVANT (or true/false), {what}", path, line
    )


def _item(record: Mapping[str, Any], path: PathLike, line: int) -> LabelledResponse:
    if "id" in record:
        value = record["id"]
        if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
            raise DataFormatError(
                f"'id' is not a non-empty string or integer: {value!r}", path, line
            )
        item_id = str(value)
    else:
        item_id = f"line-{line}"
    question = _text(record, "question", path, line)
    answer = _text(record, "answer", path, line)
    addresses, name = _label(record, path, line)
    return LabelledResponse(item_id, question, answer, addresses, name, line)


def read_answer_relevance_labels(path: PathLike) -> list[LabelledResponse]:
    """Read human answer-relevance labels from a JSONL file (gzipped too), one item a line:
    ``{"id"?, "question", "answer", "label"}`` with label RELEVANT (the answer addresses the
    question) or NOT_RELEVANT (any case; "not relevant" too), or a JSON boolean; the id
    defaults to the line number.

    Any error (a missing or empty question or answer, an unknown label, a repeated id, an
    empty file) is a DataFormatError naming the file and line.
    """
    items: list[LabelledResponse] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path):
        item = _item(record, path, line)
        if item.id in seen:
            raise DataFormatError(
                f"item id {item.id!r} already appears on line {seen[item.id]}", path, line
            )
        seen[item.id] = line
        items.append(item)
    if not items:
        raise DataFormatError("no labelled items in the file (it is empty)", path)
    return items


def calibrate_answer_relevance(
    judge: Any,
    labels: Sequence[LabelledResponse] | PathLike,
    *,
    seed: int = 0,
    tune_fraction: float = 0.5,
    limit: int | None = None,
    tune: bool = True,
) -> figures.CalibrationResult:
    """Measure a judge's answer-relevance question ("does this answer address the question?",
    what decides answer_relevance) against human labels (a labels file or
    :func:`read_answer_relevance_labels` items).

    The judge answers as it does in evaluation: its ``judge_answer_relevance`` (the HTTP
    judge's relevance prompt and cache, the embedding judge's cosine of question and answer),
    else its ``assess`` with no contexts (a recorded judge: the assessment recorded under the
    item's id). A judge with ``with_relevance_threshold`` (the embedding judge) gets its
    relevance threshold tuned on a seeded ``tune_fraction`` of the items and is scored on the
    rest; the result's judge is the answer-relevance question's identity at the tuned
    threshold (what the κ gate looks up). Any other judge (or ``tune=False``) is scored on
    every item it gave a verdict. ``limit`` keeps the first N items (file order).
    """
    started = time.perf_counter()
    path, items = _labelled_items(labels, limit)
    if not isinstance(judge, (AnswerRelevanceJudge, Judge)):
        raise JudgeError(
            f"judge {type(judge).__name__!r} has neither judge_answer_relevance(items) nor "
            "assess(...): it cannot answer the answer-relevance question"
        )
    return answer_questions.calibrate_question(
        judge,
        _QUESTION,
        answer_questions.Labels(items, lambda item: item.addresses, _meta(items, path), path),
        functools.partial(_ask, judge),
        tune=tune,
        tune_fraction=tune_fraction,
        seed=seed,
        started=started,
    )


def _labelled_items(
    labels: Sequence[LabelledResponse] | PathLike, limit: int | None
) -> tuple[PathLike | None, list[LabelledResponse]]:
    """(the labels file or None, the first ``limit`` items); a JudgeError for none."""
    figures.check_limit(limit)
    if isinstance(labels, (str, os.PathLike)):
        path: PathLike | None = labels
        items = read_answer_relevance_labels(labels)
    else:
        path, items = None, list(labels)
    items = items[:limit]
    if not items:
        raise JudgeError("no labelled answer-relevance items to calibrate on")
    return path, items


def _meta(items: list[LabelledResponse], path: PathLike | None) -> dict[str, Any]:
    """What the result records of the labels it was measured on."""
    meta: dict[str, Any] = {
        "n": len(items),
        "sha256": figures.labels_digest(
            [item.id, item.question, item.answer, item.addresses] for item in items
        ),
        "question": QUESTION,
        "positives": sum(1 for item in items if item.addresses),
    }
    if path is not None:
        meta["file"] = Path(path).name
    return meta


def _assessed(judge: Judge, item: LabelledResponse) -> Verdict:
    """The answer-relevance verdict of a judge that has only ``assess`` (no contexts)."""
    found = judge.assess(item.question, item.answer, [], query_id=item.id)
    value = found.addresses_question
    if value is not None and not isinstance(value, bool):
        raise JudgeError(
            f"the answer-relevance verdict is the ordinal score {value} (relevance_scale "
            f"{found.relevance_scale}); calibration compares yes/no verdicts with the labels"
        )
    reply = (found.raw or {}).get("relevance")
    return Verdict("relevance", value, None, None if reply is None else str(reply))


def _ask(judge: Any, chunk: list[LabelledResponse]) -> list[Verdict]:
    if isinstance(judge, AnswerRelevanceJudge):
        return judge.judge_answer_relevance([(i.question, i.answer) for i in chunk])
    return [_assessed(judge, item) for item in chunk]


__all__ = [
    "ANSWER_RELEVANCE_LABELS",
    "LabelledResponse",
    "calibrate_answer_relevance",
    "read_answer_relevance_labels",
]
