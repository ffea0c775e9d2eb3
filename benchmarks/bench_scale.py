"""How search + evaluation time and memory grow with corpus size and query count.

Synthetic 384-dimensional normalised embeddings (all-MiniLM-L6-v2's size) stand in for an encoded
corpus, so this measures everything after encoding: building the faiss index, searching top-100,
turning faiss's output into a Run (no per-entry Python loop) and computing six metrics. Each
configuration runs in a fresh process so peak memory (max RSS) is its own.

Encoding is the model's cost and is not simulated: on 2 CPU cores all-MiniLM-L6-v2 encodes about
20-25 SciFact abstracts per second, so 1M abstracts would take ~12 h on CPU — that is what
multi-device encoding (DenseRetriever(devices=[...])) and the embedding cache are for.

Only the exact flat index is measured: random vectors have no structure for an approximate index
(HNSW, IVF) to exploit, so their speed/recall trade-off here would say nothing about real data.

Run: python benchmarks/bench_scale.py            (about 1.5 minutes)
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

METRICS = [
    "ndcg_at_10",
    "recall_at_100",
    "map_at_100",
    "mrr_at_10",
    "precision_at_5",
    "recall_at_5",
]
DIM = 384


def child(n_docs: int, n_queries: int, index_type: str) -> dict[str, float]:
    import faiss
    import numpy as np

    from pytest_ragmetrics import Qrels, Run, evaluate

    faiss.omp_set_num_threads(2)
    rng = np.random.default_rng(0)
    start = time.perf_counter()
    docs = rng.standard_normal((n_docs, DIM), dtype=np.float32)
    docs /= np.linalg.norm(docs, axis=1, keepdims=True)
    # Queries sit near one "relevant" document each, so the metrics are not all zero.
    targets = rng.integers(0, n_docs, n_queries)
    queries = docs[targets] + 0.2 * rng.standard_normal((n_queries, DIM), dtype=np.float32)
    queries /= np.linalg.norm(queries, axis=1, keepdims=True)
    doc_ids = np.char.add("d", np.arange(n_docs).astype(str))
    query_ids = [f"q{i}" for i in range(n_queries)]
    qrels = Qrels.from_dict(
        {q: {str(doc_ids[t]): 1} for q, t in zip(query_ids, targets, strict=True)}
    )
    made = time.perf_counter()
    if index_type == "hnsw":
        index = faiss.IndexHNSWFlat(DIM, 32, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efSearch = 128
    else:
        index = faiss.IndexFlatIP(DIM)
    index.add(docs)
    indexed = time.perf_counter()
    scores, indices = index.search(queries, 100)
    searched = time.perf_counter()
    run = Run.from_arrays(query_ids, indices, scores, doc_ids)
    evaluation = evaluate(qrels, run, METRICS)
    evaluated = time.perf_counter()
    return {
        "data_s": made - start,
        "index_s": indexed - made,
        "search_s": searched - indexed,
        "evaluate_s": evaluated - searched,
        "ndcg_at_10": evaluation.mean["ndcg_at_10"],
        "max_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--child", nargs=3, metavar=("DOCS", "QUERIES", "INDEX"))
    parser.add_argument("--max-docs", type=int, default=1_000_000)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(int(args.child[0]), int(args.child[1]), args.child[2])))
        return
    configs = [
        (100_000, 1_000, "flat"),
        (300_000, 1_000, "flat"),
        (1_000_000, 1_000, "flat"),
        (100_000, 10_000, "flat"),
    ]
    print(
        f"{'docs':>9} {'queries':>7} {'index':>5} {'build':>8} {'search':>8} {'evaluate':>9} "
        f"{'peak RSS':>9}  ndcg@10"
    )
    for n_docs, n_queries, index_type in configs:
        if n_docs > args.max_docs:
            continue
        out = subprocess.run(
            [sys.executable, __file__, "--child", str(n_docs), str(n_queries), index_type],
            capture_output=True,
            text=True,
            check=True,
        )
        r = json.loads(out.stdout.strip().splitlines()[-1])
        print(
            f"{n_docs:>9,} {n_queries:>7,} {index_type:>5} {r['index_s']:>7.2f}s "
            f"{r['search_s']:>7.2f}s {r['evaluate_s'] * 1000:>7.1f}ms {r['max_rss_mb']:>7.0f}MB"
            f"  {r['ndcg_at_10']:.3f}"
        )
    print("evaluate = Run.from_arrays + six metrics; the embeddings alone take 1.5 GB per 1M docs")


if __name__ == "__main__":
    main()
