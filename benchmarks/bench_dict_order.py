"""The dict-direction guard: how often it refuses a dict whose order means nothing, how much
rising order it needs to catch the LangChain-distance trap, and what it costs.

A ``{query: {doc: score}}`` dict whose direction is not declared is refused when its scores rise
entry after entry for most queries, more regularly than an arbitrary order would with a chance
of 1e-6 (pytest_ragmetrics.data.scores.unordered_contradiction). Printed, in one run:

- **false alarms**: random-order dicts (each query's entries in random order; 1 to 40
  queries, small ones most often, 2-20 entries, values drawn from 2 to 1,000 distinct levels,
  so ties are common): how many are refused (the bound says at most 1e-6 of them);
- **the trap**: dicts whose queries all rise (distances as LangChain returns them): for each
  depth, the fewest such queries that are refused;
- **cost**: ``evaluate`` on bench_metrics' dict (5,000 queries x 1,000 documents, best first),
  undeclared (the guard looks at each query's first and last score) against
  ``scores="similarity"`` (no guard), and on the same dict in random order (the full check).

Run: python benchmarks/bench_dict_order.py [--dicts 200000] [--seed 0]
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from pytest_ragmetrics import evaluate
from pytest_ragmetrics.data.scores import CHANCE, unordered_contradiction


def false_alarms(n_dicts: int, seed: int) -> tuple[int, int]:
    """Random-order dicts refused, out of ``n_dicts``; and how many had most queries rising
    (the ones the bound, not the majority rule, had to clear)."""
    rng = np.random.default_rng(seed)
    refused = majority = 0
    for _ in range(n_dicts):
        n_queries = int(rng.choice([1, 1, 2, 3, 5, 10, 20, 40]))  # small ones often rise
        counts = rng.integers(2, 21, size=n_queries)
        levels = int(rng.choice([2, 3, 5, 10, 1000]))
        scores = rng.integers(0, levels, size=int(counts.sum())).astype(np.float64)
        offsets = np.concatenate(([0], np.cumsum(counts))).astype(np.int64)
        steps = np.diff(scores)
        starts = offsets[:-1]
        rising = sum(
            1
            for lo, hi in zip(starts, offsets[1:], strict=True)
            if (steps[lo : hi - 1] >= 0).all() and (steps[lo : hi - 1] > 0).any()
        )
        majority += rising * 2 > n_queries
        if unordered_contradiction(range(n_queries), offsets, scores) is not None:
            refused += 1
    return refused, majority


def fewest_rising_queries(depth: int) -> int:
    """The fewest queries of ``depth`` distinct rising scores that are refused."""
    for n_queries in range(1, 200):
        scores = np.tile(np.arange(depth, dtype=np.float64), n_queries)
        offsets = np.arange(0, depth * n_queries + 1, depth, dtype=np.int64)
        if unordered_contradiction(range(n_queries), offsets, scores) is not None:
            return n_queries
    return -1


def timed(fn: Any, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def cost() -> None:
    from bench_metrics import METRICS, synthetic

    data = synthetic(5000, 1000, 100_000)
    qrels, run = data["qrels"], data["run"]
    rng = np.random.default_rng(1)
    shuffled = {
        q: dict(list(docs.items())[i] for i in rng.permutation(len(docs)))
        for q, docs in run.items()
    }
    times = {
        "declared": timed(lambda: evaluate(qrels, run, METRICS, scores="similarity")),
        "undeclared": timed(lambda: evaluate(qrels, run, METRICS)),
        "random declared": timed(lambda: evaluate(qrels, shuffled, METRICS, scores="similarity")),
        "random undeclared": timed(lambda: evaluate(qrels, shuffled, METRICS)),
    }
    print("cost, evaluate on 5,000 queries x 1,000 documents (best of 3):")
    for order in ("", "random "):
        a, b = times[f"{order}declared"], times[f"{order}undeclared"]
        label = "in random order" if order else "best first"
        print(
            f"  dict {label:15s} scores='similarity' {a:.3f} s, undeclared (guarded) "
            f"{b:.3f} s: {b / a:.3f}x"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--dicts", type=int, default=200_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-cost", action="store_true", help="skip the evaluate timing")
    args = parser.parse_args()
    refused, majority = false_alarms(args.dicts, args.seed)
    print(
        f"false alarms: {refused} of {args.dicts:,} random-order dicts refused "
        f"(rate {refused / args.dicts:.2g}; bound {CHANCE:g}); {majority:,} of them had most "
        "queries rising by chance, and were let through by the bound"
    )
    shapes = ", ".join(f"depth {d}: {fewest_rising_queries(d)}" for d in (2, 3, 4, 5, 6, 8, 10, 20))
    print(f"the trap: fewest rising queries refused, by depth: {shapes}")
    if not args.no_cost:
        cost()


if __name__ == "__main__":
    main()
