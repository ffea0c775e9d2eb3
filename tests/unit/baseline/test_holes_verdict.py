"""The regression verdict knows about holes: a drop caused by newly retrieved unjudged documents
is told apart from a real one (unjudged counts now vs baseline, the judged-only metric), and
ragmetrics_unjudged_drops decides whether it fails."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import Tolerances
from pytest_ragmetrics.baseline.verdicts import BaselineVerdict, failure_message
from pytest_ragmetrics.errors import BaselineError, ReportError
from pytest_ragmetrics.metrics.evaluation import Supplemented
from pytest_ragmetrics.metrics.retrieval import evaluate
from pytest_ragmetrics.records import EvaluationRecord
from tests.helpers.plugin_project import SERIAL_AND_N2, make_project

# q1 and q2 each have one relevant and one judged non-relevant document; u* are unjudged.
QRELS = {"q1": {"r1": 1, "n1": 0}, "q2": {"r2": 1, "n2": 0}}
BASE = {"q1": ["r1", "n1"], "q2": ["r2", "n2"]}
# Unjudged documents come in above the relevant ones: plain metrics drop, judged-only ones not.
HOLES = {"q1": ["u1", "u2", "r1", "n1"], "q2": ["u3", "r2", "n2"]}
# The judged non-relevant document overtakes the relevant one: a real drop.
REAL = {"q1": ["n1", "r1"], "q2": ["u3", "n2", "r2"]}
METRICS = ["ndcg_at_10", "mrr", "bpref"]


def record(rankings: dict[str, list[str]]) -> EvaluationRecord:
    run = {q: {d: float(len(docs) - i) for i, d in enumerate(docs)} for q, docs in rankings.items()}
    evaluation = evaluate(QRELS, run, METRICS)
    dataset = {"fingerprints": {"qrels": "r"}}
    return EvaluationRecord("test_x.py::test", "toy", evaluation, dataset=dataset, k=10)


def entry(rankings: dict[str, list[str]]) -> dict[str, Any]:
    return record(rankings).baseline_entry("0")


def test_evaluations_carry_unjudged_counts_and_judged_only_means() -> None:
    evaluation = record(HOLES).evaluation
    assert evaluation.details["unjudged_at_10"].tolist() == [2, 1]
    assert evaluation.details["unjudged"].tolist() == [2, 1]  # mrr has no cutoff
    assert set(evaluation.judged_only) == {"ndcg_at_10", "mrr"}  # bpref tolerates holes
    assert evaluation.judged_only["mrr"] == 1.0 and evaluation.mean["mrr"] == pytest.approx(
        (1 / 3 + 1 / 2) / 2
    )
    stored = entry(HOLES)
    assert stored["judged_only"] == {"ndcg_at_10": 1.0, "mrr": 1.0}
    assert stored["details"]["unjudged_at_10"] == {"q1": 2, "q2": 1}
    back = EvaluationRecord.from_dict({"test": "t", "name": "n", **stored})
    assert back.evaluation.judged_only == {"ndcg_at_10": 1.0, "mrr": 1.0}


def test_a_drop_from_unjudged_documents_fails_and_says_why() -> None:
    verdict = compare_to_baseline(record(HOLES), entry(BASE), Tolerances())
    assert verdict.status == "regressed"
    failed = {m.metric: m for m in verdict.failed_metrics}
    assert set(failed) == {"ndcg_at_10", "mrr"}  # bpref did not drop
    holes = failed["ndcg_at_10"].holes
    assert holes is not None and holes.explained
    assert (holes.k, holes.unjudged_now, holes.shown_now) == (10, 3, 7)
    assert (holes.unjudged_before, holes.shown_before) == (0, 4)
    assert (holes.judged_only_before, holes.judged_only_now) == (1.0, 1.0)
    # No supplementary labels: nothing is said of them (not an empty "shown only" note).
    assert holes.labels_note == "" and holes.to_dict()["labels_note"] == ""
    message = failure_message(record(HOLES), verdict, "baseline.json")
    assert "unjudged documents in the top 10: 3 of 7 now, 0 of 4 in the baseline" in message
    assert "ndcg_at_10 on judged documents only (ndcg_at_10_judged): 1.0000 → 1.0000" in message
    assert "the drop comes from newly retrieved documents that nobody judged" in message
    assert "ragmetrics pool" in message and "ragmetrics_unjudged_drops = pass" in message
    assert "unjudged documents in the retrieved documents: 3 of 7 now" in message  # mrr


def test_unjudged_drops_pass_lets_only_such_drops_pass() -> None:
    verdict = compare_to_baseline(record(HOLES), entry(BASE), Tolerances(), unjudged_drops="pass")
    assert verdict.status == "ok"
    ndcg = next(m for m in verdict.metrics if m.metric == "ndcg_at_10")
    assert ndcg.status == "ok" and "only through newly retrieved unjudged documents" in ndcg.note
    assert ndcg.holes is not None and ndcg.holes.explained
    real = compare_to_baseline(record(REAL), entry(BASE), Tolerances(), unjudged_drops="pass")
    assert real.status == "regressed"
    with pytest.raises(BaselineError, match="unjudged_drops must be fail or pass"):
        compare_to_baseline(record(REAL), entry(BASE), Tolerances(), unjudged_drops="maybe")


# q1 loses its only relevant document; q2..q4 trade a judged non-relevant document above the
# relevant one for an unjudged one: their judged-only values rise, and the mean's hides q1.
MIXED_QRELS = {f"q{i}": {f"r{i}": 1, f"n{i}": 0} for i in range(1, 5)}
MIXED_BASE = {"q1": ["r1", "n1"], **{f"q{i}": [f"n{i}", f"r{i}"] for i in range(2, 5)}}
MIXED_AFTER = {"q1": ["u1", "u2"], **{f"q{i}": [f"u{i}", f"r{i}"] for i in range(2, 5)}}


def test_a_lost_relevant_document_is_never_explained_by_holes_elsewhere() -> None:
    def mixed(rankings: dict[str, list[str]]) -> EvaluationRecord:
        run = {q: {d: float(len(ds) - i) for i, d in enumerate(ds)} for q, ds in rankings.items()}
        return EvaluationRecord("t.py::t", "toy", evaluate(MIXED_QRELS, run, METRICS), k=10)

    after = mixed(MIXED_AFTER)
    base = mixed(MIXED_BASE).baseline_entry("0")
    assert after.evaluation.judged_only["ndcg_at_10"] > base["judged_only"]["ndcg_at_10"]
    verdict = compare_to_baseline(after, base, Tolerances(), unjudged_drops="pass")
    assert verdict.status == "regressed"  # passed as "only through unjudged documents"
    ndcg = next(m for m in verdict.failed_metrics if m.metric == "ndcg_at_10")
    assert ndcg.holes is not None and ndcg.holes.unexplained == ("q1",)
    assert not ndcg.holes.explained
    message = failure_message(after, verdict, "baseline.json")
    assert "queries the unjudged documents do not explain (1): 'q1'" in message
    assert "nobody judged" not in message
    back = type(ndcg.holes).from_dict(ndcg.holes.to_dict())
    assert back.unexplained == ("q1",)


def test_a_real_drop_says_the_judged_only_metric_dropped_too() -> None:
    verdict = compare_to_baseline(record(REAL), entry(BASE), Tolerances())
    ndcg = next(m for m in verdict.failed_metrics if m.metric == "ndcg_at_10")
    assert ndcg.holes is not None and ndcg.holes.judged_only_dropped is True
    assert not ndcg.holes.explained
    message = failure_message(record(REAL), verdict, "baseline.json")
    assert "dropped too: judged documents moved, not only holes" in message
    assert "nobody judged" not in message


def test_an_older_baseline_without_counts_is_still_compared() -> None:
    old = entry(BASE)
    del old["judged_only"]
    old["details"] = {k: v for k, v in old["details"].items() if not k.startswith("unjudged")}
    verdict = compare_to_baseline(record(HOLES), old, Tolerances(), unjudged_drops="pass")
    assert verdict.status == "regressed"  # without the baseline's judged-only value: unproven
    ndcg = next(m for m in verdict.failed_metrics if m.metric == "ndcg_at_10")
    assert ndcg.holes is not None and ndcg.holes.unjudged_before is None
    message = failure_message(record(HOLES), verdict, "baseline.json")
    assert "3 of 7 now, unknown in the baseline (recorded by an older version)" in message


def test_holes_survive_the_xdist_hand_off() -> None:
    verdict = compare_to_baseline(record(HOLES), entry(BASE), Tolerances())
    data = json.loads(json.dumps(verdict.to_dict()))
    back = BaselineVerdict.from_dict(data)
    assert back.to_dict() == verdict.to_dict()
    assert data["metrics"][0]["holes"]["explained"] is True


# -- the demo: a retriever change pulls in unjudged documents ------------------------------

CONFTEST = """
import os

