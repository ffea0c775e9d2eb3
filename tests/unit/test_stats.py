"""Paired statistics: bootstrap CI and sign-flip randomization test."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pytest_ragmetrics.stats import bootstrap_ci, compare_paired, randomization_p_value


def exact_sign_flip_p(d: np.ndarray) -> float:
    """Exact two-sided p over all 2^n sign patterns (reference for small n)."""
    observed = abs(d.mean())
    hits = sum(
        abs((np.asarray(signs) * d).mean()) >= observed - 1e-12
        for signs in itertools.product([-1, 1], repeat=len(d))
    )
    return hits / 2 ** len(d)


def test_randomization_matches_exact_enumeration() -> None:
    d = np.array([0.3, -0.1, 0.25, 0.4, 0.05, -0.2, 0.35, 0.1, 0.15, 0.3])
    p = randomization_p_value(d, permutations=20_000)
    assert p == pytest.approx(exact_sign_flip_p(d), abs=0.01)


def test_randomization_is_seeded_and_never_zero() -> None:
    d = np.full(50, 0.5)
    first = randomization_p_value(d, permutations=999, seed=1)
    assert first == randomization_p_value(d, permutations=999, seed=1)
    assert first == pytest.approx(1 / 1000)  # the +1 correction: never exactly 0
    assert randomization_p_value(np.zeros(20)) == 1.0


def test_bootstrap_ci_brackets_the_mean_and_is_reproducible() -> None:
    rng = np.random.default_rng(0)
    d = rng.normal(0.05, 0.1, size=300)
    low, high = bootstrap_ci(d)
    assert low < d.mean() < high
    assert (low, high) == bootstrap_ci(d)
    # About mean +- 1.96 * sd / sqrt(n).
    half = 1.96 * d.std(ddof=1) / np.sqrt(len(d))
    assert high - low == pytest.approx(2 * half, rel=0.1)


def test_compare_paired_counts_and_drops_nan_pairs() -> None:
    before = np.array([1.0, 0.5, 0.0, np.nan, 0.2])
    after = np.array([0.5, 0.5, 1.0, 0.3, 0.1])
    c = compare_paired(before, after, resamples=2000)
    assert c.n == 4
    assert (c.worse, c.better, c.same) == (2, 1, 1)
    assert c.mean_delta == pytest.approx((-0.5 + 0 + 1.0 - 0.1) / 4)
    assert c.ci_low <= c.mean_delta <= c.ci_high


def test_large_inputs_are_processed_in_chunks() -> None:
    d = np.random.default_rng(3).normal(-0.01, 0.05, size=20_000)
    low, high = bootstrap_ci(d, resamples=1000)
    assert low < d.mean() < high
    assert high - low < 0.002
    assert randomization_p_value(d, permutations=1000) < 0.01
