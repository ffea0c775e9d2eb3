"""Every shape of "the baseline holds a value this run no longer computes" fails as lost (issue
24 class 1): a metric no longer computed, a layer or evaluation a test no longer records, a
(dataset, split) pair or a query whose tests are gone, a registered metric no longer
registered; an evaluation whose k fell below a metric's cutoff says so; a registered metric
that declares its worst value gets the collapse rule of the built-in ones."""

from __future__ import annotations

import json
import textwrap
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import parse_tolerances
from pytest_ragmetrics.baseline.verdicts import BaselineVerdict, failure_message
from pytest_ragmetrics.errors import MetricError
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.metrics.names import families, register_metric, unregister_metric
from pytest_ragmetrics.records import EvaluationRecord
from tests.helpers.plugin_project import OVERLAP_RETRIEVER, SERIAL_AND_N2, make_project, write_beir

pytest.importorskip("xdist")


def report_of(pytester: pytest.Pytester) -> dict[str, Any]:
    return json.loads((pytester.path / "r.json").read_text())  # type: ignore[no-any-return]


# -- a metric no longer computed ---------------------------------------------------------------

RETRIEVAL = """
def test_retrieval(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="toy")
"""


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_a_metric_removed_from_the_configuration_fails_as_lost(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_project(pytester, tests=RETRIEVAL)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    result = pytester.runpytest(
        "-v", "--ragmetrics-metrics=ndcg_at_10 recall_at_1", "--ragmetrics-json=r.json", *xdist
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'toy' (test_rag.py::test_retrieval) regressed against the baseline*",
            "*mrr: lost: not computed by this run (it is not in ragmetrics_metrics*; the "
            "baseline has a value on 4 queries",
            "*bless them with --ragmetrics-update-baseline*",
        ]
    )
    (evaluation,) = report_of(pytester)["evaluations"]
    verdict = evaluation["outcome"]["baseline"]
    assert verdict["status"] == "regressed" and verdict["lost"] == {"mrr": 4}
    (mrr,) = [m for m in verdict["metrics"] if m["metric"] == "mrr"]
    assert mrr["computed"] is False and mrr["queries_lost"] == 4
    # The table keeps the lost metric's column: its baseline value and "lost".
    result.stdout.fnmatch_lines(["*· Δ*lost 4 !*"])
    # Blessing it is what the message says to do, and then the run passes.
    fewer = "--ragmetrics-metrics=ndcg_at_10 recall_at_1"
    pytester.runpytest(fewer, "--ragmetrics-update-baseline")
    pytester.runpytest(fewer).assert_outcomes(passed=1)


REGISTERING = (
    """
import os

import numpy as np
import pytest

from pytest_ragmetrics import Run


def pytest_ragmetrics_register_metrics(register):
    if os.environ.get("RAG_MINE"):
        register("mine", lambda ranked, k: np.ones(ranked.n_queries), cutoff="none")

"""
    + OVERLAP_RETRIEVER
)


