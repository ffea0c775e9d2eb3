"""Baselines: writing, regression failures with statistics, comparability, blessing, xdist."""

from __future__ import annotations

import json
import os
import textwrap
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.plugin_project import SERIAL_AND_N2, XDIST_QUICK, make_project, write_dataset

TESTS = """
    import pytest

    def test_retrieval(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""


def baseline_of(pytester: pytest.Pytester) -> dict:
    return json.loads((pytester.path / ".ragmetrics" / "baseline.json").read_text())


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    return pytester


def test_first_run_passes_and_writes_nothing(project: pytest.Pytester) -> None:
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_rag.py::test_retrieval [[]toy[]]*new*"])
    assert not (project.path / ".ragmetrics" / "baseline.json").exists()


def test_update_writes_sorted_versioned_entries(project: pytest.Pytester) -> None:
    result = project.runpytest("--ragmetrics-update-baseline")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "*test_rag.py::test_retrieval [[]toy[]]*added*",
            "*baseline .ragmetrics/baseline.json: 0 updated, 1 added, 0 removed, 0 unchanged*",
            "commit: .ragmetrics/baseline.json .ragmetrics/datasets/",
        ]
    )
    assert "new" not in result.stdout.str().split("status")[1].split("\n")[2]
    text = (project.path / ".ragmetrics" / "baseline.json").read_text()
    data = json.loads(text)
    assert data["schema_version"] == 1
    entry = data["entries"]["test_rag.py::test_retrieval"]["toy"]
    assert entry["metrics"] == {"ndcg_at_10": 1.0, "recall_at_1": 1.0, "mrr": 1.0}
    assert set(entry["per_query"]) == {"q1", "q2", "q3", "q4"}
    assert set(entry["dataset"]["fingerprints"]) == {"corpus", "queries", "qrels"}
    assert entry["identity"] == {"retriever": {"name": "toy", "worse": False}}
    assert entry["k"] == 100
    assert entry["semantics"] == {"relevance_level": 1, "gain": "linear", "query_set": "qrels"}
    assert entry["plugin_version"]
    assert text == json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False) + "\n"
    # A second blessing of the same numbers changes nothing.
    again = project.runpytest("--ragmetrics-update-baseline", "--ragmetrics-json=r.json")
    again.stdout.fnmatch_lines(["*0 updated, 0 added, 0 removed, 1 unchanged*"])
    report = json.loads((project.path / "r.json").read_text())
    assert report["evaluations"][0]["outcome"]["update"] == "unchanged"
    assert report["summary"]["baseline_update"]["commit"] == [
        ".ragmetrics/baseline.json",
        ".ragmetrics/datasets/",
    ]
    assert (project.path / ".ragmetrics" / "baseline.json").read_text() == text


def test_worse_retriever_fails_with_statistics_and_advice(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("RAG_WORSE", "1")
    result = project.runpytest("-v", "--ragmetrics-json=r.json")
    result.assert_outcomes(failed=1)
    full = [
        "*'toy' (test_rag.py::test_retrieval) regressed against the baseline in "
        ".ragmetrics/baseline.json:",
        "*recall_at_1: baseline 1.0000 → current 0.0000, Δ -1.0000 (allowed drop 0.0100*",
        "*95% bootstrap CI of Δ [[]-1.0000, -1.0000[]]; paired randomization test p = *",
        "*queries: 4 worse, 0 better, 0 unchanged*",
        '*most regressed: q1 "which animal purrs": rank 1 → 3 (Δ -1.000); q2 "which animal '
        'barks": rank 1 → 3*',
        "*configuration changed: retriever.worse: false → true*",
        "What to do: fix the regression, or if the new numbers are intended, bless them with "
        "--ragmetrics-update-baseline and commit what it lists (.ragmetrics/baseline.json "
        "and the dataset digests beside it).",
    ]
    result.stdout.fnmatch_lines(full)
    result.stdout.fnmatch_lines(["*test_retrieval [[]toy[]]*regressed*", "*· Δ*-1.0000 !*"])
    # The JSON report keeps the full message, whatever the verbosity.
    (evaluation,) = json.loads((project.path / "r.json").read_text())["evaluations"]
    message = evaluation["outcome"]["message"]
    assert message.startswith("ragmetrics: 'toy' (test_rag.py::test_retrieval) regressed")
    assert "95% bootstrap CI of Δ" in message and "allowed drop" in message


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_a_regression_message_is_short_by_default_with_the_queries_text(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    """Issue 27: per metric its Δ with CI and counts, the three most regressed queries with
    their text, what to do, and how to see more; the full message with -v and in JSON."""
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("RAG_WORSE", "1")
    result = project.runpytest("--ragmetrics-json=r.json", *xdist)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: 'toy' (test_rag.py::test_retrieval) regressed against the baseline in "
            ".ragmetrics/baseline.json:",
            "  recall_at_1: 1.0000 → 0.0000, Δ -1.0000 (95% CI [[]-1.0000, -1.0000[]], "
            "p = 0.1266); 4 of 4 queries worse, 0 better",
            "    fell to 0, the worst possible value, on all 4 queries: a collapse fails whatever "
            "the p-value",
            "  mrr: 1.0000 → 0.3333, Δ -0.6667 *",
            "  ndcg_at_10: 1.0000 → 0.5000, Δ -0.5000 (95% CI [[]-0.5000, -0.5000[]], "
            "p = 0.1266); 4 of 4 queries worse, 0 better",
            "  most regressed in recall_at_1:",
            '    q1 "which animal purrs": rank 1 → 3 (Δ -1.000)',
            '    q2 "which animal barks": rank 1 → 3 (Δ -1.000)',
            '    q3 "which animal sings": rank 1 → 3 (Δ -1.000)',
            "  configuration changed: retriever.worse: false → true",
            "What to do: fix the regression, or if the new numbers are intended, bless them with "
            "--ragmetrics-update-baseline*",
            "(-v shows the full message*; the JSON report keeps it)",
        ]
    )
    lines = result.stdout.lines
    start = next(i for i, line in enumerate(lines) if line.startswith("ragmetrics: 'toy'"))
    end = next(i for i, line in enumerate(lines) if line.startswith("(-v shows"))
    failure = "\n".join(lines[start : end + 1])
    assert end - start + 1 == 12, failure  # 22 with -v
    assert "q4" not in failure and "allowed drop" not in failure
    (evaluation,) = json.loads((project.path / "r.json").read_text())["evaluations"]
    assert "95% bootstrap CI of Δ" in evaluation["outcome"]["message"]
    verbose = project.runpytest("-v", *xdist)
    verbose.stdout.fnmatch_lines(["*95% bootstrap CI of Δ*", '*q4 "which animal gallops"*'])
    assert "(-v shows the full message" not in verbose.stdout.str()


def test_better_retriever_passes_and_is_reported_improved(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("RAG_WORSE", "1")
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.delenv("RAG_WORSE")
    result = project.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*test_retrieval [[]toy[]]*improved*", "*· Δ*+1.0000 +*"])


def test_tolerance_and_alpha_gate(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("RAG_WORSE", "1")
    # A drop inside a generous per-metric tolerance is fine for that metric only.
    loose = project.runpytest(
        "--ragmetrics-tolerance=0.01 recall_at_1=100% ndcg_at_10=100% mrr=100%"
    )
    loose.assert_outcomes(passed=1)
    # With 4 queries a sign-flip test cannot reach p < 0.05: the alpha gate holds the drops of
    # ndcg and mrr back, and says that it cannot work; recall_at_1 fell to 0 on every query, a
    # collapse that fails whatever the p-value.
    gated = project.runpytest("--ragmetrics-alpha=0.05", "-v")
    gated.assert_outcomes(failed=1)
    gated.stdout.fnmatch_lines(
        [
            "*recall_at_1: baseline 1.0000 → current 0.0000, Δ -1.0000*",
            "*recall_at_1 fell to 0, the worst possible value, on all 4 queries: a collapse "
            "fails whatever the p-value; with 4 queries the smallest attainable p is 0.1266*",
        ]
    )
    gated.stdout.fnmatch_lines(
        [
            "*mrr dropped -0.6667 but not significantly (p = 0.1266 ≥ alpha 0.05); with 4 "
            "queries the smallest attainable p is 0.1266, so no change can be significant at "
            "alpha 0.05: the test needs at least 6 queries*"
        ]
    )
    assert "ndcg_at_10: baseline" not in gated.stdout.str()
    # Only the collapse fails: a tolerance that lets recall_at_1 drop leaves the gate alone.
    project.runpytest(
        "--ragmetrics-alpha=0.05", "--ragmetrics-tolerance=0.01 recall_at_1=100%"
    ).assert_outcomes(passed=1)


def test_changed_corpus_is_not_comparable(project: pytest.Pytester) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    from tests.helpers.plugin_project import CORPUS

    corpus = [dict(d) for d in CORPUS]
    corpus[0]["text"] = "Cats purr."
    corpus.append({"_id": "d6", "title": "Cows", "text": "Cows moo."})
    write_dataset(project.path, corpus=corpus)
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'toy' (test_rag.py::test_retrieval) is not comparable with its baseline in "
            ".ragmetrics/baseline.json:",
            "*corpus: 1 doc added, 1 changed (e.g. d6, d1)",
            "What to do: if the change is intended, record new numbers with "
            "--ragmetrics-update-baseline*",
        ]
    )


def test_changed_semantics_is_not_comparable(project: pytest.Pytester) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    result = project.runpytest("--ragmetrics-gain=exponential")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*metric semantics: *linear* → *exponential*"])


def test_strict_mode_fails_on_a_missing_entry(project: pytest.Pytester) -> None:
    result = project.runpytest("--ragmetrics-strict")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*has no baseline entry in .ragmetrics/baseline.json and "
            "--ragmetrics-strict is on*--ragmetrics-update-baseline*"
        ]
    )


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_update_removes_entries_no_longer_recorded_and_lists_stale(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    make_project(
        pytester,
        tests="""
        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="one")
            rag_eval.retrieval(rag_run, name="two")

        def test_b(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline", *xdist).assert_outcomes(passed=2)
    assert sorted(baseline_of(pytester)["entries"]["test_rag.py::test_a"]) == ["one", "two"]
    pytester.makepyfile(
        test_rag="""
        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="one")
    """
    )
    plain = pytester.runpytest(*xdist)
    # Values the baseline holds and the run no longer computes are lost: test_a fails for its
    # evaluation "two", the run for test_b's entry (issue 24 class 1).
    plain.assert_outcomes(failed=1)
    plain.stdout.fnmatch_lines(
        [
            "*test_rag.py::test_a no longer records 1 evaluation*",
            "*1 baseline entries belong to tests that no longer exist*",
            "*test_rag.py::test_b [[]retrieval[]]*",
        ]
    )
    # Selecting one test by node id says nothing about the others.
    only = pytester.runpytest("test_rag.py::test_a", *xdist)
    assert "no longer exist" not in only.stdout.str()
    result = pytester.runpytest("--ragmetrics-update-baseline", *xdist)
    result.stdout.fnmatch_lines(["*0 updated, 0 added, 2 removed*"])
    assert baseline_of(pytester)["entries"] == {
        "test_rag.py::test_a": {
            "one": baseline_of(pytester)["entries"]["test_rag.py::test_a"]["one"]
        }
    }


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
@pytest.mark.parametrize("select", [["-k", "test_a"], ["-m", "not slow"]], ids=["k", "m"])
def test_deselected_tests_are_neither_stale_nor_removed(
    pytester: pytest.Pytester, xdist: list[str], select: list[str]
) -> None:
    make_project(
        pytester,
        ini='markers = ["slow: takes long"]',
        tests="""
        import pytest

        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)

        @pytest.mark.slow
        def test_b(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    before = baseline_of(pytester)
    result = pytester.runpytest("--ragmetrics-update-baseline", *select, *xdist)
    result.assert_outcomes(passed=1, deselected=0 if xdist else 1)  # xdist does not count them
    result.stdout.fnmatch_lines(["*0 updated, 0 added, 0 removed*"])
    assert "no longer exist" not in result.stdout.str()
    assert baseline_of(pytester) == before


def test_update_leaves_other_tests_untouched(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)

        def test_b(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    before = baseline_of(pytester)
    pytester.runpytest("--ragmetrics-update-baseline", "-k", "test_a").assert_outcomes(
        passed=1, deselected=1
    )
    assert baseline_of(pytester) == before


def test_crashing_test_keeps_its_entries(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
        import os

        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="one")
            if os.environ.get("CRASH"):
                raise RuntimeError("boom")
            rag_eval.retrieval(rag_run, name="two")
    """,
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    before = baseline_of(pytester)
    os.environ["CRASH"] = "1"
    try:
        pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(failed=1)
    finally:
        del os.environ["CRASH"]
    assert baseline_of(pytester) == before


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("", "the baseline file is empty"),
        ('{"schema_version": 1, "entries": {', "is not valid JSON"),
        ('{"schema_version": 99, "entries": {}}', "written by a newer pytest-ragmetrics"),
        ('{"schema_version": 0, "entries": {}}', "baseline schema 0 is not a version"),
        ('{"entries": {}}', "not a pytest-ragmetrics baseline"),
        (
            '{"schema_version": 1, "entries": {"t": {"n": {"layer": "retrieval", "metrics": '
            '{"ndcg_at_10": "high"}}}}}',
            "'metrics' must map metric names to numbers",
        ),
        ('{"schema_version": 1, "entries": []}', "'entries' must be an object"),
        ('{"schema_version": 1, "entries": {}, "entries": {}}', "the key 'entries' appears twice"),
    ],
    ids=[
        "empty",
        "truncated",
        "newer-schema",
        "schema-zero",
        "no-schema",
        "nonsense-value",
        "nonsense-type",
        "key-twice",
    ],
)
def test_broken_baseline_is_a_clear_error_naming_the_file(
    project: pytest.Pytester, content: str, message: str
) -> None:
    path = project.path / ".ragmetrics" / "baseline.json"
    path.parent.mkdir()
    path.write_text(content)
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*baseline.json*{message}*"])
    assert "Traceback" not in result.stdout.str()
    assert path.read_text() == content  # never overwritten without --ragmetrics-update-baseline


