"""The rag_threshold marker: checked after the test body, validated at collection."""

from __future__ import annotations

import glob
import json

import pytest

from pytest_ragmetrics.cli import main
from tests.helpers.html_documents import ParsedPage
from tests.helpers.plugin_project import XDIST_QUICK, make_project, marked_test_error


@pytest.mark.parametrize("mode", XDIST_QUICK)
def test_threshold_passes_and_fails(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_threshold(recall_at_1=0.75, ndcg_at_10=0.9)
        def test_good(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="good")

        @pytest.mark.rag_threshold(precision_at_2=0.9)
        def test_bad(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="bad")
    """,
    )
    result = pytester.runpytest_subprocess(*mode)
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*rag_threshold: retrieval evaluation 'bad' of test_rag.py::test_bad: precision_at_2 = "
            "0.5000 < threshold 0.9. Improve the pipeline, or lower the threshold in "
            "@pytest.mark.rag_threshold(...) if the bar was wrong.",
        ]
    )
    result.stdout.fnmatch_lines(["*test_bad [[]bad[]]*below threshold*"])


def test_threshold_metric_is_computed_even_when_not_configured(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_threshold(hit_rate_at_2=1.0)
        def test_it(rag_eval, rag_run):
            evaluation = rag_eval.retrieval(rag_run)
            assert "hit_rate_at_2" in evaluation.metrics
    """,
    )
    pytester.runpytest().assert_outcomes(passed=1)


def test_closest_marker_wins(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        pytestmark = pytest.mark.rag_threshold(precision_at_2=0.9)

        @pytest.mark.rag_threshold(precision_at_2=0.5)
        def test_it(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    pytester.runpytest().assert_outcomes(passed=1)


@pytest.mark.parametrize(
    "markers",
    [
        "@pytest.mark.rag_threshold(precision_at_2=0.99)\n"
        "@pytest.mark.rag_threshold(precision_at_2=0.1)",
        "@pytest.mark.rag_threshold(precision_at_2=0.1)\n"
        "@pytest.mark.rag_threshold(P_2=0.99, recall_at_5=0.1)",
        "@pytest.mark.rag_threshold(precision_at_2=0.1, dataset='data')\n"
        "@pytest.mark.rag_threshold(precision_at_2=0.99, dataset='data-test')",
    ],
    ids=["stacked", "stacked-alias", "stacked-same-dataset"],
)
def test_two_bounds_for_a_metric_at_one_level_are_a_collection_error(
    pytester: pytest.Pytester, markers: str
) -> None:
    """Stacked markers apply bottom up: the looser bound won and the stricter was dropped."""
    make_project(
        pytester,
        tests=f"""
        import pytest

        {markers.replace(chr(10), chr(10) + "        ")}
        def test_it(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*two markers at one level bound precision_at_2 (*; give its*"])


@pytest.mark.parametrize(
    ("scoped", "unscoped", "outcome"), [(0.1, 0.99, "passed"), (0.99, 0.1, "failed")]
)
def test_a_dataset_marker_beats_a_general_one_at_its_level(
    pytester: pytest.Pytester, scoped: float, unscoped: float, outcome: str
) -> None:
    make_project(
        pytester,
        tests=f"""
        import pytest

        pytestmark = pytest.mark.rag_threshold(precision_at_2=0.0)

        @pytest.mark.rag_threshold(precision_at_2={unscoped})
        @pytest.mark.rag_threshold(precision_at_2={scoped}, dataset="data")
        def test_it(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    pytester.runpytest().assert_outcomes(**{outcome: 1})


@pytest.mark.parametrize(
    ("marker", "message"),
    [
        (
            "rag_threshold(recal_at_5=0.7)",
            "rag_threshold: unknown metric 'recal_at_5'; valid metrics: precision_at_K, "
            "recall_at_K",
        ),
        ("rag_threshold(ndcg_at_0=0.7)", "cutoff '0' must be a positive integer"),
        ("rag_threshold(recall_at_5=1.5)", "rag_threshold: recall_at_5=1.5 is outside [0, 1]"),
        ("rag_threshold(recall_at_5='high')", "recall_at_5='high' is not a number in [0, 1]"),
        ("rag_threshold(0.7)", "give thresholds as keywords"),
        ("rag_threshold()", "no thresholds given"),
    ],
)
def test_bad_marker_is_a_collection_error(
    pytester: pytest.Pytester, marker: str, message: str
) -> None:
    test = "def test_it(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run)\n"
    marked_test_error(pytester, marker, test, glob.escape(message))


def test_threshold_without_an_evaluation_fails(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_threshold(recall_at_1=0.5)
        def test_forgot(rag_run):
            pass

        @pytest.mark.rag_threshold(groundedness=0.5)
        def test_wrong_layer(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    result = pytester.runpytest("--ragmetrics-json=r.json", "--ragmetrics-markdown=r.md")
    result.assert_outcomes(failed=2)
    forgot = (
        "rag_threshold(recall_at_1=0.5) is set but the test recorded no retrieval evaluation; "
        "call rag_eval.retrieval(...) in the test"
    )
    wrong = (
        "rag_threshold(groundedness=0.5) is set but the test recorded no answer-layer "
        "evaluation; call rag_eval.answers(...) in the test"
    )
    result.stdout.fnmatch_lines([f"*{glob.escape(forgot)}*", f"*{glob.escape(wrong)}*"])
    # No evaluation carries them, so the reports list them apart, never an all-clear.
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: 2 thresholds could not be checked (no evaluation of the layer was "
            "recorded); their tests failed:",
            f"  test_rag.py::test_forgot: {glob.escape(forgot)}",
            f"  test_rag.py::test_wrong_layer: {glob.escape(wrong)}",
        ]
    )
    summary = json.loads((pytester.path / "r.json").read_text())["summary"]
    assert summary["unchecked_thresholds"] == [
        ["test_rag.py::test_forgot", forgot],
        ["test_rag.py::test_wrong_layer", wrong],
    ]
    markdown = (pytester.path / "r.md").read_text()
    assert (
        "### Thresholds not checked" in markdown
        and f"- test_rag.py::test_forgot: {forgot}" in markdown
    )
    assert main(["report", "r.json", "--html", "r.html"]) == 0
    page = ParsedPage((pytester.path / "r.html").read_text())
    assert "Nothing regressed" not in page.text and "2 thresholds could not be checked" in page.text


def test_failing_test_body_is_reported_as_such(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_threshold(recall_at_1=0.5)
        def test_it(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
            assert 1 == 2
    """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*assert 1 == 2*"])
    assert "rag_threshold:" not in result.stdout.str()


@pytest.mark.parametrize(
    ("value", "threshold", "shown"),
    [
        (0.5, 0.5000001, "= 0.5000 < threshold 0.5000001."),
        (0.49999996, 0.5, "= 0.49999996 < threshold 0.5."),
        (0.75, 0.9, "= 0.7500 < threshold 0.9."),
    ],
)
def test_a_value_just_below_its_threshold_is_not_shown_equal(
    value: float, threshold: float, shown: str
) -> None:
    from types import SimpleNamespace

    from pytest_ragmetrics.plugin.checks import _threshold_message
    from pytest_ragmetrics.report.outcome import ThresholdResult

    record = SimpleNamespace(layer="retrieval", name="r", test="t.py::t")
    result = ThresholdResult.check("recall_at_1", value, threshold)
    assert not result.passed
    assert f"recall_at_1 {shown}" in _threshold_message(record, result)  # type: ignore[arg-type]
