"""``ragmetrics compare``: every format says what the JSON notes, and a Δ over other queries
than the means beside it is marked, in both forms."""

from __future__ import annotations

import html
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.unit.cli.test_compare import report, run

MRR_BEFORE = {"q1": 1.0, "q2": 1.0, "q3": 1.0, "q4": 0.5}  # mean 0.8750
MRR_AFTER = {"q1": 1.0, "q2": 0.5, "q3": 0.25, "q4": 0.166667}  # mean 0.4792
MAP_ALL = {"q1": 1.0, "q2": 1.0, "q3": 0.5, "q4": 0.5}  # mean 0.7500
MAP_FEWER = {"q1": 1.0, "q2": 1.0, "q3": 0.5}  # mean 0.8333


def _other_retriever(data: dict[str, Any]) -> dict[str, Any]:
    data["evaluations"][0]["identity"] = {"retriever": {"name": "dense-v2"}}
    return data


ALPHA = ("--alpha", "0.05")
# name: (before, after, extra arguments); each makes the verdict note something.
CASES: dict[str, tuple[dict[str, Any], dict[str, Any], tuple[str, ...]]] = {
    # 4 queries cannot reach alpha 0.05: the drop passes with a note saying why.
    "drop below alpha": (report(MRR_BEFORE, "mrr"), report(MRR_AFTER, "mrr"), ALPHA),
    # Nothing dropped, alpha still out of reach: the verdict's own note.
    "alpha out of reach": (report(MRR_BEFORE, "mrr"), report(MRR_BEFORE, "mrr"), ALPHA),
    # The report holds a query the baseline lacks: means over other queries.
    "fewer queries before": (report(MAP_FEWER, "map"), report(MAP_ALL, "map"), ()),
    "configuration changed": (
        report(MRR_BEFORE, "mrr"),
        _other_retriever(report(MRR_BEFORE, "mrr")),
        (),
    ),
}


def _write(tmp_path: Path, case: str) -> tuple[str, str, tuple[str, ...]]:
    before, after, extra = CASES[case]
    paths = tmp_path / "before.json", tmp_path / "after.json"
    for path, data in zip(paths, (before, after), strict=True):
        path.write_text(json.dumps(data))
    return str(paths[0]), str(paths[1]), extra


def _json_notes(evaluation: dict[str, Any]) -> list[str]:
    """What one verdict of the JSON notes, in its fields."""
    found = [m["note"] for m in evaluation["metrics"] if m.get("note")]
    found += [evaluation.get(key, "") for key in ("alpha_note", "depth_note", "identity_change")]
    found += evaluation.get("queries_only_in_current", [])
    return [note for note in found if note]


def _unescaped(text: str) -> str:
    """Markdown with its escapes removed (the notes are plain text in the JSON)."""
    return text.replace("\\", "")


@pytest.mark.parametrize("case", list(CASES))
def test_table_and_markdown_say_every_note_the_json_holds(tmp_path: Path, case: str) -> None:
    """The table and Markdown dropped the verdict's notes (an alpha no drop can reach, means
    over other queries, a configuration change) that the JSON and HTML carry."""
    before, after, extra = _write(tmp_path, case)
    code, text = run("compare", before, after, *extra, "--format", "json")
    assert code == 0
    document = json.loads(text)
    [evaluation] = document["evaluations"]
    expected = _json_notes(evaluation)
    assert expected  # each case notes something
    code, table = run("compare", before, after, *extra)
    assert code == 0
    code, markdown = run("compare", before, after, *extra, "--format", "markdown")
    assert code == 0
    page = html.unescape(run("compare", before, after, *extra, "--format", "html")[1])
    rendered: dict[str, Callable[[str], bool]] = {
        "table": lambda note: note in table,
        "markdown": lambda note: note in _unescaped(markdown),
        "html": lambda note: note in page,
    }
    for note in expected:
        for name, says in rendered.items():
            assert says(note), f"{name} lacks {note!r}"
    # Every format lists the same notes, each on a line of its own.
    label = "tests/test_x.py::test_dense [dense]"
    assert document["notes"] and all(n.startswith(f"{label}: ") for n in document["notes"])
    assert [line[6:] for line in table.splitlines() if line.startswith("note: ")] == document[
        "notes"
    ]
    listed = [line[2:] for line in _unescaped(markdown).splitlines() if line.startswith("- ")]
    assert listed == document["notes"]


