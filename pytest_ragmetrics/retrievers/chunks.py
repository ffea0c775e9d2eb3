"""A retriever over chunks (passages) evaluated against document-level judgments.

Long documents are usually split into chunks before they are embedded; the retriever then
ranks chunks, while the qrels judge documents. :class:`ChunkedRetriever` maps each chunk to
its document and keeps, per document, its best chunk: the document's score is its best
chunk's score and its place is where one of its chunks first appears. This is MaxP, the
aggregation of Dai & Callan (2019), "Deeper Text Understanding for IR with Contextual Neural
Language Modeling", SIGIR 2019.

With passage-level qrels (judgments of the chunks themselves) evaluate the chunks directly:
:meth:`ChunkedRetriever.search_chunks`, or the inner retriever itself.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, TypedDict, Unpack

import numpy as np

from pytest_ragmetrics.cache import identity_of
from pytest_ragmetrics.code_identity import current_digest, function_identity, settle
from pytest_ragmetrics.data.model import Corpus, Entries, Queries, Run, as_str_array
from pytest_ragmetrics.errors import ConfigError, RetrieverError
from pytest_ragmetrics.retrievers.base import Named, ShortRankingWarning, check_k, check_run
from pytest_ragmetrics.twins import same_class

ChunkToDoc = str | Callable[[str], str]

#: How many chunks are asked per document wanted, at first (see :class:`ChunkedRetriever`).
OVERSAMPLE = 3


def _describe(chunk_to_doc: ChunkToDoc) -> str:
    if isinstance(chunk_to_doc, str):
        return f"separator {chunk_to_doc!r}"
    module = getattr(chunk_to_doc, "__module__", None) or type(chunk_to_doc).__module__
    name = getattr(chunk_to_doc, "__qualname__", None) or type(chunk_to_doc).__qualname__
    return f"{module}.{name}"


def _identify(chunk_to_doc: ChunkToDoc) -> str | dict[str, Any]:
    """A separator as text; a function by its name and the digest of its code and the values it
    reads now (:func:`~pytest_ragmetrics.code_identity.current_digest`): an edit of the mapping
    it applies gives another identity, so no run cached under the old one is served."""
    if isinstance(chunk_to_doc, str):
        return _describe(chunk_to_doc)
    return function_identity(chunk_to_doc, digest=current_digest(chunk_to_doc))


def _check_chunk_to_doc(chunk_to_doc: object, where: str) -> None:
    """A ConfigError naming ``where`` unless ``chunk_to_doc`` is a non-empty separator or a
    function."""
    if not isinstance(chunk_to_doc, str) and not callable(chunk_to_doc):
        raise ConfigError(
            f"{where}: chunk_to_doc must be a separator string or a function chunk_id -> "
            f"doc_id, got {type(chunk_to_doc).__name__}"
        )
    if isinstance(chunk_to_doc, str) and not chunk_to_doc:
        raise ConfigError(f"{where}: chunk_to_doc separator must not be empty")


def doc_id_of(chunk_id: str, chunk_to_doc: ChunkToDoc, *, retriever: str = "chunks") -> str:
    """The document id of ``chunk_id``: the part before the *last* separator (so document ids
    may hold the separator themselves: ``"a#b#3"`` is chunk 3 of ``"a#b"``), or what the
    callable returns. A chunk id without the separator, or a callable that returns anything
    but a non-empty string, is a RetrieverError naming the chunk."""
    if isinstance(chunk_to_doc, str):
        doc, separator, _ = chunk_id.rpartition(chunk_to_doc)
        if not separator or not doc:
            raise RetrieverError(
                f"retriever {retriever!r}: chunk id {chunk_id!r} has no document part before "
                f"the separator {chunk_to_doc!r}; name chunks '<doc_id>{chunk_to_doc}<n>' or "
                "give chunk_to_doc a function chunk_id -> doc_id"
            )
        return doc
    try:
        doc = chunk_to_doc(chunk_id)
    except Exception as exc:
        raise RetrieverError(
            f"retriever {retriever!r}: chunk_to_doc raised {type(exc).__name__} for chunk "
            f"{chunk_id!r}: {exc}"
        ) from exc
    if not isinstance(doc, str) or not doc:
        raise RetrieverError(
            f"retriever {retriever!r}: chunk_to_doc returned {doc!r} for chunk {chunk_id!r}; "
            "return the document id (a non-empty string)"
        )
    return doc


def max_passage(run: Run, chunk_to_doc: ChunkToDoc, *, retriever: str = "chunks") -> Run:
    """A chunk run as a document run, by MaxP: each document once per query, scored by its best
    chunk, in the order its chunks first appear.

    Documents whose best chunks tie (at trec_eval's float32 precision) are ordered as any run's
    ties are, by document id (see :class:`~pytest_ragmetrics.data.model.Run`), so "first
    appearance" decides the order only between documents of different scores.
    """
    _check_chunk_to_doc(chunk_to_doc, f"retriever {retriever!r}")
    used = np.unique(run.doc_codes)  # each distinct chunk mapped once, not once per query
    names = [doc_id_of(str(c), chunk_to_doc, retriever=retriever) for c in run.doc_ids[used]]
    vocab, doc_of_used = np.unique(as_str_array(names), return_inverse=True)
    doc_of_chunk = np.zeros(len(run.doc_ids), dtype=np.int64)
    doc_of_chunk[used] = doc_of_used
    segment = np.repeat(np.arange(len(run.query_ids)), np.diff(run.offsets))
    docs = doc_of_chunk[run.doc_codes]
    pair = segment * max(len(vocab), 1) + docs
    # Entries are in rank order within each query: return_index finds each document's first
    # chunk; the best score is taken explicitly (equal at float32 is not equal at float64).
    keys, first, inverse = np.unique(pair, return_index=True, return_inverse=True)
    best = np.full(len(keys), -np.inf)
    np.maximum.at(best, inverse, run.scores)
    order = np.argsort(first, kind="stable")
    kept_segment = segment[first[order]]
    counts = np.bincount(kept_segment, minlength=len(run.query_ids))
    offsets = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    result = Run(
        Entries(run.query_ids, offsets, vocab, docs[first[order]].astype(np.int64)),
        best[order],
        check_duplicates=False,
        source=f"retriever {retriever!r}",
    )
    return result


class ChunkedRetriever(Named):
    """``inner`` ranks chunks; this ranks their documents by MaxP (:func:`max_passage`).

    ``chunk_to_doc`` is a separator (the document id is the part of the chunk id before its
    last occurrence: ``"d7#2"`` -> ``"d7"``) or a function ``chunk_id -> doc_id``.

    **k after aggregation.** ``search(queries, k)`` returns up to ``k`` documents per query.
    Since several chunks may come from one document, the inner retriever is first asked for
    ``k * oversample`` chunks; the queries that end up with fewer than ``k`` documents are asked
    again with twice as many chunks, until they have ``k`` documents, the inner retriever returns
    fewer chunks than asked (it has no more), or ``max_chunks`` would be passed. So a document
    that would be among the top ``k`` is never lost because its chunks ranked below the first
    ``k`` chunks.

    ``corpus`` (the *document* corpus) checks the document ids; ``passages`` (the *chunk*
    corpus) gives :class:`~pytest_ragmetrics.generation.RetrieveThenGenerate` the chunks'
    texts as contexts (:meth:`passages_for`), so the answer layer sees chunks, not whole
    documents.

    What makes the identity (``inner``, ``chunk_to_doc``, ``oversample``, ``max_chunks``) is
    read-only once built (:class:`~pytest_ragmetrics.retrievers.named.Named`).
    """

    fixed: ClassVar[frozenset[str]] = Named.fixed | {
        "inner",
        "chunk_to_doc",
        "oversample",
        "max_chunks",
    }

    def __init__(
        self,
        inner: Any,
        chunk_to_doc: ChunkToDoc = "#",
        *,
        corpus: Corpus | None = None,
        passages: Corpus | None = None,
        oversample: int = OVERSAMPLE,
        max_chunks: int | None = None,
        name: str | None = None,
    ) -> None:
        if not callable(getattr(inner, "search", None)):
            raise ConfigError(
                f"chunks: the inner retriever {inner!r} has no search(queries, k) method"
            )
        _check_chunk_to_doc(chunk_to_doc, "chunks")
        self.inner = inner
        self.chunk_to_doc = chunk_to_doc
        self.corpus = corpus
        self.passages = passages
        self.oversample = check_k(oversample, "chunks (oversample)")
        self.max_chunks = None if max_chunks is None else check_k(max_chunks, "chunks (max)")
        inner_name = getattr(inner, "name", None) or type(inner).__name__
        self._name = name or f"{inner_name} (MaxP)"

    def __repr__(self) -> str:
        return f"ChunkedRetriever({self.inner!r}, {_describe(self.chunk_to_doc)})"

    def identity(self) -> dict[str, Any]:
        """The inner retriever's identity, the aggregation and how deep it searches."""
        return {
            "kind": "chunked",
            "name": self._name,
            "aggregation": "maxp",
            "chunk_to_doc": _identify(self.chunk_to_doc),
            "oversample": self.oversample,
            "max_chunks": self.max_chunks,
            "inner": identity_of(self.inner),
        }

    def search_chunks(self, queries: Queries, k: int) -> Run:
        """The inner retriever's chunk run, for passage-level qrels (a ShortRankingWarning is
        this retriever's, once: the inner retriever's own is silenced)."""
        k = check_k(k, self._name)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ShortRankingWarning)
            result = self.inner.search(queries, k)
        if not (isinstance(result, Mapping) or same_class(result, Run)):
            raise RetrieverError(
                f"retriever {self._name!r}: the inner retriever returned "
                f"{type(result).__name__}; it must return a Run or {{query_id: {{id: score}}}}"
            )
        run = Run.from_dict(result)
        if run.num_entries and int(run.depths().max()) > k:
            run = run.truncate(k)
        return check_run(run, queries, k, retriever=self._name, corpus=self.passages)

    def search(self, queries: Queries, k: int) -> Run:
        """Up to ``k`` documents per query, each scored by its best chunk. A query with no
        chunk has no document either: the runs of chunks are not warned about, the documents'
        is (one ShortRankingWarning, at ``k``)."""
        k = check_k(k, self._name)
        depth = self._cap(k * self.oversample)
        found: dict[str, list[tuple[str, float]]] = {}
        pending = queries
        while True:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", ShortRankingWarning)
                chunks = self.search_chunks(pending, depth)
            docs = max_passage(chunks, self.chunk_to_doc, retriever=self._name)
            depth_of = dict(zip(chunks.query_ids.tolist(), chunks.depths().tolist(), strict=True))
            again = []
            for qid in pending.query_ids.tolist():
                ranking = docs.ranking(qid) if qid in docs else []
                found[qid] = ranking[:k]
                exhausted = depth_of.get(qid, 0) < depth
                if len(ranking) < k and not exhausted and self._cap(depth * 2) > depth:
                    again.append(qid)
            if not again:
                break
            pending = queries.subset(again)
            depth = self._cap(depth * 2)
        if not isinstance(self.chunk_to_doc, str):
            settle(self.chunk_to_doc)  # what it changed itself (a memo) keeps its identity
        ordered = {qid: found[qid] for qid in queries.query_ids.tolist()}
        run = Run.from_rankings(ordered)
        return check_run(run, queries, k, retriever=self._name, corpus=self.corpus)

    def _cap(self, depth: int) -> int:
        return depth if self.max_chunks is None else min(depth, self.max_chunks)

    def passages_for(self, queries: Queries, n: int) -> dict[str, list[tuple[str, str]]]:
        """The top ``n`` chunks per query as (chunk id, text): the contexts of a generator."""
        if self.passages is None:
            raise ConfigError(
                f"retriever {self._name!r}: give ChunkedRetriever(passages=<the chunk corpus>) "
                "so the generator gets the chunks' texts as contexts"
            )
        run = self.search_chunks(queries, n)
        found: dict[str, list[tuple[str, str]]] = {}
        for qid in queries.query_ids.tolist():
            pairs = []
            for chunk_id, _ in run.ranking(qid) if qid in run else []:
                doc = self.passages[chunk_id]
                pairs.append((chunk_id, (doc.title + " " + doc.text).strip()))
            found[qid] = pairs
        return found


class ChunkedOptions(TypedDict, total=False):
    """The keyword options :func:`chunked` passes on to :class:`ChunkedRetriever`."""

    corpus: Corpus | None
    passages: Corpus | None
    oversample: int
    max_chunks: int | None
    name: str | None


def chunked(
    inner: Any, chunk_to_doc: ChunkToDoc = "#", **options: Unpack[ChunkedOptions]
) -> ChunkedRetriever:
    """``inner`` (a retriever over chunks) as a document retriever (:class:`ChunkedRetriever`)."""
    return ChunkedRetriever(inner, chunk_to_doc, **options)
