"""Encoding throughput on a local Ray cluster: 1 vs 2 actors (and the local path for reference).

Encodes the first --docs SciFact abstracts with all-MiniLM-L6-v2 through DenseRetriever, with no
cache: locally (torch on all cores), then with executor=RayExecutor(actors=N, threads_per_actor=1)
on one local cluster of 2 CPUs for N = 1, 2. Each Ray timing includes starting the actors and
loading the model in each (what a real job pays once per corpus, ~5 s per actor here). Prints
documents per second, the 2-actor speed-up over 1 actor, and an estimate for N nodes from the
measured per-actor throughput and scaling efficiency.

Run: python benchmarks/bench_ray.py [--docs 1000] [--chunk-size 100]
"""

from __future__ import annotations

import argparse
import os
import time

from scifact_data import scifact

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1000, help="first N documents")
    parser.add_argument(
        "--chunk-size", type=int, default=100, help="texts per actor call (the work unit)"
    )
    args = parser.parse_args()

    import numpy as np
    import torch

    from pytest_ragmetrics import load_dataset
    from pytest_ragmetrics.executors import RayExecutor
    from pytest_ragmetrics.retrievers import DenseRetriever

    corpus = load_dataset(scifact(), "test").corpus
    corpus = corpus.subset(corpus.doc_ids[: args.docs].tolist())
    n = len(corpus)

    def encode(executor: RayExecutor | None) -> tuple[float, np.ndarray]:
        retriever = DenseRetriever(corpus, chunk_size=args.chunk_size, executor=executor)
        started = time.perf_counter()
        embeddings = retriever.corpus_embeddings()
        return time.perf_counter() - started, embeddings

    DenseRetriever(corpus).model  # warm the imports and the OS file cache  # noqa: B018
    local_seconds, reference = encode(None)
    print(
        f"local (torch, {torch.get_num_threads()} threads): {local_seconds:7.1f} s  "
        f"{n / local_seconds:6.1f} docs/s",
        flush=True,
    )

    cluster = RayExecutor("local", num_cpus=2)
    started = time.perf_counter()
    cluster.connect()
    print(f"local Ray cluster start (2 CPUs, 127.0.0.1): {time.perf_counter() - started:.1f} s")
    rates: dict[int, float] = {}
    try:
        for actors in (1, 2):
            seconds, embeddings = encode(RayExecutor(actors=actors, threads_per_actor=1))
            rates[actors] = n / seconds
            gap = float(np.abs(embeddings - reference).max())
            print(
                f"Ray, {actors} actor{'s' if actors > 1 else ' '} x 1 thread:      "
                f"{seconds:7.1f} s  {rates[actors]:6.1f} docs/s  (max |diff| vs local {gap:.1e})",
                flush=True,
            )
    finally:
        cluster.close()

    speedup = rates[2] / rates[1]
    efficiency = speedup / 2
    print(f"{n} documents, chunk size {args.chunk_size}")
    print(f"2 actors vs 1: {speedup:.2f}x (scaling efficiency {efficiency:.0%} on 2 cores)")
    per_cpu = rates[1]
    print(f"estimate for 1,000,000 abstracts at {per_cpu:.1f} docs/s per CPU-actor:")
    for nodes, cpus in ((1, 2), (4, 16), (16, 16), (64, 16)):
        rate = per_cpu * nodes * cpus * efficiency
        hours = 1_000_000 / rate / 3600
        print(f"  {nodes:>3} nodes x {cpus:>2} CPUs: {hours:6.2f} h ({rate:,.0f} docs/s)")


if __name__ == "__main__":
    main()
