"""Hostile strings (ESC sequences, carriage returns, bidi overrides, ``|``, ``<img>``, NUL,
newlines) as query ids, evaluation, test and dataset names through every renderer: the
terminal summary, the Markdown summary, ``compare`` in every format, the HTML report, JUnit
XML, the JSON report (RELIABILITY.md, "Text from the data is escaped for where it is shown").

Display sinks show the text, neutralised; JSON keeps it exactly.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_ragmetrics.report.escaping import for_html, for_junit, for_markdown, for_terminal
from tests.helpers.hostile_renderers import (
    HOSTILE,
    check_compare_datasets,
    check_compare_reports,
    check_compare_runs,
    check_plugin,
    check_renderers,
    cli,
    terminal_problems,
)

CASES = [pytest.param(text, id=key) for key, text in HOSTILE.items()]


# -- the functions -----------------------------------------------------------------------------


def test_terminal_shows_controls_as_escapes() -> None:
    assert for_terminal("a\x1b[2Kb\rc\x07\x00") == "a\\x1b[2Kb\\x0dc\\x07\\x00"
    assert for_terminal("\x9b\u202ex\u2066\ud800") == "\\u009b\\u202ex\\u2066\\ud800"
    assert for_terminal("one\ttwo\nthree") == "one\\x09two\\x0athree"
    assert for_terminal("one\ttwo\nthree", newlines=True) == "one\ttwo\nthree"
    plain = "ndcg_at_10 [dense] Δ ▼ 日本語 😀 <b>|"
    assert for_terminal(plain) == plain


def test_terminal_escapes_keep_a_json_document_meaning() -> None:
    """CLI stdout goes through for_terminal; a JSON document written with ensure_ascii=False
    (raw C1 and bidi characters) still parses to the same value."""
    value = {"q\u202eevil\x85\u2028": ["\x9b", "\x1b[8m", "plain"]}
    text = json.dumps(value, ensure_ascii=False, indent=2)
    assert json.loads(for_terminal(text, newlines=True)) == value


def test_markdown_escapes_markup_and_block_starts() -> None:
    assert for_markdown("a|b") == "a\\|b"
    assert for_markdown("<img src=x>") == "\\<img src=x\\>"
    assert for_markdown("&lt;") == "\\&lt;"
    assert for_markdown("x\ny\r\nz\tw") == "x y z w"
    assert for_markdown("\x1b[8m\u202e") == "\\x1b[8m\\u202e"
    assert for_markdown("# title") == "# title"  # in a cell nothing starts a block
    assert for_markdown("# title", starts_line=True) == "\\# title"
    assert for_markdown("1. item", starts_line=True) == "1\\. item"
    assert for_markdown("-0.5000", starts_line=True) == "-0.5000"
    assert for_markdown("ndcg_at_10") == "ndcg_at_10"


def test_html_and_junit() -> None:
    assert for_html('<img src="x">&\x00\x9b') == "&lt;img src=&quot;x&quot;&gt;&amp;\ufffd\ufffd"
    assert for_html("q\u202eevil") == "q\u202eevil"  # the page isolates it in <bdi>
    assert for_junit("a\x00b\x0b\ufffe\x1b[8m\nc") == "a\\x00b\\x0b\\ufffe\\x1b[8m\nc"


# -- every in-process renderer -----------------------------------------------------------------


@pytest.mark.parametrize("text", CASES)
def test_every_renderer_neutralises_hostile_names_and_ids(text: str) -> None:
    check_renderers(text)


# -- ragmetrics compare ------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "html"])
@pytest.mark.parametrize("text", CASES)
def test_compare_reports_neutralises_hostile_names(text: str, fmt: str, tmp_path: Path) -> None:
    check_compare_reports(tmp_path, text, fmt)


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "html"])
@pytest.mark.parametrize("text", CASES)
@pytest.mark.parametrize(
    "check", [check_compare_runs, check_compare_datasets], ids=["runs", "datasets"]
)
def test_compare_runs_neutralises_hostile_ids_and_file_names(
    check: Callable[[Path, str, str], None], text: str, fmt: str, tmp_path: Path
) -> None:
    """Runs on one set of judgments, and systems (folders of runs) over two datasets."""
    check(tmp_path, text, fmt)


def test_cli_errors_neutralise_what_they_quote(tmp_path: Path) -> None:
    """An error naming a hostile file or id reaches stderr with its controls escaped."""
    name = "run-\x1b[8m\u202e.txt"
    (tmp_path / name).write_text("q1 Q0\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    code, _, err = cli(tmp_path, "evaluate", "--qrels", "qrels.txt", "--run", name)
    assert code == 2
    assert "\\x1b[8m\\u202e" in err and not terminal_problems(err)


# -- the plugin: terminal, failure messages, Markdown, HTML, JSON, JUnit ------------------------


def test_plugin_sinks_neutralise_hostile_names_and_ids(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Two runs (blessed, then worse): terminal summary, failure messages of regressions and
    thresholds, JUnit XML with properties, Markdown, HTML and JSON reports."""
    output = check_plugin(pytester, list(HOSTILE.values()), monkeypatch=monkeypatch)
    assert "regressed" in output and "below" in output, output
    assert "\\x1b[8m" in output  # shown, not acted on


