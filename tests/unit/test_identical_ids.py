"""BEIR's ``ignore_identical_ids``: ``Run.without_identical_ids``, ``evaluate(...,
ignore_identical_ids=True)`` and ``ragmetrics evaluate --ignore-identical-ids``.

The dataset is built like ArguAna: every query is also a document of the corpus (same id), the
relevant document of a query is another one (its counter-argument), and a retriever tends to
find the query itself first.
"""

from __future__ import annotations

import json
import random
from io import StringIO
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics import (
    MetricError,
    MetricSemantics,
    Qrels,
    Run,
    evaluate,
    write_qrels,
    write_run,
)
from pytest_ragmetrics.cli import main
from pytest_ragmetrics.records import EvaluationRecord

# Queries a1, a2, a3 are documents too.
QRELS = {
    "a1": {"d1": 1},
    "a2": {"d2": 1},
    "a3": {"a3": 1},  # its only relevant document is itself: it keeps this judgment
}
RUN = {
    "a1": {"a1": 0.9, "d2": 0.8, "d1": 0.7},  # itself first: d1 moves from rank 3 to 2
    "a2": {"d3": 0.9, "a2": 0.8, "d4": 0.7, "d2": 0.6},  # d2 moves from rank 4 into the top 3
    "a3": {"a3": 0.9, "d1": 0.5},  # only d1 is left
}
METRICS = ["mrr", "recall_at_3", "ndcg_at_3", "precision_at_2"]


def test_the_run_loses_exactly_the_identical_documents() -> None:
    run = Run.from_dict(RUN)
    filtered = run.without_identical_ids()
    assert filtered.to_dict() == {
        "a1": {"d2": 0.8, "d1": 0.7},
        "a2": {"d3": 0.9, "d4": 0.7, "d2": 0.6},
        "a3": {"d1": 0.5},
    }
    assert filtered.depths().tolist() == [2, 3, 1]
    assert run.num_entries == 9  # the original is unchanged
    assert list(filtered) == ["a1", "a2", "a3"]


def test_a_query_left_with_nothing_stays_in_the_run() -> None:
    filtered = Run.from_dict({"q": {"q": 1.0}, "r": {"x": 2.0, "q": 1.0}}).without_identical_ids()
    assert filtered.to_dict() == {"q": {}, "r": {"x": 2.0, "q": 1.0}}


def test_ids_are_compared_within_a_query_only() -> None:
    # 'a2' is a query id, but under query a1 it is just another document.
    run = Run.from_dict({"a1": {"a2": 1.0, "a1": 0.5}, "a2": {"a1": 1.0}})
    assert run.without_identical_ids().to_dict() == {"a1": {"a2": 1.0}, "a2": {"a1": 1.0}}


def test_nothing_to_remove_gives_the_same_run() -> None:
    run = Run.from_dict({"q1": {"d1": 1.0, "d2": 0.5}})
    assert run.without_identical_ids() is run


def test_arrays_with_a_large_vocabulary() -> None:
    # A faiss-shaped run over a corpus larger than the run: only the used ids are looked at.
    corpus_ids = [f"d{i}" for i in range(50)] + ["q0", "q1"]
    run = Run.from_arrays(
        ["q0", "q1"],
        np.array([[50, 3], [0, 51]]),
        np.array([[0.9, 0.1], [0.8, 0.7]]),
        corpus_ids,
    )
    assert run.without_identical_ids().to_dict() == {"q0": {"d3": 0.1}, "q1": {"d0": 0.8}}


def test_ties_keep_trec_eval_order_after_removal() -> None:
    # Tied scores rank by doc id descending; removing the query keeps that order.
    run = Run.from_dict({"b": {"a": 1.0, "b": 1.0, "c": 1.0}})
    assert [d for d, _ in run.ranking("b")] == ["c", "b", "a"]
    assert [d for d, _ in run.without_identical_ids().ranking("b")] == ["c", "a"]


