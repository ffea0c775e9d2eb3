"""Runs and qrels made by a second import of their module (pytester's in-process runs,
reloaders) are ours: evaluated alike, never refused as "a Run, not a Run"."""

from __future__ import annotations

import json
from typing import Any

import pytest

from pytest_ragmetrics import Qrels, Run, evaluate
from pytest_ragmetrics.twins import as_own, class_name, same_class
from tests.helpers.reimport import second_import

QRELS = {"q1": {"d1": 1, "d2": 2}, "q2": {"d3": 1}}
RUN = {"q1": {"d2": 0.9, "d9": 0.5, "d1": 0.1}, "q2": {"d3": 0.4, "d1": 0.3}}
METRICS = ["ndcg_at_10", "map", "recall_at_1", "mrr"]


@pytest.fixture(scope="module")
def twin_run() -> Any:
    run = second_import("pytest_ragmetrics.data.run").Run.from_dict(RUN)
    assert type(run) is not Run and type(run).__name__ == "Run"
    return run


@pytest.fixture(scope="module")
def twin_qrels() -> Any:
    qrels = second_import("pytest_ragmetrics.data.qrels").Qrels.from_dict(QRELS)
    assert type(qrels) is not Qrels
    return qrels


def test_evaluate_reads_twins_as_ours(twin_run: Any, twin_qrels: Any) -> None:
    # Both were refused: "run must be a Run or a dict ..., got Run", "qrels must be a dict".
    expected = evaluate(QRELS, RUN, METRICS)
    for qrels, run in ((twin_qrels, twin_run), (QRELS, twin_run), (twin_qrels, RUN)):
        found = evaluate(qrels, run, METRICS)
        assert found.mean == expected.mean
        assert found.per_query == expected.per_query


def test_from_dict_copies_a_twin_into_ours(twin_run: Any, twin_qrels: Any) -> None:
    twin_run.k, twin_run.retriever = 10, {"name": "bm25"}
    own = Run.from_dict(twin_run)
    assert type(own) is Run
    assert (own.k, own.retriever) == (10, {"name": "bm25"})
    assert {q: dict(own.ranking(q)) for q in own} == {q: dict(twin_run.ranking(q)) for q in own}
    assert type(Qrels.from_dict(twin_qrels)) is Qrels
    assert Qrels.from_dict(twin_qrels).to_dict() == QRELS


def test_only_the_same_module_and_name_is_a_twin() -> None:
    lookalike = type("Run", (), {"__module__": "my_project.runs"})()
    assert not same_class(lookalike, Run)
    assert not same_class({"q1": {}}, Run)
    assert class_name(lookalike, Run) == "my_project.runs.Run"
    assert class_name(1, Run) == "int"
    assert as_own(lookalike, Qrels) is None
    with pytest.raises(Exception, match=r"got Run"):
        evaluate(QRELS, lookalike, METRICS)  # type: ignore[arg-type]


def test_the_plugin_records_a_twin_run_with_its_retriever_and_k(pytester: pytest.Pytester) -> None:
    """rag_eval.retrieval read a Run of another import as no Run: its retriever and k (the
    identity a baseline keys on) were dropped."""
    from tests.helpers.plugin_project import make_project

    make_project(
        pytester,
        tests="""
            from pytest_ragmetrics.data.model import Run
            from tests.helpers.reimport import second_import

            def test_twin(rag_eval, rag_run):
                twin = second_import("pytest_ragmetrics.data.run").Run.from_dict(
                    {q: dict(rag_run.ranking(q)) for q in rag_run}
                )
                assert type(twin) is not Run
                twin.retriever, twin.k = {"name": "twin-bm25"}, 7
                rag_eval.retrieval(twin, name="twin")
        """,
    )
    result = pytester.runpytest("-p", "no:randomly", "--ragmetrics-json=r.json")
    result.assert_outcomes(passed=1)
    (evaluation,) = json.loads((pytester.path / "r.json").read_text())["evaluations"]
    assert evaluation["identity"]["retriever"] == {"name": "twin-bm25"}
    assert evaluation["k"] == 7
