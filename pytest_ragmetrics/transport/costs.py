"""What answering and judging cost: the token counts one reply reports (:class:`Usage`) and
the counts over many requests (:class:`Cost`: calls, cache hits, tokens)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any


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
class Cost:
    """What answering cost: requests sent (``calls``), answers taken from the cache instead
    (``cache_hits``), the tokens the endpoint reported in its ``usage`` (``unmetered``:
    calls whose reply reported none), and answers read from a recording (``replayed``: no
    generator ran for them, nor was its cache asked)."""

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    unmetered: int = 0
    replayed: int = 0

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
            self.replayed + other.replayed,
        )

    def __sub__(self, other: Cost) -> Cost:
        return Cost(
            self.calls - other.calls,
            self.cache_hits - other.cache_hits,
            self.prompt_tokens - other.prompt_tokens,
            self.completion_tokens - other.completion_tokens,
            self.unmetered - other.unmetered,
            self.replayed - other.replayed,
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
            "replayed": self.replayed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Cost:
        """Rebuild from :meth:`to_dict` output (unknown keys ignored, missing ones 0)."""
        names = (
            "calls",
            "cache_hits",
            "prompt_tokens",
            "completion_tokens",
            "unmetered",
            "replayed",
        )
        return cls(*(int(data.get(name) or 0) for name in names))

    def describe(self) -> str:
        """``12 calls (288 cached), 4,210 tokens (3,900 prompt + 310 completion)``; ``usage
        not reported`` instead of the tokens when no call reported any (a function
        generator, an endpoint without ``usage``), never "0 tokens"; answers read from a
        recording are said apart (``0 calls (0 cached, 300 replayed from a recording)``)."""
        replayed = f", {self.replayed} replayed from a recording" if self.replayed else ""
        text = f"{self.calls} calls ({self.cache_hits} cached{replayed})"
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


__all__ = ["Cost", "Usage"]
