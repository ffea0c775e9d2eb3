"""What a hostile new user tried (reliability, round 2): no silently wrong verdict, and our own
one-line error instead of a traceback. Each test covers the class behind one report."""

from __future__ import annotations

import gc
import json
import textwrap
from pathlib import Path

import pytest

from pytest_ragmetrics import Qrels, Run, evaluate, load_dataset, read_qrels, read_run
from pytest_ragmetrics.cli import main as cli_main
from pytest_ragmetrics.errors import MetricError
from pytest_ragmetrics.plugin.session import RagSession
from pytest_ragmetrics.plugin.settings import Settings
from tests.helpers.plugin_project import make_project, write_dataset

TESTS = """
    def test_retrieval(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""

# -- silently wrong verdicts -------------------------------------------------------------------


def test_per_query_metrics_follow_the_run_not_its_address(tmp_path: Path) -> None:
    """Runs made one after another often reuse a freed run's address (id)."""
    data = write_dataset(tmp_path)
    session = RagSession(Settings(rootdir=tmp_path, dataset=data))
    for attempt in range(20):
        relevant_first = attempt % 2 == 0
        ranking = ["d1", "d2"] if relevant_first else ["d2", "d1"]
        run = Run.from_rankings({"q1": ranking})
        evaluation = session.run_evaluation(run)
        assert evaluation.per_query["q1"]["mrr_at_10"] == (1.0 if relevant_first else 0.5)
        del run, evaluation
        gc.collect()


def test_a_function_scoped_rag_run_gets_its_own_per_query_metrics(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester, ini='ragmetrics_metrics = "mrr"\n')
    pytester.makepyfile(
        test_rag=textwrap.dedent(
            """
            import pytest
            from pytest_ragmetrics import Run

            @pytest.fixture(params=["good", "bad"])
            def rag_run(request):
                first = "d1" if request.param == "good" else "d2"
                return Run.from_rankings({"q1": [first, "d3"], "q2": ["d2"], "q3": ["d3"],
                                          "q4": ["d5"]})

            @pytest.mark.rag_queries("q1")
            def test_q1(rag_query, rag_run):
                expected = 1.0 if rag_query.ranking[0][0] == "d1" else 0.0
                assert rag_query.metrics["mrr"] == expected
            """
        )
    )
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=2)


@pytest.mark.parametrize("name", [5, 2.5, True, ("a",)])
def test_evaluation_names_must_be_strings(pytester: pytest.Pytester, name: object) -> None:
    make_project(
        pytester,
        tests=f"""
            def test_retrieval(rag_eval, rag_run):
                rag_eval.retrieval(rag_run, name={name!r})
        """,
    )
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([f"*name={name!r} ({type(name).__name__}) must be a string*"])
    assert "Traceback" not in result.stdout.str()


@pytest.mark.parametrize(
    "run",
    [
        {"q1": {"d2": 2.0, 5: 1.0}},  # a string id first, then an int
        {"q1": {5: 2.0, "d2": 1.0}},
        {"q2": {"x": 1.0}, "q1": {"d2": 2.0, 5: 1.0}},  # the first query has strings only
    ],
)
def test_mixed_id_types_in_a_dict_run_are_scored_like_strings(run: dict) -> None:
    qrels = {"q1": {"5": 1, "d2": 1}, "q2": {"x": 1}}
    as_strings = {q: {str(d): s for d, s in docs.items()} for q, docs in run.items()}
    got = evaluate(qrels, run, ["recall_at_10", "ndcg_at_10"], query_set="intersection")
    want = evaluate(qrels, as_strings, ["recall_at_10", "ndcg_at_10"], query_set="intersection")
    assert got.per_query == want.per_query
    assert got.per_query["q1"]["recall_at_10"] == 1.0


