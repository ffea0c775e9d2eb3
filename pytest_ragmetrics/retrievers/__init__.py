"""Retrievers: the protocol, an adapter for your own function, dense, BM25, reranking, chunks.

Importing this package is free (names load on first use, see ``_lazy``); torch,
sentence_transformers, faiss, bm25s and Stemmer are imported only when a model, index or
tokenizer is first needed.
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports
from pytest_ragmetrics.vocabulary import RETRIEVER_KINDS

KINDS = RETRIEVER_KINDS  # its name before vocabulary.RETRIEVER_KINDS

if TYPE_CHECKING:
    from pytest_ragmetrics.retrievers.base import (
        CallableRetriever,
        Retriever,
        ShortRankings,
        ShortRankingWarning,
        StagedRetriever,
        cached_search,
        check_run,
        from_function,
        short_rankings,
    )
    from pytest_ragmetrics.retrievers.bm25 import BM25Retriever
    from pytest_ragmetrics.retrievers.chunks import ChunkedRetriever, chunked, max_passage
    from pytest_ragmetrics.retrievers.dense import DenseRetriever
    from pytest_ragmetrics.retrievers.factory import build_retriever
    from pytest_ragmetrics.retrievers.rerank import FIRST_STAGE, RERANKED, RerankRetriever

_EXPORTS = {
    "BM25Retriever": "pytest_ragmetrics.retrievers.bm25",
    "CallableRetriever": "pytest_ragmetrics.retrievers.base",
    "ChunkedRetriever": "pytest_ragmetrics.retrievers.chunks",
    "DenseRetriever": "pytest_ragmetrics.retrievers.dense",
    "FIRST_STAGE": "pytest_ragmetrics.retrievers.rerank",
    "RERANKED": "pytest_ragmetrics.retrievers.rerank",
    "RerankRetriever": "pytest_ragmetrics.retrievers.rerank",
    "Retriever": "pytest_ragmetrics.retrievers.base",
    "ShortRankingWarning": "pytest_ragmetrics.errors",
    "ShortRankings": "pytest_ragmetrics.retrievers.base",
    "StagedRetriever": "pytest_ragmetrics.retrievers.base",
    "build_retriever": "pytest_ragmetrics.retrievers.factory",
    "cached_search": "pytest_ragmetrics.retrievers.base",
    "chunked": "pytest_ragmetrics.retrievers.chunks",
    "check_run": "pytest_ragmetrics.retrievers.base",
    "from_function": "pytest_ragmetrics.retrievers.base",
    "max_passage": "pytest_ragmetrics.retrievers.chunks",
    "short_rankings": "pytest_ragmetrics.retrievers.base",
}
__all__ = [
    "FIRST_STAGE",
    "KINDS",
    "RERANKED",
    "RETRIEVER_KINDS",
    "BM25Retriever",
    "CallableRetriever",
    "ChunkedRetriever",
    "DenseRetriever",
    "RerankRetriever",
    "Retriever",
    "ShortRankingWarning",
    "ShortRankings",
    "StagedRetriever",
    "build_retriever",
    "cached_search",
    "check_run",
    "chunked",
    "from_function",
    "max_passage",
    "short_rankings",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
