"""Your own retriever, first class (issue 25 item 3): a function with a ``k`` parameter is told
k, ``cache=`` caches its runs (keyed by its code, the corpus, the queries and k), batched
functions work, and the short-ranking note knows whether the function was told k."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragmetrics import Corpus, Queries
from pytest_ragmetrics.cache import Cache, use_default_cache
from pytest_ragmetrics.errors import ReadOnlyOptionError
from pytest_ragmetrics.retrievers import from_function
from pytest_ragmetrics.retrievers.base import rankings_note
from tests.helpers.plugin_project import make_project

CORPUS = Corpus.from_dict({f"d{i}": {"text": f"document {i}"} for i in range(40)})
QUERIES = Queries.from_dict({"q1": "one", "q2": "two", "q3": "three"})
IDS = [f"d{i}" for i in range(40)]


def test_a_function_with_a_k_parameter_is_told_k() -> None:
    told: list[int] = []

    def search(text: str, k: int) -> list[str]:
        told.append(k)
        return IDS[:k]

    def keyword_k(text: str, *, k: int = 5) -> list[str]:
        told.append(k)
        return IDS[:k]

    def batched(texts: list[str], k: int) -> list[list[str]]:
        told.append(k)
        return [IDS[:k] for _ in texts]

    assert from_function(search).search(QUERIES, 7).depths().tolist() == [7, 7, 7]
    assert from_function(keyword_k).search(QUERIES, 4).depths().tolist() == [4, 4, 4]
    assert from_function(batched, batched=True).search(QUERIES, 6).depths().tolist() == [6] * 3
    assert told == [7, 7, 7, 4, 4, 4, 6]
    # Without a k parameter it is called with the text only, and cut at k.
    assert from_function(lambda text: IDS).search(QUERIES, 3).depths().tolist() == [3, 3, 3]
    assert from_function(search).identity()["takes_k"] is True
    assert from_function(lambda text: IDS).identity()["takes_k"] is False


class Calls:
    def __init__(self) -> None:
        self.count = 0


@pytest.mark.parametrize(
    ("ranking", "message"),
    [
        ([("d1", "0.9")], r"score '0\.9' \(str\) for document 'd1', query 'q1'"),
        ([("d1", True)], r"score True \(bool\) for document 'd1', query 'q1'"),
        ({"d1": b"1"}, r"score b'1' \(bytes\)"),
        ([("", 0.5)], r"doc id '' \(str\) for query 'q1'; doc ids must be non-empty"),
        (["  "], r"doc id '  '"),
    ],
    ids=["str-score", "bool-score", "bytes-score", "empty-id", "blank-id"],
)
def test_what_a_data_file_may_not_hold_a_function_may_not_return(
    ranking: object, message: str
) -> None:
    # float() takes "0.9" and True; a run file's reader refuses both, and an empty id.
    from pytest_ragmetrics import RetrieverError

    with pytest.raises(RetrieverError, match=message):
        from_function(lambda text: ranking).search(Queries.from_dict({"q1": "x"}), 5)


def test_cache_keeps_runs_keyed_by_code_corpus_queries_and_k(tmp_path: Path) -> None:
    calls = Calls()

    def search(text: str, k: int) -> list[tuple[str, float]]:
        calls.count += 1
        return [(d, 1.0 / (i + 1)) for i, d in enumerate(IDS[:k])]

    def edited(text: str, k: int) -> list[tuple[str, float]]:
        calls.count += 1
        return [(d, 1.0 / (i + 1)) for i, d in enumerate(IDS[1 : k + 1])]

    cache = Cache(tmp_path)
    first = from_function(search, corpus=CORPUS, cache=cache).search(QUERIES, 5)
    again = from_function(search, corpus=CORPUS, cache=cache).search(QUERIES, 5)
    assert calls.count == 3  # the second search read the cache
    assert again.to_dict() == first.to_dict()
    from_function(search, corpus=CORPUS, cache=cache).search(QUERIES, 6)  # another k
    assert calls.count == 6
    from_function(search, corpus=CORPUS, cache=cache).search(Queries.from_dict({"q1": "one"}), 5)
    assert calls.count == 7  # other queries
    other = Corpus.from_dict({**{d: {"text": "x"} for d in IDS}, "extra": {"text": "y"}})
    from_function(search, corpus=other, cache=cache).search(QUERIES, 5)
    assert calls.count == 10  # another corpus
    changed = from_function(edited, name="search", corpus=CORPUS, cache=cache).search(QUERIES, 5)
    assert calls.count == 13  # another body under the same name: not the cached run
    assert changed.ranking("q1")[0][0] == "d1"
    from_function(search, corpus=CORPUS, cache=cache, version="2").search(QUERIES, 5)
    assert calls.count == 16
    from_function(search, corpus=CORPUS).search(QUERIES, 5)  # no cache= : no caching
    assert calls.count == 19


def test_cache_true_uses_the_default_cache(tmp_path: Path) -> None:
    calls = Calls()

    def search(text: str) -> list[str]:
        calls.count += 1
        return IDS[:3]

    restore = use_default_cache(lambda: Cache(tmp_path))
    try:
        from_function(search, cache=True).search(QUERIES, 3)
        from_function(search, cache=True).search(QUERIES, 3)
    finally:
        restore()
    assert calls.count == 3
    assert list((tmp_path / "run").glob("*/manifest.json"))


def test_the_note_knows_whether_the_function_was_told_k() -> None:
    top10 = from_function(lambda text: IDS[:10], name="top10")
    run = top10.search(QUERIES, 30)
    note = rankings_note(run, ["q1", "q2", "q3"], 30, identity=top10.identity())
    assert note is not None
    assert "it takes no k parameter, so it was never told k (it returned at most 10" in note
    assert "add a k parameter" in note

    def told(text: str, k: int) -> list[str]:
        return IDS[:k]

    asked = from_function(told, name="told")
    run = asked.search(QUERIES, 30)
    assert rankings_note(run, ["q1", "q2", "q3"], 30, identity=asked.identity()) is None


CONFTEST = """
import pytest
from pytest_ragmetrics.retrievers import from_function

