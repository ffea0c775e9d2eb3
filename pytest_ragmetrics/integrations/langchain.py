"""LangChain retrievers, vector stores and chains under test (``pip install
pytest-ragmetrics[langchain]``).

- :func:`from_langchain` takes a ``BaseRetriever`` or a ``VectorStore`` and returns a
  :class:`~pytest_ragmetrics.retrievers.Retriever` with an identity;
- :func:`from_langchain_pipeline` takes a Runnable that answers a question with its source
  documents, a pipeline ``query -> (answer, contexts)`` for the answer layer.

A document's corpus id is ``metadata[id_key]`` (default ``"id"``; text, or an integer, numpy's
too; lacking it, the ``Document.id`` the store keeps, unless the store generated it: a random
UUID is an error, unless ``corpus`` holds it).

**Scores.** A retriever (``invoke``) returns documents without scores: the order alone counts.
A vector store's ``similarity_search_with_score`` returns what the store computes, a distance
for some (FAISS's L2 by default, Chroma), a similarity for others (``InMemoryVectorStore``), so
the store's own conversion to a relevance score (higher is better, the one
``similarity_search_with_relevance_scores`` uses) is preferred whenever the store has one;
without it, say what the scores are with ``scores="distance"`` or ``"similarity"``.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from typing import Any, ClassVar, TypedDict, Unpack

from pytest_ragmetrics.code_identity import jsonable
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError, GeneratorError
from pytest_ragmetrics.integrations import common

EXTRA = "langchain"

#: What ``similarity_search_with_score`` returns, for stores without a relevance function.
KNOWN_SCORES: dict[str, common.ScoreKind] = {
    "langchain_core.vectorstores.in_memory.InMemoryVectorStore": "similarity",  # cosine
}

#: How messages name what a store's scores are, in the plural.
PLURAL = {"similarity": "similarities", "distance": "distances", "relevance": "relevance scores"}


def _core() -> Any:
    """``langchain_core`` with the submodules read here imported: a package does not load
    its submodules, so ``core.vectorstores`` failed unless something else had imported it."""
    for submodule in ("vectorstores", "retrievers"):
        common.require(f"langchain_core.{submodule}", EXTRA)
    return common.require("langchain_core", EXTRA)


def _doc_id(document: Any, id_key: str, where: str, corpus: Corpus | None) -> str:
    return common.document_id(
        document,
        getattr(document, "id", None),
        id_key,
        lambda: f"{where}: document {getattr(document, 'page_content', '')[:40]!r}",
        corpus,
    )


def _doc_ids(
    documents: Sequence[Any], id_key: str, where: str, corpus: Corpus | None = None
) -> list[str]:
    """The corpus ids of LangChain documents, in order (see :func:`_doc_id`)."""
    try:
        ids = [document.metadata[id_key] for document in documents]
        "".join(ids)  # a TypeError unless every id is text: the cheapest check there is
    except (AttributeError, KeyError, TypeError):
        ids = [""]
    if all(map(str.strip, ids)):  # none empty or blank
        return [str(i) for i in ids]  # the usual case, at the cost of two passes
    return [_doc_id(document, id_key, where, corpus) for document in documents]


def _known_scores(store: Any) -> common.ScoreKind | None:
    """What ``store``'s ``similarity_search_with_score`` returns, when :data:`KNOWN_SCORES`
    says it."""
    for kind in type(store).__mro__:
        known = KNOWN_SCORES.get(f"{kind.__module__}.{kind.__qualname__}")
        if known is not None:
            return known
    return None


def _embedding_identity(store: Any) -> dict[str, Any]:
    embeddings = getattr(store, "embeddings", None) or getattr(store, "embedding_function", None)
    if embeddings is None:
        return {}
    found: dict[str, Any] = {"embeddings": common.class_name(embeddings)}
    for attribute in ("model", "model_name", "size"):
        value = getattr(embeddings, attribute, None)
        if isinstance(value, (str, int)) and not isinstance(value, bool):
            found[f"embeddings_{attribute}"] = value
    return found


class LangChainRetriever(common.AdapterRetriever):
    """A LangChain ``BaseRetriever``: its documents in order (scores n, n-1, ..., 1).

    Queries go through ``batch`` (``max_concurrency=concurrency``), or ``abatch`` with
    ``use_async=True`` (for retrievers whose async path does not block a thread). A
    ``VectorStoreRetriever`` is asked for ``k`` documents; any other returns as many as it is
    set to (cut to ``k``; fewer is noted, as for any retriever).
    """

    kind = "langchain-retriever"
    factory = "from_langchain"

    def __init__(self, obj: Any, *, use_async: bool = False, **options: Any) -> None:
        super().__init__(obj, **options)
        self.use_async = bool(use_async)

    def framework_identity(self) -> dict[str, Any]:
        found: dict[str, Any] = {"class": common.class_name(self.obj)}
        store = getattr(self.obj, "vectorstore", None)
        if store is not None:
            found["vectorstore"] = common.class_name(store)
            found.update(_embedding_identity(store))
            found["search_type"] = getattr(self.obj, "search_type", None)
            kwargs = dict(getattr(self.obj, "search_kwargs", None) or {})
            kwargs.pop("k", None)  # k is the search's
            if kwargs:
                found["search_kwargs"] = jsonable(kwargs, f"{self.kind}: search_kwargs")
        return found

    def _kwargs(self, k: int) -> dict[str, Any]:
        core = _core()
        vector_retriever = core.vectorstores.VectorStoreRetriever
        return {"k": k} if isinstance(self.obj, vector_retriever) else {}

    def search_many(self, items: list[tuple[str, str]], k: int) -> list[list[tuple[str, Any]]]:
        texts = [text for _, text in items]
        config = {"max_concurrency": self.concurrency}
        kwargs = self._kwargs(k)
        if not self.use_async and (self.concurrency == 1 or len(texts) == 1):
            # One at a time: invoke directly (batch would still hand each call to a thread).
            results: list[Any] = [
                self.call(partial(self.obj.invoke, text, **kwargs), f"query {qid!r}")
                for qid, text in items
            ]
        elif self.use_async:
            results = self.call(
                lambda: asyncio.run(
                    self.obj.abatch(texts, config, return_exceptions=True, **kwargs)
                ),
                f"a batch of {len(texts)} queries",
            )
        else:
            results = self.call(
                lambda: self.obj.batch(texts, config, return_exceptions=True, **kwargs),
                f"a batch of {len(texts)} queries",
            )

        def ranking(qid: str, documents: Any) -> list[tuple[str, Any]]:
            where = f"retriever {self._name!r}, query {qid!r}"
            ids = _doc_ids(documents, self.id_key, where, self.corpus)
            return common.oriented([(doc, None) for doc in ids], "rank", qid, self._name)

        return self.rankings(items, results, ranking)


class LangChainVectorStore(common.AdapterRetriever):
    """A LangChain ``VectorStore``, searched with scores (``similarity_search_with_score``),
    ``concurrency`` queries at a time; ``scores`` says what they are (see the module doc).

    ``search_kwargs`` (a metadata ``filter``, ``fetch_k``) go with every search and into the
    identity.
    """

    kind = "langchain-vectorstore"
    factory = "from_langchain"
    fixed: ClassVar[frozenset[str]] = common.AdapterRetriever.fixed | {"search_kwargs", "_convert"}

    def __init__(
        self,
        obj: Any,
        *,
        scores: common.ScoreKind | None = None,
        search_kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(obj, **options)
        self.search_kwargs = dict(search_kwargs or {})
        if "k" in self.search_kwargs:
            raise ConfigError(f"{self.kind}: k is the search's, not a search_kwargs entry")
        self.scores, self._convert = self._scoring(common.check_score_kind(scores, self.kind))

    def _scoring(
        self, scores: common.ScoreKind | None
    ) -> tuple[common.ScoreKind, Callable[[float], float] | None]:
        """What the scores are, and the store's relevance function when it is used."""
        if scores not in (None, "relevance"):
            return scores, None
        strategy = getattr(getattr(self.obj, "distance_strategy", None), "value", None)
        if (
            scores is None
            and strategy == "MAX_INNER_PRODUCT"
            and getattr(self.obj, "override_relevance_score_fn", None) is None
        ):
            # LangChain's relevance function for inner products (1 - x for x > 0) falls as
            # the inner product rises: the scores themselves are similarities.
            return "similarity", None
        try:
            function = self.obj._select_relevance_score_fn()
        except NotImplementedError:
            function = None
        except ValueError as exc:  # FAISS's DOT_PRODUCT and JACCARD: "Unknown distance ..."
            raise ConfigError(
                f"{common.class_name(self.obj)} has no relevance score function for its "
                f"distance strategy {strategy or '?'} ({exc}): pass scores='distance' or "
                "scores='similarity'"
            ) from None
        if callable(function):
            return "relevance", function
        base = _core().vectorstores.VectorStore
        own = type(self.obj)._similarity_search_with_relevance_scores
        if own is not base._similarity_search_with_relevance_scores:
            return "relevance", None  # the store computes relevance its own way
        known = _known_scores(self.obj)
        if scores == "relevance":
            advice = (
                f"its similarity_search_with_score returns {PLURAL[known]}: leave scores= out"
                if known is not None
                else "pass scores='distance' or scores='similarity' for what its "
                "similarity_search_with_score returns"
            )
            raise ConfigError(
                f"{common.class_name(self.obj)} has no relevance score function, so "
                f"scores='relevance' cannot be read from it; {advice}"
            )
        if known is not None:
            return known, None
        raise ConfigError(
            f"{common.class_name(self.obj)} has no relevance score function, so whether its "
            "similarity_search_with_score returns distances (lower is better) or similarities "
            "is unknown: pass scores='distance' or scores='similarity'"
        )

    def framework_identity(self) -> dict[str, Any]:
        found: dict[str, Any] = {"class": common.class_name(self.obj), "scores": self.scores}
        strategy = getattr(self.obj, "distance_strategy", None)
        if strategy is not None:
            found["distance_strategy"] = str(getattr(strategy, "value", strategy))
        found.update(_embedding_identity(self.obj))
        if self.search_kwargs:  # a filter function by its code digest
            found["search_kwargs"] = jsonable(self.search_kwargs, f"{self.kind}: search_kwargs")
        return found

    def search_one(self, qid: str, text: str, k: int) -> list[tuple[str, Any]]:
        if self.scores == "relevance" and self._convert is None:
            found = self.obj.similarity_search_with_relevance_scores(
                text, k=k, **self.search_kwargs
            )
        else:
            found = self.obj.similarity_search_with_score(text, k=k, **self.search_kwargs)
        where = f"retriever {self._name!r}, query {qid!r}"
        ids = _doc_ids([d for d, _ in found], self.id_key, where, self.corpus)
        pairs = [(doc, s) for doc, (_, s) in zip(ids, found, strict=True)]
        return common.oriented(pairs, self.scores, qid, self._name, self._convert)