@pytest.mark.parametrize("space", [" ", "\u00a0", "\u2003", "\u3000"])
def test_ids_with_spaces_survive_beir_and_trec_files(tmp_path: Path, space: str) -> None:
    doc = f"doc{space}one"
    data = write_dataset(tmp_path)
    with (data / "corpus.jsonl").open("a") as f:
        f.write(json.dumps({"_id": doc, "text": "spaced"}) + "\n")
    (data / "qrels" / "test.tsv").write_text(
        f"query-id\tcorpus-id\tscore\nq1\t{doc}\t1\nq2\td2\t1\n", encoding="utf-8"
    )
    dataset = load_dataset(data)
    assert dataset.qrels.judgments("q1") == {doc: 1}
    if space != " ":  # TREC files separate fields with ASCII spaces and tabs only
        (tmp_path / "qrels.txt").write_text(f"q1 0 {doc} 1\n", encoding="utf-8")
        (tmp_path / "run.txt").write_text(f"q1 Q0 {doc} 1 2.0 t\n", encoding="utf-8")
        assert read_qrels(tmp_path / "qrels.txt").judgments("q1") == {doc: 1}
        assert read_run(tmp_path / "run.txt").ranking("q1") == [(doc, 2.0)]
        assert (
            evaluate(
                read_qrels(tmp_path / "qrels.txt"), read_run(tmp_path / "run.txt"), ["recall_at_1"]
            ).mean["recall_at_1"]
            == 1.0
        )


# -- clear errors instead of tracebacks --------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "ini", "message"),
    [
        (["--ragmetrics-k=\u00b2"], "", "ragmetrics_k: '\u00b2' must be a positive integer"),
        (["--ragmetrics-k=\u0661\u0660"], "", "ragmetrics_k:"),
        (["--ragmetrics-k=1_000"], "", "ragmetrics_k:"),
        (["--ragmetrics-k=99999999999999999999"], "", "ragmetrics_k:"),
        ([], 'ragmetrics_relevance_level = "\u0661"\n', "ragmetrics_relevance_level:"),
        ([], 'ragmetrics_alpha = "\u0660.5"\n', "ragmetrics_alpha:"),
        (["--ragmetrics-tolerance=\u0661%"], "", "ragmetrics_tolerance:"),
        # pytest's own bool type said "invalid truth value 'maybe'", naming no key.
        (
            [],
            'ragmetrics_strict = "maybe"\n',
            "ragmetrics_strict: invalid truth value 'maybe'; write",
        ),
        ([], 'ragmetrics_junit_properties = "2"\n', "ragmetrics_junit_properties: invalid truth"),
        # Settings under which no regression could ever fail: no p is below 0, and more than
        # 100% lets a metric lose more than its whole value.
        (["--ragmetrics-alpha=0"], "", "ragmetrics_alpha: '0' must be a p-value above 0"),
        ([], 'ragmetrics_alpha = "0.0"\n', "ragmetrics_alpha: '0.0' must be a p-value above 0"),
        (["--ragmetrics-tolerance=200%"], "", "tolerance '200%' lets a metric lose more than"),
        ([], 'ragmetrics_tolerance = "mrr=150%"\n', "tolerance '150%' lets a metric lose"),
        # 5 for 5%: every check off, the collapse rule included (half the queries at 0 passed).
        (
            ["--ragmetrics-tolerance=5"],
            "",
            "absolute tolerance of '5' lets a metric in [0, 1] fall to 0 unchecked; did you "
            "mean 5% (relative) or 0.05?",
        ),
        ([], 'ragmetrics_tolerance = "ndcg_at_10=1e308"\n', "of '1e308' lets a metric in [0, 1]"),
        (["--ragmetrics-dataset=loop"], "", "ragmetrics_dataset: cannot resolve 'loop'"),
        (["--ragmetrics-json=loop/r.json"], "", "ragmetrics_json:"),
        (["--ragmetrics-baseline=loop"], "", "ragmetrics_baseline:"),
        (["--ragmetrics-cache-dir=loop"], "", "ragmetrics_cache_dir:"),
        (["--ragmetrics-calibration=loop"], "", "ragmetrics_calibration:"),
        (["--ragmetrics-judged-rankings=loop"], "", "ragmetrics_judged_rankings:"),
    ],
)
def test_odd_option_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], ini: str, message: str
) -> None:
    make_project(pytester, tests=TESTS, ini=ini)
    (pytester.path / "loop").symlink_to("loop")  # a symlink to itself
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str() + result.stdout.str()