import pytest

from pytest_ragmetrics import Run

OLD = {"q1": ["d1"], "q2": ["d2"], "q3": ["d3", "d4"], "q4": ["d5"]}
# The new retriever finds documents nobody judged for these queries and ranks them first.
NEW = {"q1": ["d4", "d1"], "q2": ["d5", "d2"], "q3": ["d3", "d4"], "q4": ["d5"]}


class Retriever:
    name = "toy"

    def identity(self):
        return {"name": "toy", "new": bool(os.environ.get("RAG_NEW"))}

    def search(self, queries, k):
        table = NEW if os.environ.get("RAG_NEW") else OLD
        return Run.from_rankings({q: table[q][:k] for q in queries})


@pytest.fixture(scope="session")
def rag_retriever():
    return Retriever()
"""

TESTS = """
def test_retrieval(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="toy")
"""


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_demo_a_retriever_change_that_pulls_in_unjudged_documents(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.delenv("RAG_NEW", raising=False)
    make_project(pytester, tests=TESTS, conftest=textwrap.dedent(CONFTEST))
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("RAG_NEW", "1")
    result = pytester.runpytest(*xdist, "-v", "--ragmetrics-json=report.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'toy' (test_rag.py::test_retrieval) regressed against the baseline*",
            "*ndcg_at_10: baseline 1.0000 → current 0.8155*",
            "*unjudged documents in the top 10: 2 of 7 now, 0 of 5 in the baseline*",
            "*ndcg_at_10 on judged documents only (ndcg_at_10_judged): 1.0000 → 1.0000, did "
            "not drop: the drop comes from newly retrieved documents that nobody judged*",
            "*Unjudged documents may well be relevant: judge them. `ragmetrics pool*",
        ]
    )
    report = json.loads((pytester.path / "report.json").read_text())
    (evaluation,) = report["evaluations"]
    assert evaluation["judged_only"]["ndcg_at_10"] == 1.0
    metrics = {m["metric"]: m for m in evaluation["outcome"]["baseline"]["metrics"]}
    assert metrics["ndcg_at_10"]["holes"]["explained"] is True
    passing = pytester.runpytest(*xdist, "--ragmetrics-unjudged-drops=pass")
    passing.assert_outcomes(passed=1)
    passing.stdout.fnmatch_lines(["*only through newly retrieved unjudged documents*"])


def test_unjudged_drops_option_is_checked(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS, ini='ragmetrics_unjudged_drops = "sometimes"\n')
    result = pytester.runpytest()
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*ragmetrics_unjudged_drops*'sometimes' must be one of fail, pass*"]
    )


def test_compare_command_explains_and_can_pass_unjudged_drops(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ragmetrics.cli import main

    def baseline(rankings: dict[str, list[str]], name: str) -> Path:
        path = tmp_path / name
        entries = {"test_x.py::test": {"toy": entry(rankings)}}
        path.write_text(json.dumps({"schema_version": 1, "entries": entries}))
        return path

    before, after = baseline(BASE, "before.json"), baseline(HOLES, "after.json")
    assert main(["compare", str(before), str(after)]) == 1
    out = capsys.readouterr().out
    assert "unjudged documents in the top 10: 3 of 7 now, 0 of 4 in the baseline" in out
    assert main(["compare", str(before), str(after), "--unjudged-drops", "pass"]) == 0
    capsys.readouterr()
    with pytest.raises(SystemExit) as info:
        main(["compare", str(before), str(after), "--unjudged-drops", "never"])
    assert info.value.code == 2
    assert "must be one of fail, pass" in capsys.readouterr().err


def test_trusted_labels_clear_a_drop_and_say_when_they_changed() -> None:
    def labelled(rankings: dict[str, list[str]], ndcg: float, fingerprint: str) -> Any:
        recorded = record(rankings)
        recorded.evaluation.supplemented = Supplemented(
            {"ndcg_at_10": ndcg, "mrr": 1.0, "bpref": 1.0}, fingerprint=fingerprint
        )
        return recorded

    base = labelled(BASE, 0.9, "old").baseline_entry("0")
    verdict = compare_to_baseline(labelled(HOLES, 0.95, "old"), base, Tolerances())
    assert verdict.status == "ok"
    ndcg = next(m for m in verdict.metrics if m.metric == "ndcg_at_10")
    assert "but not with the supplementary judge labels" in ndcg.note
    assert ndcg.holes is not None and ndcg.holes.labels_note == ""
    changed = compare_to_baseline(labelled(HOLES, 0.95, "new"), base, Tolerances())
    ndcg = next(m for m in changed.metrics if m.metric == "ndcg_at_10")
    assert ndcg.holes is not None and "labels changed since the baseline" in ndcg.holes.labels_note
    unused = labelled(HOLES, 0.95, "old")
    unused.evaluation.supplemented = Supplemented(
        {"ndcg_at_10": 0.95, "mrr": 1.0, "bpref": 1.0},
        fingerprint="old",
        used=False,
        reason="the judge's kappa 0.31 is below 0.6",
    )
    ndcg = next(
        m
        for m in compare_to_baseline(unused, base, Tolerances()).metrics
        if m.metric == "ndcg_at_10"
    )
    assert ndcg.holes is not None
    assert ndcg.holes.labels_note == (
        "shown only, not used for pass/fail: the judge's kappa 0.31 is below 0.6"
    )
    worse = compare_to_baseline(labelled(HOLES, 0.5, "old"), base, Tolerances())
    assert worse.status == "regressed"  # the labels say it dropped too
    message = failure_message(labelled(HOLES, 0.5, "old"), worse, "baseline.json")
    assert "ndcg_at_10 with the supplementary judge labels: 0.9000 → 0.5000, dropped too" in message


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("judged_only", {"ndcg_at_10": "high"}, "'judged_only' must map metric names"),
        ("supplemented", [1], "'supplemented' must be an object"),
        ("supplemented", {"metrics": {"x": "y"}}, "'supplemented.metrics' must map"),
        ("supplemented", {"metrics": {}, "labels_used": -1}, "labels_used' must be a non-neg"),
        ("supplemented", {"metrics": {}, "kappa": "0.4"}, "'supplemented.kappa' must be a"),
        ("supplemented", {"metrics": {}, "used": "yes"}, "'supplemented.used' must be true"),
    ],
)
def test_hand_edited_companions_in_a_baseline_are_named(
    tmp_path: Path, field: str, value: object, message: str
) -> None:
    from pytest_ragmetrics.baseline.compare import load_evaluations

    entry_data = entry(BASE)
    entry_data[field] = value
    path = tmp_path / "report.json"
    path.write_text(json.dumps({"evaluations": [{"test": "t", "name": "n", **entry_data}]}))
    with pytest.raises(ReportError, match=message) as info:  # a report's, not a baseline's
        load_evaluations(path)
    assert str(path) in str(info.value)


def test_compare_runs_explains_a_drop_from_unjudged_documents(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ragmetrics.cli import main

    qrels = tmp_path / "qrels.txt"
    qrels.write_text(
        "".join(f"{q} 0 {d} {g}\n" for q, docs in QRELS.items() for d, g in docs.items())
    )
    paths = []
    for name, rankings in (("base", BASE), ("holes", HOLES)):
        path = tmp_path / f"{name}.trec"
        path.write_text(
            "".join(
                f"{q} Q0 {d} {i + 1} {10 - i} {name}\n"
                for q, docs in rankings.items()
                for i, d in enumerate(docs)
            )
        )
        paths.append(str(path))
    assert main(["compare", "--qrels", str(qrels), "-m", "ndcg_at_10", *paths]) == 1
    out = capsys.readouterr().out
    assert "unjudged documents in the top 10: 3 of 7 now, 0 of 4 in the reference" in out
    assert "did not drop: the drop comes from newly retrieved documents" in out
    assert "Unjudged documents may well be relevant: judge them" in out
    assert main(["compare", "--qrels", str(qrels), "-m", "ndcg_at_10", "--unjudged-drops",
                 "pass", *paths]) == 0  # fmt: skip
