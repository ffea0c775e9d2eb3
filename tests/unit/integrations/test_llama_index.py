"""The LlamaIndex adapter against the real package: an in-memory (SimpleVectorStore) index
ranks as a hand computation does, retrievers run concurrently, query engines answer."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ragmetrics import Queries, RetrieverError
from pytest_ragmetrics.data.model import Run
from pytest_ragmetrics.errors import ConfigError, ReadOnlyOptionError
from pytest_ragmetrics.generation import answer_all
from pytest_ragmetrics.metrics import evaluate
from tests.helpers.adapter_data import by_hand, embed, make_corpus, make_queries, matching
from tests.helpers.concurrency import InFlight

pytest.importorskip("llama_index.core")
from llama_index.core import Document, VectorStoreIndex
from llama_index.core.base.base_retriever import BaseRetriever
from llama_index.core.base.embeddings.base import BaseEmbedding
from llama_index.core.llms import MockLLM
from llama_index.core.schema import NodeWithScore, TextNode

from pytest_ragmetrics.integrations.llama_index import from_llama_index

CORPUS = make_corpus()
QUERIES, QRELS = make_queries(CORPUS)
METRICS = ["ndcg_at_10", "recall_at_5", "mrr", "map"]


class WordEmbedding(BaseEmbedding):
    """The deterministic bag-of-words embedding of adapter_data."""

    def _get_query_embedding(self, query: str) -> list[float]:
        return embed(query)

    async def _aget_query_embedding(self, query: str) -> list[float]:
        return embed(query)

    def _get_text_embedding(self, text: str) -> list[float]:
        return embed(text)


def nodes(with_metadata: bool = False) -> list[TextNode]:
    return [
        TextNode(id_=d.id, text=d.text, metadata={"doc": d.id} if with_metadata else {})
        for d in CORPUS
    ]


@pytest.fixture(scope="module")
def index() -> Any:
    return VectorStoreIndex(nodes(), embed_model=WordEmbedding())


def means(run: Run) -> dict[str, float]:
    return evaluate(QRELS, run, METRICS).mean


def test_an_index_ranks_as_cosine_by_hand_at_any_k(index: Any) -> None:
    retriever = from_llama_index(index, corpus=CORPUS)
    for k in (3, 10):
        run = retriever.search(QUERIES, k)
        assert run.depths().tolist() == [k] * len(QUERIES)  # similarity_top_k follows k
        expected = by_hand(CORPUS, QUERIES, k)
        for qid in QUERIES.query_ids.tolist():
            top = matching(expected, qid)
        assert [d for d, _ in run.ranking(qid)][: len(top)] == top
        assert means(run) == pytest.approx(means(expected), abs=1e-12)


def test_adapter_and_hand_loop_give_identical_metrics(index: Any) -> None:
    retriever = index.as_retriever(similarity_top_k=10)
    hand = {
        qid: {n.node.node_id: n.score for n in retriever.retrieve(text)}
        for qid, text in QUERIES.items()
    }
    adapted = from_llama_index(retriever).search(QUERIES, 10)
    assert (
        evaluate(QRELS, adapted, METRICS).per_query
        == evaluate(QRELS, Run.from_dict(hand), METRICS).per_query
    )
    assert adapted.ranking("q000") == Run.from_dict(hand).ranking("q000")


def test_scores_said_the_wrong_way_are_an_error(index: Any) -> None:
    # The retriever lists nodes best first by similarity: read as distances they rose along
    # that order and the ranking was silently turned upside down.
    retriever = index.as_retriever(similarity_top_k=5)
    with pytest.raises(
        RetrieverError, match=r"'q000'.*set from_llama_index\(\.\.\., scores='similarity'\)"
    ):
        from_llama_index(retriever, scores="distance").search(QUERIES, 5)
    run = from_llama_index(retriever).search(QUERIES, 5)
    direct = retriever.retrieve(QUERIES["q000"])
    assert run.ranking("q000")[0] == (direct[0].node.node_id, direct[0].score)


def test_the_id_comes_from_the_metadata_key() -> None:
    built = VectorStoreIndex(nodes(with_metadata=True), embed_model=WordEmbedding())
    run = from_llama_index(built, id_key="doc").search(QUERIES, 3)
    assert set(run.doc_ids.tolist()) <= set(CORPUS.doc_ids.tolist())
    with pytest.raises(RetrieverError, match=r"no 'missing' in its metadata \(its keys: doc\)"):
        from_llama_index(built, id_key="missing").search(QUERIES, 3)


def test_retrievers_run_concurrently_and_async(index: Any) -> None:
    calls = InFlight()
    inner = index.as_retriever(similarity_top_k=3)

    class Slow:
        def retrieve(self, text: str) -> Any:
            calls.wait()
            return inner.retrieve(text)

    from pytest_ragmetrics.integrations.llama_index import LlamaIndexRetriever

    slow = LlamaIndexRetriever(
        Slow(), id_key="id", name="slow", concurrency=4, corpus=None, parameters=None
    )
    slow.search(QUERIES, 3)
    assert calls.peak == 4
    asynchronous = from_llama_index(inner, use_async=True).search(QUERIES, 3)
    assert asynchronous.ranking("q001") == from_llama_index(inner).search(QUERIES, 3).ranking(
        "q001"
    )


def test_the_identity_names_the_retriever_and_its_model(index: Any) -> None:
    identity = from_llama_index(index.as_retriever(similarity_top_k=4)).identity()
    assert identity["class"].endswith("VectorIndexRetriever")
    assert identity["embed_model"].endswith("WordEmbedding")
    assert identity["similarity_top_k"] == 4


def test_what_makes_the_identity_is_read_only(index: Any) -> None:
    adapter = from_llama_index(index, retriever_kwargs={"vector_store_query_mode": "default"})
    before = adapter.identity()
    for option, value in (
        ("scores", "distance"),
        ("retriever_kwargs", {}),
        ("id_key", "doc"),
        ("obj", index.as_retriever()),
    ):
        with pytest.raises(ReadOnlyOptionError, match=rf"{option} cannot be set"):
            setattr(adapter, option, value)
    assert adapter.identity() == before


def test_a_query_engines_answers_and_sources_reach_the_answer_layer(index: Any) -> None:
    engine = index.as_query_engine(llm=MockLLM(max_tokens=4), similarity_top_k=2)
    pipeline = from_llama_index(engine, name="engine")
    answers = answer_all(pipeline, dict(QUERIES.items()))
    first = answers["q000"]
    top = [d for d, _ in by_hand(CORPUS, QUERIES, 2).ranking("q000")]
    assert [cid for cid, _ in first.contexts] == top
    assert first.contexts[0][1] == CORPUS[top[0]].text
    assert isinstance(first.answer, str) and first.answer
    assert pipeline.identity()["class"].endswith("RetrieverQueryEngine")


def test_not_a_llama_index_object_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"retriever, index or query engine"):
        from_llama_index(object())
    with pytest.raises(ConfigError, match="scores must be one of"):
        from_llama_index(
            VectorStoreIndex([], embed_model=WordEmbedding()),
            scores="backwards",  # type: ignore[arg-type]
        )


def test_an_empty_index_gives_empty_rankings() -> None:
    empty = VectorStoreIndex([], embed_model=WordEmbedding())
    with pytest.warns(Warning, match="returned nothing"):
        run = from_llama_index(empty).search(Queries.from_dict({"q": "w01"}), 3)
    assert run.depths().tolist() == [0]


class Listed(BaseRetriever):
    """A retriever that returns the nodes it is given, in that order, with those scores."""

    def __init__(self, found: list[tuple[str, float | None]]) -> None:
        super().__init__()
        self.found = found

    def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
        return [NodeWithScore(node=TextNode(id_=i, text=i), score=s) for i, s in self.found]


def test_nodes_best_first_with_rising_scores_are_refused_not_re_sorted() -> None:
    # Its order says d1 first, its scores d3: re-sorted by score, silently, the ranking was
    # evaluated upside down.
    queries = Queries.from_dict({"q1": "a", "q2": "b"})
    rising = Listed([("d1", 0.1), ("d2", 0.5), ("d3", 0.9)])
    with pytest.raises(RetrieverError) as caught:
        from_llama_index(rising).search(queries, 3)
    message = str(caught.value)
    assert "ascending (lowest first) order for 2 of 2 queries (e.g. 'q1': 0.1, 0.5, 0.9)" in message
    assert "set from_llama_index(..., scores='distance')" in message
    run = from_llama_index(rising, scores="distance").search(queries, 3)
    assert [d for d, _ in run.ranking("q1")] == ["d1", "d2", "d3"]
    unscored = Listed([("d1", None), ("d2", None)])  # the order alone: n, n-1, ...
    assert from_llama_index(unscored).search(queries, 2).ranking("q2") == [("d1", 2.0), ("d2", 1.0)]


def test_a_node_without_a_score_among_scored_ones_is_an_error_naming_it() -> None:
    # It put the whole query in LlamaIndex's order: d1 > d4 > d2, where d2 scored best.
    mixed = Listed([("d1", 0.2), ("d4", None), ("d2", 0.9)])
    with pytest.raises(RetrieverError, match=r"no score \(None\) for document 'd4', query 'q1'"):
        from_llama_index(mixed).search(Queries.from_dict({"q1": "a"}), 3)


class Constructed(BaseRetriever):
    """Nodes built without pydantic's checks, as a retriever may: their scores as given."""

    def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
        found = [("d1", "high"), ("d2", 0.5)]
        return [
            NodeWithScore.model_construct(node=TextNode(id_=i, text=i), score=s) for i, s in found
        ]