BAD_ENTRY_FIELDS = [
    ("num_queries", "300", "'num_queries' must be a non-negative integer"),
    ("num_queries", -1, "'num_queries' must be a non-negative integer"),
    ("k", 10**400, "'k' must be a non-negative integer or null"),
    ("k", "5", "'k' must be a non-negative integer or null"),
    ("metrics", {"ndcg_at_10": 10**400}, "'metrics' must map metric names to numbers"),
    ("metrics", [0.5], "'metrics' must map metric names to numbers"),
    ("per_query", {"q1": [1]}, "per_query['q1'] must be an object"),
    ("per_query", {"q1": {"mrr": "1"}}, "per-query value of 'mrr' for query 'q1'"),
    ("details", {"first_relevant_rank": {"q1": 10**30}}, "details value"),
    ("details", {"first_relevant_rank": [1]}, "details['first_relevant_rank'] must be"),
    ("dataset", {"documents": "5"}, "'dataset.documents' must be a non-negative integer"),
    ("dataset", {"fingerprints": {"corpus": 1}}, "'dataset.fingerprints'"),
    ("semantics", {"gain": "cubic"}, "'semantics.gain' must be one of"),
    ("semantics", {"tie_break": "random"}, "'semantics.tie_break' is a scoring rule"),
    ("notes", "note", "'notes' must be a list of strings"),
    ("identity", [], "'identity' must be an object"),
    # A mean and per-query values from two versions (a merge took one side's of each): the
    # mean decided the verdict and the per-query values the statistics.
    ("metrics", {"ndcg_at_10": 0.25}, "'metrics.ndcg_at_10' is 0.25 but its 4 per-query values"),
    ("per_query", {"q2": {"mrr": 0.0}}, "per-query values average"),
    # A value no evaluation writes: a mean of -1 could never regress.
    ("per_query", {"q2": {"mrr": 5.0}}, "'per_query.q2.mrr' is 5.0, outside [0, 1]"),
]


@pytest.mark.parametrize(("field", "value", "message"), BAD_ENTRY_FIELDS)
def test_baseline_fields_of_the_wrong_type_are_clear_errors(
    pytester: pytest.Pytester,
    monkeypatch: pytest.MonkeyPatch,
    field: str,
    value: object,
    message: str,
) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    path = pytester.path / ".ragmetrics" / "baseline.json"
    data = json.loads(path.read_text())
    entry = data["entries"]["test_rag.py::test_retrieval"]["toy"]
    entry[field] = (
        value
        if not isinstance(value, dict) or field == "metrics"
        else {**(entry.get(field) or {}), **value}
    )
    path.write_text(json.dumps(data))
    before = path.read_bytes()
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "entry 'test_rag.py::test_retrieval' [toy]" in text and message in text
    assert "Traceback" not in text and "INTERNALERROR" not in text
    assert path.read_bytes() == before
    # The CLI reads it with the same checks.
    assert cli_main(["compare", str(path), str(path)]) == 2


@pytest.mark.parametrize("bad", ["float('nan')", "float('inf')", "'high'"])
def test_a_custom_metric_returning_non_finite_values_is_named(
    pytester: pytest.Pytester, bad: str
) -> None:
    make_project(pytester, tests=TESTS, ini='ragmetrics_metrics = "ndcg_at_10 odd"\n')
    pytester.makeconftest(
        (pytester.path / "conftest.py").read_text()
        + textwrap.dedent(
            f"""
            import numpy as np

            def pytest_ragmetrics_register_metrics(register):
                def odd(ranked, k):
                    values = np.zeros(ranked.n_queries, dtype=object)
                    values[:] = 0.5
                    values[1] = {bad}
                    return values
                register("odd", odd)
            """
        )
    )
    result = pytester.runpytest("--ragmetrics-json=report.json", "--ragmetrics-update-baseline")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*registered metric 'odd'*"])
    assert "INTERNALERROR" not in result.stdout.str()
    assert json.loads((pytester.path / "report.json").read_text())["schema"]


def _report(tmp_path: Path, pytester: pytest.Pytester) -> dict:
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-json=report.json").assert_outcomes(passed=1)
    return json.loads((pytester.path / "report.json").read_text())


