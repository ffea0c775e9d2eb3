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

Judges answer the last two questions through two small protocols,
:class:`~pytest_ragmetrics.judges.protocols.AgreementJudge` and
:class:`~pytest_ragmetrics.judges.protocols.ContextJudge` (the HTTP and embedding judges
implement both), or a relevance judge answers the context question
(:class:`~pytest_ragmetrics.judges.relevance.RelevanceJudge`). What judging would send:
:mod:`~pytest_ragmetrics.judges.planning`.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ragmetrics import dryrun
from pytest_ragmetrics.cache import identity_of
from pytest_ragmetrics.data.answers import (
    GeneratedAnswer,
    Reference,
    answer_label,
    normalise_label,
)
from pytest_ragmetrics.data.assessments import AnswerAssessment, Verdict
from pytest_ragmetrics.errors import DryRun, JudgeError
from pytest_ragmetrics.judges.base import judge_name
from pytest_ragmetrics.judges.many import assess_many
from pytest_ragmetrics.judges.noise import (
    JudgeNoise,
    configured_repeats,
    measure_noise,
    repeat_context_judges,
    repeat_judges,
)
from pytest_ragmetrics.judges.planning import plan_judging
from pytest_ragmetrics.judges.protocols import AgreementJudge, ContextJudge, Judge
from pytest_ragmetrics.judges.relevance import RelevanceJudge, RelevancePair, grouped_verdicts
from pytest_ragmetrics.transport.costs import Cost
from pytest_ragmetrics.twins import as_own, class_name, same_class
from pytest_ragmetrics.vocabulary import ANSWER_METRICS

# What decides answer_correctness against label references: no judge, an exact rule (so no
# calibration applies to it; the version changes with the rule).
LABEL_MATCH = {
    "name": "label-match",
    "exact": True,
    "rule": "the longest known label the answer starts with, as whole words, after "
    "normalise_label (NFKC, case-folded, non-alphanumeric runs as one space, a lead-in "
    "Verdict:/Answer:/Label:/Final answer: skipped) equals the reference's label",
    "version": 1,
}


# How a question is named after its judge (``<judge>-answer-relevance``): "relevance" alone
# would read as a relevance judge's, the passage-relevance question.
_QUESTION_NAMES = {"relevance": "answer-relevance"}


def question_identity(judge: Any, task: str) -> dict[str, Any]:
    """The identity of the ``task`` question ("relevance": does the answer address the
    question?, "agreement" or "context") as ``judge`` asks it: the judge's own
    ``question_identity(task)``, else its name and identity under the question's name."""
    if task == "context" and isinstance(judge, RelevanceJudge):
        return identity_of(judge)
    get = getattr(judge, "question_identity", None)
    if callable(get):
        return dict(get(task))
    name = _QUESTION_NAMES.get(task, task)
    return {"name": f"{judge_name(judge)}-{name}", "judge": identity_of(judge)}


def question_identities(
    judge: Any,
    answers: Sequence[GeneratedAnswer],
    *,
    references: Mapping[str, Reference] | None = None,
    metrics: Sequence[str] = ANSWER_METRICS,
    context_judge: Any = None,
) -> dict[str, dict[str, Any]]:
    """Per metric whose verdicts come from a question other than the judge's own (claim
    support), that question's identity: what decides answer_relevance (the judge's
    answer-relevance question), answer_correctness (:data:`LABEL_MATCH` when every reference
    judged is a label, else the agreement question) and context_relevance (the context
    question of ``context_judge`` or ``judge``). Recorded with the evaluation, so that a
    changed threshold or prompt shows as a configuration change, and used by the κ gate (each
    question has its own calibration)."""
    out: dict[str, dict[str, Any]] = {}
    if "answer_relevance" in metrics:
        out["answer_relevance"] = question_identity(judge, "relevance")
    if "answer_correctness" in metrics and references:
        judged = [references[a.query_id] for a in answers if a.query_id in references]
        if any(r.label is None for r in judged):
            out["answer_correctness"] = question_identity(judge, "agreement")
        elif judged:
            out["answer_correctness"] = dict(LABEL_MATCH)
    if "context_relevance" in metrics:
        out["context_relevance"] = question_identity(context_judge or judge, "context")
    return out