@pytest.mark.parametrize(
    "content",
    [
        '<<<<<<< HEAD\n{"schema_version": 1, "entries": {}}\n',
        '{"schema_version": 1, "entries": {"test_other.py::test_x": {"retrieval": {',
        '{"schema_version": 99, "entries": {}}',
    ],
    ids=["merge-conflict", "truncated", "newer-schema"],
)
def test_update_leaves_a_baseline_it_cannot_read_as_it_is(
    project: pytest.Pytester, content: str
) -> None:
    """Its entries may be other tests': replacing it with this run's entries would drop them."""
    path = project.path / ".ragmetrics" / "baseline.json"
    path.parent.mkdir()
    path.write_text(content)
    result = project.runpytest("--ragmetrics-update-baseline")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*baseline.json*the baseline was not updated*"])
    assert "Traceback" not in result.stdout.str()
    assert path.read_text() == content
    path.unlink()  # what the message says to do when the file is not worth restoring
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    assert json.loads(path.read_text())["entries"]


@pytest.mark.parametrize("mode", XDIST_QUICK)
def test_update_under_xdist_is_byte_identical(pytester: pytest.Pytester, mode: list[str]) -> None:
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.parametrize("name", ["a", "b", "c", "d"])
        def test_many(rag_eval, rag_run, name):
            rag_eval.retrieval(rag_run, name=name)
    """,
    )
    serial = pytester.runpytest_subprocess("--ragmetrics-update-baseline", "-p", "no:xdist")
    serial.assert_outcomes(passed=4)
    path = pytester.path / ".ragmetrics" / "baseline.json"
    expected = path.read_bytes()
    path.unlink()
    result = pytester.runpytest_subprocess("--ragmetrics-update-baseline", *mode)
    result.assert_outcomes(passed=4)
    assert path.read_bytes() == expected


def test_answer_and_retrieval_entries_live_side_by_side(pytester: pytest.Pytester) -> None:
    pytest.importorskip("pytest_ragmetrics.metrics.answer")
    make_project(
        pytester,
        tests=textwrap.dedent("""
        from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim

        def test_both(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
            rag_eval.answers([
                AnswerAssessment(query_id="q1", answer="Cats purr. They fly.",
                                 claims=[Claim("Cats purr.", True), Claim("They fly.", False)],
                                 addresses_question=True),
            ])
    """),
    )
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    entries = baseline_of(pytester)["entries"]["test_rag.py::test_both"]
    assert entries["answers"]["layer"] == "answer"
    assert entries["answers"]["metrics"]["groundedness"] == 0.5
    assert entries["retrieval"]["layer"] == "retrieval"


def test_baseline_path_outside_project_is_refused(project: pytest.Pytester) -> None:
    result = project.runpytest("--ragmetrics-baseline=../elsewhere/baseline.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*ragmetrics_baseline*points outside the project*"])
    assert not Path(project.path.parent / "elsewhere").exists()


def test_a_worker_without_its_collection_makes_nothing_stale() -> None:
    """A crashed worker sends no list: no entry may then be called stale (or removed)."""
    from pytest_ragmetrics.plugin.session import RagSession

    no_settings: Any = None  # never read: nothing here needs the configuration
    state = RagSession(lambda: no_settings)
    state.merge_worker_collection({"tests": ["t.py::a", "t.py::b"], "complete": True})
    assert state.collection_complete and state.collected == {"t.py::a", "t.py::b"}
    state.merge_worker_collection({"tests": ["t.py::a"], "complete": False})  # node ids given
    assert not state.collection_complete
    fresh = RagSession(lambda: no_settings)
    fresh.merge_worker_collection(None)
    assert not fresh.collection_complete


def test_a_regression_against_means_only_still_names_its_metrics(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An entry without per-query values (written by another tool, cut by hand) pairs no
    query: the message said it regressed and named no metric's drop."""
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    path = project.path / ".ragmetrics" / "baseline.json"
    data = json.loads(path.read_text())
    for named in data["entries"].values():
        for entry in named.values():
            del entry["per_query"]
    path.write_text(json.dumps(data))
    monkeypatch.setenv("RAG_WORSE", "1")
    result = project.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*recall_at_1: 1.0000 → 0.0000, Δ -1.0000 (no per-query values to pair: means only)*"]
    )


