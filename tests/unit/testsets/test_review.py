"""What a person writes in a review file is applied or refused, never dropped without a word:
an edit to a row without a decision, a deleted row, a change to a column that records what the
generator made, a misspelt column, a row of a query the set never generated. Each refusal names
the file, the line (when there is one) and the query, and leaves the folder as it was."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.layouts import load_dataset
from tests.helpers.testset_data import write_corpus

Rows = list[dict[str, Any]]


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(argv), out=out), out.getvalue()


def generated_set(tmp_path: Path, *extra: str) -> Path:
    source = write_corpus(tmp_path / "corpus")
    out = tmp_path / "set"
    code, text = run("generate", "--corpus", str(source), "--out", str(out), "--queries", "4",
                     *extra)  # fmt: skip
    assert code == 0, text
    return out


def snapshot(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def edit_review(out: Path, change: Callable[[Rows], None]) -> Path:
    review = out / "review.jsonl"
    rows = [json.loads(line) for line in review.read_text().splitlines()]
    change(rows)
    review.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return review


def refused(out: Path, review: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> str:
    """Apply ``review``: exit 2, the folder's test set unchanged; the error text."""
    before = {k: v for k, v in snapshot(out).items() if k != "review.jsonl"}
    code, _ = run("generate", "--out", str(out), "--apply-review", str(review), *extra)
    after = {k: v for k, v in snapshot(out).items() if k != "review.jsonl"}
    assert (code, after) == (2, before)
    return capsys.readouterr().err


@pytest.mark.parametrize("accepted_only", [False, True], ids=["all", "accepted-only"])
@pytest.mark.parametrize(
    ("column", "value"),
    [("query", "A reworded question about lava?"), ("answer", "Lava."), ("relevant", {"d0-1": 1})],
)
def test_a_change_to_a_row_without_a_decision_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    accepted_only: bool,
    column: str,
    value: Any,
) -> None:
    """--accepted-only dropped the edited row silently; without it the change went in although
    the person decided nothing."""
    out = generated_set(tmp_path)

    def change(rows: Rows) -> None:
        rows[0]["decision"] = "accept"
        rows[1][column] = value

    review = edit_review(out, change)
    err = refused(out, review, capsys, *(["--accepted-only"] if accepted_only else []))
    assert f"{review}:2: query 'gen-2': the row changes {column!r} but has no decision" in err
    assert 'set "decision": "edit" to apply the change' in err


def test_a_changed_row_with_a_decision_is_applied(tmp_path: Path) -> None:
    out = generated_set(tmp_path)

    def change(rows: Rows) -> None:
        rows[0].update(decision="edit", query="A reworded question about lava?")
        rows[1].update(decision="accept", query="Another question about ice?")

    review = edit_review(out, change)
    assert run("generate", "--out", str(out), "--apply-review", str(review))[0] == 0
    queries = load_dataset(out).queries
    assert (queries["gen-1"], queries["gen-2"]) == (
        "A reworded question about lava?",
        "Another question about ice?",
    )


