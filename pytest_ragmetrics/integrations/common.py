"""What the framework adapters share: score directions, ids, the run, pipelines' contexts."""

from __future__ import annotations

import importlib
import itertools
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, Literal, TypedDict

from pytest_ragmetrics.code_identity import jsonable
from pytest_ragmetrics.data.model import Corpus, Queries, Run
from pytest_ragmetrics.errors import ConfigError, GeneratorError, RetrieverError
from pytest_ragmetrics.executors.base import LocalExecutor
from pytest_ragmetrics.retrievers.base import (
    Named,
    _run_from_groups,
    check_k,
    check_run,
    guarded_call,
)
from pytest_ragmetrics.values import positive_int

#: What a framework's scores mean: ``relevance`` (higher is better, normalised to [0, 1]),
#: ``similarity`` (higher is better), ``distance`` (lower is better: the run holds its
#: negation) or ``rank`` (no usable score: the order alone counts, scores n, n-1, ..., 1).
ScoreKind = Literal["relevance", "similarity", "distance", "rank"]
SCORE_KINDS: tuple[str, ...] = ("relevance", "similarity", "distance", "rank")

#: Threads the adapters use by default to search several queries at once.
CONCURRENCY = 4


def require(module: str, extra: str) -> ModuleType:
    """Import ``module``, or a ConfigError saying which extra installs it."""
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ConfigError(
            f"{module} is not installed ({exc}); pip install 'pytest-ragmetrics[{extra}]'"
        ) from None


def check_score_kind(kind: object, where: str) -> ScoreKind | None:
    """``kind`` if it is one of :data:`SCORE_KINDS` (or None: decide from the object)."""
    if kind is None or kind in SCORE_KINDS:
        return kind  # type: ignore[return-value]
    raise ConfigError(f"{where}: scores must be one of {', '.join(SCORE_KINDS)}, got {kind!r}")


def class_name(obj: object) -> str:
    """``module.QualName`` of ``obj``'s class: what an identity records of a framework object."""
    kind = type(obj)
    return f"{kind.__module__}.{kind.__qualname__}"


def oriented(pairs: Sequence[tuple[str, Any]], kind: ScoreKind) -> list[tuple[str, Any]]:
    """Pairs with scores that are higher for better documents; ``rank`` (or any missing
    score) keeps the framework's order with scores n, n-1, ..., 1."""
    if kind == "rank" or any(score is None for _, score in pairs):
        n = len(pairs)
        return [(doc, float(n - i)) for i, (doc, _) in enumerate(pairs)]
    if kind == "distance":
        return [(doc, -float(score)) for doc, score in pairs]
    return list(pairs)


def best_first(
    pairs: list[tuple[str, Any]], kind: ScoreKind, where: Callable[[], str]
) -> list[tuple[str, Any]]:
    """``pairs`` (oriented: higher is better) if their scores never rise along the
    framework's own order, which is best first; else a RetrieverError naming ``where()``: the
    scores were read the wrong way (a distance taken for a similarity, or a store's relevance
    function that falls as similarity rises, as LangChain's for FAISS inner products), and
    ranking by them would turn the framework's ranking upside down."""
    for (before, a), (after, b) in itertools.pairwise(pairs):
        if b > a + 1e-9 * max(1.0, abs(a)):
            other = "similarity" if kind in ("distance", "relevance") else "distance"
            raise RetrieverError(
                f"{where()}: the framework listed {after!r} (score {b:.6g}) after {before!r} "
                f"({a:.6g}), best first, but its scores read as {kind} rank them the other "
                f"way; pass scores={other!r} (or scores='rank' to keep its order)"
            )
    return pairs


