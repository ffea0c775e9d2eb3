"""Where requests go and how they are sent: one :class:`Endpoint` (URL, model, the API key's
source, the deadline and the attempt timeout, retries, concurrency) shared by the HTTP judges,
the HTTP relevance judge, the chat generator and the test-set generator; :class:`Sampling`, the
parameters sent with each request; :class:`Naming`, how a user of the endpoint speaks in errors
and where its defaults come from; :class:`Secret`, the API key.
"""

from __future__ import annotations

import dataclasses
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any

from pytest_ragmetrics.errors import RagMetricsError
from pytest_ragmetrics.redaction import redact_url, scrub
from pytest_ragmetrics.values import positive_int, real_number

APIS = ("chat", "completions")  # /v1/chat/completions, /v1/completions


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
    """How a user of an endpoint speaks: the name its errors start with, the error class, the
    environment variables that set its URL, its model and (by default) hold its key, and its
    deadline when the endpoint names none; ``settings`` is the prefix of the pytest settings
    that configure it (``ragmetrics_judge_``; '' when none do), for messages that say what
    to raise."""

    label: str
    error: type[RagMetricsError]
    url_env: str
    model_env: str
    api_key_env: str
    timeout: float = 60.0
    settings: str = ""

    def knob(self, name: str) -> str:
        """Where endpoint setting ``name`` is set: the Python argument, the pytest setting
        (when there is one) and the ``ragmetrics`` command's flag."""
        found = [f"{name}="]
        if self.settings:
            found.append(f"{self.settings}{name}")
        return " / ".join([*found, f"--{name.replace('_', '-')}"])


def _names(cls: type[Any]) -> tuple[str, ...]:
    return tuple(f.name for f in dataclasses.fields(cls))


def _taken(cls: type[Any], options: dict[str, Any]) -> Any:
    """``cls`` built from the entries of ``options`` named like its fields (removed from it;
    None stands for a setting not given: the default)."""
    taken = {name: options.pop(name) for name in _names(cls) if name in options}
    return cls(**{name: value for name, value in taken.items() if value is not None})


