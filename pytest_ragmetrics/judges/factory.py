"""Build a built-in judge by name (for the CLI and configuration files)."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges import JUDGE_KINDS
from pytest_ragmetrics.judges.base import CacheLike, Judge

if TYPE_CHECKING:
    from pytest_ragmetrics.settings import Settings


def build_judge(
    kind: str,
    *,
    cache: CacheLike = None,
    threshold: float | None = None,
    model: str | None = None,
    url: str | None = None,
    api_key_env: str | None = None,
    timeout: float | None = None,
    verdicts: str | os.PathLike[str] | None = None,
    **options: Any,
) -> Judge:
    """A built-in judge: ``embedding`` (offline MiniLM; ``threshold``, ``model`` = local
    folder), ``http`` (``url``, ``model``, ``api_key_env``, ``timeout``; defaults from
    RAGMETRICS_JUDGE_*), or ``recorded`` (``verdicts`` = JSONL file). ``options`` go to the
    judge's constructor."""
    if kind == "embedding":
        from pytest_ragmetrics.judges.embedding import DEFAULT_THRESHOLD, EmbeddingJudge

        return EmbeddingJudge(
            model,
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            cache=cache,
            **options,
        )
    if kind == "http":
        from pytest_ragmetrics.judges.http import ENV_API_KEY, HttpJudge

        if timeout is not None:
            options["timeout"] = timeout
        return HttpJudge(url, model, api_key_env=api_key_env or ENV_API_KEY, cache=cache, **options)
    if kind == "recorded":
        from pytest_ragmetrics.judges.replay import RecordedJudge

        if verdicts is None:
            raise JudgeError("the recorded judge needs a verdicts file (JSONL of assessments)")
        return RecordedJudge(verdicts, **options)
    raise JudgeError(f"unknown judge {kind!r}; built-in judges are {', '.join(JUDGE_KINDS)}")


def configured_judge(settings: Settings, cache: CacheLike = None) -> Judge:
    """The judge the ragmetrics_judge* settings describe (the rag_judge fixture's default)."""
    if settings.judge is None:
        raise JudgeError("no judge configured; set ragmetrics_judge")
    options: dict[str, Any] = {}
    if settings.judge_concurrency is not None:
        options["concurrency"] = settings.judge_concurrency
    return build_judge(
        settings.judge,
        cache=cache,
        model=settings.judge_model,
        url=settings.judge_url,
        verdicts=settings.judge_verdicts,
        **options,
    )
