"""Metric semantics: the scoring rules two evaluations must share to be comparable.

Kept free of numpy so that pytest start-up (which validates settings) stays cheap.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from pytest_ragmetrics.errors import MetricError

Gain = Literal["linear", "exponential"]
QuerySet = Literal["qrels", "intersection"]
GAINS: tuple[str, ...] = ("linear", "exponential")
QUERY_SETS: tuple[str, ...] = ("qrels", "intersection")


@dataclass(frozen=True)
class MetricSemantics:
    """The scoring rules; two evaluations are comparable only if these are equal."""

    relevance_level: int = 1
    gain: Gain = "linear"
    query_set: QuerySet = "qrels"
    # BEIR's rule for corpora that contain the queries: drop docs whose id is the query's id.
    ignore_identical_ids: bool = False

    def __post_init__(self) -> None:
        if isinstance(self.relevance_level, bool) or not isinstance(self.relevance_level, int):
            raise MetricError(f"relevance_level must be an integer, got {self.relevance_level!r}")
        if self.gain not in GAINS:
            raise MetricError(f"gain must be one of {', '.join(GAINS)}, got {self.gain!r}")
        if self.query_set not in QUERY_SETS:
            raise MetricError(
                f"query_set must be one of {', '.join(QUERY_SETS)}, got {self.query_set!r}"
            )
        if not isinstance(self.ignore_identical_ids, bool):
            raise MetricError(
                f"ignore_identical_ids must be true or false, got {self.ignore_identical_ids!r}"
            )

    def as_dict(self) -> dict[str, Any]:
        """The rules as JSON; ``ignore_identical_ids`` appears only when on, so records
        written before it existed still compare equal to ones without it."""
        rules: dict[str, Any] = {
            "relevance_level": self.relevance_level,
            "gain": self.gain,
            "query_set": self.query_set,
        }
        if self.ignore_identical_ids:
            rules["ignore_identical_ids"] = True
        return rules


def same_rules(first: Any, second: Any) -> bool:
    """Whether two records' ``semantics`` (JSON, or None for the answer layer) are the same
    rules: compared as :class:`MetricSemantics`, so a rule written at its default (a
    hand-added ``"ignore_identical_ids": false``, a left-out ``gain``) equals one left out.
    A value that is no set of rules is compared as it is."""
    return bool(_rules(first) == _rules(second))


def _rules(value: Any) -> Any:
    if not value:
        return None
    try:
        return MetricSemantics(**value).as_dict()
    except (MetricError, TypeError):
        return value
