"""The retrieval-metric engine: the seed example, every documented semantic, registered
metrics, the Evaluation API and bad input. METRICS.md is the prose version of this file."""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import numpy.typing as npt
import pytest

from pytest_ragmetrics import (
    DataFormatError,
    Evaluation,
    JudgedRankings,
    MetricError,
    Qrels,
    RagMetricsError,
    RankedJudgments,
    Run,
    evaluate,
    parse_metric,
    register_metric,
    unregister_metric,
)
from pytest_ragmetrics.metrics.names import judged_only_name, parse_metrics

Judgments = Mapping[str, Mapping[str, int]]
Results = Mapping[str, Mapping[str, float]]


def scores(qrels: Judgments, run: Results, metric: str, **options: Any) -> dict[str, float]:
    """Per-query values of one metric, checking that the dict and Run paths agree."""
    from_dict = evaluate(qrels, run, [metric], **options)
    from_run = evaluate(Qrels.from_dict(qrels), Run.from_dict(run), [metric], **options)
    assert from_dict.per_query == from_run.per_query
    return {qid: row[metric] for qid, row in from_dict.per_query.items()}


def ranked(*docs: str) -> dict[str, float]:
    """A ranking given best first, as {doc: score} with distinct decreasing scores."""
    return {doc: float(len(docs) - i) for i, doc in enumerate(docs)}


# --- the worked example of seed 000_a00bf3581abc6b51.txt --------------------------------------

SEED_RANKING = ["chunk-7", "chunk-3", "chunk-9", "chunk-1", "chunk-5"]
SEED_GRADES = {"chunk-1": 0, "chunk-3": 3, "chunk-5": 2, "chunk-7": 0, "chunk-9": 1}


@pytest.fixture
def seed_example() -> JudgedRankings:
    return JudgedRankings.from_dict({"q": SEED_RANKING}, {"q": SEED_GRADES})


def test_seed_example(seed_example: JudgedRankings) -> None:
    mean = evaluate(
        seed_example.qrels,
        seed_example.run,
        ["precision_at_3", "recall_at_3", "mrr", "ndcg_at_3"],
        gain="exponential",
    ).mean
    assert round(mean["precision_at_3"], 3) == 0.667
    assert round(mean["recall_at_3"], 3) == 0.667
    assert mean["mrr"] == 0.5
    assert round(mean["ndcg_at_3"], 3) == 0.523


def test_seed_example_by_hand(seed_example: JudgedRankings) -> None:
    """The same numbers from the definitions, exactly."""
    dcg = (2**0 - 1) / math.log2(2) + (2**3 - 1) / math.log2(3) + (2**1 - 1) / math.log2(4)
    ideal = (2**3 - 1) / math.log2(2) + (2**2 - 1) / math.log2(3) + (2**1 - 1) / math.log2(4)
    linear_dcg = 3 / math.log2(3) + 1 / math.log2(4)
    linear_ideal = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    qrels, run = seed_example.qrels, seed_example.run
    exponential = evaluate(qrels, run, ["ndcg_at_3"], gain="exponential").mean["ndcg_at_3"]
    linear = evaluate(qrels, run, ["ndcg_at_3"]).mean["ndcg_at_3"]
    assert exponential == pytest.approx(dcg / ideal, abs=1e-15)
    assert linear == pytest.approx(linear_dcg / linear_ideal, abs=1e-15)
    assert linear != pytest.approx(exponential)
    assert evaluate(qrels, run, ["precision_at_3"]).mean["precision_at_3"] == 2 / 3


# --- order: score descending, ties by doc id descending, rank column ignored ----------------


def test_ties_break_by_doc_id_descending_d9_before_d10() -> None:
    # Byte order: "d9" > "d10" because "9" > "1"; descending puts d9 first.
    run = {"q": {"d10": 1.0, "d9": 1.0, "d1": 1.0}}
    assert Run.from_dict(run).ranking("q") == [("d9", 1.0), ("d10", 1.0), ("d1", 1.0)]
    assert scores({"q": {"d9": 1}}, run, "mrr") == {"q": 1.0}
    assert scores({"q": {"d10": 1}}, run, "mrr") == {"q": 0.5}
    assert scores({"q": {"d1": 1}}, run, "mrr") == {"q": pytest.approx(1 / 3)}


def test_ties_use_byte_order_not_locale_or_case_folding() -> None:
    # "Z" (0x5a) < "a" (0x61) < "é" (0xc3 0xa9 in UTF-8): descending is é, a, Z.
    run = {"q": {"a": 0.5, "Z": 0.5, "é": 0.5}}
    assert [doc for doc, _ in Run.from_dict(run).ranking("q")] == ["é", "a", "Z"]
    assert scores({"q": {"Z": 1}}, run, "mrr") == {"q": pytest.approx(1 / 3)}


def test_only_scores_order_documents_never_input_order() -> None:
    forward = {"q": {"a": 0.1, "b": 0.9, "c": 0.5}}
    backward = {"q": dict(reversed(list(forward["q"].items())))}
    assert Run.from_dict(forward).ranking("q") == [("b", 0.9), ("c", 0.5), ("a", 0.1)]
    qrels = {"q": {"a": 1, "c": 2}}
    for metric in ["map", "ndcg", "mrr", "precision_at_2"]:
        assert scores(qrels, forward, metric) == scores(qrels, backward, metric)


def test_rank_column_is_ignored(tmp_path: Any) -> None:
    from pytest_ragmetrics import read_run

    path = tmp_path / "run.txt"
    # Ranks claim b is first; the scores say a is.
    path.write_text("q Q0 b 1 0.2 tag\nq Q0 a 2 0.9 tag\n")
    run = read_run(path)
    assert [doc for doc, _ in run.ranking("q")] == ["a", "b"]
    assert evaluate({"q": {"a": 1}}, run, ["mrr"]).mean["mrr"] == 1.0


def test_scores_equal_at_float32_precision_tie_like_trec_eval() -> None:
    """trec_eval (and pytrec_eval) keep scores as C floats: 0.1 and 0.1 + 1e-12 are a tie, and
    the larger doc id wins it; 0.1 + 1e-8 is a different float32 and ranks first."""
    near = {"q": {"b": 0.1, "a": 0.1 + 1e-12}}
    assert [d for d, _ in Run.from_dict(near).ranking("q")] == ["b", "a"]
    assert scores({"q": {"a": 1}}, near, "mrr") == {"q": 0.5}
    apart = {"q": {"b": 0.1, "a": 0.1 + 1e-8}}
    assert scores({"q": {"a": 1}}, apart, "mrr") == {"q": 1.0}
    large = {"q": {"b": 1e8, "a": 1e8 + 1, "c": 1e8 + 8}}  # float32 spacing at 1e8 is 8
    assert [d for d, _ in Run.from_dict(large).ranking("q")] == ["c", "b", "a"]
    beyond = {"q": {"x": 1e39, "y": 2e39}}  # both +inf as float32
    assert [d for d, _ in Run.from_dict(beyond).ranking("q")] == ["y", "x"]
    # The Run keeps the exact values; only the order follows float32.
    assert Run.from_dict(near).ranking("q")[1] == ("a", 0.1 + 1e-12)