def test_a_deleted_row_is_refused_naming_its_query(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The deleted row's query was dropped, and the summary said nothing of it."""
    out = generated_set(tmp_path)
    review = edit_review(out, lambda rows: rows.pop(2))
    err = refused(out, review, capsys)
    assert f"{review}: the review has no row for 1 generated query ('gen-3')" in err
    assert "generated.jsonl" in err and '"decision": "reject"' in err
    # Put back from generated.jsonl with a decision, as the message says: applied.
    generated = (out / "generated.jsonl").read_text().splitlines()
    (made,) = (r for r in map(json.loads, generated) if r["query_id"] == "gen-3")
    edit_review(out, lambda rows: rows.append({**made, "decision": "reject"}))
    assert run("generate", "--out", str(out), "--apply-review", str(review))[0] == 0
    assert "gen-3" not in load_dataset(out).queries and len(load_dataset(out).queries) == 3


@pytest.mark.parametrize(
    ("column", "value", "extra"),
    [
        ("removed_from_source", "Put this back.", ("--remove-query", "1")),
        ("removed_from_source", None, ("--remove-query", "1")),
        ("echoes_removed_from_source", [], ("--styles", "title", "--remove-query", "1",
                                            "--cut-echo", "1", "--echo-overlap", "0.5")),
        ("style", "fact", ()),
    ],
)  # fmt: skip
def test_a_change_to_a_recorded_column_is_refused(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    column: str,
    value: Any,
    extra: tuple[str, ...],
) -> None:
    """An edit to what the generator recorded (the text cut from the source document in the
    folder's corpus copy, the style) stayed in the file and was never applied."""
    out = generated_set(tmp_path, *extra)

    def change(rows: Rows) -> None:
        for row in rows:
            row["decision"] = "edit"
        rows[0][column] = value

    review = edit_review(out, change)
    err = refused(out, review, capsys)
    assert f"{review}:1: query 'gen-1': {column!r} records what the generator made" in err
    assert "--apply-review does not apply it" in err


def test_a_misspelt_column_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A row with "decison": "reject" kept its query: it read as undecided."""
    out = generated_set(tmp_path)
    review = edit_review(out, lambda rows: rows[3].update(decison="reject"))
    err = refused(out, review, capsys)
    assert f"{review}:4: query 'gen-4': unknown column 'decison'" in err
    assert "'decision'" in err


def test_a_row_of_a_query_the_set_did_not_generate_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A renamed id wrote a query the set never had (and dropped the generated one)."""
    out = generated_set(tmp_path)
    review = edit_review(out, lambda rows: rows[1].update(query_id="gen-99", decision="accept"))
    err = refused(out, review, capsys)
    assert f"{review}:2: query id 'gen-99' is not one of this test set's queries" in err


def test_a_blank_answer_removes_the_answer(tmp_path: Path) -> None:
    """A whitespace-only answer was written to answers.jsonl as the reference answer."""
    out = generated_set(tmp_path)

    def change(rows: Rows) -> None:
        rows[0].update(decision="edit", answer="Lava flows.")
        rows[1].update(decision="edit", answer="   ")

    review = edit_review(out, change)
    assert run("generate", "--out", str(out), "--apply-review", str(review))[0] == 0
    answers = [json.loads(line) for line in (out / "answers.jsonl").read_text().splitlines()]
    assert answers == [{"query_id": "gen-1", "answer": "Lava flows."}]


def test_an_edit_that_changes_nothing_is_reported(tmp_path: Path) -> None:
    out = generated_set(tmp_path)
    review = edit_review(out, lambda rows: rows[2].update(decision="edit"))
    code, text = run("generate", "--out", str(out), "--apply-review", str(review))
    assert code == 0, text
    assert "note: query 'gen-3' (line 3): decision 'edit' but the row changes nothing" in text


def test_a_folder_without_generated_rows_says_what_it_cannot_check(tmp_path: Path) -> None:
    """A folder an earlier version wrote has no generated.jsonl: the review still applies,
    and the summary says which mistakes could not be told."""
    out = generated_set(tmp_path)
    (out / "generated.jsonl").unlink()
    review = edit_review(out, lambda rows: rows.pop(0))
    code, text = run("generate", "--out", str(out), "--apply-review", str(review))
    assert code == 0, text
    assert "note: no generated.jsonl" in text and "deleted rows" in text
    assert len(load_dataset(out).queries) == 3


def test_an_edited_document_is_refused_as_an_edit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A fix to a document's text in 'documents' (shown for reading, never applied) was told
    only that the review was made for another test set."""
    out = generated_set(tmp_path)

    def change(rows: Rows) -> None:
        rows[0]["decision"] = "edit"
        rows[0]["documents"][0]["text"] += " A typo fixed."

    review = edit_review(out, change)
    err = refused(out, review, capsys)
    assert f"{review}:1: query 'gen-1': document " in err
    assert "'documents' is shown for reading and never applied" in err
    assert "restore the document as generated" in err
