"""Calibrate the embedding judge's context-relevance question against SciFact's qrels.

The same measurement as

    ragmetrics retrieve --dataset example_suite/data/scifact --retriever dense \
        --cache-dir example_suite/.ragmetrics/cache --out dense.trec
    ragmetrics calibrate --question relevance --judge embedding \
        --dataset example_suite/data/scifact --run dense.trec --top 3 --max-chars 600 \
        --cache-dir example_suite/.ragmetrics/cache            # tuned threshold
    ... the same with --threshold 0.6                          # the default, on all pairs

in one process, through the same functions (``retrieved_relevance_labels`` and
``calibrate_relevance``): for each SciFact test claim, the dense retriever's top ``--top``
abstracts cut after 600 characters (what the example pipeline gives its generator), relevant
when the qrels say so; SciFact's qrels hold positives only, so the negatives are the retrieved
abstracts the qrels do not list (unjudged, presumed non-relevant): an unjudged abstract that is
in fact relevant counts against a judge that says so, so kappa is a lower bound. The threshold
of cosine(claim, abstract) is tuned on a seeded half (seed 0) and scored on the other half; the
fixed thresholds are scored on every pair.

Run: python benchmarks/calibrate_context_relevance.py [--top 3] [--seed 0]
"""

from __future__ import annotations

import argparse

from scifact_data import scifact

MAX_CONTEXT_CHARS = 600
FIXED = (0.5, 0.6)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    from pytest_ragmetrics import load_dataset
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.judges import EmbeddingJudge
    from pytest_ragmetrics.judges.calibration import (
        calibrate_relevance,
        retrieved_relevance_labels,
    )
    from pytest_ragmetrics.retrievers import DenseRetriever

    root = scifact()
    cache = Cache(root.parents[1] / ".ragmetrics" / "cache")
    dataset = load_dataset(root, "test")
    run = DenseRetriever(dataset.corpus, cache=cache).search(dataset.queries, args.top)
    pairs, how = retrieved_relevance_labels(
        run,
        dataset.qrels,
        dataset.queries,
        dataset.corpus,
        top=args.top,
        max_chars=MAX_CONTEXT_CHARS,
        run_name="the dense run",
    )
    judge = EmbeddingJudge(cache=cache).context_judge
    tuned = calibrate_relevance(judge, pairs, negatives=how, seed=args.seed)
    print(f"{len(pairs)} (claim, abstract) pairs; {how}")
    print(
        f"threshold tuned on {tuned.tuning.n if tuned.tuning else 0} pairs (seed {args.seed}): "
        f"{tuned.threshold:.2f}; on the other {tuned.n}: kappa {tuned.kappa:.3f}, accuracy "
        f"{tuned.accuracy:.3f}"
    )
    for threshold in FIXED:
        fixed = calibrate_relevance(judge.with_threshold(threshold), pairs, tune=False)
        print(
            f"threshold {threshold:.2f} on all {fixed.n} pairs: kappa {fixed.kappa:.3f}, "
            f"accuracy {fixed.accuracy:.3f}"
        )


if __name__ == "__main__":
    main()
