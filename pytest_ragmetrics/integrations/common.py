"""What the framework adapters share: score directions, ids, the run, pipelines' contexts."""

from __future__ import annotations

import dataclasses
import importlib
import uuid
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any, ClassVar, Literal, TypedDict

import numpy as np

from pytest_ragmetrics.code_identity import jsonable
from pytest_ragmetrics.data.model import Corpus, Queries, Run
from pytest_ragmetrics.data.scores import Contradiction, order_contradiction
from pytest_ragmetrics.errors import ConfigError, GeneratorError, RetrieverError
from pytest_ragmetrics.executors.base import LocalExecutor
from pytest_ragmetrics.retrievers.base import (
    Named,
    _run_from_groups,
    _score_value,
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


def checked_scores(
    pairs: Sequence[tuple[str, Any]], query_id: str, retriever: str
) -> list[float] | None:
    """The scores of one query's ranking as floats, by ``from_function``'s rules (numbers, not
    text or a bool, finite: else a RetrieverError naming the document and the query); None
    when the framework gave none (every score None: its order then counts). A None among
    numbers is an error naming its document: where it belongs among them is unknown."""
    missing = [doc for doc, score in pairs if score is None]
    if len(missing) == len(pairs):
        return None
    if missing:
        doc, score = next((d, s) for d, s in pairs if s is not None)
        raise RetrieverError(
            f"retriever {retriever!r} returned no score (None) for document {missing[0]!r}, "
            f"query {query_id!r}, but scores for others (e.g. {doc!r}: {score!r}), so where "
            "it belongs among them is unknown; give every document of a query a score, or "
            "none (the framework's order then counts)"
        )
    return [_score_value(score, doc, query_id, retriever) for doc, score in pairs]


def oriented(
    pairs: Sequence[tuple[str, Any]],
    kind: ScoreKind,
    query_id: str,
    retriever: str,
    convert: Callable[[float], float] | None = None,
) -> list[tuple[str, float]]:
    """One query's pairs with scores checked (:func:`checked_scores`) and made higher for
    better documents (a distance negated, or ``convert``: a store's relevance function);
    ``rank``, or no score at all, keeps the framework's order with scores n, n-1, ..., 1."""
    values = None if kind == "rank" else checked_scores(pairs, query_id, retriever)
    if values is None:
        n = len(pairs)
        return [(doc, float(n - i)) for i, (doc, _) in enumerate(pairs)]
    if convert is not None:
        values = [convert(value) for value in values]
    elif kind == "distance":
        values = [-value for value in values]
    return [(doc, value) for (doc, _), value in zip(pairs, values, strict=True)]


def _is_generated(value: str) -> bool:
    """Whether ``value`` is a random UUID, the id LangChain's stores and LlamaIndex give a
    document or node that was given none (never a corpus id one can rely on)."""
    try:
        return str(uuid.UUID(value)) == value.lower()
    except ValueError:
        return False


def document_id(
    document: Any,
    own_id: object,
    id_key: str,
    what: Callable[[], str],
    corpus: Corpus | None = None,
) -> str:
    """The corpus id of a framework document: ``document.metadata[id_key]`` (text, or an
    integer, Python's or numpy's, as its digits), else (with the default ``id_key="id"``) its
    own id unless the framework generated it (a random UUID not in ``corpus``); else a
    RetrieverError naming ``what()`` (built only then: the usual case is text in the
    metadata). An empty (or blank) id there is an error saying so."""
    metadata = getattr(document, "metadata", None)
    metadata = metadata if isinstance(metadata, Mapping) else {}
    value = metadata.get(id_key)
    if isinstance(value, str) and value.strip():
        return str(value)  # numpy's str_ too, as a plain str
    if isinstance(value, (int, np.integer)) and not isinstance(value, bool):
        return str(int(value))  # pandas gives numpy integers: np.int64(2) is "2"
    if isinstance(value, str):
        raise RetrieverError(
            f"{what()} has an empty id in its metadata ({id_key}={value!r}); store the "
            "corpus id there, or name the field that holds it with id_key="
        )
    if value is not None:
        raise RetrieverError(
            f"{what()} has {id_key}={value!r} ({type(value).__name__}) in its metadata, but a "
            f"corpus id is text, or an integer read as its digits, not a {type(value).__name__}: "
            "store the id there as the corpus writes it"
        )
    if value is None and id_key == "id" and isinstance(own_id, str) and own_id:
        if not _is_generated(own_id) or (corpus is not None and own_id in corpus):
            return own_id
        raise RetrieverError(
            f"{what()} has no 'id' in its metadata, and its own id {own_id!r} is a random "
            "UUID the framework generated, not a corpus id; store the corpus id in its "
            "metadata['id'] (or name the field that holds it with id_key=; if the corpus's "
            "ids are UUIDs, pass corpus= to take those it holds)"
        )
    keys = ", ".join(sorted(map(str, metadata))) or "none"
    raise RetrieverError(
        f"{what()} has no {id_key!r} in its metadata (its keys: {keys}); store the corpus "
        "id there, or name the field that holds it with id_key="
    )


def raiser(error: BaseException) -> Callable[[], None]:
    """A function raising ``error``: for :meth:`AdapterRetriever.call` on a batch's failure."""

    def again() -> None:
        raise error

    return again


#: How to give each chunk an id of its own, for a ranking that holds one document twice.
CHUNK_IDS = (
    "store each chunk's own id in its metadata as '<doc id>#<n>' (say under 'chunk_id'), "
    "pass id_key='chunk_id'"
)


def check_once(ids: Sequence[str], query_id: str, retriever: str, chunk_ids: str) -> None:
    """A RetrieverError when a ranking holds a document twice: chunks of one document
    (``chunk_ids``: how to give each its own id, in the framework's terms)."""
    if len(set(ids)) == len(ids):
        return
    seen: set[str] = set()
    for doc in ids:
        if doc in seen:
            raise RetrieverError(
                f"retriever {retriever!r} returned document {doc!r} twice for query "
                f"{query_id!r}: several chunks of one document? To rank documents by their "
                f"best chunk, {chunk_ids} and wrap the retriever in "
                "pytest_ragmetrics.retrievers.chunked(retriever, '#', corpus=...)"
            )
        seen.add(doc)


def order_error(found: Contradiction, kind: ScoreKind, who: str, factory: str) -> RetrieverError:
    """The error for scores that, as read (``kind``; higher is better once oriented), rise
    along the framework's best-first order for most queries (``found``, of the oriented
    scores): the message of a ``from_function`` ranking that does the same, with the
    ``scores=`` of ``factory`` to pass."""
    fix = f"{factory}(..., scores={{kind!r}})"
    if kind == "distance":  # shown as the framework gave them, descending
        raw = tuple(-s for s in found.example_scores)
        found = dataclasses.replace(found, kind="distance", example_scores=raw)
    if kind != "relevance":
        return RetrieverError(found.describe(who, fix))
    shown = ", ".join(f"{s:.4g}" for s in found.example_scores[:4])
    return RetrieverError(
        f"{who} listed documents best first, but their relevance scores (the store's "
        f"relevance function) rise along that order for {found.contradicting} of "
        f"{found.counted} queries (e.g. {found.example_query!r}: {shown}): the function "
        "reads its scores the wrong way round; say what similarity_search_with_score returns "
        f"instead: {fix.format(kind='similarity')} (higher is better) or "
        f"{fix.format(kind='distance')}"
    )


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

    Subclasses give ``kind``, ``factory``, ``framework_identity()`` and either
    ``search_one(qid, text, k)`` (one query: ``[(id, score), ...]`` in the framework's order,
    best first, scores checked and oriented by :func:`oriented`: higher is better) or
    ``search_many``. Several queries are
    searched at once on up to ``concurrency`` threads. Scores that rise along the framework's
    order for most queries whose order says something were read the wrong way (``scores``):
    an error naming a query and the ``scores=`` to pass, as for a ``from_function`` ranking.
    Results longer than ``k`` are cut, shorter ones are normal (the report notes them); with
    ``corpus``, unknown ids are an error. What makes the identity is read-only once built
    (:class:`~pytest_ragmetrics.retrievers.named.Named`).
    """

    fixed: ClassVar[frozenset[str]] = Named.fixed | {"obj", "id_key", "parameters", "scores"}
    kind = "adapter"
    #: The function that makes this retriever, named in messages.
    factory = "adapter"
    #: What the framework's scores are taken to be (``rank``: the order alone).
    scores: ScoreKind = "rank"
    #: How to give each chunk its own id (see :func:`check_once`).
    chunk_ids = CHUNK_IDS

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

    def search_one(self, qid: str, text: str, k: int) -> list[tuple[str, Any]]:
        raise NotImplementedError

    def search_many(self, items: list[tuple[str, str]], k: int) -> list[list[tuple[str, Any]]]:
        """Every query's ranking, ``concurrency`` queries at a time."""

        def one(item: tuple[str, str]) -> list[tuple[str, Any]]:
            qid, text = item
            found: list[tuple[str, Any]] = self.call(
                lambda: self.search_one(qid, text, k), f"query {qid!r}"
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
            # The pairs are the adapter's own (str ids, scores checked by oriented()); a
            # relevance function's output is checked here, by from_function's rules.
            ids = [doc for doc, _ in result]
            check_once(ids, qid, self._name, self.chunk_ids)
            scores.extend(_score_value(score, doc, qid, self._name) for doc, score in result)
            groups.append(ids)
        query_ids = [qid for qid, _ in items]
        self.check_order(query_ids, groups, scores)
        run = _run_from_groups(query_ids, groups, scores, self._name)
        if run.num_entries and int(run.depths().max()) > k:
            run = run.truncate(k)
        return check_run(run, queries, k, retriever=self._name, corpus=self.corpus)

    def check_order(
        self, query_ids: list[str], groups: list[list[str]], scores: list[float]
    ) -> None:
        """A RetrieverError when the oriented ``scores`` rise along the framework's best-first
        order for most queries whose order says something (:func:`order_error`)."""
        if self.scores == "rank":
            return
        offsets = np.cumsum([0, *map(len, groups)], dtype=np.int64)
        values = np.asarray(scores, dtype=np.float64)
        found = order_contradiction(query_ids, offsets, values, "similarity")
        if found is not None:
            raise order_error(found, self.scores, f"retriever {self._name!r}", self.factory)


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
