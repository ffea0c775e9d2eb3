"""Answer-layer records and metrics: the seed's example, "no claims", ordinal relevance,
duplicates, JSON round-trips."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.errors import JudgeError, MetricError
from pytest_ragmetrics.judges import AnswerAssessment, Claim
from pytest_ragmetrics.metrics.answer import evaluate_answers

JUDGE = {"name": "human", "model": None, "rubric": "r", "rubric_sha256": "x", "parameters": {}}


def seed_example() -> AnswerAssessment:
    return AnswerAssessment(
        "q1",
        "Paris is the capital of France. It has ten million bridges.",
        (
            Claim("Paris is the capital of France.", True, ("c1",)),
            Claim("It has ten million bridges.", False),
        ),
        addresses_question=True,
        judge=JUDGE,
    )


def test_seed_example_two_claims_one_supported() -> None:
    evaluation = evaluate_answers([seed_example()])
    assert evaluation.layer == "answer"
    assert evaluation.metrics == ("groundedness", "answer_relevance")
    assert evaluation.per_query == {"q1": {"groundedness": 0.5, "answer_relevance": 1.0}}
    assert evaluation.mean == {"groundedness": 0.5, "answer_relevance": 1.0}
    assert evaluation.details["claims"].tolist() == [2]
    assert evaluation.details["supported_claims"].tolist() == [1]
    assert evaluation.notes == []


def test_no_claims_is_not_applicable_counted_and_noted() -> None:
    empty = AnswerAssessment("q2", "I don't know.", (), addresses_question=False)
    evaluation = evaluate_answers([seed_example(), empty])
    assert math.isnan(evaluation.per_query["q2"]["groundedness"])
    assert evaluation.per_query["q2"]["answer_relevance"] == 0.0
    assert evaluation.mean["groundedness"] == 0.5  # q2 is left out, not counted as 0 or 1
    assert evaluation.mean["answer_relevance"] == 0.5
    assert evaluation.details["no_claims"].tolist() == [0, 1]
    assert any("1 of 2 answers have no judged claims (q2)" in n for n in evaluation.notes)
    data = evaluation.to_dict()
    assert data["per_query"]["q2"]["groundedness"] is None
    assert data["details"]["no_claims"] == {"q1": 0, "q2": 1}
    assert data["notes"]


def test_unjudged_claims_count_in_neither_numerator_nor_denominator() -> None:
    a = AnswerAssessment(
        "q", "a. b. c.", (Claim("a.", True), Claim("b.", None), Claim("c.", False))
    )
    assert a.judged_claims == 2 and a.supported_claims == 1
    evaluation = evaluate_answers([a])
    assert evaluation.per_query["q"]["groundedness"] == 0.5
    assert math.isnan(evaluation.per_query["q"]["answer_relevance"])
    assert any("could not decide" in n for n in evaluation.notes)
    assert any("no relevance verdict" in n for n in evaluation.notes)
    only_unjudged = AnswerAssessment("q", "b.", (Claim("b.", None),))
    assert math.isnan(evaluate_answers([only_unjudged]).mean["groundedness"])
    assert evaluate_answers([only_unjudged]).details["no_claims"].tolist() == [1]


def test_all_answers_without_claims_give_a_nan_mean() -> None:
    evaluation = evaluate_answers([AnswerAssessment("q", "", ())])
    assert math.isnan(evaluation.mean["groundedness"])
    assert evaluation.to_dict()["metrics"]["groundedness"] is None


@pytest.mark.parametrize(("score", "expected"), [(1, 0.0), (2, 0.25), (4, 0.75), (5, 1.0)])
def test_ordinal_relevance_is_scaled_by_the_rubrics_scale(score: int, expected: float) -> None:
    a = AnswerAssessment("q", "x", (), addresses_question=score, relevance_scale=(1, 5))
    assert a.answer_relevance == expected
    assert evaluate_answers([a]).per_query["q"]["answer_relevance"] == expected


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"addresses_question": 3}, "no relevance_scale"),
        ({"addresses_question": 7, "relevance_scale": (1, 5)}, "outside the rubric's scale 1..5"),
        ({"addresses_question": 0.5}, "true/false, an integer"),
        ({"addresses_question": "yes"}, "true/false, an integer"),
        ({"relevance_scale": (5, 1)}, "lowest < highest"),
        ({"relevance_scale": (1.0, 5.0)}, "two integers"),
        ({"query_id": ""}, "non-empty"),
        ({"answer": None}, "answer must be a string"),
        ({"claims": ["a claim"]}, "Claim objects"),
    ],
)
def test_invalid_assessments(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"query_id": "q", "answer": "x", **kwargs}
    with pytest.raises(JudgeError, match=message):
        AnswerAssessment(**args)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"supported": "yes"}, "supported must be true, false or null"),
        ({"supported": 1}, "supported must be true, false or null"),
        ({"score": math.nan}, "finite number"),
        ({"score": "0.9"}, "finite number"),
        ({"text": None}, "claim text must be a string"),
    ],
)
def test_invalid_claims(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"text": "c", **kwargs}
    with pytest.raises(JudgeError, match=message):
        Claim(**args)  # type: ignore[arg-type]


def test_duplicate_query_ids_are_an_error() -> None:
    with pytest.raises(
        MetricError, match=r"query id 'q1' is assessed twice \(assessments #0 and #2"
    ):
        evaluate_answers([seed_example(), AnswerAssessment("q2", ""), seed_example()])


def test_bad_inputs_to_evaluate_answers() -> None:
    with pytest.raises(MetricError, match="no answer assessments"):
        evaluate_answers([])
    with pytest.raises(MetricError, match="is a dict, not an AnswerAssessment"):
        evaluate_answers([seed_example().to_dict()])  # type: ignore[list-item]
    with pytest.raises(MetricError, match="answer-layer metrics are groundedness"):
        evaluate_answers([seed_example()], ["ndcg_at_10"])


def test_metric_subset_keeps_order_and_drops_irrelevant_notes() -> None:
    a = AnswerAssessment("q", "", ())
    evaluation = evaluate_answers([a], ["answer_relevance"])
    assert evaluation.metrics == ("answer_relevance",)
    assert evaluation.values.shape == (1, 1)
    assert all("groundedness" not in n for n in evaluation.notes)


def test_many_answers_vectorised_means() -> None:
    items = [
        AnswerAssessment(
            f"q{i}",
            "x",
            tuple(Claim(str(j), j < i % 4) for j in range(3)),
            addresses_question=i % 2 == 0,
        )
        for i in range(40)
    ]
    evaluation = evaluate_answers(items)
    expected = np.mean([min(i % 4, 3) / 3 for i in range(40)])
    assert evaluation.mean["groundedness"] == pytest.approx(expected)
    assert evaluation.mean["answer_relevance"] == 0.5


def test_json_round_trip() -> None:
    original = AnswerAssessment(
        "q9",
        "A. B.",
        (
            Claim("A.", True, ("doc-1", "doc-2"), 0.91, "cosine 0.91"),
            Claim("B.", None),
        ),
        addresses_question=4,
        relevance_scale=(0, 4),
        judge=JUDGE,
        raw={"relevance": "4"},
        query="what?",
    )
    text = json.dumps(original.to_dict())
    again = AnswerAssessment.from_dict(json.loads(text))
    assert again == original
    assert again.to_dict() == original.to_dict()
    assert Claim.from_dict("just text") == Claim("just text")
    assert original.with_query_id("other").query_id == "other"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "must be a JSON object"),
        ({"answer": "x"}, "non-empty 'query_id'"),
        ({"query_id": "q", "claims": "x"}, "'claims' must be a list"),
        ({"query_id": "q", "claims": [3]}, "object or a string"),
        ({"query_id": "q", "claims": [{"supported": True}]}, "'text' string"),
        ({"query_id": "q", "claims": [{"text": "t", "evidence": "c1"}]}, "list of context ids"),
        ({"query_id": "q", "relevance_scale": 5}, r"\[lowest, highest\]"),
        ({"query_id": "q", "judge": "me"}, "'judge' must be an object"),
        ({"query_id": "q", "schema": 99}, "schema 99 is not supported"),
    ],
)
def test_from_dict_errors(data: object, message: str) -> None:
    with pytest.raises(JudgeError, match=message):
        AnswerAssessment.from_dict(data)


def test_integer_query_ids_are_read_as_text() -> None:
    assert AnswerAssessment.from_dict({"query_id": 7, "answer": ""}).query_id == "7"


def test_undecided_verdicts_are_counted_and_said_apart_from_missing_ones() -> None:
    """context_relevance averages the contexts the judge decided: how many it decided is a
    detail, and answers with undecided contexts are noted, as undecided claims are. A
    correctness verdict the judge could not give is said apart from a missing reference."""
    from pytest_ragmetrics.data.assessments import Verdict

    def assessed(qid: str, contexts: list[bool | None], correct: Verdict | None) -> Any:
        verdicts = tuple(Verdict(f"c{i}", v) for i, v in enumerate(contexts))
        return AnswerAssessment(qid, "a", (), context_verdicts=verdicts, correctness=correct)

    items = [
        assessed("q1", [True, None, None], Verdict("label", True)),
        assessed("q2", [False, True], None),
        assessed("q3", [None], Verdict("reference", None)),
    ]
    evaluation = evaluate_answers(items, ["context_relevance", "answer_correctness"])
    assert evaluation.per_query["q1"]["context_relevance"] == 1.0
    assert evaluation.details["judged_contexts"].tolist() == [1, 2, 0]
    assert evaluation.details["contexts"].tolist() == [3, 2, 1]
    assert evaluation.details["relevant_contexts"].tolist() == [1, 1, 0]
    notes = "\n".join(evaluation.notes)
    assert "1 of 3 answers have no reference (q2): answer_correctness" in notes
    assert "1 of 3 answers have a correctness verdict the judge could not decide (q3)" in notes
    assert "1 of 3 answers have no judged context (q3): context_relevance" in notes
    assert "1 answers have contexts the judge could not decide" in notes
