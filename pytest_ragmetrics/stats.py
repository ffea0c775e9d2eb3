"""Paired statistics over queries: bootstrap confidence intervals and randomization tests.

Both are seeded, so the same inputs give the same numbers on every machine and under xdist.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

DEFAULT_SEED = 20240229
_CHUNK_CELLS = 4_000_000  # resamples x queries per vectorised block (~32 MB of float64)


@dataclass(frozen=True)
class PairedComparison:
    """How ``current`` differs from ``baseline`` over the same queries."""

    n: int
    mean_delta: float
    ci_low: float
    ci_high: float
    p_value: float
    worse: int
    better: int
    same: int


def _rows_per_chunk(n: int) -> int:
    return max(1, _CHUNK_CELLS // max(n, 1))


def bootstrap_ci(
    deltas: npt.ArrayLike,
    *,
    confidence: float = 0.95,
    resamples: int = 10_000,
    seed: int = DEFAULT_SEED,
) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean of paired differences (queries resampled)."""
    d = np.asarray(deltas, dtype=np.float64)
    n = len(d)
    if n == 0:
        return (np.nan, np.nan)
    rng = np.random.default_rng(seed)
    means = np.empty(resamples)
    step = _rows_per_chunk(n)
    for start in range(0, resamples, step):
        rows = min(step, resamples - start)
        idx = rng.integers(0, n, size=(rows, n))
        means[start : start + rows] = d[idx].mean(axis=1)
    alpha = (1.0 - confidence) / 2.0
    low, high = np.quantile(means, [alpha, 1.0 - alpha])
    return float(low), float(high)


def randomization_p_value(
    deltas: npt.ArrayLike, *, permutations: int = 10_000, seed: int = DEFAULT_SEED
) -> float:
    """Two-sided paired randomization (sign-flip) test of mean difference = 0.

    p = (1 + #{|mean(s * d)| >= |mean(d)|}) / (permutations + 1): the +1 correction counts the
    observed labelling, so p is never 0.
    """
    d = np.asarray(deltas, dtype=np.float64)
    n = len(d)
    if n == 0:
        return 1.0
    observed = abs(d.mean())
    rng = np.random.default_rng(seed)
    at_least = 0
    step = _rows_per_chunk(n)
    # A tolerance keeps float noise from deciding ties between equal sums.
    eps = 1e-12 * max(1.0, float(np.abs(d).max()))
    for start in range(0, permutations, step):
        rows = min(step, permutations - start)
        signs = rng.integers(0, 2, size=(rows, n), dtype=np.int8) * 2 - 1
        flipped = np.abs(signs @ d) / n
        at_least += int((flipped >= observed - eps).sum())
    return (1 + at_least) / (permutations + 1)


def compare_paired(
    baseline: npt.ArrayLike,
    current: npt.ArrayLike,
    *,
    seed: int = DEFAULT_SEED,
    resamples: int = 10_000,
) -> PairedComparison:
    """Paired comparison of per-query values (NaN pairs are dropped).

    The per-query Δ follow :mod:`pytest_ragmetrics.deltas`: both values at the stored
    precision, a Δ of 0 there is tied; the CI and p are computed on those same Δ.
    """
    from pytest_ragmetrics.deltas import deltas, tally

    b = np.asarray(baseline, dtype=np.float64)
    c = np.asarray(current, dtype=np.float64)
    keep = ~(np.isnan(b) | np.isnan(c))
    d = deltas(b[keep], c[keep])
    n = len(d)
    if n == 0:
        return PairedComparison(0, np.nan, np.nan, np.nan, 1.0, 0, 0, 0)
    low, high = bootstrap_ci(d, resamples=resamples, seed=seed)
    p = randomization_p_value(d, permutations=resamples, seed=seed)
    worse, same, better = tally(d)
    return PairedComparison(n, float(d.mean()) + 0.0, low + 0.0, high + 0.0, p, worse, better, same)


MAX_QUERIES_SEARCHED = 64  # past this the test's floor 1 / (permutations + 1) decides alone


@lru_cache(maxsize=256)
def min_attainable_p(n: int, *, permutations: int = 10_000, seed: int = DEFAULT_SEED) -> float:
    """The smallest p :func:`randomization_p_value` can give over ``n`` queries, whatever the
    differences.

    The all-+ and all-- sign patterns reach |mean| of any ``d``, so every ``d`` counts at
    least their draws; equal same-sign differences count only those. With the same seed the
    drawn patterns do not depend on ``d``, so this is exact for the test as it runs, not an
    estimate (about 2 / 2^n, never below 1 / (permutations + 1)).
    """
    if n <= 0:
        return 1.0
    return randomization_p_value(np.ones(n), permutations=permutations, seed=seed)


@lru_cache(maxsize=64)
def queries_needed(
    alpha: float, *, permutations: int = 10_000, seed: int = DEFAULT_SEED
) -> int | None:
    """The fewest queries with which the randomization test can give p < ``alpha``; None when
    no number can (``alpha`` at or below the test's floor 1 / (permutations + 1))."""
    if alpha <= 1.0 / (permutations + 1):
        return None
    # 2 / 2^n < alpha is needed (up to the draws' noise): start a little below it.
    start = max(1, math.floor(1 + math.log2(1.0 / alpha)) - 2)
    for n in range(start, MAX_QUERIES_SEARCHED + 1):
        if min_attainable_p(n, permutations=permutations, seed=seed) < alpha:
            return n
    return None
