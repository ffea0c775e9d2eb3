"""What the LangChain and LlamaIndex adapters cost, and what searching queries concurrently buys.

A 1,000-document corpus and 300 queries (tests/helpers/adapter_data.py: random 8-word documents, a
hashed bag-of-words embedding, unit length), k=10. Every comparison is like with like: the same
framework calls, at the same concurrency, on both sides; the direct side builds the same Run.

- **overhead** (target <= 1.05x), one query at a time on both sides: a plain loop calling the
  framework directly against the adapter at ``concurrency=1``: LangChain's FAISS store
  (``similarity_search_with_relevance_scores``), its ``as_retriever()`` (``invoke``), a
  LlamaIndex ``VectorStoreIndex`` retriever (``retrieve``). The embedding costs almost nothing
  here, which makes the adapter's own share as large as it can be;
- **overhead at 8**, 8 queries at a time on both sides: LangChain's own ``batch`` with
  ``max_concurrency=8`` against the adapter at ``concurrency=8`` (which calls ``batch``); a
  LlamaIndex ``retrieve`` on 8 threads against the adapter at ``concurrency=8``;
- **concurrency**: an embedding that waits 5 ms per query, as a hosted embedding endpoint
  does: one query at a time (the plain loop) against the adapter at ``concurrency=8``; for
  LlamaIndex also ``use_async=True`` with an embedding that awaits its 5 ms (``aretrieve``
  under ``asyncio.gather``).

Overhead rows print wall and CPU time (this process's, all threads): on a shared machine the
CPU time is the fairer measure of what the adapter adds. Variants alternate; the best of the
rounds counts (at least ``--rounds``, more for fast
variants: up to 3 s or 60 rounds each). The machine's load average is printed before and after.
Run: python benchmarks/bench_adapters.py [--docs 1000] [--queries 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import warnings
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from pytest_ragmetrics import Queries
from pytest_ragmetrics.data.model import Run
from tests.helpers.adapter_data import embed, make_corpus, make_queries

LATENCY = 0.005
K = 10

# name -> (direct, adapter): two functions returning the same Run
Pair = tuple[Callable[[], Run], Callable[[], Run]]


def best(variants: dict[str, Callable[[], Any]], rounds: int) -> dict[str, tuple[float, float]]:
    """Per variant, the best wall time and the best CPU time (this process, all its threads)."""
    wall = {name: float("inf") for name in variants}
    cpu = dict(wall)
    for _ in range(rounds):
        for name, run in variants.items():
            start, start_cpu = time.perf_counter(), time.process_time()
            run()
            cpu[name] = min(cpu[name], time.process_time() - start_cpu)
            wall[name] = min(wall[name], time.perf_counter() - start)
    return {name: (wall[name], cpu[name]) for name in variants}


def langchain_pairs(corpus: Any, queries: Queries, latency: float) -> dict[str, Pair]:
    """LangChain's FAISS store and its retriever, direct and through the adapter."""
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    from pytest_ragmetrics.integrations.langchain import from_langchain

    class Words(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            return [embed(t) for t in texts]

        def embed_query(self, text: str) -> list[float]:
            if latency:
                time.sleep(latency)
            return embed(text)

    docs = [Document(page_content=d.text, metadata={"id": d.id}) for d in corpus]
    store = FAISS.from_documents(docs, Words())
    retriever = store.as_retriever(search_kwargs={"k": K})
    items = list(queries.items())
    texts = [text for _, text in items]

    def store_direct() -> Run:
        return Run.from_dict(
            {
                qid: {
                    d.metadata["id"]: s
                    for d, s in store.similarity_search_with_relevance_scores(text, k=K)
                }
                for qid, text in items
            },
            scores="similarity",
        )

    def retriever_direct() -> Run:
        return Run.from_rankings(
            {qid: [d.metadata["id"] for d in retriever.invoke(text)] for qid, text in items}
        )

    def retriever_batch() -> Run:
        found = retriever.batch(texts, {"max_concurrency": 8})
        return Run.from_rankings(
            {
                qid: [d.metadata["id"] for d in docs]
                for (qid, _), docs in zip(items, found, strict=True)
            }
        )

    one, eight = (1, 8) if not latency else (8, 8)
    store_adapter = from_langchain(store, concurrency=one)
    retriever_adapter = from_langchain(retriever, concurrency=one)
    retriever_at_8 = from_langchain(retriever, concurrency=eight)
    pairs = {
        "langchain FAISS store": (store_direct, lambda: store_adapter.search(queries, K)),
        "langchain retriever": (retriever_direct, lambda: retriever_adapter.search(queries, K)),
    }
    if not latency:
        pairs["langchain retriever at 8"] = (
            retriever_batch,
            lambda: retriever_at_8.search(queries, K),
        )
    return pairs


def llama_pairs(corpus: Any, queries: Queries, latency: float) -> dict[str, Pair]:
    """A LlamaIndex vector index retriever, direct and through the adapter."""
    from llama_index.core import VectorStoreIndex
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.schema import TextNode

    from pytest_ragmetrics.integrations.llama_index import from_llama_index

    class Words(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            if latency:
                time.sleep(latency)
            return embed(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            if latency:
                await asyncio.sleep(latency)  # an async client: it waits without blocking
            return embed(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed(text)

    nodes = [TextNode(id_=d.id, text=d.text) for d in corpus]
    index = VectorStoreIndex(nodes, embed_model=Words())
    retriever = index.as_retriever(similarity_top_k=K)
    items = list(queries.items())

    def as_run(found: list[Any]) -> Run:
        return Run.from_dict(
            {
                qid: {n.node.node_id: n.score for n in nodes}
                for (qid, _), nodes in zip(items, found, strict=True)
            },
            scores="similarity",
        )

    def direct() -> Run:
        return as_run([retriever.retrieve(text) for _, text in items])

    def threads() -> Run:
        with ThreadPoolExecutor(8) as pool:
            return as_run(list(pool.map(retriever.retrieve, [text for _, text in items])))

    if not latency:
        at_1 = from_llama_index(retriever, concurrency=1)
        at_8 = from_llama_index(retriever, concurrency=8)
        return {
            "llama-index retriever": (direct, lambda: at_1.search(queries, K)),
            "llama-index retriever at 8": (threads, lambda: at_8.search(queries, K)),
        }
    threaded = from_llama_index(retriever, concurrency=8)
    gathered = from_llama_index(retriever, concurrency=8, use_async=True)
    _print_llama_split(retriever, items)
    return {
        "llama-index retriever": (direct, lambda: threaded.search(queries, K)),
        "llama-index aretrieve": (direct, lambda: gathered.search(queries, K)),
    }


def _print_llama_split(retriever: Any, items: list[tuple[str, str]]) -> None:
    """Where LlamaIndex's one-by-one time goes: the embeddings' 5 ms waits, and the in-memory
    store's searches (Python and small numpy calls: threads overlap them only in part)."""
    from llama_index.core.schema import QueryBundle

    model = retriever._embed_model
    start = time.perf_counter()
    embeddings = [model.get_agg_embedding_from_queries([text]) for _, text in items]
    embedding = time.perf_counter() - start
    start = time.perf_counter()
    for (_, text), vector in zip(items, embeddings, strict=True):
        retriever.retrieve(QueryBundle(query_str=text, embedding=vector))
    search = time.perf_counter() - start
    print(
        f"split       llama-index one by one: embeddings {embedding:.3f} s, searches with the "
        f"embeddings given {search:.3f} s"
    )


def load() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--docs", type=int, default=1000)
    parser.add_argument("--queries", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    # LangChain warns per query when FAISS's relevance scores fall below 0 (the direct loop).
    warnings.simplefilter("ignore")
    corpus = make_corpus(args.docs)
    queries, _ = make_queries(corpus, args.queries)
    print(
        f"{args.docs} documents, {args.queries} queries, k={K}, best of {args.rounds} rounds; "
        f"load average {load()}"
    )
    for latency in (0.0, LATENCY):
        rounds = args.rounds if not latency else max(2, args.rounds // 2)
        for build in (langchain_pairs, llama_pairs):
            for name, (direct, adapter) in build(corpus, queries, latency).items():
                start = time.perf_counter()
                assert direct().to_dict() == adapter().to_dict(), name
                # Fast variants get more rounds (up to 3 s each), so that the best is the best.
                once = (time.perf_counter() - start) / 2
                times = best(
                    {"direct": direct, "adapter": adapter}, max(rounds, min(60, int(3 / once)))
                )
                (a, a_cpu), (b, b_cpu) = times["direct"], times["adapter"]
                if latency:
                    print(
                        f"concurrency {name:26s} one by one {a:.3f} s, adapter (8 at once) "
                        f"{b:.3f} s: {a / b:.1f}x faster"
                    )
                else:
                    label = "overhead at 8" if name.endswith(" at 8") else "overhead"
                    print(
                        f"{label:13s} {name.removesuffix(' at 8'):22s} direct {a:.3f} s, "
                        f"adapter {b:.3f} s: {b / a:.3f}x wall; CPU {a_cpu:.3f} s vs "
                        f"{b_cpu:.3f} s: {b_cpu / a_cpu:.3f}x"
                    )
    print(f"load average {load()}")


if __name__ == "__main__":
    main()
