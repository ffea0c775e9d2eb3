"""The token budget of generators and judges (``ragmetrics_judge_budget``): one budget for a
whole session, however many processes spend from it.

In one process a :class:`Budget` keeps its counts in memory. Given a ``ledger`` file, every
process holding a Budget on that file spends from the same counts: each reservation and each
settlement reads, changes and rewrites the ledger under an exclusive lock. That is how the
xdist workers of one pytest session share the budget (the controller names the ledger, in a
folder of its own, and removes it at the end).
"""

from __future__ import annotations

import contextlib
import json
import math
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_ragmetrics.errors import BudgetError
from pytest_ragmetrics.fileio import atomic_write_text, exclusive_lock, lock_beside
from pytest_ragmetrics.values import positive_int

if TYPE_CHECKING:
    from pytest_ragmetrics.transport.costs import Usage

Message = Mapping[str, str]


@dataclass
class _Counts:
    spent: int = 0
    calls: int = 0
    reserved: int = 0
    ratio: float = 1 / 3  # prompt tokens per character, the highest seen

    @classmethod
    def read(cls, path: Path) -> _Counts:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return cls()
        except (OSError, ValueError) as exc:
            raise BudgetError(f"{path}: cannot read the shared token budget ({exc})") from None
        if not isinstance(data, dict):
            raise BudgetError(f"{path}: the shared token budget is not a JSON object")
        return cls(
            int(data.get("spent", 0)),
            int(data.get("calls", 0)),
            max(0, int(data.get("reserved", 0))),
            float(data.get("ratio", 1 / 3)),
        )


class Budget:
    """A token budget shared by every client given it (generator and judges alike) and, with
    a ``ledger`` file, by every process using that file (the xdist workers of a session).

    Before a request is sent its tokens are estimated and reserved: the prompt at the highest
    tokens-per-character ratio seen so far in replies' ``usage`` (plus 10 %; one token per 3
    characters before any reply), the completion at ``max_tokens`` (256 when unbounded). A
    request whose reservation would take the total over ``tokens`` is not sent and raises
    :class:`~pytest_ragmetrics.errors.BudgetError`. When the reply comes, the reservation is
    replaced by the reported usage (kept as estimated when the server reports none). So the
    budget holds as long as no prompt has more tokens per character than those before it.
    """

    def __init__(
        self,
        tokens: int,
        *,
        option: str = "ragmetrics_judge_budget",
        ledger: str | Path | None = None,
    ) -> None:
        positive_int(tokens, f"{option}: the budget (a number of tokens)", BudgetError)
        self.tokens = tokens
        self.option = option
        self.ledger = None if ledger is None else Path(ledger)
        self._counts = _Counts()
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Budget({self.tokens}, spent={self.spent})"

    @contextlib.contextmanager
    def _state(self) -> Iterator[_Counts]:
        """The counts, changed in place by the caller and saved (with a ledger: the file's,
        under its lock, so that no other process changes them meanwhile)."""
        with self._lock:
            if self.ledger is None:
                yield self._counts
                return
            with exclusive_lock(
                lock_beside(self.ledger, hidden=False),
                timeout=600,
                what="token budget",
                error=BudgetError,
            ):
                counts = _Counts.read(self.ledger)
                before = asdict(counts)
                yield counts
                if asdict(counts) != before:
                    atomic_write_text(self.ledger, json.dumps(asdict(counts)))
                self._counts = counts

    @property
    def spent(self) -> int:
        """Tokens used so far (by every process sharing the ledger)."""
        with self._state() as counts:
            return counts.spent

    @property
    def calls(self) -> int:
        """Requests settled so far (by every process sharing the ledger)."""
        with self._state() as counts:
            return counts.calls

    def estimate(
        self, messages: Sequence[Mapping[str, str]], max_tokens: object
    ) -> tuple[int, int]:
        """(characters of the messages, tokens reserved for a request of them)."""
        chars = sum(len(str(m.get("content", ""))) for m in messages) + 16 * len(messages)
        limit = max_tokens if isinstance(max_tokens, int) and max_tokens > 0 else 256
        with self._state() as counts:
            ratio = counts.ratio
        return chars, math.ceil(chars * ratio * 1.1) + limit

    def reserve(self, estimate: int, who: str) -> None:
        """Reserve ``estimate`` tokens for one request of ``who``, or raise BudgetError."""
        with self._state() as counts:
            if counts.spent + counts.reserved + estimate > self.tokens:
                raise BudgetError(self._refusal(counts, estimate, who))
            counts.reserved += estimate

    def _refusal(self, counts: _Counts, estimate: int, who: str) -> str:
        scope = " across this session's workers" if self.ledger is not None else ""
        return (
            f"{who}: stopped before exceeding the token budget ({self.option} = "
            f"{self.tokens:,}): {counts.spent:,} tokens used{scope} by {counts.calls} "
            + ("call" if counts.calls == 1 else "calls")
            + (f", {counts.reserved:,} reserved in flight" if counts.reserved else "")
            + f", and the next call needs about {estimate:,}. Nothing more is sent; "
            "what was computed is cached, so raising the budget and rerunning pays "
            "only for the rest"
        )

    def settle(self, estimate: int, usage: Usage | None, chars: int) -> None:
        """Replace a reservation by what the call used (no usage: the estimate stands), and
        learn the prompt's tokens per character."""
        used = usage.total_tokens if usage is not None else None
        with self._state() as counts:
            counts.reserved = max(0, counts.reserved - estimate)
            counts.spent += estimate if used is None else used
            counts.calls += 1
            if usage is not None and usage.prompt_tokens and chars:
                counts.ratio = max(counts.ratio, usage.prompt_tokens / chars)

    def release(self, estimate: int) -> None:
        """Drop a reservation whose request failed before any reply."""
        with self._state() as counts:
            counts.reserved = max(0, counts.reserved - estimate)
