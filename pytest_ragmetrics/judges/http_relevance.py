"""The HTTP relevance judge: "is this passage relevant to the question? answer yes or no", asked
of an OpenAI-compatible chat endpoint per (question, passage) pair, through the same
:class:`~pytest_ragmetrics.transport.endpoint.Endpoint` and client as the HTTP judge (no
redirects, the key scrubbed, retries, a deadline, ``concurrency`` in flight), replies cached
per prompt with the token usage they reported.
"""

from __future__ import annotations

import copy as copy_module
import dataclasses
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import CacheLike, VerdictCache, make_identity, naming
from pytest_ragmetrics.judges.relevance import RelevancePair, RelevanceVerdict, relevance_pairs
from pytest_ragmetrics.judges.yes_no import (
    MAX_TOKENS,
    NAMING,
    Unparseable,
    YesNoQuestions,
    check_unparseable,
)
from pytest_ragmetrics.prompts import prompt_set
from pytest_ragmetrics.transport.budget import Budget
from pytest_ragmetrics.transport.client import ChatClient, EndpointUser, Meter
from pytest_ragmetrics.transport.endpoint import Endpoint, Sampling
from pytest_ragmetrics.values import positive_int

DEFAULT_MAX_PASSAGE_CHARS = 4000
LABEL = "HTTP relevance judge"


def _inputs(prompt: str) -> dict[str, Any]:
    return {"task": "passage-relevance", "prompt": prompt}


class HttpRelevanceJudge(EndpointUser):
    """Asks an OpenAI-compatible chat endpoint, per pair, "is this passage relevant to the
    question? answer yes or no".

    ``endpoint``, ``sampling``, ``cache``, ``budget`` and ``unparseable`` work as for
    :class:`~pytest_ragmetrics.judges.http.HttpJudge` (same environment variables and
    defaults); ``endpoint`` may also be an HTTP judge's :class:`ChatClient
    <pytest_ragmetrics.transport.client.ChatClient>`, so that its context questions share
    its endpoint, concurrency, cost meter and budget. ``prompts`` are a judge prompt folder's
    (role name -> text): this judge asks its ``context`` question ({query}, {passage}) after
    the ``context_system`` prompt; the other roles are the answer questions' and do not apply
    here. Passages longer than ``max_passage_chars`` are cut (the cut is part of the
    identity). A reply that is neither yes nor no raises JudgeError naming the pair, or with
    ``unparseable="unjudged"`` leaves the pair unjudged; it is never cached.
    """

    name = "http-relevance"

    def __init__(
        self,
        endpoint: Endpoint | ChatClient | None = None,
        *,
        prompts: Mapping[str, str] | None = None,
        sampling: Sampling | None = None,
        max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
        unparseable: Literal["error", "unjudged"] = "error",
        cache: CacheLike = None,
        budget: Budget | None = None,
    ) -> None:
        texts = prompt_set("judge", prompts, what=LABEL, error=JudgeError)
        self._system, self._template = texts["context_system"], texts["context"]
        self._unparseable: Unparseable = check_unparseable(unparseable, LABEL)
        positive_int(max_passage_chars, f"{LABEL}: max_passage_chars", JudgeError)
        if isinstance(endpoint, ChatClient):
            if budget is not None:
                raise JudgeError(f"{LABEL}: a shared client spends from its own budget")
            self.client = endpoint
        else:
            self.client = ChatClient(endpoint or Endpoint(), NAMING, meter=Meter(budget))
        self._max_chars = max_passage_chars
        self.sampling = sampling or Sampling()
        self._rubric = "\n\n".join(
            [
                f"system: {self._system}",
                f"relevance question: {self._template}",
                f"Passages are cut at {max_passage_chars} characters. Relevant when the reply "
                "starts with yes, not relevant when it starts with no.",
            ]
        )
        self._cache = cache
        self._set_identity()

    def _set_identity(self) -> None:
        params = self.sampling.parameters(MAX_TOKENS)
        self._identity = make_identity(
            self.name,
            self.model,
            self._rubric,
            {**params, "max_passage_chars": self._max_chars, **self.client.api_identity()},
        )
        self._questions = YesNoQuestions(
            self.client,
            self._system,
            params,
            VerdictCache(self._cache, self._identity),
            unparseable=self._unparseable,
            label=LABEL,
            items="pairs",
            metered=True,
        )

    def __repr__(self) -> str:
        return f"HttpRelevanceJudge(url={self.url!r}, model={self.model!r})"

    @property
    def batch_size(self) -> int:
        """Pairs worth handing over at once: enough to keep every slot busy."""
        return self.concurrency

    def identity(self) -> dict[str, Any]:
        """Name, model, rubric (prompts), rubric hash and sampling parameters; no URL, no key."""
        return dict(self._identity)

    @property
    def seed(self) -> int:
        return int(self.sampling.seed)

    def with_seed(self, seed: int) -> HttpRelevanceJudge:
        """The same judge asking with another seed (another identity, its own cache entries;
        same endpoint, cost meter and budget): what ``repeats`` uses to measure how much its
        verdicts vary."""
        copy = copy_module.copy(self)
        copy.sampling = dataclasses.replace(self.sampling, seed=int(seed))
        copy._set_identity()
        return copy

    def prompt(self, pair: RelevancePair) -> str:
        """The user message asked for ``pair``."""
        return self._template.format(query=pair.query, passage=pair.passage[: self._max_chars])

    def _one(self, pair: RelevancePair) -> RelevanceVerdict:
        prompt = self.prompt(pair)
        with naming(f"judging the relevance of {pair.label}"):
            raw, asked = self._questions.ask(_inputs(prompt), prompt, "passage relevance")
        usage = raw.get("usage") or {}
        return RelevanceVerdict(
            pair.query_id,
            pair.doc_id,
            raw["verdict"],
            raw["reply"],
            None,
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            cached=not asked,
        )

    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        """One question per pair, ``concurrency`` in flight, under a progress bar; verdicts in
        pair order and the error raised is the first failing pair's."""
        from pytest_ragmetrics.progress import counted, progress

        items = relevance_pairs(pairs)
        with progress(
            f"judging {len(items)} passages for relevance ({self.model})",
            len(items),
            note=f"asking {len(items):,} relevance questions of {self.model}: passages not in its "
            "cache are sent now; reruns read the cache",
        ) as advance:
            return self.client.map(counted(self._one, advance), items)

    def is_prompt_cached(self, prompt: str) -> bool:
        """Whether the reply to ``prompt`` (:meth:`prompt` of a pair) is in the cache:
        judging that pair would send nothing."""
        return self._questions.is_cached(_inputs(prompt))


__all__ = ["DEFAULT_MAX_PASSAGE_CHARS", "HttpRelevanceJudge"]
