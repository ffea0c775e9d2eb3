"""The HTTP transport of judges and generators: a client of an OpenAI-compatible
``/v1/chat/completions`` endpoint (OpenAI, Ollama, vLLM, llama.cpp server).

It talks only to the URL it is given: no redirects are followed and environment proxies are
ignored unless ``use_env_proxy=True``. The API key is read from an environment variable, held
as a :class:`Secret` (never in a repr, an identity or a cache key), sent only in the
``Authorization`` header, and scrubbed from every error message (whole occurrences only, see
:mod:`~pytest_ragmetrics.redaction`); replies are data and are never altered. Requests time
out, are retried on 429/5xx, timeouts and failed connections with exponential backoff
(honouring Retry-After), and a reply larger than 1 MiB is refused. Several requests can be in
flight at once (:meth:`ChatClient.map`); results always come back in input order.
"""

from __future__ import annotations

import email.utils
import http.client
import json
import math
import os
import random
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, TypeVar

from pytest_ragmetrics import dryrun
from pytest_ragmetrics.budget import Budget
from pytest_ragmetrics.data.textfile import repaired_text
from pytest_ragmetrics.errors import DryRun, RagMetricsError
from pytest_ragmetrics.executors.base import LocalExecutor
from pytest_ragmetrics.redaction import redact_url, scrub

__all__ = ["Budget", "ChatClient", "ChatReply", "Cost", "Meter", "Naming", "Secret", "Usage"]

T = TypeVar("T")
R = TypeVar("R")

# Worth retrying: rate limits and server trouble (not 501/505, which a retry cannot fix).
NO_RETRY_5XX = frozenset({501, 505})
MAX_REPLY_BYTES = 1 << 20
SNIPPET_CHARS = 200  # of a reply body quoted in an error message
Message = Mapping[str, str]


class Secret:
    """Holds an API key; its repr never shows it and it scrubs it from messages."""

    __slots__ = ("_value",)

    def __init__(self, value: str | None) -> None:
        self._value = value or None

    def __repr__(self) -> str:
        return "<secret>" if self._value else "<no key>"

    def __bool__(self) -> bool:
        return self._value is not None

    def header(self) -> str:
        """The ``Authorization`` header value."""
        assert self._value is not None
        return f"Bearer {self._value}"

    def scrub(self, text: str) -> str:
        """``text`` (a message, never data) with the key's whole occurrences and the
        ``user:password@`` of URLs replaced by ``***``."""
        return scrub(text, self._value)


@dataclass(frozen=True)
class Naming:
    """How a client's errors speak: the name they start with, the error class, and the
    environment variables that set its URL, its model and (by default) hold its key."""

    label: str
    error: type[RagMetricsError]
    url_env: str
    model_env: str
    api_key_env: str


@dataclass(frozen=True)
class Usage:
    """Token counts the server reported for one completion (its ``usage`` object)."""

    prompt_tokens: int | None = None
    completion_tokens: int | None = None

    @property
    def total_tokens(self) -> int | None:
        """Prompt plus completion tokens, when both are known."""
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens


@dataclass(frozen=True)
class ChatReply:
    """The text of a chat completion (as sent: data is never scrubbed) and its token usage,
    when reported."""

    text: str
    usage: Usage | None = None


