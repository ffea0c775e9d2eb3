"""The Retriever protocol, the function adapter, run validation, the factory, lazy imports."""

from __future__ import annotations

import json
import subprocess
import sys
from typing import Any

import pytest

from pytest_ragmetrics import Corpus, Queries, RetrieverError
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.retrievers import (
    BM25Retriever,
    CallableRetriever,
    Retriever,
    ShortRankingWarning,
    build_retriever,
    from_function,
    short_rankings,
)

CORPUS = Corpus.from_dict(
    {
        "d1": {"title": "Cats", "text": "Cats purr and sleep."},
        "d2": {"title": "Dogs", "text": "Dogs bark at the mail carrier."},
        "d3": {"title": "Fish", "text": "Fish swim in water."},
    }
)
QUERIES = Queries.from_dict({"q1": "purring cats", "q2": "barking dogs"})


def test_ids_only_function_becomes_a_ranked_run() -> None:
    retriever = from_function(lambda text: ["d1", "d2"] if "cats" in text else ["d2", "d3"])
    run = retriever.search(QUERIES, 2)
    assert [doc for doc, _ in run.ranking("q1")] == ["d1", "d2"]
    assert [doc for doc, _ in run.ranking("q2")] == ["d2", "d3"]
    assert isinstance(retriever, Retriever)


def test_scored_pairs_are_ranked_by_score_and_cut_at_k() -> None:
    def search(text: str) -> list[tuple[str, float]]:
        return [("d3", 0.1), ("d1", 0.9), ("d2", 0.5)]

    run = from_function(search, name="prod").search(QUERIES, 2)
    assert run.ranking("q1") == [("d1", 0.9), ("d2", 0.5)]
    assert run.depths().tolist() == [2, 2]


def test_dict_results_are_accepted() -> None:
    run = from_function(lambda text: {"d2": 2.0, "d1": 1.0}).search(QUERIES, 2)
    assert [d for d, _ in run.ranking("q2")] == ["d2", "d1"]


def test_batched_function_gets_all_texts_at_once() -> None:
    seen: list[list[str]] = []

    def batch(texts: list[str]) -> list[list[str]]:
        seen.append(texts)
        return [["d1", "d2"], ["d2", "d1"]]

    run = from_function(batch, batched=True).search(QUERIES, 2)
    assert seen == [["purring cats", "barking dogs"]]
    assert run.ranking("q2")[0][0] == "d2"


def test_identity_names_the_function_and_parameters() -> None:
    def my_search(text: str) -> list[str]:
        return ["d1"]

    identity = from_function(my_search, parameters={"index": "v3"}).identity()
    assert identity["kind"] == "callable"
    assert identity["name"].endswith("my_search")
    assert identity["function"].endswith("my_search")
    assert identity["parameters"] == {"index": "v3"}
    json.dumps(identity)


def test_unknown_doc_id_is_an_error_naming_the_query() -> None:
    retriever = from_function(
        lambda text: ["d1", "ghost"] if "dogs" in text else ["d1", "d2"],
        corpus=CORPUS,
        name="prod",
    )
    with pytest.raises(RetrieverError, match=r"'prod'.*'ghost'.*query 'q2'.*corpus has no"):
        retriever.search(QUERIES, 2)


def test_unknown_doc_ids_are_allowed_without_a_corpus() -> None:
    run = from_function(lambda text: ["ghost", "d1"]).search(QUERIES, 2)
    assert run.ranking("q1")[0][0] == "ghost"


def test_duplicate_doc_id_is_an_error_naming_the_query() -> None:
    retriever = from_function(lambda text: ["d1", "d2", "d1"], name="prod")
    with pytest.raises(RetrieverError, match=r"'prod'.*'d1' twice for query 'q1'"):
        retriever.search(QUERIES, 3)


def test_fewer_than_k_is_summarised_not_warned() -> None:
    retriever = from_function(lambda text: ["d1"] if "cats" in text else ["d1", "d2", "d3"])
    run = retriever.search(QUERIES, 3)  # filterwarnings=error would fail on a warning
    assert run.depths().tolist() == [1, 3]
    found = short_rankings(run, QUERIES.query_ids, 3, retriever="r")
    assert found is not None and (found.short, found.empty, found.shortest) == (1, 0, 1)
    assert found.note().startswith("retriever 'r' returned fewer than 3 documents for 1 of 2")
    assert short_rankings(run, ["q2"], 3, retriever="r") is None
    assert short_rankings(run, QUERIES.query_ids, 3, retriever="r", corpus_size=1) is None


