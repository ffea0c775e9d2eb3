"""Reports: terminal tables, JSON (equal with and without xdist), Markdown, JUnit properties."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET

import pytest

from tests.helpers.plugin_project import XDIST_MODES, XDIST_QUICK, make_project

TESTS = """
    import pytest
    from pytest_ragmetrics import Run

    @pytest.mark.rag_threshold(recall_at_1=0.5)
    def test_dense(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="dense")

    @pytest.mark.parametrize("k", [1, 2])
    def test_cut(rag_eval, rag_run, k):
        rag_eval.retrieval(rag_run.truncate(k), name=f"top{k}")

    def test_partial(rag_eval):
        rag_eval.retrieval(Run.from_rankings({"q1": ["d1"], "q9": ["d1"]}), name="partial")
"""


def test_terminal_summary_table(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(
        [
            "*- ragmetrics: retrieval layer -*",
            "evaluation*ndcg_at_10*recall_at_1*mrr*status",
            "test_rag.py::test_cut[[]1[]] [[]top1[]]*1.0000*1.0000*1.0000*new",
            "test_rag.py::test_dense [[]dense[]]*1.0000*1.0000*1.0000*new",
            "test_rag.py::test_partial [[]partial[]]*0.2500*0.2500*0.2500*new",
            "",
            "note: test_rag.py::test_partial [[]partial[]]: 3 of 4 judged queries are missing from "
            "the run and score 0 (e.g. q2, q3, q4)",
            "note: test_rag.py::test_partial [[]partial[]]: 1 run queries have no judgments and "
            "are ignored (e.g. q9)",
        ]
    )
    assert "answer layer" not in result.stdout.str()


def _report(pytester: pytest.Pytester, name: str, *args: str) -> dict:
    result = pytester.runpytest_subprocess(f"--ragmetrics-json={name}", *args)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines([f"ragmetrics: wrote {name}"])
    return json.loads((pytester.path / name).read_text())


@pytest.mark.parametrize("mode", XDIST_QUICK)
def test_json_report_is_the_same_with_and_without_xdist(
    pytester: pytest.Pytester, mode: list[str]
) -> None:
    make_project(pytester, tests=TESTS)
    serial = _report(pytester, "serial.json", "-p", "no:xdist")
    other = _report(pytester, "other.json", *mode)
    assert serial.pop("created") and other.pop("created")
    assert serial == other


def test_json_report_content(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    report = _report(pytester, "out/report.json")
    assert report["schema"] == "pytest-ragmetrics/report"
    assert report["version"] == 1
    assert report["settings"]["metrics"] == ["ndcg_at_10", "recall_at_1", "mrr"]
    assert report["settings"]["dataset"] == "data"
    names = [(e["test"], e["name"]) for e in report["evaluations"]]
    assert names == sorted(names)
    dense = next(e for e in report["evaluations"] if e["name"] == "dense")
    assert dense["layer"] == "retrieval"
    assert dense["metrics"] == {"ndcg_at_10": 1.0, "recall_at_1": 1.0, "mrr": 1.0}
    assert dense["per_query"]["q2"]["recall_at_1"] == 1.0
    assert dense["identity"] == {"retriever": {"name": "toy", "worse": False}}
    assert dense["dataset"]["fingerprints"].keys() == {"corpus", "queries", "qrels"}
    assert dense["thresholds"] == {"recall_at_1": 0.5}
    assert dense["outcome"]["thresholds"] == [
        {"metric": "recall_at_1", "value": 1.0, "threshold": 0.5, "passed": True}
    ]
    assert dense["outcome"]["baseline"]["status"] == "new"
    assert report["summary"]["evaluations"] == 4
    assert report["summary"]["by_status"] == {"new": 4}


def test_modify_report_hook(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + "\ndef pytest_ragmetrics_modify_report(report, config):\n"
        "    report['team'] = 'search'\n"
    )
    report = _report(pytester, "r.json")
    assert report["team"] == "search"


def test_markdown_report_appends_and_bolds_the_best(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    summary = pytester.path / "summary.md"
    summary.write_text("# Earlier step\n")
    pytester.runpytest("--ragmetrics-markdown=summary.md").assert_outcomes(passed=4)
    text = summary.read_text()
    assert text.startswith("# Earlier step\n")
    # One table for the layer: a row per evaluation, a column per metric, best in bold.
    assert (
        "### Retrieval layer\n\n"
        "| evaluation | ndcg_at_10 | recall_at_1 | mrr | status |\n"
        "|---|---:|---:|---:|---|\n"
        "| test_rag.py::test_cut[1] [top1] | **1.0000** | **1.0000** | **1.0000** | new |\n"
        "| test_rag.py::test_cut[2] [top2] | **1.0000** | **1.0000** | **1.0000** | new |\n"
        "| test_rag.py::test_dense [dense] | **1.0000** | **1.0000** | **1.0000** | new |\n"
        "| test_rag.py::test_partial [partial] | 0.2500 | 0.2500 | 0.2500 | new |\n"
        "\nBest value per metric in bold.\n"
    ) in text
    assert text.count("| evaluation |") == 1
    assert "- test_rag.py::test_partial [partial]: 3 of 4 judged queries are missing" in text
    pytester.runpytest("--ragmetrics-markdown=summary.md").assert_outcomes(passed=4)
    assert summary.read_text().count("## pytest-ragmetrics") == 2


def test_markdown_report_stays_under_one_mebibyte() -> None:
    from pytest_ragmetrics.report.markdown import markdown_report
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome

    entries = [
        Checked.from_dict(
            {
                "test": f"tests/test_x.py::test_{i}",
                "name": "n" * 200,
                "layer": "retrieval",
                "metrics": {f"m_{j}": 0.5 for j in range(40)},
                "per_query": {"q": {f"m_{j}": 0.5 for j in range(40)}},
                "outcome": {},
            }
        )
        for i in range(2000)  # about 1.5 MB of table rows
    ]
    text = markdown_report(SessionOutcome(entries, []))
    assert len(text.encode()) < 1024 * 1024
    assert text.rstrip().endswith("for everything._")
    assert text.split("\n\n_Report truncated")[0].endswith(" |")  # cut after a whole row


def _checked(test: str, dataset: str, values: dict, verdict=None, thresholds=()):
    from pytest_ragmetrics.report.outcome import Checked, EvaluationOutcome

    record = Checked.from_dict(
        {
            "test": test,
            "name": "n",
            "layer": "retrieval",
            "dataset": {"name": dataset, "split": "test"},
            "metrics": values,
            "per_query": {"q1": values},
        }
    ).record
    return Checked(record, EvaluationOutcome(tuple(thresholds), verdict))


def test_markdown_report_cells_have_delta_marks_and_one_table_per_dataset() -> None:
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict, MetricVerdict
    from pytest_ragmetrics.report.markdown import markdown_report
    from pytest_ragmetrics.report.outcome import SessionOutcome, ThresholdResult

    regressed = BaselineVerdict(
        "regressed",
        [
            MetricVerdict("ndcg_at_10", 0.8, 0.6, -0.2, "0.01", 0.01, "regressed"),
            MetricVerdict("mrr", 0.45, 0.5, 0.05, "0.01", 0.01, "improved"),
        ],
    )
    outcome = SessionOutcome(
        [
            _checked(
                "t.py::a",
                "scifact",
                {"ndcg_at_10": 0.6, "mrr": 0.5},
                regressed,
                [ThresholdResult.check("ndcg_at_10", 0.6, 0.7)],
            ),
            _checked("t.py::b", "scifact", {"ndcg_at_10": 0.7, "mrr": 0.4}),
            _checked("t.py::c", "cranfield", {"ndcg_at_10": 0.3, "mrr": 0.2}),
        ],
        ["ndcg_at_10", "mrr"],
    )
    text = markdown_report(outcome)
    assert (
        "#### scifact (test)\n\n"
        "| evaluation | ndcg_at_10 | mrr | status |\n"
        "|---|---:|---:|---|\n"
        "| t.py::a [n] | 0.6000 (-0.2000 ▼) ✗ | **0.5000** (+0.0500 ▲) | below threshold, "
        "regressed |\n"
        "| t.py::b [n] | **0.7000** | 0.4000 | - |\n"
        "\nBest value per metric in bold; in brackets Δ against the baseline, ▼ regressed / ▲ "
        "improved beyond the tolerance; ✗ below the threshold.\n"
    ) in text
    # Alone on its dataset: nothing to be best against.
    assert (
        "#### cranfield (test)\n\n| evaluation | ndcg_at_10 | mrr | status |\n"
        "|---|---:|---:|---|\n| t.py::c [n] | 0.3000 | 0.2000 | - |\n"
    ) in text


def test_junit_properties_are_opt_in(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--junitxml=plain.xml").assert_outcomes(passed=4)
    assert "ragmetrics:" not in (pytester.path / "plain.xml").read_text()
    pytester.runpytest("--junitxml=props.xml", "--ragmetrics-junit-properties").assert_outcomes(
        passed=4
    )
    tree = ET.parse(pytester.path / "props.xml")
    props = {p.get("name"): p.get("value") for p in tree.iter("property")}
    assert props["ragmetrics:dense:recall_at_1"] == "1.0"
    assert props["ragmetrics:partial:mrr"] == "0.25"


def test_evaluation_recorded_hook_and_custom_metric(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini='ragmetrics_metrics = "mrr first_hit_depth"\n',
        tests="""
        import pytest

        @pytest.mark.rag_threshold(first_hit_depth=0.5)
        def test_it(rag_eval, rag_run):
            e = rag_eval.retrieval(rag_run)
            assert e.mean["first_hit_depth"] == 1.0
    """,
    )
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + """
import numpy as np

