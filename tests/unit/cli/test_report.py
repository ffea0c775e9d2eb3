"""``ragmetrics report --html`` and ``ragmetrics compare --format html``."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main
from tests.helpers.html_documents import (
    BASELINE_RUN,
    CURRENT_RUN,
    ParsedPage,
    cell_texts,
    hostile_document,
    run_document,
)
from tests.helpers.plugin_project import make_project


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.fixture
def reports(tmp_path: Path) -> tuple[Path, Path]:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(run_document(BASELINE_RUN)), encoding="utf-8")
    after.write_text(json.dumps(run_document(CURRENT_RUN)), encoding="utf-8")
    return before, after


def test_report_writes_the_page(tmp_path: Path) -> None:
    source = tmp_path / "report.json"
    source.write_text(json.dumps(hostile_document()), encoding="utf-8")
    code, text = run("report", str(source), "--html", str(tmp_path / "out" / "page.html"))
    assert code == 0
    page = (tmp_path / "out" / "page.html").read_text(encoding="utf-8")
    assert (
        text
        == f"2 evaluations; wrote {tmp_path / 'out' / 'page.html'} ({len(page.encode()):,} bytes)\n"
    )
    parsed = ParsedPage(page)
    assert "2 evaluations" in parsed.text and "Retrieval layer" in parsed.text
    code, _ = run("report", str(source), "--html", str(tmp_path / "one.html"), "--worst", "1")
    cards = ParsedPage((tmp_path / "one.html").read_text(encoding="utf-8")).tags("details")
    assert code == 0 and len([c for c in cards if c.get("class") == "query"]) == 2


def test_report_of_a_baseline_file(tmp_path: Path) -> None:
    baseline = tmp_path / "baseline.json"
    entry = run_document(BASELINE_RUN)["evaluations"][0]
    entry["dataset"] = {"fingerprints": {"qrels": "r"}}  # a retrieval entry records its qrels
    baseline.write_text(
        json.dumps(
            {
                "schema_version": 1,
                "plugin_version": "0.1.0",
                "entries": {entry["test"]: {entry["name"]: entry}},
            }
        )
    )
    code, _ = run("report", str(baseline), "--html", str(tmp_path / "b.html"))
    assert code == 0
    assert "no baseline verdict" not in (tmp_path / "b.html").read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("content", "extra", "message"),
    [
        (None, [], "file not found"),
        ("{not json", [], "report.json"),
        ('{"something": 1}', [], "neither a pytest-ragmetrics JSON report"),
        ('{"evaluations": []}', ["--worst", "0"], "--worst must be a positive integer"),
    ],
)
def test_report_refuses_what_it_cannot_use(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    content: str | None,
    extra: list[str],
    message: str,
) -> None:
    source = tmp_path / "report.json"
    if content is not None:
        source.write_text(content)
    code, out = run("report", str(source), "--html", str(tmp_path / "x.html"), *extra)
    assert code == 2 and out == ""
    err = capsys.readouterr().err
    assert err.startswith("ragmetrics report: error: ") and message in err
    assert "Traceback" not in err
    assert not (tmp_path / "x.html").exists()


def test_report_will_not_overwrite_its_input(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = tmp_path / "report.json"
    source.write_text(json.dumps(hostile_document()))
    before = source.read_text()
    code, _ = run("report", str(source), "--html", str(source))
    assert code == 2 and "it would be overwritten" in capsys.readouterr().err
    assert source.read_text() == before


def test_compare_html_on_stdout_and_to_a_file(reports: tuple[Path, Path], tmp_path: Path) -> None:
    before, after = reports
    code, table = run("compare", str(before), str(after))
    code_html, page = run("compare", str(before), str(after), "--format", "html")
    assert code == code_html == 1  # the same verdict: regressed
    parsed = ParsedPage(page)
    assert "after.json compared with" in parsed.text
    assert "▼ regressed" in parsed.text
    # The before report's rankings are the baseline's in the query cards.
    assert "went to" in parsed.text and "came from" in parsed.text
    rows = [line.split()[-5:] for line in table.splitlines() if line.endswith("regressed")]
    assert rows
    for metric, _, _, delta, _ in rows:
        assert f"{metric} " in parsed.text and f"Δ {delta}" in parsed.text
    code, text = run(
        "compare", str(before), str(after), "--format", "html", "--out", str(tmp_path / "c.html")
    )
    assert code == 1 and text == f"1 evaluations, 1 failed; wrote {tmp_path / 'c.html'}\n"
    assert (tmp_path / "c.html").read_text(encoding="utf-8") == page


def test_compare_html_exits_zero_when_nothing_regressed(reports: tuple[Path, Path]) -> None:
    before, _ = reports
    code, page = run("compare", str(before), str(before), "--format", "html")
    assert code == 0
    assert "Nothing regressed" in ParsedPage(page).text


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--out", "x.html"], "--out: only with --format html"),
        (["--worst", "3"], "--worst: only with --format html"),
        (["--format", "html", "--worst", "0"], "--worst must be a positive integer"),
    ],
)
def test_compare_html_options(
    reports: tuple[Path, Path], capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _ = run("compare", str(reports[0]), str(reports[1]), *args)
    assert code == 2 and message in capsys.readouterr().err


def test_compare_html_will_not_overwrite_an_input(
    reports: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    before, after = reports
    kept = after.read_text()
    code, _ = run("compare", str(before), str(after), "--format", "html", "--out", str(after))
    assert code == 2 and "it would be overwritten" in capsys.readouterr().err
    assert after.read_text() == kept


def test_pages_from_the_plugins_own_reports(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A baseline run and a worse run of the toy project, both writing only JSON, drawn by
    both commands: the earlier run's rankings are in its JSON report, so the cards show the
    ranking before and after (they did only when the earlier run also wrote a page)."""
    make_project(
        pytester,
        tests="""
        import pytest

        @pytest.mark.rag_threshold(recall_at_1=0.5)
        def test_dense(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="dense")
        """,
    )
    monkeypatch.delenv("RAG_WORSE", raising=False)
    pytester.runpytest("--ragmetrics-update-baseline", "--ragmetrics-json=base.json")
    monkeypatch.setenv("RAG_WORSE", "1")
    pytester.runpytest("--ragmetrics-json=worse.json").assert_outcomes(failed=1)
    base, worse = pytester.path / "base.json", pytester.path / "worse.json"
    code, _ = run("report", str(worse), "--html", str(pytester.path / "worse.html"))
    assert code == 0
    text = " ".join(ParsedPage((pytester.path / "worse.html").read_text()).text.split())
    verdicts = json.loads(worse.read_text())["evaluations"][0]["outcome"]["baseline"]
    for m in verdicts["metrics"]:
        assert f"{m['metric']} {m['baseline']:.4f} → {m['current']:.4f}" in text
    assert "recall_at_1 0.0000 is below its threshold 0.5000" in text
    assert "Not in this report:" not in text  # a JSON-only run keeps the per-query records
    # Against the baseline file, which keeps no rankings: its per-query data, in each card.
    assert "its per-query data says its first relevant document was at rank 1 and is at" in text
    code, page = run("compare", str(base), str(worse), "--format", "html")
    assert code == 1
    compared = ParsedPage(page)
    text = " ".join(compared.text.split())
    assert "4 of 4 queries worse" in text
    # The before/after ranking of each query, from the earlier JSON report: q1's relevant d1
    # fell from rank 1 to 3.
    assert "went to" in text and "came from" in text
    q1 = next(r for r in cell_texts(compared, "ranking") if r[1].startswith("d1 Cats"))
    assert q1[:3] == ["1", "d1 Cats ✔ grade 1 3.000", "→ 3"]