MIXED_TESTS = """
    import os
    from pytest_ragmetrics import Run

    GOOD = {"q1": ["d1", "d2"], "q2": ["d2", "d1"], "q3": ["d3", "d4"], "q4": ["d5", "d1"]}
    # q1 unchanged, the others lose their relevant document at rank 1
    MIXED = {"q1": ["d1", "d2"], "q2": ["d1", "d2"], "q3": ["d4", "d1"], "q4": ["d1", "d2"]}

    def test_retrieval(rag_eval):
        table = MIXED if os.environ.get("RAG_MIXED") else GOOD
        rag_eval.retrieval(Run.from_rankings(table), name="toy")
"""


def test_a_delta_over_other_queries_than_the_mean_shown_is_marked_with_its_means(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline entry holding q1 only (1.0) against this run's four queries (mean 0.25 for
    recall_at_1): the Δ is over q1, 0.0, and stood under 0.2500 beside a baseline of 1.0000
    in every report, unmarked."""
    monkeypatch.delenv("RAG_MIXED", raising=False)
    make_project(pytester, tests=MIXED_TESTS, ini='ragmetrics_metrics = "recall_at_1"')
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    data = baseline_of(pytester)
    (entries,) = data["entries"].values()
    (entry,) = entries.values()
    entry["per_query"] = {"q1": entry["per_query"]["q1"]}
    entry["num_queries"] = 1
    (pytester.path / ".ragmetrics" / "baseline.json").write_text(json.dumps(data))
    monkeypatch.setenv("RAG_MIXED", "1")
    result = pytester.runpytest("--ragmetrics-markdown=r.md", "--ragmetrics-html=r.html")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "test_rag.py::test_retrieval [[]toy[]] * 0.2500  ok",
            "*· baseline * 1.0000",
            "*· same queries * 1.0000",
            "*· Δ * 0.0000 †",
            "† Δ over only the queries both the baseline and this run hold; its means are*",
            "*recall_at_1 compared on the 1 queries both hold, 1.0000 → 1.0000 (0 only in the "
            "baseline, 3 only in this run; over all of them 1.0000 → 0.2500)",
        ]
    )
    markdown = (pytester.path / "r.md").read_text()
    assert "| 0.2500 (0.0000 †) |" in markdown
    assert "† Δ over only the queries both the baseline and this run hold" in markdown
    page = (pytester.path / "r.html").read_text()
    assert "hold: baseline 1.0000, now 1.0000, Δ 0.0000" in page
    assert "Δ 0.0000 †" in page
    assert "† Δ over only the queries both the baseline and this run hold" in page
    # The same run against a whole baseline: nothing marked.
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    again = pytester.runpytest("--ragmetrics-markdown=again.md", "--ragmetrics-html=r.html")
    assert "†" not in again.stdout.str() + (pytester.path / "again.md").read_text()
    assert "†" not in (pytester.path / "r.html").read_text()