@pytest.mark.parametrize(
    ("mutate", "code", "message"),
    [
        (lambda d: d.update(newer_field={"x": 1}), 0, None),
        (lambda d: d["evaluations"][0].update(newer_field=[1, 2]), 0, None),
        (lambda d: d["evaluations"][0]["identity"].update(extra="x"), 0, None),
        (lambda d: d.update(version=2), 2, "written by a newer pytest-ragmetrics"),
        (lambda d: d.update(version=-1), 2, "is not a version (they count from 1)"),
        (lambda d: d.update(evaluations={"a": 1}), 2, "'evaluations' must be a list"),
        (lambda d: d["evaluations"].append([]), 2, "evaluation #2 must be an object"),
        (lambda d: d["evaluations"][0].update(metrics=[]), 2, "'metrics' must map"),
        (lambda d: d["evaluations"][0].update(per_query=[]), 2, "'per_query' must map"),
        (lambda d: d["evaluations"][0].update(test=7), 2, "'test' and 'name' must be strings"),
        (lambda d: d["evaluations"].append(d["evaluations"][0]), 2, "appears twice"),
        (lambda d: d.update(schema="other/tool"), 2, "is not 'pytest-ragmetrics/report'"),
    ],
)
def test_compare_reads_reports_of_any_shape_without_a_traceback(
    tmp_path: Path,
    pytester: pytest.Pytester,
    capsys: pytest.CaptureFixture[str],
    mutate: object,
    code: int,
    message: str | None,
) -> None:
    report = _report(tmp_path, pytester)
    good = tmp_path / "good.json"
    good.write_text(json.dumps(report))
    mutate(report)  # type: ignore[operator]
    odd = tmp_path / "odd.json"
    odd.write_text(json.dumps(report))
    capsys.readouterr()
    assert cli_main(["compare", str(good), str(odd)]) == code
    assert cli_main(["compare", str(odd), str(good)]) == code
    err = capsys.readouterr().err
    assert "Traceback" not in err
    if message:
        assert message in err


def test_a_byte_order_mark_is_allowed_in_every_file_we_read(
    tmp_path: Path, pytester: pytest.Pytester, capsys: pytest.CaptureFixture[str]
) -> None:
    bom = "\ufeff"
    data = write_dataset(tmp_path / "p")
    for name in ("corpus.jsonl", "queries.jsonl", "qrels/test.tsv"):
        path = data / name
        path.write_text(bom + path.read_text(encoding="utf-8"), encoding="utf-8")
    dataset = load_dataset(data)
    assert dataset.qrels.judgments("q1") == {"d1": 1} and len(dataset.corpus) == 5
    (tmp_path / "run.txt").write_text(bom + "q1 Q0 d1 1 1.0 t\n", encoding="utf-8")
    assert read_run(tmp_path / "run.txt").ranking("q1") == [("d1", 1.0)]
    report = _report(tmp_path, pytester)
    with_bom = tmp_path / "bom.json"
    with_bom.write_text(bom + json.dumps(report), encoding="utf-8")
    assert cli_main(["compare", str(with_bom), str(with_bom)]) == 0
    capsys.readouterr()


def test_rag_queries_ids_must_be_strings_and_errors_name_the_test(
    pytester: pytest.Pytester,
) -> None:
    make_project(pytester)
    pytester.makepyfile(
        test_int="import pytest\n\n@pytest.mark.rag_queries(1)\ndef test_int_id(rag_query):\n"
        "    pass\n",
        test_unknown="import pytest\n\n@pytest.mark.rag_queries('q9')\n"
        "def test_unknown(rag_query):\n    pass\n",
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*test_int.py::test_int_id: rag_queries(1): query ids are strings; write "
            "rag_queries('1')*",
            "*test_unknown.py::test_unknown: rag_queries: query ids not in the dataset: q9 *",
        ],
        consecutive=False,
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED  # collection errors


