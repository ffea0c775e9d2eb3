"""Build a built-in judge or relevance judge by kind (for the CLI, the plugin and configuration
files), from flat options: an HTTP judge's endpoint settings (``url``, ``api_key_env``,
``timeout``, ``attempt_timeout``, ``concurrency``, ...) become its
:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`, ``temperature``, ``seed`` and
``max_tokens`` its :class:`~pytest_ragmetrics.transport.endpoint.Sampling`."""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import CacheLike
from pytest_ragmetrics.judges.protocols import Judge
from pytest_ragmetrics.judges.relevance import RelevanceJudge
from pytest_ragmetrics.vocabulary import JUDGE_KINDS

PathLike = str | os.PathLike[str]


def _remote(kind: str, model: str | None, options: dict[str, Any]) -> dict[str, Any]:
    """The endpoint's and the sampling's entries of ``options`` (removed from it; None means
    not given), gathered into an http judge's ``endpoint`` and ``sampling`` (``model`` is the
    served model's name); for another kind none may be given."""
    from pytest_ragmetrics.transport.endpoint import Endpoint, Sampling

    names = [name for name in (*Endpoint.fields(), *Sampling.fields()) if name in options]
    given = {name: value for name in names if (value := options.pop(name)) is not None}
    if kind != "http":
        if given:
            raise JudgeError(f"{', '.join(given)}: only used by the http judge, not {kind}")
        return {}
    return {
        "endpoint": Endpoint.take({**given, "model": model}),
        "sampling": Sampling.take(given),
    }


def build_judge(
    kind: str,
    *,
    cache: CacheLike = None,
    threshold: float | None = None,
    model: str | None = None,
    verdicts: PathLike | None = None,
    prompts: Mapping[str, str] | None = None,
    **options: Any,
) -> Judge:
    """A built-in judge: ``embedding`` (offline MiniLM; ``threshold``, ``model`` = local
    folder), ``http`` (``model`` = the served name, ``prompts``, and the endpoint's and
    sampling's settings: ``url``, ``api_key_env``, ``timeout``, ``attempt_timeout``,
    ``concurrency``, ``temperature``, ``seed``...; defaults from RAGMETRICS_JUDGE_*), or
    ``recorded`` (``verdicts`` = JSONL file). ``prompts`` are the http judge's by role
    (:data:`~pytest_ragmetrics.prompts.JUDGE_ROLES`, as
    :func:`~pytest_ragmetrics.prompts.read_prompts` reads a folder of them); other
    ``options`` go to the judge's constructor."""
    if prompts and kind != "http":
        raise JudgeError(f"prompts are only used by the http judge, not {kind}")
    remote = _remote(kind, model, options)
    if kind == "embedding":
        from pytest_ragmetrics.judges.embedding import DEFAULT_THRESHOLD, EmbeddingJudge

        return EmbeddingJudge(
            model,
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            cache=cache,
            **options,
        )
    if kind == "http":
        from pytest_ragmetrics.judges.http import HttpJudge

        return HttpJudge(prompts=prompts, cache=cache, **remote, **options)
    if kind == "recorded":
        from pytest_ragmetrics.judges.recorded import RecordedJudge

        if verdicts is None:
            raise JudgeError("the recorded judge needs a verdicts file (JSONL of assessments)")
        return RecordedJudge(verdicts, **options)
    raise JudgeError(f"unknown judge {kind!r}; built-in judges are {', '.join(JUDGE_KINDS)}")


def build_relevance_judge(
    kind: str,
    *,
    cache: CacheLike = None,
    threshold: float | None = None,
    model: str | None = None,
    verdicts: PathLike | None = None,
    prompts: Mapping[str, str] | None = None,
    **options: Any,
) -> RelevanceJudge:
    """A built-in relevance judge by kind: ``embedding`` (``threshold``, ``model``), ``http``
    (``model``, ``prompts`` and the endpoint's and sampling's settings, as for
    :func:`build_judge`), or ``recorded`` (``verdicts`` = JSONL file). Other ``options`` go
    to the judge's constructor.

    ``prompts`` are an HTTP judge's by role, as for :func:`build_judge` (the same folder): the
    relevance judge asks that judge's context question, so ``context`` is its template and
    ``context_system`` its system prompt, and it has the identity of
    :attr:`HttpJudge.context_judge <pytest_ragmetrics.judges.http.HttpJudge.context_judge>`
    with the same prompts, seed and temperature; the answer questions' roles do not apply."""
    if prompts and kind != "http":
        raise JudgeError(f"prompts are only used by the http relevance judge, not {kind}")
    remote = _remote(kind, model, options)
    if kind == "embedding":
        from pytest_ragmetrics.judges.embedding_relevance import (
            DEFAULT_RELEVANCE_THRESHOLD,
            EmbeddingRelevanceJudge,
        )

        return EmbeddingRelevanceJudge(
            model,
            threshold=DEFAULT_RELEVANCE_THRESHOLD if threshold is None else threshold,
            cache=cache,
            **options,
        )
    if kind == "http":
        from pytest_ragmetrics.judges.http_relevance import HttpRelevanceJudge

        return HttpRelevanceJudge(prompts=prompts, cache=cache, **remote, **options)
    if kind == "recorded":
        from pytest_ragmetrics.judges.recorded import RecordedRelevanceJudge

        if verdicts is None:
            raise JudgeError("the recorded relevance judge needs a verdicts file (JSONL)")
        return RecordedRelevanceJudge(verdicts, **options)
    raise JudgeError(
        f"unknown relevance judge {kind!r}; built-in judges are {', '.join(JUDGE_KINDS)}"
    )


__all__ = ["build_judge", "build_relevance_judge"]