def from_langchain(
    obj: Any,
    id_key: str = "id",
    *,
    scores: common.ScoreKind | None = None,
    search_kwargs: Mapping[str, Any] | None = None,
    use_async: bool = False,
    **options: Unpack[common.AdapterOptions],
) -> LangChainRetriever | LangChainVectorStore:
    """A LangChain ``BaseRetriever`` or ``VectorStore`` as a Retriever (see the module doc).

    ``scores`` (vector stores: ``"relevance"``, ``"similarity"``, ``"distance"``) overrides
    what the store's scores are taken to be; ``parameters`` (JSON-able) join the identity, so a
    baseline notices when what they describe changes (a chunk size, a model version).
    """
    core = _core()
    if isinstance(obj, core.vectorstores.VectorStore):
        if use_async:
            raise ConfigError("from_langchain: use_async is for retrievers, not vector stores")
        return LangChainVectorStore(
            obj, id_key=id_key, scores=scores, search_kwargs=search_kwargs, **options
        )
    if isinstance(obj, core.retrievers.BaseRetriever):
        if scores not in (None, "rank") or search_kwargs:
            raise ConfigError(
                "from_langchain: a retriever returns no scores and takes no search_kwargs; "
                "give the vector store itself to use its scores"
            )
        return LangChainRetriever(obj, id_key=id_key, use_async=use_async, **options)
    raise ConfigError(
        f"from_langchain needs a langchain BaseRetriever or VectorStore, got "
        f"{common.class_name(obj)}; for a chain that answers, use from_langchain_pipeline"
    )


