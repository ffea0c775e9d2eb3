"""Per-query values paired with the baseline's, not only their keys: which queries lost their
value (a value in the baseline, n/a now), which gained one, and the means both sides have in
common. Also the gates that cannot work: an alpha the randomization test cannot reach with
this many queries, and a collapse to the worst possible value that no p-value may pass."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from pytest_ragmetrics.stats import PairedComparison, min_attainable_p, queries_needed


@dataclass(frozen=True)
class Gates:
    """What may hold a drop back: alpha (significance), the judge's noise, unjudged drops."""

    alpha: float | None
    seed: int
    unjudged_drops: str = "fail"
    noise: float | None = None


@dataclass(frozen=True)
class ValueSets:
    """Which of the shared queries have a value of one metric before and now."""

    both: np.ndarray[Any, Any]
    lost: list[str] = field(default_factory=list)
    gained: int = 0
    valued_before: int = 0

    @classmethod
    def of(
        cls,
        shared: Sequence[str],
        before: np.ndarray[Any, Any],
        now: np.ndarray[Any, Any],
        base_per_query: Mapping[str, Mapping[str, Any]],
        metric: str,
        *,
        now_has_none: bool,
        gone: Sequence[str] = (),
    ) -> ValueSets:
        """``gone``: queries of the baseline the current evaluation does not hold at all; the
        ones that had a value of ``metric`` lost it, like a query whose value is n/a now."""
        had, has = ~np.isnan(before), ~np.isnan(now)
        lost = [shared[int(i)] for i in np.flatnonzero(had & ~has)]
        with_value = int(had.sum())
        if now_has_none and not lost:
            # No query has a value now and none of the baseline's is shared: every query of
            # the baseline with a value lost it.
            lost = sorted(q for q, v in base_per_query.items() if valued(v.get(metric)))
            with_value = len(lost)
        else:
            vanished = [q for q in gone if valued(base_per_query.get(q, {}).get(metric))]
            lost += vanished
            with_value += len(vanished)
        return cls(had & has, lost, int((has & ~had).sum()), with_value)

    def note(
        self,
        before: float,
        now: float | None,
        only_baseline: int,
        only_current: int,
        any_shared: bool,
        paired: tuple[float, float] = (math.nan, math.nan),
    ) -> str:
        """How the compared means (``paired``, over the queries both have a value for) differ
        from the recorded ones ('' when they do not)."""
        differ = any_shared and bool(only_baseline or only_current)
        if not (self.lost or self.gained or differ):
            return ""
        overall = f"over all of them {before:.4f} → {'n/a' if now is None else f'{now:.4f}'}"
        where = f"{only_baseline} only in the baseline, {only_current} only in this run"
        n = int(self.both.sum())
        means = "" if math.isnan(paired[0]) else f", {paired[0]:.4f} → {paired[1]:.4f}"
        if not (self.lost or self.gained):
            return f"compared on the {n} queries both hold{means} ({where}; {overall})"
        parts = [
            f"{len(self.lost)} lost their value" if self.lost else "",
            f"{self.gained} gained one" if self.gained else "",
            where if differ else "",
        ]
        shown = "; ".join(p for p in parts if p)
        return f"compared on the {n} queries both have a value for{means} ({shown}; {overall})"

    def paired_means(
        self, before: np.ndarray[Any, Any], now: np.ndarray[Any, Any]
    ) -> tuple[float, float]:
        if not self.both.any():
            return math.nan, math.nan
        return float(before[self.both].mean()), float(now[self.both].mean())


def attainable_note(comparison: PairedComparison | None, alpha: float | None, seed: int) -> str:
    """'; with N queries the smallest attainable p is P ...' when ``alpha`` cannot be reached
    by the randomization test over this many queries ('' when it can, or without alpha)."""
    if alpha is None or comparison is None or comparison.n == 0:
        return ""
    smallest = min_attainable_p(comparison.n, seed=seed)
    if smallest < alpha:
        return ""
    needed = queries_needed(alpha, seed=seed)
    enough = (
        f"the test needs at least {needed} queries"
        if needed is not None
        else "no number of queries reaches it"
    )
    return (
        f"; with {_queries(comparison.n)} the smallest attainable p is {smallest:.4f}, so no "
        f"change can be significant at alpha {alpha:g}: {enough}"
    )


def alpha_unreachable(n: int, alpha: float | None, seed: int) -> str:
    """The verdict's note when ``alpha`` cannot be reached with ``n`` paired queries."""
    if alpha is None or n == 0:
        return ""
    smallest = min_attainable_p(n, seed=seed)
    if smallest < alpha:
        return ""
    needed = queries_needed(alpha, seed=seed)
    enough = f"the test needs at least {needed} queries" if needed else "no number of queries can"
    return (
        f"ragmetrics_alpha = {alpha:g} cannot be reached: with {_queries(n)} the smallest "
        f"attainable p is {smallest:.4f}, so no drop can fail on significance (only a collapse "
        f"to the worst value, or a lost value, fails); {enough}"
    )


def collapsed(metric: str, before: np.ndarray[Any, Any], now: np.ndarray[Any, Any]) -> str:
    """Why a drop is a collapse (every query that has a value in both is now at the worst
    value of the metric, and some was above it), or ''. A collapse fails whatever the
    p-value: too few queries for significance never lets it pass. The worst value is 0 for
    the built-in metrics, and what a registered one declared (``worst=``)."""
    worst = worst_value(metric)
    if worst is None:
        return ""
    both = ~(np.isnan(before) | np.isnan(now))
    if not both.any():
        return ""
    b, c = before[both], now[both]
    if np.all(c <= worst + 1e-12) and np.any(b > worst + 1e-12):
        return (
            f"fell to {worst:g}, the worst possible value, on all {int(both.sum())} "
            "queries: a collapse fails whatever the p-value"
        )
    return ""


def worst_value(metric: str) -> float | None:
    """The worst value ``metric`` can take; None when unknown (a registered metric that
    declared none, or a metric this process does not know)."""
    from pytest_ragmetrics.errors import MetricError
    from pytest_ragmetrics.metrics.names import families, parse_metric

    try:
        family = families().get(parse_metric(metric).family)
    except MetricError:
        return None
    return None if family is None else family.worst


def no_worst_note(metric: str) -> str:
    """What a drop held back by alpha says of a metric without a known worst value: the
    collapse rule cannot apply to it ('' when it can)."""
    if worst_value(metric) is not None:
        return ""
    return (
        f"; {metric} declares no worst value, so a fall to it cannot be told from a drop and "
        "fails only on significance (declare it: register(..., worst=0.0))"
    )


def _queries(n: int) -> str:
    return "1 query" if n == 1 else f"{n} queries"


def valued(value: Any) -> bool:
    """Whether a stored per-query value is a value (not None, n/a or NaN)."""
    if value is None or isinstance(value, bool):
        return False
    try:
        return not math.isnan(float(value))
    except (TypeError, ValueError):
        return False
