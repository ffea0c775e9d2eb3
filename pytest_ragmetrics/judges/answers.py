"""Judging generated answers on every answer-layer question at once.

For each :class:`~pytest_ragmetrics.data.answers.GeneratedAnswer`:

- **groundedness / answer_relevance**: the judge's ``assess`` against the contexts the
  generator was given (batched across answers when the judge has ``assess_batch``, as the
  embedding judge does; else ``concurrency`` answers at a time);
- **answer_correctness**: with a label reference, exact match after
  :func:`~pytest_ragmetrics.data.answers.normalise_label` (the answer's label is the longest
  known label its normalised text starts with); with a free-text reference, the judge's
  ``judge_agreement`` ("does the answer agree with the reference?");
- **context_relevance**: the judge's ``judge_contexts``, one verdict per context ("is this
  passage relevant to the question?").

Judges answer the last two questions through two small protocols, :class:`AgreementJudge` and
:class:`ContextJudge`; the HTTP and embedding judges implement both.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from pytest_ragmetrics.data.answers import GeneratedAnswer, Reference, answer_label
from pytest_ragmetrics.data.assessments import AnswerAssessment, Verdict
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import Contexts, Judge
from pytest_ragmetrics.judges.many import assess_many
from pytest_ragmetrics.judges.noise import JudgeNoise, measure_noise
from pytest_ragmetrics.transport import Cost
from pytest_ragmetrics.vocabulary import ANSWER_METRICS


@runtime_checkable
class AgreementJudge(Protocol):
    """Judges whether answers agree with reference answers."""

    def judge_agreement(self, items: Sequence[tuple[str, str, str]]) -> list[Verdict]:
        """One verdict per (question, answer, reference)."""
        ...


@runtime_checkable
class ContextJudge(Protocol):
    """Judges whether each context is relevant to the question."""

    def judge_contexts(self, items: Sequence[tuple[str, Contexts]]) -> list[list[Verdict]]:
        """Per (question, contexts), one verdict per context."""
        ...


def _judge_name(judge: Any) -> str:
    return str(getattr(judge, "name", None) or type(judge).__name__)


def label_verdict(answer: str, reference: Reference, labels: Sequence[str]) -> Verdict:
    """The exact-match verdict of ``answer`` against a label reference."""
    assert reference.label is not None
    given = answer_label(answer, [*labels, reference.label])
    return Verdict(
        "label",
        given == reference.label,
        None,
        f"answer gives {given!r}, reference {reference.label!r}"
        if given is not None
        else f"answer starts with no known label ({', '.join(labels)}); reference "
        f"{reference.label!r}",
    )


def assess_answers(
    judge: Judge,
    answers: Iterable[GeneratedAnswer],
    *,
    references: Mapping[str, Reference] | None = None,
    metrics: Sequence[str] = ANSWER_METRICS,
    concurrency: int | None = None,
    claims_of: Callable[[str], str] | None = None,
    context_judge: Any = None,
) -> list[AnswerAssessment]:
    """One assessment per answer, in order, with the verdicts ``metrics`` need (see the
    module docstring). Answers without a reference get no correctness verdict (their
    answer_correctness is NaN, noted by the metric). A judge lacking a question a metric needs
    is a JudgeError naming the judge and the metric. ``claims_of(answer)`` is the part of an
    answer whose claims groundedness judges (default: all of it; e.g. the rationale after a
    verdict label). ``context_judge`` (default: ``judge``) answers the context-relevance
    question: a :class:`~pytest_ragmetrics.judges.relevance.RelevanceJudge` (the relevance
    judges pooling uses, calibrated against qrels) or a :class:`ContextJudge`."""
    items = list(answers)
    wanted = set(metrics)
    unknown = wanted - set(ANSWER_METRICS)
    if unknown:
        raise JudgeError(f"assess_answers: unknown answer-layer metrics {sorted(unknown)}")
    judged = items
    if claims_of is not None:
        judged = [dataclasses.replace(a, answer=claims_of(a.answer)) for a in items]
    assessments = _base(judge, judged, wanted, concurrency)
    if "answer_correctness" in wanted and references:
        assessments = _with_correctness(judge, items, assessments, references)
    if "context_relevance" in wanted:
        verdicts = context_verdicts(context_judge or judge, items)
        assessments = [
            dataclasses.replace(done, context_verdicts=tuple(found))
            for done, found in zip(assessments, verdicts, strict=True)
        ]
    return assessments


def context_verdicts(judge: Any, items: Sequence[GeneratedAnswer]) -> list[list[Verdict]]:
    """Per answer, one verdict per context it was given: from a RelevanceJudge's
    ``judge_relevance`` (pairs named by query id and context id) or a ContextJudge's
    ``judge_contexts``; any other judge is a JudgeError naming it."""
    from pytest_ragmetrics.judges.relevance import RelevanceJudge, RelevancePair

    if isinstance(judge, RelevanceJudge):
        pairs = [
            RelevancePair(a.query, text, a.query_id, cid) for a in items for cid, text in a.contexts
        ]
        found = iter(judge.judge_relevance(pairs))
        return [
            [Verdict(cid, v.relevant, v.score, v.verdict) for cid, _ in a.contexts
             for v in (next(found),)]
            for a in items
        ]  # fmt: skip
    if isinstance(judge, ContextJudge):
        return judge.judge_contexts([(a.query, dict(a.contexts)) for a in items])
    raise JudgeError(
        f"judge {_judge_name(judge)!r} cannot judge context_relevance: it has neither "
        "judge_relevance(pairs) nor judge_contexts(items); use a relevance judge "
        "(pytest_ragmetrics.judges.relevance) or the http or embedding judge"
    )


def _base(
    judge: Judge, items: list[GeneratedAnswer], wanted: set[str], concurrency: int | None
) -> list[AnswerAssessment]:
    if not wanted & {"groundedness", "answer_relevance"}:
        identity = dict(judge.identity()) if callable(getattr(judge, "identity", None)) else {}
        return [
            AnswerAssessment(a.query_id, a.answer, judge=identity, query=a.query) for a in items
        ]
    batch = getattr(judge, "assess_batch", None)
    if callable(batch):
        found: list[AnswerAssessment] = batch(
            [(a.query_id, a.query, a.answer, dict(a.contexts)) for a in items]
        )
        return found
    return assess_many(
        judge,
        [(a.query, a.answer, dict(a.contexts), a.query_id) for a in items],
        concurrency=concurrency,
    )


def _with_correctness(
    judge: Judge,
    items: list[GeneratedAnswer],
    assessments: list[AnswerAssessment],
    references: Mapping[str, Reference],
) -> list[AnswerAssessment]:
    labels_attr = getattr(references, "labels", None)
    labels = list(labels_attr) if isinstance(labels_attr, list) else []
    if not labels:
        labels = list(dict.fromkeys(r.label for r in references.values() if r.label))
    verdicts: dict[int, Verdict] = {}
    free_text: list[int] = []
    for i, answer in enumerate(items):
        reference = references.get(answer.query_id)
        if reference is None:
            continue
        if reference.label is not None:
            verdicts[i] = label_verdict(answer.answer, reference, labels)
        else:
            free_text.append(i)
    if free_text:
        if not isinstance(judge, AgreementJudge):
            raise JudgeError(
                f"judge {_judge_name(judge)!r} cannot judge answer_correctness against free-"
                "text references: it has no judge_agreement(items); use the http or embedding "
                "judge, or label references"
            )
        judged = judge.judge_agreement(
            [(items[i].query, items[i].answer, references[items[i].query_id].text or "")
             for i in free_text]
        )  # fmt: skip
        verdicts.update(zip(free_text, judged, strict=True))
    return [
        dataclasses.replace(done, correctness=verdicts[i]) if i in verdicts else done
        for i, done in enumerate(assessments)
    ]


@dataclass(frozen=True)
class JudgedAnswers:
    """Assessments of generated answers (from the judge as configured), what judging them
    cost (requests, cache hits, tokens; zero for a judge that does not count), and, with
    ``repeats`` > 1, the judge's measured noise."""

    assessments: tuple[AnswerAssessment, ...]
    cost: Cost = field(default_factory=Cost)
    noise: JudgeNoise | None = None


