"""The client of an OpenAI-compatible ``/v1/chat/completions`` endpoint (OpenAI, Ollama, vLLM,
llama.cpp server) that judges and generators send their requests through; or, for a base model
with no chat template, of its ``/v1/completions`` (``Endpoint(api="completions")``).

It talks only to the URL it is given (:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`):
no redirects are followed and environment proxies are ignored unless ``use_env_proxy=True``.
The API key is read from an environment variable, held as a
:class:`~pytest_ragmetrics.transport.endpoint.Secret` (never in a repr, an identity or a cache
key), sent only in the ``Authorization`` header, and scrubbed from every error message (whole
occurrences only, see :mod:`~pytest_ragmetrics.redaction`); replies are data and are never
altered. A call has a deadline (``timeout``) over its attempts (each at most
``attempt_timeout``), is retried on 429/5xx, timeouts and failed connections with exponential
backoff (honouring Retry-After), and a reply larger than 1 MiB is refused. Several requests can
be in flight at once (:meth:`ChatClient.map`); results always come back in input order.
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
from pytest_ragmetrics.data.textfile import repaired_text
from pytest_ragmetrics.errors import DryRun, RagMetricsError
from pytest_ragmetrics.executors.base import LocalExecutor
from pytest_ragmetrics.transport.budget import Budget
from pytest_ragmetrics.transport.costs import Cost, Usage
from pytest_ragmetrics.transport.endpoint import Endpoint, Naming, Secret, request_url

__all__ = ["ChatClient", "ChatReply", "EndpointUser", "Meter", "completion_prompt", "parse_usage"]

T = TypeVar("T")
R = TypeVar("R")

# Worth retrying: rate limits and server trouble (not 501/505, which a retry cannot fix).
NO_RETRY_5XX = frozenset({501, 505})
MAX_REPLY_BYTES = 1 << 20
SNIPPET_CHARS = 200  # of a reply body quoted in an error message
# Seconds the model list (GET /v1/models, asked once per client) may take at most.
MODELS_TIMEOUT = 5.0
Message = Mapping[str, str]


@dataclass(frozen=True)
class ChatReply:
    """The text of a chat completion (as sent: data is never scrubbed) and its token usage,
    when reported."""

    text: str
    usage: Usage | None = None


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


def completion_prompt(messages: Sequence[Message]) -> str:
    """The prompt a ``/v1/completions`` request sends for ``messages``: their non-empty
    contents, in order, joined by blank lines (roles are not written: a base model follows no
    chat template)."""
    return "\n\n".join(m["content"] for m in messages if m.get("content"))


class ChatClient:
    """Sends chat completions to one :class:`Endpoint` (see it for the deadline, retries and
    concurrency), speaking as ``naming`` says: its errors are ``naming.error`` and start with
    ``naming.label``, and its defaults are ``naming``'s. Requests are counted on ``meter``
    (which holds the token budget, if any). ``sleep`` is how it waits between attempts."""

    def __init__(self, endpoint: Endpoint, naming: Naming, *, meter: Meter | None = None) -> None:
        self.naming = naming
        self.meter = meter if meter is not None else Meter()
        #: The endpoint with its defaults filled in (URL, model, key variable, timeouts).
        self.endpoint = endpoint.resolved(naming)
        assert self.endpoint.url is not None and self.endpoint.api_key_env is not None
        self._url, self.url = request_url(self.endpoint.url, naming, self.endpoint.api)
        self._secret = Secret(os.environ.get(self.endpoint.api_key_env))
        self.requests_sent = 0
        self._count_lock = threading.Lock()
        self.sleep: Callable[[float], None] = time.sleep
        handlers: list[urllib.request.BaseHandler] = [_NoRedirect()]
        if not self.endpoint.use_env_proxy:
            handlers.append(urllib.request.ProxyHandler({}))
        self._opener = urllib.request.build_opener(*handlers)
        self._model_lock = threading.Lock()
        self._model_problem: str | None = None  # None: not checked yet; "": no problem

    def __repr__(self) -> str:
        return f"ChatClient(url={self.url!r}, model={self.model!r})"

    @property
    def model(self) -> str:
        """The model requests name."""
        assert self.endpoint.model is not None
        return self.endpoint.model

    @property
    def concurrency(self) -> int:
        """Requests in flight at once in :meth:`map`."""
        return self.endpoint.concurrency

    def api_identity(self) -> dict[str, str]:
        """What a user's identity (a cache key) adds for the API: nothing for chat, so that
        keys from before the API could be chosen hold; ``{"api": "completions"}`` else (the
        model reads another text)."""
        return {} if self.endpoint.api == "chat" else {"api": self.endpoint.api}

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
        self._check_model()
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

    def _check_model(self) -> None:
        """Once, before the first request: the server's model list (``GET /v1/models``) must
        hold the model requests name. llama.cpp's server answers a name it does not serve with
        its default model and echoes the name back, so verdicts, answers, their cache entries
        and the calibration a gate looks up would carry a model that never ran. A server that
        lists no models (no such route, an error, another shape) is not checked."""
        with self._model_lock:
            if self._model_problem is None:
                self._model_problem = self._model_mismatch(self._listed_models())
        if self._model_problem:
            raise self._error(self._model_problem)

    def _model_mismatch(self, listed: list[str]) -> str:
        """What is wrong with the model given the server's list ('' when nothing is)."""
        if not listed or self.model in listed or f"{self.model}:latest" in listed:
            return ""
        shown = ", ".join(repr(m) for m in listed[:5]) + (" ..." if len(listed) > 5 else "")
        return (
            f"{self.url.rsplit('/v1/', 1)[0]} does not serve model {self.model!r}; it lists "
            f"{shown}. A server may answer a name it does not know with another model (llama.cpp "
            f"serves its default), so set the model ({self.naming.model_env} or "
            "Endpoint(model=...)) to one it lists, or start the server under that name "
            "(llama_cpp.server --model_alias)"
        )

    def _listed_models(self) -> list[str]:
        """The model ids ``GET <base>/v1/models`` lists; [] when it lists none we can read."""
        route = "/chat/completions" if self.endpoint.api == "chat" else "/completions"
        parts = urllib.parse.urlsplit(self._url)
        path = parts.path[: -len(route)] + "/models" if parts.path.endswith(route) else ""
        if not path:
            return []
        request = urllib.request.Request(
            urllib.parse.urlunsplit(parts._replace(path=path)),
            method="GET",
            headers={"Accept": "application/json"},
        )
        if self._secret:
            request.add_unredirected_header("Authorization", self._secret.header())
        assert self.endpoint.attempt_timeout is not None
        try:
            timeout = min(self.endpoint.attempt_timeout, MODELS_TIMEOUT)
            with self._opener.open(request, timeout=timeout) as response:
                data = json.loads(response.read(MAX_REPLY_BYTES))
        except (OSError, ValueError, http.client.HTTPException):
            return []  # no list to check against (404, a timeout, not JSON)
        items = data.get("data") if isinstance(data, dict) else None
        if not isinstance(items, list):
            return []
        return [i["id"] for i in items if isinstance(i, dict) and isinstance(i.get("id"), str)]

    def _complete(self, messages: Sequence[Message], parameters: Mapping[str, Any]) -> ChatReply:
        payload: dict[str, Any] = {"model": self.model, "stream": False, **parameters}
        if self.endpoint.api == "chat":
            payload["messages"] = list(messages)
        else:
            payload["prompt"] = completion_prompt(messages)
        body = json.dumps(payload).encode("utf-8")
        settings = self.endpoint
        assert settings.timeout is not None and settings.attempt_timeout is not None
        attempts = settings.max_retries + 1
        deadline = time.monotonic() + settings.timeout
        for attempt in range(attempts):
            left = max(deadline - time.monotonic(), 0.001)
            try:
                return self._send(body, min(settings.attempt_timeout, left))
            except _Retryable as failure:
                retry = failure
            # Outside the except clause: what is raised from here carries no retry internals.
            if attempt == attempts - 1:
                raise self._error(retry.describe(attempts))
            delay = self._delay(attempt, retry.retry_after)
            if time.monotonic() + delay >= deadline:
                raise self._error(
                    f"{retry.describe(attempt + 1)}; no more retries: the timeout of "
                    f"{settings.timeout:g} s bounds the whole call, retries included"
                )
            self.sleep(delay)
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
                    f"no reply from {self.url} within {timeout:.3g} s ({n} attempts); raise "
                    f"the attempt timeout ({self.naming.knob('attempt_timeout')}) or the "
                    f"deadline ({self.naming.knob('timeout')}), or check the server"
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
                f"overloaded or failing. Try later, lower the concurrency "
                f"({self.naming.knob('concurrency')}), or raise max_retries= and backoff= "
                "(arguments of the Endpoint in Python)"
            ),
            retry_after,
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        """Seconds to wait before the next attempt."""
        max_backoff = self.endpoint.max_backoff
        if retry_after is not None:
            if retry_after > max_backoff:
                raise self._error(
                    f"{self.url} asks to wait {retry_after:.0f} s before retrying (Retry-After), "
                    f"more than max_backoff={max_backoff:g} s; try later or raise max_backoff= "
                    "(an argument of the Endpoint in Python)"
                )
            delay = retry_after
        else:
            # Exponential backoff with a little jitter so parallel workers spread out.
            delay = min(max_backoff, self.endpoint.backoff * 2**attempt)
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
            401: f"check the API key in the environment variable {self.endpoint.api_key_env}",
            403: f"check the API key in the environment variable {self.endpoint.api_key_env}",
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
                f"OpenAI-compatible {self._route} endpoint?"
            ) from None
        chat = self.endpoint.api == "chat"
        where = "message.content" if chat else "text"
        try:
            choice = data["choices"][0]
            content = choice["message"]["content"] if chat else choice["text"]
        except (KeyError, IndexError, TypeError):
            error = data.get("error") if isinstance(data, dict) else None
            detail = (
                f"server error: {self.scrub(repr(error))[:SNIPPET_CHARS]}"
                if error
                else f"got {self._quote(text)}"
            )
            raise self._error(
                f"malformed reply from {self.url}: no choices[0].{where} ({detail})"
            ) from None
        if not isinstance(content, str):
            raise self._error(
                f"malformed reply from {self.url}: {'message content' if chat else 'text'} is "
                f"{type(content).__name__}, not text"
            )
        return ChatReply(repaired_text(content), parse_usage(data))

    @property
    def _route(self) -> str:
        return "/v1/chat/completions" if self.endpoint.api == "chat" else "/v1/completions"

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


class EndpointUser:
    """What a judge or generator that sends its requests through one :class:`ChatClient`
    (its ``client``) shows of it: the URL, the model, the concurrency, what was sent and what
    it cost."""

    client: ChatClient

    @property
    def url(self) -> str:
        """The chat-completions URL requests go to (without its query string)."""
        return self.client.url

    @property
    def model(self) -> str:
        """The model requests name."""
        return self.client.model

    @property
    def concurrency(self) -> int:
        """Requests in flight at once."""
        return self.client.concurrency

    @property
    def requests_sent(self) -> int:
        """Requests sent so far (retries included; cached replies send none)."""
        return self.client.requests_sent

    @property
    def meter(self) -> Meter:
        """Requests, cache hits and tokens so far (the client's: shared by every user of it)."""
        return self.client.meter

    @property
    def cost(self) -> Cost:
        """:attr:`meter`'s counts."""
        return self.client.meter.cost
