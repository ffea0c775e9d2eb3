"""Gaps between a run and its baseline are never silent (RELIABILITY.md).

What a run cannot see is never taken for gone ("When a baseline entry is removed"): a
collection error inside a file removes none of its baseline entries as stale, serially and
under xdist, and the run says why it kept them. A metric the run computes that the baseline
entry lacks is listed as not compared, and ragmetrics_strict (and ``compare --strict``) fails it.
"""

from __future__ import annotations

import json

import pytest

from pytest_ragmetrics.cli import main
from tests.helpers.plugin_project import make_project

# test_top, and a class whose tests break at collection when RAG_BROKEN says how.
TESTS = """
    import os

    import pytest

    BROKEN = os.environ.get("RAG_BROKEN", "")


    def test_top(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="top")


    class TestCuts:
        if BROKEN == "marker":
            pytestmark = pytest.mark.rag_threshold(ndcg_at_10=1.5)  # a bound outside [0, 1]

        @pytest.mark.parametrize("cutt" if BROKEN == "param" else "cut", [1, 2])
        def test_cut(self, rag_eval, rag_run, cut):
            rag_eval.retrieval(rag_run.truncate(cut), name="cut")

        def test_query(self, rag_eval, rag_run, rag_query):
            rag_eval.retrieval(rag_run, name="query")
"""

KINDS = ["marker", "param", "data"]
MODES = [[], ["-n", "2"]]


def _blessed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> bytes:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    monkeypatch.delenv("RAG_BROKEN", raising=False)
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=7)
    return (pytester.path / ".ragmetrics" / "baseline.json").read_bytes()


def _break(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    if kind == "data":  # a truncated last line: the rag_query tests cannot be parametrized
        with open(pytester.path / "data" / "queries.jsonl", "a") as queries:
            queries.write('{"_id": "q9", "text": ')
    else:
        monkeypatch.setenv("RAG_BROKEN", kind)


@pytest.mark.parametrize("extra", MODES, ids=["serial", "xdist"])
@pytest.mark.parametrize("kind", KINDS)
def test_a_collection_error_removes_no_entry(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str, extra: list[str]
) -> None:
    before = _blessed(pytester, monkeypatch)
    _break(pytester, monkeypatch, kind)

    result = pytester.runpytest("--ragmetrics-update-baseline", *extra)

    assert result.ret != 0
    assert (pytester.path / ".ragmetrics" / "baseline.json").read_bytes() == before
    result.stdout.fnmatch_lines(
        ["*ragmetrics baseline *: 0 updated, 0 added, 0 removed*", "*stale entries kept: *"]
    )
    result.stdout.fnmatch_lines(["*stale entries kept: collection errors*"])
    assert "no longer exist" not in result.stdout.str()


@pytest.mark.parametrize("extra", MODES, ids=["serial", "xdist"])
@pytest.mark.parametrize("kind", ["marker", "data"])
def test_a_collection_error_calls_no_test_gone(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str, extra: list[str]
) -> None:
    before = _blessed(pytester, monkeypatch)
    _break(pytester, monkeypatch, kind)

    result = pytester.runpytest(*extra)

    assert result.ret != 0
    assert (pytester.path / ".ragmetrics" / "baseline.json").read_bytes() == before
    assert "no longer exist" not in result.stdout.str()
    result.stdout.fnmatch_lines(["*stale entries not checked: collection errors*"])


def test_a_whole_collection_still_removes_stale_entries(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The guard is for faults only: a test that is really gone still goes."""
    _blessed(pytester, monkeypatch)
    test_file = pytester.path / "test_rag.py"
    test_file.write_text(test_file.read_text().replace("def test_top", "def test_renamed"))

    result = pytester.runpytest("--ragmetrics-update-baseline")

    result.stdout.fnmatch_lines(["*1 added, 1 removed*"])
    assert "stale entries kept" not in result.stdout.str()


def test_a_run_stopped_by_x_removes_no_entry(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """-x stops the run: what it did not reach says nothing about which tests are gone."""
    before = _blessed(pytester, monkeypatch)
    test_file = pytester.path / "test_rag.py"
    text = test_file.read_text().replace("def test_top", "def test_renamed")
    test_file.write_text("def test_fails():\n    assert False\n\n" + text)

    result = pytester.runpytest("--ragmetrics-update-baseline", "-x")

    assert (pytester.path / ".ragmetrics" / "baseline.json").read_bytes() == before
    result.stdout.fnmatch_lines(["*0 removed*", "*stale entries kept: run stopped early*"])
    assert "no longer exist" not in result.stdout.str()


# -- metrics the baseline entry lacks -----------------------------------------------------------

ONE_TEST = """
    def test_search(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""
MORE_METRICS = "--ragmetrics-metrics=recall_at_1 mrr ndcg_at_10"


def _blessed_with_one_metric(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=ONE_TEST, ini='ragmetrics_metrics = "recall_at_1"\n')
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)


def test_a_metric_added_since_the_baseline_fails_strict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _blessed_with_one_metric(pytester, monkeypatch)
    monkeypatch.setenv("RAG_WORSE", "1")  # the new metrics collapse; recall_at_1 too

    result = pytester.runpytest(MORE_METRICS, "--ragmetrics-strict", "--ragmetrics-json=r.json")

    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*2 metrics not in its baseline entry*not compared: mrr, ndcg_at_10*strict is on*",
            "ragmetrics: not compared: 2 metrics not in the baseline *: ragmetrics_strict fails*",
            "  test_rag.py::test_search [[]toy[]]: mrr, ndcg_at_10",
        ]
    )
    report = json.loads((pytester.path / "r.json").read_text())
    verdict = report["evaluations"][0]["outcome"]["baseline"]
    assert verdict["metrics_not_in_baseline"] == ["mrr", "ndcg_at_10"]


