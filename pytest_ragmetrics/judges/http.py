"""A judge behind any OpenAI-compatible ``/v1/chat/completions`` endpoint (OpenAI, Ollama, vLLM,
llama.cpp server), asked one narrow yes/no question at a time.

It talks only to the URL it is given: no redirects are followed and environment proxies are
ignored unless ``use_env_proxy=True``. The API key is read from an environment variable, sent
only in the ``Authorization`` header, and scrubbed from anything stored or raised.
"""

from __future__ import annotations

import email.utils
import functools
import http.client
import json
import math
import os
import random
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Sequence
from datetime import datetime, timezone
from typing import Any, Literal

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.executors.base import LocalExecutor
from pytest_ragmetrics.judges.base import (
    SPLITTER_VERSION,
    CacheLike,
    Contexts,
    VerdictCache,
    check_text,
    default_query_id,
    make_identity,
    naming_query,
    normalise_contexts,
    split_sentences,
)
from pytest_ragmetrics.judges.records import AnswerAssessment, Claim

ENV_URL = "RAGMETRICS_JUDGE_URL"
ENV_MODEL = "RAGMETRICS_JUDGE_MODEL"
ENV_API_KEY = "RAGMETRICS_JUDGE_API_KEY"

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
# Worth retrying: rate limits and server trouble (not 501/505, which a retry cannot fix).
NO_RETRY_5XX = frozenset({501, 505})
MAX_REPLY_BYTES = 1 << 20
_VERDICT = re.compile(r"^\W*(?:(?:final\s+)?answer\W*)?(yes|no)\b", re.IGNORECASE)


class _Secret:
    """Holds the API key; its repr never shows it and it scrubs it from text."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<no key>"

    def __bool__(self) -> bool:
        return self._value is not None

    def header(self) -> str:
        assert self._value is not None
        return f"Bearer {self._value}"

    def scrub(self, text: str) -> str:
        return text.replace(self._value, "***") if self._value else text


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A redirect would send the question (and the key) to a host nobody configured.
    def redirect_request(
        self,
        req: urllib.request.Request,
        fp: Any,
        code: int,
        msg: str,
        headers: Any,
        newurl: str,
    ) -> urllib.request.Request | None:
        return None


def parse_yes_no(reply: str) -> bool | None:
    """True for a reply starting with "yes", False for "no", None for anything else."""
    match = _VERDICT.match(reply.strip())
    if match is None:
        return None
    return match.group(1).lower() == "yes"


def _endpoint(base_url: str) -> tuple[str, str]:
    """(request URL, URL safe to show) for a base URL such as http://host:8000 or .../v1."""
    parts = urllib.parse.urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise JudgeError(
            f"HTTP judge: base URL {base_url!r} must look like http://host:port or "
            f"https://host/v1 (set it with base_url= or {ENV_URL})"
        )
    if parts.username or parts.password:
        raise JudgeError(
            "HTTP judge: the base URL contains credentials; put the API key in the "
            f"environment variable ({ENV_API_KEY} by default) instead"
        )
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    shown = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return url, shown