def document_id(document: Any, own_id: object, id_key: str, what: Callable[[], str]) -> str:
    """The corpus id of a framework document: ``document.metadata[id_key]``, else (with the
    default ``id_key="id"``) its own id; else a RetrieverError naming ``what()`` (built only
    then: the usual case is a string in the metadata)."""
    metadata = getattr(document, "metadata", None)
    metadata = metadata if isinstance(metadata, Mapping) else {}
    value = metadata.get(id_key)
    if isinstance(value, str) and value:
        return value
    if value is None and id_key == "id":
        value = own_id
    if value is None or value == "":
        keys = ", ".join(sorted(map(str, metadata))) or "none"
        raise RetrieverError(
            f"{what()} has no {id_key!r} in its metadata (its keys: {keys}); store the corpus "
            "id there, or name the field that holds it with id_key="
        )
    return str(value)


def raiser(error: BaseException) -> Callable[[], None]:
    """A function raising ``error``: for :meth:`AdapterRetriever.call` on a batch's failure."""

    def again() -> None:
        raise error

    return again


def check_once(ids: Sequence[str], query_id: str, retriever: str) -> None:
    """A RetrieverError when a ranking holds a document twice: chunks of one document."""
    if len(set(ids)) == len(ids):
        return
    seen: set[str] = set()
    for doc in ids:
        if doc in seen:
            raise RetrieverError(
                f"retriever {retriever!r} returned document {doc!r} twice for query "
                f"{query_id!r}: several chunks of one document? Name each chunk's own id with "
                "id_key= and wrap the retriever in pytest_ragmetrics.retrievers.chunked(...) "
                "to rank documents by their best chunk"
            )
        seen.add(doc)


def texts_of(queries: Queries) -> list[tuple[str, str]]:
    return list(zip(queries.query_ids.tolist(), queries.texts, strict=True))


class AdapterOptions(TypedDict, total=False):
    """The keyword options every adapter factory (``from_langchain``, ``from_llama_index``)
    passes on to its retriever (see :class:`AdapterRetriever`)."""

    name: str | None
    corpus: Corpus | None
    concurrency: int
    parameters: Mapping[str, Any] | None


class AdapterRetriever(Named):
    """A framework's retriever or store as a :class:`~pytest_ragmetrics.retrievers.Retriever`.

    Subclasses give ``kind``, ``framework_identity()`` and either ``search_one(text, k)`` (one
    query: ``[(id, score), ...]`` best first, scores higher-is-better) or ``search_many``.
    Several queries are searched at once on up to ``concurrency`` threads; results longer
    than ``k`` are cut, shorter ones are normal (the report notes them); with ``corpus``,
    unknown ids are an error.
    """

    kind = "adapter"

    def __init__(
        self,
        obj: Any,
        *,
        id_key: str = "id",
        name: str | None = None,
        concurrency: int = CONCURRENCY,
        corpus: Corpus | None = None,
        parameters: Mapping[str, Any] | None = None,
    ) -> None:
        if not isinstance(id_key, str) or not id_key:
            raise ConfigError(f"{self.kind}: id_key must be a non-empty string, got {id_key!r}")
        self.obj = obj
        self.id_key = id_key
        self.concurrency = positive_int(concurrency, f"{self.kind}: concurrency")
        self.corpus = corpus
        self.parameters = jsonable(dict(parameters or {}), f"{self.kind}: parameters")
        self._name = name or type(obj).__name__

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._name!r})"

    def framework_identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def identity(self) -> dict[str, Any]:
        """The framework object's class and settings, id_key, the parameters you gave."""
        identity: dict[str, Any] = {
            "kind": self.kind,
            "name": self._name,
            "id_key": self.id_key,
            **self.framework_identity(),
        }
        if self.parameters:
            identity["parameters"] = self.parameters
        return identity

    def search_one(self, text: str, k: int) -> list[tuple[str, Any]]:
        raise NotImplementedError

    def search_many(self, items: list[tuple[str, str]], k: int) -> list[list[tuple[str, Any]]]:
        """Every query's ranking, ``concurrency`` queries at a time."""

        def one(item: tuple[str, str]) -> list[tuple[str, Any]]:
            qid, text = item
            found: list[tuple[str, Any]] = self.call(
                lambda: self.search_one(text, k), f"query {qid!r}"
            )
            return found

        return LocalExecutor(self.concurrency).map(one, items)

    def rankings(
        self,
        items: list[tuple[str, str]],
        results: Sequence[Any],
        ranking: Callable[[str, Any], list[tuple[str, Any]]],
    ) -> list[list[tuple[str, Any]]]:
        """Each query's ``ranking(qid, result)`` from a batch's ``results`` (one per item, an
        exception in place of a failed query's); the first failure raised as :meth:`call`'s."""
        found = []
        for (qid, _), result in zip(items, results, strict=True):
            if isinstance(result, Exception):
                self.call(raiser(result), f"query {qid!r}")
            found.append(ranking(qid, result))
        return found

    def call(self, function: Callable[[], Any], where: str) -> Any:
        """``function()``; a framework's exception becomes a RetrieverError naming ``where``."""
        return guarded_call(function, self._name, where, passing=(RetrieverError,))

    def search(self, queries: Queries, k: int) -> Run:
        """Search every query; a Run of at most ``k`` documents per query."""
        k = check_k(k, self._name)
        items = texts_of(queries)
        results = self.search_many(items, k) if items else []
        groups: list[list[str]] = []
        scores: list[float] = []
        for (qid, _), result in zip(items, results, strict=True):
            # The pairs are the adapter's own: str ids, numeric scores (finiteness is the Run's
            # check), so the lighter checks of a function retriever's results are skipped.
            ids = [doc for doc, _ in result]
            check_once(ids, qid, self._name)
            try:
                scores.extend([float(score) for _, score in result])
            except (TypeError, ValueError):
                raise RetrieverError(
                    f"retriever {self._name!r} returned a score that is not a number for "
                    f"query {qid!r}: {result[:3]!r}"
                ) from None
            groups.append(ids)
        run = _run_from_groups([qid for qid, _ in items], groups, scores, self._name)
        if run.num_entries and int(run.depths().max()) > k:
            run = run.truncate(k)
        return check_run(run, queries, k, retriever=self._name, corpus=self.corpus)


