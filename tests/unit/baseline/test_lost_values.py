"""A value that existed in the baseline and is n/a now is "lost", never skipped; means are
compared on the queries both have a value for; "improved" agrees with the paired statistics;
an alpha the test cannot reach says so, and a collapse to the worst value fails whatever p."""

from __future__ import annotations

import html
import json
from collections.abc import Mapping
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import parse_tolerances
from pytest_ragmetrics.baseline.verdicts import BaselineVerdict, MetricVerdict, failure_message
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.stats import min_attainable_p, queries_needed, randomization_p_value
from tests.helpers.plugin_project import make_project

pytest.importorskip("pytest_ragmetrics.metrics.answer")

# ANSWERS_EMPTY=q1,q2 empties those answers (no claims: groundedness n/a); ANSWERS_NO_CONTEXT=1
# drops every context verdict (context_relevance n/a); ANSWERS_N sets the number of answers;
# q4's answer is ungrounded unless ANSWERS_ALL_GROUNDED=1; ANSWERS_WRONG=1 makes every claim
# unsupported.
TESTS = """
    import os
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict

    GROUNDED = {"q1": True, "q2": True, "q3": True, "q4": False}

    def test_answers(rag_eval):
        n = int(os.environ.get("ANSWERS_N", "4"))
        empty = set(os.environ.get("ANSWERS_EMPTY", "").split(","))
        if os.environ.get("ANSWERS_ALL_GROUNDED") == "1":
            GROUNDED["q4"] = True
        contexts = os.environ.get("ANSWERS_NO_CONTEXT") != "1"
        wrong = os.environ.get("ANSWERS_WRONG") == "1"
        items = []
        for i in range(1, n + 1):
            q = f"q{i}"
            supported = GROUNDED.get(q, True) and not wrong
            items.append(AnswerAssessment(
                query_id=q,
                answer="" if q in empty else "An answer.",
                claims=() if q in empty else (Claim("An answer.", supported),),
                context_verdicts=(Verdict("passage", True),) if contexts else (),
            ))
        rag_eval.answers(items, name="answers",
                         metrics=["groundedness", "context_relevance"])
"""


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    for name in (
        "ANSWERS_N",
        "ANSWERS_EMPTY",
        "ANSWERS_NO_CONTEXT",
        "ANSWERS_ALL_GROUNDED",
        "ANSWERS_WRONG",
    ):
        monkeypatch.delenv(name, raising=False)
    make_project(pytester, tests=TESTS)
    return pytester


def verdict_of(pytester: pytest.Pytester) -> dict[str, Any]:
    report = json.loads((pytester.path / "r.json").read_text())
    (evaluation,) = report["evaluations"]
    return evaluation["outcome"]["baseline"]  # type: ignore[no-any-return]


def metric_of(verdict: dict[str, Any], name: str) -> dict[str, Any]:
    return next(m for m in verdict["metrics"] if m["metric"] == name)


def test_every_answer_empty_loses_groundedness_and_fails(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_EMPTY", "q1,q2,q3,q4")
    result = project.runpytest(
        "-v", "--ragmetrics-json=r.json", "--ragmetrics-html=r.html", "--ragmetrics-markdown=r.md"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'answers' (test_rag.py::test_answers) regressed against the baseline*",
            "*groundedness: lost: 4 of 4 queries had a value in the baseline and have none "
            "now (n/a): q1, q2, q3, q4",
            "*A value that is n/a now is lost, not skipped*",
            "What to do: fix the regression, or if the new numbers are intended, bless them "
            "with --ragmetrics-update-baseline*",
        ]
    )
    verdict = verdict_of(project)
    assert verdict["status"] == "regressed"
    assert verdict["lost"] == {"groundedness": 4}
    grounded = metric_of(verdict, "groundedness")
    assert grounded["status"] == "lost"
    assert grounded["queries_lost"] == 4
    assert grounded["lost_queries"] == ["q1", "q2", "q3", "q4"]
    assert grounded["queries_with_baseline_value"] == 4
    assert grounded["current"] is None
    assert metric_of(verdict, "context_relevance")["status"] == "ok"
    result.stdout.fnmatch_lines(["*· Δ*lost 4 !*"])
    assert "groundedness</b> lost its value on 4 queries" in (project.path / "r.html").read_text()
    assert "lost on 4 queries" in (project.path / "r.md").read_text()


