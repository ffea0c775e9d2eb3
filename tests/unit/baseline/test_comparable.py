"""What makes a baseline entry comparable, read as its writer meant it: scoring rules compared
as rules (a default written out is the default), metric names in their own spelling."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.baseline import BaselineStore
from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import Tolerances
from pytest_ragmetrics.errors import BaselineError
from pytest_ragmetrics.metrics.retrieval import evaluate
from pytest_ragmetrics.records import EvaluationRecord

QRELS = {"q1": {"d1": 1, "d2": 0}, "q2": {"d3": 2}}
RUN = {"q1": {"d1": 2.0, "d2": 1.0}, "q2": {"d4": 2.0, "d3": 1.0}}


def record(**rules: Any) -> EvaluationRecord:
    evaluation = evaluate(QRELS, RUN, ["ndcg_at_10", "mrr"], **rules)
    dataset = {"fingerprints": {"qrels": "r"}}
    return EvaluationRecord("test_x.py::test", "toy", evaluation, dataset=dataset, k=10)


@pytest.mark.parametrize(
    "edit",
    [
        lambda rules: {**rules, "ignore_identical_ids": False},  # a default written out
        lambda rules: {k: v for k, v in rules.items() if k != "gain"},  # a default left out
    ],
)
def test_rules_written_at_their_default_are_the_same_rules(edit: Any) -> None:
    entry = record().baseline_entry("0")
    entry["semantics"] = edit(entry["semantics"])
    verdict = compare_to_baseline(record(), entry, Tolerances())
    assert verdict.status == "ok", verdict.reasons


def test_rules_that_differ_still_make_an_entry_not_comparable() -> None:
    entry = record().baseline_entry("0")
    entry["semantics"] = {**entry["semantics"], "ignore_identical_ids": True}
    verdict = compare_to_baseline(record(), entry, Tolerances())
    assert verdict.status == "not comparable"
    assert any("ignore_identical_ids" in reason for reason in verdict.reasons)
    entry = record().baseline_entry("0")
    verdict = compare_to_baseline(record(gain="exponential"), entry, Tolerances())
    assert verdict.status == "not comparable"


def _baseline(tmp_path: Path, edit: Any) -> Path:
    entry = record().baseline_entry("0")
    edit(entry)
    path = tmp_path / "baseline.json"
    store = BaselineStore(path, {"test_x.py::test": {"toy": entry}}, exists=True)
    path.write_text(store.dumps())
    return path


def _rename(field: str, old: str, new: str) -> Any:
    def edit(entry: dict[str, Any]) -> None:
        values = entry[field]
        values[new] = values.pop(old)
        if field == "metrics":
            for row in entry["per_query"].values():
                row[new] = row.pop(old)

    return edit


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (_rename("metrics", "ndcg_at_10", "ndcg_cut_10"), "'metrics.ndcg_cut_10' is another"),
        (_rename("metrics", "mrr", "recip_rank"), "'metrics.recip_rank' is another spelling"),
        (_rename("metrics", "ndcg_at_10", "NDCG@10"), "rename the key to 'ndcg_at_10'"),
        (_rename("judged_only", "mrr", "MRR"), "'judged_only.MRR' is another spelling of 'mrr'"),
    ],
)
def test_a_metric_under_another_spelling_is_named_not_lost(
    tmp_path: Path, edit: Any, message: str
) -> None:
    path = _baseline(tmp_path, edit)
    with pytest.raises(BaselineError) as info:
        BaselineStore.load(path)
    assert message in str(info.value) and str(path) in str(info.value)


def test_the_written_names_load(tmp_path: Path) -> None:
    path = _baseline(tmp_path, lambda entry: None)
    store = BaselineStore.load(path)
    assert set(store.get("test_x.py::test", "toy")["metrics"]) == {"ndcg_at_10", "mrr"}
    assert (
        "ndcg_at_10"
        in json.loads(path.read_text())["entries"]["test_x.py::test"]["toy"]["per_query"]["q1"]
    )
