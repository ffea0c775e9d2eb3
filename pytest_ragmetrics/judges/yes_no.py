"""Yes/no questions to an OpenAI-compatible chat endpoint: what the HTTP judge and the HTTP
relevance judge share. A question is a system prompt and one user message; the reply counts
when it starts with yes or no (:func:`parse_yes_no`); replies are cached per question, and one
that is neither yes nor no is no verdict: never stored, so the next run asks again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any, Literal

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import VerdictCache
from pytest_ragmetrics.transport.client import ChatClient
from pytest_ragmetrics.transport.endpoint import Naming

ENV_URL = "RAGMETRICS_JUDGE_URL"
ENV_MODEL = "RAGMETRICS_JUDGE_MODEL"
ENV_API_KEY = "RAGMETRICS_JUDGE_API_KEY"
#: How the HTTP judges speak: their errors, environment variables and deadline (60 s).
NAMING = Naming(
    "HTTP judge", JudgeError, ENV_URL, ENV_MODEL, ENV_API_KEY, settings="ragmetrics_judge_"
)
#: A yes/no judge's default ``max_tokens``: room for "yes" or "no" and a little more.
MAX_TOKENS = 5
Unparseable = Literal["error", "unjudged"]

_VERDICT = re.compile(r"^\W*(?:(?:final\s+)?answer\W*)?(yes|no)\b", re.IGNORECASE)
_YES_OR_NO = re.compile(r"\b(yes|no)\b", re.IGNORECASE)


def parse_yes_no(reply: str) -> bool | None:
    """True for a reply starting with "yes", False for "no", None for anything else.

    A reply that says the other word too is None: "Answer yes or no: no", "yes/no" and "Yes or
    no? Not supported." repeat the instruction (small models do) and say nothing by their
    first word, so they are no verdict rather than a "yes".
    """
    match = _VERDICT.match(reply.strip())
    if match is None:
        return None
    said = {word.lower() for word in _YES_OR_NO.findall(reply)}
    if len(said) != 1:
        return None
    return match.group(1).lower() == "yes"


def is_verdict(value: Any) -> bool:
    """The shape of a cached verdict: {"reply": text, "verdict": true or false}. A reply that
    did not parse into yes or no (an empty one, a refusal) is no verdict: never stored, and
    an entry holding one (written by an older version) is asked again, as is one whose reply
    does not read as its verdict today (an older version read "Answer yes or no: no" as yes)."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("reply"), str)
        and isinstance(value.get("verdict"), bool)
        and parse_yes_no(value["reply"]) is value["verdict"]
    )


def is_metered_verdict(value: Any) -> bool:
    """A cached verdict that also keeps the token ``usage`` its request reported (or null)."""
    if not is_verdict(value):
        return False
    usage = value.get("usage")
    return usage is None or (
        isinstance(usage, dict) and all(v is None or isinstance(v, int) for v in usage.values())
    )


def check_unparseable(value: object, label: str) -> Unparseable:
    """``value`` if it is a way to treat an unparseable reply, else a JudgeError."""
    if value == "error" or value == "unjudged":
        return value
    raise JudgeError(f"{label}: unparseable must be 'error' or 'unjudged', got {value!r}")


class YesNoQuestions:
    """Yes/no questions asked through ``client`` with one system prompt and the sampling
    ``parameters``, cached in ``verdicts`` (keyed by the asker's identity and each question's
    inputs). ``metered`` keeps each reply's token usage with it. An unparseable reply raises a
    JudgeError starting with ``label`` (naming ``items`` it leaves unjudged otherwise) unless
    ``unparseable="unjudged"``; cached replies are checked too, since the mode is not part of
    the identity."""

    def __init__(
        self,
        client: ChatClient,
        system: str,
        parameters: Mapping[str, Any],
        verdicts: VerdictCache,
        *,
        unparseable: Unparseable,
        label: str,
        items: str,
        metered: bool = False,
    ) -> None:
        self.client = client
        self.system = system
        self.parameters = dict(parameters)
        self.verdicts = verdicts
        self.unparseable = unparseable
        self.label = label
        self.items = items
        self.metered = metered

    @property
    def _valid(self) -> Callable[[Any], bool]:
        return is_metered_verdict if self.metered else is_verdict

    def ask(self, inputs: Mapping[str, Any], prompt: str, what: str) -> tuple[dict[str, Any], bool]:
        """(the verdict on ``prompt``, whether it was asked now rather than read from the
        cache, where a read counts as a hit on the client's meter)."""
        asked: list[bool] = []

        def compute() -> dict[str, Any]:
            asked.append(True)
            found = self._reply(prompt)
            self.check(found, what)
            return found

        raw: dict[str, Any] = self.verdicts.get(inputs, compute, valid=self._valid)
        if not asked:
            self.client.meter.hit()
        self.check(raw, what)
        return raw, bool(asked)

    def is_cached(self, inputs: Mapping[str, Any]) -> bool:
        """Whether the verdict for ``inputs`` is in the cache (asking would send nothing)."""
        return self.verdicts.peek(inputs, valid=self._valid) is not None

    def _reply(self, prompt: str) -> dict[str, Any]:
        messages = [
            {"role": "system", "content": self.system},
            {"role": "user", "content": prompt},
        ]
        reply = self.client.complete(messages, **self.parameters)
        found: dict[str, Any] = {"reply": reply.text, "verdict": parse_yes_no(reply.text)}
        if self.metered:
            usage = reply.usage
            found["usage"] = (
                None
                if usage is None
                else {
                    "prompt_tokens": usage.prompt_tokens,
                    "completion_tokens": usage.completion_tokens,
                }
            )
        return found

    def check(self, found: Mapping[str, Any], what: str) -> None:
        """A JudgeError for an unparseable reply, unless such replies are left unjudged."""
        if found["verdict"] is None and self.unparseable == "error":
            raise JudgeError(
                f"{self.label}: model {self.client.model!r} replied "
                f"{self.client.scrub(found['reply'])[:120]!r} to the {what} question instead of "
                f"yes or no; use a stronger model, or unparseable='unjudged' to leave such "
                f"{self.items} unjudged"
            )


__all__ = [
    "ENV_API_KEY",
    "ENV_MODEL",
    "ENV_URL",
    "NAMING",
    "YesNoQuestions",
    "is_verdict",
    "parse_yes_no",
]