def test_a_metric_added_since_the_baseline_is_said_without_strict(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    _blessed_with_one_metric(pytester, monkeypatch)

    result = pytester.runpytest(MORE_METRICS, "--ragmetrics-json=after.json")

    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: not compared: 2 metrics not in the baseline .ragmetrics/baseline.json "
            "(added since it was blessed): not gated until the next "
            "--ragmetrics-update-baseline:",
            "  test_rag.py::test_search [[]toy[]]: mrr, ndcg_at_10",
        ]
    )
    # An update blesses them: then they are compared, and nothing is left to say.
    pytester.runpytest(MORE_METRICS, "--ragmetrics-update-baseline").assert_outcomes(passed=1)
    again = pytester.runpytest(MORE_METRICS, "--ragmetrics-strict")
    again.assert_outcomes(passed=1)
    assert "not compared" not in again.stdout.str()


def test_compare_strict_fails_a_metric_the_baseline_lacks(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    _blessed_with_one_metric(pytester, monkeypatch)
    pytester.runpytest(MORE_METRICS, "--ragmetrics-json=after.json").assert_outcomes(passed=1)
    capsys.readouterr()
    baseline = str(pytester.path / ".ragmetrics" / "baseline.json")
    after = str(pytester.path / "after.json")

    assert main(["compare", baseline, after]) == 0
    out = capsys.readouterr().out
    assert "not compared: 2 metrics of " in out
    assert "test_rag.py::test_search [toy]: mrr, ndcg_at_10" in out
    assert main(["compare", "--strict", baseline, after]) == 1
    assert "(--strict: failed)" in capsys.readouterr().out
    assert main(["compare", "--strict", baseline, after, "--format", "json"]) == 1
    document = json.loads(capsys.readouterr().out)
    assert document["not_compared"]["metrics_not_in_baseline"] == [
        {"test": "test_rag.py::test_search", "name": "toy", "metrics": ["mrr", "ndcg_at_10"]}
    ]
