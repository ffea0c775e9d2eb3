"""The consistency of an evaluation document's means with its per-query values."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ragmetrics.schema.evaluation import evaluation_problem


def entry(metrics: dict[str, Any], per_query: dict[str, dict[str, Any]]) -> dict[str, Any]:
    return {
        "layer": "retrieval",
        "test": "t.py::t",
        "name": "r",
        "num_queries": len(per_query),
        "metrics": metrics,
        "per_query": per_query,
    }


PER_QUERY = {"q1": {"mrr": 1.0, "map": 0.5}, "q2": {"mrr": 0.5, "map": None}}


def test_a_consistent_entry_passes_rounding_included() -> None:
    assert evaluation_problem(entry({"mrr": 0.75, "map": 0.5}, PER_QUERY)) is None
    # Six decimals each side: the means may differ from the values' mean by rounding only.
    third = {"q1": {"mrr": 0.333333}, "q2": {"mrr": 0.333333}, "q3": {"mrr": 0.333334}}
    assert evaluation_problem(entry({"mrr": 0.333333}, third)) is None
    assert evaluation_problem(entry({"mrr": 0.75, "map": 0.5}, {})) is None  # no per-query


@pytest.mark.parametrize(
    ("metrics", "message"),
    [
        ({"mrr": 0.8, "map": 0.5}, "'metrics.mrr' is 0.8 but its 2 per-query values average"),
        ({"mrr": 0.75}, "'map' has per-query values but no mean"),
        ({"mrr": 0.75, "map": 0.5, "ndcg": 0.5}, "'ndcg' has a mean but no per-query value"),
    ],
    ids=["other-mean", "mean-deleted", "mean-without-values"],
)
def test_an_entry_mixing_two_versions_is_named(metrics: dict[str, Any], message: str) -> None:
    problem = evaluation_problem(entry(metrics, PER_QUERY))
    assert problem is not None and message in problem and "mixes two versions" in problem


def test_per_query_rows_for_other_queries_than_counted_are_named() -> None:
    # A query cut out with the means recomputed over the rest: `ragmetrics compare` paired
    # 3 of 4 queries and showed the other file's means over those 3 as its "after" column.
    cut = entry({"mrr": 1.0, "map": 0.5}, {"q1": PER_QUERY["q1"]})
    cut["num_queries"] = 2
    problem = evaluation_problem(cut)
    assert problem == (
        "'num_queries' is 2 but 'per_query' holds 1 queries: the file mixes two versions (a "
        "merge, an edit)"
    )
    grown = entry({"mrr": 0.75, "map": 0.5}, PER_QUERY)
    grown["num_queries"] = 3
    assert "'num_queries' is 3 but 'per_query' holds 2" in (evaluation_problem(grown) or "")


@pytest.mark.parametrize(
    ("means", "q1", "field"),
    [
        ({"mrr": -0.75}, {"mrr": -2.5}, "metrics.mrr"),
        ({"mrr": 1e300}, {"mrr": 2e300}, "metrics.mrr"),
        ({"map": 1.0}, {"map": 1.5}, "per_query.q1.map"),
    ],
    ids=["negative", "huge", "above-one"],
)
def test_a_value_outside_the_unit_interval_is_named(
    means: dict[str, float], q1: dict[str, float], field: str
) -> None:
    # A baseline mean of -1 could never be regressed from; no evaluation writes one.
    per_query = {"q1": {**PER_QUERY["q1"], **q1}, "q2": {"mrr": 1.0, "map": 0.5}}
    problem = evaluation_problem(entry({"mrr": 0.75, "map": 0.5, **means}, per_query)) or ""
    assert problem.startswith(f"'{field}' is ") and "outside [0, 1]" in problem, problem
    judged = entry({"mrr": 0.75, "map": 0.5}, PER_QUERY) | {"judged_only": {"map_judged": 1.2}}
    assert (evaluation_problem(judged) or "").startswith("'judged_only.map_judged' is 1.2")


def test_rounding_and_registered_metrics_may_lie_outside() -> None:
    from pytest_ragmetrics.metrics.names import register_metric, unregister_metric

    rounded = entry({"mrr": 1.0000004}, {"q1": {"mrr": 1.0000004}})
    assert evaluation_problem(rounded) is None
    register_metric("mean_place", lambda ranked, k: ranked.n_queries * [0.0], worst=100.0)
    try:
        assert evaluation_problem(entry({"mean_place": -3.0}, {"q1": {"mean_place": -3.0}})) is None
    finally:
        unregister_metric("mean_place")
