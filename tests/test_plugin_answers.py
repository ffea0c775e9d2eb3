"""The answer layer in the plugin: its own table, thresholds, and the judge-kappa gate."""

from __future__ import annotations

import pytest
from plugin_project import make_project

TESTS = """
    import pytest
    from pytest_ragmetrics.judges.records import AnswerAssessment, Claim

    JUDGE = {"name": "toy-judge", "model": "m", "rubric": "r", "rubric_sha256": "x",
             "parameters": {}}

    def assessments():
        return [
            AnswerAssessment(query_id="q1", answer="Cats purr. Cats fly.",
                             claims=(Claim("Cats purr.", True), Claim("Cats fly.", False)),
                             addresses_question=True, judge=JUDGE),
            AnswerAssessment(query_id="q2", answer="Dogs bark.",
                             claims=(Claim("Dogs bark.", True),), addresses_question=True,
                             judge=JUDGE),
            AnswerAssessment(query_id="q3", answer="Hm.", claims=(), addresses_question=False,
                             judge=JUDGE),
        ]

    @pytest.mark.rag_threshold(groundedness=0.9)
    def test_answers(rag_eval):
        e = rag_eval.answers(assessments(), name="toy")
        assert e.mean["groundedness"] == 0.75
        assert e.mean["answer_relevance"] == pytest.approx(2 / 3)
"""


def write_calibration(pytester: pytest.Pytester, kappa: float) -> None:
    from pytest_ragmetrics.judges.calibration import CalibrationResult, save_calibration

    judge = {
        "name": "toy-judge",
        "model": "m",
        "rubric": "r",
        "rubric_sha256": "x",
        "parameters": {},
    }
    save_calibration(
        pytester.path / ".ragmetrics" / "calibration.json",
        CalibrationResult(
            judge=judge,
            labels={"file": "labels.jsonl", "n": 20},
            n=20,
            accuracy=0.8,
            kappa=kappa,
            confusion={"tp": 8, "fp": 2, "fn": 2, "tn": 8},
        ),
    )


def test_answer_layer_table_and_threshold(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*rag_threshold: answer-layer evaluation 'toy' of test_rag.py::test_answers: "
            "groundedness = 0.7500 < threshold 0.9*",
            "*- ragmetrics: answer layer -*",
            "evaluation*groundedness*answer_relevance*status",
            "test_rag.py::test_answers [[]toy[]]*0.7500*0.6667*below threshold",
        ]
    )
    assert "retrieval layer" not in result.stdout.str()
    assert "1 of 3 answers" in result.stdout.str()  # the answer with no claims is shown


@pytest.mark.parametrize(
    ("kappa", "outcome", "message"),
    [
        (
            None,
            "passed",
            "judge 'toy-judge' has no calibration in *calibration.json (run "
            "`ragmetrics calibrate --save`); thresholds and baseline are not enforced",
        ),
        (
            0.2,
            "passed",
            "judge 'toy-judge' has Cohen's kappa 0.200 < ragmetrics_min_judge_kappa "
            "0.6; thresholds and baseline are not enforced",
        ),
        (0.8, "failed", "*groundedness = 0.7500 < threshold 0.9*"),
    ],
    ids=["uncalibrated", "below-bound", "calibrated"],
)
def test_kappa_gate(
    pytester: pytest.Pytester, kappa: float | None, outcome: str, message: str
) -> None:
    make_project(pytester, ini='ragmetrics_min_judge_kappa = "0.6"\n', tests=TESTS)
    if kappa is not None:
        write_calibration(pytester, kappa)
    result = pytester.runpytest()
    result.assert_outcomes(**{outcome: 1})
    result.stdout.fnmatch_lines([f"*{message}*"])
    if outcome == "passed":
        result.stdout.fnmatch_lines(["test_rag.py::test_answers [[]toy[]]*(not enforced)"])


def test_answer_metrics_are_gated_by_the_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        pytester,
        tests="""
        import os
        from pytest_ragmetrics.judges.records import AnswerAssessment, Claim

        def test_answers(rag_eval):
            worse = bool(os.environ.get("ANSWERS_WORSE"))
            rag_eval.answers([
                AnswerAssessment(query_id=f"q{i}", answer="A. B.",
                                 claims=(Claim("A.", True), Claim("B.", not (worse and i < 6))),
                                 addresses_question=True)
                for i in range(12)
            ], name="answers")
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_WORSE", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'answers' (test_rag.py::test_answers) regressed against the baseline*",
            "*groundedness: baseline 1.0000 → current 0.7500, Δ -0.2500*",
            "*queries: 6 worse, 0 better, 6 unchanged*",
            "*- ragmetrics: answer layer -*",
        ]
    )
