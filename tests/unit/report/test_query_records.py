"""The per-query records of the HTML report: what add_query_details puts in an evaluation."""

from __future__ import annotations

import math
from typing import Any

import pytest

from pytest_ragmetrics import AnswerAssessment, Claim, Corpus, Qrels, Queries, Run
from pytest_ragmetrics.report.query_records import (
    PerQueryValues,
    add_query_details,
    answer_query_records,
    baseline_records,
    detail_query_ids,
    retrieval_query_records,
)

QRELS = Qrels.from_dict({"q1": {"d1": 2, "d2": 0, "d9": 1}, "q2": {"d3": 1}})
CORPUS = Corpus.from_dict(
    {
        "d1": {"title": "Cats", "text": "Cats purr."},
        "d2": {"title": "", "text": "Dogs " * 40},
        "d3": "Birds sing.",
        "d4": {"title": "Fish", "text": ""},
        "d9": {"title": "Never found", "text": ""},
    }
)
QUERIES = Queries.from_dict({"q1": "which animal purrs", "q2": "which animal sings"})


def test_retrieval_records_rank_grade_relevant_and_titles() -> None:
    run = Run.from_rankings({"q1": ["d4", "d2", "d1"], "q2": ["d3"]})
    before = {"q1": {"d1": 3.0, "d4": 2.0}}
    records = retrieval_query_records(
        run, QRELS, ["q1"], queries=QUERIES, corpus=CORPUS, baseline_run=before, depth=2
    )
    assert list(records) == ["q1"]
    q1 = records["q1"]
    assert q1["text"] == "which animal purrs"
    assert q1["ranking"] == [["d4", 3.0, None], ["d2", 2.0, 0]]  # depth 2; d4 unjudged
    assert q1["baseline_ranking"] == [["d1", 3.0, 2], ["d4", 2.0, None]]
    assert q1["relevant"] == {"d1": 2, "d9": 1}  # grade 0 is not relevant
    titles = q1["titles"]
    assert titles["d4"] == "Fish" and titles["d1"] == "Cats" and titles["d9"] == "Never found"
    assert titles["d2"].startswith("Dogs Dogs") and titles["d2"].endswith("…")  # text, cut
    assert len(titles["d2"]) == 120


def test_relevance_level_and_identical_ids() -> None:
    qrels = Qrels.from_dict({"q1": {"q1": 1, "d1": 1, "d2": 2}})
    run = Run.from_rankings({"q1": ["q1", "d1", "d2"]})
    plain = retrieval_query_records(run, qrels, ["q1"], relevance_level=2)
    assert plain["q1"]["relevant"] == {"d2": 2}
    assert [r[0] for r in plain["q1"]["ranking"]] == ["q1", "d1", "d2"]
    ignored = retrieval_query_records(run, qrels, ["q1"], ignore_identical_ids=True)
    assert [r[0] for r in ignored["q1"]["ranking"]] == ["d1", "d2"]
    assert "text" not in ignored["q1"] and "titles" not in ignored["q1"]


def _assessment(qid: str, answer: str, *verdicts: bool | None) -> AnswerAssessment:
    claims = tuple(
        Claim(f"claim {i}", v, ("c1",) if v else (), 0.5) for i, v in enumerate(verdicts)
    )
    return AnswerAssessment(qid, answer, claims, addresses_question=True, query=f"question {qid}")


def test_answer_records_now_and_before() -> None:
    now = [_assessment("q1", "now one", True, False), _assessment("q2", "now two", None)]
    before = [_assessment("q1", "before one", True, True), _assessment("q3", "only before")]
    records = answer_query_records(now, ["q1", "q3", "q4"], baseline_assessments=before)
    assert list(records) == ["q1", "q3"]  # q4 is in neither
    q1 = records["q1"]
    assert q1["text"] == "question q1"
    assert q1["answer"] == "now one" and q1["baseline_answer"] == "before one"
    assert q1["claims"] == [
        {"text": "claim 0", "supported": True, "evidence": ["c1"], "score": 0.5},
        {"text": "claim 1", "supported": False, "evidence": [], "score": 0.5},
    ]
    assert [c["supported"] for c in q1["baseline_claims"]] == [True, True]
    assert records["q3"] == {
        "text": "question q3",
        "baseline_answer": "only before",
        "baseline_claims": [],
    }
    assert list(answer_query_records(now)) == ["q1", "q2"]


def _entry(now: dict[str, float | None], before: dict[str, float] | None = None) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "layer": "retrieval",
        "metrics": {"ndcg_at_10": 0.5, "mrr": 0.5},
        "per_query": {q: {"ndcg_at_10": v, "mrr": v} for q, v in now.items()},
        "outcome": {"baseline": {"status": "ok", "metrics": []}},
    }
    if before is not None:
        entry["baseline_per_query"] = {q: {"ndcg_at_10": v, "mrr": 1.0} for q, v in before.items()}
    return entry


