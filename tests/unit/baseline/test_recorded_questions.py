"""A question identity the baseline's writer did not record yet, with the same judge, is the
same instrument; any other change of judge or question is not."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import Tolerances
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.records import EvaluationRecord

JUDGE = {"name": "http", "model": "m", "prompt_sha256": "aa"}
RELEVANCE = {"name": "http-answer-relevance", "model": "m", "parameters": {"seed": 0}}
CONTEXT = {"name": "ctx", "parameters": {"threshold": 0.2}}


def _record(identity: dict[str, Any]) -> EvaluationRecord:
    values = {"q1": {"answer_relevance": 1.0}, "q2": {"answer_relevance": 0.0}}
    evaluation = Evaluation.from_per_query(values, layer="answer")
    return EvaluationRecord("t.py::t", "answers", evaluation, identity)


def _verdict(before: dict[str, Any], after: dict[str, Any]) -> Any:
    return compare_to_baseline(_record(after), _record(before).baseline_entry("0"), Tolerances())


@pytest.mark.parametrize(
    "before",
    [
        {"judge": JUDGE},  # written before any question was recorded
        {"judge": JUDGE, "questions": {"context_relevance": CONTEXT}},
    ],
)
def test_a_question_recorded_since_is_not_a_change_of_judge(before: dict[str, Any]) -> None:
    questions = {**before.get("questions", {}), "answer_relevance": RELEVANCE}
    verdict = _verdict(before, {"judge": JUDGE, "questions": questions})
    assert verdict.status == "ok", verdict.reasons
    assert verdict.identity_change == ""


def test_a_new_question_with_another_judge_is_a_change() -> None:
    other = {**JUDGE, "prompt_sha256": "bb"}
    after = {"judge": other, "questions": {"answer_relevance": RELEVANCE}}
    verdict = _verdict({"judge": JUDGE}, after)
    assert verdict.status == "not comparable"
    assert "prompt_sha256" in verdict.identity_change


@pytest.mark.parametrize(
    "after",
    [
        {"judge": JUDGE, "questions": {"context_relevance": {**CONTEXT, "parameters": {}}}},
        {"judge": JUDGE},  # a question the baseline recorded is gone
    ],
)
def test_a_recorded_question_that_changed_or_went_is_a_change(after: dict[str, Any]) -> None:
    verdict = _verdict({"judge": JUDGE, "questions": {"context_relevance": CONTEXT}}, after)
    assert verdict.status == "not comparable"
    assert "context_relevance" in verdict.identity_change
