"""What a run says matches what happened (hostile probe, wave 2): a run from another rootdir
that misses every baseline entry fails saying why; ``--dist each`` shows each evaluation once and
counts it once; an update that skips a failed test's entry says so; a metric lost since the
baseline shows as lost in Markdown and HTML as in the terminal; messages name the real mistake
(a run without the test's query, ids given as a list, a marker or level that selects nothing
sensible); a threshold failure is an AssertionError, which ``xfail(raises=...)`` catches."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.plugin_project import CONFTEST, make_project, write_dataset

TWO_TESTS = """
def test_all(rag_eval, rag_run):
    rag_eval.retrieval(rag_run)

def test_each(rag_eval, rag_query, rag_run):
    rag_eval.retrieval(rag_run)
"""


def report_of(path: Path) -> dict[str, Any]:
    return json.loads(path.read_text())  # type: ignore[no-any-return]


# -- another rootdir -----------------------------------------------------------------------------


def _project_in(folder: Path, tests: str) -> None:
    write_dataset(folder)
    (folder / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nragmetrics_dataset = "data"\n'
        'ragmetrics_metrics = "ndcg_at_10 mrr"\n'
    )
    (folder / "conftest.py").write_text(CONFTEST)
    (folder / "test_rag.py").write_text(textwrap.dedent(tests))


def test_a_run_from_another_rootdir_that_misses_every_entry_fails(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pytester.path / "proj"
    project.mkdir()
    _project_in(project, TWO_TESTS)
    monkeypatch.chdir(project)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=5)
    # From the parent, with the project's configuration: node ids gain "proj/".
    monkeypatch.chdir(pytester.path)
    monkeypatch.setenv("RAG_WORSE", "1")
    elsewhere = ("--rootdir", str(pytester.path), "-c", "proj/pyproject.toml", "proj")
    result = pytester.runpytest(*elsewhere)
    result.assert_outcomes(passed=5)  # nothing compared: every evaluation is "new" ...
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # ... and the run says why, and fails
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: error: 5 evaluations of this run have no entry in the baseline *, "
            "which holds the same tests under another path (this run's "
            "'proj/test_rag.py::test_all' is 'test_rag.py::test_all' there): node ids are "
            f"relative to pytest's rootdir, here {pytester.path}. Run pytest with the rootdir "
            f"the baseline was blessed with (e.g. --rootdir={project}, *"
        ]
    )
    # Blessing from there would hold every test twice: refused, the file unchanged.
    baseline = project / ".ragmetrics" / "baseline.json"
    before = baseline.read_text()
    updated = pytester.runpytest(*elsewhere, "--ragmetrics-update-baseline")
    assert updated.ret == pytest.ExitCode.TESTS_FAILED
    updated.stdout.fnmatch_lines(["*under another path*the baseline was not updated"])
    assert baseline.read_text() == before
    # The rootdir it was blessed with compares (and a -k subset is not called moved).
    monkeypatch.chdir(project)
    pytester.runpytest().assert_outcomes(failed=5)
    monkeypatch.delenv("RAG_WORSE")
    subset = pytester.runpytest("-k", "q2")
    subset.assert_outcomes(passed=1)
    assert "under another path" not in subset.stdout.str()


def test_a_baseline_blessed_from_a_parent_rootdir_is_not_silently_missed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pytester.path / "proj"
    project.mkdir()
    _project_in(project, TWO_TESTS)
    parent = ("--rootdir", str(pytester.path), "-c", "proj/pyproject.toml", "proj")
    pytester.runpytest(*parent, "--ragmetrics-update-baseline").assert_outcomes(passed=5)
    monkeypatch.chdir(project)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(
        ["*this run's 'test_rag.py::test_all' is 'proj/test_rag.py::test_all' there*"]
    )


# -- --dist each ---------------------------------------------------------------------------------


def test_dist_each_shows_and_counts_each_evaluation_once(pytester: pytest.Pytester) -> None:
    pytest.importorskip("xdist")
    make_project(pytester, tests=TWO_TESTS)
    each = ("-n", "2", "--dist", "each", "--ragmetrics-json=r.json")
    first = pytester.runpytest(*each, "--ragmetrics-update-baseline")
    first.assert_outcomes(passed=10)  # every test runs on both workers
    first.stdout.fnmatch_lines(["*: 0 updated, 5 added, 0 removed, 0 unchanged"])
    rows = [line for line in first.stdout.lines if line.startswith("test_rag.py::test_all ")]
    assert len(rows) == 1, rows
    assert len(report_of(pytester.path / "r.json")["evaluations"]) == 5
    again = pytester.runpytest(*each, "--ragmetrics-update-baseline")
    again.stdout.fnmatch_lines(["*: 0 updated, 0 added, 0 removed, 5 unchanged"])
    assert "differ between the xdist workers" not in again.stdout.str()


def test_dist_each_names_an_evaluation_the_workers_computed_apart(
    pytester: pytest.Pytester,
) -> None:
    pytest.importorskip("xdist")
    per_worker = CONFTEST.replace(
        'bool(os.environ.get("RAG_WORSE"))', 'os.environ.get("PYTEST_XDIST_WORKER") == "gw1"'
    )
    make_project(pytester, tests=TWO_TESTS, conftest=per_worker)
    result = pytester.runpytest("-n", "2", "--dist", "each", "--ragmetrics-json=r.json")
    result.stdout.fnmatch_lines(
        ["ragmetrics: 5 evaluation(s) differ between the xdist workers *: *test_all [[]retrieval]*"]
    )
    assert len(report_of(pytester.path / "r.json")["evaluations"]) == 5


# -- an update that leaves a failed test's entry -------------------------------------------------


def test_an_update_says_which_entries_it_left_because_their_tests_failed(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        pytester,
        tests="""
        import os

        def test_ok(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)

        def test_bad(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
            assert not os.environ.get("BAD")
        """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    monkeypatch.setenv("BAD", "1")
    monkeypatch.setenv("RAG_WORSE", "1")
    result = pytester.runpytest("--ragmetrics-update-baseline", "--ragmetrics-json=r.json")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        [
            "test_rag.py::test_bad [[]retrieval] * not updated",
            "*: 1 updated, 0 added, 0 removed, 0 unchanged, 1 not updated",
            "ragmetrics: 1 evaluation not updated: its test failed, so the baseline keeps what "
            "it had *run with --ragmetrics-update-baseline again:",
            "  test_rag.py::test_bad [[]retrieval]",
        ]
    )
    report = report_of(pytester.path / "r.json")
    updates = {e["test"]: e["outcome"].get("update") for e in report["evaluations"]}
    assert updates == {"test_rag.py::test_bad": "not updated", "test_rag.py::test_ok": "updated"}
    assert report["summary"]["baseline_update"]["not_updated"] == 1


# -- a metric no longer computed, in Markdown and HTML -------------------------------------------


def test_a_lost_metric_shows_as_lost_in_markdown_and_html(pytester: pytest.Pytester) -> None:
    make_project(
        pytester, tests="def test_r(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run)\n"
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    result = pytester.runpytest(
        "--ragmetrics-metrics=ndcg_at_10 recall_at_1",
        "--ragmetrics-markdown=r.md",
        "--ragmetrics-html=r.html",
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*· Δ*lost 4 !*"])
    markdown = (pytester.path / "r.md").read_text()
    (row,) = [line for line in markdown.splitlines() if line.startswith("| test_rag.py")]
    assert row.split(" | ")[3] == "not computed (lost on 4 queries ▼)", row
    page = (pytester.path / "r.html").read_text()
    matrix = page[page.index('<table class="matrix">') :]
    matrix = matrix[: matrix.index("</table>")]
    assert "<th>mrr</th>" in matrix and 'title="mrr n/a; lost"' in matrix


# -- messages that name the real mistake ---------------------------------------------------------


def test_a_per_query_test_given_a_run_without_its_query_says_so(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        tests="""
        from pytest_ragmetrics import Run

        def test_other_run(rag_eval, rag_query):
            rag_eval.retrieval(Run.from_rankings({"q2": ["d2"]}))
        """,
    )
    result = pytester.runpytest("-k", "q1")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_other_run[[]q1]: rag_eval.retrieval: the run has no ranking for this test's "
            "query 'q1' (it has 1 other query, e.g. 'q2'); *pass a run that ranks it*"
        ]
    )
    assert "run is empty" not in result.stdout.str()
    pytester.runpytest("-k", "q2").assert_outcomes(passed=1)


def test_rag_queries_given_a_list_suggests_one_argument_per_id(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_queries(["q1", "q2"])
        def test_q(rag_query):
            pass
        """,
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["*query ids are strings, each its own argument; write rag_queries('q1', 'q2')*"]
    )
    assert "rag_queries(\"['q1', 'q2']\")" not in result.stdout.str()


