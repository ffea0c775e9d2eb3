"""Generators: a query and its contexts in, an answer out. :class:`FunctionGenerator` (your
function) or :class:`ChatGenerator` (any OpenAI-compatible chat endpoint, through
:class:`~pytest_ragmetrics.transport.client.ChatClient`), both :class:`Generator` s."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pytest_ragmetrics.code_identity import current_digest, function_identity, settle
from pytest_ragmetrics.errors import GeneratorError
from pytest_ragmetrics.prompts import prompt_set
from pytest_ragmetrics.transport.budget import Budget
from pytest_ragmetrics.transport.client import ChatClient, ChatReply, EndpointUser, Meter
from pytest_ragmetrics.transport.endpoint import Endpoint, Naming, Sampling

ENV_URL = "RAGMETRICS_GENERATOR_URL"
ENV_MODEL = "RAGMETRICS_GENERATOR_MODEL"
ENV_API_KEY = "RAGMETRICS_GENERATOR_API_KEY"
#: How generators speak: their errors, environment variables and deadline (120 s).
NAMING = Naming(
    "generator",
    GeneratorError,
    ENV_URL,
    ENV_MODEL,
    ENV_API_KEY,
    timeout=120.0,
    settings="ragmetrics_generator_",
)
MAX_TOKENS = 128  # an answer's default max_tokens


def number_contexts(contexts: Sequence[str]) -> str:
    """Contexts as the prompt shows them: ``[1] first`` ``[2] second``, a blank line apart."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts, 1))


@runtime_checkable
class Generator(Protocol):
    """Turns a query and its contexts into an answer."""

    def generate(self, query: str, contexts: Sequence[str]) -> ChatReply:
        """The answer text (and the endpoint's token usage, when it reports one)."""
        ...

    def identity(self) -> dict[str, Any]:
        """What determines the answers (model, prompt, sampling parameters); no URL, no key."""
        ...


class NamedFunction:
    """Your function with a name and a ``version``, identified by the digest of its code (see
    :mod:`pytest_ragmetrics.code_identity`): what :class:`FunctionGenerator` and
    :class:`~pytest_ragmetrics.generation.pipelines.FunctionPipeline` share. ``role`` is the
    identity's first key and how errors name it."""

    role = "function"

    def __init__(
        self,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        version: str | int | None = None,
    ) -> None:
        if not callable(fn):
            raise GeneratorError(f"{self.role}: {fn!r} is not callable")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self.version = version

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r})"

    def identity(self) -> dict[str, Any]:
        """The name, the function and its code digest, the version when given. The function
        is read again at each call (:func:`~pytest_ragmetrics.code_identity.current_digest`):
        a setting changed since the last batch of answers (``monkeypatch.setattr``, a dict
        edited) is not served the answers cached under the old one."""
        described = function_identity(self.fn, self.version, current_digest(self.fn))
        return {self.role: "function", "name": self.name, **described}

    def settle(self) -> None:
        """After a batch of answers: what the function changed itself as it ran (a counter,
        a memo) keeps its identity (:func:`~pytest_ragmetrics.code_identity.settle`)."""
        settle(self.fn)


class FunctionGenerator(NamedFunction):
    """Your function ``fn(query, contexts) -> answer`` as a generator. Its identity (the cache
    key of its answers) holds ``name``, the digest of its code (an edit of its body, or of a
    function of its module it calls, generates anew) and ``version`` when given: bump it when
    what the digest cannot see changes (see :mod:`pytest_ragmetrics.code_identity`)."""

    role = "generator"

    def generate(self, query: str, contexts: Sequence[str]) -> ChatReply:
        """``fn(query, contexts)``; anything but a string is a GeneratorError."""
        answer = self.fn(query, list(contexts))
        if not isinstance(answer, str):
            raise GeneratorError(
                f"generator {self.name!r} returned {type(answer).__name__} for query "
                f"{query[:60]!r}; return the answer text"
            )
        return ChatReply(answer)


class ChatGenerator(EndpointUser):
    """An OpenAI-compatible chat endpoint as the generator.

    ``endpoint`` says where and how, as for the HTTP judge
    (:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`; defaults from
    RAGMETRICS_GENERATOR_URL, _MODEL and _API_KEY, a deadline of 120 s per answer, retries
    included, each attempt at most ``attempt_timeout``): only the URL given, the key from the
    environment, ``concurrency`` requests in flight. ``prompts`` (role name -> text, as
    :func:`~pytest_ragmetrics.prompts.read_prompts` reads a prompt folder) replace the
    built-in ones: the user message ``user`` with ``{query}`` and ``{contexts}`` (numbered,
    see :func:`number_contexts`) filled in, checked when the generator is built (a GeneratorError
    here, not at the first request), after the ``system`` prompt, sent as written.
    ``sampling`` is sent with each request (temperature 0, seed 0, ``max_tokens`` 128 by
    default). The model, the prompts and the sampling are its identity (the cache key); the URL
    is not. ``budget`` is a token budget shared with the judges.
    """

    def __init__(
        self,
        endpoint: Endpoint | None = None,
        *,
        prompts: Mapping[str, str] | None = None,
        sampling: Sampling | None = None,
        budget: Budget | None = None,
    ) -> None:
        texts = prompt_set("generator", prompts, what="generator", error=GeneratorError)
        self.template = texts["user"]
        self.system_prompt = texts["system"]
        self.client = ChatClient(endpoint or Endpoint(), NAMING, meter=Meter(budget))
        self.parameters = (sampling or Sampling()).parameters(MAX_TOKENS)

    def __repr__(self) -> str:
        return f"ChatGenerator(url={self.url!r}, model={self.model!r})"

    def identity(self) -> dict[str, Any]:
        """Model, prompts, sampling parameters and a completions API when chosen."""
        return {
            "generator": "chat",
            "model": self.model,
            "system_prompt": self.system_prompt,
            "template": self.template,
            **self.parameters,
            **self.client.api_identity(),
        }

    def messages(self, query: str, contexts: Sequence[str]) -> list[dict[str, str]]:
        """The conversation sent for one query."""
        prompt = self.template.format(query=query, contexts=number_contexts(contexts))
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": prompt},
        ]

    def generate(self, query: str, contexts: Sequence[str]) -> ChatReply:
        """One completion: the answer and its usage."""
        return self.client.complete(self.messages(query, contexts), **self.parameters)


__all__ = [
    "ENV_API_KEY",
    "ENV_MODEL",
    "ENV_URL",
    "NAMING",
    "ChatGenerator",
    "FunctionGenerator",
    "Generator",
    "NamedFunction",
    "number_contexts",
]
