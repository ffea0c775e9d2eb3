"""Build a built-in judge or relevance judge by kind (for the CLI, the plugin and configuration
files), from flat options: an HTTP judge's endpoint settings (``url``, ``api_key_env``,
``timeout``, ``attempt_timeout``, ``concurrency``, ...) become its
:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`, ``temperature``, ``seed`` and
``max_tokens`` its :class:`~pytest_ragmetrics.transport.endpoint.Sampling`."""

from __future__ import annotations

import importlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, cast

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


@dataclass(frozen=True)
class _Family:
    """The built-in judges of one question, by kind: where each class lives, the name of the
    embedding judge's default threshold, and what the recorded one reads."""

    what: str
    classes: Mapping[str, str]  # kind -> "module:Class"
    threshold: str
    verdicts: str

    def build(
        self,
        kind: str,
        *,
        cache: CacheLike = None,
        threshold: float | None = None,
        model: str | None = None,
        verdicts: PathLike | None = None,
        prompts: Mapping[str, str] | None = None,
        **options: Any,
    ) -> Any:
        if prompts and kind != "http":
            raise JudgeError(f"prompts are only used by the http {self.what}, not {kind}")
        if kind not in self.classes:
            raise JudgeError(
                f"unknown {self.what} {kind!r}; built-in judges are {', '.join(JUDGE_KINDS)}"
            )
        remote = _remote(kind, model, options)
        module_name, class_name = self.classes[kind].split(":")
        module = importlib.import_module(module_name)  # heavy libraries load only when used
        judge = getattr(module, class_name)
        if kind == "embedding":
            default = getattr(module, self.threshold)
            threshold = default if threshold is None else threshold
            return judge(model, threshold=threshold, cache=cache, **options)
        if kind == "http":
            return judge(prompts=prompts, cache=cache, **remote, **options)
        if verdicts is None:
            raise JudgeError(f"the recorded {self.what} needs a verdicts file ({self.verdicts})")
        return judge(verdicts, **options)


_JUDGES = _Family(
    "judge",
    {
        "embedding": "pytest_ragmetrics.judges.embedding:EmbeddingJudge",
        "http": "pytest_ragmetrics.judges.http:HttpJudge",
        "recorded": "pytest_ragmetrics.judges.recorded:RecordedJudge",
    },
    "DEFAULT_THRESHOLD",
    "JSONL of assessments",
)
_RELEVANCE_JUDGES = _Family(
    "relevance judge",
    {
        "embedding": "pytest_ragmetrics.judges.embedding_relevance:EmbeddingRelevanceJudge",
        "http": "pytest_ragmetrics.judges.http_relevance:HttpRelevanceJudge",
        "recorded": "pytest_ragmetrics.judges.recorded:RecordedRelevanceJudge",
    },
    "DEFAULT_RELEVANCE_THRESHOLD",
    "JSONL",
)


def build_judge(kind: str, **options: Any) -> Judge:
    """A built-in judge: ``embedding`` (offline MiniLM; ``threshold``, ``model`` = local
    folder), ``http`` (``model`` = the served name, ``prompts``, and the endpoint's and
    sampling's settings: ``url``, ``api_key_env``, ``timeout``, ``attempt_timeout``,
    ``concurrency``, ``temperature``, ``seed``...; defaults from RAGMETRICS_JUDGE_*), or
    ``recorded`` (``verdicts`` = JSONL file). ``prompts`` are the http judge's by role
    (:data:`~pytest_ragmetrics.prompts.JUDGE_ROLES`, as
    :func:`~pytest_ragmetrics.prompts.read_prompts` reads a folder of them); other
    ``options`` go to the judge's constructor; ``cache`` (a folder or a Cache) caches its
    verdicts."""
    return cast("Judge", _JUDGES.build(kind, **options))


def build_relevance_judge(kind: str, **options: Any) -> RelevanceJudge:
    """A built-in relevance judge by kind: ``embedding`` (``threshold``, ``model``), ``http``
    (``model``, ``prompts`` and the endpoint's and sampling's settings, as for
    :func:`build_judge`), or ``recorded`` (``verdicts`` = JSONL file). Other ``options`` go
    to the judge's constructor.

    ``prompts`` are an HTTP judge's by role, as for :func:`build_judge` (the same folder): the
    relevance judge asks that judge's context question, so ``context`` is its template and
    ``context_system`` its system prompt, and it has the identity of
    :attr:`HttpJudge.context_judge <pytest_ragmetrics.judges.http.HttpJudge.context_judge>`
    with the same prompts, seed and temperature; the answer questions' roles do not apply."""
    return cast("RelevanceJudge", _RELEVANCE_JUDGES.build(kind, **options))


__all__ = ["build_judge", "build_relevance_judge"]
