"""A baseline none of whose entries can match a test of this project (test files renamed or
moved, a baseline copied from another project) fails the run saying what to do, instead of
passing with every evaluation "new" and nothing compared. A selection (paths, -k, -m) that
leaves the baselined tests out is no such thing: their files are still there."""

from __future__ import annotations

import pytest

from tests.helpers.plugin_project import make_project
from tests.plugin.test_data_loss import TESTS

XDIST = [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="n2")]


@pytest.fixture
def renamed(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A baseline blessed on test_rag.py, the file since renamed test_search.py, and the
    retriever made worse: a comparison would fail."""
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    (pytester.path / "test_rag.py").rename(pytester.path / "test_search.py")
    monkeypatch.setenv("RAG_WORSE", "1")
    return pytester


@pytest.mark.parametrize("xdist", XDIST)
def test_a_baseline_of_no_test_here_fails_the_run(
    renamed: pytest.Pytester, xdist: list[str]
) -> None:
    if xdist:
        pytest.importorskip("xdist")
    result = renamed.runpytest("test_search.py", *xdist)
    result.assert_outcomes(passed=1)  # nothing compared: the evaluation is "new" ...
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ... and the run says why, and fails
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: error: the baseline .ragmetrics/baseline.json has 1 entry and none "
            "matches an evaluation of this run, and the test files they name are not in the "
            f"project ({renamed.path}): test_rag.py. Nothing was compared with the baseline*",
        ]
    )


def test_blessing_over_it_needs_the_whole_suite(renamed: pytest.Pytester) -> None:
    baseline = renamed.path / ".ragmetrics" / "baseline.json"
    before = baseline.read_text()
    partial = renamed.runpytest("test_search.py", "--ragmetrics-update-baseline")
    assert partial.ret == pytest.ExitCode.TESTS_FAILED
    partial.stdout.fnmatch_lines(["*has 1 entry and none matches*; the baseline was not updated"])
    assert baseline.read_text() == before
    # The whole suite removes the entries of the file that is gone: then it compares.
    renamed.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    assert "test_rag.py" not in baseline.read_text()
    renamed.runpytest("test_search.py").assert_outcomes(passed=1)


def test_a_whole_suite_run_says_it_once_as_stale_entries(renamed: pytest.Pytester) -> None:
    """Run whole, the entries of the file that is gone are stale (which fails the run): the
    same fault is not told twice."""
    result = renamed.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "stale" in result.stdout.str()
    assert "none matches" not in result.stdout.str()


@pytest.mark.parametrize(
    "selection", [["test_new.py"], ["-k", "new"], ["test_new.py::test_new"]], ids=str
)
def test_a_selection_without_the_baselined_tests_is_no_error(
    pytester: pytest.Pytester, selection: list[str]
) -> None:
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    pytester.makepyfile(
        test_new="def test_new(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run, name='n')\n"
    )
    result = pytester.runpytest(*selection)
    result.assert_outcomes(passed=1)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "none matches" not in result.stdout.str()