def test_detail_ids_are_the_most_regressed_per_metric() -> None:
    entry = _entry(
        {"a": 0.1, "b": 0.5, "c": 0.9, "d": None, "e": 0.2},
        {"a": 0.6, "b": 0.6, "c": 0.5, "d": 1.0, "e": 0.7},
    )
    # ndcg: a (-0.5) and e (-0.5), tie broken by id, then b (-0.1); c improved, d has no value.
    # mrr (baseline 1.0 everywhere): a, e, b, then c, which only regressed there.
    assert detail_query_ids(entry, worst=2) == ["a", "e"]
    assert detail_query_ids(entry, worst=10) == ["a", "e", "b", "c"]


def test_detail_ids_without_baseline_values() -> None:
    entry = _entry({"a": 0.1, "b": 0.5, "c": 0.0})
    entry["outcome"]["baseline"]["metrics"] = [
        {"metric": "ndcg_at_10", "most_regressed": [{"query": "b"}, {"query": "a"}, 3]},
    ]
    # From the comparison's list where it has one; none for mrr (the verdict has no list).
    assert detail_query_ids(entry, worst=5) == ["b", "a"]
    entry["outcome"] = {"baseline": {"status": "new", "metrics": []}}
    # No baseline at all: the lowest-scoring queries.
    assert detail_query_ids(entry, worst=2) == ["c", "a"]


def test_per_query_values_ignore_what_is_not_a_finite_number() -> None:
    entry = {
        "per_query": {
            "a": {"m": 1},
            "b": {"m": True},
            "c": {"m": "0.5"},
            "d": {"m": math.inf},
            "e": {"m": 10**400},
            "f": [],
            "g": {"m": None},
        },
        "baseline_per_query": {"a": {"m": 0.5}, "x": {"m": 0.25}, "y": "bad"},
    }
    values = PerQueryValues(entry)
    now = values.now("m")
    assert now[0] == 1.0 and all(math.isnan(v) for v in now[1:])
    assert list(values.baseline("m")[:2]) == [0.5, 0.25]
    positions, delta = values.deltas("m")
    assert positions.tolist() == [0] and delta.tolist() == [0.5]


def test_add_query_details_all_queries_or_only_the_detailed_ones() -> None:
    runs = Run.from_rankings({"q1": ["d2", "d1"], "q2": ["d3"]})
    baseline_entry = {"per_query": {"q1": {"ndcg_at_10": 1.0}, "q2": {"ndcg_at_10": 1.0}}}
    entry = {
        "layer": "retrieval",
        "metrics": {"ndcg_at_10": 0.8},
        "semantics": {"relevance_level": 1},
        "per_query": {"q1": {"ndcg_at_10": 0.6}, "q2": {"ndcg_at_10": 1.0}},
    }
    small = add_query_details(dict(entry), baseline_entry=baseline_entry, run=runs, qrels=QRELS)
    assert small["baseline_per_query"] == baseline_entry["per_query"]
    assert set(small["queries"]) == {"q1", "q2"}  # few queries: all of them
    big = add_query_details(
        dict(entry), baseline_entry=baseline_entry, run=runs, qrels=QRELS, record_all_up_to=1
    )
    assert set(big["queries"]) == {"q1"}  # only the regressed one
    bare = add_query_details(dict(entry))
    assert "queries" not in bare and "baseline_per_query" not in bare


@pytest.mark.parametrize("layer", ["retrieval", "answer"])
def test_baseline_records_come_from_the_baseline_entry(layer: str) -> None:
    ours = {"q1": {"ranking": [["d1", 1.0, 1]], "titles": {"d1": "now"}}}
    theirs = {
        "queries": {
            "q1": {
                "ranking": [["d2", 1.0, None]],
                "answer": "old",
                "claims": [],
                "titles": {"d2": "old title", "d1": "old name"},
                "text": "q",
            },
            "q9": {"ranking": []},
        }
    }
    merged = baseline_records(ours, theirs)
    assert list(merged) == ["q1"]
    q1 = merged["q1"]
    assert q1["baseline_ranking"] == [["d2", 1.0, None]]
    assert q1["baseline_answer"] == "old" and q1["baseline_claims"] == []
    assert q1["titles"] == {"d2": "old title", "d1": "now"}  # ours win
    assert q1["text"] == "q"
    assert ours["q1"] == {"ranking": [["d1", 1.0, 1]], "titles": {"d1": "now"}}  # not modified
