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
