"""A judge behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (OpenAI, Ollama, vLLM,
llama.cpp server), asked one narrow yes/no question at a time.

The questions travel through :class:`~pytest_ragmetrics.transport.client.ChatClient` to one
:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`: only to the URL given, no redirects, no
environment proxies unless ``use_env_proxy=True``, the API key read from an environment
variable, sent only in the ``Authorization`` header and scrubbed from every error message
(replies and verdicts are data: stored as the server sent them).
"""

from __future__ import annotations

import copy as copy_module
import dataclasses
import functools
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges import base
from pytest_ragmetrics.judges.http_relevance import HttpRelevanceJudge
from pytest_ragmetrics.judges.protocols import Contexts
from pytest_ragmetrics.judges.relevance import RelevancePair, judge_context_groups
from pytest_ragmetrics.judges.yes_no import (
    ENV_API_KEY,
    ENV_MODEL,
    ENV_URL,
    MAX_TOKENS,
    NAMING,
    Unparseable,
    YesNoQuestions,
    check_unparseable,
    parse_yes_no,
)
from pytest_ragmetrics.prompts import prompt_set
from pytest_ragmetrics.transport.budget import Budget
from pytest_ragmetrics.transport.client import ChatClient, EndpointUser, Meter
from pytest_ragmetrics.transport.endpoint import Endpoint, Sampling


def _rubric(prompts: Mapping[str, str]) -> str:
    """The prompts and how a reply is read: what the identity's rubric says."""
    return "\n\n".join(
        [
            f"system: {prompts['system']}",
            f"claim question: {prompts['support']}",
            f"relevance question: {prompts['relevance']}",
            "Claims are the answer's sentences. A claim is supported when the reply "
            "starts with yes, not supported when it starts with no.",
        ]
    )