def test_a_registered_metric_no_longer_registered_is_lost(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(pytester, tests=RETRIEVAL, conftest=REGISTERING)
    monkeypatch.setenv("RAG_MINE", "1")
    pytester.runpytest(
        "--ragmetrics-metrics=ndcg_at_10 mine", "--ragmetrics-update-baseline"
    ).assert_outcomes(passed=1)
    monkeypatch.delenv("RAG_MINE")
    result = pytester.runpytest("-v", "--ragmetrics-metrics=ndcg_at_10")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*mine: lost: not computed by this run*"])


# -- an evaluation (a layer) a test no longer records -------------------------------------------

TWO_LAYERS = """
import os
from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim


def test_both(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="toy")
    if os.environ.get("RAG_NO_ANSWERS"):
        return
    items = [AnswerAssessment(q, "An answer.", (Claim("An answer.", True),)) for q in ("q1", "q2")]
    rag_eval.answers(items, name="answers", metrics=["groundedness"])


def test_answers_only(rag_eval):
    if os.environ.get("RAG_NO_ANSWERS"):
        return
    items = [AnswerAssessment("q1", "An answer.", (Claim("An answer.", True),))]
    rag_eval.answers(items, name="answers", metrics=["groundedness"])
"""


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_a_layer_a_test_no_longer_records_fails_it_as_lost(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.delenv("RAG_NO_ANSWERS", raising=False)
    make_project(pytester, tests=TWO_LAYERS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    monkeypatch.setenv("RAG_NO_ANSWERS", "1")
    result = pytester.runpytest(
        "--ragmetrics-json=r.json", "--ragmetrics-markdown=r.md", "-p", "no:randomly", *xdist
    )
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*ragmetrics: test_rag.py::test_answers_only no longer records 1 evaluation that the "
            "baseline in .ragmetrics/baseline.json holds: their values are lost, not skipped:",
            "*'answers' (answer-layer, 1 queries): groundedness (recorded by "
            "rag_eval.answers(..., name='answers'))",
            "What to do: *bless with --ragmetrics-update-baseline, which removes the entry*",
        ]
    )
    result.stdout.fnmatch_lines(["*test_rag.py::test_both no longer records 1 evaluation*"])
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: 2 baseline entries belong to tests that ran without recording them: "
            "lost (their tests failed):",
            "  test_rag.py::test_answers_only [[]answers[]]",
            "  test_rag.py::test_both [[]answers[]]",
        ]
    )
    summary = report_of(pytester)["summary"]
    assert summary["unrecorded_baseline_entries"] == [
        ["test_rag.py::test_answers_only", "answers"],
        ["test_rag.py::test_both", "answers"],
    ]
    assert "### Lost baseline entries" in (pytester.path / "r.md").read_text()
    # The update the message advises removes the entries; then the tests pass.
    updated = pytester.runpytest("--ragmetrics-update-baseline", *xdist)
    updated.assert_outcomes(passed=2)
    updated.stdout.fnmatch_lines(["*0 updated, 0 added, 2 removed, 1 unchanged*"])
    pytester.runpytest(*xdist).assert_outcomes(passed=2)


# -- a (dataset, split) pair or a query whose tests are gone --------------------------------------

PAIRS_CONFTEST = "import pytest\nfrom pytest_ragmetrics import Run\n" + OVERLAP_RETRIEVER


def pairs_project(pytester: pytest.Pytester, datasets: str, tests: str) -> None:
    write_beir(
        pytester.path / "data" / "alpha",
        {"a1": "cats purr", "a2": "dogs bark"},
        {"qa1": "which animal purrs", "qa2": "which animal barks"},
    )
    for name in ("beta", "gamma"):
        write_beir(
            pytester.path / "data" / name,
            {"b1": "mars is red", "b2": "venus is hot"},
            {"qb1": "the red planet", "qb2": "the hot planet"},
        )
    pytester.makepyprojecttoml(
        f'[tool.pytest.ini_options]\nragmetrics_dataset = "{datasets}"\n'
        'ragmetrics_metrics = "ndcg_at_10"\n'
    )
    pytester.makeconftest(PAIRS_CONFTEST)
    pytester.makepyfile(test_rag=textwrap.dedent(tests))


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_a_dataset_removed_from_the_configuration_fails_the_run_as_lost(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    pairs_project(pytester, "alpha=data/alpha beta=data/beta gamma=data/gamma", RETRIEVAL)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=3)
    pairs_project(pytester, "alpha=data/alpha gamma=data/gamma", RETRIEVAL)
    result = pytester.runpytest("--ragmetrics-json=r.json", *xdist)
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: 1 baseline entries belong to tests that no longer exist (stale: a test, "
            "a dataset or a query is gone): their values are lost, and the run fails; if that is "
            "intended, bless with --ragmetrics-update-baseline, which removes them:",
            "  test_rag.py::test_retrieval[[]beta-test[]] [[]toy[]]",
        ]
    )
    assert report_of(pytester)["summary"]["stale_baseline_entries"] == [
        ["test_rag.py::test_retrieval[beta-test]", "toy"]
    ]
    updated = pytester.runpytest("--ragmetrics-update-baseline", *xdist)
    assert updated.ret == pytest.ExitCode.OK
    updated.stdout.fnmatch_lines(["*1 removed*", "*removed by this update:"])
    assert pytester.runpytest(*xdist).ret == pytest.ExitCode.OK


PER_QUERY = """
import os
import pytest

@pytest.mark.rag_queries(*os.environ["RAG_QUERIES"].split())
def test_query(rag_eval, rag_query):
    rag_eval.retrieval({rag_query.id: dict(rag_query.ranking)}, name="one")
"""