COUNT = "calls.txt"


def count():
    with open(COUNT, "a") as f:
        f.write("x")


def top3(text):
    count()
    return ["d1", "d2", "d3"]


def told(text, k):
    count()
    return ["d1", "d2", "d3", "d4", "d5"][:k]


@pytest.fixture(scope="session")
def rag_retriever(rag_corpus):
    return from_function(RETRIEVER, corpus=rag_corpus, cache=True)
"""
TESTS = """
def test_search(rag_eval, rag_run):
    rag_eval.retrieval(rag_run)
"""


def _run(pytester: pytest.Pytester, *args: str) -> dict[str, object]:
    result = pytester.runpytest("--ragmetrics-json=report.json", "-p", "no:randomly", *args)
    result.assert_outcomes(passed=1)
    (evaluation,) = json.loads((pytester.path / "report.json").read_text())["evaluations"]
    assert isinstance(evaluation, dict)
    return evaluation


def test_in_the_plugin_runs_are_cached_and_notes_fit(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini="ragmetrics_k = 10\n",
        tests=TESTS,
        conftest=CONFTEST.replace("RETRIEVER", "top3"),
    )
    calls = pytester.path / "calls.txt"
    first = _run(pytester)
    assert len(calls.read_text()) == 4  # one call per query
    notes = "\n".join(map(str, first["notes"]))  # type: ignore[call-overload]
    assert "it takes no k parameter, so it was never told k (it returned at most 3" in notes
    assert first["identity"]["retriever"]["code"]  # type: ignore[index]
    _run(pytester)
    assert len(calls.read_text()) == 4  # cache=True: the session's cache held the run
    _run(pytester, "--ragmetrics-no-cache")
    assert len(calls.read_text()) == 8  # no cache: searched again
    # Told k and returning as many documents as the corpus holds: no note at all.
    pytester.makeconftest(CONFTEST.replace("RETRIEVER", "told"))
    told = _run(pytester)
    short = [n for n in told["notes"] if "fewer than" in str(n) or "told" in str(n)]  # type: ignore[attr-defined]
    assert not short, short


def test_what_makes_the_identity_is_read_only(tmp_path: Path) -> None:
    def search(text: str) -> list[str]:
        return IDS[:3]

    retriever = from_function(search, corpus=CORPUS, version=1, cache=Cache(tmp_path))
    retriever.search(QUERIES, 3)
    before = retriever.identity()
    for option, value in (
        ("function", lambda text: IDS[3:6]),
        ("scores", "distance"),
        ("batched", True),
        ("version", 2),
        ("takes_k", True),
        ("parameters", {"x": 1}),
    ):
        with pytest.raises(ReadOnlyOptionError, match=rf"{option} cannot be set"):
            setattr(retriever, option, value)
    assert retriever.identity() == before
    assert retriever.search(QUERIES, 3).ranking("q1")[0][0] == "d0"
