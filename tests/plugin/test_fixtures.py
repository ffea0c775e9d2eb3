"""Fixtures: dataset, retriever, run, rag_eval, judged rankings and per-query tests."""

from __future__ import annotations

import json
import textwrap

import pytest

from tests.helpers.plugin_project import XDIST_MODES, make_project, marked_test_error


def test_dataset_fixtures(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        def test_fixtures(rag_dataset, rag_corpus, rag_queries, rag_qrels):
            assert len(rag_corpus) == 5
            assert list(rag_queries) == ["q1", "q2", "q3", "q4"]
            assert rag_qrels.judgments("q3") == {"d3": 1, "d4": 0}
            assert rag_dataset.split == "test"
            assert rag_dataset.corpus is rag_corpus
    """,
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_default_retriever_explains_how_to_override(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        conftest="",
        tests="""
        def test_run(rag_run):
            pass
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*rag_retriever is not configured. Override it in your conftest.py:*",
            "*def rag_retriever(rag_corpus):*",
            "*ragmetrics_retriever = dense (or bm25)*",
        ]
    )


def test_rag_run_is_computed_once_per_session(pytester: pytest.Pytester) -> None:
    conftest = """
        import pytest
        from pytest_ragmetrics import Run

        CALLS = []

        class Counting:
            def identity(self):
                return {"name": "counting"}

            def search(self, queries, k):
                CALLS.append(k)
                return Run.from_rankings({q: ["d1"] for q in queries})

        @pytest.fixture(scope="session")
        def rag_retriever():
            return Counting()

        def pytest_sessionfinish(session):
            print(f"SEARCHES={len(CALLS)}")
    """
    make_project(
        pytester,
        conftest=conftest,
        tests="""
        def test_a(rag_run): pass
        def test_b(rag_run): pass
        def test_c(rag_query): pass
    """,
    )
    result = pytester.runpytest("-s")
    result.assert_outcomes(passed=6)
    result.stdout.fnmatch_lines(["*SEARCHES=1*"])