def test_hand_computed_numbers() -> None:
    before = evaluate(QRELS, RUN, METRICS)
    after = evaluate(QRELS, RUN, METRICS, ignore_identical_ids=True)
    # Without the rule: a1 finds d1 at 3, a2 finds d2 at 4, a3 finds itself at 1.
    assert before.per_query == {
        "a1": {"mrr": 1 / 3, "recall_at_3": 1.0, "ndcg_at_3": 0.5, "precision_at_2": 0.0},
        "a2": {"mrr": 0.25, "recall_at_3": 0.0, "ndcg_at_3": 0.0, "precision_at_2": 0.0},
        "a3": {"mrr": 1.0, "recall_at_3": 1.0, "ndcg_at_3": 1.0, "precision_at_2": 0.5},
    }
    # With it: d1 at 2 for a1; d2 at 3 for a2 (the 4th document entered the top 3); a3 keeps
    # its judgment on itself and finds nothing relevant, so it scores 0.
    assert after.per_query["a1"] == pytest.approx(
        {"mrr": 0.5, "recall_at_3": 1.0, "ndcg_at_3": 1 / np.log2(3), "precision_at_2": 0.5}
    )
    assert after.per_query["a2"] == pytest.approx(
        {"mrr": 1 / 3, "recall_at_3": 1.0, "ndcg_at_3": 0.5, "precision_at_2": 0.0}
    )
    assert after.per_query["a3"] == {
        "mrr": 0.0,
        "recall_at_3": 0.0,
        "ndcg_at_3": 0.0,
        "precision_at_2": 0.0,
    }
    assert after.mean == pytest.approx(
        {
            "mrr": (0.5 + 1 / 3) / 3,
            "recall_at_3": 2 / 3,
            "ndcg_at_3": (1 / np.log2(3) + 0.5) / 3,
            "precision_at_2": 0.5 / 3,
        }
    )
    assert after.details["num_relevant"].tolist() == [1, 1, 1]
    assert after.details["num_retrieved"].tolist() == [2, 3, 1]


def test_the_evaluation_records_the_rule() -> None:
    after = evaluate(QRELS, RUN, METRICS, ignore_identical_ids=True)
    assert after.semantics == MetricSemantics(ignore_identical_ids=True)
    assert after.semantics.as_dict()["ignore_identical_ids"] is True
    assert (
        "ignore_identical_ids: 3 retrieved documents whose id equals their query's id were "
        "removed before scoring" in after.notes
    )
    before = evaluate(QRELS, RUN, METRICS)
    # Off, the key is absent: records made before the option existed stay comparable.
    assert "ignore_identical_ids" not in before.semantics.as_dict()
    assert before.semantics != after.semantics


def test_the_rule_survives_a_record_round_trip() -> None:
    # The record that travels to the controller, the baseline and the JSON report.
    after = evaluate(QRELS, RUN, METRICS, ignore_identical_ids=True)
    data = EvaluationRecord("test_x", "bm25", after).to_dict()
    assert data["semantics"]["ignore_identical_ids"] is True
    rebuilt = EvaluationRecord.from_dict(json.loads(json.dumps(data)))
    assert rebuilt.evaluation.semantics == after.semantics
    plain = EvaluationRecord("test_x", "bm25", evaluate(QRELS, RUN, METRICS)).to_dict()
    assert plain["semantics"] == {"relevance_level": 1, "gain": "linear", "query_set": "qrels"}


def test_a_non_boolean_is_refused() -> None:
    with pytest.raises(MetricError, match="ignore_identical_ids must be true or false"):
        MetricSemantics(ignore_identical_ids="yes")  # type: ignore[arg-type]