def _is_verdict(value: Any) -> bool:
    """The shape of a cached verdict: {"reply": text, "verdict": true, false or null}."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("reply"), str)
        and "verdict" in value
        and (value["verdict"] is None or isinstance(value["verdict"], bool))
    )


def _retry_after(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    if not value:
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


class HttpJudge:
    """Asks an OpenAI-compatible chat endpoint, per claim, "is this claim supported by this
    context? answer yes or no", and once per answer whether it addresses the question.

    ``base_url`` and ``model`` default to the environment variables RAGMETRICS_JUDGE_URL and
    RAGMETRICS_JUDGE_MODEL; the API key (optional for local servers) is read from the
    variable named by ``api_key_env``. Requests use temperature 0 and a fixed ``seed``; they
    time out after ``timeout`` seconds and are retried ``max_retries`` times with exponential
    backoff on 429/5xx, timeouts and refused connections (honouring Retry-After). A reply that
    is not a chat completion raises JudgeError; a verdict that is neither yes nor no raises
    JudgeError too, or, with ``unparseable="unjudged"``, leaves the claim unjudged.
    Verdicts are cached per question in ``cache``; the identity (what the cache and the
    calibration file are keyed by) is the model name, rubric and parameters, not the URL.

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
    ) -> None:
        base_url = base_url or os.environ.get(ENV_URL)
        model = model or os.environ.get(ENV_MODEL)
        if not base_url:
            raise JudgeError(
                f"HTTP judge: no endpoint; pass base_url= or set {ENV_URL} (e.g. "
                "http://127.0.0.1:11434/v1 for Ollama)"
            )
        if not model:
            raise JudgeError(f"HTTP judge: no model; pass model= or set {ENV_MODEL}")
        if not timeout > 0 or max_retries < 0 or backoff < 0 or max_backoff < 0:
            raise JudgeError(
                "HTTP judge: timeout must be > 0 and max_retries, backoff, max_backoff >= 0"
            )
        if not isinstance(concurrency, int) or concurrency < 1:
            raise JudgeError(
                f"HTTP judge: concurrency must be a positive integer, got {concurrency!r}"
            )
        if unparseable not in ("error", "unjudged"):
            raise JudgeError(
                f"HTTP judge: unparseable must be 'error' or 'unjudged', got {unparseable!r}"
            )
        for label, template, fields in (
            ("support_template", support_template, ("{claim}", "{context}")),
            ("relevance_template", relevance_template, ("{query}", "{answer}")),
        ):
            missing = [f for f in fields if f not in template]
            if missing:
                raise JudgeError(f"HTTP judge: {label} lacks {', '.join(missing)}")
        self._url, self.url = _endpoint(base_url)
        self.model = model
        self.api_key_env = api_key_env
        self._secret = _Secret(os.environ.get(api_key_env))
        self.timeout = float(timeout)
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.requests_sent = 0
        self.concurrency = concurrency
        self._count_lock = threading.Lock()
        self._system = system_prompt
        self._support = support_template
        self._relevance = relevance_template
        self._unparseable = unparseable
        self._judge_relevance = judge_relevance
        self._sleep = sleep
        self._params = {"temperature": 0.0, "seed": int(seed), "max_tokens": int(max_tokens)}
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if not use_env_proxy:
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)
        rubric = "\n\n".join(
            [
                f"system: {system_prompt}",
                f"claim question: {support_template}",
                f"relevance question: {relevance_template}",
                "Claims are the answer's sentences. A claim is supported when the reply "
                "starts with yes, not supported when it starts with no.",
            ]
        )
        self._identity = make_identity(
            self.name,
            model,
            rubric,
            {
                **self._params,
                "splitter": SPLITTER_VERSION,
                "judge_relevance": judge_relevance,
            },
        )
        self._verdicts = VerdictCache(cache, self._identity)

    def __repr__(self) -> str:
        return f"HttpJudge(url={self.url!r}, model={self.model!r})"

    def identity(self) -> dict[str, Any]:
        """Name, model, rubric (prompts), rubric hash and sampling parameters; no URL, no key."""
        return dict(self._identity)

    # -- asking ---------------------------------------------------------------------------

    def _ask(self, prompt: str) -> str:
        """Send one question; return the reply text (key scrubbed)."""
        body = json.dumps(
            {
                "model": self.model,
                "messages": [
                    {"role": "system", "content": self._system},
                    {"role": "user", "content": prompt},
                ],
                "stream": False,
                **self._params,
            }
        ).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            retry_after: float | None = None
            last = attempt == attempts - 1
            request = urllib.request.Request(
                self._url,
                data=body,
                method="POST",
                headers={"Content-Type": "application/json", "Accept": "application/json"},
            )
            if self._secret:
                request.add_unredirected_header("Authorization", self._secret.header())
            with self._count_lock:
                self.requests_sent += 1
            try:
                with self._opener.open(request, timeout=self.timeout) as response:
                    payload = response.read(MAX_REPLY_BYTES + 1)
                return self._content(payload)
            except urllib.error.HTTPError as exc:
                status = exc.code
                retry_after = _retry_after(exc.headers.get("Retry-After"))
                snippet = self._snippet(exc)
                if status != 429 and not (500 <= status < 600 and status not in NO_RETRY_5XX):
                    raise JudgeError(self._status_message(status, snippet)) from None
                if last:
                    raise JudgeError(
                        f"HTTP judge: {self.url} answered HTTP {status} {attempts} times "
                        f"({snippet}); the server is overloaded or failing. Try later, or "
                        "raise max_retries/backoff"
                    ) from None
            except TimeoutError:
                if last:
                    raise JudgeError(
                        f"HTTP judge: no reply from {self.url} within {self.timeout:g} s "
                        f"({attempts} attempts); raise timeout= or check the server"
                    ) from None
            except urllib.error.URLError as exc:
                reason = exc.reason
                if last:
                    what = (
                        f"no reply within {self.timeout:g} s"
                        if isinstance(reason, TimeoutError)
                        else f"cannot connect ({self._secret.scrub(str(reason))})"
                    )
                    raise JudgeError(
                        f"HTTP judge: {self.url}: {what} after {attempts} attempts; is the "
                        f"server running at this address ({ENV_URL})?"
                    ) from None
            except (http.client.HTTPException, OSError) as exc:
                if last:
                    raise JudgeError(
                        f"HTTP judge: {self.url} broke the connection "
                        f"({type(exc).__name__}) {attempts} times; check the server"
                    ) from None
            self._wait(attempt, retry_after)
        raise AssertionError("unreachable")  # pragma: no cover

    def _wait(self, attempt: int, retry_after: float | None) -> None:
        if retry_after is not None:
            if retry_after > self.max_backoff:
                raise JudgeError(
                    f"HTTP judge: {self.url} asks to wait {retry_after:.0f} s before retrying "
                    f"(Retry-After), more than max_backoff={self.max_backoff:g} s; try later "
                    "or raise max_backoff"
                )
            delay = retry_after
        else:
            # Exponential backoff with a little jitter so parallel workers spread out.
            delay = min(self.max_backoff, self.backoff * 2**attempt)
            delay *= 1.0 + 0.1 * random.random()
        self._sleep(delay)

    def _snippet(self, exc: urllib.error.HTTPError) -> str:
        try:
            raw = exc.read(300)
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        text = raw.decode("utf-8", "replace").strip().replace("\n", " ")
        return self._secret.scrub(text)[:200] or "empty body"

    def _status_message(self, status: int, snippet: str) -> str:
        hint = {
            400: "the server rejected the request; check the model name",
            401: f"check the API key in the environment variable {self.api_key_env}",
            403: f"check the API key in the environment variable {self.api_key_env}",
            404: f"check the base URL ({ENV_URL}) and the model name ({ENV_MODEL})",
        }.get(status, "check the server")
        if 300 <= status < 400:
            hint = (
                "the server redirected; the HTTP judge only talks to the URL it is given, so "
                f"set {ENV_URL} to the final address"
            )
        return f"HTTP judge: {self.url} answered HTTP {status} ({snippet}); {hint}"

    def _content(self, payload: bytes) -> str:
        if len(payload) > MAX_REPLY_BYTES:
            raise JudgeError(f"HTTP judge: reply from {self.url} is larger than 1 MiB")
        text = self._secret.scrub(payload.decode("utf-8", "replace"))
        try:
            data = json.loads(text)
        except ValueError:
            raise JudgeError(
                f"HTTP judge: malformed reply from {self.url}: not JSON ({text[:200]!r}); is "
                "this an OpenAI-compatible /v1/chat/completions endpoint?"
            ) from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            error = data.get("error") if isinstance(data, dict) else None
            detail = f"server error: {error!r:.200}" if error else f"got {text[:200]!r}"
            raise JudgeError(
                f"HTTP judge: malformed reply from {self.url}: no choices[0].message.content "
                f"({detail})"
            ) from None
        if not isinstance(content, str):
            raise JudgeError(
                f"HTTP judge: malformed reply from {self.url}: message content is "
                f"{type(content).__name__}, not text"
            )
        return content

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
                f"HTTP judge: model {self.model!r} replied {found['reply'][:120]!r} to the "
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
        for claims, contexts in requests:
            texts = [check_text(c, "claim") for c in claims]
            pairs = normalise_contexts(contexts)
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

    def _support_verdict(self, prompt: str) -> dict[str, Any]:
        raw: dict[str, Any] = self._verdicts.get(
            {"task": "support", "prompt": prompt},
            functools.partial(self._verdict, prompt, "claim support"),
            valid=_is_verdict,
        )
        self._check_parsed(raw, "claim support")
        return raw

    def _support_verdicts(self, prompts: list[str]) -> dict[str, dict[str, Any]]:
        """Cached or fresh verdicts for ``prompts``, ``concurrency`` in flight at a time."""
        # In question order: the error reported is the first question's that failed.
        replies = LocalExecutor(self.concurrency).map(self._support_verdict, prompts)
        return dict(zip(prompts, replies, strict=True))

    def assess(
        self,
        query: str,
        answer: str,
        contexts: Contexts,
        *,
        query_id: str | None = None,
    ) -> AnswerAssessment:
        """Judge each sentence of ``answer`` against ``contexts``, then the answer's relevance.

        A JudgeError (server trouble, a malformed or unparseable reply) names the query.
        """
        check_text(query, "query")
        check_text(answer, "answer")
        qid = query_id if query_id is not None else default_query_id(query)
        with naming_query(qid):
            claims, addresses, raw = self._assess(query, answer, contexts)
        return AnswerAssessment(
            qid, answer, tuple(claims), addresses, None, self._identity, raw, query
        )

    def _assess(
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
                reply = self._verdicts.get(
                    {"task": "relevance", "prompt": prompt},
                    lambda: self._verdict(prompt, "answer relevance"),
                    valid=_is_verdict,
                )
                self._check_parsed(reply, "answer relevance")
                addresses, raw["relevance"] = reply["verdict"], reply["reply"]
        return claims, addresses, raw
