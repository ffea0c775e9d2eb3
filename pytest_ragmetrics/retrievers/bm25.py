"""BM25 on bm25s with MTEB's recipe: ``title + "\\n" + text``, English stopwords, PyStemmer's
english stemmer, k1 = 1.5, b = 0.75, Lucene's scoring. bm25s and Stemmer are imported only
when the index is built.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from importlib import metadata
from typing import Any, ClassVar, Literal

import numpy as np

from pytest_ragmetrics.data.arrays import FloatArray, IntArray
from pytest_ragmetrics.data.model import Corpus, Queries, Run
from pytest_ragmetrics.data.ranking import ranking_key
from pytest_ragmetrics.errors import ConfigError, RetrieverError
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.retrievers.base import (
    CacheLike,
    CorpusRetriever,
    as_cache,
)

Method = Literal["lucene", "robertson", "atire", "bm25l", "bm25+"]
_METHODS = ("lucene", "robertson", "atire", "bm25l", "bm25+")


class BM25Retriever(CorpusRetriever):
    """Sparse lexical retrieval over one corpus (bm25s); its options are read-only once built."""

    fixed: ClassVar[frozenset[str]] = CorpusRetriever.fixed | {
        "k1",
        "b",
        "method",
        "delta",
        "stopwords",
        "stemmer_language",
        "separator",
        "lower",
    }

    def __init__(
        self,
        corpus: Corpus,
        *,
        name: str = "bm25",
        k1: float = 1.5,
        b: float = 0.75,
        method: Method = "lucene",
        delta: float = 0.5,
        stopwords: str | Sequence[str] | None = "en",
        stemmer: str | None = "english",
        separator: str = "\n",
        lower: bool = True,
        cache: CacheLike = None,
    ) -> None:
        if len(corpus) == 0:
            raise RetrieverError("BM25Retriever: the corpus is empty; there is nothing to search")
        if method not in _METHODS:
            raise ConfigError(
                f"BM25Retriever: method must be one of {', '.join(_METHODS)}, got {method!r}"
            )
        for option, value in (("k1", k1), ("b", b), ("delta", delta)):
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
                raise ConfigError(
                    f"BM25Retriever: {option} must be a non-negative number, got {value!r}"
                )
        if not 0 <= b <= 1:
            raise ConfigError(f"BM25Retriever: b must be in [0, 1], got {b!r}")
        self.corpus = corpus
        self._name = name
        self.k1 = float(k1)
        self.b = float(b)
        self.method: Method = method
        self.delta = float(delta)
        # A tuple: changed in place, a list would no longer be what the index was built with.
        self.stopwords: str | tuple[str, ...] | None = (
            stopwords if stopwords is None or isinstance(stopwords, str) else tuple(stopwords)
        )
        self.stemmer_language = stemmer
        self.separator = separator
        self.lower = lower
        self.cache = as_cache(cache)
        self._stemmer: Any = None
        self._bm25: Any = None
        self.index_builds = 0

    def __repr__(self) -> str:
        return f"BM25Retriever({self._name!r}, {len(self.corpus)} documents)"

    def identity(self) -> dict[str, Any]:
        """Every parameter that changes the ranking."""
        identity: dict[str, Any] = {
            "kind": "bm25",
            "name": self._name,
            "k1": self.k1,
            "b": self.b,
            "method": self.method,
            "stopwords": self._stopwords_identity(),
            "stemmer": self.stemmer_language,
            "document": f"title + {self.separator!r} + text",
            "lower": self.lower,
        }
        if self.method in ("bm25l", "bm25+"):
            identity["delta"] = self.delta
        return identity

    def _stopwords_identity(self) -> str | None:
        if self.stopwords is None or isinstance(self.stopwords, str):
            return self.stopwords
        words = sorted(set(self.stopwords))
        digest = hashlib.sha256("\n".join(words).encode()).hexdigest()[:16]
        return f"{len(words)} words, sha256 {digest}"

    def _tokenize(self, texts: list[str], *, return_ids: bool) -> Any:
        import bm25s

        return bm25s.tokenize(
            texts,
            lower=self.lower,
            stopwords=self.stopwords if self.stopwords is not None else [],
            stemmer=self._stemmer,
            return_ids=return_ids,
            show_progress=False,
        )

    def bm25_index(self) -> Any:
        """The bm25s index over the corpus, built on first use."""
        if self._bm25 is not None:
            return self._bm25
        try:
            import bm25s
        except ImportError:
            raise RetrieverError(
                "BM25Retriever needs bm25s and PyStemmer; install them with "
                "pip install 'pytest-ragmetrics[bm25]'"
            ) from None
        if self.stemmer_language is not None:
            try:
                import Stemmer
            except ImportError:
                raise RetrieverError(
                    "BM25Retriever's stemmer needs PyStemmer; pip install PyStemmer, or pass "
                    "stemmer=None"
                ) from None
            try:
                self._stemmer = Stemmer.Stemmer(self.stemmer_language)
            except KeyError:
                raise ConfigError(
                    f"BM25Retriever: no stemmer for {self.stemmer_language!r}; use one of "
                    f"{', '.join(Stemmer.algorithms())}, or None"
                ) from None
        documents = self.corpus.passages(self.separator)
        with progress(f"indexing {len(documents)} documents (bm25)", len(documents)) as advance:
            try:
                tokens = self._tokenize(documents, return_ids=True)
            except (ValueError, KeyError) as exc:
                raise ConfigError(f"BM25Retriever: cannot tokenize the corpus: {exc}") from None
            retriever = bm25s.BM25(k1=self.k1, b=self.b, delta=self.delta, method=self.method)
            retriever.index(tokens, show_progress=False)
            advance(len(documents))
        self.index_builds += 1
        self._bm25 = retriever
        return retriever

    def _run_key(self) -> dict[str, Any]:
        """The identity, the corpus's texts, the bm25s version (it may change the scores) and
        which documents a list holds (since 0.1.0: matching ones, ties at the cut by doc id)."""
        return {**super()._run_key(), "bm25s": _version("bm25s"), "lists": "matching"}

    def _search(self, queries: Queries, k: int) -> Run:
        """Per query, the documents holding at least one of its terms, best ``k`` by score,
        ties at the cut broken by doc id as the run orders them (not by corpus order).

        bm25s's own ``retrieve`` fills every list up to k with documents that match no query
        term (score 0, or bm25l/bm25+'s non-occurrence score), which of them by corpus order:
        recall then depends on how the corpus file is sorted. Lucene and Elasticsearch return
        matching documents only; so does this.
        """
        if len(queries) == 0:
            return Run.from_dict({})
        retriever = self.bm25_index()
        query_tokens = self._tokenize(list(queries.texts), return_ids=False)
        postings = retriever.scores
        indptr, holders = postings["indptr"], postings["indices"]
        found: list[tuple[IntArray, FloatArray]] = []
        for tokens in query_tokens:
            ids = retriever.get_tokens_ids(list(tokens))
            if not ids:
                found.append((np.empty(0, np.int64), np.empty(0, np.float64)))
                continue
            matched = np.unique(np.concatenate([holders[indptr[t] : indptr[t + 1]] for t in ids]))
            scores = np.asarray(retriever.get_scores_from_ids(ids), np.float64)[matched]
            found.append(_best_with_ties(matched.astype(np.int64), scores, k))
        width = max((len(codes) for codes, _ in found), default=0)
        indices = np.full((len(found), width), -1, dtype=np.int64)
        values = np.zeros((len(found), width), dtype=np.float64)
        for row, (codes, scores) in enumerate(found):
            indices[row, : len(codes)] = codes
            values[row, : len(codes)] = scores
        run = Run.from_arrays(queries.query_ids, indices, values, self.corpus.doc_ids)
        return run.truncate(k) if width > k else run


def _best_with_ties(codes: IntArray, scores: FloatArray, k: int) -> tuple[IntArray, FloatArray]:
    """The entries scoring at least the k-th best score (compared as the run compares them),
    so that every document tied at the cut is there for the run's own order to choose."""
    if len(codes) <= k:
        return codes, scores
    key = ranking_key(scores)
    cut = np.partition(key, len(key) - k)[len(key) - k]
    keep = key >= cut
    return codes[keep], scores[keep]


def _version(package: str) -> str:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return "unknown"
