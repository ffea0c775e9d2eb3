"""What an output of ``ragmetrics`` may replace: only a file of its own kind that ragmetrics
wrote (or an empty one); a baseline, a JSON report, an evaluate output, qrels a person wrote
or any other file is refused before any work, and left byte for byte as it was."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main
from tests.unit.cli.test_compare import report
from tests.unit.cli.test_retrieve import DOCS, QUERIES

RUN_A = "q1 Q0 d1 1 2.0 a\nq1 Q0 d3 2 1.0 a\nq2 Q0 d2 1 1.0 a\n"
RUN_B = "q1 Q0 d3 1 2.0 b\nq1 Q0 d1 2 1.0 b\nq2 Q0 d2 1 1.0 b\n"


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.fixture
def inputs(tmp_path: Path) -> dict[str, str]:
    """A tiny dataset, its qrels, two runs, a report and a pool with one decided row."""
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    files = {
        "qrels.txt": "q1 0 d1 1\nq2 0 d2 1\n",
        "a.run": RUN_A,
        "b.run": RUN_B,
        "rep.json": json.dumps(report({f"q{i}": 1.0 for i in range(5)})),
        "pool.jsonl": json.dumps({"query_id": "q1", "doc_id": "d3", "query": "why do cats purr",
                                  "text": "The Moon orbits the Earth.", "relevant": False}) + "\n",
    }  # fmt: skip
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    return {"dataset": str(root), **{name.split(".")[0]: str(tmp_path / name) for name in files}}


# Each command that writes a file: its arguments ({out} the output), the flag and the kind.
WRITERS = {
    "report": ("report {rep} --html {out}", "--html", "an HTML report"),
    "compare-pair": ("compare {rep} {rep} --format html --out {out}", "--out",
                     "an HTML report"),
    "compare-runs": ("compare --qrels {qrels} {a} {b} --format html --out {out}",
                     "--out", "an HTML report"),
    "retrieve": ("retrieve --dataset {dataset} --retriever bm25 --no-cache --out {out}", "--out",
                 "a TREC run"),
    "pool": ("pool --qrels {qrels} --run {a} --out {out}", "--out", "a pool file"),
    "judge-pool-qrels": ("judge-pool --pool {pool} --judge recorded --verdicts "
                         "{pool} --qrels-out {out} --out {tmp}/labelled.jsonl", "--qrels-out",
                         "supplementary qrels (ragmetrics judge-pool)"),
    "judge-pool-out": ("judge-pool --pool {pool} --judge recorded --verdicts {pool} "
                       "--qrels-out {tmp}/sup.txt --out {out}", "--out", "a pool file"),
}  # fmt: skip


def _argv(template: str, inputs: dict[str, str], out: Path) -> list[str]:
    return template.format_map({**inputs, "out": out, "tmp": out.parent}).split()


def _baseline() -> str:
    entry = report({f"q{i}": 1.0 for i in range(5)})["evaluations"][0]
    test, name = entry.pop("test"), entry.pop("name")
    return json.dumps({"schema_version": 1, "entries": {test: {name: entry}}})


# Files no output may replace, and what the error calls them.
NOT_OURS = {
    "baseline": (_baseline, "is a baseline file, not"),
    "report": (lambda: json.dumps(report({"q1": 1.0})), "is a JSON report, not"),
    "human-qrels": (lambda: "q1 0 d1 1\nq2 0 d2 0\n", "is not"),
    "notes": (lambda: "remember to judge q7\n", "is not"),
}


@pytest.mark.parametrize("existing", NOT_OURS)
@pytest.mark.parametrize("writer", WRITERS)
def test_no_output_replaces_a_file_it_did_not_write(
    inputs: dict[str, str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    writer: str,
    existing: str,
) -> None:
    template, flag, kind = WRITERS[writer]
    content, called = NOT_OURS[existing]
    target = tmp_path / ".ragmetrics" / "baseline.json"
    target.parent.mkdir()
    target.write_text(content())
    before = target.read_bytes()
    code, _ = run(*_argv(template, inputs, target))
    err = capsys.readouterr().err
    assert code == 2, err
    assert f"{flag} {target}: that file {called} {kind}" in err
    assert err.rstrip().endswith("writing would overwrite it. Give another path, or move the "
                                 "file away first")  # fmt: skip
    assert target.read_bytes() == before


def test_the_probe_cases_name_the_file_they_would_overwrite(
    inputs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other_report.json"
    other.write_text(json.dumps(report({"q1": 1.0})))
    assert run("report", inputs["rep"], "--html", str(other))[0] == 2
    assert capsys.readouterr().err == (
        f"ragmetrics report: error: --html {other}: that file is a JSON report, not an HTML "
        "report; writing would overwrite it. Give another path, or move the file away first\n"
    )
    # The human qrels a pool was built from are no supplementary qrels.
    argv = _argv(WRITERS["judge-pool-qrels"][0], inputs, Path(inputs["qrels"]))
    assert run(*argv)[0] == 2
    assert "that file is not supplementary qrels (ragmetrics judge-pool) ragmetrics wrote" in (
        capsys.readouterr().err
    )
    # An HTML page is not a run, nor a run a page.
    page = tmp_path / "page.html"
    assert run("report", inputs["rep"], "--html", str(page))[0] == 0
    argv = _argv(WRITERS["retrieve"][0], inputs, page)
    assert run(*argv)[0] == 2
    assert "that file is an HTML report, not a TREC run" in capsys.readouterr().err
    argv = _argv(WRITERS["report"][0], inputs, Path(inputs["a"]))
    assert run(*argv)[0] == 2
    assert "that file is a TREC run, not an HTML report" in capsys.readouterr().err


@pytest.mark.parametrize("writer", WRITERS)
def test_an_output_replaces_its_own_kind_and_an_empty_file(
    inputs: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str], writer: str
) -> None:
    target = tmp_path / "out"
    target.write_text("")
    argv = _argv(WRITERS[writer][0], inputs, target)
    assert run(*argv)[0] in (0, 1), capsys.readouterr().err  # compare-runs: b regressed
    written = target.read_bytes()
    assert written
    assert run(*argv)[0] in (0, 1), capsys.readouterr().err  # again: over its own output
    assert target.read_bytes() == written


def test_a_page_of_an_earlier_version_is_replaced(inputs: dict[str, str], tmp_path: Path) -> None:
    """Pages written before they carried the marker are known by their inlined style sheet."""
    from pytest_ragmetrics.report.html.render import PAGE_MARKER

    page = tmp_path / "page.html"
    assert run("report", inputs["rep"], "--html", str(page))[0] == 0
    text = page.read_text(encoding="utf-8")
    assert text.startswith(f"<!DOCTYPE html>\n{PAGE_MARKER}\n<html")
    page.write_text(text.replace(PAGE_MARKER + "\n", ""), encoding="utf-8")
    assert run("report", inputs["rep"], "--html", str(page))[0] == 0
    assert PAGE_MARKER in page.read_text(encoding="utf-8")


@pytest.mark.parametrize(
    ("content", "allowed"),
    [
        (b"## Tests\n\n[log](https://example.org)\n<details>ok</details>\n", True),
        (b"\xef\xbb\xbfplain words, 1 2 3\n", True),
        (b"", True),
        (b'[{"query_id": "q1"}]\n', False),
        (b'[\n  "a"\n]\n', False),
        (b"<!DOCTYPE html><p>page</p>\n", False),
        (b"<?xml version='1.0'?><a/>\n", False),
        (b"q1 0 d1 1\nq2 0 d2 0\n", False),
        (b"a\tb\nc\td\n", False),
        (b"text\x00with a NUL\n", False),
        (b"\x1f\x8b\x08\x00binary", False),
    ],
)
def test_the_markdown_report_follows_text_but_never_data(
    tmp_path: Path, content: bytes, allowed: bool
) -> None:
    from pytest_ragmetrics.outputs import replacing_problem

    target = tmp_path / "summary.md"
    target.write_bytes(content)
    assert (replacing_problem(target, "markdown") is None) is allowed


def test_a_json_document_of_another_schema_is_no_report(tmp_path: Path) -> None:
    from pytest_ragmetrics.outputs import file_kind

    target = tmp_path / "other.json"
    target.write_text('{"schema": "https://example.org/x", "evaluations": []}')
    assert file_kind(target) is None
    target.write_text(json.dumps(report({"q1": 1.0})))
    assert file_kind(target) == "report"


def test_recorded_answers_replace_answers_but_not_labels(tmp_path: Path) -> None:
    from pytest_ragmetrics.outputs import replacing_problem

    target = tmp_path / "answers.jsonl"
    target.write_text('{"query_id": "q1", "answer": "Cats."}\n')  # written by hand
    assert replacing_problem(target, "answers") is None
    target.write_text('{"query_id": "q1", "answer": "Cats.", "label": "RELEVANT"}\n')
    assert "is not recorded answers" in str(replacing_problem(target, "answers"))