def test_three_of_four_answers_empty_is_lost_not_a_mean_of_the_one_left(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_EMPTY", "q1,q2,q3")
    result = project.runpytest("-v", "--ragmetrics-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*groundedness: lost: 3 of 4 queries had a value in the baseline and have none "
            "now (n/a): q1, q2, q3",
            "*groundedness compared on the 1 queries both have a value for, 0.0000 → 0.0000 (3 "
            "lost their "
            "value; over all of them 0.7500 → 0.0000)*",
        ]
    )
    grounded = metric_of(verdict_of(project), "groundedness")
    assert (grounded["status"], grounded["queries_lost"]) == ("lost", 3)


def test_an_ungrounded_answer_that_becomes_empty_is_not_improved(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """q4's answer is ungrounded (groundedness 0.75 over four); emptying it raised the mean to
    1.00 and was reported improved while no query got better."""
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_EMPTY", "q4")
    result = project.runpytest("-v", "--ragmetrics-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*groundedness: lost: 1 of 4 queries*(n/a): q4"])
    (row,) = [line for line in result.outlines if line.startswith("test_rag.py::test_answers [")]
    assert row.split()[-1] == "regressed"
    assert "improved" not in result.stdout.str().split("FAILURES")[1]
    grounded = metric_of(verdict_of(project), "groundedness")
    assert grounded["status"] == "lost"
    # Compared on the three queries both have a value for: 1.0 → 1.0, nothing better.
    assert (grounded["baseline"], grounded["current"], grounded["delta"]) == (1.0, 1.0, 0.0)
    assert grounded["queries_better"] == 0


def test_a_pipeline_that_loses_every_context_fails_on_context_relevance(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_NO_CONTEXT", "1")
    result = project.runpytest("-v", "--ragmetrics-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*context_relevance: lost: 4 of 4 queries had a value in the baseline*"]
    )
    assert verdict_of(project)["lost"] == {"context_relevance": 4}


def test_five_queries_collapsing_fail_at_an_alpha_they_cannot_reach(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """alpha 0.05 with 5 queries: the smallest attainable p is 0.0628, so the alpha gate alone
    would pass groundedness 1.0 → 0.0 on every query."""
    monkeypatch.setenv("ANSWERS_N", "5")
    monkeypatch.setenv("ANSWERS_ALL_GROUNDED", "1")
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_WRONG", "1")
    result = project.runpytest("-v", "--ragmetrics-alpha=0.05", "--ragmetrics-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*groundedness: baseline 1.0000 → current 0.0000, Δ -1.0000*",
            "*paired randomization test p = 0.0628 (5 queries)*",
            "*fell to 0, the worst possible value, on all 5 queries: a collapse fails whatever "
            "the p-value; with 5 queries the smallest attainable p is 0.0628, so no change can "
            "be significant at alpha 0.05: the test needs at least 6 queries",
        ]
    )
    assert metric_of(verdict_of(project), "groundedness")["status"] == "regressed"


# --- the comparison itself, without pytest ------------------------------------------------


def _record(values: Mapping[str, float | None], metric: str = "groundedness") -> EvaluationRecord:
    evaluation = Evaluation.from_per_query(
        {q: {metric: v} for q, v in values.items()}, layer="answer"
    )
    return EvaluationRecord("t.py::t", "answers", evaluation)


def _compare(
    before: Mapping[str, float | None], after: Mapping[str, float | None], **kw: Any
) -> BaselineVerdict:
    entry = _record(before).baseline_entry("test")
    return compare_to_baseline(_record(after), entry, parse_tolerances("0.01"), **kw)