def pytest_ragmetrics_register_metrics(register):
    def first_hit_depth(ranked, k):
        first = ranked.first_relevant_rank
        return np.where(first > 0, 1.0 / np.maximum(first, 1), 0.0)
    register("first_hit_depth", first_hit_depth, cutoff="none")

SEEN = []

def pytest_ragmetrics_evaluation_recorded(recorded, item):
    SEEN.append((item.name, recorded.name, round(recorded.evaluation.mean["mrr"], 3)))

def pytest_sessionfinish(session):
    print("SEEN", SEEN)
"""
    )
    result = pytester.runpytest_subprocess("-s", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*SEEN [[]('test_it', 'retrieval', 1.0)[]]*", "evaluation*mrr*first_hit_depth*status"]
    )


@pytest.mark.parametrize("xdist", XDIST_MODES)
def test_html_report_is_written_by_the_controller_with_query_details(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=4)
    baseline = (pytester.path / ".ragmetrics" / "baseline.json").read_text()
    monkeypatch.setenv("RAG_WORSE", "1")
    result = pytester.runpytest(
        "--ragmetrics-html=report.html", "--ragmetrics-json=report.json", *xdist
    )
    result.stdout.fnmatch_lines(["ragmetrics: wrote report.html"])
    page = (pytester.path / "report.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "http://" not in page.split("</head>")[1]
    document = json.loads((pytester.path / "report.json").read_text())
    dense = next(e for e in document["evaluations"] if e["name"] == "dense")
    # Per-query records for the page: the current ranking with grades, the baseline values.
    assert dense["queries"]["q1"]["ranking"][0][0] == "d2"
    assert dense["baseline_per_query"]["q1"]["recall_at_1"] == 1.0
    assert "which animal purrs" in page  # the query text of the drill-down
    # The baseline never stores these fields.
    assert (pytester.path / ".ragmetrics" / "baseline.json").read_text() == baseline
    entries = json.loads(baseline)["entries"]
    assert all(
        not {"queries", "baseline_per_query"} & set(entry)
        for named in entries.values()
        for entry in named.values()
    )


def test_markdown_report_shows_markup_in_names_as_text() -> None:
    from pytest_ragmetrics.report.markdown import inline, markdown_report
    from pytest_ragmetrics.report.outcome import SessionOutcome

    test = "t.py::test_x[a|b] <script>*bold*</script> _em_ [link](http://x) `code`"
    text = markdown_report(SessionOutcome([_checked(test, "d", {"mrr": 0.5})], ["mrr"]))
    row = next(line for line in text.splitlines() if line.startswith("| t.py"))
    assert row == (
        "| t.py::test_x[a\\|b] \\<script\\>\\*bold\\*\\</script\\> \\_em\\_ [link\\](http://x) "
        "\\`code\\` [n] | 0.5000 | - |"
    )
    assert inline("ndcg_at_10\nline two") == "ndcg_at_10 line two"  # inner underscores stay


def test_collect_only_writes_no_report_and_keeps_the_last(pytester: pytest.Pytester) -> None:
    """--collect-only runs nothing: it wrote a report of no evaluations over the last one."""
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-json=r.json", "--ragmetrics-markdown=r.md")
    before = {name: (pytester.path / name).read_bytes() for name in ("r.json", "r.md")}
    assert json.loads(before["r.json"])["evaluations"]
    result = pytester.runpytest(
        "--collect-only", "--ragmetrics-json=r.json", "--ragmetrics-markdown=r.md"
    )
    assert result.ret == pytest.ExitCode.OK
    assert {name: (pytester.path / name).read_bytes() for name in before} == before


def test_a_registered_metric_of_large_values_round_trips(pytester: pytest.Pytester) -> None:
    """The range check of the files read refuses values near the largest float, which
    overflow when rounded; a registered metric's large but ordinary values (1e20) must still be
    blessed, read back and compared."""
    make_project(
        pytester,
        ini='ragmetrics_metrics = "mrr big"\n',
        tests="def test_it(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run)\n",
    )
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + """
import numpy as np

def pytest_ragmetrics_register_metrics(register):
    def big(ranked, k):
        return np.where(ranked.first_relevant_rank > 0, 1e20, 0.0)
    register("big", big, cutoff="none")
"""
    )
    pytester.runpytest("-p", "no:xdist", "--ragmetrics-update-baseline").assert_outcomes(passed=1)
    result = pytester.runpytest("-p", "no:xdist", "--ragmetrics-json=r.json")
    result.assert_outcomes(passed=1)
    (entry,) = json.loads((pytester.path / "r.json").read_text())["evaluations"]
    assert entry["metrics"]["big"] == 1e20 and entry["outcome"]["baseline"]["status"] == "ok"
