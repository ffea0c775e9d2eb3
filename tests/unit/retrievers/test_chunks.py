"""Chunk retrievers evaluated against document qrels: MaxP aggregation, k after aggregation,
passage-level evaluation, chunk contexts for the answer layer."""

from __future__ import annotations

import warnings
from collections.abc import Callable

import pytest

from pytest_ragmetrics import Corpus, Qrels, Queries, RetrieverError
from pytest_ragmetrics.data.model import Run
from pytest_ragmetrics.errors import ConfigError, ReadOnlyOptionError, ShortRankingWarning
from pytest_ragmetrics.generation import RetrieveThenGenerate
from pytest_ragmetrics.metrics import evaluate
from pytest_ragmetrics.retrievers import ChunkedRetriever, chunked, from_function, max_passage

QUERIES = Queries.from_dict({"q1": "cats", "q2": "dogs"})


def ranked(pairs: dict[str, list[tuple[str, float]]]) -> Run:
    return Run.from_rankings(pairs)


class Counting:
    """A function retriever that records the k of every search."""

    def __init__(self, function: Callable[[str], list[tuple[str, float]]]) -> None:
        self.inner = from_function(function, name="counted")
        self.name = "counted"
        self.calls: list[int] = []

    def search(self, queries: Queries, k: int) -> Run:
        self.calls.append(k)
        return self.inner.search(queries, k)


def test_a_document_scores_its_best_chunk_and_ranks_where_it_first_appears() -> None:
    run = ranked({"q1": [("a#0", 0.9), ("b#3", 0.8), ("a#1", 0.7), ("c#0", 0.6), ("b#0", 0.1)]})
    docs = max_passage(run, "#")
    assert docs.ranking("q1") == [("a", 0.9), ("b", 0.8), ("c", 0.6)]


def test_the_document_id_is_before_the_last_separator() -> None:
    run = ranked({"q1": [("x#y#2", 2.0), ("x#1", 1.0)]})
    assert max_passage(run, "#").ranking("q1") == [("x#y", 2.0), ("x", 1.0)]


def test_a_function_maps_chunks_to_documents() -> None:
    run = ranked({"q1": [("p1-a", 3.0), ("p2-a", 2.0), ("p1-b", 1.0)]})
    docs = max_passage(run, lambda chunk: chunk.split("-")[1])
    assert docs.ranking("q1") == [("a", 3.0), ("b", 1.0)]


def test_tied_documents_are_ordered_as_trec_eval_orders_any_ties() -> None:
    # Both documents' best chunk scores 0.5: ties go by document id, descending, as in any Run.
    run = ranked({"q1": [("a#0", 0.5), ("b#0", 0.5), ("a#1", 0.4)]})
    assert max_passage(run, "#").ranking("q1") == [("b", 0.5), ("a", 0.5)]


def test_the_best_score_is_taken_even_where_float32_ties_hide_it() -> None:
    # Equal at float32 (so their canonical order is by chunk id: a#9 first), different at
    # float64; listed best first, as a retriever returns them (ascending is refused).
    low, high = 0.5, 0.5 + 1e-12
    run = ranked({"q1": [("a#1", high), ("a#9", low)]})
    assert max_passage(run, "#").ranking("q1") == [("a", high)]


def test_queries_keep_their_own_documents() -> None:
    run = ranked({"q1": [("a#0", 1.0)], "q2": [("a#1", 2.0), ("b#0", 1.0)]})
    docs = max_passage(run, "#")
    assert docs.ranking("q1") == [("a", 1.0)]
    assert docs.ranking("q2") == [("a", 2.0), ("b", 1.0)]


def test_a_chunk_id_without_the_separator_is_an_error_naming_it() -> None:
    with pytest.raises(RetrieverError, match=r"chunk id 'whole' has no document part"):
        max_passage(ranked({"q1": [("whole", 1.0)]}), "#")
    with pytest.raises(RetrieverError, match=r"returned None for chunk 'a#0'"):
        max_passage(ranked({"q1": [("a#0", 1.0)]}), lambda chunk: None)  # type: ignore[arg-type,return-value]
    with pytest.raises(ConfigError, match="separator must not be empty"):
        chunked(from_function(lambda t: []), "")


def many_chunks_of_one_document(text: str) -> list[tuple[str, float]]:
    # Ten chunks of "big" outrank everything, then one chunk each of d1..d5.
    big = [(f"big#{i}", 100.0 - i) for i in range(10)]
    return big + [(f"d{i}#0", 10.0 - i) for i in range(1, 6)]


def test_k_documents_come_back_even_when_one_document_has_many_top_chunks() -> None:
    inner = Counting(many_chunks_of_one_document)
    run = chunked(inner).search(QUERIES, 3)
    assert [d for d, _ in run.ranking("q1")] == ["big", "d1", "d2"]
    assert run.depths().tolist() == [3, 3]
    assert inner.calls == [9, 18]  # 3 * oversample, then twice that for the queries still short


def test_the_inner_retriever_running_out_stops_the_search() -> None:
    inner = Counting(lambda text: [("a#0", 2.0), ("a#1", 1.0)])
    run = chunked(inner).search(QUERIES, 5)
    assert run.ranking("q1") == [("a", 2.0)]
    assert inner.calls == [15]


def test_max_chunks_bounds_the_depth() -> None:
    inner = Counting(many_chunks_of_one_document)
    run = ChunkedRetriever(inner, max_chunks=12).search(QUERIES, 4)
    assert inner.calls == [12]
    assert [d for d, _ in run.ranking("q1")] == ["big", "d1", "d2"]


