"""The answer layer in the plugin: its own table, thresholds, and the judge-kappa gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers.calibration import result_at_kappa
from tests.helpers.plugin_project import make_project

TESTS = """
    import pytest
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim

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
    from pytest_ragmetrics.judges.calibration import save_calibration

    judge = {
        "name": "toy-judge",
        "model": "m",
        "rubric": "r",
        "rubric_sha256": "x",
        "parameters": {},
    }
    save_calibration(
        pytester.path / ".ragmetrics" / "calibration.json",
        result_at_kappa(judge, kappa, {"file": "labels.jsonl", "n": 40_000}),
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
            "`ragmetrics calibrate --judge KIND --labels LABELS.jsonl --save "
            ".ragmetrics/calibration.json`); thresholds and baseline are not enforced",
        ),
        (
            0.2,
            "passed",
            "judge 'toy-judge' has Cohen's kappa 0.200 (n 40000) < ragmetrics_min_judge_kappa "
            "0.6 (use a judge that agrees better with the labels, then run `ragmetrics calibrate "
            "--judge KIND *`); thresholds and baseline are not enforced",
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


def test_a_claim_support_kappa_does_not_enforce_answer_relevance(
    pytester: pytest.Pytester,
) -> None:
    # Calibrated well for claim support; answer_relevance (0.667 < 0.9) is asked by another
    # question, whose identity assessments given as they are do not record: shown, said, not
    # failing the test (judge_answers records it: tests/plugin/test_pipeline.py).
    tests = TESTS.replace("rag_threshold(groundedness=0.9)", "rag_threshold(answer_relevance=0.9)")
    make_project(pytester, ini='ragmetrics_min_judge_kappa = "0.6"\n', tests=tests)
    write_calibration(pytester, 0.8)
    note = (
        "*answer_relevance not enforced: judge 'toy-judge' asks whether an answer addresses the "
        "question, and these assessments do not record that question's identity, so no "
        "calibration vouches for it (ragmetrics_min_judge_kappa = 0.6); judge the answers with "
        "judge_answers and run `ragmetrics calibrate --question answer-relevance --judge KIND "
        "--labels LABELS.jsonl --save .ragmetrics/calibration.json`: "
        "thresholds and baseline are not enforced*"
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([note])
    assert "groundedness not enforced" not in result.stdout.str()
    # Without the gate the threshold holds.
    ungated = pytester.runpytest("-o", "ragmetrics_min_judge_kappa=")
    ungated.assert_outcomes(failed=1)
    ungated.stdout.fnmatch_lines(["*answer_relevance = 0.6667 < threshold 0.9*"])


def test_answer_metrics_are_gated_by_the_baseline(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        pytester,
        tests="""
        import os
        from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim

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
    result = pytester.runpytest("-v")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'answers' (test_rag.py::test_answers) regressed against the baseline*",
            "*groundedness: baseline 1.0000 → current 0.7500, Δ -0.2500*",
            "*queries: 6 worse, 0 better, 6 unchanged*",
            "*- ragmetrics: answer layer -*",
        ]
    )


JUDGE_TESTS = """
    import pytest

    @pytest.mark.rag_threshold(groundedness=0.4)
    def test_judged(rag_eval, rag_judge):
        assessment = rag_judge.assess(
            "Do cats purr?", "Cats purr. Cats fly.", ["Cats purr when content."], query_id="q1"
        )
        e = rag_eval.answers([assessment], name="configured judge")
        assert e.mean["groundedness"] == 0.5
"""


def test_rag_judge_unconfigured_says_how(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=JUDGE_TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*rag_judge is not configured. Set ragmetrics_judge = embedding*", "*def rag_judge(*"]
    )


def test_rag_judge_recorded_from_ini(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini='ragmetrics_judge = "recorded"\nragmetrics_judge_verdicts = "v.jsonl"\n',
        tests=JUDGE_TESTS,
    )
    pytester.path.joinpath("v.jsonl").write_text(
        '{"query_id": "q1", "answer": "Cats purr. Cats fly.", "claims": ['
        '{"text": "Cats purr.", "supported": true}, {"text": "Cats fly.", "supported": false}]}\n'
    )
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["test_rag.py::test_judged [[]configured judge[]]*0.5000*"])


def test_rag_judge_http_from_ini_and_command_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL
    from tests.helpers.fake_openai import serve

    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY):
        monkeypatch.delenv(name, raising=False)
    with serve(answer=lambda prompt: "yes" if "purr" in prompt.split("Claim:")[-1] else "no") as (
        server
    ):
        make_project(
            pytester,
            ini=f'ragmetrics_judge = "http"\nragmetrics_judge_url = "{server.url}"\n',
            tests=JUDGE_TESTS,
        )
        missing_model = pytester.runpytest()
        missing_model.assert_outcomes(errors=1)
        missing_model.stdout.fnmatch_lines(["*HTTP judge: no model*RAGMETRICS_JUDGE_MODEL*"])
        assert "Traceback" not in missing_model.stdout.str()
        result = pytester.runpytest("--ragmetrics-judge-model=tiny")
        result.assert_outcomes(passed=1)
        assert server.count == 3  # two claims and the relevance question, really asked
        parallel = pytester.runpytest(
            "--ragmetrics-judge-model=tiny", "--ragmetrics-judge-concurrency=2"
        )
        parallel.assert_outcomes(passed=1)
        assert server.count == 3  # same judge identity: every verdict came from the cache


def test_rag_judge_embedding_with_a_missing_model_is_a_clean_error(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        ini='ragmetrics_judge = "embedding"\nragmetrics_judge_model = "no/such/folder"\n',
        tests=JUDGE_TESTS,
    )
    # In a subprocess: trying to load the model imports torch, which cannot be imported
    # again in this process once in-process pytester has dropped it from sys.modules.
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(failed=1)  # the model loads when first used
    result.stdout.fnmatch_lines(
        ["judging query 'q1': embedding judge: cannot load model 'no/such/folder'*"]
    )
    assert "Traceback" not in result.stdout.str()
    assert "During handling" not in result.stdout.str()


def test_model_folders_in_ini_are_relative_to_the_rootdir(pytester: pytest.Pytester) -> None:
    from pytest_ragmetrics.plugin.settings import build_settings

    (pytester.path / "models" / "mini").mkdir(parents=True)
    ini = {
        "ragmetrics_model": "models/mini",
        "ragmetrics_judge": "embedding",
        "ragmetrics_judge_model": "models/mini",
    }
    settings = build_settings(
        lambda name: (ini.get(name), False),
        rootdir=pytester.path,
        invocation_dir=pytester.path / "models",
        flags={},
    )
    assert settings.model == settings.judge_model == str(pytester.path / "models" / "mini")
    named = build_settings(
        lambda name: (
            {**ini, "ragmetrics_judge_model": "sentence-transformers/x"}.get(name),
            False,
        ),
        rootdir=pytester.path,
        invocation_dir=pytester.path,
        flags={},
    )
    assert named.judge_model == "sentence-transformers/x"  # a name, not a folder: as given
    served = build_settings(
        lambda name: ({**ini, "ragmetrics_judge": "http"}.get(name), False),
        rootdir=pytester.path,
        invocation_dir=pytester.path,
        flags={},
    )
    assert served.judge_model == "models/mini"  # an http judge's model is the server's name


def test_configured_http_judge_gets_its_settings(tmp_path: Path) -> None:
    from pytest_ragmetrics.judges.http import HttpJudge
    from pytest_ragmetrics.plugin.fixtures import configured_judge
    from pytest_ragmetrics.plugin.settings import build_settings

    ini = {
        "ragmetrics_judge": "http",
        "ragmetrics_judge_url": "http://127.0.0.1:9/v1",
        "ragmetrics_judge_model": "tiny",
        "ragmetrics_judge_concurrency": "3",
    }
    settings = build_settings(
        lambda name: (ini.get(name), False), rootdir=tmp_path, invocation_dir=tmp_path, flags={}
    )
    judge = configured_judge(settings)
    assert isinstance(judge, HttpJudge)
    assert judge.url == "http://127.0.0.1:9/v1/chat/completions"
    assert (judge.model, judge.concurrency) == ("tiny", 3)


def test_a_baseline_of_other_queries_is_compared_on_the_shared_ones(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that answers more queries than the baseline (a larger sample) is not a regression
    of the queries both hold: the verdict compares those, and says so."""
    make_project(
        pytester,
        tests="""
        import os
        from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim

        def test_answers(rag_eval):
            n = int(os.environ.get("ANSWERS_N", "4"))
            worse = os.environ.get("ANSWERS_WORSE") == "1"
            rag_eval.answers([
                AnswerAssessment(query_id=f"q{i}", answer="A.",
                                 claims=(Claim("A.", i < 4 and not worse),))
                for i in range(n)
            ], name="answers", metrics=["groundedness"])
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_N", "8")  # four more queries, none grounded: mean 1.0 -> 0.5
    more = pytester.runpytest()
    more.assert_outcomes(passed=1)
    more.stdout.fnmatch_lines(
        ["*groundedness compared on the 4 queries both hold, 1.0000 → 1.0000 (0 only in the "
         "baseline, 4 only in "
         "this run; over all of them 1.0000 → 0.5000)*"]
    )  # fmt: skip
    monkeypatch.setenv("ANSWERS_WORSE", "1")  # the shared four get worse: a regression
    worse = pytester.runpytest("-v")
    worse.assert_outcomes(failed=1)
    worse.stdout.fnmatch_lines(["*groundedness: baseline 1.0000 → current 0.0000*"])


def test_answers_in_a_rag_query_test_are_that_querys_alone(pytester: pytest.Pytester) -> None:
    """A rag_threshold in a rag_query test bounds each query's own values: answers() averaged
    every query's answers under each query's id (0.2500 in every row, q1 failing too)."""
    tests = """
        import pytest
        from pytest_ragmetrics import AnswerAssessment

        ALL = [
            AnswerAssessment("q1", "cats purr", addresses_question=True),
            AnswerAssessment("q2", "no idea", addresses_question=False),
            AnswerAssessment("q3", "no idea", addresses_question=False),
        ]

        @pytest.mark.rag_threshold(answer_relevance=0.9)
        def test_each(rag_eval, rag_query):
            evaluation = rag_eval.answers(ALL, metrics=["answer_relevance"])
            assert list(evaluation.per_query) == [rag_query.id]
    """
    make_project(pytester, tests=tests)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1, failed=3)
    result.stdout.fnmatch_lines(
        [
            "*evaluation 'answers' of test_rag.py::test_each[[]q2[]]: answer_relevance = 0.0000 "
            "< threshold 0.9*",
            "*evaluation 'answers' of test_rag.py::test_each[[]q3[]]: answer_relevance = 0.0000 "
            "< threshold 0.9*",
            "test_rag.py::test_each[[]q4[]]: rag_eval.answers: none of the 3 assessments is of "
            "this test's query 'q4'*",
            "test_rag.py::test_each[[]q1[]] [[]answers[]]*1.0000*new",
            "test_rag.py::test_each[[]q2[]] [[]answers[]]*0.0000*below threshold",
            "test_rag.py::test_each[[]q3[]] [[]answers[]]*0.0000*below threshold",
        ],
        consecutive=False,
    )
