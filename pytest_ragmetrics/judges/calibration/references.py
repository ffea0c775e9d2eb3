"""Calibrating the agreement question: how well a judge's "does the answer agree with the
reference?" agrees with human labels, read from a generic labels file (AGREE / DISAGREE) or
SciFact's claim_support (SUPPORT / CONTRADICT; NOINFO pairs left out)."""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.assessments import Verdict
from pytest_ragmetrics.data.textfile import read_jsonl
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.calibration import answer_questions, figures
from pytest_ragmetrics.judges.protocols import AgreementJudge

PathLike = str | os.PathLike[str]
AGREEMENT_LABELS = {"AGREE": True, "DISAGREE": False}
# SciFact claim_support: SUPPORT = the evidence agrees with the claim, CONTRADICT = it does not;
# NOINFO pairs have no evidence sentences, so no reference to agree with: they are left out.
SCIFACT_AGREEMENT = {"SUPPORT": True, "CONTRADICT": False}
GENERIC_LAYOUT = "generic"
SCIFACT_LAYOUT = "scifact claim_support"
_GENERIC_FIELDS = ("answer", "reference")
_SCIFACT_FIELDS = ("claim", "context_sentences", "evidence_sentences")
_QUESTION = answer_questions.AnswerQuestion(
    "agreement", "agreement", "judge_agreement", "agreement_threshold"
)


@dataclass(frozen=True)
class LabelledAnswer:
    """One (question, answer, reference) with a human label; ``agrees`` ⇔ the answer agrees
    with the reference."""

    id: str
    question: str
    answer: str
    reference: str
    agrees: bool
    label: str
    line: int = 0


@dataclass(frozen=True)
class AgreementLabels:
    """The labelled items of an agreement labels file (``path``), its layout, and how many
    items were left out (``left_out``) for what reason (``left_out_reason``)."""

    items: tuple[LabelledAnswer, ...]
    layout: str
    left_out: int = 0
    left_out_reason: str = ""
    path: str | None = None

    def __len__(self) -> int:
        return len(self.items)


def _layout(record: Mapping[str, Any], path: PathLike, line: int) -> str:
    """The layout of a labels file, told from its first item."""
    generic = [k for k in _GENERIC_FIELDS if k in record]
    scifact = [k for k in _SCIFACT_FIELDS if k in record]
    if generic and not scifact:
        return GENERIC_LAYOUT
    if scifact and not generic:
        return SCIFACT_LAYOUT
    found = ", ".join(repr(k) for k in [*generic, *scifact]) or "none of their fields"
    raise DataFormatError(
        f"cannot tell the layout of this agreement labels file (found {found}): a generic item "
        "has 'answer', 'reference' and 'label' (AGREE/DISAGREE), a SciFact claim_support item "
        "'claim_id', 'doc_id', 'claim', 'context_sentences', 'evidence_sentences' and 'label' "
        "(SUPPORT/CONTRADICT/NOINFO)",
        path,
        line,
    )