def _cost_of(judge: Any) -> Cost:
    cost = getattr(judge, "cost", None)
    return cost if isinstance(cost, Cost) else Cost()


def repeat_judges(judge: Judge, repeats: int) -> tuple[list[Judge], list[int]]:
    """The judges of ``repeats`` judgings: ``judge`` and, when it has ``with_seed``, copies
    with the next seeds (else the same deterministic judge again); and their seeds."""
    if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
        raise JudgeError(f"repeats must be a positive integer, got {repeats!r}")
    with_seed = getattr(judge, "with_seed", None)
    seed = getattr(judge, "seed", 0)
    if not callable(with_seed) or not isinstance(seed, int):
        return [judge] * repeats, []
    seeds = [seed + i for i in range(repeats)]
    return [judge, *(with_seed(s) for s in seeds[1:])], seeds


def judge_answers(
    judge: Judge,
    answers: Iterable[GeneratedAnswer],
    *,
    references: Mapping[str, Reference] | None = None,
    metrics: Sequence[str] = ANSWER_METRICS,
    repeats: int = 1,
    concurrency: int | None = None,
    claims_of: Callable[[str], str] | None = None,
    context_judge: Any = None,
) -> JudgedAnswers:
    """:func:`assess_answers`, counting the judge's cost, ``repeats`` times when asked (an HTTP
    judge re-asks with the next seeds; see :mod:`~pytest_ragmetrics.judges.noise`). The
    assessments returned are the first judging's (the judge as configured)."""
    items = list(answers)
    judges, seeds = repeat_judges(judge, repeats)
    before = _cost_of(judge)
    runs = [
        assess_answers(
            j,
            items,
            references=references,
            metrics=metrics,
            concurrency=concurrency,
            claims_of=claims_of,
            context_judge=context_judge,
        )
        for j in judges
    ]
    noise = measure_noise(runs, list(metrics), seeds) if repeats > 1 else None
    return JudgedAnswers(tuple(runs[0]), _cost_of(judge) - before, noise)


_TASKS = {
    "groundedness": ("support",),
    "answer_relevance": ("relevance",),
    "answer_correctness": ("agreement",),
    "context_relevance": ("context",),
}


def plan_judging(
    judge: Judge,
    answers: Iterable[GeneratedAnswer],
    *,
    references: Mapping[str, Reference] | None = None,
    metrics: Sequence[str] = ANSWER_METRICS,
) -> int | None:
    """A dry run: how many requests :func:`assess_answers` would send (questions not in the
    judge's cache), for a judge that can tell (the HTTP judge); None for others (the embedding
    judge sends none). Label references need no question."""
    questions_for = getattr(judge, "questions_for", None)
    pending = getattr(judge, "pending", None)
    if not callable(questions_for) or not callable(pending):
        return None
    tasks = [t for m in metrics for t in _TASKS.get(m, ())]
    asked: list[tuple[str, str]] = []
    for a in answers:
        reference = (references or {}).get(a.query_id)
        text = reference.text if reference is not None and reference.label is None else None
        asked += questions_for(a.query, a.answer, dict(a.contexts), reference=text, tasks=tasks)
    count: int = pending(asked)
    return count