def test_negative_and_equal_scores_sort_numerically() -> None:
    run = {"q": {"a": -1.0, "b": -0.5, "c": 0.0, "d": -0.0, "e": 2.0}}
    # -0.0 == 0.0: they tie and fall back to doc id descending (d before c).
    assert [doc for doc, _ in Run.from_dict(run).ranking("q")] == ["e", "d", "c", "b", "a"]


# --- relevance: grade >= relevance_level; negative grades are non-relevant --------------------


def test_relevant_means_grade_at_least_relevance_level() -> None:
    qrels = {"q": {"a": 1, "b": 2}}
    run = {"q": ranked("a", "b")}
    assert scores(qrels, run, "precision_at_2") == {"q": 1.0}
    assert scores(qrels, run, "precision_at_2", relevance_level=2) == {"q": 0.5}
    assert scores(qrels, run, "mrr", relevance_level=2) == {"q": 0.5}
    assert scores(qrels, run, "recall_at_1", relevance_level=2) == {"q": 0.0}


def test_a_negative_relevance_level_is_refused() -> None:
    # The options refused it, evaluate() took it (the level of a record read back may be any).
    with pytest.raises(MetricError, match=r"relevance_level must be 0 or more .*got -1"):
        evaluate({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["mrr"], relevance_level=-1)


def test_negative_grades_are_non_relevant_and_gain_nothing() -> None:
    run = {"q": ranked("neg", "rel")}
    with_negative = {"q": {"neg": -1, "rel": 1}}
    with_zero = {"q": {"neg": 0, "rel": 1}}
    for metric in ["precision_at_1", "mrr", "map", "ndcg", "ndcg_at_2", "r_precision"]:
        assert scores(with_negative, run, metric) == scores(with_zero, run, metric), metric
    assert scores(with_negative, run, "precision_at_1") == {"q": 0.0}
    # relevance_level 0 makes grade 0 relevant, never a negative grade.
    assert scores(with_negative, run, "precision_at_1", relevance_level=0) == {"q": 0.0}
    assert scores(with_zero, run, "precision_at_1", relevance_level=0) == {"q": 1.0}


# --- precision, recall, recall_cap, hit_rate, r_precision --------------------------------------


def test_precision_divides_by_k_even_when_fewer_were_retrieved() -> None:
    qrels = {"q": {"a": 1, "b": 1}}
    run = {"q": ranked("a", "b")}
    assert scores(qrels, run, "precision_at_2") == {"q": 1.0}
    assert scores(qrels, run, "precision_at_5") == {"q": 0.4}
    assert scores(qrels, run, "precision_at_10") == {"q": 0.2}


def test_recall_counts_all_relevant_docs_even_unretrieved() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 0}}
    run = {"q": ranked("x", "a", "d", "b")}
    assert scores(qrels, run, "recall_at_1") == {"q": 0.0}
    assert scores(qrels, run, "recall_at_2") == {"q": pytest.approx(1 / 3)}
    assert scores(qrels, run, "recall_at_100") == {"q": pytest.approx(2 / 3)}


def test_recall_cap_divides_by_min_of_relevant_and_k() -> None:
    qrels = {"q": {f"r{i}": 1 for i in range(5)}}
    run = {"q": ranked("r0", "r1", "x", "r2")}
    assert scores(qrels, run, "recall_cap_at_2") == {"q": 1.0}  # 2 / min(5, 2)
    assert scores(qrels, run, "recall_at_2") == {"q": 0.4}  # 2 / 5
    assert scores(qrels, run, "recall_cap_at_4") == {"q": 0.75}  # 3 / min(5, 4)
    assert scores(qrels, run, "recall_cap_at_10") == {"q": 0.6}  # 3 / min(5, 10)
    one = {"q": {"r0": 1}}
    assert scores(one, run, "recall_cap_at_10") == {"q": 1.0}  # 1 / min(1, 10)


def test_no_relevant_docs_give_zero_not_a_crash() -> None:
    """R = 0 (a query judged only non-relevant): BEIR divides by zero here; we give 0."""
    qrels = {"q": {"a": 0, "b": -1}, "ok": {"a": 1}}
    run = {"q": ranked("a", "b"), "ok": ranked("a")}
    metrics = [
        "recall_at_5",
        "recall_cap_at_5",
        "map",
        "map_at_5",
        "ndcg",
        "ndcg_at_5",
        "mrr",
        "r_precision",
        "precision_at_5",
        "hit_rate_at_5",
    ]
    evaluation = evaluate(qrels, run, metrics)
    assert evaluation.per_query["q"] == dict.fromkeys(metrics, 0.0)
    assert evaluation.details["num_relevant"].tolist() == [0, 1]
    assert any("no relevant judgment" in note for note in evaluation.notes)


def test_hit_rate_is_one_when_any_relevant_doc_is_in_top_k() -> None:
    qrels = {"q": {"c": 1}}
    run = {"q": ranked("a", "b", "c")}
    assert scores(qrels, run, "hit_rate_at_2") == {"q": 0.0}
    assert scores(qrels, run, "hit_rate_at_3") == {"q": 1.0}


def test_r_precision_looks_at_the_top_r() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1}}
    assert scores(qrels, {"q": ranked("a", "x", "b", "c")}, "r_precision") == {
        "q": pytest.approx(2 / 3)
    }
    assert scores(qrels, {"q": ranked("x", "y", "z", "a")}, "r_precision") == {"q": 0.0}


# --- map and mrr -------------------------------------------------------------------------------


def test_map_at_k_divides_by_all_relevant_docs() -> None:
    qrels = {"q": {"a": 1, "b": 1, "c": 1, "d": 1}}
    run = {"q": ranked("a", "x", "b", "c")}
    # Precision at each relevant rank within the cut, summed, over R = 4 (not over min(R, k)).
    assert scores(qrels, run, "map_at_3") == {"q": pytest.approx((1 / 1 + 2 / 3) / 4)}
    assert scores(qrels, run, "map") == {"q": pytest.approx((1 / 1 + 2 / 3 + 3 / 4) / 4)}


