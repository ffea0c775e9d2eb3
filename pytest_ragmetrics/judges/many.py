"""Judging many answers: one judge's ``assess`` fanned out over an executor (threads or Ray)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ragmetrics.data.assessments import AnswerAssessment
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.executors import Executor, resolve_executor
from pytest_ragmetrics.judges.protocols import Contexts, Judge
from pytest_ragmetrics.progress import counted, progress

#: One answer to judge: ``(query, answer, contexts)`` or ``(query, answer, contexts, query_id)``,
#: or a mapping with those keys.
AnswerItem = Sequence[Any] | Mapping[str, Any]


class AssessCall:
    """``judge.assess`` for one answer: what an executor sends to its workers (picklable)."""

    def __init__(self, judge: Judge) -> None:
        self.judge = judge

    def __call__(self, item: tuple[str, str, Contexts, str | None]) -> AnswerAssessment:
        query, answer, contexts, query_id = item
        return self.judge.assess(query, answer, contexts, query_id=query_id)


def _unpack(item: AnswerItem, position: int) -> tuple[str, str, Contexts, str | None]:
    if isinstance(item, Mapping):
        missing = [key for key in ("query", "answer", "contexts") if key not in item]
        if missing:
            raise JudgeError(
                f"assess_many: answer {position} has no {', '.join(missing)}; give query, "
                "answer, contexts (and optionally query_id)"
            )
        return item["query"], item["answer"], item["contexts"], item.get("query_id")
    if isinstance(item, (str, bytes)) or not isinstance(item, Sequence) or len(item) not in (3, 4):
        raise JudgeError(
            f"assess_many: answer {position} is {type(item).__name__}; give (query, answer, "
            "contexts) or (query, answer, contexts, query_id)"
        )
    query_id = item[3] if len(item) == 4 else None
    return item[0], item[1], item[2], query_id


def assess_many(
    judge: Judge,
    answers: Sequence[AnswerItem],
    *,
    executor: str | Executor | None = None,
    concurrency: int | None = None,
) -> list[AnswerAssessment]:
    """``judge.assess`` for every answer, in order, up to ``concurrency`` at a time.

    ``executor``: ``"local"`` (default: threads in this process; one at a time unless
    ``concurrency`` says more) or ``"ray"`` / a :class:`~pytest_ragmetrics.executors.RayExecutor`
    (actors that each hold a copy of the judge). The assessments are the same either way; the
    error of the first failing answer is raised. On a multi-node cluster the judge's verdict cache
    is written where its folder is on each node: share the folder, or expect a rerun to ask again.
    """
    items = [_unpack(item, position) for position, item in enumerate(answers)]
    resolved = resolve_executor(executor, "assess_many")
    described = _describe(judge)
    with progress(
        f"judging {len(items)} answers ({described})",
        len(items),
        note=f"judging {len(items):,} answers with the {described}: claims not in its cache are "
        "judged now; reruns read the cache",
    ) as advance:
        if resolved.kind != "local":  # Ray actors run the calls: the bar moves at the end
            results = resolved.map(AssessCall(judge), items, concurrency=concurrency)
            advance(len(items))
            return results
        return resolved.map(counted(AssessCall(judge), advance), items, concurrency=concurrency)


def _describe(judge: Judge) -> str:
    """``embedding judge (all-MiniLM-L6-v2)``: the judge's name and model, for the bar."""
    try:
        identity = judge.identity()
    except Exception:  # a judge of the user's own; the bar is no place to fail
        return "judge"
    name, model = identity.get("name"), identity.get("model")
    described = f"{name} judge" if name else "judge"
    return f"{described} ({model})" if model else described
