"""What judging would send, without sending it (a dry run): :func:`plan_judging` counts the
questions of :func:`~pytest_ragmetrics.judges.answers.judge_answers` not in the judge's cache,
for a judge that can tell (the HTTP judges); local judges send none."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ragmetrics.data.answers import GeneratedAnswer, Reference
from pytest_ragmetrics.judges.base import judge_name
from pytest_ragmetrics.judges.noise import configured_repeats, repeat_context_judges, repeat_judges
from pytest_ragmetrics.judges.protocols import Judge
from pytest_ragmetrics.judges.relevance import RelevancePair
from pytest_ragmetrics.vocabulary import ANSWER_METRICS

# Judges (by name) that judge here, sending no request.
LOCAL_JUDGES = ("embedding", "recorded")
LOCAL_RELEVANCE_JUDGES = ("embedding-relevance", "recorded-relevance")

_TASKS = {
    "groundedness": ("support",),
    "answer_relevance": ("relevance",),
    "answer_correctness": ("agreement",),
    "context_relevance": ("context",),
}


@dataclass(frozen=True)
class JudgingPlan:
    """What judging would send: ``requests`` (questions not in the judge's cache, over every
    repeat), ``cached`` questions; None for a judge that cannot tell; ``local`` when the
    judge sends nothing anywhere (the embedding judge, recorded verdicts)."""

    judge: str
    answers: int
    requests: int | None
    cached: int = 0
    local: bool = False

    def describe(self) -> str:
        if self.local:
            return f"judge {self.judge!r} sends no requests (it judges here)"
        if self.requests is None:
            return (
                f"judge {self.judge!r} cannot tell what it would ask (it has no "
                "questions_for/pending): its requests are not counted"
            )
        return (
            f"judge {self.judge!r}: {self.requests} requests to send, {self.cached} questions "
            f"in its cache ({self.answers} answers)"
        )


def plan_judging(
    judge: Judge,
    answers: Iterable[GeneratedAnswer],
    *,
    references: Mapping[str, Reference] | None = None,
    metrics: Sequence[str] = ANSWER_METRICS,
    claims_of: Callable[[str], str] | None = None,
    context_judge: Any = None,
    repeats: int | None = None,
) -> JudgingPlan:
    """A dry run of :func:`judge_answers` with the same arguments: how many requests it
    would send (distinct questions not in the judge's cache, for each repeat's seed), for a
    judge that can tell (the HTTP judge: ``questions_for`` and ``pending``). Nothing is sent.
    Label references need no question; the embedding and recorded judges send none."""
    items = list(answers)
    name = judge_name(judge)
    repeats = configured_repeats(judge, repeats)
    tasks = [t for m in metrics for t in _TASKS.get(m, ())]
    if {"support", "relevance"} & set(tasks):
        # The judge's assess answers both of its own questions (relevance when it judges it).
        tasks += [t for t in ("support", "relevance") if t not in tasks]
    separate = (0, 0)
    if context_judge is not None and "context" in tasks:
        tasks.remove("context")
        found = _plan_context(context_judge, items, repeats)
        if found is None:
            # A relevance judge that cannot tell what it would ask.
            return JudgingPlan(judge_name(context_judge), len(items), None)
        separate = found
    if getattr(judge, "name", None) in LOCAL_JUDGES:
        if separate != (0, 0):
            return JudgingPlan(judge_name(context_judge), len(items), *separate)
        return JudgingPlan(name, len(items), 0, local=True)
    if not all(callable(getattr(judge, m, None)) for m in ("questions_for", "pending")):
        return JudgingPlan(name, len(items), None)
    judges, _ = repeat_judges(judge, repeats)
    about_claims = [t for t in tasks if t in ("support", "relevance")]
    about_answer = [t for t in tasks if t in ("agreement", "context")]
    requests = cached = 0
    for j in judges:
        ask: Any = j
        asked: list[tuple[str, str]] = []
        for a in items:
            reference = (references or {}).get(a.query_id)
            text = reference.text if reference is not None and reference.label is None else None
            judged = claims_of(a.answer) if claims_of is not None else a.answer
            # As assess_answers asks: claims and relevance of the judged part, the rest of
            # the whole answer.
            asked += ask.questions_for(a.query, judged, dict(a.contexts), tasks=about_claims)
            asked += ask.questions_for(
                a.query, a.answer, dict(a.contexts), reference=text, tasks=about_answer
            )
        pending = int(ask.pending(asked))
        requests += pending
        cached += len(dict.fromkeys(asked)) - pending
    requests += separate[0]
    cached += separate[1]
    return JudgingPlan(name, len(items), requests, cached)


def _plan_context(
    context_judge: Any, items: Sequence[GeneratedAnswer], repeats: int
) -> tuple[int, int] | None:
    """(requests, cached questions) of a separate context judge over every repeat: none for a
    local one, counted for one that has ``prompt`` and ``is_prompt_cached`` (the HTTP
    relevance judge), None for one that cannot tell."""
    if getattr(context_judge, "name", None) in LOCAL_RELEVANCE_JUDGES:
        return (0, 0)
    if not all(callable(getattr(context_judge, m, None)) for m in ("prompt", "is_prompt_cached")):
        return None
    requests = cached = 0
    for j in repeat_context_judges(context_judge, repeats)[0]:
        prompts = dict.fromkeys(
            j.prompt(RelevancePair(a.query, t)) for a in items for _, t in a.contexts
        )
        waiting = sum(not j.is_prompt_cached(p) for p in prompts)
        requests += waiting
        cached += len(prompts) - waiting
    return (requests, cached)


__all__ = ["JudgingPlan", "plan_judging"]