@dataclass(frozen=True)
class Cost:
    """What answering cost: requests sent (``calls``), answers taken from the cache instead
    (``cache_hits``), and the tokens the endpoint reported in its ``usage`` (``unmetered``:
    calls whose reply reported none)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unmetered: int = 0

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens reported."""
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: Cost) -> Cost:
        return Cost(
            self.calls + other.calls,
            self.cache_hits + other.cache_hits,
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            self.unmetered + other.unmetered,
        )

    def __sub__(self, other: Cost) -> Cost:
        return Cost(
            self.calls - other.calls,
            self.cache_hits - other.cache_hits,
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.unmetered - other.unmetered,
        )

    def to_dict(self) -> dict[str, int]:
        """A JSON-ready dict (with ``total_tokens``)."""
        return {
            "calls": self.calls,
            "cache_hits": self.cache_hits,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.total_tokens,
            "unmetered": self.unmetered,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cost:
        """Rebuild from :meth:`to_dict` output (unknown keys ignored, missing ones 0)."""
        names = ("calls", "cache_hits", "prompt_tokens", "completion_tokens", "unmetered")
        return cls(*(int(data.get(name) or 0) for name in names))

    def describe(self) -> str:
        """``12 calls (288 cached), 4,210 tokens (3,900 prompt + 310 completion)``; ``usage
        not reported`` instead of the tokens when no call reported any (a function
        generator, an endpoint without ``usage``), never "0 tokens"."""
        text = f"{self.calls} calls ({self.cache_hits} cached)"
        if self.calls and self.unmetered >= self.calls and not self.total_tokens:
            return text + ", usage not reported"
        if self.calls or self.total_tokens:
            text += (
                f", {self.total_tokens:,} tokens ({self.prompt_tokens:,} prompt + "
                f"{self.completion_tokens:,} completion)"
            )
        if self.unmetered:
            text += f"; {self.unmetered} calls reported no usage"
        return text


class Meter:
    """Counts one client's requests, cache hits and reported tokens (thread-safe), and holds
    the :class:`Budget` its requests draw on, if any."""

    def __init__(self, budget: Budget | None = None) -> None:
        self.budget = budget
        self._cost = Cost()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Meter({self._cost.describe()})"

    @property
    def cost(self) -> Cost:
        """The counts so far."""
        return self._cost

    def hit(self, count: int = 1) -> None:
        """Count answers taken from the cache."""
        with self._lock:
            self._cost = self._cost + Cost(cache_hits=count)

    def record(self, usage: Usage | None) -> None:
        """Count one request and the usage its reply reported."""
        prompt = usage.prompt_tokens if usage is not None else None
        completion = usage.completion_tokens if usage is not None else None
        metered = prompt is not None or completion is not None
        with self._lock:
            self._cost = self._cost + Cost(
                calls=1,
                prompt_tokens=prompt or 0,
                completion_tokens=completion or 0,
                unmetered=0 if metered else 1,
            )


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    # A redirect would send the request (and the key) to a host nobody configured.
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


class _Retryable(Exception):
    """One failed attempt worth repeating; ``describe(attempts)`` says what went wrong."""

    def __init__(self, describe: Callable[[int], str], retry_after: float | None = None) -> None:
        super().__init__()
        self.describe = describe
        self.retry_after = retry_after


def endpoint(base_url: str, naming: Naming) -> tuple[str, str]:
    """(request URL, URL safe to show) for a base URL such as http://host:8000 or .../v1."""
    parts = urllib.parse.urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise naming.error(
            f"{naming.label}: base URL {redact_url(base_url)!r} must look like http://host:port or "
            f"https://host/v1 (set it with base_url= or {naming.url_env})"
        )
    if parts.username or parts.password:
        raise naming.error(
            f"{naming.label}: the base URL contains credentials; put the API key in the "
            f"environment variable ({naming.api_key_env} by default) instead"
        )
    path = parts.path.rstrip("/")
    if not path.endswith("/chat/completions"):
        path += "/chat/completions" if path.endswith("/v1") else "/v1/chat/completions"
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    shown = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return url, shown


def retry_after_seconds(value: str | None) -> float | None:
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
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _token_count(value: object) -> int | None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def parse_usage(data: object) -> Usage | None:
    """The token counts of a chat-completion reply, or None when it reports none."""
    usage = data.get("usage") if isinstance(data, Mapping) else None
    if not isinstance(usage, Mapping):
        return None
    found = Usage(
        _token_count(usage.get("prompt_tokens")), _token_count(usage.get("completion_tokens"))
    )
    return None if found == Usage() else found


class ChatClient:
    """Sends chat completions to one OpenAI-compatible endpoint.

    ``base_url`` and ``model`` default to the environment variables ``naming.url_env`` and
    ``naming.model_env``; the API key (optional for local servers) is read from the variable
    ``api_key_env``. ``timeout`` is a deadline: it bounds the whole call, retries and the
    waits between them included (no retry is started that the deadline would cut short);
    each attempt may take at most ``attempt_timeout`` seconds (default: all that is left).
    A failed attempt is retried ``max_retries`` times with exponential backoff from
    ``backoff`` seconds (at most ``max_backoff``, or what Retry-After asks if that is not
    more). ``concurrency`` requests are
    in flight at once in :meth:`map`. Errors are ``naming.error`` and start with
    ``naming.label``.
    """

    def __init__(
        self,
        base_url: str | None,
        model: str | None,
        *,
        naming: Naming,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        concurrency: int = 1,
        use_env_proxy: bool = False,
        sleep: Callable[[float], None] = time.sleep,
        meter: Meter | None = None,
        attempt_timeout: float | None = None,
    ) -> None:
        self.naming = naming
        self.meter = meter if meter is not None else Meter()
        base_url = base_url or os.environ.get(naming.url_env)
        model = model or os.environ.get(naming.model_env)
        _check_settings(naming, base_url, model, timeout, max_retries, backoff, max_backoff)
        _check_concurrency(naming, concurrency)
        assert base_url is not None and model is not None  # checked above
        self._url, self.url = endpoint(base_url, naming)
        self.model = model
        self.api_key_env = api_key_env or naming.api_key_env
        self._secret = Secret(os.environ.get(self.api_key_env))
        self.timeout = float(timeout)
        if attempt_timeout is not None and not attempt_timeout > 0:
            raise naming.error(f"{naming.label}: attempt_timeout must be > 0")
        self.attempt_timeout = min(self.timeout, float(attempt_timeout or self.timeout))
        self.max_retries = int(max_retries)
        self.backoff = float(backoff)
        self.max_backoff = float(max_backoff)
        self.concurrency = concurrency
        self.requests_sent = 0
        self._count_lock = threading.Lock()
        self._sleep = sleep
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if not use_env_proxy:
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, model={self.model!r})"

    def _error(self, message: str) -> RagMetricsError:
        return self.naming.error(self.scrub(f"{self.naming.label}: {message}"))

    def scrub(self, text: str) -> str:
        """``text`` safe to show in a message: the API key's whole occurrences and URLs'
        ``user:password@`` masked. For messages only: replies are data and stay as sent.
        Scrub before cutting to a length, so that no half of a key survives the cut."""
        return self._secret.scrub(text)

    # -- one completion -------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], **parameters: Any) -> ChatReply:
        """Send ``messages`` (with sampling ``parameters`` such as temperature, seed,
        max_tokens); the reply text and its usage. Retried as the class says. The request is
        counted on :attr:`meter`; with a budget, it is not sent when it would exceed it. In a
        dry run (:mod:`~pytest_ragmetrics.dryrun`) nothing is sent: DryRun is raised."""
        if dryrun.active():
            raise DryRun(
                f"dry run: the {self.naming.label} would send a request to {self.url} (model "
                f"{self.model!r}); nothing was sent"
            )
        budget = self.meter.budget
        chars, estimate = (0, 0)
        if budget is not None:
            chars, estimate = budget.estimate(messages, parameters.get("max_tokens"))
            budget.reserve(estimate, f"{self.naming.label} ({self.url})")
        try:
            reply = self._complete(messages, parameters)
        except BaseException:
            if budget is not None:
                budget.release(estimate)
            raise
        if budget is not None:
            budget.settle(estimate, reply.usage, chars)
        self.meter.record(reply.usage)
        return reply

    def _complete(self, messages: Sequence[Message], parameters: Mapping[str, Any]) -> ChatReply:
        body = json.dumps(
            {"model": self.model, "messages": list(messages), "stream": False, **parameters}
        ).encode("utf-8")
        attempts = self.max_retries + 1
        deadline = time.monotonic() + self.timeout
        for attempt in range(attempts):
            left = max(deadline - time.monotonic(), 0.001)
            try:
                return self._send(body, min(self.attempt_timeout, left))
            except _Retryable as failure:
                retry = failure
            # Outside the except clause: what is raised from here carries no retry internals.
            if attempt == attempts - 1:
                raise self._error(retry.describe(attempts))
            delay = self._delay(attempt, retry.retry_after)
            if time.monotonic() + delay >= deadline:
                raise self._error(
                    f"{retry.describe(attempt + 1)}; no more retries: the timeout of "
                    f"{self.timeout:g} s bounds the whole call, retries included"
                )
            self._sleep(delay)
        raise AssertionError("unreachable")  # pragma: no cover

    def _request(self, body: bytes) -> urllib.request.Request:
        request = urllib.request.Request(
            self._url,
            data=body,
            method="POST",
            headers={"Content-Type": "application/json", "Accept": "application/json"},
        )
        if self._secret:
            request.add_unredirected_header("Authorization", self._secret.header())
        return request

    def _send(self, body: bytes, timeout: float) -> ChatReply:
        """One attempt of at most ``timeout`` seconds: the reply, an error, or
        :class:`_Retryable` when worth another."""
        request = self._request(body)
        with self._count_lock:
            self.requests_sent += 1
        try:
            with self._opener.open(request, timeout=timeout) as response:
                payload = response.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise self._status_failure(exc) from None
        except TimeoutError:
            raise _Retryable(
                lambda n: (
                    f"no reply from {self.url} within {timeout:.3g} s ({n} attempts); "
                    "raise timeout= or check the server"
                )
            ) from None
        except urllib.error.URLError as exc:
            what = (
                f"no reply within {timeout:.3g} s"
                if isinstance(exc.reason, TimeoutError)
                else f"cannot connect ({self.scrub(str(exc.reason))})"
            )
            raise _Retryable(
                lambda n: (
                    f"{self.url}: {what} after {n} attempts; is the server running at "
                    f"this address ({self.naming.url_env})?"
                )
            ) from None
        except (http.client.HTTPException, OSError) as exc:
            name = type(exc).__name__
            raise _Retryable(
                lambda n: f"{self.url} broke the connection ({name}) {n} times; check the server"
            ) from None
        return self._reply(payload)

    def _status_failure(self, exc: urllib.error.HTTPError) -> Exception:
        """The error for an HTTP error status, or :class:`_Retryable` for 429 and most 5xx."""
        status = exc.code
        retry_after = retry_after_seconds(exc.headers.get("Retry-After"))
        snippet = self._snippet(exc)
        if status != 429 and not (500 <= status < 600 and status not in NO_RETRY_5XX):
            return self._error(self._status_message(status, snippet))
        return _Retryable(
            lambda n: (
                f"{self.url} answered HTTP {status} {n} times ({snippet}); the server is "
                "overloaded or failing. Try later, or raise max_retries/backoff"
            ),
            retry_after,
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before the next attempt."""
        if retry_after is not None:
            if retry_after > self.max_backoff:
                raise self._error(
                    f"{self.url} asks to wait {retry_after:.0f} s before retrying (Retry-After), "
                    f"more than max_backoff={self.max_backoff:g} s; try later or raise max_backoff"
                )
            delay = retry_after
        else:
            # Exponential backoff with a little jitter so parallel workers spread out.
            delay = min(self.max_backoff, self.backoff * 2**attempt)
            delay *= 1.0 + 0.1 * random.random()
        return delay

    def _snippet(self, exc: urllib.error.HTTPError) -> str:
        try:
            # Enough for SNIPPET_CHARS characters and a key straddling the cut, scrubbed whole.
            raw = exc.read(4 * SNIPPET_CHARS + 4096)
        except (OSError, http.client.HTTPException):
            raw = b""
        finally:
            exc.close()
        text = raw.decode("utf-8", "replace").strip().replace("\n", " ")
        return self.scrub(text)[:SNIPPET_CHARS] or "empty body"

    def _status_message(self, status: int, snippet: str) -> str:
        naming = self.naming
        hint = {
            400: "the server rejected the request; check the model name",
            401: f"check the API key in the environment variable {self.api_key_env}",
            403: f"check the API key in the environment variable {self.api_key_env}",
            404: f"check the base URL ({naming.url_env}) and the model name ({naming.model_env})",
        }.get(status, "check the server")
        if 300 <= status < 400:
            hint = (
                f"the server redirected; the {naming.label} only talks to the URL it is given, "
                f"so set {naming.url_env} to the final address"
            )
        return f"{self.url} answered HTTP {status} ({snippet}); {hint}"

    def _reply(self, payload: bytes) -> ChatReply:
        if len(payload) > MAX_REPLY_BYTES:
            raise self._error(f"reply from {self.url} is larger than 1 MiB")
        # The reply is data: never altered. Only what an error quotes of it is scrubbed.
        text = payload.decode("utf-8", "replace")
        try:
            data = json.loads(text)
        except ValueError:
            raise self._error(
                f"malformed reply from {self.url}: not JSON ({self._quote(text)}); is this an "
                "OpenAI-compatible /v1/chat/completions endpoint?"
            ) from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            error = data.get("error") if isinstance(data, dict) else None
            detail = (
                f"server error: {self.scrub(repr(error))[:SNIPPET_CHARS]}"
                if error
                else f"got {self._quote(text)}"
            )
            raise self._error(
                f"malformed reply from {self.url}: no choices[0].message.content ({detail})"
            ) from None
        if not isinstance(content, str):
            raise self._error(
                f"malformed reply from {self.url}: message content is "
                f"{type(content).__name__}, not text"
            )
        return ChatReply(repaired_text(content), parse_usage(data))

    def _quote(self, text: str) -> str:
        """The start of a reply, scrubbed, then cut, then quoted."""
        return repr(self.scrub(text)[:SNIPPET_CHARS])

    # -- many at once ---------------------------------------------------------------------

    def map(self, function: Callable[[T], R], items: Sequence[T]) -> list[R]:
        """``function(item)`` for every item, ``concurrency`` at a time, results in input
        order. When several fail, the error raised is that of the first failing item (in input
        order), so the outcome does not depend on the concurrency."""
        return LocalExecutor(self.concurrency).map(function, items)

    def complete_many(
        self, conversations: Sequence[Sequence[Message]], **parameters: Any
    ) -> list[ChatReply]:
        """:meth:`complete` for every conversation, ``concurrency`` in flight, in order."""
        return self.map(lambda messages: self.complete(messages, **parameters), conversations)


def _check_settings(
    naming: Naming,
    base_url: str | None,
    model: str | None,
    timeout: float,
    max_retries: int,
    backoff: float,
    max_backoff: float,
) -> None:
    if not base_url:
        raise naming.error(
            f"{naming.label}: no endpoint; pass base_url= or set {naming.url_env} (e.g. "
            "http://127.0.0.1:11434/v1 for Ollama)"
        )
    if not model:
        raise naming.error(f"{naming.label}: no model; pass model= or set {naming.model_env}")
    if not timeout > 0 or max_retries < 0 or backoff < 0 or max_backoff < 0:
        raise naming.error(
            f"{naming.label}: timeout must be > 0 and max_retries, backoff, max_backoff >= 0"
        )


def _check_concurrency(naming: Naming, concurrency: object) -> None:
    if not isinstance(concurrency, int) or concurrency < 1:
        raise naming.error(
            f"{naming.label}: concurrency must be a positive integer, got {concurrency!r}"
        )
