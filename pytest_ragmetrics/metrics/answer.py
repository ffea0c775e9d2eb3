"""Answer-layer metrics: groundedness and answer relevance, per query, from judge assessments."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_ragmetrics.data.assessments import AnswerAssessment
from pytest_ragmetrics.data.model import as_str_array
from pytest_ragmetrics.errors import MetricError
from pytest_ragmetrics.vocabulary import ANSWER_METRICS, DEFAULT_ANSWER_METRICS

if TYPE_CHECKING:
    from pytest_ragmetrics.metrics.evaluation import Evaluation


def evaluate_answers(
    assessments: Iterable[AnswerAssessment],
    metrics: Sequence[str] | str = DEFAULT_ANSWER_METRICS,
) -> Evaluation:
    """An answer-layer :class:`Evaluation` of judge assessments, one row per answer.

    ``groundedness`` = supported claims / judged claims of the answer. An answer with no
    judged claim (none extracted, or none the judge could decide) is "no claims": its
    groundedness is NaN — not applicable — and it is left out of the mean, because scoring it
    0 would punish an answer that asserts nothing and 1 would reward it. Such answers are
    counted in ``details["no_claims"]`` and named in ``notes``, so they are shown, never
    silently averaged in.

    ``answer_correctness`` = 1/0: the answer agrees with its reference (a label matched
    exactly after normalisation, or a judge's verdict on free text); NaN without a reference.
    ``context_relevance`` = contexts judged relevant to the question / contexts judged, per
    query; NaN when none was judged.

    ``answer_relevance`` = 1/0 for a yes/no verdict, or the ordinal score scaled to [0, 1]
    by the rubric's ``relevance_scale`` (lowest → 0, highest → 1); NaN when not judged.

    ``details`` per query: ``claims``, ``judged_claims``, ``supported_claims``, ``no_claims``
    (1/0) and ``relevance_judged`` (1/0); with context_relevance, ``contexts``,
    ``judged_contexts`` and ``relevant_contexts``. Duplicate query ids are an error.
    """
    from pytest_ragmetrics.metrics.evaluation import Evaluation

    wanted = list(dict.fromkeys([metrics] if isinstance(metrics, str) else metrics))
    unknown = [m for m in wanted if m not in ANSWER_METRICS]
    if unknown or not wanted:
        raise MetricError(
            f"answer-layer metrics are {', '.join(ANSWER_METRICS)}; got "
            f"{', '.join(map(repr, unknown)) or 'none'}"
        )
    items = _checked(assessments)
    columns = {
        "groundedness": [a.groundedness for a in items],
        "answer_relevance": [a.answer_relevance for a in items],
        "answer_correctness": [a.answer_correctness for a in items],
        "context_relevance": [a.context_relevance for a in items],
    }
    values = np.array([columns[m] for m in wanted], dtype=np.float64).T.reshape(
        len(items), len(wanted)
    )
    return Evaluation(
        as_str_array([a.query_id for a in items]),
        tuple(wanted),
        values,
        "answer",
        None,
        _details(items, wanted),
        _notes(items, wanted),
    )


def _details(items: list[AnswerAssessment], wanted: list[str]) -> dict[str, Any]:
    """The per-query counts behind the values: claims, judged and supported claims, whether
    relevance was judged; with context_relevance, the contexts and the relevant ones."""
    counts: dict[str, list[int]] = {
        "claims": [len(a.claims) for a in items],
        "judged_claims": [a.judged_claims for a in items],
        "supported_claims": [a.supported_claims for a in items],
        "no_claims": [a.judged_claims == 0 for a in items],
        "relevance_judged": [a.addresses_question is not None for a in items],
    }
    if "context_relevance" in wanted:
        counts["contexts"] = [len(a.context_verdicts) for a in items]
        counts["judged_contexts"] = [
            sum(v.value is not None for v in a.context_verdicts) for a in items
        ]
        counts["relevant_contexts"] = [
            sum(v.value is True for v in a.context_verdicts) for a in items
        ]
    return {name: np.array(values, dtype=np.int64) for name, values in counts.items()}


def _checked(assessments: Iterable[AnswerAssessment]) -> list[AnswerAssessment]:
    """The assessments as a list: at least one, each an AnswerAssessment, no query id twice."""
    items = list(assessments)
    if not items:
        raise MetricError(
            "no answer assessments to evaluate; pass the judge's assessments "
            "(judge.assess(query, answer, contexts, query_id=...)) for at least one answer"
        )
    seen: dict[str, int] = {}
    for position, item in enumerate(items):
        if not isinstance(item, AnswerAssessment):
            raise MetricError(
                f"assessment #{position} is a {type(item).__name__}, not an AnswerAssessment; "
                "build it with a judge's assess() or AnswerAssessment.from_dict()"
            )
        if item.query_id in seen:
            raise MetricError(
                f"query id {item.query_id!r} is assessed twice (assessments #{seen[item.query_id]} "
                f"and #{position}); give each answer its own query id"
            )
        seen[item.query_id] = position
    return items


def _notes(items: list[AnswerAssessment], wanted: list[str]) -> list[str]:
    """What the means leave out: answers without judged claims or without a relevance verdict."""
    notes: list[str] = []
    no_claims = [a.query_id for a in items if a.judged_claims == 0]
    if no_claims and "groundedness" in wanted:
        shown = ", ".join(no_claims[:5]) + (", ..." if len(no_claims) > 5 else "")
        notes.append(
            f"{len(no_claims)} of {len(items)} answers have no judged claims ({shown}): "
            "groundedness is not applicable to them and they are left out of its mean"
        )
    unjudged = sum(a.judged_claims < len(a.claims) for a in items)
    if unjudged and "groundedness" in wanted:
        notes.append(
            f"{unjudged} answers have claims the judge could not decide; those claims count "
            "in neither supported nor judged claims"
        )
    no_relevance = sum(a.addresses_question is None for a in items)
    if no_relevance and "answer_relevance" in wanted:
        notes.append(
            f"{no_relevance} of {len(items)} answers have no relevance verdict: "
            "answer_relevance is not applicable to them and they are left out of its mean"
        )
    if "answer_correctness" in wanted:
        _note_missing(notes, items, "answer_correctness", "no reference", _no_reference)
        _note_missing(
            notes, items, "answer_correctness", "a correctness verdict the judge could not "
            "decide", lambda a: a.correctness is not None and a.correctness.value is None,
        )  # fmt: skip
    if "context_relevance" in wanted:
        _note_missing(
            notes, items, "context_relevance", "no judged context",
            lambda a: math.isnan(a.context_relevance),
        )  # fmt: skip
        partly = sum(
            0 < sum(v.value is None for v in a.context_verdicts) < len(a.context_verdicts)
            for a in items
        )
        if partly:
            notes.append(
                f"{partly} answers have contexts the judge could not decide; those contexts "
                "count in neither relevant nor judged contexts"
            )
    return notes


def _no_reference(assessment: AnswerAssessment) -> bool:
    return assessment.correctness is None


def _note_missing(
    notes: list[str],
    items: list[AnswerAssessment],
    metric: str,
    what: str,
    missing_in: Callable[[AnswerAssessment], bool],
) -> None:
    """A note naming the answers ``metric`` is not applicable to, because they have ``what``."""
    missing = [a.query_id for a in items if missing_in(a)]
    if missing:
        shown = ", ".join(missing[:5]) + (", ..." if len(missing) > 5 else "")
        notes.append(
            f"{len(missing)} of {len(items)} answers have {what} ({shown}): {metric} "
            "is not applicable to them and they are left out of its mean"
        )