def _nested(depth: int) -> str:
    """``run_document(CURRENT_RUN)`` with a retriever identity nested ``depth`` lists deep:
    JSON Python reads, deeper than any walk over the values can recurse."""
    document = run_document(CURRENT_RUN)
    document["evaluations"][0]["identity"]["retriever"]["deep"] = "@@"
    return json.dumps(document).replace('"@@"', "[" * depth + "]" * depth)


@pytest.mark.parametrize(
    "command",
    [
        ["report", "{deep}", "--html", "{out}"],
        ["compare", "{deep}", "{other}"],
        ["compare", "{other}", "{deep}", "--format", "html", "--out", "{out}"],
    ],
    ids=["report", "compare-before", "compare-after-html"],
)
def test_a_report_nested_too_deep_is_a_named_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str]
) -> None:
    """Nesting that json reads (900 deep) crashed the page's and the comparison's walks over
    the values (RecursionError: exit code 3, 'a bug in pytest-ragmetrics')."""
    deep, other, out = tmp_path / "deep.json", tmp_path / "other.json", tmp_path / "x.html"
    deep.write_text(_nested(900), encoding="utf-8")
    other.write_text(json.dumps(run_document(BASELINE_RUN)), encoding="utf-8")
    paths = {"deep": str(deep), "other": str(other), "out": str(out)}
    code, _ = run(*(part.format(**paths) for part in command))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{deep}: " in err and "nested more than 100 levels deep" in err
    assert "Traceback" not in err and not out.exists()
    deep.write_text(_nested(50), encoding="utf-8")  # nesting as deep as data goes is read
    assert run(*(part.format(**paths) for part in command))[0] in (0, 1)


@pytest.mark.parametrize(
    ("field", "command"),
    [
        ("per_query", ["compare", "{other}", "{huge}"]),
        ("baseline_per_query", ["report", "{huge}", "--html", "{out}"]),
        (
            "baseline_per_query",
            ["compare", "{other}", "{huge}", "--format", "html", "--out", "{out}"],
        ),
    ],
    ids=["compare-per-query", "report-baseline-per-query", "compare-html-baseline-per-query"],
)
def test_a_value_near_the_largest_float_is_a_named_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], field: str, command: list[str]
) -> None:
    """Per-query values of ±1e308 (a registered metric's, whose range is not known; or any
    in baseline_per_query, which nothing checked) overflowed when rounded to six decimals:
    the comparison's bootstrap then warned once per resample and ran for minutes, and the
    page's Δ were inf. Refused as an edit, naming the field."""
    document = run_document(CURRENT_RUN)
    (entry,) = document["evaluations"]
    if field == "per_query":  # a metric of a plugin not installed here: any range is allowed
        for i, row in enumerate(entry["per_query"].values()):
            row["custom_x"] = 1e308 if i % 2 else -1e308
        entry["metrics"]["custom_x"] = 0.0
    else:
        entry["baseline_per_query"] = {
            qid: dict.fromkeys(row, 1e308) for qid, row in entry["per_query"].items()
        }
    huge, other, out = tmp_path / "huge.json", tmp_path / "other.json", tmp_path / "x.html"
    huge.write_text(json.dumps(document), encoding="utf-8")
    other.write_text(json.dumps(run_document(BASELINE_RUN)), encoding="utf-8")
    paths = {"huge": str(huge), "other": str(other), "out": str(out)}
    code, _ = run(*(part.format(**paths) for part in command))
    err = capsys.readouterr().err
    assert code == 2, err
    # A built-in metric's value is refused as outside [0, 1], any other's as beyond ±1e280.
    reason = "beyond ±1e+280" if field == "per_query" else "outside [0, 1]"
    assert f"{huge}: " in err and f"'{field}." in err and f"1e+308, {reason}" in err
    assert "Traceback" not in err and not out.exists()
