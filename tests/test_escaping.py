"""Hostile strings (ESC sequences, carriage returns, bidi overrides, ``|``, ``<img>``, NUL,
newlines) as query ids, evaluation, test and dataset names through every renderer: the
terminal summary, the Markdown summary, ``compare`` in every format, the HTML report, JUnit
XML, the JSON report (RELIABILITY.md, "Text from the data is escaped for where it is shown").

Display sinks show the text, neutralised; JSON keeps it exactly.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
from pathlib import Path

import pytest
from hostile_renderers import (
    CHECKS,
    HOSTILE,
    html_problems,
    json_strings,
    junit_problems,
    markdown_problems,
    render_all,
    session,
    terminal_problems,
)
from plugin_project import make_project

from pytest_ragmetrics.cli import main as cli_main
from pytest_ragmetrics.report.escaping import for_html, for_junit, for_markdown, for_terminal

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


def _line_counts(rendered: dict[str, str]) -> dict[str, int]:
    # HTML is not read line by line: a newline in an element's text is a space.
    return {s: text.count("\n") for s, text in rendered.items() if s not in ("json", "html")}


def benign(text: str) -> str:
    """``text`` with every character that could be markup or a control replaced by x (the
    brackets and dashes a test id's parameters are split by kept)."""
    return re.sub(r"[^\w\[\]-]", "x", text, flags=re.ASCII)


@pytest.mark.parametrize("text", CASES)
def test_every_renderer_neutralises_hostile_names_and_ids(text: str) -> None:
    benign_lines = _line_counts(render_all(session(benign(text))))
    hostile = session(text)
    rendered = render_all(hostile)
    for sink, check in CHECKS.items():
        assert not check(rendered[sink]), (sink, check(rendered[sink]))
    # No string adds a line (a forged table row, heading or log line) to any display sink.
    assert _line_counts(rendered) == benign_lines
    # JSON is data: every string comes back exactly.
    document = json.loads(rendered["json"])
    assert document == json.loads(json.dumps(hostile.after))
    assert text in json_strings(document)


# -- ragmetrics compare ------------------------------------------------------------------------


def _cli(root: Path, *args: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stderr(err):
            code = cli_main(list(args), out=out)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def _check_output(fmt: str, text: str, hostile: str) -> None:
    if fmt == "json":
        assert hostile in json_strings(json.loads(text)) or hostile.replace("\x00", "") in (
            json_strings(json.loads(text))
        )
    elif fmt == "markdown":
        assert not markdown_problems(text), markdown_problems(text)
    elif fmt == "html":
        assert not html_problems(text), html_problems(text)
    else:
        assert not terminal_problems(text), terminal_problems(text)


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "html"])
@pytest.mark.parametrize("text", CASES)
def test_compare_reports_neutralises_hostile_names(text: str, fmt: str, tmp_path: Path) -> None:
    hostile = session(text)
    (tmp_path / "before.json").write_text(json.dumps(hostile.before), encoding="utf-8")
    (tmp_path / "after.json").write_text(json.dumps(hostile.after), encoding="utf-8")
    code, out, err = _cli(tmp_path, "compare", "before.json", "after.json", "--format", fmt)
    assert code == 1, err
    assert not terminal_problems(err)
    _check_output(fmt, out, text)
    if fmt in ("table", "markdown"):  # no value adds a line
        plain = session(benign(text))
        (tmp_path / "before.json").write_text(json.dumps(plain.before), encoding="utf-8")
        (tmp_path / "after.json").write_text(json.dumps(plain.after), encoding="utf-8")
        again = _cli(tmp_path, "compare", "before.json", "after.json", "--format", fmt)[1]
        assert out.count("\n") == again.count("\n")


def _trec_id(text: str) -> str:
    """``text`` as a TREC field can hold it: no whitespace (str.split's, which is wider)."""
    return "".join(text.replace("\x00", "").split()) or "q1"


