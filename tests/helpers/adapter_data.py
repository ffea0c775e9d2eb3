"""A small corpus, its queries and qrels, and a deterministic bag-of-words embedding: what the
LangChain and LlamaIndex adapter tests (and benchmarks/bench_adapters.py) search."""

from __future__ import annotations

import random
import re
import zlib

import numpy as np

from pytest_ragmetrics import Corpus, Qrels, Queries
from pytest_ragmetrics.data.model import Run

DIM = 256
WORDS = [f"w{i:02d}" for i in range(80)]


def embed(text: str) -> list[float]:
    """Hashed bag of words, each word its own weight (so that few documents tie), unit length
    (so that L2 distance and cosine rank alike)."""
    vector = np.zeros(DIM)
    for word in re.findall(r"\w+", text.lower()):
        code = zlib.crc32(word.encode())
        vector[code % DIM] += 1.0 + (code // DIM % 1000) / 250
    norm = float(np.linalg.norm(vector))
    return (vector / norm if norm else vector).tolist()


def make_corpus(size: int = 40, seed: int = 0) -> Corpus:
    rng = random.Random(seed)
    return Corpus.from_dict({f"d{i:04d}": " ".join(rng.sample(WORDS, 8)) for i in range(size)})


def make_queries(corpus: Corpus, count: int = 12, seed: int = 1) -> tuple[Queries, Qrels]:
    """Each query: three words of one document (relevant, grade 2) and one of another (1)."""
    rng = random.Random(seed)
    docs = list(corpus)
    queries: dict[str, str] = {}
    qrels: dict[str, dict[str, int]] = {}
    for n in range(count):
        main, other = rng.sample(docs, 2)
        words = rng.sample(main.text.split(), 3) + rng.sample(other.text.split(), 1)
        queries[f"q{n:03d}"] = " ".join(words)
        qrels[f"q{n:03d}"] = {main.id: 2, other.id: 1}
    return Queries.from_dict(queries), Qrels.from_dict(qrels)


def matching(run: Run, query_id: str) -> list[str]:
    """The ranking's documents that share a word with the query (the rest tie at 0)."""
    return [doc for doc, score in run.ranking(query_id) if score > 1e-6]


def by_hand(corpus: Corpus, queries: Queries, k: int) -> Run:
    """The cosine ranking computed with numpy: what any correct adapter must reproduce."""
    ids = [doc.id for doc in corpus]
    matrix = np.array([embed(doc.text) for doc in corpus])
    results: dict[str, dict[str, float]] = {}
    for qid, text in queries.items():
        scores = matrix @ np.array(embed(text))
        top = np.argsort(-scores, kind="stable")[:k]
        results[qid] = {ids[i]: float(scores[i]) for i in top}
    return Run.from_dict(results)