def test_a_per_query_test_whose_query_is_gone_fails_the_run_as_lost(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dataset is unchanged (the other query's entry compares fine); qa2's test is gone."""
    pairs_project(pytester, "alpha=data/alpha", PER_QUERY)
    monkeypatch.setenv("RAG_QUERIES", "qa1 qa2")
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    monkeypatch.setenv("RAG_QUERIES", "qa1")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*1 baseline entries belong to tests that no longer exist*", "*test_query[[]qa2[]]*"]
    )


def test_tests_left_out_by_node_ids_or_k_are_not_lost(pytester: pytest.Pytester) -> None:
    pairs_project(pytester, "alpha=data/alpha beta=data/beta", RETRIEVAL)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    for args in (["-k", "alpha"], ["test_rag.py::test_retrieval[alpha-test]"]):
        result = pytester.runpytest(*args)
        assert result.ret == pytest.ExitCode.OK, result.stdout.str()
        assert "no longer exist" not in result.stdout.str()


# -- the ranking depth fell below a metric's cutoff ------------------------------------------------


def _retrieval(values: dict[str, float], k: int, metric: str = "recall_at_100") -> EvaluationRecord:
    evaluation = Evaluation.from_per_query({q: {metric: v} for q, v in values.items()})
    return EvaluationRecord("t.py::t", "r", evaluation, k=k)


def test_a_k_below_a_metrics_cutoff_says_the_depth_differs() -> None:
    values = {f"q{i}": 1.0 for i in range(4)}
    entry = _retrieval(values, 100).baseline_entry("test")
    verdict = compare_to_baseline(_retrieval(values, 10), entry, parse_tolerances("0.01"))
    assert verdict.status == "ok"
    assert verdict.depth_note == (
        "k 100 → 10: recall_at_100 counts only the top 10 documents now, where the baseline "
        "counted deeper: its value is not over the same depth"
    )
    assert BaselineVerdict.from_dict(verdict.to_dict()).depth_note == verdict.depth_note
    assert "k: 100 → 10" in verdict.identity_change
    # A cutoff the new depth still reaches is the same metric: nothing to say.
    entry = _retrieval(values, 100, "ndcg_at_10").baseline_entry("test")
    same = compare_to_baseline(_retrieval(values, 10, "ndcg_at_10"), entry, parse_tolerances("0"))
    assert same.depth_note == ""


# -- collapse of a registered metric -------------------------------------------------------


@pytest.fixture
def declared() -> Any:
    ones = lambda ranked, k: np.ones(ranked.n_queries)  # noqa: E731
    register_metric("closeness", ones, cutoff="none", worst=-1.0)
    register_metric("vague", ones, cutoff="none")
    yield
    unregister_metric("closeness")
    unregister_metric("vague")


def _verdict(metric: str, before: float, after: float, n: int = 3) -> BaselineVerdict:
    def record(value: float) -> EvaluationRecord:
        evaluation = Evaluation.from_per_query({f"q{i}": {metric: value} for i in range(n)})
        return EvaluationRecord("t.py::t", "r", evaluation)

    entry = record(before).baseline_entry("test")
    return compare_to_baseline(record(after), entry, parse_tolerances("0.01"), alpha=0.05)


def test_a_registered_metric_that_declares_its_worst_value_cannot_collapse_silently(
    declared: None,
) -> None:
    assert families()["closeness"].worst == -1.0 and families()["vague"].worst is None
    (collapse,) = _verdict("closeness", 0.5, -1.0).metrics
    assert collapse.status == "regressed"
    assert "fell to -1, the worst possible value, on all 3 queries" in collapse.note
    # Without a declared worst value the rule cannot apply: the verdict says so.
    (vague,) = _verdict("vague", 0.5, -1.0).metrics
    assert vague.status == "ok"
    assert "declares no worst value" in vague.note and "worst=" in vague.note
    text = failure_message(
        EvaluationRecord("t.py::t", "r", Evaluation.from_per_query({})),
        _verdict("closeness", 0.5, -1.0),
        "b.json",
    )
    assert "a collapse fails whatever the p-value" in text


def test_a_worst_value_must_be_a_finite_number() -> None:
    for bad in ("low", float("nan"), True):
        with pytest.raises(MetricError, match="worst="):
            register_metric("oddity", lambda ranked, k: ranked, worst=bad)  # type: ignore[arg-type]