def test_the_runs_form_says_the_verdicts_notes_too(tmp_path: Path) -> None:
    for case in ("drop below alpha", "fewer queries before"):
        before, after, extra = _write(tmp_path, case)
        args = ("compare", "--evaluation", "dense", before, after, *extra)
        document = json.loads(run(*args, "--format", "json")[1])
        [comparison] = document["comparisons"]
        expected = _json_notes(comparison)
        assert expected
        table, markdown = run(*args)[1], _unescaped(run(*args, "--format", "markdown")[1])
        for note in expected:
            assert f"note: {after}: " in table and note in table, note
            assert note in markdown, note


def test_trec_runs_say_that_alpha_is_out_of_reach(tmp_path: Path) -> None:
    """``compare --qrels Q A B -m map --alpha 0.05`` over 4 queries: no drop can be
    significant, and every format says so."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 r{i} 1\n" for i in range(1, 5)))
    ranks = {"a": [1, 1, 1, 2], "b": [1, 2, 3, 3]}
    for name, found in ranks.items():
        lines = []
        for i, rank in enumerate(found, start=1):
            docs = [f"q{i}-other{j}" for j in range(3)]
            docs[rank - 1] = f"r{i}"
            lines += [f"q{i} Q0 {d} {j} {3 - j}.0 sys" for j, d in enumerate(docs, start=1)]
        (tmp_path / f"{name}.run").write_text("\n".join(lines) + "\n")
    args = ("compare", "--qrels", str(qrels), *(str(tmp_path / f"{n}.run") for n in ranks))
    args += ("-m", "map", "--alpha", "0.05")
    code, text = run(*args, "--format", "json")
    assert code == 0
    [note] = _json_notes(json.loads(text)["comparisons"][0])
    assert "with 4 queries the smallest attainable p is 0.1266" in note
    for output in ("table", "markdown", "html"):
        code, text = run(*args, "--format", output)
        assert code == 0 and note in html.unescape(_unescaped(text)), output


def test_a_baseline_with_fewer_queries_marks_the_delta_and_gives_the_paired_means(
    tmp_path: Path,
) -> None:
    """The "after" column was the mean over the 3 queries the baseline holds (0.8333), not the
    report's (0.7500), with nothing to say so."""
    before, after, _ = _write(tmp_path, "fewer queries before")
    code, table = run("compare", before, after)
    assert code == 0
    lines = table.splitlines()
    row = next(i for i, line in enumerate(lines) if "[dense]" in line)
    assert lines[row].split()[-6:] == ["map", "0.8333", "0.7500", "0.0000", "†", "ok"]
    assert lines[row + 1].split() == ["·", "same", "queries", "0.8333", "0.8333"]
    assert "† Δ over only the queries both hold, not those of the means shown" in table
    assert f"1 query only in {after}, not in {before}" in table
    code, markdown = run("compare", before, after, "--format", "markdown")
    assert "| map            | 0.8333   | 0.7500  | 0.0000 † | ok       |" in markdown
    assert "| · same queries | 0.8333   | 0.8333  |" in markdown
    assert "† Δ over only the queries both hold" in markdown
    # The baseline holding more queries than the report: its own mean is shown, marked.
    code, table = run("compare", after, before)
    assert code == 1  # q4 had a value in the baseline: lost
    lines = table.splitlines()
    row = next(i for i, line in enumerate(lines) if "[dense]" in line)
    assert lines[row].split()[-8:] == ["map", "0.7500", "0.8333", "0.0000", "†", "lost", "on", "1"]
    assert lines[row + 1].split() == ["·", "same", "queries", "0.8333", "0.8333"]


def test_the_same_queries_on_both_sides_are_not_marked(tmp_path: Path) -> None:
    before, after, extra = _write(tmp_path, "drop below alpha")
    for output in ("table", "markdown"):
        text = run("compare", before, after, *extra, "--format", output)[1]
        assert "†" not in text and "same queries" not in text