def test_a_mean_over_gained_values_is_never_improved() -> None:
    """q2 had no value and has 1.0 now: the mean rises 0.5 → 0.75, but the one query both have
    a value for did not move."""
    verdict = _compare({"q1": 0.5, "q2": None}, {"q1": 0.5, "q2": 1.0})
    (metric,) = verdict.metrics
    assert (verdict.status, metric.status, metric.delta) == ("ok", "ok", 0.0)
    assert "compared on the 1 queries both have a value for, 0.5000 → 0.5000 (1 gained one" in (
        metric.note
    )


def test_lost_values_are_counted_per_query_not_per_key() -> None:
    """Same query ids, same mean over the values left, one value lost: still lost."""
    verdict = _compare({"q1": 1.0, "q2": 1.0, "q3": 0.0}, {"q1": 1.0, "q2": 1.0, "q3": None})
    (metric,) = verdict.metrics
    assert (verdict.status, metric.status, metric.lost, metric.lost_queries) == (
        "regressed",
        "lost",
        1,
        ["q3"],
    )
    again = MetricVerdict.from_dict(metric.to_dict())
    assert again.to_dict() == metric.to_dict()
    assert BaselineVerdict.from_dict(verdict.to_dict()).lost == {"groundedness": 1}
    text = failure_message(_record({}), verdict, "b.json")
    assert "groundedness: lost: 1 of 3 queries had a value in the baseline" in text


def test_improved_needs_the_paired_test_to_agree_at_alpha() -> None:
    before = {f"q{i}": 0.0 for i in range(4)}
    after = {f"q{i}": 1.0 for i in range(4)}
    assert _compare(before, after).status == "improved"
    (metric,) = _compare(before, after, alpha=0.05).metrics
    assert metric.status == "ok"
    assert "rose +1.0000 but not significantly" in metric.note
    assert "the test needs at least 6 queries" in metric.note


def test_a_collapse_fails_within_judge_noise_and_alpha_alike() -> None:
    before = {f"q{i}": 0.5 for i in range(3)}
    after = {f"q{i}": 0.0 for i in range(3)}
    (metric,) = _compare(before, after, alpha=0.05).metrics
    assert metric.status == "regressed"
    assert "a collapse fails whatever the p-value" in metric.note
    # A drop that is not to the worst value is held back by the alpha it cannot reach, and
    # the verdict says why.
    (held,) = _compare(before, {f"q{i}": 0.1 for i in range(3)}, alpha=0.05).metrics
    assert held.status == "ok"
    assert "with 3 queries the smallest attainable p is 0.2459" in held.note


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8])
def test_min_attainable_p_is_the_smallest_p_over_any_deltas(n: int) -> None:
    rng = np.random.default_rng(n)
    smallest = min_attainable_p(n)
    for _ in range(20):
        assert randomization_p_value(rng.normal(size=n)) >= smallest - 1e-15
    assert smallest == pytest.approx(2.0 ** (1 - n), abs=0.01)


def test_queries_needed_reaches_alpha_and_one_fewer_does_not() -> None:
    for alpha in (0.2, 0.05, 0.01):
        n = queries_needed(alpha)
        assert n is not None
        assert min_attainable_p(n) < alpha <= min_attainable_p(n - 1)
    assert queries_needed(1e-5) is None  # below the test's floor 1 / 10001


