"""LlamaIndex retrievers, indexes and query engines under test (``pip install
pytest-ragmetrics[llama-index]``).

:func:`from_llama_index` takes

- a retriever (``retrieve`` -> ``NodeWithScore``) or an index (searched through
  ``as_retriever(similarity_top_k=k)``): a :class:`~pytest_ragmetrics.retrievers.Retriever`
  with an identity. LlamaIndex's scores are similarities (higher is better), held to
  ``from_function``'s rules (finite numbers); nodes without a score (all of a query's) keep
  their order (scores n, n-1, ..., 1), one without a score among scored ones is an error;
  ``scores="distance"`` for a store that returns distances;
- a query engine (``query`` -> ``Response``): a pipeline ``query -> (answer, contexts)``, its
  ``source_nodes`` the contexts.

A node's corpus id is ``metadata[id_key]`` (default ``"id"``; text, or an integer, numpy's
too); lacking it, with the default key, the id of the document it was made from
(``ref_doc_id``), else its own ``node_id``, unless LlamaIndex generated that id (a random
UUID: an error, unless ``corpus`` holds it). Chunks of one document share its id: to rank
documents by their best chunk, give each node its own id in its metadata (see
:data:`CHUNK_IDS`) and wrap the retriever in :func:`~pytest_ragmetrics.retrievers.chunked`.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Unpack

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.integrations import common

EXTRA = "llama-index"

#: How to give each chunk (node) an id of its own: node ids are not in the metadata.
CHUNK_IDS = (
    "give each node its own id in its metadata before indexing (after splitting: "
    "node.metadata['chunk_id'] = f'{node.ref_doc_id}#{n}', with 'chunk_id' added to "
    "node.excluded_embed_metadata_keys), pass id_key='chunk_id'"
)


def _core() -> Any:
    return common.require("llama_index.core", EXTRA)


def node_id(node: Any, id_key: str, where: str, corpus: Corpus | None = None) -> str:
    """The corpus id of a LlamaIndex node (see the module doc)."""
    own = getattr(node, "ref_doc_id", None) or getattr(node, "node_id", None)

    def what() -> str:
        text = node.get_content()[:40] if callable(getattr(node, "get_content", None)) else ""
        return f"{where}: node {text!r}"

    return common.document_id(node, own or None, id_key, what, corpus)


class LlamaIndexRetriever(common.AdapterRetriever):
    """A LlamaIndex retriever (or an index's ``as_retriever``), ``concurrency`` queries at a
    time: on threads, or with ``use_async=True`` through ``aretrieve``."""

    kind = "llama-index-retriever"
    factory = "from_llama_index"
    chunk_ids = CHUNK_IDS
    fixed: ClassVar[frozenset[str]] = common.AdapterRetriever.fixed | {
        "retriever_kwargs",
        "is_index",
    }

    def __init__(
        self,
        obj: Any,
        *,
        scores: common.ScoreKind | None = None,
        use_async: bool = False,
        retriever_kwargs: Mapping[str, Any] | None = None,
        **options: Any,
    ) -> None:
        super().__init__(obj, **options)
        self.scores: common.ScoreKind = common.check_score_kind(scores, self.kind) or "similarity"
        self.use_async = bool(use_async)
        self.retriever_kwargs = dict(retriever_kwargs or {})
        self.is_index = not callable(getattr(obj, "retrieve", None))

    def framework_identity(self) -> dict[str, Any]:
        found: dict[str, Any] = {"class": common.class_name(self.obj), "scores": self.scores}
        model = getattr(self.obj, "_embed_model", None)
        if model is not None:
            found["embed_model"] = common.class_name(model)
            name = getattr(model, "model_name", None)
            if isinstance(name, str):
                found["embed_model_name"] = name
        top_k = getattr(self.obj, "_similarity_top_k", None)
        if isinstance(top_k, int):
            found["similarity_top_k"] = top_k
        if self.retriever_kwargs:
            found["retriever_kwargs"] = self.retriever_kwargs
        return found

    def _retriever(self, k: int) -> Any:
        if self.is_index:
            return self.obj.as_retriever(similarity_top_k=k, **self.retriever_kwargs)
        return self.obj

    def _pairs(self, nodes: Sequence[Any], qid: str) -> list[tuple[str, Any]]:
        where = f"retriever {self._name!r}, query {qid!r}"
        pairs = [(node_id(n.node, self.id_key, where, self.corpus), n.score) for n in nodes]
        return common.oriented(pairs, self.scores, qid, self._name)

    def search_many(self, items: list[tuple[str, str]], k: int) -> list[list[tuple[str, Any]]]:
        retriever = self._retriever(k)
        if not self.use_async:

            def one(item: tuple[str, str]) -> list[tuple[str, Any]]:
                qid, text = item
                nodes = self.call(lambda: retriever.retrieve(text), f"query {qid!r}")
                return self._pairs(nodes, qid)

            from pytest_ragmetrics.executors.base import LocalExecutor

            return LocalExecutor(self.concurrency).map(one, items)

        async def gather() -> list[Any]:
            limit = asyncio.Semaphore(self.concurrency)

            async def one(text: str) -> Any:
                async with limit:
                    return await retriever.aretrieve(text)

            return await asyncio.gather(*(one(t) for _, t in items), return_exceptions=True)

        results = self.call(lambda: asyncio.run(gather()), f"a batch of {len(items)} queries")
        return self.rankings(items, results, lambda qid, nodes: self._pairs(nodes, qid))


class LlamaIndexPipeline(common.AdapterPipeline):
    """A query engine: ``query(text)`` answers; ``Response.source_nodes`` are the contexts,
    ``{corpus id: node text}``."""

    kind = "llama-index"

    def __init__(self, obj: Any, *, id_key: str, **options: Any) -> None:
        super().__init__(obj, **options)
        self.id_key = id_key

    def answer(self, query: str) -> tuple[Any, Sequence[tuple[str | None, str]]]:
        response = self.obj.query(query)
        answer = getattr(response, "response", response)
        pairs: list[tuple[str | None, str]] = []
        for scored in getattr(response, "source_nodes", None) or []:
            node = scored.node
            metadata = getattr(node, "metadata", None) or {}
            own = getattr(node, "ref_doc_id", None) or getattr(node, "node_id", None)
            cid = metadata.get(self.id_key, own if self.id_key == "id" else None)
            pairs.append((None if cid is None else str(cid), node.get_content()))
        return "" if answer is None else answer, pairs


def from_llama_index(
    obj: Any,
    id_key: str = "id",
    *,
    scores: common.ScoreKind | None = None,
    use_async: bool = False,
    retriever_kwargs: Mapping[str, Any] | None = None,
    version: str = "1",
    **options: Unpack[common.AdapterOptions],
) -> LlamaIndexRetriever | LlamaIndexPipeline:
    """A LlamaIndex retriever or index as a Retriever, a query engine as a pipeline (see the
    module doc). ``parameters`` (JSON-able) join a retriever's identity; ``version`` is a
    query engine's (bump it when the engine changes: its answers are cached under it)."""
    core = _core()
    base = core.base
    if isinstance(obj, base.base_query_engine.BaseQueryEngine):
        return LlamaIndexPipeline(
            obj,
            id_key=id_key,
            name=options.get("name"),
            version=version,
            concurrency=options.get("concurrency", common.CONCURRENCY),
        )
    index_type = core.indices.base.BaseIndex
    if isinstance(obj, (base.base_retriever.BaseRetriever, index_type)):
        if retriever_kwargs and not isinstance(obj, index_type):
            raise ConfigError("from_llama_index: retriever_kwargs are for an index")
        return LlamaIndexRetriever(
            obj,
            id_key=id_key,
            scores=scores,
            use_async=use_async,
            retriever_kwargs=retriever_kwargs,
            **options,
        )
    raise ConfigError(
        f"from_llama_index needs a LlamaIndex retriever, index or query engine, got "
        f"{common.class_name(obj)}"
    )