@dataclass(frozen=True)
class Endpoint:
    """An OpenAI-compatible ``/v1/chat/completions`` endpoint and how to talk to it.

    ``url`` and ``model`` default to the user's environment variables (RAGMETRICS_JUDGE_URL /
    _MODEL for judges, RAGMETRICS_GENERATOR_URL / _MODEL for generators); the API key
    (optional for local servers) is read from the variable ``api_key_env`` (default the user's
    ..._API_KEY) and never stored. ``timeout`` is a deadline: it bounds a whole call, retries
    and the waits between them included (default 60 s for judges, 120 s for generators); one
    attempt may take at most ``attempt_timeout`` seconds (default: all that is left). A failed
    attempt (429, most 5xx, a timeout, a refused connection) is retried ``max_retries`` times
    with exponential backoff from ``backoff`` seconds, at most ``max_backoff`` (or what
    Retry-After asks if that is not more). ``concurrency`` requests are in flight at once.
    Environment proxies are ignored unless ``use_env_proxy``; redirects are never followed.
    ``api`` is ``"chat"`` (``/v1/chat/completions``, the messages sent as they are) or
    ``"completions"`` (``/v1/completions``, for a base model that follows no chat template:
    the messages' contents are sent as one prompt, joined by blank lines).

    Nothing here is checked until a client is built on it (:class:`ChatClient
    <pytest_ragmetrics.transport.client.ChatClient>`): its errors then speak as its user.
    """

    url: str | None = None
    model: str | None = None
    api_key_env: str | None = None
    timeout: float | None = None
    attempt_timeout: float | None = None
    max_retries: int = 3
    backoff: float = 1.0
    max_backoff: float = 60.0
    concurrency: int = 1
    use_env_proxy: bool = False
    api: str = "chat"

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of its settings."""
        return _names(cls)

    @classmethod
    def take(cls, options: dict[str, Any]) -> Endpoint:
        """An endpoint of the entries of ``options`` named like its fields (``url``,
        ``timeout``, ...), removed from it: how flat settings (the CLI's, the plugin's) become
        one."""
        endpoint: Endpoint = _taken(cls, options)
        return endpoint

    def resolved(self, naming: Naming) -> Endpoint:
        """This endpoint with every default filled in (``naming``'s environment variables and
        deadline; the attempt timeout at most the deadline), checked: a bad value is
        ``naming.error`` saying which and how to set it."""
        url = self.url or os.environ.get(naming.url_env)
        model = self.model or os.environ.get(naming.model_env)
        timeout = naming.timeout if self.timeout is None else self.timeout
        _check(naming, url, model, timeout, self)
        attempt = timeout if self.attempt_timeout is None else self.attempt_timeout
        return dataclasses.replace(
            self,
            url=url,
            model=model,
            api_key_env=self.api_key_env or naming.api_key_env,
            timeout=float(timeout),
            attempt_timeout=min(float(timeout), float(attempt)),
            max_retries=int(self.max_retries),
            backoff=float(self.backoff),
            max_backoff=float(self.max_backoff),
        )


@dataclass(frozen=True)
class Sampling:
    """The sampling parameters sent with each request: ``temperature``, ``seed`` and
    ``max_tokens`` (None: the user's default, e.g. 5 for a yes/no judge, 128 for a generator).
    They are part of a judge's or generator's identity; the endpoint is not."""

    temperature: float = 0.0
    seed: int = 0
    max_tokens: int | None = None

    @classmethod
    def fields(cls) -> tuple[str, ...]:
        """The names of its parameters."""
        return _names(cls)

    @classmethod
    def take(cls, options: dict[str, Any]) -> Sampling:
        """Sampling of the entries ``temperature``, ``seed``, ``max_tokens`` of ``options``
        (removed from it)."""
        sampling: Sampling = _taken(cls, options)
        return sampling

    def parameters(self, max_tokens: int) -> dict[str, Any]:
        """The request's parameters, ``max_tokens`` given as the default."""
        return {
            "temperature": float(self.temperature),
            "seed": int(self.seed),
            "max_tokens": int(max_tokens if self.max_tokens is None else self.max_tokens),
        }


def _check(
    naming: Naming, url: str | None, model: str | None, timeout: float, endpoint: Endpoint
) -> None:
    if not url:
        raise naming.error(
            f"{naming.label}: no endpoint; pass Endpoint(url=...) or set {naming.url_env} (e.g. "
            "http://127.0.0.1:11434/v1 for Ollama)"
        )
    if not model:
        raise naming.error(
            f"{naming.label}: no model; pass Endpoint(model=...) or set {naming.model_env}"
        )
    if (
        not _number(timeout) > 0
        or not _number(endpoint.max_retries) >= 0
        or not _number(endpoint.backoff) >= 0
        or not _number(endpoint.max_backoff) >= 0
    ):
        raise naming.error(
            f"{naming.label}: timeout must be > 0 and max_retries, backoff, max_backoff >= 0"
        )
    if endpoint.attempt_timeout is not None and not _number(endpoint.attempt_timeout) > 0:
        raise naming.error(f"{naming.label}: attempt_timeout must be > 0")
    positive_int(endpoint.concurrency, f"{naming.label}: concurrency", naming.error)
    if endpoint.api not in APIS:
        raise naming.error(
            f"{naming.label}: api must be one of {', '.join(APIS)}, got {endpoint.api!r}"
        )


def _number(value: object) -> float:
    """``value`` as a float; NaN (never > 0 nor >= 0) for what is not a number."""
    number = real_number(value)
    return float("nan") if number is None else number


def request_url(base_url: str, naming: Naming, api: str = "chat") -> tuple[str, str]:
    """(request URL, URL safe to show) for a base URL such as http://host:8000 or .../v1: its
    ``/v1/chat/completions`` or, for ``api="completions"``, its ``/v1/completions``."""
    parts = urllib.parse.urlsplit(base_url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise naming.error(
            f"{naming.label}: base URL {redact_url(base_url)!r} must look like http://host:port or "
            f"https://host/v1 (set it with Endpoint(url=...) or {naming.url_env})"
        )
    if parts.username or parts.password:
        raise naming.error(
            f"{naming.label}: the base URL contains credentials; put the API key in the "
            f"environment variable ({naming.api_key_env} by default) instead"
        )
    path = parts.path.rstrip("/")
    route = "/chat/completions" if api == "chat" else "/completions"
    # A URL naming either route is taken as its base with that route.
    for known in ("/chat/completions", "/completions"):
        if path.endswith(known):
            path = path[: -len(known)] + route
            break
    else:
        path += route if path.endswith("/v1") else "/v1" + route
    url = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    shown = urllib.parse.urlunsplit((parts.scheme, parts.netloc, path, "", ""))
    return url, shown


__all__ = ["APIS", "Endpoint", "Naming", "Sampling", "Secret", "request_url"]