def label_verdict(answer: str, reference: Reference, labels: Sequence[str]) -> Verdict:
    """The exact-match verdict of ``answer`` against a label reference."""
    assert reference.label is not None
    given = answer_label(answer, [*labels, reference.label])
    # Compared normalised: "NOT ENOUGH INFO" and "Not-enough info" are one label.
    agrees = given is not None and normalise_label(given) == normalise_label(reference.label)
    return Verdict(
        "label",
        agrees,
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
    items, metrics = checked_arguments(answers, references, metrics)
    wanted = set(metrics)
    judged = items
    if claims_of is not None:
        judged = [dataclasses.replace(a, answer=_claims_part(claims_of, a)) for a in items]
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


def checked_arguments(
    answers: Iterable[GeneratedAnswer],
    references: Mapping[str, Reference] | None,
    metrics: Sequence[str],
) -> tuple[list[GeneratedAnswer], tuple[str, ...]]:
    """The answers as a list and the metrics as a tuple, each argument checked: anything else
    than GeneratedAnswers, a reference mapping of Reference records filed under their own
    query ids, and a sequence of known metric names is a JudgeError naming the argument
    (rather than an AttributeError from deep inside judging, or a string read letter by
    letter as metric names)."""
    if isinstance(answers, (str, bytes, Mapping)):
        raise JudgeError(
            f"answers must be an iterable of GeneratedAnswer, not a {type(answers).__name__}"
        )
    items = []
    for k, item in enumerate(answers):
        own = as_own(item, GeneratedAnswer)
        if own is None:
            raise JudgeError(
                f"answers[{k}] is a {class_name(item, GeneratedAnswer)}, not a GeneratedAnswer; "
                "build one with GeneratedAnswer(query_id, query, answer, contexts)"
            )
        items.append(own)
    if references is not None:
        if not isinstance(references, Mapping):
            raise JudgeError(
                "references must map query id -> Reference (read_references(path) gives "
                f"one), not a {type(references).__name__}"
            )
        for qid, reference in references.items():
            if not same_class(reference, Reference):
                raise JudgeError(
                    f"references[{qid!r}] is a {class_name(reference, Reference)}, not a "
                    f"Reference; write Reference({qid!r}, text=...) or Reference({qid!r}, "
                    "label=...)"
                )
            if reference.query_id != qid:
                raise JudgeError(
                    f"references[{qid!r}] is the reference of query {reference.query_id!r}"
                )
    if isinstance(metrics, (str, bytes)) or not isinstance(metrics, Iterable):
        raise JudgeError(
            f"metrics must be a list of answer-layer metric names, not {metrics!r}; e.g. "
            f"metrics=[{metrics!r}]"
        )
    names = tuple(metrics)
    unknown = [m for m in names if m not in ANSWER_METRICS]
    if unknown:
        raise JudgeError(
            f"unknown answer-layer metrics {unknown}; known: {', '.join(ANSWER_METRICS)}"
        )
    return items, names


def _claims_part(claims_of: Callable[[str], str], answer: GeneratedAnswer) -> str:
    part = claims_of(answer.answer)
    if not isinstance(part, str):
        raise JudgeError(
            f"claims_of ({getattr(claims_of, '__name__', repr(claims_of))}) returned a "
            f"{type(part).__name__} for query {answer.query_id!r}; it must return the part of "
            "the answer whose claims groundedness judges (a string)"
        )
    return part


def context_verdicts(judge: Any, items: Sequence[GeneratedAnswer]) -> list[list[Verdict]]:
    """Per answer, one verdict per context it was given: from a RelevanceJudge's
    ``judge_relevance`` (pairs named by query id and context id) or a ContextJudge's
    ``judge_contexts``; any other judge is a JudgeError naming it."""
    if isinstance(judge, RelevanceJudge):
        groups = [
            [(cid, RelevancePair(a.query, text, a.query_id, cid)) for cid, text in a.contexts]
            for a in items
        ]
        return grouped_verdicts(judge, groups, who=judge_name(judge))
    if isinstance(judge, ContextJudge):
        found_lists = judge.judge_contexts([(a.query, [t for _, t in a.contexts]) for a in items])
        if len(found_lists) != len(items):
            raise JudgeError(
                f"judge {judge_name(judge)!r}: judge_contexts returned {len(found_lists)} "
                f"verdict lists for {len(items)} answers"
            )
        out: list[list[Verdict]] = []
        for a, got in zip(items, found_lists, strict=True):
            if len(got) != len(a.contexts):
                raise JudgeError(
                    f"judge {judge_name(judge)!r}: judge_contexts returned {len(got)} verdicts "
                    f"for the {len(a.contexts)} contexts of query {a.query_id!r}"
                )
            # The judge saw the contexts in order; the verdicts are named by their ids.
            named = zip(a.contexts, got, strict=True)
            out.append([dataclasses.replace(v, subject=cid) for (cid, _), v in named])
        return out
    raise JudgeError(
        f"judge {judge_name(judge)!r} cannot judge context_relevance: it has neither "
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
                f"judge {judge_name(judge)!r} cannot judge answer_correctness against free-"
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
    cost (requests, cache hits, tokens; zero for a judge that does not count), with
    ``repeats`` > 1 the judge's measured noise, and what decided the verdicts: ``questions``
    (per metric asked by another question than the judge's own, that question's identity; see
    :func:`question_identities`), ``claims_of`` (the name of the function that picked the
    part of each answer groundedness judged, if any) and ``pipeline`` (the identity of the
    pipeline that produced the answers, when they came as an AnswerSet)."""

    assessments: tuple[AnswerAssessment, ...]
    cost: Cost = field(default_factory=Cost)
    noise: JudgeNoise | None = None
    questions: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    claims_of: str | None = None
    pipeline: Mapping[str, Any] = field(default_factory=dict)

    def identity(self, metrics: Iterable[str]) -> dict[str, Any]:
        """What an evaluation of ``metrics`` records besides the judge's identity."""
        wanted = set(metrics)
        out: dict[str, Any] = {}
        questions = {m: dict(q) for m, q in self.questions.items() if m in wanted}
        if questions:
            out["questions"] = questions
        if self.claims_of and wanted & {"groundedness"}:
            out["claims_of"] = self.claims_of
        if self.pipeline:
            out["pipeline"] = dict(self.pipeline)
        return out


def _unasked_relevance(
    judge: Any, assessments: Sequence[AnswerAssessment], questions: Mapping[str, Any]
) -> dict[str, dict[str, Any]]:
    """The answer-relevance question, when the judge said whether answers address the
    question though answer_relevance was not asked for: an evaluation of it reads these
    verdicts, and the gate their question."""
    if "answer_relevance" in questions or all(a.addresses_question is None for a in assessments):
        return {}
    return {"answer_relevance": question_identity(judge, "relevance")}


def _cost_of(judge: Any) -> Cost:
    cost = getattr(judge, "cost", None)
    return cost if isinstance(cost, Cost) else Cost()


def _own_meter(context_judge: Any, judge: Any) -> bool:
    """Whether ``context_judge`` counts its cost apart from ``judge``'s (not the same meter)."""
    if context_judge is None or context_judge is judge:
        return False
    meter = getattr(context_judge, "meter", None)
    return meter is None or meter is not getattr(judge, "meter", None)


def _function_name(fn: Callable[..., Any] | None) -> str | None:
    """``module.qualname@digest``, the function read as it is now
    (:func:`~pytest_ragmetrics.code_identity.current_digest`): an edit of its code, or of a
    value it reads (in place too: a setting dict edited since the last judging), changes it;
    what it changed itself as it ran last (a memo) does not, once :func:`_settle` noted it."""
    if fn is None:
        return None
    from pytest_ragmetrics.code_identity import current_digest, function_identity

    described = function_identity(fn, digest=current_digest(fn))
    return f"{described['function']}@{described['code']}"


def _settle(fn: Callable[..., Any] | None) -> None:
    """After judging: what ``fn`` changed itself as it ran keeps its :func:`_function_name`
    (:func:`~pytest_ragmetrics.code_identity.settle`)."""
    if fn is not None:
        from pytest_ragmetrics.code_identity import settle

        settle(fn)


def _refuse_in_dry_run(
    judge: Judge, items: list[GeneratedAnswer], repeats: int, asked: Mapping[str, Any]
) -> None:
    """In a dry run, a DryRun saying what judging would send, unless it would send nothing."""
    if dryrun.active():
        plan = plan_judging(judge, items, repeats=repeats, **asked)
        if not plan.local and plan.requests != 0:
            raise DryRun(f"dry run: {plan.describe()}; nothing was sent")


def judge_answers(
    judge: Judge,
    answers: Iterable[GeneratedAnswer],
    *,
    references: Mapping[str, Reference] | None = None,
    metrics: Sequence[str] = ANSWER_METRICS,
    repeats: int | None = None,
    concurrency: int | None = None,
    claims_of: Callable[[str], str] | None = None,
    context_judge: Any = None,
) -> JudgedAnswers:
    """:func:`assess_answers`, counting the judge's cost, ``repeats`` times (default: the
    judge's own ``repeats``, else 1; an HTTP judge re-asks with the next seeds; see
    :mod:`~pytest_ragmetrics.judges.noise`). The assessments returned are the first
    judging's (the judge as configured).

    In a dry run (:mod:`~pytest_ragmetrics.dryrun`, ``--ragmetrics-dry-run``) judging that
    would send requests does not happen: :class:`~pytest_ragmetrics.errors.DryRun` is raised,
    saying how many (:func:`plan_judging`), or that the judge cannot tell; a judge that
    judges here, or finds every question in its cache, judges as usual."""
    items, metrics = checked_arguments(answers, references, metrics)
    repeats = configured_repeats(judge, repeats)
    claims_name = _function_name(claims_of)  # as it is now, before it runs
    asked: dict[str, Any] = {
        "references": references,
        "metrics": metrics,
        "claims_of": claims_of,
        "context_judge": context_judge,
    }
    _refuse_in_dry_run(judge, items, repeats, asked)
    judges, seeds = repeat_judges(judge, repeats)
    # A context judge of its own varies with its seeds too (else its verdicts would count
    # as perfectly stable, from its cache).
    context_judges, context_seeds = repeat_context_judges(context_judge, repeats)
    # A context judge with a meter of its own adds its cost (one sharing the judge's client,
    # as the HTTP judge's own does, is counted once).
    extra = context_judge if _own_meter(context_judge, judge) else None
    before = _cost_of(judge) + _cost_of(extra)
    asked["concurrency"] = concurrency
    runs = [
        assess_answers(j, items, **{**asked, "context_judge": c})
        for j, c in zip(judges, context_judges, strict=True)
    ]
    _settle(claims_of)
    noise = measure_noise(runs, list(metrics), seeds or context_seeds) if repeats > 1 else None
    questions = question_identities(
        judge, items, references=references, metrics=metrics, context_judge=context_judge
    )
    questions.update(_unasked_relevance(judge, runs[0], questions))
    pipeline = getattr(answers, "identity", None)
    return JudgedAnswers(
        tuple(runs[0]),
        _cost_of(judge) + _cost_of(extra) - before,
        noise,
        questions,
        claims_name,
        dict(pipeline) if isinstance(pipeline, Mapping) else {},
    )