class LangChainPipeline(common.AdapterPipeline):
    """A Runnable that answers: ``invoke(query)`` (or ``invoke({input_key: query})``) returns a
    dict with ``answer_key`` and ``context_key`` (``create_retrieval_chain``'s ``"answer"`` and
    ``"context"``), or a pair ``(answer, documents)``. The documents become the contexts,
    ``{corpus id: page_content}``."""

    kind = "langchain"

    def __init__(
        self,
        obj: Any,
        *,
        input_key: str | None = None,
        answer_key: str = "answer",
        context_key: str = "context",
        id_key: str = "id",
        **options: Any,
    ) -> None:
        if not callable(getattr(obj, "invoke", None)):
            raise ConfigError(
                f"from_langchain_pipeline needs a Runnable, got {common.class_name(obj)}"
            )
        super().__init__(obj, **options)
        self.input_key = input_key
        self.answer_key = answer_key
        self.context_key = context_key
        self.id_key = id_key

    def identity(self) -> dict[str, Any]:
        return {**super().identity(), "input_key": self.input_key, "answer_key": self.answer_key}

    def answer(self, query: str) -> tuple[Any, Sequence[tuple[str | None, str]]]:
        given = query if self.input_key is None else {self.input_key: query}
        result = self.obj.invoke(given)
        if isinstance(result, Mapping):
            missing = [k for k in (self.answer_key, self.context_key) if k not in result]
            if missing:
                raise GeneratorError(
                    f"pipeline {self.name!r} returned a dict without {missing[0]!r} (its keys: "
                    f"{', '.join(map(str, result))}); set answer_key= and context_key="
                )
            answer, documents = result[self.answer_key], result[self.context_key]
        elif isinstance(result, (tuple, list)) and len(result) == 2:
            answer, documents = result
        else:
            raise GeneratorError(
                f"pipeline {self.name!r} returned {type(result).__name__}; return a dict with "
                f"{self.answer_key!r} and {self.context_key!r}, or (answer, documents)"
            )
        pairs: list[tuple[str | None, str]] = []
        for document in documents or []:
            metadata = getattr(document, "metadata", None) or {}
            cid = metadata.get(self.id_key, getattr(document, "id", None))
            pairs.append((None if cid is None else str(cid), str(document.page_content)))
        return answer, pairs


class PipelineOptions(TypedDict, total=False):
    """The keyword options :func:`from_langchain_pipeline` passes on to
    :class:`LangChainPipeline`."""

    input_key: str | None
    answer_key: str
    context_key: str
    id_key: str
    name: str | None
    version: str
    concurrency: int


def from_langchain_pipeline(obj: Any, **options: Unpack[PipelineOptions]) -> LangChainPipeline:
    """A Runnable that answers with its source documents as the ``rag_pipeline`` (see
    :class:`LangChainPipeline`); bump ``version`` when the chain changes."""
    return LangChainPipeline(obj, **options)
