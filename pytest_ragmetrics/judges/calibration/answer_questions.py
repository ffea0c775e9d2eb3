"""What calibrating a yes/no question about an answer takes, whichever the question (does it
address the question? does it agree with its reference?): the judge asked in batches with
progress (one by one again after an error, so that the error names its item), and its verdicts
scored against the labels, with the question's threshold tuned when the judge has one to tune.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar

from pytest_ragmetrics.data.assessments import Verdict
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import naming
from pytest_ragmetrics.judges.calibration import figures
from pytest_ragmetrics.progress import progress

PathLike = str | os.PathLike[str]


class Labelled(Protocol):
    """A labelled item: its id, its label as written and the line it was read from."""

    @property
    def id(self) -> str: ...

    @property
    def label(self) -> str: ...

    @property
    def line(self) -> int: ...


Item = TypeVar("Item", bound=Labelled)


@dataclass(frozen=True)
class AnswerQuestion:
    """One yes/no question about an answer: ``task``, as ``question_identity`` names it;
    ``title``, as messages name it; ``method``, the judge's batch method that asks it;
    ``threshold``, the attribute of a judge that answers it by a score at a threshold (tuned
    through ``with_<threshold>``)."""

    task: str
    title: str
    method: str
    threshold: str


@dataclass(frozen=True)
class Labels:
    """The labelled items a calibration is measured on: ``truth`` of an item is its human
    label as a yes/no; ``meta`` is what the result records of them; ``path`` their file."""

    items: Sequence[Any]
    truth: Callable[[Any], bool]
    meta: dict[str, Any]
    path: PathLike | None


def calibrate_question(
    judge: Any,
    question: AnswerQuestion,
    labels: Labels,
    ask: Callable[[list[Any]], list[Verdict]],
    *,
    tune: bool,
    tune_fraction: float,
    seed: int,
    started: float | None = None,
) -> figures.CalibrationResult:
    """The judge's ``question`` asked of every labelled item (``ask(items)``: one verdict
    each), scored against the labels. A judge with ``with_<threshold>`` has that threshold
    tuned on a seeded ``tune_fraction`` of the items and is scored on the rest (the result's
    judge is the question's identity at the tuned threshold, what the κ gate looks up);
    otherwise (or ``tune=False``) every item it judged is scored, and a judge whose threshold
    is None, which judges nothing, is refused."""
    from pytest_ragmetrics.judges.answers import question_identity

    started = time.perf_counter() if started is None else started
    retune = getattr(judge, f"with_{question.threshold}", None)
    tunable = tune and callable(retune)
    if not tunable and getattr(judge, question.threshold, 0.0) is None:
        raise JudgeError(
            f"judge {getattr(judge, 'name', 'judge')!r} has no {question.threshold}: it does not "
            f"answer the {question.title} question; give one, or let calibration tune it"
        )
    n_tune = figures.tuning_size(len(labels.items), tune_fraction) if tunable else 0
    verdicts = ask_in_batches(judge, question, labels.items, ask, labels.path)
    rows = [
        figures.item_row(item.id, item.label, labels.truth(item), v.value, v.score, v.reply)
        for item, v in zip(labels.items, verdicts, strict=True)
    ]
    measured = figures.Measured.of(rows, labels.meta, started)
    if tunable:
        assert retune is not None
        return measured.tuned(lambda t: question_identity(retune(t), question.task), n_tune, seed)
    return measured.as_judged(question_identity(judge, question.task))


def ask_in_batches(
    judge: Any,
    question: AnswerQuestion,
    items: Sequence[Item],
    ask: Callable[[list[Item]], list[Verdict]],
    path: PathLike | None,
) -> list[Verdict]:
    """One verdict per item, in order, with progress; a JudgeError names the item."""
    name = getattr(judge, "name", None) or type(judge).__name__
    size = max(figures.BATCH, int(getattr(judge, "batch_size", figures.BATCH)))
    verdicts: list[Verdict] = []
    note = (
        f"calibrating the {name} judge's {question.title} question on {len(items):,} labelled "
        "items: those not in its cache are judged now; a rerun reads the cache"
    )
    with progress(f"calibrating {name} {question.title}", len(items), note=note) as advance:
        for start in range(0, len(items), size):
            chunk = list(items[start : start + size])
            try:
                found = ask(chunk)
            except JudgeError:
                # Again one by one (answers already given come from the cache), so the error
                # names the item it is about.
                found = []
                for item in chunk:
                    with naming(figures.item_place(path, item.line, f"item {item.id!r}")):
                        found += ask([item])
            if len(found) != len(chunk):
                raise JudgeError(
                    f"judge {name!r}: {question.method} returned {len(found)} verdicts for "
                    f"{len(chunk)} items"
                )
            verdicts += found
            advance(len(chunk))
    return verdicts


__all__ = ["AnswerQuestion", "Labelled", "Labels", "ask_in_batches", "calibrate_question"]
