"""Build a built-in retriever by name (for the CLI and configuration files)."""

from __future__ import annotations

import inspect
from typing import Any

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.retrievers.base import Retriever
from pytest_ragmetrics.retrievers.bm25 import BM25Retriever
from pytest_ragmetrics.retrievers.dense import DenseRetriever
from pytest_ragmetrics.retrievers.rerank import RerankRetriever
from pytest_ragmetrics.vocabulary import RETRIEVER_KINDS

_CLASSES: dict[str, type[DenseRetriever] | type[BM25Retriever]] = {
    "dense": DenseRetriever,
    "bm25": BM25Retriever,
}
_RERANK_OPTIONS = {
    "rerank_model": "model",
    "rerank_k": "rerank_k",
    "rerank_batch_size": "batch_size",
    "rerank_max_length": "max_length",
}


def build_retriever(kind: str, corpus: Corpus, **options: Any) -> Retriever:
    """A built-in retriever by name: ``"dense"`` or ``"bm25"``, with its keyword options.

    ``rerank_model=PATH`` (with ``rerank_k``, ``rerank_batch_size``, ``rerank_max_length``) puts
    a cross-encoder on top. ``cache`` and ``device`` are shared by both stages. Unknown options
    are a :class:`ConfigError` listing the valid ones.
    """
    cls = _CLASSES.get(kind)
    if cls is None:
        raise ConfigError(f"unknown retriever {kind!r}; use one of {', '.join(RETRIEVER_KINDS)}")
    rerank = {
        target: options.pop(option)
        for option, target in _RERANK_OPTIONS.items()
        if option in options
    }
    valid = [
        p.name
        for p in inspect.signature(cls).parameters.values()
        if p.kind is inspect.Parameter.KEYWORD_ONLY or p.name == "model"
    ]
    unknown = sorted(set(options) - set(valid))
    if unknown:
        raise ConfigError(
            f"retriever {kind!r}: unknown option(s) {', '.join(unknown)}; valid options: "
            f"{', '.join(sorted([*valid, *_RERANK_OPTIONS]))}"
        )
    first: Retriever = cls(corpus, **options)
    if not rerank:
        return first
    if "model" not in rerank:
        raise ConfigError(
            f"retriever {kind!r}: {', '.join(sorted(rerank))} given without rerank_model; "
            "pass rerank_model=<cross-encoder folder>"
        )
    shared = {key: options[key] for key in ("cache", "device") if key in options}
    return RerankRetriever(first, corpus=corpus, **rerank, **shared)
