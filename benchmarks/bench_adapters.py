"""What the LangChain and LlamaIndex adapters cost, and what searching queries concurrently buys.

A 1,000-document corpus and 300 queries (tests/adapter_data.py: random 8-word documents, a
hashed bag-of-words embedding, unit length), k=10:

- **overhead** (target <= 1.05x): the adapter at concurrency 1 against a plain loop calling the
  framework directly and building the same Run (``Run.from_dict``): LangChain's FAISS store
  (``similarity_search_with_relevance_scores``), its ``as_retriever()`` (``invoke``), and a
  LlamaIndex ``VectorStoreIndex`` retriever (``retrieve``). The embedding costs almost nothing
  here, which makes the adapter's own share as large as it can be;
- **concurrency**: the same searches with an embedding that waits 5 ms per query, as a hosted
  embedding endpoint does, one query at a time (the plain loop) against the adapter's
  ``concurrency=8`` (LangChain: ``batch`` with ``max_concurrency=8``).

Variants alternate; the best of the rounds counts. Run: python benchmarks/bench_adapters.py
[--docs 1000] [--queries 300] [--rounds 5]
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from adapter_data import embed, make_corpus, make_queries

LATENCY = 0.005
K = 10


def best(variants: dict[str, Callable[[], Any]], rounds: int) -> dict[str, float]:
    times = {name: float("inf") for name in variants}
    for _ in range(rounds):
        for name, run in variants.items():
            start = time.perf_counter()
            run()
            times[name] = min(times[name], time.perf_counter() - start)
    return times


def langchain_variants(corpus: Any, queries: Any, latency: float) -> dict[str, Any]:
    from langchain_community.vectorstores import FAISS
    from langchain_core.documents import Document
    from langchain_core.embeddings import Embeddings

    from pytest_ragmetrics.data.model import Run
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

    def store_direct() -> Run:
        return Run.from_dict(
            {
                qid: {
                    d.metadata["id"]: s
                    for d, s in store.similarity_search_with_relevance_scores(text, k=K)
                }
                for qid, text in items
            }
        )

    def retriever_direct() -> Run:
        return Run.from_rankings(
            {qid: [d.metadata["id"] for d in retriever.invoke(text)] for qid, text in items}
        )

    concurrency = 8 if latency else 1
    store_adapter = from_langchain(store, concurrency=concurrency)
    retriever_adapter = from_langchain(retriever, concurrency=concurrency)
    return {
        "langchain FAISS store": (store_direct, lambda: store_adapter.search(queries, K)),
        "langchain retriever": (retriever_direct, lambda: retriever_adapter.search(queries, K)),
    }


def llama_variants(corpus: Any, queries: Any, latency: float) -> dict[str, Any]:
    from llama_index.core import VectorStoreIndex
    from llama_index.core.base.embeddings.base import BaseEmbedding
    from llama_index.core.schema import TextNode

    from pytest_ragmetrics.data.model import Run
    from pytest_ragmetrics.integrations.llama_index import from_llama_index

    class Words(BaseEmbedding):
        def _get_query_embedding(self, query: str) -> list[float]:
            if latency:
                time.sleep(latency)
            return embed(query)

        async def _aget_query_embedding(self, query: str) -> list[float]:
            return self._get_query_embedding(query)

        def _get_text_embedding(self, text: str) -> list[float]:
            return embed(text)

    nodes = [TextNode(id_=d.id, text=d.text) for d in corpus]
    index = VectorStoreIndex(nodes, embed_model=Words())
    retriever = index.as_retriever(similarity_top_k=K)
    items = list(queries.items())

    def direct() -> Run:
        return Run.from_dict(
            {
                qid: {n.node.node_id: n.score for n in retriever.retrieve(text)}
                for qid, text in items
            }
        )

    adapter = from_llama_index(retriever, concurrency=8 if latency else 1)
    return {"llama-index retriever": (direct, lambda: adapter.search(queries, K))}


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
    print(f"{args.docs} documents, {args.queries} queries, k={K}, best of {args.rounds} rounds")
    for latency, label in ((0.0, "overhead"), (LATENCY, "concurrency")):
        rounds = args.rounds if not latency else max(2, args.rounds // 2)
        for build in (langchain_variants, llama_variants):
            for name, (direct, adapter) in build(corpus, queries, latency).items():
                assert direct().ranking("q000") == adapter().ranking("q000")
                times = best({"direct": direct, "adapter": adapter}, rounds)
                if latency:
                    print(
                        f"{label:11s} {name:24s} one by one {times['direct']:.3f} s, "
                        f"adapter (8 at once) {times['adapter']:.3f} s: "
                        f"{times['direct'] / times['adapter']:.1f}x faster"
                    )
                else:
                    print(
                        f"{label:11s} {name:24s} direct {times['direct']:.3f} s, adapter "
                        f"{times['adapter']:.3f} s: {times['adapter'] / times['direct']:.3f}x"
                    )


if __name__ == "__main__":
    main()