# -- warnings: whoever prints them --------------------------------------------------------------


def _warning_categories() -> list[type[Warning]]:
    from pytest_ragmetrics.errors import RagMetricsWarning

    found, todo = [], [RagMetricsWarning]
    while todo:
        category = todo.pop()
        found.append(category)
        todo += category.__subclasses__()
    return found


@pytest.mark.parametrize("text", CASES)
def test_every_warning_shows_its_text_on_one_line_without_controls(text: str) -> None:
    import warnings

    for category in _warning_categories():
        shown = str(category(f"file {text}: something"))
        assert not terminal_problems(shown) and "\n" not in shown, (category, shown)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.warn(f"file {text}: something", category, stacklevel=1)
        line = warnings.formatwarning(
            caught[0].message, category, "x.py", 1, line=""
        )  # what Python prints
        assert not terminal_problems(line.rstrip("\n")), line


WARNING_SITES = """
import json
import os
from pathlib import Path

from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.data.trec import read_run
from pytest_ragmetrics.retrievers import from_function

HOSTILE = json.loads(os.environ["HOSTILE"])


def test_stale_labels_in_a_hostile_folder():
    load_dataset(Path(HOSTILE["folder"]))


def test_a_rising_run_with_a_hostile_name():
    read_run(Path(HOSTILE["run"]))


def test_a_hostile_retriever_that_finds_nothing(rag_queries):
    retriever = from_function(lambda text: [], name=HOSTILE["name"])
    retriever.search(rag_queries, 5)
"""


def test_plugin_warnings_summary_neutralises_what_warnings_quote(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """pytest prints our warnings in its own summary, which escapes nothing: a stale-labels
    warning quoting a folder, a score-order warning quoting a run file and a short-ranking
    warning quoting a retriever's name, each holding ESC, CR, an RTL override and a newline."""
    from tests.helpers.plugin_project import write_dataset

    hostile = "x\x1b[2K\x1b[1Gall passed\r\u202e\nmore"
    folder = pytester.path / f"data{hostile}"
    write_dataset(pytester.path).rename(folder)
    with (folder / "qrels" / "test.tsv").open("a") as qrels:
        qrels.write("q1\tmissing-doc\t1\n")  # a stale label: the warning names the file
    run = pytester.path / f"run{hostile}.trec"
    run.write_text("q1 Q0 d1 1 0.1 t\nq1 Q0 d2 2 0.5 t\nq1 Q0 d3 3 0.9 t\n")
    write_dataset(pytester.path)
    pytester.makepyprojecttoml('[tool.pytest.ini_options]\nragmetrics_dataset = "data"\n')
    pytester.makepyfile(test_sites=WARNING_SITES)
    names = {"folder": str(folder), "run": str(run), "name": f"ret{hostile}"}
    monkeypatch.setenv("HOSTILE", json.dumps(names))
    result = pytester.runpytest("-p", "no:randomly", "-W", "always")
    result.assert_outcomes(passed=3)
    output = result.stdout.str()
    for category in ("StaleLabelsWarning", "ScoreOrderWarning", "ShortRankingWarning"):
        assert category in output, output
    assert not terminal_problems(output), terminal_problems(output)
    assert "\\x1b[2K\\x1b[1Gall passed\\x0d\\u202e\\x0amore" in output
