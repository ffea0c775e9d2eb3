"""Configuration: ini keys, their command-line overrides, validation at start-up, strictness."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_ragmetrics.options import OPTIONS
from tests.helpers.plugin_project import UNRELATED_PLUGINS, make_project

TESTS = """
    def test_retrieval(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""


def test_help_lists_every_option(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--help")
    result.stdout.fnmatch_lines(["*ragmetrics*"])
    text = result.stdout.str()
    for flag in (
        "--ragmetrics-dataset",
        "--ragmetrics-split",
        "--ragmetrics-k",
        "--ragmetrics-metrics",
        "--ragmetrics-judged-rankings",
        "--ragmetrics-baseline",
        "--ragmetrics-tolerance",
        "--ragmetrics-alpha",
        "--ragmetrics-strict",
        "--ragmetrics-update-baseline",
        "--ragmetrics-cache-dir",
        "--ragmetrics-no-cache",
        "--ragmetrics-clear-cache",
        "--ragmetrics-json",
        "--ragmetrics-markdown",
        "--ragmetrics-min-judge-kappa",
        "--ragmetrics-judge",
        "--ragmetrics-judge-model",
        "--ragmetrics-judge-url",
        "--ragmetrics-judge-verdicts",
        "--ragmetrics-judge-concurrency",
    ):
        assert flag in text, flag
    for key in (
        "ragmetrics_dataset",
        "ragmetrics_k",
        "ragmetrics_metrics",
        "ragmetrics_junit_properties",
        "ragmetrics_tolerance",
    ):
        assert key in text, key


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ragmetrics-k=0"], "ragmetrics_k: '0' must be a positive integer"),
        (["--ragmetrics-k=ten"], "ragmetrics_k: 'ten' must be a positive integer"),
        (
            ["--ragmetrics-metrics=ndcg_at_10 recal_at_5"],
            "ragmetrics_metrics: unknown metric 'recal_at_5'; valid metrics: precision_at_K",
        ),
        (["--ragmetrics-metrics=ndcg_at_0"], "cutoff '0' must be a positive integer"),
        (
            ["--ragmetrics-gain=cubic"],
            "ragmetrics_gain: 'cubic' must be one of linear, exponential",
        ),
        (["--ragmetrics-query-set=all"], "must be one of qrels, intersection"),
        (["--ragmetrics-relevance-level=high"], "must be an integer grade"),
        (
            ["--ragmetrics-tolerance=lots"],
            "'lots' is not a tolerance; write 0.01 (absolute) or 2% (relative)",
        ),
        (["--ragmetrics-tolerance=nope_at_3=0.1"], "unknown metric 'nope_at_3'"),
        (["--ragmetrics-alpha=2"], "ragmetrics_alpha: '2' must be a p-value above 0 and at most 1"),
        (["--ragmetrics-min-judge-kappa=x"], "ragmetrics_min_judge_kappa: 'x' is not a number"),
        (["--ragmetrics-retriever=elastic"], "'elastic' is not a built-in retriever"),
        (["--ragmetrics-json=../../report.json"], "ragmetrics_json"),
        (
            ["--ragmetrics-judge=gpt"],
            "ragmetrics_judge: 'gpt' is not a built-in judge; use embedding, http, recorded",
        ),
        (["--ragmetrics-judge=recorded"], "recorded needs ragmetrics_judge_verdicts"),
        (
            ["--ragmetrics-judge=embedding", "--ragmetrics-judge-url=http://127.0.0.1:1"],
            "ragmetrics_judge_url is only used by the http judge, not embedding",
        ),
        (
            ["--ragmetrics-judge=http", "--ragmetrics-judge-concurrency=0"],
            "ragmetrics_judge_concurrency: '0' must be a positive integer",
        ),
        (
            ["--ragmetrics-judge=embedding", "--ragmetrics-judge-concurrency=4"],
            "ragmetrics_judge_concurrency is only used by the http judge, not embedding",
        ),
    ],
)
def test_invalid_values_are_usage_errors(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    make_project(pytester, tests=TESTS)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert message in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_an_empty_command_line_value_is_a_usage_error_naming_the_flag(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--ragmetrics-baseline=$VAR`` with VAR unset passed over the ini's baseline to the
    default one, and a regression passed; so did an empty --ragmetrics-metrics or dataset."""
    make_project(pytester, ini='ragmetrics_baseline = "ci/bl.json"\n', tests=TESTS)
    monkeypatch.delenv("RAG_WORSE", raising=False)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("RAG_WORSE", "1")
    pytester.runpytest().assert_outcomes(failed=1)
    for option in OPTIONS:
        if option.kind == "flag":
            continue
        for value in ("", " "):
            result = pytester.runpytest(f"{option.flag}={value}")
            assert result.ret == pytest.ExitCode.USAGE_ERROR, (option.flag, result.stdout.str())
            assert f"pytest-ragmetrics: {option.flag}: the value is empty" in result.stderr.str()
            assert "Traceback" not in result.stderr.str()


def test_invalid_ini_value_names_the_key(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini='ragmetrics_k = "-5"\n', tests=TESTS)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*pytest-ragmetrics: ragmetrics_k: '-5' must be a positive*"])


def test_command_line_overrides_ini(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini='ragmetrics_k = "1"\n',
        tests="""
        def test_k(rag_run):
            assert {len(rag_run.ranking(q)) for q in rag_run} == {2}
    """,
    )
    pytester.runpytest("--ragmetrics-k=2").assert_outcomes(passed=1)
    pytester.runpytest().assert_outcomes(failed=1)


def test_metrics_setting_chooses_report_columns(pytester: pytest.Pytester) -> None:
    make_project(pytester, ini='ragmetrics_metrics = ["P@1", "map", "judged_at_2"]\n', tests=TESTS)
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["evaluation*precision_at_1*map*judged_at_2*status"])


def test_strict_config_and_strict_markers_are_clean(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini="strict = true\n",
        tests="""
        import pytest

        @pytest.mark.rag_threshold(recall_at_1=0.5)
        @pytest.mark.rag_queries("q1")
        def test_marked(rag_eval, rag_run, rag_query):
            rag_eval.retrieval(rag_run)
    """,
    )
    result = pytester.runpytest("--strict-markers", "--strict-config", "-W", "error")
    result.assert_outcomes(passed=1)


def test_missing_dataset_names_the_ini_key(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(
        test_x="""
        def test_it(rag_dataset):
            pass
    """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*no dataset configured: set ragmetrics_dataset = "
            "path/to/beir_folder*--ragmetrics-dataset=DIR*"
        ]
    )
    assert "Traceback" not in result.stdout.str()


def test_unrelated_suite_is_untouched(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_it():\n    assert True\n")
    result = pytester.runpytest("-p", "no:xdist")
    result.assert_outcomes(passed=1)
    assert "ragmetrics:" not in result.stdout.str()
    assert not (pytester.path / ".ragmetrics").exists()


def test_no_xdist_gives_no_unknown_hook(pytester: pytest.Pytester) -> None:
    make_project(pytester, tests=TESTS)
    result = pytester.runpytest_subprocess("-p", "no:xdist", "-W", "error")
    result.assert_outcomes(passed=1)
    assert "unknown hook" not in (result.stdout.str() + result.stderr.str()).lower()


def test_plugin_import_pulls_in_nothing_heavy() -> None:
    code = (
        "import sys, pytest_ragmetrics.plugin\n"
        "heavy = [m for m in ('numpy', 'torch', 'sentence_transformers', 'faiss', 'bm25s', "
        "'tabulate', 'scipy', 'pandas') if m in sys.modules]\n"
        "print(','.join(heavy))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_collect_only_with_plugin_imports_nothing_heavy(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_x="def test_it():\n    assert True\n")
    pytester.makeconftest(
        "import sys\n"
        "def pytest_sessionfinish():\n"
        "    print('HEAVY:' + ','.join(m for m in ('numpy', 'torch', 'tabulate') "
        "if m in sys.modules))\n"
    )
    result = pytester.runpytest_subprocess("--co", "-q", "-s", "-p", "no:xdist", *UNRELATED_PLUGINS)
    result.stdout.fnmatch_lines(["HEAVY:"])


@pytest.mark.parametrize("table", ["tool.pytest", "tool.pytest.ini_options"])
def test_true_false_keys_take_toml_booleans_in_either_table(
    pytester: pytest.Pytester, table: str
) -> None:
    """pytest 9's native [tool.pytest] table keeps TOML types: a true/false key must take a
    TOML boolean there (a key declared as text refused it), and text in the older table."""
    pytester.makepyprojecttoml(f"[{table}]\nragmetrics_junit_properties = true\n")
    pytester.makepyfile(test_x="def test_x():\n    pass\n")
    result = pytester.runpytest()
    result.assert_outcomes(passed=1)