def _text(record: Mapping[str, Any], key: str, layout: str, path: PathLike, line: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        what = "missing" if key not in record else "not a non-empty string"
        raise DataFormatError(f"{key!r} is {what} (a {layout} item)", path, line)
    return value


def _ident(record: Mapping[str, Any], key: str, layout: str, path: PathLike, line: int) -> str:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        what = "missing" if key not in record else f"not a string or integer: {value!r}"
        raise DataFormatError(f"{key!r} is {what} (a {layout} item)", path, line)
    return str(value)


def _generic_item(record: Mapping[str, Any], path: PathLike, line: int) -> LabelledAnswer:
    layout = GENERIC_LAYOUT
    item_id = _ident(record, "id", layout, path, line) if "id" in record else f"line-{line}"
    question = record.get("question", "")
    if question is None:
        question = ""
    if not isinstance(question, str):
        raise DataFormatError(
            f"'question' must be a string, got {type(question).__name__}", path, line
        )
    answer = _text(record, "answer", layout, path, line)
    reference = _text(record, "reference", layout, path, line)
    label = record.get("label")
    if isinstance(label, bool):
        agrees, name = label, "AGREE" if label else "DISAGREE"
    elif isinstance(label, str) and label.strip().upper() in AGREEMENT_LABELS:
        name = label.strip().upper()
        agrees = AGREEMENT_LABELS[name]
    else:
        what = "missing" if "label" not in record else f"got {label!r}"
        raise DataFormatError(
            f"'label' must be AGREE or DISAGREE (or true/false), {what}", path, line
        )
    return LabelledAnswer(item_id, question, answer, reference, agrees, name, line)


def _scifact_item(record: Mapping[str, Any], path: PathLike, line: int) -> LabelledAnswer | None:
    """The item of a SciFact claim_support line; None for a NOINFO pair (no evidence)."""
    layout = SCIFACT_LAYOUT
    item_id = (
        f"{_ident(record, 'claim_id', layout, path, line)}:"
        f"{_ident(record, 'doc_id', layout, path, line)}"
    )
    claim = _text(record, "claim", layout, path, line)
    sentences = record.get("context_sentences")
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise DataFormatError(
            "'context_sentences' must be a list of strings (the abstract's sentences)", path, line
        )
    evidence = record.get("evidence_sentences")
    if not isinstance(evidence, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in evidence
    ):
        raise DataFormatError(
            "'evidence_sentences' must be a list of sentence indices (integers)", path, line
        )
    for index in evidence:
        if not 0 <= index < len(sentences):
            raise DataFormatError(
                f"evidence sentence index {index} is out of range: the item has "
                f"{len(sentences)} context sentences (indices 0 to {len(sentences) - 1})",
                path,
                line,
            )
    label = record.get("label")
    name = label.strip().upper() if isinstance(label, str) else None
    if name == "NOINFO":
        return None
    if name not in SCIFACT_AGREEMENT:
        what = "missing" if "label" not in record else f"got {label!r}"
        raise DataFormatError(f"'label' must be SUPPORT, CONTRADICT or NOINFO, {what}", path, line)
    if not evidence:
        raise DataFormatError(
            f"a {name} item needs evidence sentences (the reference its claim is compared "
            "with); 'evidence_sentences' is empty",
            path,
            line,
        )
    reference = " ".join(sentences[i].strip() for i in sorted(set(evidence)))
    return LabelledAnswer(item_id, claim, claim, reference, SCIFACT_AGREEMENT[name], name, line)


def read_agreement_labels(path: PathLike) -> AgreementLabels:
    """Read human-labelled agreement items from a JSONL file (gzipped too), in either layout,
    told from the first item:

    - generic, one item a line: ``{"id"?, "question"?, "answer", "reference", "label"}`` with
      label AGREE / DISAGREE (any case) or a JSON boolean; the id defaults to the line number;
    - SciFact's claim_support: ``claim_id``, ``doc_id``, ``claim``, ``context_sentences``,
      ``evidence_sentences`` (indices), ``label`` SUPPORT / CONTRADICT / NOINFO. The question
      and the answer are the claim, the reference its evidence sentences (in order, joined by
      a space); agrees ⇔ SUPPORT. NOINFO pairs have no evidence: they are left out, counted.

    Any error (a missing field, an evidence index out of range, a repeated id, an empty file,
    a layout it cannot tell) is a DataFormatError naming the file and line.
    """
    items: list[LabelledAnswer] = []
    seen: dict[str, int] = {}
    layout: str | None = None
    left_out = 0
    for line, record in read_jsonl(path):
        if layout is None:
            layout = _layout(record, path, line)
        if layout == GENERIC_LAYOUT:
            item: LabelledAnswer | None = _generic_item(record, path, line)
            item_id = item.id if item is not None else ""
        else:
            item = _scifact_item(record, path, line)
            item_id = f"{record['claim_id']}:{record['doc_id']}"
        if item_id in seen:
            raise DataFormatError(
                f"item id {item_id!r} already appears on line {seen[item_id]}", path, line
            )
        seen[item_id] = line
        if item is None:
            left_out += 1
        else:
            items.append(item)
    if layout is None:
        raise DataFormatError("no labelled items in the file (it is empty)", path)
    if not items:
        raise DataFormatError(
            f"no SUPPORT or CONTRADICT item in the file ({left_out} NOINFO items left out)", path
        )
    reason = (
        "NOINFO pairs have no evidence sentences, so no reference to agree with"
        if layout == SCIFACT_LAYOUT
        else ""
    )
    return AgreementLabels(tuple(items), layout, left_out, reason, os.fspath(path))


def calibrate_agreement(
    judge: Any,
    items: AgreementLabels | Sequence[LabelledAnswer] | PathLike,
    *,
    seed: int = 0,
    tune_fraction: float = 0.5,
    limit: int | None = None,
    tune: bool = True,
) -> figures.CalibrationResult:
    """Measure a judge's agreement question ("does the answer agree with the reference?",
    its ``judge_agreement``) against human labels (a labels file, :func:`read_agreement_labels`
    output or a list of :class:`LabelledAnswer`).

    A judge with ``with_agreement_threshold`` (the embedding judge) gets its agreement
    threshold tuned on a seeded ``tune_fraction`` of the items and is scored on the rest; the
    result's judge is the agreement question's identity at the tuned threshold (what the κ
    gate looks up). Any other judge (or ``tune=False``) is scored on every item it gave a
    verdict (an HTTP judge's unparseable replies are unjudged). ``limit`` keeps the first N
    items (file order).
    """
    started = time.perf_counter()
    labels = _agreement_labels(items)
    figures.check_limit(limit)
    chosen = list(labels.items)[:limit]
    if not chosen:
        raise JudgeError("no labelled agreement items to calibrate on")
    if not isinstance(judge, AgreementJudge):
        raise JudgeError(
            f"judge {type(judge).__name__!r} has no judge_agreement(items): it cannot answer the "
            "agreement question; use the embedding or http judge"
        )
    return answer_questions.calibrate_question(
        judge,
        _QUESTION,
        answer_questions.Labels(
            chosen, lambda item: item.agrees, _agreement_meta(labels, chosen), labels.path
        ),
        _ask_agreement(judge),
        tune=tune,
        tune_fraction=tune_fraction,
        seed=seed,
        started=started,
    )


def _agreement_labels(
    items: AgreementLabels | Sequence[LabelledAnswer] | PathLike,
) -> AgreementLabels:
    """``items`` as AgreementLabels: a file read, a list taken as generic items."""
    if isinstance(items, (str, os.PathLike)):
        return read_agreement_labels(items)
    if isinstance(items, AgreementLabels):
        return items
    return AgreementLabels(tuple(items), GENERIC_LAYOUT)


def _agreement_meta(labels: AgreementLabels, chosen: list[LabelledAnswer]) -> dict[str, Any]:
    """What the result records of the labels it was measured on."""
    meta: dict[str, Any] = {
        "n": len(chosen),
        "sha256": figures.labels_digest(
            [item.id, item.question, item.answer, item.reference, item.agrees] for item in chosen
        ),
        "question": "agreement",
        "layout": labels.layout,
        "positives": sum(1 for item in chosen if item.agrees),
        "left_out": labels.left_out,
    }
    if labels.left_out_reason:
        meta["left_out_reason"] = labels.left_out_reason
    if labels.path is not None:
        meta["file"] = Path(labels.path).name
    return meta


def _ask_agreement(judge: AgreementJudge) -> Callable[[list[LabelledAnswer]], list[Verdict]]:
    """The agreement question as asked of labelled items."""
    return lambda items: judge.judge_agreement([(i.question, i.answer, i.reference) for i in items])


__all__ = [
    "AgreementLabels",
    "LabelledAnswer",
    "calibrate_agreement",
    "read_agreement_labels",
]