def test_mrr_has_no_cutoff_and_mrr_at_k_counts_ranks_up_to_k() -> None:
    qrels = {"q": {"d": 1}}
    run = {"q": ranked("a", "b", "c", "d")}
    assert scores(qrels, run, "mrr") == {"q": 0.25}
    assert scores(qrels, run, "mrr_at_3") == {"q": 0.0}
    assert scores(qrels, run, "mrr_at_4") == {"q": 0.25}
    assert scores(qrels, {"q": ranked("a", "b")}, "mrr") == {"q": 0.0}  # never retrieved


# --- nDCG --------------------------------------------------------------------------------------


def test_ndcg_ideal_ranking_uses_all_judged_docs_not_just_retrieved() -> None:
    qrels = {"q": {"a": 1, "b": 3}}
    run = {"q": ranked("a")}  # the best doc was never retrieved
    ideal = 3 / math.log2(2) + 1 / math.log2(3)
    assert scores(qrels, run, "ndcg") == {"q": pytest.approx(1 / ideal)}
    assert scores(qrels, run, "ndcg_at_1") == {"q": pytest.approx(1 / 3)}


def test_ndcg_gain_is_the_grade_and_ignores_relevance_level() -> None:
    qrels = {"q": {"a": 1, "b": 2, "c": 3}}
    run = {"q": ranked("a", "b", "c")}
    dcg = 1 + 2 / math.log2(3) + 3 / math.log2(4)
    ideal = 3 + 2 / math.log2(3) + 1 / math.log2(4)
    for level in (1, 2, 3, 4):
        assert scores(qrels, run, "ndcg", relevance_level=level) == {
            "q": pytest.approx(dcg / ideal)
        }
    # ... while map does depend on the level.
    assert scores(qrels, run, "map", relevance_level=1) != scores(
        qrels, run, "map", relevance_level=3
    )


def test_exponential_gain_is_two_to_the_grade_minus_one() -> None:
    qrels = {"q": {"a": 1, "b": 3}}
    run = {"q": ranked("a", "b")}
    dcg = 1 / math.log2(2) + 7 / math.log2(3)
    ideal = 7 / math.log2(2) + 1 / math.log2(3)
    assert scores(qrels, run, "ndcg", gain="exponential") == {"q": pytest.approx(dcg / ideal)}
    # With grades 0/1 both gains agree.
    binary = {"q": {"a": 1, "b": 1, "c": 0}}
    assert scores(binary, {"q": ranked("c", "a")}, "ndcg_at_2") == scores(
        binary, {"q": ranked("c", "a")}, "ndcg_at_2", gain="exponential"
    )


def test_perfect_ranking_has_ndcg_one_and_reversed_less() -> None:
    qrels = {"q": {"a": 3, "b": 2, "c": 1, "d": 0}}
    assert scores(qrels, {"q": ranked("a", "b", "c", "d")}, "ndcg") == {"q": pytest.approx(1.0)}
    assert scores(qrels, {"q": ranked("d", "c", "b", "a")}, "ndcg")["q"] < 1.0


# --- judged_at_k -------------------------------------------------------------------------------


def test_judged_at_k_is_the_share_of_the_top_k_with_a_judgment() -> None:
    qrels = {"q": {"a": 1, "c": 0, "e": -1}}
    run = {"q": ranked("a", "b", "c", "d", "e")}
    assert scores(qrels, run, "judged_at_2") == {"q": 0.5}
    assert scores(qrels, run, "judged_at_4") == {"q": 0.5}
    # Any qrels entry is a judgment, negative grades included (ir_measures' Judged@k).
    assert scores(qrels, run, "judged_at_5") == {"q": 0.6}
    # Fewer than k retrieved: the share of what was retrieved.
    assert scores(qrels, {"q": ranked("a", "b")}, "judged_at_10") == {"q": 0.5}


def test_judged_at_k_is_zero_for_a_query_missing_from_the_run() -> None:
    evaluation = evaluate({"q": {"a": 1}, "gone": {"a": 1}}, {"q": ranked("a")}, ["judged_at_5"])
    assert evaluation.per_query == {"q": {"judged_at_5": 1.0}, "gone": {"judged_at_5": 0.0}}


# --- metrics that tolerate holes: bpref, infap, <metric>_judged ---------------------------------


def test_bpref_counts_judged_non_relevant_docs_above_each_relevant_one() -> None:
    # R = 3, N = 4 judged non-relevant; u is unjudged, m pooled but unjudged (-1).
    qrels = {"q": {"r1": 1, "r2": 2, "r3": 1, "n1": 0, "n2": 0, "n3": 0, "n4": 0, "m": -1}}
    run = {"q": ranked("n1", "u", "r1", "m", "n2", "r2", "n3")}
    # r1 has 1 judged non-relevant doc above, r2 has 2, r3 is not retrieved: each term is
    # 1 - min(above, R) / min(N, R), and the sum is divided by R.
    expected = ((1 - 1 / 3) + (1 - 2 / 3)) / 3
    assert scores(qrels, run, "bpref") == {"q": pytest.approx(expected, abs=1e-15)}
    # Unjudged and -1 documents are skipped wherever they are.
    moved = {"q": ranked("u", "m", "n1", "r1", "n2", "r2", "n3")}
    assert scores(qrels, moved, "bpref") == {"q": pytest.approx(expected, abs=1e-15)}
    # With relevance_level 2, r1 and r3 join the judged non-relevant docs: R = 1, N = 6.
    assert scores(qrels, run, "bpref", relevance_level=2) == {"q": 0.0}


def test_bpref_caps_non_relevant_docs_above_at_r() -> None:
    qrels = {"q": {"r": 1, "n1": 0, "n2": 0, "n3": 0}}
    # R = 1: one judged non-relevant doc above is already the worst case.
    assert scores(qrels, {"q": ranked("n1", "r")}, "bpref") == {"q": 0.0}
    assert scores(qrels, {"q": ranked("n1", "n2", "r")}, "bpref") == {"q": 0.0}
    assert scores(qrels, {"q": ranked("r", "n1")}, "bpref") == {"q": 1.0}


def test_bpref_counts_unretrieved_judged_non_relevant_docs() -> None:
    """The example of trec_eval's bpref_bug note (fixed in trec_eval 8): the denominator is
    min(N, R) over all judged non-relevant docs, not only the retrieved ones."""
    qrels = {"q": {"n1": 0, "r1": 1, "r2": 1, "r3": 1, "r4": 1}}
    qrels["q"] |= {"n2": 0, "n3": 0, "n4": 0, "r5": 1, "r6": 1}  # not retrieved
    run = {"q": ranked("n1", "r1", "r2", "r3", "r4")}
    assert scores(qrels, run, "bpref") == {"q": 0.5}  # (4 * (1 - 1/4) + 2 * 0) / 6