class HttpJudge(base.JudgeBase, EndpointUser):
    """Asks an OpenAI-compatible chat endpoint, per claim, "is this claim supported by this
    context? answer yes or no", and once per answer whether it addresses the question.

    ``endpoint`` says where and how (:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`:
    URL and model, default the environment variables RAGMETRICS_JUDGE_URL and
    RAGMETRICS_JUDGE_MODEL; the API key's variable, default RAGMETRICS_JUDGE_API_KEY; a
    deadline of 60 s per question by default, retries included, each attempt at most
    ``attempt_timeout``; retries on 429/5xx, timeouts and refused connections, honouring
    Retry-After; ``concurrency`` questions in flight, default 1, polite to a local server
    that answers one at a time, 4 to 16 suits hosted APIs). ``sampling`` is sent with every
    question (temperature 0, seed 0, ``max_tokens`` 5 by default). A reply that is not a chat
    completion raises JudgeError; a verdict that is neither yes nor no raises JudgeError too,
    or, with ``unparseable="unjudged"``, leaves the claim unjudged. ``budget`` is a token
    budget shared with the generator.

    ``prompts`` (role name -> text, as :func:`~pytest_ragmetrics.prompts.read_prompts` reads
    a prompt folder) replace the built-in ones role by role: the questions ``support``
    ({claim}, {context}), ``relevance`` ({query}, {answer}), ``agreement`` ({answer},
    {reference}, optionally {query}) and ``context`` ({query}, {passage}: the relevance
    judge's question), each checked when the judge is built
    (:func:`~pytest_ragmetrics.prompts.check_template`: a stray brace or an unknown field is a
    JudgeError here, not at the first question), and the system prompts ``system`` and
    ``context_system``, sent as written.

    Verdicts are cached per question in ``cache`` (a reply that is neither yes nor no is no
    verdict and is never cached: the next run asks again); the identity (what the cache and
    the calibration file are keyed by) is the model name, rubric and parameters, not the URL.
    The verdicts do not depend on the concurrency: they are assembled in question order and
    the first failing question, in that order, is the one reported.
    """

    name = "http"

    def __init__(
        self,
        endpoint: Endpoint | None = None,
        *,
        prompts: Mapping[str, str] | None = None,
        sampling: Sampling | None = None,
        judge_relevance: bool = True,
        unparseable: Literal["error", "unjudged"] = "error",
        cache: base.CacheLike = None,
        budget: Budget | None = None,
        repeats: int = 1,
    ) -> None:
        self.prompts = prompt_set("judge", prompts, what="HTTP judge", error=JudgeError)
        self._unparseable: Unparseable = check_unparseable(unparseable, "HTTP judge")
        self.client = ChatClient(endpoint or Endpoint(), NAMING, meter=Meter(budget))
        self.repeats = base.check_repeats(repeats)
        self.sampling = sampling or Sampling()
        self._judge_relevance = judge_relevance
        self._cache = cache
        self._set_identity()

    def _set_identity(self) -> None:
        self._params = self.sampling.parameters(MAX_TOKENS)
        self._identity = base.make_identity(
            self.name,
            self.model,
            _rubric(self.prompts),
            {
                **self._params,
                "splitter": base.SPLITTER_VERSION,
                "judge_relevance": self._judge_relevance,
                **self.client.api_identity(),
            },
        )
        self._questions = YesNoQuestions(
            self.client,
            self.prompts["system"],
            self._params,
            base.VerdictCache(self._cache, self._identity),
            unparseable=self._unparseable,
            label="HTTP judge",
            items="claims",
        )
        # The context question is the relevance judge's, asked through this judge's client
        # (its endpoint, concurrency, cost meter and budget): `ragmetrics calibrate --question
        # relevance --judge http` calibrates exactly the question context_relevance asks.
        self._context_judge = HttpRelevanceJudge(
            self.client,
            prompts=self.prompts,
            sampling=self.sampling,
            unparseable=self._unparseable,
            cache=self._cache,
        )

    @property
    def context_judge(self) -> HttpRelevanceJudge:
        """The relevance judge that answers the context question, through this judge's
        endpoint, concurrency, cost meter and budget."""
        return self._context_judge

    def with_seed(self, seed: int) -> HttpJudge:
        """The same judge asking with another seed (another identity, its own cache entries):
        what ``repeats`` uses to measure how much verdicts vary."""
        copy = copy_module.copy(self)
        copy.sampling = dataclasses.replace(self.sampling, seed=int(seed))
        copy._set_identity()
        return copy

    @property
    def seed(self) -> int:
        return int(self.sampling.seed)

    def __repr__(self) -> str:
        return f"HttpJudge(url={self.url!r}, model={self.model!r})"

    def identity(self) -> dict[str, Any]:
        """Name, model, rubric (prompts), rubric hash and sampling parameters; no URL, no key."""
        return dict(self._identity)

    # -- judging --------------------------------------------------------------------------

    def _ask(self, role: str, **fields: str) -> str:
        """The question of ``role`` (support, relevance, agreement) about ``fields``."""
        return self.prompts[role].format(**fields)

    def _context_text(self, pairs: list[tuple[str, str]]) -> str:
        if len(pairs) == 1:
            return pairs[0][1]
        return "\n".join(f"[{cid}] {text}" for cid, text in pairs)

    @property
    def batch_size(self) -> int:
        """Labelled items calibration hands over at once: enough to keep every slot busy."""
        return self.concurrency

    def judge_claims(self, claims: Sequence[str], contexts: Contexts) -> list[Claim]:
        """One yes/no question per claim, with all contexts in the prompt."""
        return self.judge_claims_many([(claims, contexts)])[0]

    def judge_claims_many(
        self, requests: Sequence[tuple[Sequence[str], Contexts]]
    ) -> list[list[Claim]]:
        """:meth:`judge_claims` for many (claims, contexts) pairs; each distinct question is
        asked once, up to ``concurrency`` at a time."""
        prepared: list[list[tuple[str, str | None]]] = []
        for texts, pairs in base.checked_requests(requests):
            context = self._context_text(pairs) if pairs else None
            prepared.append(
                [(c, None if context is None else self._ask("support", claim=c, context=context))
                 for c in texts]
            )  # fmt: skip
        prompts = list(dict.fromkeys(p for item in prepared for _, p in item if p is not None))
        replies = self._support_verdicts(prompts)
        verdicts: list[list[Claim]] = []
        for item in prepared:
            claims_out: list[Claim] = []
            for claim, prompt in item:
                if prompt is None:
                    claims_out.append(Claim(claim, False, verdict="no context given"))
                else:
                    raw = replies[prompt]
                    claims_out.append(Claim(claim, raw["verdict"], verdict=raw["reply"]))
            verdicts.append(claims_out)
        return verdicts

    def _cached_verdict(self, task: str, prompt: str, what: str) -> dict[str, Any]:
        """The verdict on ``prompt`` from the cache (counted as a hit) or the endpoint."""
        return self._questions.ask({"task": task, "prompt": prompt}, prompt, what)[0]

    def _support_verdict(self, prompt: str) -> dict[str, Any]:
        return self._cached_verdict("support", prompt, "claim support")

    def _support_verdicts(self, prompts: list[str]) -> dict[str, dict[str, Any]]:
        """Cached or fresh verdicts for ``prompts``, ``concurrency`` in flight at a time."""
        # In question order: the error reported is the first question's that failed.
        return dict(zip(prompts, self.client.map(self._support_verdict, prompts), strict=True))

    def _assess(self, qid: str, query: str, answer: str, contexts: Contexts) -> AnswerAssessment:
        """Judge each sentence of ``answer`` against ``contexts``, then the answer's relevance.

        A JudgeError (server trouble, a malformed or unparseable reply) names the query.
        """
        with base.naming_query(qid):
            claims, addresses, raw = self._claims_and_relevance(query, answer, contexts)
        return AnswerAssessment(
            qid, answer, tuple(claims), addresses, None, self._identity, raw, query
        )

    def _claims_and_relevance(
        self, query: str, answer: str, contexts: Contexts
    ) -> tuple[list[Claim], bool | None, dict[str, Any]]:
        claims = self.judge_claims(base.split_sentences(answer), contexts)
        addresses: bool | None = None
        raw: dict[str, Any] = {}
        if self._judge_relevance and query.strip():
            verdict = self._addresses(query, answer, self._relevance_verdict)
            addresses, raw["relevance"] = verdict.value, verdict.reply
        return claims, addresses, raw

    def _relevance_verdict(self, prompt: str) -> dict[str, Any]:
        return self._cached_verdict("relevance", prompt, "answer relevance")

    def _addresses(
        self, query: str, answer: str, ask: Callable[[str], Mapping[str, Any]]
    ) -> Verdict:
        """Whether ``answer`` addresses ``query``: no for an empty answer (nothing asked),
        else the reply to the relevance question, asked with ``ask(prompt)``."""
        if not answer.strip():
            return Verdict("relevance", False, None, "empty answer")
        reply = ask(self._ask("relevance", query=query, answer=answer))
        return Verdict("relevance", reply["verdict"], None, reply["reply"])

    # -- the other questions: agreement with a reference, relevance of a context ---------------

    def question_identity(
        self, task: Literal["relevance", "agreement", "context"]
    ) -> dict[str, Any]:
        """The identity of one of the other questions (what its calibration is keyed by): the
        answer-relevance or agreement question's prompts and parameters, or
        :attr:`context_judge`'s."""
        if task == "context":
            return self._context_judge.identity()
        if task == "relevance":
            return base.make_identity(
                f"{self.name}-answer-relevance",
                self.model,
                f"system: {self.prompts['system']}\n\nrelevance question: "
                f"{self.prompts['relevance']}\n\nThe answer addresses the question when the "
                "reply starts with yes; an empty answer does not (nothing is asked).",
                {**self._params, **self.client.api_identity()},
            )
        return base.make_identity(
            f"{self.name}-agreement",
            self.model,
            f"system: {self.prompts['system']}\n\nagreement question: {self.prompts['agreement']}",
            {**self._params, **self.client.api_identity()},
        )

    def _ask_all(self, task: str, prompts: list[str], what: str) -> dict[str, dict[str, Any]]:
        from pytest_ragmetrics.progress import counted, progress

        unique = list(dict.fromkeys(prompts))
        ask = functools.partial(self._cached_verdict, task, what=what)
        with progress(
            f"judging {len(unique)} {what} questions ({self.model})",
            len(unique),
            note=f"asking {len(unique):,} {what} questions of {self.model}: questions not in its "
            "cache are sent now; reruns read the cache",
        ) as advance:
            replies = self.client.map(counted(ask, advance), unique)
        return dict(zip(unique, replies, strict=True))

    def judge_agreement(self, items: Sequence[tuple[str, str, str]]) -> list[Verdict]:
        """Per (question, answer, reference): "does the answer agree with the reference?"
        (``concurrency`` questions in flight, each distinct question asked once)."""
        prompts = [self._ask("agreement", query=q, answer=a, reference=r) for q, a, r in items]
        replies = self._ask_all("agreement", prompts, "reference agreement")
        return [
            Verdict("reference", replies[p]["verdict"], None, replies[p]["reply"]) for p in prompts
        ]

    def judge_answer_relevance(self, items: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Per (question, answer): "does this answer address the question?", asked as
        :meth:`assess` asks it (the same prompt and cache; an empty answer does not, unasked);
        ``concurrency`` questions in flight, each distinct question asked once."""
        if not self._judge_relevance:
            raise JudgeError(
                "this HTTP judge was built with judge_relevance=False: it does not ask whether "
                "an answer addresses the question"
            )
        for query, answer in items:
            base.check_text(query, "question")
            base.check_text(answer, "answer")
        prompts = [
            self._ask("relevance", query=q, answer=a) for q, a in items if a.strip() and q.strip()
        ]
        replies = self._ask_all("relevance", prompts, "answer relevance")
        return [
            Verdict("relevance", None, None, "empty question: not judged")
            if not q.strip()
            else self._addresses(q, a, replies.__getitem__)
            for q, a in items
        ]

    def judge_contexts(
        self, items: Sequence[tuple[str, Sequence[str] | Mapping[str, str]]]
    ) -> list[list[Verdict]]:
        """Per (question, contexts): for each context, "is this passage relevant to the
        question?" (asked of :attr:`context_judge`)."""
        return judge_context_groups(self._context_judge, items)

    # -- a dry run --------------------------------------------------------------------------

    def questions_for(
        self,
        query: str,
        answer: str,
        contexts: Sequence[str] | Mapping[str, str],
        *,
        reference: str | None = None,
        tasks: Sequence[str] = ("support", "relevance", "agreement", "context"),
    ) -> list[tuple[str, str]]:
        """The (task, prompt) questions judging this answer would ask (nothing is sent)."""
        pairs = base.normalise_contexts(contexts)
        asked: list[tuple[str, str]] = []
        if "support" in tasks and pairs:
            context = self._context_text(pairs)
            asked += [
                ("support", self._ask("support", claim=c, context=context))
                for c in base.split_sentences(answer)
            ]
        if "relevance" in tasks and self._judge_relevance and query.strip() and answer.strip():
            asked.append(("relevance", self._ask("relevance", query=query, answer=answer)))
        if "agreement" in tasks and reference is not None:
            prompt = self._ask("agreement", query=query, answer=answer, reference=reference)
            asked.append(("agreement", prompt))
        if "context" in tasks:
            ask = self._context_judge.prompt
            asked += [("context", ask(RelevancePair(query, t))) for _, t in pairs]
        return asked

    def pending(self, questions: Sequence[tuple[str, str]]) -> int:
        """How many distinct ``questions`` (from :meth:`questions_for`) are not in the cache:
        the requests judging would send (before retries)."""
        unique = dict.fromkeys(questions)
        return sum(not self._is_cached(task, prompt) for task, prompt in unique)

    def _is_cached(self, task: str, prompt: str) -> bool:
        if task == "context":
            return self._context_judge.is_prompt_cached(prompt)
        return self._questions.is_cached({"task": task, "prompt": prompt})


__all__ = ["ENV_API_KEY", "ENV_MODEL", "ENV_URL", "NAMING", "HttpJudge", "parse_yes_no"]
