"""Warm rerun (cache hit) vs cold run of the SciFact dense evaluation (target: >= 20x faster).

Each run is a fresh Python process doing what a test session does: load SciFact's test split,
build the default DenseRetriever with a cache folder, search the judged queries at k=100 and
evaluate. Cold: an empty cache folder (the corpus is encoded). Warm: the same folder again (the
run is read from the cache; the model is not even loaded). Prints both times, the ratio and the
metrics of both runs (they must be identical).

Run: python benchmarks/bench_cache_dense.py [--docs N]   (--docs: encode only the first N
documents, for a quicker look; the default is the whole corpus, ~4 min on 2 CPU cores)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

from scifact_data import scifact

METRICS = ["ndcg_at_10", "map_at_10", "recall_at_100", "mrr_at_10"]


def child(cache_dir: str, docs: int) -> None:
    """One session: dataset, retriever, search, metrics; prints JSON on the last line."""
    start = time.perf_counter()
    from pytest_ragmetrics import evaluate, load_dataset
    from pytest_ragmetrics.retrievers import DenseRetriever

    dataset = load_dataset(scifact(), "test")
    corpus = dataset.corpus
    if docs:
        corpus = corpus.subset(corpus.doc_ids[:docs].tolist())
    retriever = DenseRetriever(corpus, cache=cache_dir)
    run = retriever.search(dataset.queries, 100)
    mean = evaluate(dataset.qrels, run, METRICS).mean
    elapsed = time.perf_counter() - start
    print(
        json.dumps(
            {
                "seconds": elapsed,
                "metrics": mean,
                "corpus_encodings": retriever.corpus_encodings,
                "model_loaded": retriever._model is not None,
            }
        )
    )


def session(cache_dir: str, docs: int) -> dict[str, object]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    start = time.perf_counter()
    done = subprocess.run(
        [sys.executable, __file__, "--child", cache_dir, "--docs", str(docs)],
        check=True,
        capture_output=True,
        text=True,
        env=env,
    )
    wall = time.perf_counter() - start
    result: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    result["wall"] = wall
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=0, help="first N documents only (0: all)")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.docs)
        return
    with tempfile.TemporaryDirectory() as cache_dir:
        cold = session(cache_dir, args.docs)
        warm = session(cache_dir, args.docs)
    print(f"cold run (encodes the corpus): {cold['wall']:8.2f} s   {cold['metrics']}")
    print(f"warm run (cache hit):          {warm['wall']:8.2f} s   {warm['metrics']}")
    print(
        f"corpus encodings: cold {cold['corpus_encodings']}, warm {warm['corpus_encodings']}; "
        f"model loaded on the warm run: {warm['model_loaded']}"
    )
    assert warm["metrics"] == cold["metrics"], "a warm run must reproduce the cold run exactly"
    ratio = float(cold["wall"]) / float(warm["wall"])  # type: ignore[arg-type]
    print(f"speed-up of the warm rerun: {ratio:.1f}x (target >= 20x)")


if __name__ == "__main__":
    main()