def test_bpref_without_judged_non_relevant_docs_is_the_retrieved_share_of_r() -> None:
    qrels = {"q": {"a": 1, "b": 1, "m": -1}}
    assert scores(qrels, {"q": ranked("u", "m", "a", "v")}, "bpref") == {"q": 0.5}


def test_infap_by_hand() -> None:
    """trec_eval's estimate: E = 1/(j+1) + (j/(j+1)) (p/j) (h+eps)/(h+n+2 eps) at rank j+1."""
    eps = 1e-5
    qrels = {"q": {"r1": 1, "r2": 1, "r3": 1, "r4": 1, "n1": 0, "m": -1}}
    run = {"q": ranked("r1", "u", "n1", "r2", "m", "r3")}
    # r2 at rank 4: p = 2 judged docs above (r1, n1; u is not in the pool), h = 1, n = 1.
    # r3 at rank 6: p = 4 (r1, n1, r2, m: -1 is pooled), h = 2, n = 1. r4 is not retrieved.
    e2 = 1 / 4 + (3 / 4) * (2 / 3) * ((1 + eps) / (2 + 2 * eps))
    e3 = 1 / 6 + (5 / 6) * (4 / 5) * ((2 + eps) / (3 + 2 * eps))
    assert scores(qrels, run, "infap") == {"q": pytest.approx((1 + e2 + e3) / 4, abs=1e-15)}
    # Judged-only: the list is r1, n1, r2, r3 and infAP is AP up to eps.
    e2 = 1 / 3 + (2 / 3) * (2 / 2) * ((1 + eps) / (2 + 2 * eps))
    e3 = 1 / 4 + (3 / 4) * (3 / 3) * ((2 + eps) / (3 + 2 * eps))
    judged = scores(qrels, run, "infap_judged")["q"]
    assert judged == pytest.approx((1 + e2 + e3) / 4, abs=1e-15)
    assert judged == pytest.approx(scores(qrels, run, "map_judged")["q"], abs=1e-5)


# Condensed list of HOLES_RUN: b (0), a (2), c (1); x and y are unjudged, m is -1.
HOLES_QRELS = {"q": {"a": 2, "b": 0, "c": 1, "m": -1, "z": 1}}
HOLES_RUN = {"q": ranked("x", "m", "b", "y", "a", "c")}


@pytest.mark.parametrize(
    ("metric", "full", "judged"),
    [
        ("mrr", 1 / 5, 1 / 2),
        ("mrr_at_1", 0.0, 0.0),
        ("precision_at_2", 0.0, 1 / 2),
        ("recall_at_2", 0.0, 1 / 3),
        ("hit_rate_at_2", 0.0, 1.0),
        ("r_precision", 0.0, 2 / 3),
        ("map", (1 / 5 + 2 / 6) / 3, (1 / 2 + 2 / 3) / 3),
        # Cutoffs deeper than the condensed list: P@k still divides by k (trec_eval -J).
        ("precision_at_10", 2 / 10, 2 / 10),
        ("recall_cap_at_10", 2 / 3, 2 / 3),
        (
            "ndcg_at_10",
            (2 / math.log2(6) + 1 / math.log2(7)) / (2 + 1 / math.log2(3) + 1 / math.log2(4)),
            (2 / math.log2(3) + 1 / math.log2(4)) / (2 + 1 / math.log2(3) + 1 / math.log2(4)),
        ),
        # Ideal DCG is unchanged: it comes from the qrels, with z (never retrieved) in it.
        ("ndcg_at_1", 0.0, 0.0),
        # b, the only judged non-relevant doc (N = 1), is above both relevant ones.
        ("bpref", 0.0, 0.0),
    ],
)
def test_judged_only_metrics_rank_the_condensed_list(
    metric: str, full: float, judged: float
) -> None:
    assert scores(HOLES_QRELS, HOLES_RUN, metric) == {"q": pytest.approx(full, abs=1e-15)}
    got = scores(HOLES_QRELS, HOLES_RUN, f"{metric}_judged")
    assert got == {"q": pytest.approx(judged, abs=1e-15)}


def test_judged_only_metrics_when_every_retrieved_doc_is_unjudged() -> None:
    qrels = {"q": {"a": 1, "n": 0, "m": -1}, "other": {"a": 1}}
    run = {"q": ranked("u", "m", "v"), "other": ranked("a")}
    metrics = ["precision_at_5", "mrr", "map", "ndcg", "bpref", "infap", "r_precision"]
    evaluation = evaluate(qrels, run, [f"{m}_judged" for m in metrics])
    assert set(evaluation.per_query["q"].values()) == {0.0}
    assert evaluation.per_query["other"]["map_judged"] == 1.0


def test_holes_metrics_are_zero_without_relevant_docs() -> None:
    qrels = {"q": {"n": 0, "m": -1}}
    run = {"q": ranked("u", "n", "m")}
    metrics = ["bpref", "infap", "bpref_judged", "infap_judged", "map_judged", "ndcg_judged"]
    assert evaluate(qrels, run, metrics).per_query == {"q": dict.fromkeys(metrics, 0.0)}


def test_registered_metric_has_a_judged_form(mean_rank: str) -> None:
    evaluation = evaluate(
        HOLES_QRELS, HOLES_RUN, [mean_rank, f"{mean_rank}_judged", f"{mean_rank}_at_2_judged"]
    )
    # Relevant a and c: ranks 5 and 6, judged-only ranks 2 and 3.
    assert evaluation.per_query == {
        "q": {"mean_rank": 5.5, "mean_rank_judged": 2.5, "mean_rank_at_2_judged": 2.0}
    }


def test_judged_only_view_given_to_registered_metrics() -> None:
    seen: list[RankedJudgments] = []

    def spy(ranked: RankedJudgments, k: int | None) -> npt.NDArray[np.float64]:
        seen.append(ranked)
        return np.zeros(ranked.n_queries)

    register_metric("spy", spy, cutoff="none")
    try:
        evaluate(HOLES_QRELS, HOLES_RUN, ["spy", "spy_judged"])
    finally:
        unregister_metric("spy")
    full, judged = seen
    assert (full.rank.tolist(), full.grade.tolist()) == ([2, 3, 5, 6], [-1, 0, 2, 1])
    assert (judged.rank.tolist(), judged.grade.tolist()) == ([1, 2, 3], [0, 2, 1])
    assert (full.num_retrieved.tolist(), judged.num_retrieved.tolist()) == ([6], [3])
    assert judged.num_relevant.tolist() == full.num_relevant.tolist() == [3]
    assert judged.ideal_grade.tolist() == [2, 1, 1, 0, -1]


