"""A judge behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (OpenAI, Ollama, vLLM,
llama.cpp server), asked one narrow yes/no question at a time.

The questions travel through :class:`~pytest_ragmetrics.transport.ChatClient`: only to the URL
given, no redirects, no environment proxies unless ``use_env_proxy=True``, the API key read from
an environment variable, sent only in the ``Authorization`` header and scrubbed from every
error message (replies and verdicts are data: stored as the server sent them).
"""

from __future__ import annotations

import copy as copy_module
import functools
import re
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import (
    SPLITTER_VERSION,
    CacheLike,
    Contexts,
    JudgeBase,
    VerdictCache,
    check_repeats,
    checked_requests,
    make_identity,
    naming_query,
    normalise_contexts,
    split_sentences,
)
from pytest_ragmetrics.prompts import JUDGE_ROLES
from pytest_ragmetrics.transport import Budget, ChatClient, Cost, Meter, Naming

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.relevance import HttpRelevanceJudge

ENV_URL = "RAGMETRICS_JUDGE_URL"
ENV_MODEL = "RAGMETRICS_JUDGE_MODEL"
ENV_API_KEY = "RAGMETRICS_JUDGE_API_KEY"
NAMING = Naming("HTTP judge", JudgeError, ENV_URL, ENV_MODEL, ENV_API_KEY)

SYSTEM_PROMPT = (
    "You are a careful fact-checking assistant. Judge only from the text you are given, not "
    "from your own knowledge. Reply with one word: yes or no."
)
SUPPORT_TEMPLATE = (
    "Context:\n{context}\n\nClaim: {claim}\n\n"
    "Is this claim supported by this context? Answer yes or no."
)
RELEVANCE_TEMPLATE = (
    "Question: {query}\n\nAnswer: {answer}\n\n"
    "Does this answer address the question? Answer yes or no."
)
AGREEMENT_TEMPLATE = (
    "Question: {query}\n\nReference answer: {reference}\n\nAnswer: {answer}\n\n"
    "Does the answer agree with the reference answer? Answer yes or no."
)
_VERDICT = re.compile(r"^\W*(?:(?:final\s+)?answer\W*)?(yes|no)\b", re.IGNORECASE)


def parse_yes_no(reply: str) -> bool | None:
    """True for a reply starting with "yes", False for "no", None for anything else."""
    match = _VERDICT.match(reply.strip())
    if match is None:
        return None
    return match.group(1).lower() == "yes"


def _is_verdict(value: Any) -> bool:
    """The shape of a cached verdict: {"reply": text, "verdict": true or false}. A reply that
    did not parse into yes or no (an empty one, a refusal) is no verdict: never stored, and
    an entry holding one (written by an older version) is asked again."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("reply"), str)
        and isinstance(value.get("verdict"), bool)
    )


def _check_questions(unparseable: str, templates: Mapping[str, str | None]) -> None:
    """``unparseable`` and each question's template (by constructor argument; None: the
    default), checked when the judge is built rather than inside ``.format()`` at the first
    request. System prompts are sent as written and need no check."""
    if unparseable not in ("error", "unjudged"):
        raise JudgeError(
            f"HTTP judge: unparseable must be 'error' or 'unjudged', got {unparseable!r}"
        )
    for role in JUDGE_ROLES:
        template = templates.get(role.keyword)
        if role.is_template and template is not None:
            role.check(template, f"HTTP judge: {role.keyword}", JudgeError)


def _rubric(system_prompt: str, support_template: str, relevance_template: str) -> str:
    """The prompts and how a reply is read: what the identity's rubric says."""
    return "\n\n".join(
        [
            f"system: {system_prompt}",
            f"claim question: {support_template}",
            f"relevance question: {relevance_template}",
            "Claims are the answer's sentences. A claim is supported when the reply "
            "starts with yes, not supported when it starts with no.",
        ]
    )


