"""Calibrate the embedding judge's context-relevance question against SciFact's qrels.

Pairs: for each SciFact test claim, the dense retriever's top ``--top`` abstracts (cut after
600 characters, as the example pipeline gives them). A pair is relevant when the qrels judge the
abstract relevant to the claim. SciFact's qrels hold positives only, so the negatives are the
retrieved abstracts the qrels do not list (unjudged = non-relevant, trec_eval's convention):
an unjudged abstract that is in fact relevant counts against a judge that says so, so kappa is
a lower bound. The threshold of cosine(claim, abstract) is tuned on the odd-numbered claims
(best kappa) and scored on the even-numbered ones.

Run: python benchmarks/calibrate_context_relevance.py [--top 3]
"""

from __future__ import annotations

import argparse

import numpy as np
from scifact_data import scifact

MAX_CONTEXT_CHARS = 600


def kappa(people: np.ndarray, judge: np.ndarray) -> tuple[float, float]:
    from pytest_ragmetrics.judges import agreement

    found = agreement(people.tolist(), judge.tolist())
    return found.kappa, found.accuracy


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=3)
    args = parser.parse_args()
    from pytest_ragmetrics import load_dataset
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.judges import EmbeddingJudge
    from pytest_ragmetrics.retrievers import DenseRetriever

    root = scifact()
    cache = Cache(root.parents[1] / ".ragmetrics" / "cache")
    dataset = load_dataset(root, "test")
    run = DenseRetriever(dataset.corpus, cache=cache).search(dataset.queries, args.top)
    pairs: list[tuple[str, str]] = []
    relevant: list[bool] = []
    fold: list[int] = []
    for i, (qid, claim) in enumerate(dataset.queries.items()):
        judged = dataset.qrels.judgments(qid)
        for doc_id, _ in run.ranking(qid)[: args.top]:
            doc = dataset.corpus[doc_id]
            pairs.append((claim, (doc.title + " " + doc.text).strip()[:MAX_CONTEXT_CHARS]))
            relevant.append(judged.get(doc_id, 0) > 0)
            fold.append(i % 2)
    scores = np.array(EmbeddingJudge(cache=cache).similarities(pairs))
    people = np.array(relevant)
    tune, held = np.array(fold) == 1, np.array(fold) == 0
    grid = np.round(np.arange(0.20, 0.81, 0.02), 2)
    tuned = max(grid, key=lambda t: kappa(people[tune], scores[tune] >= t)[0])
    k_held, acc_held = kappa(people[held], scores[held] >= tuned)
    k_default, acc_default = kappa(people[held], scores[held] >= 0.5)
    print(
        f"{len(pairs)} (claim, abstract) pairs, top {args.top}, {people.sum()} relevant by qrels "
        f"({people.mean():.3f}); negatives: retrieved but not in the qrels"
    )
    print(
        f"threshold tuned on odd claims: {tuned:.2f}; on even claims kappa {k_held:.3f}, "
        f"accuracy {acc_held:.3f} (n = {held.sum()})"
    )
    print(f"threshold 0.50 on even claims: kappa {k_default:.3f}, accuracy {acc_default:.3f}")


if __name__ == "__main__":
    main()