# --- which queries are averaged ----------------------------------------------------------------


def test_query_set_qrels_averages_every_judged_query_missing_ones_scoring_zero() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": ranked("a"), "extra": ranked("a")}
    evaluation = evaluate(qrels, run, ["mrr"])
    assert evaluation.query_ids.tolist() == ["q1", "q2"]
    assert evaluation.per_query == {"q1": {"mrr": 1.0}, "q2": {"mrr": 0.0}}
    assert evaluation.mean == {"mrr": 0.5}
    assert evaluation.semantics is not None and evaluation.semantics.query_set == "qrels"
    missing = [n for n in evaluation.notes if "missing from the run" in n]
    extra = [n for n in evaluation.notes if "no judgments" in n]
    assert len(missing) == 1 and "q2" in missing[0] and missing[0].startswith("1 of 2")
    assert len(extra) == 1 and "extra" in extra[0] and extra[0].startswith("1 run queries")


def test_query_set_intersection_averages_queries_in_both() -> None:
    qrels = {"q1": {"a": 1}, "q2": {"a": 1}}
    run = {"q1": ranked("a"), "extra": ranked("a")}
    evaluation = evaluate(qrels, run, ["mrr"], query_set="intersection")
    assert evaluation.query_ids.tolist() == ["q1"]
    assert evaluation.mean == {"mrr": 1.0}
    assert not any("missing from the run" in n for n in evaluation.notes)
    assert any("extra" in n for n in evaluation.notes)


@pytest.mark.parametrize("query_set", ["qrels", "intersection"])
def test_a_run_sharing_no_query_with_the_qrels_is_an_error(query_set: str) -> None:
    """With query_set="qrels" every judged query scored 0 and the mean read 0.0, with only a
    note: ids written two ways ("001" and "1", as Cranfield's) looked like a system scoring 0."""
    qrels = {"1": {"a": 1}, "2": {"b": 1}}
    with pytest.raises(
        DataFormatError, match=r"share no query ids .*\['001', '002'\].*leading zeros"
    ):
        evaluate(qrels, {"001": ranked("a"), "002": ranked("b")}, ["mrr"], query_set=query_set)
    # One shared query is enough: the others are noted, as before.
    shared = evaluate(qrels, {"1": ranked("a"), "002": ranked("b")}, ["mrr"], query_set=query_set)
    assert shared.mean == {"mrr": 1.0 if query_set == "intersection" else 0.5}


def test_a_qrels_query_without_judgments_is_left_out() -> None:
    """pytrec_eval drops a query whose judgment dict is empty (trec_eval cannot even read
    one); it is neither averaged nor scored 0."""
    qrels: dict[str, dict[str, int]] = {"q1": {"a": 1}, "q2": {}}
    for query_set in ("qrels", "intersection"):
        evaluation = evaluate(
            qrels, {"q1": ranked("a"), "q2": ranked("a")}, ["mrr"], query_set=query_set
        )
        assert evaluation.query_ids.tolist() == ["q1"]
        assert any(n.startswith("1 qrels queries have no judgments") for n in evaluation.notes)
    with pytest.raises(DataFormatError, match="qrels are empty"):
        evaluate({"q": {}}, {"q": ranked("a")}, ["mrr"])


def test_query_order_follows_the_qrels() -> None:
    qrels = {"b": {"x": 1}, "a": {"x": 1}, "c": {"x": 1}}
    run = {"c": ranked("x"), "a": ranked("x"), "b": ranked("x")}
    assert evaluate(qrels, run, ["mrr"]).query_ids.tolist() == ["b", "a", "c"]


def test_unjudged_share_of_top_10_is_noted() -> None:
    evaluation = evaluate({"q": {"a": 1}}, {"q": ranked("a", "b", "c", "d")}, ["mrr"])
    (note,) = [n for n in evaluation.notes if n.startswith("75.0% of the documents in the top 10")]
    assert "except in bpref, infap and <metric>_judged" in note


# --- ids that are not strings ------------------------------------------------------------------


def test_integer_doc_ids_in_a_dict_run_match_string_qrels() -> None:
    """ids are strings; other keys (faiss positions as ints) are converted with str()."""
    qrels = {"1": {"5": 1, "7": 0}}
    run = {1: {7: 2.0, 5: 1.0}}
    assert evaluate(qrels, run, ["mrr"]).per_query == {"1": {"mrr": 0.5}}  # type: ignore[arg-type]
    assert evaluate(qrels, Run.from_dict(run), ["mrr"]).per_query == {"1": {"mrr": 0.5}}  # type: ignore[arg-type]


def test_ids_colliding_after_str_conversion_are_duplicates() -> None:
    with pytest.raises(DataFormatError, match="document '5' appears twice for query 'q'"):
        evaluate({"q": {"5": 1}}, {"q": {5: 1.0, "5": 2.0}}, ["mrr"])  # type: ignore[dict-item]
    with pytest.raises(DataFormatError, match="query id '1' appears twice"):
        Qrels.from_dict({1: {"a": 1}, "1": {"b": 1}})  # type: ignore[dict-item]


# --- metric names ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("written", "name", "k"),
    [
        ("ndcg_at_10", "ndcg_at_10", 10),
        ("NDCG_AT_10", "ndcg_at_10", 10),
        ("ndcg@10", "ndcg_at_10", 10),
        (" map ", "map", None),
        ("map_at_007", "map_at_7", 7),
        ("P@5", "precision_at_5", 5),
        ("hits@3", "hit_rate_at_3", 3),
        ("recall_cap_at_20", "recall_cap_at_20", 20),
        ("r-precision", "r_precision", None),
        ("mrr_at_10", "mrr_at_10", 10),
        ("bpref", "bpref", None),
        ("infAP", "infap", None),
    ],
)
def test_metric_names_parse(written: str, name: str, k: int | None) -> None:
    spec = parse_metric(written)
    assert (spec.name, spec.k, spec.layer, spec.judged_only) == (name, k, "retrieval", False)


