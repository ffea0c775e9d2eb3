"""faiss and sentence-transformers calls shared by the local dense retriever and its Ray
actors: one ``encode`` call, an exact top-k that keeps every tie at the cut, and index building.

Both :mod:`pytest_ragmetrics.retrievers.dense` and :mod:`pytest_ragmetrics.retrievers.ray_backend`
import these; neither imports the other's internals. faiss is imported only when an index is
built.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.errors import RetrieverError

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer

FloatMatrix = npt.NDArray[np.float32]
IndexType = Literal["flat", "ivf", "hnsw"]


def encode_texts(
    model: SentenceTransformer,
    texts: list[str],
    prefix: str,
    batch_size: int,
    normalize: bool,
    *,
    pool: Any = None,
) -> FloatMatrix:
    """One ``encode`` call: what the local path and every Ray actor run for one chunk."""
    encoded = model.encode(
        texts,
        prompt=prefix or None,
        batch_size=batch_size,
        show_progress_bar=False,
        convert_to_numpy=True,
        normalize_embeddings=normalize,
        pool=pool,
    )
    return np.asarray(encoded, dtype=np.float32)


def exact_top_k(index: Any, vectors: FloatMatrix, depth: int) -> tuple[FloatMatrix, Any]:
    """faiss's top ``depth`` (scores, positions) of an exact index, searched deeper where needed
    so that every document tied with the last one kept is returned too.

    Which of several tied documents faiss keeps at the cut depends on its heap and blocking; with
    all of them returned, ``Run.from_arrays(...).truncate(depth)`` keeps those with the largest
    ids (the run's canonical order), whatever searched them: one index, or shards of it.
    """
    size = int(index.ntotal)
    depth = min(depth, size)
    probe = min(depth + 1, size)
    while True:
        scores, indices = index.search(vectors, probe)
        if probe >= size or not len(scores):
            return scores, indices
        if not (scores[:, probe - 1] == scores[:, depth - 1]).any():
            return scores, indices
        probe = min(2 * probe, size)


def build_faiss_index(
    embeddings: FloatMatrix,
    index_type: IndexType = "flat",
    *,
    nlist: int = 100,
    nprobe: int = 16,
    hnsw_m: int = 32,
    ef_construction: int = 200,
    ef_search: int = 128,
) -> Any:
    """An inner-product faiss index (flat, IVF-flat or HNSW-flat) holding ``embeddings``."""
    try:
        import faiss
    except ImportError:
        raise RetrieverError(
            "DenseRetriever needs faiss; install it with pip install 'pytest-ragmetrics[dense]'"
        ) from None
    vectors = np.ascontiguousarray(embeddings, dtype=np.float32)
    dim = vectors.shape[1]
    index: Any
    if index_type == "ivf":
        quantizer = faiss.IndexFlatIP(dim)
        index = faiss.IndexIVFFlat(quantizer, dim, nlist, faiss.METRIC_INNER_PRODUCT)
        index.train(vectors)
        index.nprobe = min(nprobe, nlist)
    elif index_type == "hnsw":
        index = faiss.IndexHNSWFlat(dim, hnsw_m, faiss.METRIC_INNER_PRODUCT)
        index.hnsw.efConstruction = ef_construction
        index.hnsw.efSearch = ef_search
    else:
        index = faiss.IndexFlatIP(dim)
    index.add(vectors)
    return index