def test_rag_dataset_with_no_name_is_an_error(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_dataset()
        def test_d(rag_dataset):
            pass
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_d: @pytest.mark.rag_dataset() names no dataset; name at least one "
            "(configured: 'data'), e.g. rag_dataset('data')*"
        ]
    )


def test_a_negative_relevance_level_is_refused(pytester: pytest.Pytester) -> None:
    make_project(
        pytester, tests="def test_r(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run)\n"
    )
    result = pytester.runpytest("--ragmetrics-relevance-level=-1")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*ragmetrics_relevance_level: '-1': the relevance level is the lowest grade that "
            "counts as relevant, 0 or more (default 1*"
        ]
    )
    # 0 counts judged non-relevant documents (grade 0) as relevant: allowed, as in trec_eval.
    pytester.runpytest("--ragmetrics-relevance-level=0").assert_outcomes(passed=1)


# -- a threshold failure is an AssertionError ----------------------------------------------------


def test_xfail_raises_assertion_error_catches_a_threshold_failure(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.xfail(raises=AssertionError, strict=True)
        @pytest.mark.rag_threshold(mrr=0.9)
        def test_known_gap(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)

        @pytest.mark.rag_threshold(mrr=0.9)
        def test_plain(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
        """,
    )
    monkeypatch.setenv("RAG_WORSE", "1")
    result = pytester.runpytest()
    result.assert_outcomes(xfailed=1, failed=1)
    # Still shown as our message alone, without a traceback of the plugin.
    result.stdout.fnmatch_lines(["rag_threshold: retrieval evaluation * mrr = 0.3333 < *"])
    assert "pytest_runtest_call" not in result.stdout.str()