def test_nothing_for_half_the_queries_is_not_a_warning() -> None:
    retriever = from_function(lambda text: [] if "dogs" in text else ["d1", "d2"])
    run = retriever.search(QUERIES, 2)
    assert run.ranking("q2") == []
    found = short_rankings(run, QUERIES.query_ids, 2, retriever="r")
    assert found is not None and not found.mostly_empty and found.empty_examples == ("q2",)


def test_nothing_at_all_warns() -> None:
    with pytest.warns(ShortRankingWarning, match="nothing for 2 of 2 queries"):
        run = from_function(lambda text: []).search(QUERIES, 5)
    assert run.num_entries == 0


def test_short_runs_do_not_warn_when_the_corpus_is_smaller_than_k() -> None:
    retriever = from_function(lambda text: ["d1", "d2", "d3"], corpus=CORPUS)
    run = retriever.search(QUERIES, 100)  # filterwarnings=error would fail on a warning
    assert run.depths().tolist() == [3, 3]


@pytest.mark.parametrize(
    ("result", "message"),
    [
        ("d1", "returned str for query 'q1'"),
        (None, "returned NoneType for query 'q1'"),
        ([("d1",)], r"position 0 for query 'q1'"),
        ([("d1", "high")], r"score 'high' \(str\) for document 'd1', query 'q1'"),
        ([("d1", float("nan"))], r"score nan.*must be finite"),
        # Beyond a float's range: float() raised OverflowError out of our code.
        ([("d1", 10**400)], r"integer score too large for a float for document 'd1', query"),
        ([("d1", -(10**5000))], r"integer score too large for a float for document 'd1'"),
        ([(1, 0.5)], r"doc id 1 \(int\) for query 'q1'"),
    ],
)
def test_malformed_results_are_errors_naming_the_query(result: Any, message: str) -> None:
    with pytest.raises(RetrieverError, match=message):
        from_function(lambda text: result).search(QUERIES, 2)


def test_exception_in_the_function_is_wrapped_with_the_query() -> None:
    def broken(text: str) -> list[str]:
        raise KeyError("index offline")

    with pytest.raises(RetrieverError, match=r"raised KeyError for query 'q1'.*index offline"):
        from_function(broken, name="prod").search(QUERIES, 2)


def test_batched_wrong_length_is_an_error() -> None:
    retriever = from_function(lambda texts: [["d1"]], batched=True)
    with pytest.raises(RetrieverError, match="returned 1 rankings for 2 queries"):
        retriever.search(QUERIES, 1)


@pytest.mark.parametrize("k", [0, -1, 2.5, True, "10"])
def test_bad_k_is_a_config_error(k: Any) -> None:
    with pytest.raises(ConfigError, match="k must be a positive integer"):
        from_function(lambda text: ["d1"]).search(QUERIES, k)


def test_not_callable_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="needs a callable"):
        CallableRetriever("search")  # type: ignore[arg-type]


def test_factory_builds_bm25_and_rejects_unknowns() -> None:
    retriever = build_retriever("bm25", CORPUS, k1=1.2)
    assert isinstance(retriever, BM25Retriever)
    assert retriever.identity()["k1"] == 1.2
    with pytest.raises(ConfigError, match=r"unknown retriever 'sparse'.*dense, bm25"):
        build_retriever("sparse", CORPUS)
    with pytest.raises(ConfigError, match=r"unknown option\(s\) kk1.*valid options:.*k1"):
        build_retriever("bm25", CORPUS, kk1=1.2)
    with pytest.raises(ConfigError, match="without rerank_model"):
        build_retriever("bm25", CORPUS, rerank_k=10)


HEAVY = ("torch", "sentence_transformers", "faiss", "bm25s", "Stemmer", "transformers", "scipy")


def _modules_after(code: str) -> set[str]:
    out = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport sys, json; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return {name.split(".")[0] for name in json.loads(out.splitlines()[-1])}


@pytest.mark.parametrize(
    "code",
    [
        "import pytest_ragmetrics.retrievers",
        "import pytest_ragmetrics.retrievers.dense, pytest_ragmetrics.retrievers.bm25, "
        "pytest_ragmetrics.retrievers.rerank",
        # Building the objects must not load anything heavy either: models load on first use.
        "from pytest_ragmetrics import Corpus\n"
        "from pytest_ragmetrics.retrievers import build_retriever\n"
        "c = Corpus.from_dict({'a': 'x'})\n"
        "build_retriever('bm25', c); build_retriever('dense', c).identity()",
    ],
)
def test_heavy_libraries_are_not_imported(code: str) -> None:
    loaded = _modules_after(code)
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))