def _beir_filter(run: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """What BEIR's evaluate does to the results before pytrec_eval (without editing them)."""
    return {qid: {d: s for d, s in docs.items() if d != qid} for qid, docs in run.items()}


@pytest.mark.parametrize("seed", range(5))
def test_same_numbers_as_pytrec_eval_on_the_filtered_run(seed: int) -> None:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    rng = random.Random(seed)
    ids = [f"x{i}" for i in range(40)]
    queries = ids[:15]
    qrels = {q: {d: rng.choice([0, 1, 2]) for d in rng.sample(ids, 5)} for q in queries}
    run = {}
    for q in queries:
        docs = rng.sample(ids, 20)
        if rng.random() < 0.7:
            docs[rng.randrange(3)] = q  # the query near the top, as a retriever finds it
        run[q] = {d: float(rng.randint(0, 30)) for d in dict.fromkeys(docs)}
    measures = {"ndcg_cut.5", "recall.10", "P.5", "map_cut.10", "recip_rank"}
    reference = pytrec_eval.RelevanceEvaluator(qrels, measures).evaluate(_beir_filter(run))
    ours = evaluate(
        qrels,
        run,
        ["ndcg_at_5", "recall_at_10", "precision_at_5", "map_at_10", "mrr"],
        ignore_identical_ids=True,
        query_set="intersection",
    )
    names = {
        "ndcg_cut_5": "ndcg_at_5",
        "recall_10": "recall_at_10",
        "P_5": "precision_at_5",
        "map_cut_10": "map_at_10",
        "recip_rank": "mrr",
    }
    assert set(reference) == set(ours.per_query)
    for qid, row in reference.items():
        for theirs, mine in names.items():
            assert ours.per_query[qid][mine] == pytest.approx(row[theirs], abs=1e-9), (qid, mine)


def _cli(*args: str) -> tuple[int, dict[str, Any]]:
    out = StringIO()
    code = main(["evaluate", *args, "--format", "json", "--per-query"], out=out)
    return code, json.loads(out.getvalue()) if code == 0 else {}


def test_cli_flag(tmp_path: Path) -> None:
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    write_qrels(Qrels.from_dict(QRELS), qrels)
    write_run(Run.from_dict(RUN), run)
    code, plain = _cli("--qrels", str(qrels), "--run", str(run), *(f"-m{m}" for m in METRICS))
    assert code == 0
    code, filtered = _cli(
        "--qrels",
        str(qrels),
        "--run",
        str(run),
        "--ignore-identical-ids",
        *(f"-m{m}" for m in METRICS),
    )
    assert code == 0
    expected = evaluate(QRELS, RUN, METRICS, ignore_identical_ids=True)
    assert filtered["metrics"] == pytest.approx(expected.mean)
    assert plain["metrics"] == pytest.approx(evaluate(QRELS, RUN, METRICS).mean)
    assert filtered["per_query"]["a3"] == dict.fromkeys(METRICS, 0.0)
    assert any("ignore_identical_ids: 3 " in n for n in filtered["notes"])


def test_a_retriever_on_a_corpus_that_contains_its_queries() -> None:
    """ArguAna's shape end to end: BM25 finds each query itself first; the rule removes it."""
    pytest.importorskip("bm25s")
    from pytest_ragmetrics import Corpus, Queries
    from pytest_ragmetrics.retrievers import BM25Retriever

    arguments = {
        "a1": "school uniforms limit the self expression of pupils",
        "a2": "nuclear power is a cheap and clean source of energy",
        "a3": "zoos protect endangered species from extinction",
        "c1": "uniforms let pupils focus on learning instead of clothes and self image",
        "c2": "nuclear waste stays dangerous for thousands of years, so the energy is not clean",
        "c3": "animals in zoos suffer, and few zoo species are ever returned to the wild",
    }
    corpus = Corpus.from_dict(arguments)
    queries = Queries.from_dict({q: arguments[q] for q in ("a1", "a2", "a3")})
    qrels = {"a1": {"c1": 1}, "a2": {"c2": 1}, "a3": {"c3": 1}}  # the counter-arguments
    run = BM25Retriever(corpus).search(queries, 3)
    assert [run.ranking(q)[0][0] for q in queries] == ["a1", "a2", "a3"]
    assert [run.ranking(q)[1][0] for q in queries] == ["c1", "c2", "c3"]
    plain = evaluate(qrels, run, ["mrr", "precision_at_1"])
    assert plain.mean == {"mrr": 0.5, "precision_at_1": 0.0}
    filtered = evaluate(qrels, run, ["mrr", "precision_at_1"], ignore_identical_ids=True)
    assert filtered.mean == {"mrr": 1.0, "precision_at_1": 1.0}
    # Each query matches itself and its counter-argument only (BM25 returns the documents
    # holding a query term); removing itself leaves one, nothing fetched in its place.
    assert run.depths().tolist() == [2, 2, 2]
    assert run.without_identical_ids().depths().tolist() == [1, 1, 1]