class HttpJudge(JudgeBase):
    """Asks an OpenAI-compatible chat endpoint, per claim, "is this claim supported by this
    context? answer yes or no", and once per answer whether it addresses the question.

    ``base_url`` and ``model`` default to the environment variables RAGMETRICS_JUDGE_URL and
    RAGMETRICS_JUDGE_MODEL; the API key (optional for local servers) is read from the
    variable named by ``api_key_env``. Requests use ``temperature`` (default 0) and a fixed
    ``seed``; a question gets ``timeout`` seconds, retries included (each attempt at most
    ``attempt_timeout``), and is retried ``max_retries`` times with exponential backoff on
    429/5xx, timeouts and refused connections (honouring Retry-After). A reply that is not a
    chat completion raises JudgeError; a verdict that is neither yes nor no raises JudgeError
    too, or, with ``unparseable="unjudged"``, leaves the claim unjudged.
    Verdicts are cached per question in ``cache`` (a reply that is neither yes nor no is no
    verdict and is never cached: the next run asks again); the identity (what the cache and the
    calibration file are keyed by) is the model name, rubric and parameters, not the URL.

    The questions are templates: ``support_template`` ({claim}, {context}),
    ``relevance_template`` ({query}, {answer}), ``agreement_template`` ({answer}, {reference},
    optionally {query}) and ``context_template`` ({query}, {passage}; None: the relevance
    judge's). Each is checked when the judge is built
    (:func:`~pytest_ragmetrics.prompts.check_template`: a stray brace or an unknown field is a
    JudgeError here, not at the first question). ``system_prompt`` and
    ``context_system_prompt`` are sent as written.

    ``concurrency`` questions are in flight at once (default 1, polite to a local server that
    answers one at a time; 4 to 16 suits hosted APIs). The verdicts do not depend on it:
    verdicts are assembled in question order and the first failing question, in that order,
    is the one reported.
    """

    name = "http"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        api_key_env: str = ENV_API_KEY,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        seed: int = 0,
        max_tokens: int = 5,
        judge_relevance: bool = True,
        unparseable: Literal["error", "unjudged"] = "error",
        system_prompt: str = SYSTEM_PROMPT,
        support_template: str = SUPPORT_TEMPLATE,
        relevance_template: str = RELEVANCE_TEMPLATE,
        cache: CacheLike = None,
        use_env_proxy: bool = False,
        concurrency: int = 1,
        sleep: Callable[[float], None] = time.sleep,
        temperature: float = 0.0,
        budget: Budget | None = None,
        agreement_template: str = AGREEMENT_TEMPLATE,
        context_template: str | None = None,
        context_system_prompt: str | None = None,
        repeats: int = 1,
        attempt_timeout: float | None = None,
    ) -> None:
        _check_questions(
            unparseable,
            {
                "support_template": support_template,
                "relevance_template": relevance_template,
                "agreement_template": agreement_template,
                "context_template": context_template,
            },
        )
        self._client = ChatClient(
            base_url,
            model,
            naming=NAMING,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            use_env_proxy=use_env_proxy,
            sleep=sleep,
            meter=Meter(budget),
            attempt_timeout=attempt_timeout,
        )
        self._agreement = agreement_template
        # The context question is the relevance judge's (same prompts by default), asked
        # through this judge's client: `ragmetrics calibrate --question relevance --judge http`
        # calibrates exactly the question context_relevance asks.
        self._context = context_template
        self._context_system = context_system_prompt
        self.repeats = check_repeats(repeats)
        self._system = system_prompt
        self._support = support_template
        self._relevance = relevance_template
        self._unparseable = unparseable
        self._judge_relevance = judge_relevance
        self._params = {
            "temperature": float(temperature),
            "seed": int(seed),
            "max_tokens": int(max_tokens),
        }
        self._cache = cache
        self._set_identity()

    def _set_identity(self) -> None:
        self._identity = make_identity(
            self.name,
            self.model,
            _rubric(self._system, self._support, self._relevance),
            {
                **self._params,
                "splitter": SPLITTER_VERSION,
                "judge_relevance": self._judge_relevance,
            },
        )
        self._verdicts = VerdictCache(self._cache, self._identity)
        self._context_judge = self._relevance_judge()

    def _relevance_judge(self) -> HttpRelevanceJudge:
        from pytest_ragmetrics.judges.relevance import (
            RELEVANCE_TEMPLATE,
            HttpRelevanceJudge,
        )
        from pytest_ragmetrics.judges.relevance import (
            SYSTEM_PROMPT as RELEVANCE_SYSTEM_PROMPT,
        )

        return HttpRelevanceJudge(
            seed=self.seed,
            max_tokens=int(self._params["max_tokens"]),
            temperature=float(self._params["temperature"]),
            unparseable=self._unparseable,
            system_prompt=self._context_system or RELEVANCE_SYSTEM_PROMPT,
            template=self._context or RELEVANCE_TEMPLATE,
            cache=self._cache,
            client=self._client,
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
        copy._params = {**self._params, "seed": int(seed)}
        copy._set_identity()
        return copy

    @property
    def seed(self) -> int:
        return int(self._params["seed"])

    @property
    def meter(self) -> Meter:
        """Requests, cache hits and tokens so far (shared with :meth:`with_seed` copies)."""
        return self._client.meter

    @property
    def cost(self) -> Cost:
        """:attr:`meter`'s counts."""
        return self._client.meter.cost

    def __repr__(self) -> str:
        return f"HttpJudge(url={self.url!r}, model={self.model!r})"

    def identity(self) -> dict[str, Any]:
        """Name, model, rubric (prompts), rubric hash and sampling parameters; no URL, no key."""
        return dict(self._identity)

    # -- the endpoint (held by the transport) ---------------------------------------------

    @property
    def url(self) -> str:
        """The chat-completions URL questions go to (without its query string)."""
        return self._client.url

    @property
    def model(self) -> str:
        return self._client.model

    @property
    def api_key_env(self) -> str:
        return self._client.api_key_env

    @property
    def timeout(self) -> float:
        return self._client.timeout

    @property
    def max_retries(self) -> int:
        return self._client.max_retries

    @property
    def backoff(self) -> float:
        return self._client.backoff

    @property
    def max_backoff(self) -> float:
        return self._client.max_backoff

    @property
    def concurrency(self) -> int:
        return self._client.concurrency

    @property
    def requests_sent(self) -> int:
        """Requests sent so far (retries included; cached verdicts send none)."""
        return self._client.requests_sent

    # -- asking ---------------------------------------------------------------------------

    def _ask(self, prompt: str) -> str:
        """Send one question; return the reply text (as sent)."""
        messages = [
            {"role": "system", "content": self._system},
            {"role": "user", "content": prompt},
        ]
        return self._client.complete(messages, **self._params).text

    def _verdict(self, prompt: str, what: str) -> dict[str, Any]:
        reply = self._ask(prompt)
        found = {"reply": reply, "verdict": parse_yes_no(reply)}
        self._check_parsed(found, what)
        return found

    def _check_parsed(self, found: dict[str, Any], what: str) -> None:
        # Also applied to cached replies: an unparseable reply cached by an "unjudged" judge
        # must still raise for an "error" judge (the mode is not part of the identity).
        if found["verdict"] is None and self._unparseable == "error":
            raise JudgeError(
                f"HTTP judge: model {self.model!r} replied "
                f"{self._client.scrub(found['reply'])[:120]!r} to the "
                f"{what} question instead of yes or no; use a stronger model, or "
                "unparseable='unjudged' to leave such claims unjudged"
            )

    # -- judging --------------------------------------------------------------------------

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
        for texts, pairs in checked_requests(requests):
            context = self._context_text(pairs) if pairs else None
            prepared.append(
                [
                    (c, None if context is None else self._support.format(claim=c, context=context))
                    for c in texts
                ]
            )
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
        asked = [False]

        def ask() -> dict[str, Any]:
            asked[0] = True
            return self._verdict(prompt, what)

        raw: dict[str, Any] = self._verdicts.get(
            {"task": task, "prompt": prompt}, ask, valid=_is_verdict
        )
        if not asked[0]:
            self._client.meter.hit()
        self._check_parsed(raw, what)
        return raw

    def _support_verdict(self, prompt: str) -> dict[str, Any]:
        return self._cached_verdict("support", prompt, "claim support")

    def _support_verdicts(self, prompts: list[str]) -> dict[str, dict[str, Any]]:
        """Cached or fresh verdicts for ``prompts``, ``concurrency`` in flight at a time."""
        # In question order: the error reported is the first question's that failed.
        return dict(zip(prompts, self._client.map(self._support_verdict, prompts), strict=True))

    def _assess(self, qid: str, query: str, answer: str, contexts: Contexts) -> AnswerAssessment:
        """Judge each sentence of ``answer`` against ``contexts``, then the answer's relevance.

        A JudgeError (server trouble, a malformed or unparseable reply) names the query.
        """
        with naming_query(qid):
            claims, addresses, raw = self._claims_and_relevance(query, answer, contexts)
        return AnswerAssessment(
            qid, answer, tuple(claims), addresses, None, self._identity, raw, query
        )

    def _claims_and_relevance(
        self, query: str, answer: str, contexts: Contexts
    ) -> tuple[list[Claim], bool | None, dict[str, Any]]:
        claims = self.judge_claims(split_sentences(answer), contexts)
        addresses: bool | None = None
        raw: dict[str, Any] = {}
        if self._judge_relevance and query.strip():
            if not answer.strip():
                addresses, raw["relevance"] = False, "empty answer"
            else:
                prompt = self._relevance.format(query=query, answer=answer)
                reply = self._cached_verdict("relevance", prompt, "answer relevance")
                addresses, raw["relevance"] = reply["verdict"], reply["reply"]
        return claims, addresses, raw

    # -- the other questions: agreement with a reference, relevance of a context ---------------

    def question_identity(self, task: Literal["agreement", "context"]) -> dict[str, Any]:
        """The identity of one of the other questions (what its calibration is keyed by):
        the agreement question's prompts and parameters, or :attr:`context_judge`'s."""
        if task == "context":
            return self._context_judge.identity()
        return make_identity(
            f"{self.name}-agreement",
            self.model,
            f"system: {self._system}\n\nagreement question: {self._agreement}",
            dict(self._params),
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
            replies = self._client.map(counted(ask, advance), unique)
        return dict(zip(unique, replies, strict=True))

    def judge_agreement(self, items: Sequence[tuple[str, str, str]]) -> list[Verdict]:
        """Per (question, answer, reference): "does the answer agree with the reference?"
        (``concurrency`` questions in flight, each distinct question asked once)."""
        prompts = [self._agreement.format(query=q, answer=a, reference=r) for q, a, r in items]
        replies = self._ask_all("agreement", prompts, "reference agreement")
        return [
            Verdict("reference", replies[p]["verdict"], None, replies[p]["reply"]) for p in prompts
        ]

    def judge_contexts(
        self, items: Sequence[tuple[str, Sequence[str] | Mapping[str, str]]]
    ) -> list[list[Verdict]]:
        """Per (question, contexts): for each context, "is this passage relevant to the
        question?" (asked of :attr:`context_judge`)."""
        from pytest_ragmetrics.judges.relevance import RelevancePair

        asked = [(q, normalise_contexts(contexts)) for q, contexts in items]
        found = iter(
            self._context_judge.judge_relevance(
                [RelevancePair(q, text) for q, pairs in asked for _, text in pairs]
            )
        )
        return [
            [Verdict(cid, v.relevant, v.score, v.verdict) for cid, _ in pairs
             for v in (next(found),)]
            for _, pairs in asked
        ]  # fmt: skip

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
        pairs = normalise_contexts(contexts)
        asked: list[tuple[str, str]] = []
        if "support" in tasks and pairs:
            context = self._context_text(pairs)
            asked += [
                ("support", self._support.format(claim=c, context=context))
                for c in split_sentences(answer)
            ]
        if "relevance" in tasks and self._judge_relevance and query.strip() and answer.strip():
            asked.append(("relevance", self._relevance.format(query=query, answer=answer)))
        if "agreement" in tasks and reference is not None:
            prompt = self._agreement.format(query=query, answer=answer, reference=reference)
            asked.append(("agreement", prompt))
        if "context" in tasks:
            from pytest_ragmetrics.judges.relevance import RelevancePair

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
        return self._verdicts.peek({"task": task, "prompt": prompt}, valid=_is_verdict) is not None