@pytest.mark.parametrize(
    ("written", "name", "k"),
    [
        ("ndcg_at_10_judged", "ndcg_at_10_judged", 10),
        ("NDCG@10_JUDGED", "ndcg_at_10_judged", 10),
        ("P_5_judged", "precision_at_5_judged", 5),
        ("map_cut_100_judged", "map_at_100_judged", 100),
        ("recip_rank_judged", "mrr_judged", None),
        ("map_judged", "map_judged", None),
        ("bpref_judged", "bpref_judged", None),
        ("infAP_judged", "infap_judged", None),
    ],
)
def test_judged_only_names_parse(written: str, name: str, k: int | None) -> None:
    spec = parse_metric(written)
    assert (spec.name, spec.k, spec.judged_only) == (name, k, True)
    assert spec.family == name.removesuffix("_judged").split("_at_")[0]
    assert judged_only_name(written) == name
    assert judged_only_name(name.removesuffix("_judged")) == name


@pytest.mark.parametrize(
    ("bad", "message"),
    [
        ("bpref_at_10", r"'bpref' takes no cutoff; write bpref \(valid forms: bpref, bpref_judged"),
        ("bpref_10", "'bpref' takes no cutoff"),
        ("infap@5", r"'infap' takes no cutoff; write infap \(valid forms: infap, infap_judged"),
        ("infap_at_5_judged", "'infap' takes no cutoff; write infap_judged"),
        (
            "judged_at_5_judged",
            r"judged_at_K has no judged-only form \(with the unjudged documents removed every "
            r"document is judged\); valid forms: judged_at_K$",
        ),
        ("judged_judged", "judged_at_K has no judged-only form"),
        ("groundedness_judged", "groundedness has no judged-only form .*answer-layer"),
        ("precision_judged", "needs a cutoff: write precision_at_K_judged"),
        ("ndcg_at_0_judged", r"must be a positive integer up to \d+, e.g. ndcg_at_10_judged"),
        ("ndcg_judged_at_10", "unknown metric 'ndcg_judged_at_10'"),
        ("_judged", "unknown metric '_judged'"),
    ],
)
def test_bad_holes_metric_names(bad: str, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        parse_metric(bad)


def test_unknown_metric_hint_explains_judged_forms() -> None:
    with pytest.raises(MetricError) as info:
        parse_metric("nope_judged")
    message = str(info.value)
    assert message.startswith("unknown metric 'nope_judged'; valid metrics:")
    assert "bpref, infap" in message
    assert "_judged after a retrieval metric (e.g. ndcg_at_10_judged; not judged_at_K)" in message


def test_repeated_metric_names_are_computed_once_in_order() -> None:
    names = [s.name for s in parse_metrics(["mrr", "ndcg@10", "MRR", "ndcg_at_10", "map"])]
    assert names == ["mrr", "ndcg_at_10", "map"]


def test_unknown_metric_lists_the_valid_ones() -> None:
    with pytest.raises(MetricError) as info:
        evaluate({"q": {"a": 1}}, {"q": ranked("a")}, ["ndgc_at_10"])
    message = str(info.value)
    assert "unknown metric 'ndgc_at_10'" in message
    for form in ["precision_at_K", "ndcg, ndcg_at_K", "recall_cap_at_K", "r_precision"]:
        assert form in message


@pytest.mark.parametrize("bad", ["ndcg_at_0", "ndcg@0", "precision_at_-1", "P_0"])
def test_cutoff_must_be_positive(bad: str) -> None:
    with pytest.raises(MetricError, match="must be a positive integer"):
        parse_metric(bad)


@pytest.mark.parametrize(
    "bad", ["ndcg_at_1.5", "ndcg_at_ten", "ndcg_at_", "recall@²", "map@\u0661\u0660"]
)
def test_cutoff_must_be_an_ascii_integer(bad: str) -> None:
    with pytest.raises(MetricError, match="must be a positive integer"):
        parse_metric(bad)


def test_cutoff_required_forbidden_and_answer_layer_names() -> None:
    with pytest.raises(MetricError, match="needs a cutoff: write precision_at_K"):
        parse_metric("precision")
    with pytest.raises(MetricError, match="'r_precision' takes no cutoff"):
        parse_metric("r_precision_at_5")
    with pytest.raises(MetricError, match="answer-layer metrics"):
        evaluate({"q": {"a": 1}}, {"q": ranked("a")}, ["groundedness"])
    with pytest.raises(MetricError, match="must be a string"):
        parse_metric(10)  # type: ignore[arg-type]
    with pytest.raises(MetricError, match="no metrics given"):
        evaluate({"q": {"a": 1}}, {"q": ranked("a")}, [])


def test_one_metric_may_be_given_as_a_string() -> None:
    assert evaluate({"q": {"a": 1}}, {"q": ranked("a")}, "mrr").metrics == ("mrr",)


@pytest.mark.parametrize(
    ("option", "value", "message"),
    [
        ("relevance_level", 1.5, "relevance_level must be an integer"),
        ("relevance_level", True, "relevance_level must be an integer"),
        ("gain", "log", "gain must be one of linear, exponential"),
        ("query_set", "run", "query_set must be one of qrels, intersection"),
    ],
)
def test_bad_options(option: str, value: Any, message: str) -> None:
    with pytest.raises(MetricError, match=message):
        evaluate({"q": {"a": 1}}, {"q": ranked("a")}, ["mrr"], **{option: value})


# --- registered metrics ------------------------------------------------------------------------


def _mean_relevant_rank(ranked: RankedJudgments, k: int | None) -> npt.NDArray[np.float64]:
    """Mean rank of the relevant retrieved docs (within k), 0 when there are none."""
    mask = ranked.relevant if k is None else ranked.relevant & (ranked.rank <= k)
    total = ranked.per_query_sum(ranked.rank, mask)
    count = ranked.count(mask)
    return np.divide(total, count, out=np.zeros_like(total), where=count > 0)


@pytest.fixture
def mean_rank() -> Iterator[str]:
    register_metric("mean_rank", _mean_relevant_rank, description="mean rank of relevant docs")
    yield "mean_rank"
    unregister_metric("mean_rank")


def test_registered_metric_is_evaluated_with_and_without_cutoff(mean_rank: str) -> None:
    qrels = {"q1": {"a": 1, "c": 1}, "q2": {"x": 1}}
    run = {"q1": ranked("a", "b", "c"), "q2": ranked("y")}
    evaluation = evaluate(qrels, run, [mean_rank, f"{mean_rank}_at_2", "mrr"])
    assert evaluation.per_query == {
        "q1": {"mean_rank": 2.0, "mean_rank_at_2": 1.0, "mrr": 1.0},
        "q2": {"mean_rank": 0.0, "mean_rank_at_2": 0.0, "mrr": 0.0},
    }
    with pytest.raises(MetricError, match="mean_rank, mean_rank_at_K"):
        parse_metric("nope")


def test_registered_metric_sees_ranked_judgments(mean_rank: str) -> None:
    seen: list[RankedJudgments] = []

    def spy(ranked: RankedJudgments, k: int | None) -> npt.NDArray[np.float64]:
        seen.append(ranked)
        return np.zeros(ranked.n_queries)

    register_metric("spy", spy, cutoff="none")
    try:
        evaluate({"q": {"a": 2, "b": 0, "z": 1}}, {"q": ranked("x", "b", "a")}, ["spy"])
    finally:
        unregister_metric("spy")
    (rj,) = seen
    # Rows are the judged retrieved docs only, in rank order; unjudged "x" is counted.
    assert rj.rank.tolist() == [2, 3]
    assert rj.grade.tolist() == [0, 2]
    assert rj.num_relevant.tolist() == [2]
    assert rj.num_retrieved.tolist() == [3]
    assert rj.ideal_grade.tolist() == [2, 1, 0]


def test_registered_metric_cutoff_rules() -> None:
    register_metric("needs_k", lambda rj, k: np.zeros(rj.n_queries), cutoff="required")
    register_metric("never_k", lambda rj, k: np.zeros(rj.n_queries), cutoff="none")
    try:
        assert parse_metric("needs_k_at_3").k == 3
        with pytest.raises(MetricError, match="needs a cutoff"):
            parse_metric("needs_k")
        assert parse_metric("never_k").k is None
        with pytest.raises(MetricError, match="takes no cutoff"):
            parse_metric("never_k_at_3")
    finally:
        unregister_metric("needs_k")
        unregister_metric("never_k")
    with pytest.raises(MetricError, match="unknown metric 'needs_k_at_3'"):
        parse_metric("needs_k_at_3")


@pytest.mark.parametrize("name", ["ndcg", "map", "mrr", "groundedness"])
def test_builtin_metrics_cannot_be_replaced(name: str) -> None:
    with pytest.raises(MetricError, match="is built in"):
        register_metric(name, lambda rj, k: np.zeros(rj.n_queries))
    unregister_metric(name)  # a no-op for built-ins
    assert parse_metric(name).family == name


@pytest.mark.parametrize(
    "name", ["NDCG2", "my-metric", "x_at_y", "x_at", "1st", "", "x_judged", "bpref_judged"]
)
def test_registered_names_must_be_plain(name: str) -> None:
    with pytest.raises(MetricError, match="must be lowercase letters"):
        register_metric(name, lambda rj, k: np.zeros(rj.n_queries))


def test_registered_metric_returning_the_wrong_shape_is_reported() -> None:
    register_metric("broken", lambda rj, k: np.zeros(rj.n_queries + 1), cutoff="none")
    try:
        with pytest.raises(MetricError, match=r"'broken' returned shape \(3,\), expected \(2,\)"):
            evaluate({"a": {"x": 1}, "b": {"x": 1}}, {"a": ranked("x")}, ["broken"])
    finally:
        unregister_metric("broken")


# --- the Evaluation object ---------------------------------------------------------------------


@pytest.fixture
def evaluation() -> Evaluation:
    qrels = {"q1": {"a": 1, "b": 1}, "q2": {"c": 1}}
    run = {"q1": ranked("a", "x", "b"), "q2": ranked("x", "c")}
    return evaluate(qrels, run, ["precision_at_1", "mrr", "recall_at_2"])


def test_evaluation_means_and_per_query(evaluation: Evaluation) -> None:
    assert evaluation.metrics == ("precision_at_1", "mrr", "recall_at_2")
    assert evaluation.per_query == {
        "q1": {"precision_at_1": 1.0, "mrr": 1.0, "recall_at_2": 0.5},
        "q2": {"precision_at_1": 0.0, "mrr": 0.5, "recall_at_2": 1.0},
    }
    assert evaluation.mean == {"precision_at_1": 0.5, "mrr": 0.75, "recall_at_2": 0.75}
    assert len(evaluation) == 2
    assert "mrr=0.7500" in repr(evaluation)


def test_evaluation_arrays_are_aligned(evaluation: Evaluation) -> None:
    assert evaluation.query_ids.tolist() == ["q1", "q2"]
    assert evaluation.values.shape == (2, 3)
    assert evaluation.column("mrr").tolist() == [1.0, 0.5]
    assert evaluation.details["first_relevant_rank"].tolist() == [1, 2]
    assert evaluation.details["num_retrieved"].tolist() == [3, 2]
    with pytest.raises(MetricError, match=r"'map' was not computed.*precision_at_1, mrr"):
        evaluation.column("map")


def test_evaluation_to_dict(evaluation: Evaluation) -> None:
    full = evaluation.to_dict()
    assert full["metrics"] == evaluation.mean
    assert full["num_queries"] == 2
    assert full["per_query"] == evaluation.per_query
    assert full["semantics"] == {"relevance_level": 1, "gain": "linear", "query_set": "qrels"}
    assert full["details"]["num_relevant"] == {"q1": 2, "q2": 1}
    brief = evaluation.to_dict(per_query=False, digits=1)
    assert "per_query" not in brief
    assert brief["metrics"] == {"precision_at_1": 0.5, "mrr": 0.8, "recall_at_2": 0.8}


def test_evaluation_select_and_nan_handling() -> None:
    evaluation = Evaluation.from_per_query(
        {"q1": {"a": 1.0, "b": None}, "q2": {"a": 0.0, "b": 0.5}, "q3": {"a": 0.5}}
    )
    assert evaluation.mean["a"] == 0.5
    assert evaluation.mean["b"] == 0.5  # NaN (not applicable) is left out of the mean
    assert evaluation.to_dict()["per_query"]["q1"]["b"] is None
    assert evaluation.select(["b"]).metrics == ("b",)
    assert math.isnan(Evaluation.from_per_query({"q": {"a": None}}).mean["a"])


def test_evaluation_shape_is_checked() -> None:
    with pytest.raises(MetricError, match="shape"):
        Evaluation(np.asarray(["q"]), ("a", "b"), np.zeros((1, 3)))


# --- bad input ---------------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_non_finite_scores_are_refused_naming_query_and_doc(bad: float) -> None:
    run = {"q": {"a": 1.0, "b": bad}}
    with pytest.raises(DataFormatError, match=r"score .* of document 'b' for query 'q'"):
        evaluate({"q": {"a": 1}}, run, ["mrr"])
    with pytest.raises(DataFormatError, match=r"document 'b' for query 'q' is not a finite"):
        Run.from_dict(run)
    with pytest.raises(DataFormatError, match=r"document 'b' for query 'q' is not a finite"):
        Run.from_arrays(["q"], np.array([[0, 1]]), np.array([[1.0, bad]]), ["a", "b"])


@pytest.mark.parametrize("bad", [None, "high", [1.0]])
def test_scores_must_be_numbers(bad: object) -> None:
    run = {"q": {"a": 1.0, "b": bad}}
    with pytest.raises(DataFormatError, match=r"score .* of document 'b' for query 'q' is not a"):
        evaluate({"q": {"a": 1}}, run, ["mrr"])  # type: ignore[arg-type]
    with pytest.raises(DataFormatError, match=r"score .* of document 'b' for query 'q' is not a"):
        Run.from_dict(run)  # type: ignore[arg-type]


@pytest.mark.parametrize("bad", [1.5, "1", True, None, math.nan])
def test_grades_must_be_integers(bad: object) -> None:
    with pytest.raises(DataFormatError, match=r"grade .* of query 'q', document 'a' is not an int"):
        evaluate({"q": {"a": bad}}, {"q": ranked("a")}, ["mrr"])  # type: ignore[dict-item]


def test_integral_float_grades_are_accepted() -> None:
    assert Qrels.from_dict({"q": {"a": 2.0}}).judgments("q") == {"a": 2}  # type: ignore[dict-item]


def test_empty_qrels_and_empty_run_are_errors() -> None:
    with pytest.raises(DataFormatError, match="qrels are empty"):
        evaluate({}, {"q": ranked("a")}, ["mrr"])
    with pytest.raises(DataFormatError, match="run is empty"):
        evaluate({"q": {"a": 1}}, {}, ["mrr"])
    empty_run = Run.from_dict({})
    with pytest.raises(DataFormatError, match="run is empty"):
        evaluate({"q": {"a": 1}}, empty_run, ["mrr"])


@pytest.mark.parametrize(
    ("qrels", "run", "message"),
    [
        ([("q", "a", 1)], {"q": {"a": 1.0}}, "qrels must be a dict"),
        ({"q": [("a", 1)]}, {"q": {"a": 1.0}}, "qrels: the entry of query 'q' must be a dict"),
        ({"q": {"a": 1}}, [("q", "a", 1.0)], "run must be a Run or a dict"),
        ({"q": {"a": 1}}, {"q": ["a"]}, "results of query 'q' must be a dict"),
        ({"q": {"a": 1}}, None, "run must be a Run or a dict"),
    ],
)
def test_wrong_container_types_are_data_errors(qrels: Any, run: Any, message: str) -> None:
    with pytest.raises(DataFormatError, match=message):
        evaluate(qrels, run, ["mrr"])


def test_duplicate_doc_in_a_run_names_query_and_doc() -> None:
    expected = "document 'b' appears twice for query 'q'"
    with pytest.raises(DataFormatError, match=expected):
        Run.from_rankings({"q": ["a", "b", "b"]})
    with pytest.raises(DataFormatError, match=expected):
        Run.from_arrays(["p", "q"], np.array([[0, 1], [1, 1]]), np.ones((2, 2)), ["a", "b"])
    with pytest.raises(DataFormatError, match=expected):
        Run.from_rankings({"q": [("a", 2.0), ("b", 1.0), ("b", 0.5)]})


def test_duplicate_doc_in_qrels_names_query_and_doc() -> None:
    with pytest.raises(DataFormatError, match="document 'b' appears twice for query 'q'"):
        Qrels.from_triples([("q", "a", 1), ("q", "b", 0), ("q", "b", 1)])


def test_repeated_id_in_the_from_arrays_vocabulary_cannot_count_twice() -> None:
    """Two positions of the doc id list naming one document, both in one query's row."""
    ids = ["a", "a", "b", "c", "c"]
    for row, doc in (([0, 1, 2], "a"), ([2, 3, 4], "c"), ([4, -1, 3], "c")):
        with pytest.raises(DataFormatError, match=f"document '{doc}' appears twice for query 'q'"):
            Run.from_arrays(["q"], np.array([row]), np.array([[3.0, 2.0, 1.0]]), ids)


def test_repeated_id_in_the_from_arrays_vocabulary_in_different_queries() -> None:
    """Repeats that never meet in one query build; a judged one is refused at evaluation."""
    run = Run.from_arrays(
        ["p", "q"], np.array([[0, 2], [1, 2]]), np.array([[2.0, 1.0], [2.0, 1.0]]), ["a", "a", "b"]
    )
    assert run.to_dict() == {"p": {"a": 2.0, "b": 1.0}, "q": {"a": 2.0, "b": 1.0}}
    assert evaluate({"p": {"b": 1}}, run, ["mrr"]).mean["mrr"] == 0.5
    with pytest.raises(DataFormatError, match="document id 'a' appears more than once"):
        evaluate({"q": {"a": 1}}, run, ["precision_at_2"])


def test_errors_are_ours_never_bare_lookups() -> None:
    """A sample of the above through the common base class users catch."""
    cases: list[tuple[Any, Any, list[str]]] = [
        ({"q": {"a": 1}}, {"q": {"a": math.nan}}, ["mrr"]),
        ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["ndcg_at_0"]),
        ({"q": {"a": "x"}}, {"q": {"a": 1.0}}, ["mrr"]),
        ({}, {}, ["mrr"]),
        ({"q": {"a": 1}}, {"q": {"a": 1.0}}, ["nonsense"]),
    ]
    for qrels, run, metrics in cases:
        with pytest.raises(RagMetricsError):
            evaluate(qrels, run, metrics)


def test_registered_metric_direction_is_declared_and_checked() -> None:
    """Every verdict reads higher as better: a mean rank registered with worst=100 'improved'
    when it fell to its worst value."""
    with pytest.raises(MetricError, match="higher_is_better=False; only metrics where higher"):
        register_metric("latency", lambda rj, k: np.zeros(rj.n_queries), higher_is_better=False)
    register_metric("mean_place", lambda rj, k: np.full(rj.n_queries, 2.0), worst=100.0)
    register_metric("boom", lambda rj, k: int("x"), cutoff="none")
    register_metric("huge", lambda rj, k: [10**400] * rj.n_queries, cutoff="none")
    try:
        run = {"q": ranked("a", "b")}
        with pytest.raises(MetricError, match=r"'mean_place' returned 2.0, below its declared"):
            evaluate({"q": {"a": 1}}, run, ["mean_place"])
        with pytest.raises(MetricError, match=r"'boom' raised ValueError: invalid literal"):
            evaluate({"q": {"a": 1}}, run, ["boom"])
        with pytest.raises(MetricError, match=r"'huge' did not return numbers"):
            evaluate({"q": {"a": 1}}, run, ["huge"])
    finally:
        for name in ("mean_place", "boom", "huge"):
            unregister_metric(name)
