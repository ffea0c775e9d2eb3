"""The HTTP transport of judges and generators: a client of an OpenAI-compatible
``/v1/chat/completions`` endpoint (OpenAI, Ollama, vLLM, llama.cpp server).

It talks only to the URL it is given: no redirects are followed and environment proxies are
ignored unless ``use_env_proxy=True``. The API key is read from an environment variable, held
as a :class:`Secret` (never in a repr, an identity or a cache key), sent only in the
``Authorization`` header, and scrubbed from every reply and error text. Requests time out, are
retried on 429/5xx, timeouts and failed connections with exponential backoff (honouring
Retry-After), and a reply larger than 1 MiB is refused. Several requests can be in flight at
once (:meth:`ChatClient.map`); results always come back in input order.
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
from datetime import datetime, timezone
from typing import Any, TypeVar

from pytest_ragmetrics.errors import RagMetricsError
from pytest_ragmetrics.executors.base import LocalExecutor

T = TypeVar("T")
R = TypeVar("R")

# Worth retrying: rate limits and server trouble (not 501/505, which a retry cannot fix).
NO_RETRY_5XX = frozenset({501, 505})
MAX_REPLY_BYTES = 1 << 20
Message = Mapping[str, str]


class Secret:
    """Holds an API key; its repr never shows it and it scrubs it from text."""

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
        """``text`` with the key replaced by ``***``."""
        return text.replace(self._value, "***") if self._value else text


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
    """The text of a chat completion (key scrubbed) and its token usage, when reported."""

    text: str
    usage: Usage | None = None


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
            f"{naming.label}: base URL {base_url!r} must look like http://host:port or "
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
            when = when.replace(tzinfo=timezone.utc)
        seconds = (when - datetime.now(timezone.utc)).total_seconds()
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
    ``api_key_env``. Each request times out after ``timeout`` seconds and is retried
    ``max_retries`` times with exponential backoff from ``backoff`` seconds (at most
    ``max_backoff``, or what Retry-After asks if that is not more). ``concurrency`` requests are
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
    ) -> None:
        self.naming = naming
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
        return self.naming.error(f"{self.naming.label}: {message}")

    # -- one completion -------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], **parameters: Any) -> ChatReply:
        """Send ``messages`` (with sampling ``parameters`` such as temperature, seed,
        max_tokens); the reply text and its usage. Retried as the class says."""
        body = json.dumps(
            {"model": self.model, "messages": list(messages), "stream": False, **parameters}
        ).encode("utf-8")
        attempts = self.max_retries + 1
        for attempt in range(attempts):
            try:
                return self._send(body)
            except _Retryable as failure:
                retry = failure
            # Outside the except clause: what is raised from here carries no retry internals.
            if attempt == attempts - 1:
                raise self._error(retry.describe(attempts))
            self._wait(attempt, retry.retry_after)
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

    def _send(self, body: bytes) -> ChatReply:
        """One attempt: the reply, an error, or :class:`_Retryable` when worth another."""
        request = self._request(body)
        with self._count_lock:
            self.requests_sent += 1
        try:
            with self._opener.open(request, timeout=self.timeout) as response:
                payload = response.read(MAX_REPLY_BYTES + 1)
        except urllib.error.HTTPError as exc:
            raise self._status_failure(exc) from None
        except TimeoutError:
            raise _Retryable(
                lambda n: (
                    f"no reply from {self.url} within {self.timeout:g} s ({n} attempts); "
                    "raise timeout= or check the server"
                )
            ) from None
        except urllib.error.URLError as exc:
            what = (
                f"no reply within {self.timeout:g} s"
                if isinstance(exc.reason, TimeoutError)
                else f"cannot connect ({self._secret.scrub(str(exc.reason))})"
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

    def _wait(self, attempt: int, retry_after: float | None) -> None:
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
        text = self._secret.scrub(payload.decode("utf-8", "replace"))
        try:
            data = json.loads(text)
        except ValueError:
            raise self._error(
                f"malformed reply from {self.url}: not JSON ({text[:200]!r}); is this an "
                "OpenAI-compatible /v1/chat/completions endpoint?"
            ) from None
        try:
            content = data["choices"][0]["message"]["content"]
        except (KeyError, IndexError, TypeError):
            error = data.get("error") if isinstance(data, dict) else None
            detail = f"server error: {error!r:.200}" if error else f"got {text[:200]!r}"
            raise self._error(
                f"malformed reply from {self.url}: no choices[0].message.content ({detail})"
            ) from None
        if not isinstance(content, str):
            raise self._error(
                f"malformed reply from {self.url}: message content is "
                f"{type(content).__name__}, not text"
            )
        return ChatReply(content, parse_usage(data))

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