def test_rag_eval_returns_the_evaluation_and_records_it(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        from pytest_ragmetrics import Qrels

        def test_it(rag_eval, rag_run):
            evaluation = rag_eval.retrieval(rag_run, metrics=["precision_at_2"])
            assert evaluation.mean["recall_at_1"] == 1.0
            assert evaluation.mean["precision_at_2"] == 0.5
            assert evaluation.per_query["q3"]["mrr"] == 1.0
            custom = rag_eval.retrieval(rag_run, qrels={"q1": {"d2": 1}}, name="custom")
            assert custom.mean["mrr"] == 0.5
            assert len(rag_eval.recorded) == 2
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_it [[]custom[]]*", "*test_it [[]retrieval[]]*"])


def test_duplicate_evaluation_name_is_an_error(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        def test_it(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
            rag_eval.retrieval(rag_run)
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*an evaluation named 'retrieval' was already recorded in "
            "this test; pass a distinct name=...*"
        ]
    )


def test_judged_rankings_fixture_reproduces_the_seed_example(pytester: pytest.Pytester) -> None:
    line = {
        "query_id": "seed",
        "ranking": ["chunk-7", "chunk-3", "chunk-9", "chunk-1", "chunk-5"],
        "grades": {"chunk-1": 0, "chunk-3": 3, "chunk-5": 2, "chunk-7": 0, "chunk-9": 1},
    }
    make_project(
        pytester,
        ini='ragmetrics_judged_rankings = "judged.jsonl"\nragmetrics_gain = "exponential"\n',
        tests="""
        def test_seed(rag_eval, judged_rankings):
            e = rag_eval.retrieval(judged_rankings,
                                   metrics=["precision_at_3", "recall_at_3", "ndcg_at_3"])
            assert round(e.mean["precision_at_3"], 3) == 0.667
            assert round(e.mean["recall_at_3"], 3) == 0.667
            assert round(e.mean["mrr"], 3) == 0.5
            assert round(e.mean["ndcg_at_3"], 3) == 0.523
    """,
    )
    (pytester.path / "judged.jsonl").write_text(json.dumps(line) + "\n")
    pytester.runpytest().assert_outcomes(passed=1)


def test_judged_rankings_scored_with_other_qrels_are_not_comparable(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # qrels= replaced the rankings' own grades, but the record kept their fingerprint: new
    # labels on the same rankings read as "regressed ... rank 1 -> 3", a system change.
    make_project(
        pytester,
        tests="""
        import os
        from pytest_ragmetrics import JudgedRankings

        RANKINGS = {f"q{i}": [f"d{i}a", f"d{i}b", f"d{i}c"] for i in range(4)}
        OWN = {f"q{i}": {f"d{i}a": 1} for i in range(4)}

        def test_judged(rag_eval):
            doc = os.environ.get("RELEVANT", "a")
            qrels = {f"q{i}": {f"d{i}{doc}": 1} for i in range(4)}
            rag_eval.retrieval(JudgedRankings.from_dict(RANKINGS, OWN), qrels=qrels)
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    pytester.runpytest().assert_outcomes(passed=1)
    monkeypatch.setenv("RELEVANT", "c")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*is not comparable with its baseline*", "*qrels: contents differ*"]
    )
    assert "regressed" not in result.stdout.str()


def test_metrics_deeper_than_k_are_said(pytester: pytest.Pytester) -> None:
    # recall_at_1000 of a k = 3 run is recall at 3: it was shown under its name without a word.
    make_project(
        pytester,
        ini='ragmetrics_k = "3"\nragmetrics_metrics = "mrr ndcg_at_3 recall_at_1000 ndcg_at_10"\n',
        tests="""
        def test_it(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*recall_at_1000, ndcg_at_10: the retriever was asked for k = 3 documents per query, "
            "so these are computed over those 3; raise ragmetrics_k to 1000 to measure them*"
        ]
    )
    assert "ndcg_at_3, " not in result.stdout.str() and "mrr, " not in result.stdout.str()


def test_judged_rankings_unconfigured_or_broken(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        def test_seed(judged_rankings):
            pass
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*set ragmetrics_judged_rankings = path/to/file.jsonl*"])
    (pytester.path / "judged.jsonl").write_text('{"query_id": "q", "ranking": "d1"}\n')
    result = pytester.runpytest("--ragmetrics-judged-rankings=judged.jsonl")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*judged.jsonl:1: 'ranking' must be a list of document ids*"])


@pytest.mark.parametrize("mode", XDIST_MODES)
def test_rag_query_parametrizes_over_query_ids(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_project(
        pytester,
        tests="""
        def test_query(rag_query):
            best = max(rag_query.relevant, key=rag_query.relevant.get)
            assert rag_query.rank_of(best) == 1, rag_query.id
            assert rag_query.metrics["recall_at_1"] == 1.0
            assert rag_query.ranking[0][0] == best
            assert rag_query.text.startswith("which animal")
            assert rag_query.rank_of("nope") is None
    """,
    )
    result = pytester.runpytest_subprocess("-v", *mode)
    result.assert_outcomes(passed=4)
    assert "test_query[q1]" in result.stdout.str()
    assert "test_query[q4]" in result.stdout.str()


def test_rag_query_with_k_selection_and_marker(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        def test_all(rag_query):
            pass

        @pytest.mark.rag_queries("q2", "q4")
        def test_some(rag_query):
            assert rag_query.id in ("q2", "q4")
    """,
    )
    result = pytester.runpytest("-v", "-k", "q3 or test_some")
    result.assert_outcomes(passed=3, deselected=3)
    result.stdout.fnmatch_lines(["*test_all[[]q3[]]*PASSED*"])


@pytest.mark.parametrize(
    ("marker", "signature", "message"),
    [
        ("rag_queries('q9')", "rag_query", "rag_queries: query ids not in the dataset: q9"),
        # These ran every query: the marker was ignored, or an empty list widened the test.
        ("rag_queries('q1')", "rag_eval, rag_run", "does not use rag_query"),
        ("rag_queries()", "rag_query", "rag_queries() names no query"),
        ("rag_queries(*[])", "rag_query", "rag_queries() names no query"),
    ],
    ids=["unknown-id", "without-rag-query", "empty", "empty-list"],
)
def test_a_rag_queries_marker_that_selects_no_known_query_is_a_collection_error(
    pytester: pytest.Pytester, marker: str, signature: str, message: str
) -> None:
    marked_test_error(pytester, marker, f"def test_some({signature}):\n    pass\n", message)


def test_rag_eval_in_a_rag_query_test_evaluates_that_query(pytester: pytest.Pytester) -> None:
    """rag_eval.retrieval(rag_run) recorded the mean over every query under each query's
    test, so its rag_threshold passed on other queries' values."""
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.fixture
        def rag_run():  # the relevant document first for q1 and q2, second for q3 and q4
            first = {"q1": "d1", "q2": "d2", "q3": "d4", "q4": "d1"}
            second = {"q1": "d2", "q2": "d1", "q3": "d3", "q4": "d5"}
            return {q: {first[q]: 2.0, second[q]: 1.0} for q in first}

        # The mean over the four queries is 0.5: every instance passed.
        @pytest.mark.rag_threshold(recall_at_1=0.4)
        def test_each(rag_eval, rag_query, rag_run):
            evaluation = rag_eval.retrieval(rag_run)
            assert list(evaluation.query_ids) == [rag_query.id]
            assert evaluation.mean["recall_at_1"] == rag_query.metrics["recall_at_1"]
    """,
    )
    result = pytester.runpytest("-v", "--ragmetrics-json=r.json")
    result.assert_outcomes(passed=2, failed=2)
    for line in ("*test_each[[]q1[]] PASSED*", "*test_each[[]q3[]] FAILED*"):
        result.stdout.fnmatch_lines([line])  # each alone: the order of instances may vary
    report = json.loads((pytester.path / "r.json").read_text())
    assert [e["num_queries"] for e in report["evaluations"]] == [1, 1, 1, 1]


def rag_run_error(pytester: pytest.Pytester, retriever: str) -> pytest.RunResult:
    """The run of a test using rag_run, with rag_retriever an instance of the class
    ``retriever`` defines (named ``Retriever``); it must end in one error."""
    conftest = (
        "import pytest\nfrom pytest_ragmetrics import Run\n\n"
        + textwrap.dedent(retriever)
        + "\n\n@pytest.fixture(scope='session')\ndef rag_retriever():\n    return Retriever()\n"
    )
    make_project(pytester, conftest=conftest, tests="def test_it(rag_run):\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert "Traceback" not in result.stdout.str()
    return result


def test_failing_retriever_error_is_shown_cleanly(pytester: pytest.Pytester) -> None:
    result = rag_run_error(
        pytester,
        """
        class Retriever:
            def search(self, queries, k):
                return Run.from_dict({"q1": {"d1": float("nan")}})
        """,
    )
    result.stdout.fnmatch_lines(
        ["*score nan of document 'd1' for query 'q1' is not a finite number*"]
    )


def test_a_retriever_that_ignores_k_is_cut_to_k(pytester: pytest.Pytester) -> None:
    # It returns every document; with k = 2 recall_at_5 was read at depth 5 (1.0, where the
    # top 2 hold no relevant document for q1: 0.75 over the four queries).
    conftest = """
        import pytest

        ORDER = ["d2", "d3", "d1", "d4", "d5"]

        class Everything:
            def search(self, queries, k):
                return {q: {d: 5.0 - i for i, d in enumerate(ORDER)} for q in queries}

        @pytest.fixture(scope="session")
        def rag_retriever():
            return Everything()
    """
    tests = """
        def test_it(rag_eval, rag_run):
            assert rag_run.k == 2 and rag_run.depths().tolist() == [2, 2, 2, 2]
            e = rag_eval.retrieval(rag_run, metrics=["recall_at_5"])
            assert e.mean["recall_at_5"] == 0.5  # q2 (d2) and q3 (d3, grade 1) only
    """
    make_project(pytester, conftest=conftest, tests=tests, ini='ragmetrics_k = "2"\n')
    pytester.runpytest().assert_outcomes(passed=1)


def test_a_document_id_outside_the_corpus_is_an_error(pytester: pytest.Pytester) -> None:
    # A framework's generated ids (uuids) read as 0.0 on every metric, with a note only.
    result = rag_run_error(
        pytester,
        """
        class Retriever:
            def search(self, queries, k):
                return {q: {"d1": 2.0, "5f0c-uuid": 1.0} for q in queries}

            def __repr__(self):
                return "Generated()"
        """,
    )
    result.stdout.fnmatch_lines(
        [
            "*retriever Generated() returned document '5f0c-uuid' for query 'q1', but the "
            "corpus of dataset 'data' has no such document (1 unknown ids in all); return ids "
            "from the corpus (not a framework's generated ids*"
        ]
    )


def test_builtin_dense_retriever_encodes_once_under_xdist(pytester: pytest.Pytester) -> None:
    """Two workers need the same corpus embeddings: one encodes, the other waits and reads."""
    pytest.importorskip("sentence_transformers")
    make_project(
        pytester,
        ini='ragmetrics_retriever = "dense"\nragmetrics_k = "3"\n',
        conftest="",
        tests="""
        import pytest

        @pytest.mark.parametrize("name", ["a", "b", "c", "d"])
        def test_run(rag_eval, rag_run, name):
            rag_eval.retrieval(rag_run, name=name)
    """,
    )
    result = pytester.runpytest_subprocess("-n", "2", "--ragmetrics-json=report.json")
    result.assert_outcomes(passed=4)
    from pytest_ragmetrics import load_dataset
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.retrievers import DenseRetriever

    corpus = load_dataset(pytester.path / "data").corpus
    key = DenseRetriever(corpus).embedding_key()
    assert Cache(pytester.path / ".ragmetrics" / "cache").computations("embeddings", key) == 1
    report = json.loads((pytester.path / "report.json").read_text())
    identity = report["evaluations"][0]["identity"]["retriever"]
    assert identity["kind"] == "dense" and identity["model"] == "all-MiniLM-L6-v2"
    # A warm serial rerun computes nothing new.
    pytester.runpytest_subprocess("-p", "no:xdist").assert_outcomes(passed=4)
    assert Cache(pytester.path / ".ragmetrics" / "cache").computations("embeddings", key) == 1


def test_cache_flags_with_the_builtin_bm25(pytester: pytest.Pytester) -> None:
    """The cache is reused across sessions; --ragmetrics-no-cache bypasses it; clear empties it."""
    pytest.importorskip("bm25s")
    make_project(
        pytester,
        ini='ragmetrics_retriever = "bm25"\n',
        conftest="",
        tests="def test_run(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run)\n",
    )
    cache = pytester.path / ".ragmetrics" / "cache"
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    entries = sorted(p.relative_to(cache) for p in cache.rglob("manifest.json"))
    assert entries
    pytester.runpytest_subprocess().assert_outcomes(passed=1)
    assert sorted(p.relative_to(cache) for p in cache.rglob("manifest.json")) == entries
    logs = "".join(p.read_text() for p in cache.rglob("computed.log"))
    assert len(logs.splitlines()) == len(entries)  # the second session computed nothing
    no_cache = pytester.path / "other-cache"
    pytester.runpytest_subprocess(
        f"--ragmetrics-cache-dir={no_cache}", "--ragmetrics-no-cache"
    ).assert_outcomes(passed=1)
    assert not no_cache.exists()
    cleared = pytester.runpytest_subprocess("--ragmetrics-clear-cache")
    cleared.assert_outcomes(passed=1)
    cleared.stdout.fnmatch_lines([f"ragmetrics: cleared {len(entries)} cache entries (*) in *"])
