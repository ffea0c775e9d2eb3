"""Hostile strings as query ids, evaluation, test and dataset names, through every renderer,
and the checks each display sink must pass (tests/unit/report/test_escaping.py,
tests/unit/test_fuzz.py).

``session(text)`` is a small session whose strings are all ``text``: the evaluation name, the
test id, one dataset's name, a query id, a stale baseline entry; its retrieval evaluation ran
on two datasets (so the per-dataset summary is drawn) and regressed against its baseline.
``render_all`` draws it with every renderer in-process; the CLI and the plugin are driven by the
tests themselves.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import re
import xml.etree.ElementTree as ET
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics import Corpus, Qrels, Queries, Run, evaluate
from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import parse_tolerances
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.report.outcome import Checked, EvaluationOutcome, SessionOutcome
from tests.helpers.plugin_project import make_project

HOSTILE = {
    "esc-conceal": "\x1b[8mhidden\x1b[0m",
    "esc-erase-line": "ok\x1b[2K\x1b[1Gall passed",
    "carriage-return": "regressed\rimproved ",
    "backspace-bel": "abc\x08\x08\x08xyz\x07",
    "c1-csi": "q\x9b2Kq",
    "osc-link": "\x1b]8;;http://evil.example\x07click\x1b]8;;\x07",
    "pipe": "a|b|c",
    "escaped-pipe": "a\\|b",
    "img": "<img src=x onerror=alert(1)>",
    "script-end": "</script><script>alert(1)</script>",
    "rtl-override": "q\u202eevil\u202c",
    "isolate": "\u2066x\u2069\u2067y",
    "nul": "a\x00b",
    "backticks": "`code` ``x``",
    "newline-heading": "line\n# heading",
    "newline-row": "x\n| fake | row |",
    "line-separator": "a\u2028b\u2029c",
    "ampersand-entity": "&lt;img src=x&gt;",
    "xml-illegal": "\x0b\x0c\ufffe",
}

# What no terminal line may hold: C0 controls but tab and newline, DEL, C1, bidirectional
# controls, line separators, lone surrogates.
TERMINAL_BAD = re.compile(
    "[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069"
    "\u2028\u2029\ud800-\udfff]"
)
METRICS = ["ndcg_at_10", "mrr"]


def terminal_problems(text: str) -> list[str]:
    """The lines of ``text`` holding a character a terminal would act on."""
    return [repr(line) for line in text.split("\n") if TERMINAL_BAD.search(line)]


def _unescaped(char: str, line: str) -> int:
    """How many times ``char`` occurs in ``line`` not escaped by a backslash."""
    count, i = 0, 0
    while i < len(line):
        if line[i] == "\\":
            i += 2
            continue
        count += line[i] == char
        i += 1
    return count


def markdown_problems(text: str) -> list[str]:
    """Tables whose rows do not all have the column count of their header; a raw tag (which
    GitHub would render); control characters."""
    problems = terminal_problems(text)
    table: list[str] = []
    for line in [*text.split("\n"), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        if table:
            widths = {_unescaped("|", row) for row in table}
            if len(widths) != 1:
                problems.append("table rows differ in columns:\n" + "\n".join(table))
            table = []
    tag = re.compile(r"(?<!\\)(?:\\\\)*<[A-Za-z/!?]")  # an even run of backslashes escapes nothing
    problems += [f"raw tag: {line!r}" for line in text.split("\n") if tag.search(line)]
    return problems


def html_problems(page: str) -> list[str]:
    """Elements a string from the data made (an img, an extra script), control characters."""
    from html.parser import HTMLParser

    tags: list[str] = []

    class Parser(HTMLParser):
        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            tags.append(tag)

    Parser().feed(page)
    problems = [f"<{t}> element" for t in tags if t in ("img", "iframe", "object")]
    if tags.count("script") > 1:
        problems.append(f"{tags.count('script')} script elements")
    bad = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff]")
    return problems + [f"control {m.group(0)!r}" for m in bad.finditer(page)]


def junit_problems(xml: str) -> list[str]:
    """The JUnit XML does not parse, or its text holds terminal controls."""
    try:
        root = ET.fromstring(xml)
    except ET.ParseError as exc:
        return [f"does not parse: {exc}"]
    texts = []
    for element in root.iter():
        texts += [element.text or "", element.tail or "", *element.attrib.values()]
        texts += element.attrib.keys()
    return terminal_problems("\n".join(texts))


def json_strings(value: Any) -> set[str]:
    """Every string (keys too) in a JSON value."""
    if isinstance(value, str):
        return {value}
    if isinstance(value, dict):
        return set(value) | {s for v in value.values() for s in json_strings(v)}
    if isinstance(value, list):
        return {s for v in value for s in json_strings(v)}
    return set()


@dataclass
class Session:
    """A hostile session: its outcome, the report documents before and after, its inputs."""

    outcome: SessionOutcome
    before: dict[str, Any]
    after: dict[str, Any]
    qrels: dict[str, dict[str, int]]
    baseline_run: dict[str, list[str]]
    current_run: dict[str, list[str]]


def session(text: str) -> Session:
    """The session whose names and ids are ``text`` (see the module docstring)."""
    from pytest_ragmetrics.report.json_report import build_report
    from pytest_ragmetrics.report.query_records import add_query_details

    qid = text.replace("\x00", "")  # ids cannot hold NUL (a clear error says so)
    qid = qid if qid not in ("", "q2", "q3") else f"q1{qid}"
    qrels = {qid: {"d1": 1, "d2": 1}, "q2": {"d2": 1}, "q3": {"d3": 1}}
    baseline_run = {qid: ["d1", "d2"], "q2": ["d2", "d1"], "q3": ["d3"]}
    current_run = {qid: ["d3", "d2"], "q2": ["d1", "d2"], "q3": ["d3"]}
    checked, before = [], []
    for dataset in (text, "toy" if text != "toy" else "other"):
        test = f"tests/test_h.py::test_{text}[{dataset}-test]"
        identity = {"name": dataset, "split": "test"}
        records = [
            EvaluationRecord(
                test,
                text,
                evaluate(Qrels.from_dict(qrels), Run.from_rankings(table), METRICS),
                identity={"retriever": {"name": text}},
                dataset=identity,
                k=3,
            )
            for table in (baseline_run, current_run)
        ]
        verdict = compare_to_baseline(records[1], records[0].to_dict(), parse_tolerances(["0.01"]))
        checked.append(Checked(records[1], EvaluationOutcome((), verdict)))
        before.append(Checked(records[0], EvaluationOutcome((), None)))
    outcome = SessionOutcome(checked, METRICS, stale=[(test, text)], baseline_path=text)
    after = build_report(outcome)
    for entry, old in zip(after["evaluations"], before, strict=True):
        add_query_details(
            entry,
            baseline_entry=old.record.to_dict(),
            run=Run.from_rankings(current_run),
            baseline_run=Run.from_rankings(baseline_run),
            qrels=Qrels.from_dict(qrels),
            queries=Queries.from_dict(dict.fromkeys(qrels, f"query {text}")),
            corpus=Corpus.from_dict({d: {"title": text, "text": text} for d in ("d1", "d2", "d3")}),
        )
    return Session(
        outcome,
        build_report(SessionOutcome(before, METRICS)),
        after,
        qrels,
        baseline_run,
        current_run,
    )


def render_all(hostile: Session) -> dict[str, str]:
    """The session drawn by every in-process renderer: sink name -> text."""
    from pytest_ragmetrics.report.html import html_report, report_page
    from pytest_ragmetrics.report.markdown import failures_markdown, markdown_report
    from pytest_ragmetrics.report.terminal import summary_lines

    failed = [(c.record, c.outcome.baseline) for c in hostile.outcome.evaluations]
    failed = [(r, v) for r, v in failed if v is not None]
    return {
        "terminal": "\n".join(text for _, text in summary_lines(hostile.outcome)),
        "markdown": markdown_report(hostile.outcome),
        "markdown-failures": failures_markdown(failed, "before.json", against="baseline"),
        "json": json.dumps(hostile.after),
        "html": html_report(report_page(hostile.after)),
    }


CHECKS: dict[str, Callable[[str], list[str]]] = {
    "terminal": terminal_problems,
    "markdown": markdown_problems,
    "markdown-failures": markdown_problems,
    "html": html_problems,
}


def benign(text: str) -> str:
    """``text`` with every character that could be markup or a control replaced by x (the
    brackets and dashes a test id's parameters are split by kept): the same session layout."""
    return re.sub(r"[^\w\[\]-]", "x", text, flags=re.ASCII)


def _line_counts(rendered: dict[str, str]) -> dict[str, int]:
    # HTML is not read line by line: a newline in an element's text is a space.
    return {s: text.count("\n") for s, text in rendered.items() if s not in ("json", "html")}


def check_renderers(text: str) -> None:
    """Every in-process renderer on the session of ``text``: each sink's check passes, no line
    is added (a forged table row, heading or log line), the JSON keeps ``text`` exactly."""
    hostile = session(text)
    rendered = render_all(hostile)
    for sink, check in CHECKS.items():
        assert not check(rendered[sink]), (sink, check(rendered[sink]))
    assert _line_counts(rendered) == _line_counts(render_all(session(benign(text))))
    document = json.loads(rendered["json"])
    assert document == json.loads(json.dumps(hostile.after))
    assert text in json_strings(document)


# -- the CLI -----------------------------------------------------------------------------------


def cli(root: Path, *args: str) -> tuple[int, str, str]:
    """``ragmetrics ARGS`` in-process in ``root``: exit code, stdout, stderr."""
    from pytest_ragmetrics.cli import main

    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stderr(err):
            code = main(list(args), out=out)
    finally:
        os.chdir(cwd)
    return code, out.getvalue(), err.getvalue()


def check_output(fmt: str, out: str, text: str) -> None:
    """The output of ``--format fmt``: JSON holds ``text`` exactly, the rest pass their sink."""
    if fmt == "json":
        assert text in json_strings(json.loads(out))
    elif fmt == "markdown":
        assert not markdown_problems(out), markdown_problems(out)
    elif fmt == "html":
        assert not html_problems(out), html_problems(out)
    else:
        assert not terminal_problems(out), terminal_problems(out)


def _write_reports(root: Path, hostile: Session) -> None:
    (root / "before.json").write_text(json.dumps(hostile.before), encoding="utf-8")
    (root / "after.json").write_text(json.dumps(hostile.after), encoding="utf-8")


def check_compare_reports(root: Path, text: str, fmt: str) -> None:
    """``compare before.json after.json --format fmt`` of the session of ``text``."""
    _write_reports(root, session(text))
    code, out, err = cli(root, "compare", "before.json", "after.json", "--format", fmt)
    assert code == 1, err
    assert not terminal_problems(err), terminal_problems(err)
    check_output(fmt, out, text)
    if fmt in ("table", "markdown"):  # no value adds a line
        _write_reports(root, session(benign(text)))
        again = cli(root, "compare", "before.json", "after.json", "--format", fmt)[1]
        assert out.count("\n") == again.count("\n")


def trec_id(text: str) -> str:
    """``text`` as a TREC field can hold it: no whitespace (str.split's, which is wider), no
    NUL, byte order mark or lone surrogate."""
    held = re.sub("[\x00\ufeff\ud800-\udfff]", "", text)  # a TREC file is UTF-8 text
    return "".join(held.split()) or "q1"


def check_compare_runs(root: Path, text: str, fmt: str) -> None:
    """``compare --qrels Q RUN_A RUN_B --format fmt``: ``text`` as a query id (as far as TREC
    allows) and in the runs' file names, which label them."""
    hostile = session(text)
    qid = trec_id(text)
    rename = {q: (qid if i == 0 else q) for i, q in enumerate(hostile.qrels)}
    if len(set(rename.values())) < len(rename):
        rename = {q: q for q in hostile.qrels}
    # The hostile id last: a file starting with "[" or "{" is read as JSON.
    order = list(reversed(hostile.qrels))
    lines = [f"{rename[q]} 0 {d} {g}\n" for q in order for d, g in hostile.qrels[q].items()]
    (root / "qrels.txt").write_text("".join(lines), encoding="utf-8")
    name = re.sub("[/\x00\ud800-\udfff]", "_", text)[:80]
    runs = []
    for label, table in (("a", hostile.baseline_run), ("b", hostile.current_run)):
        path = root / f"{label}-{name}.txt"
        path.write_text(
            "".join(
                f"{rename[q]} Q0 {d} {i + 1} {10 - i} t\n"
                for q in order
                for i, d in enumerate(table[q])
            ),
            encoding="utf-8",
        )
        runs.append(path.name)
    code, out, err = cli(root, "compare", "--qrels", "qrels.txt", *runs, "--format", fmt)
    for path in runs:
        (root / path).unlink()
    assert code in (0, 1), err
    assert not terminal_problems(err), terminal_problems(err)
    check_output(fmt, out, rename[next(iter(hostile.qrels))])


def check_compare_datasets(root: Path, text: str, fmt: str) -> None:
    """``compare --dataset one=DIR --dataset two=DIR A B --format fmt``: ``text`` as a query's
    text and id (as far as TREC allows) on two datasets, and in the names of the systems'
    folders of runs, which label them; the second system regresses on both."""
    import shutil

    from tests.helpers.plugin_project import write_beir

    qid = trec_id(text)
    other = "other" if qid != "other" else "another"
    # A judged query needs words (a blank text is refused): white space alone is bracketed.
    query = text if text.strip() else f"[{text}]"
    for name in ("one", "two"):
        write_beir(root / name, {"d1": "judged", "d2": "not judged"}, {qid: query, other: "x"})
    name = re.sub("[/=\x00\ud800-\udfff]", "_", text)[:40]
    systems = []
    for label, first in (("a", "d1"), ("b", "d2")):
        folder = root / f"{label}-{name}"
        folder.mkdir()
        for pair in ("one-test", "two-test"):
            lines = [f"{q} Q0 {d} {i} {3 - i} t\n" for q in (qid, other) for i, d in
                     enumerate((first, "d2" if first == "d1" else "d1"), start=1)]  # fmt: skip
            (folder / f"{pair}.trec").write_text("".join(lines), encoding="utf-8")
        systems.append(folder.name)
    try:
        args = ("--dataset", "one=one", "--dataset", "two=two", *systems, "--format", fmt)
        code, out, err = cli(root, "compare", *args)
    finally:
        for path in (*systems, "one", "two"):
            shutil.rmtree(root / path)
    assert code == 1, err
    assert not terminal_problems(err), terminal_problems(err)
    check_output(fmt, out, systems[1])


# -- the plugin --------------------------------------------------------------------------------

PLUGIN_TESTS = """
import os

import pytest

from pytest_ragmetrics import Run

NAMES = {names!r}
GOOD = {{"q1": ["d1"], "q2": ["d2"], "q3": ["d3"]}}
WORSE = {{"q1": ["d2"], "q2": ["d1"], "q3": ["d4"]}}


def _qid(name):
    qid = name.replace("\\x00", "")
    return qid if qid not in ("", "q2", "q3") else "q1" + qid


@pytest.mark.parametrize("i", range(len(NAMES)))
def test_named(rag_eval, i):
    qid = _qid(NAMES[i])
    qrels = {{qid: {{"d1": 1}}, "q2": {{"d2": 1}}, "q3": {{"d3": 1}}}}
    table = WORSE if os.environ.get("RAG_WORSE") else GOOD
    run = Run.from_rankings({{qid if q == "q1" else q: docs for q, docs in table.items()}})
    rag_eval.retrieval(run, qrels=qrels, name=NAMES[i])


@pytest.mark.rag_threshold(mrr=0.99)
@pytest.mark.parametrize("i", range(len(NAMES)))
def test_threshold(rag_eval, i):
    qid = _qid(NAMES[i])
    run = Run.from_rankings({{qid: ["d2", "d1"]}})
    rag_eval.retrieval(run, qrels={{qid: {{"d1": 1}}}}, name=NAMES[i])
"""
PLUGIN_ARGS = ("-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider")


def check_plugin(
    pytester: pytest.Pytester,
    names: list[str],
    *,
    monkeypatch: pytest.MonkeyPatch | None = None,
) -> str:
    """A project whose evaluation names and query ids are ``names``, run with every report:
    the terminal output (returned), JUnit XML, Markdown and HTML pass their sinks' checks, the
    JSON report holds every name exactly. With ``monkeypatch``, a blessed run first and a
    worse one second (regressions); else one run in-process (threshold failures only)."""
    make_project(pytester, tests=PLUGIN_TESTS.format(names=names))
    reports = [
        "-rfE",
        "--junitxml=junit.xml",
        "--ragmetrics-junit-properties",
        "--ragmetrics-markdown=summary.md",
        "--ragmetrics-json=report.json",
        "--ragmetrics-html=report.html",
    ]
    if monkeypatch is not None:
        first = pytester.runpytest_subprocess(
            *PLUGIN_ARGS, "--ragmetrics-update-baseline", "-k", "named"
        )
        assert first.ret == 0, first.stdout.str()
        monkeypatch.setenv("RAG_WORSE", "1")
        result = pytester.runpytest_subprocess(*PLUGIN_ARGS, *reports)
    else:
        (pytester.path / "summary.md").unlink(missing_ok=True)  # it is appended to
        result = pytester.runpytest(*PLUGIN_ARGS, *reports)
    output = result.stdout.str() + result.stderr.str()
    assert result.ret == 1, output
    assert "INTERNALERROR" not in output and "Traceback" not in output, output
    assert not terminal_problems(output), terminal_problems(output)
    junit = (pytester.path / "junit.xml").read_text(encoding="utf-8")
    assert not junit_problems(junit), junit_problems(junit)
    summary = (pytester.path / "summary.md").read_text(encoding="utf-8")
    assert not markdown_problems(summary), markdown_problems(summary)
    page = (pytester.path / "report.html").read_text(encoding="utf-8")
    assert not html_problems(page), html_problems(page)
    report = json.loads((pytester.path / "report.json").read_text(encoding="utf-8"))
    assert set(names) <= {e["name"] for e in report["evaluations"]}
    return output