def contexts_of(pairs: Sequence[tuple[str | None, str]]) -> dict[str, str] | list[str]:
    """A pipeline's contexts: ``{id: text}`` when every one has a distinct id, else the texts."""
    ids = [cid for cid, _ in pairs]
    if all(ids) and len(set(ids)) == len(ids):
        return {str(cid): text for cid, text in pairs}
    return [text for _, text in pairs]


class AdapterPipeline:
    """A framework's question-answering object as a pipeline ``query -> (answer, contexts)``.

    Its identity (the cache key of its answers) is the object's class, ``name`` and
    ``version``: bump ``version`` when the chain changes (another prompt, model or retriever),
    or the answers cached for the old one are reused.
    """

    kind = "adapter"

    def __init__(
        self,
        obj: Any,
        *,
        name: str | None = None,
        version: str = "1",
        concurrency: int = CONCURRENCY,
    ) -> None:
        self.obj = obj
        self.name = name or type(obj).__name__
        self.version = str(version)
        self.concurrency = positive_int(concurrency, f"{self.kind} pipeline: concurrency")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.name!r}, version={self.version!r})"

    def identity(self) -> dict[str, Any]:
        """Class, name and version."""
        return {
            "pipeline": self.kind,
            "class": class_name(self.obj),
            "name": self.name,
            "version": self.version,
        }

    def answer(self, query: str) -> tuple[Any, Sequence[tuple[str | None, str]]]:
        raise NotImplementedError

    def __call__(self, query: str) -> tuple[str, dict[str, str] | list[str]]:
        try:
            answer, pairs = self.answer(query)
        except GeneratorError:
            raise
        except Exception as exc:
            raise GeneratorError(
                f"pipeline {self.name!r} raised {type(exc).__name__} for {query[:60]!r}: {exc}"
            ) from exc
        text = getattr(answer, "content", answer)  # a chat model's message, or the text
        if not isinstance(text, str):
            raise GeneratorError(
                f"pipeline {self.name!r} answered {type(answer).__name__} for {query[:60]!r}; "
                "its answer must be text"
            )
        return text, contexts_of(pairs)