@pytest.mark.parametrize("fmt", ["table", "markdown", "json", "html"])
@pytest.mark.parametrize("text", CASES)
def test_compare_runs_neutralises_hostile_ids_and_file_names(
    text: str, fmt: str, tmp_path: Path
) -> None:
    hostile = session(text)
    qid = _trec_id(text)
    rename = {q: (qid if i == 0 else q) for i, q in enumerate(hostile.qrels)}
    (tmp_path / "qrels.txt").write_text(
        "".join(
            f"{rename[q]} 0 {d} {g}\n" for q, docs in hostile.qrels.items() for d, g in docs.items()
        ),
        encoding="utf-8",
    )
    name = text.replace("/", "_").replace("\x00", "").replace("\ud800", "") or "x"
    runs = []
    for label, table in (("a", hostile.baseline_run), ("b", hostile.current_run)):
        path = tmp_path / f"{label}-{name}.txt"
        path.write_text(
            "".join(
                f"{rename[q]} Q0 {d} {i + 1} {10 - i} t\n"
                for q, docs in table.items()
                for i, d in enumerate(docs)
            ),
            encoding="utf-8",
        )
        runs.append(path.name)
    code, out, err = _cli(tmp_path, "compare", "--qrels", "qrels.txt", *runs, "--format", fmt)
    assert code in (0, 1), err
    assert not terminal_problems(err)
    _check_output(fmt, out, qid)


def test_cli_errors_neutralise_what_they_quote(tmp_path: Path) -> None:
    """An error naming a hostile file or id reaches stderr with its controls escaped."""
    name = "run-\x1b[8m\u202e.txt"
    (tmp_path / name).write_text("q1 Q0\n", encoding="utf-8")
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n", encoding="utf-8")
    code, _, err = _cli(tmp_path, "evaluate", "--qrels", "qrels.txt", "--run", name)
    assert code == 2
    assert "\\x1b[8m\\u202e" in err and not terminal_problems(err)


# -- the plugin: terminal, failure messages, Markdown, HTML, JSON, JUnit ------------------------

PLUGIN_TESTS = """
import os

import pytest

from pytest_ragmetrics import Run

NAMES = {names!r}
GOOD = {{"q1": ["d1"], "q2": ["d2"], "q3": ["d3"]}}
WORSE = {{"q1": ["d2"], "q2": ["d1"], "q3": ["d4"]}}


@pytest.mark.parametrize("i", range(len(NAMES)))
def test_named(rag_eval, i):
    name = NAMES[i]
    qid = name.replace("\\x00", "") or "q0"
    qrels = {{qid: {{"d1": 1}}, "q2": {{"d2": 1}}, "q3": {{"d3": 1}}}}
    table = WORSE if os.environ.get("RAG_WORSE") else GOOD
    run = Run.from_rankings({{qid if q == "q1" else q: docs for q, docs in table.items()}})
    rag_eval.retrieval(run, qrels=qrels, name=name)


@pytest.mark.rag_threshold(mrr=0.99)
@pytest.mark.parametrize("i", range(len(NAMES)))
def test_threshold(rag_eval, i):
    rag_eval.retrieval(Run.from_rankings({{"q1": ["d2", "d1"]}}), qrels={{"q1": {{"d1": 1}}}},
                       name=NAMES[i])
"""


def test_plugin_sinks_neutralise_hostile_names_and_ids(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    names = list(HOSTILE.values())
    make_project(pytester, tests=PLUGIN_TESTS.format(names=names))
    args = ["-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider"]
    first = pytester.runpytest_subprocess(*args, "--ragmetrics-update-baseline", "-k", "named")
    assert first.ret == 0, first.stdout.str()
    monkeypatch.setenv("RAG_WORSE", "1")
    result = pytester.runpytest_subprocess(
        *args,
        "-rfE",
        "--junitxml=junit.xml",
        "--ragmetrics-junit-properties",
        "--ragmetrics-markdown=summary.md",
        "--ragmetrics-json=report.json",
        "--ragmetrics-html=report.html",
    )
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, output
    assert "regressed" in output and "below" in output, output
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    assert not terminal_problems(output), terminal_problems(output)
    assert "\\x1b[8m" in output  # shown, not acted on
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert not junit_problems(junit), junit_problems(junit)
    summary = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert not markdown_problems(summary), markdown_problems(summary)
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert not html_problems(page), html_problems(page)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert set(names) <= {e["name"] for e in report["evaluations"]}