def test_scores_that_are_not_finite_numbers_are_refused_naming_the_document() -> None:
    queries = Queries.from_dict({"q1": "a"})
    with pytest.raises(RetrieverError, match=r"score 'high' \(str\) for document 'd1', query"):
        from_llama_index(Constructed()).search(queries, 3)
    nan = Listed([("d1", float("nan")), ("d2", 0.5)])
    with pytest.raises(RetrieverError, match=r"score nan for document 'd1', query 'q1'; .*finite"):
        from_llama_index(nan, scores="distance").search(queries, 3)


def test_a_generated_node_id_is_never_taken_for_the_corpus_id() -> None:
    # Documents without ids: their nodes' ref_doc_id is a random UUID, and every metric was 0.0.
    built = VectorStoreIndex.from_documents(
        [Document(text=d.text) for d in CORPUS], embed_model=WordEmbedding()
    )
    with pytest.raises(RetrieverError) as caught:
        from_llama_index(built).search(QUERIES, 3)
    message = str(caught.value)
    assert "query 'q000'" in message
    assert "random UUID the framework generated, not a corpus id; store the corpus id in" in message
    named = VectorStoreIndex.from_documents(
        [Document(text=d.text, id_=d.id) for d in CORPUS], embed_model=WordEmbedding()
    )
    run = from_llama_index(named).search(QUERIES, 10)  # Document(id_=...): its ref_doc_id
    assert means(run) == pytest.approx(means(by_hand(CORPUS, QUERIES, 10)), abs=1e-12)


