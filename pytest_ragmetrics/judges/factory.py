"""Build a built-in judge by name (for the CLI and configuration files)."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import CacheLike, Judge
from pytest_ragmetrics.vocabulary import JUDGE_KINDS


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
    prompts: Mapping[str, str] | None = None,
    **options: Any,
) -> Judge:
    """A built-in judge: ``embedding`` (offline MiniLM; ``threshold``, ``model`` = local
    folder), ``http`` (``url``, ``model``, ``api_key_env``, ``timeout``, ``prompts``; defaults
    from RAGMETRICS_JUDGE_*), or ``recorded`` (``verdicts`` = JSONL file). ``prompts`` are the
    http judge's by role (:data:`~pytest_ragmetrics.prompts.JUDGE_ROLES`, as
    :func:`~pytest_ragmetrics.prompts.read_prompts` reads a folder of them); ``options`` go
    to the judge's constructor."""
    if prompts and kind != "http":
        raise JudgeError(f"prompts are only used by the http judge, not {kind}")
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
        from pytest_ragmetrics.prompts import JUDGE_ROLES, prompt_keywords

        if timeout is not None:
            options["timeout"] = timeout
        options.update(prompt_keywords(prompts or {}, JUDGE_ROLES))
        return HttpJudge(url, model, api_key_env=api_key_env or ENV_API_KEY, cache=cache, **options)
    if kind == "recorded":
        from pytest_ragmetrics.judges.replay import RecordedJudge

        if verdicts is None:
            raise JudgeError("the recorded judge needs a verdicts file (JSONL of assessments)")
        return RecordedJudge(verdicts, **options)
    raise JudgeError(f"unknown judge {kind!r}; built-in judges are {', '.join(JUDGE_KINDS)}")