def test_thresholds_added_while_the_test_runs_are_enforced(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
            import pytest

            def test_late_marker(request, rag_eval, rag_run):
                request.node.add_marker(pytest.mark.rag_threshold(ndcg_at_10=0.99))
                rag_eval.retrieval(rag_run, name="late")

            def test_after_the_evaluation(request, rag_eval, rag_run):
                rag_eval.retrieval(rag_run, name="early")
                request.node.add_marker(pytest.mark.rag_threshold(precision_at_3=0.9))
        """,
        conftest=(
            "import pytest\nfrom pytest_ragmetrics import Run\n\n"
            "@pytest.fixture(scope='session')\ndef rag_run():\n"
            "    return Run.from_rankings({'q1': ['d2', 'd1'], 'q2': ['d2'], 'q3': ['d3'], "
            "'q4': ['d5']})\n"
        ),
    )
    result = pytester.runpytest("--ragmetrics-json=r.json", "--ragmetrics-markdown=r.md")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(
        [
            "*evaluation 'late' of test_rag.py::test_late_marker: ndcg_at_10 = 0.9077 < "
            "threshold 0.99*",
            "*rag_threshold(precision_at_3=0.9) was added after retrieval evaluation 'early'*",
        ],
        consecutive=False,
    )
    # The reports say the evaluation failed its late threshold (it was 'new' there before).
    report = json.loads((pytester.path / "r.json").read_text())
    early = next(e for e in report["evaluations"] if e["name"] == "early")
    assert early["outcome"]["thresholds"] == [
        {"metric": "precision_at_3", "value": None, "threshold": 0.9, "passed": False}
    ]
    assert (
        "| test_rag.py::test_after_the_evaluation [early] |" in (pytester.path / "r.md").read_text()
    )
    assert report["summary"]["by_status"] == {"below threshold": 2}


def test_two_spellings_of_one_metric_in_a_marker_are_an_error(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        tests="""
            import pytest

            @pytest.mark.rag_threshold(P_5=0.1, precision_at_5=0.9)
            def test_retrieval(rag_eval, rag_run):
                rag_eval.retrieval(rag_run)
        """,
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        ["*P_5 and precision_at_5 are the same metric (precision_at_5); give its threshold once*"]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("ndcg_at_10=0.01 ndcg_cut_10=0.2", "and ndcg_cut_10=0.2 set the tolerance of ndcg_at_10"),
        ("0.01 0.2", "0.01 and 0.2 both set the tolerance of every metric"),
    ],
)
def test_two_tolerances_for_one_metric_are_an_error(
    pytester: pytest.Pytester, value: str, message: str
) -> None:
    make_project(pytester, tests=TESTS, ini=f'ragmetrics_tolerance = "{value}"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()


@pytest.mark.parametrize(
    ("returned", "outcome", "message"),
    [
        ("{q: {'d1': 1.0} for q in queries}", "passed", None),
        ("[('q1', 'd1')]", "failed", "search(queries, k) returned list"),
        ("None", "failed", "search(queries, k) returned NoneType"),
    ],
)
def test_a_retriever_may_return_a_dict_but_not_anything(
    pytester: pytest.Pytester, returned: str, outcome: str, message: str | None
) -> None:
    make_project(
        pytester,
        tests="""
            def test_retrieval(rag_eval, rag_run):
                rag_eval.retrieval(rag_run)

            def test_per_query(rag_run, rag_query):
                assert rag_query.ranking == [("d1", 1.0)]
        """,
        conftest=textwrap.dedent(
            f"""
            import pytest

            class DictRetriever:
                def search(self, queries, k):
                    return {returned}

            @pytest.fixture(scope="session")
            def rag_retriever():
                return DictRetriever()
            """
        ),
    )
    result = pytester.runpytest()
    if outcome == "passed":
        result.assert_outcomes(passed=5)
    else:
        result.assert_outcomes(errors=5)  # rag_run is a fixture: its users error at setup
        result.stdout.fnmatch_lines([f"*{message}; return a Run*"])


def test_a_single_metric_name_is_one_metric_everywhere(pytester: pytest.Pytester) -> None:
    qrels = {"q1": {"d1": 1}}
    run = {"q1": {"d1": 1.0}}
    assert evaluate(qrels, run, "ndcg_at_10").metrics == ("ndcg_at_10",)
    make_project(
        pytester,
        tests="""
            def test_retrieval(rag_eval, rag_run):
                evaluation = rag_eval.retrieval(rag_run, metrics="precision_at_2")
                assert "precision_at_2" in evaluation.metrics
        """,
    )
    pytester.runpytest().assert_outcomes(passed=1)
    with pytest.raises(MetricError, match="answer-layer metrics are"):
        from pytest_ragmetrics.metrics.answer import evaluate_answers

        evaluate_answers([], "bogus")


def test_registering_a_metric_with_a_non_string_name_is_our_error() -> None:
    from pytest_ragmetrics.metrics.names import register_metric

    with pytest.raises(MetricError, match="must be lowercase letters"):
        register_metric(5, lambda ranked, k: None)  # type: ignore[arg-type]


def test_qrels_from_dict_and_runs_normalise_integer_ids() -> None:
    qrels = Qrels.from_dict({1: {2: 1}})  # type: ignore[dict-item]
    assert qrels.judgments("1") == {"2": 1}