def test_metadata_ids_that_are_not_text_are_refused() -> None:
    for value in (1.0, ["d1"]):
        node = TextNode(id_="n1", text="w01", metadata={"id": value})
        index = VectorStoreIndex([node], embed_model=WordEmbedding())
        # "1.0" and "['d1']" were taken for ids no qrels judge.
        with pytest.raises(RetrieverError, match=r"query 'q'.* has id=.*, but a corpus id is text"):
            from_llama_index(index).search(Queries.from_dict({"q": "w01"}), 1)


def test_numpy_integer_ids_are_taken_and_empty_ones_named() -> None:
    import numpy as np

    class Numbered(BaseRetriever):
        def _retrieve(self, query_bundle: Any) -> list[NodeWithScore]:
            node = TextNode(id_="n1", text="w01", metadata={"id": np.int64(2)})
            return [NodeWithScore(node=node, score=0.5)]

    queries = Queries.from_dict({"q": "w01"})
    assert from_llama_index(Numbered()).search(queries, 1).ranking("q")[0][0] == "2"
    empty = TextNode(id_="n1", text="w01", metadata={"doc": ""})
    index = VectorStoreIndex([empty], embed_model=WordEmbedding())
    with pytest.raises(RetrieverError, match=r"has an empty id in its metadata \(doc=''\)"):
        from_llama_index(index, id_key="doc").search(queries, 1)


def test_chunks_of_a_document_get_advice_that_works() -> None:
    from llama_index.core.node_parser import SentenceSplitter

    from pytest_ragmetrics.retrievers import chunked

    documents = [Document(text=". ".join([d.text] * 40), id_=d.id) for d in CORPUS]
    splitter = SentenceSplitter(chunk_size=64, chunk_overlap=0)
    index = VectorStoreIndex.from_documents(
        documents, transformations=[splitter], embed_model=WordEmbedding()
    )
    with pytest.raises(RetrieverError) as caught:
        from_llama_index(index).search(QUERIES, 5)
    message = str(caught.value)
    assert "node.metadata['chunk_id'] = f'{node.ref_doc_id}#{n}'" in message
    assert "pass id_key='chunk_id'" in message and "chunked(retriever, '#'" in message
    # The advice followed: every chunk of a document repeats its text, so ranking documents
    # by their best chunk is ranking the documents themselves.
    nodes = splitter.get_nodes_from_documents(documents)
    for n, node in enumerate(nodes):
        node.metadata["chunk_id"] = f"{node.ref_doc_id}#{n}"
        node.excluded_embed_metadata_keys.append("chunk_id")
    index = VectorStoreIndex(nodes, embed_model=WordEmbedding())
    retriever = chunked(from_llama_index(index, id_key="chunk_id"), "#", corpus=CORPUS)
    run = retriever.search(QUERIES, 5)
    assert means(run) == pytest.approx(means(by_hand(CORPUS, QUERIES, 5)), abs=1e-9)