def test_document_qrels_score_the_aggregated_run_passage_qrels_the_chunks() -> None:
    inner = from_function(many_chunks_of_one_document)
    retriever = chunked(inner)
    doc_qrels = Qrels.from_dict({"q1": {"d1": 1}, "q2": {"big": 1}})
    docs = retriever.search(QUERIES, 2)
    result = evaluate(doc_qrels, docs, ["recall_at_2", "mrr"])
    assert [result.per_query[q]["mrr"] for q in ("q1", "q2")] == [0.5, 1.0]
    chunk_qrels = Qrels.from_dict({"q1": {"d1#0": 1}, "q2": {"big#1": 1}})
    chunks = retriever.search_chunks(QUERIES, 2)
    per_chunk = evaluate(chunk_qrels, chunks, ["recall_at_2"])
    assert [per_chunk.per_query[q]["recall_at_2"] for q in ("q1", "q2")] == [0.0, 1.0]


def test_the_document_corpus_checks_the_aggregated_ids() -> None:
    corpus = Corpus.from_dict({"big": "x", "d1": "y"})
    with pytest.raises(RetrieverError, match=r"document 'd2'"):
        chunked(from_function(many_chunks_of_one_document), corpus=corpus).search(QUERIES, 3)


def test_the_identity_names_the_inner_retriever_and_the_aggregation() -> None:
    identity = chunked(from_function(many_chunks_of_one_document, name="mine")).identity()
    assert identity["aggregation"] == "maxp" and identity["chunk_to_doc"] == "separator '#'"
    assert identity["inner"]["name"] == "mine"
    assert chunked(from_function(many_chunks_of_one_document), "|").identity() != identity


def test_what_makes_the_identity_is_read_only() -> None:
    retriever = chunked(from_function(many_chunks_of_one_document, name="mine"), "#")
    before = retriever.identity()
    for option, value in (
        ("chunk_to_doc", "|"),
        ("oversample", 1),
        ("max_chunks", 2),
        ("inner", from_function(many_chunks_of_one_document, name="other")),
        ("name", "renamed"),
    ):
        with pytest.raises(ReadOnlyOptionError, match=rf"{option} cannot be set"):
            setattr(retriever, option, value)
    with pytest.raises(ReadOnlyOptionError, match="function cannot be set"):
        retriever.inner.function = lambda text: []
    assert retriever.identity() == before


def test_a_mostly_empty_run_is_warned_about_once() -> None:
    # It was warned about twice, or three times: by the inner retriever, for the chunk run,
    # and for the document run.
    def cats_only(text: str) -> list[tuple[str, float]]:
        return [("a#0", 1.0), ("a#1", 0.5)] if text == "cats" else []

    queries = Queries.from_dict({"q1": "cats", "q2": "dogs", "q3": "birds"})
    retriever = chunked(from_function(cats_only, name="inner"), "#")
    for search in (retriever.search, retriever.search_chunks):
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            search(queries, 3)
        shown = [str(w.message) for w in caught if w.category is ShortRankingWarning]
        assert len(shown) == 1, shown
        assert shown[0].startswith("retriever 'inner (MaxP)' returned nothing for 2 of 3 queries")


def test_the_answer_layer_gets_chunks_not_documents() -> None:
    passages = Corpus.from_dict(
        {"a#0": "cats purr", "a#1": "cats sleep all day long", "b#0": "dogs bark"}
    )
    documents = Corpus.from_dict({"a": "cats purr. " * 50, "b": "dogs bark. " * 50})

    def search(text: str) -> list[tuple[str, float]]:
        return [("a#1", 2.0), ("a#0", 1.5), ("b#0", 1.0)]

    retriever = chunked(from_function(search), corpus=documents, passages=passages)
    seen: list[list[str]] = []

    def generate(query: str, contexts: list[str]) -> str:
        seen.append(contexts)
        return "answer"

    pipeline = RetrieveThenGenerate(retriever, documents, generate, top_n=2, max_context_chars=10)
    answer, contexts = pipeline("why do cats purr")
    assert answer == "answer"
    assert contexts == ["cats sleep", "cats purr"]  # two chunks of "a", cut at 10 characters
    assert pipeline.contexts_for({"q": "x"})["q"][0][0] == "a#1"


def test_chunk_contexts_need_the_chunk_corpus() -> None:
    retriever = chunked(from_function(many_chunks_of_one_document))
    with pytest.raises(ConfigError, match=r"passages=<the chunk corpus>"):
        retriever.passages_for(QUERIES, 2)


PARTS = {"sep": "#"}


def doc_of(chunk_id: str) -> str:
    return chunk_id.split(PARTS["sep"])[0]


def test_a_chunk_to_doc_function_is_identified_by_its_code_and_values() -> None:
    """It was identified by its name only: a mapping edited in place (or the function's code)
    kept the identity, so a run cached under the old mapping was served for the new one."""
    retriever = chunked(from_function(many_chunks_of_one_document, name="mine"), doc_of)
    before = retriever.identity()["chunk_to_doc"]
    assert before["function"].endswith("doc_of") and before["code"]
    PARTS["sep"] = "|"
    try:
        assert retriever.identity()["chunk_to_doc"] != before
    finally:
        PARTS["sep"] = "#"
    assert retriever.identity()["chunk_to_doc"] == before


def test_a_memo_the_chunk_to_doc_function_fills_keeps_its_identity() -> None:
    seen: dict[str, str] = {}

    def memoised(chunk_id: str) -> str:
        if chunk_id not in seen:
            seen[chunk_id] = chunk_id.split("#")[0]
        return seen[chunk_id]

    retriever = chunked(from_function(many_chunks_of_one_document, name="mine"), memoised)
    before = retriever.identity()
    retriever.search(QUERIES, 2)
    assert seen and retriever.identity() == before