def test_answers_that_vanish_from_the_evaluation_are_lost_too(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """q3 and q4 leave the evaluation altogether (no assessment at all): their baseline values
    are missing now, like n/a ones, and the mean of the two left is no basis for 'ok'."""
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_N", "2")
    result = project.runpytest("-v", "--ragmetrics-json=r.json")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*groundedness: lost: 2 of 4 queries*: q3, q4"])
    grounded = metric_of(verdict_of(project), "groundedness")
    assert (grounded["status"], grounded["queries_lost"]) == ("lost", 2)
    assert grounded["queries_with_baseline_value"] == 4


# --- a gate that cannot work is said wherever it is configured ----------------------------


def test_an_unreachable_alpha_is_said_in_every_report_from_the_first_run(
    project: pytest.Pytester,
) -> None:
    """Four answers, alpha 0.05: no p below 0.1266 exists. Said when the entry is new (nothing
    compared yet: the next run's gate would not work either) and when it is compared, in the
    terminal, the JSON verdict, the Markdown summary and the HTML page."""
    args = ("--ragmetrics-alpha=0.05", "--ragmetrics-json=r.json", "--ragmetrics-markdown=r.md")
    args += ("--ragmetrics-html=r.html",)
    note = (
        "ragmetrics_alpha = 0.05 cannot be reached: with 4 queries the smallest attainable p is "
        "0.1266, so no drop can fail on significance"
    )
    for bless in (True, False):
        (project.path / "r.md").unlink(missing_ok=True)
        extra = ("--ragmetrics-update-baseline",) if bless else ()
        result = project.runpytest(*args, *extra)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines([f"note: test_rag.py::test_answers [[]answers[]]: {note}*"])
        verdict = verdict_of(project)
        assert verdict["status"] == ("new" if bless else "ok")
        assert verdict["alpha_note"].startswith(note)
        assert "the test needs at least 6 queries" in verdict["alpha_note"]
        markdown = (project.path / "r.md").read_text()
        assert "ragmetrics_alpha = 0.05 cannot be reached" in markdown, markdown
        page = html.unescape((project.path / "r.html").read_text())
        assert note in page


PER_QUERY = """
    def test_query(rag_eval, rag_query):
        run = {rag_query.id: dict(rag_query.ranking)}
        rag_eval.retrieval(run, {rag_query.id: rag_query.relevant}, name="one")
"""


def test_per_query_tests_that_cannot_reach_alpha_say_so_once(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=PER_QUERY)
    result = pytester.runpytest("--ragmetrics-alpha=0.05", "-p", "no:randomly")
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "note: 4 evaluations (e.g. test_rag.py::test_query[[]q1[]] [[]one[]]; "
            "test_rag.py::test_query[[]q2[]] [[]one[]]): ragmetrics_alpha = 0.05 cannot be "
            "reached: with 1 query the smallest attainable p is 1.0000*"
        ]
    )
    assert result.stdout.str().count("cannot be reached") == 1


# --- the short message a test shows by default --------------------------------------------


def test_the_short_message_names_lost_queries_and_shows_query_text_on_one_line() -> None:
    from pytest_ragmetrics.baseline.messages import compact_message

    verdict = _compare({"q1": 1.0, "q2": 1.0, "q3": 1.0}, {"q1": 0.0, "q2": 1.0, "q3": None})
    texts = {"q1": "a question\x1b[2K\rthat\u202e lies\n" + "long " * 30}
    text = compact_message(_record({}), verdict, "b.json", texts=texts)
    lines = text.split("\n")
    assert lines[1] == "  groundedness: lost on 1 of 3 queries (n/a now): q3"
    assert lines[2].startswith("  groundedness: 1.0000 → 0.5000, Δ -0.5000 (95% CI [")
    (shown,) = [line for line in lines if line.startswith("    q1 ")]
    assert shown.startswith('    q1 "a question\\x1b[2K that\\u202e lies long long')
    assert '…" (Δ -1.000)' in shown and len(shown) < 110
    assert lines[-1].startswith("(-v shows the full message")
    assert "\x1b" not in text and "\r" not in text


ANSWER_TEXTS = """
    import os
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim

    def test_answers(rag_eval):
        wrong = os.environ.get("ANSWERS_WRONG") == "1"
        rag_eval.answers([
            AnswerAssessment(query_id=q, query=f"what is asked in {q}?", answer="A.",
                             claims=(Claim("A.", not (wrong and q == "x2")),))
            for q in ("x1", "x2", "x3")
        ], name="answers", metrics=["groundedness"])
"""


def test_the_answer_layer_shows_the_questions_the_answers_were_given(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An answer evaluation's queries need not be the dataset's: their text comes from what the
    answers were given (AnswerAssessment.query)."""
    monkeypatch.delenv("ANSWERS_WRONG", raising=False)
    make_project(pytester, tests=ANSWER_TEXTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("ANSWERS_WRONG", "1")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["  most regressed in groundedness:", '    x2 "what is asked in x2?" (Δ -1.000)']
    )
