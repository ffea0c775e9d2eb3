"""A test-set folder never mixes two test sets: a `generate` or `--apply-review` that fails (a
refused id, an error while writing) leaves the folder's set byte for byte as it was, or no folder
at all, and a review made for another test set (another corpus, another seed) is refused."""

from __future__ import annotations

import errno
import io
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.errors import OutputError
from pytest_ragmetrics.testsets.folder import write_testset
from pytest_ragmetrics.testsets.model import Candidate, TestSet
from tests.helpers.testset_data import corpus, write_corpus

AERO = {
    "1": ("Supersonic flow over wedges", "Supersonic flow over wedges produces oblique shock "
          "waves at high speed. The shock angle depends on the Mach number of the stream."),
    "2": ("Boundary layer transition", "The boundary layer transitions to turbulence at high "
          "Reynolds number. Roughness elements trigger early transition on flat plates."),
    "3": ("Heat transfer in hypersonic flight", "Heat transfer rates increase sharply in "
          "hypersonic flight regimes. Ablative materials protect the vehicle during reentry."),
}  # fmt: skip
PETS = {
    "1": ("Cats purring explained", "Cats purr when they are content and relaxed at home. "
          "Purring also helps cats heal injured bones faster."),
    "2": ("Dogs barking explained", "Dogs bark at strangers to warn their owners of danger. "
          "Barking frequency varies between different dog breeds."),
    "3": ("Fish breathing explained", "Fish breathe with gills that extract oxygen from water. "
          "Some fish can also gulp air at the surface."),
}  # fmt: skip


def write_docs(path: Path, docs: dict[str, tuple[str, str]]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    rows = [{"_id": i, "title": t, "text": x} for i, (t, x) in docs.items()]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def run(*argv: str) -> int:
    return main(list(argv), out=io.StringIO())


def generate(source: Path, out: Path, queries: int, *extra: str) -> int:
    return run(
        "generate", "--corpus", str(source), "--out", str(out), "--queries", str(queries),
        "--styles", "title", *extra,
    )  # fmt: skip


def snapshot(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (hidden ones too: a temporary file left behind shows)."""
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def judged_titles(folder: Path) -> dict[str, tuple[str, list[str]]]:
    """Each query's text and the titles of the documents judged relevant to it."""
    ds = load_dataset(folder, "test", warn=False)
    return {
        q: (text, [ds.corpus[d].title for d in ds.qrels.judgments(q)])
        for q, text in ds.queries.items()
    }


def reviewed(folder: Path, to: Path, change: Callable[[dict[str, Any]], None]) -> Path:
    """``folder``'s review.jsonl with every row accepted and then ``change``d, written to ``to``."""
    rows = [json.loads(x) for x in (folder / "review.jsonl").read_text().splitlines()]
    for row in rows:
        row["decision"] = "accept"
        change(row)
    to.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return to


# -- a failed generate or --apply-review writes nothing ------------------------------------------


def test_a_second_generate_that_fails_leaves_the_first_set_whole(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The tester's repro: set B's document id holds a tab, refused after set A was written."""
    first = write_docs(tmp_path / "a" / "corpus.jsonl", {f"a{k}": v for k, v in AERO.items()})
    pets = {"b\t1": PETS["1"], "a1": PETS["2"], "a2": PETS["3"], "a3": ("Birds", "Birds sing.")}
    second = write_docs(tmp_path / "b" / "corpus.jsonl", pets)
    out = tmp_path / "out"
    assert generate(first, out, 3) == 0
    before, loaded = snapshot(out), judged_titles(out)
    assert all(text == titles[0] for text, titles in loaded.values())
    assert generate(second, out, 4) == 2
    assert "document id 'b\\t1' holds a tab" in capsys.readouterr().err
    assert snapshot(out) == before
    assert judged_titles(out) == loaded


def test_a_first_generate_that_fails_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_docs(tmp_path / "b" / "corpus.jsonl", {"b\t1": PETS["1"], "b2": PETS["2"]})
    out = tmp_path / "out"
    assert generate(source, out, 2) == 2
    assert "a qrels TSV cannot hold it" in capsys.readouterr().err
    assert not out.exists()
    good = write_docs(tmp_path / "a" / "corpus.jsonl", {f"a{k}": v for k, v in AERO.items()})
    assert generate(good, out, 3) == 0  # the rerun is not refused


def test_apply_review_with_an_id_a_tsv_cannot_hold_changes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = write_docs(tmp_path / "a" / "corpus.jsonl", {f"a{k}": v for k, v in AERO.items()})
    out = tmp_path / "out"
    assert generate(source, out, 3) == 0
    before = snapshot(out)

    def tab(row: dict[str, Any]) -> None:
        if row["query_id"] == "gen-3":
            row["query_id"] = "gen-3\t"

    review = reviewed(out, tmp_path / "edited.jsonl", tab)
    assert run("generate", "--out", str(out), "--apply-review", str(review)) == 2
    err = capsys.readouterr().err
    assert f"{review}:3: query 'gen-3\\t': query id 'gen-3\\t' holds a tab" in err
    assert snapshot(out) == before


def _set(qids: list[str], docs: list[str], seed: int, *, answers: bool) -> TestSet:
    queries = tuple(
        Candidate(q, f"question {q} about {d}?", ((d, 1),), "fact", f"ans {q}" if answers else None)
        for q, d in zip(qids, docs, strict=True)
    )
    return TestSet(queries, {"created_by": "ragmetrics generate", "seed": seed})


# Files staged (corpus, queries, qrels, review, generated, dataset.json; answers.jsonl is removed)
STAGED = 6


@pytest.mark.parametrize("failing", range(STAGED))
@pytest.mark.parametrize("call", ["replace", "fsync"])
def test_a_failure_while_writing_leaves_the_old_set(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, call: str, failing: int
) -> None:
    """An OSError at any file (while the new texts are staged, or while they are renamed into
    place) leaves every file of the folder as it was, and no temporary file behind."""
    out = tmp_path / "set"
    write_testset(out, corpus(), _set(["q1", "q2"], ["d0-0", "d1-0"], 1, answers=True))
    before = snapshot(out)
    real = getattr(os, call)
    calls: list[Any] = []

    def flaky(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == failing + 1:
            raise OSError(errno.EROFS, "Read-only file system")
        return real(*args)

    monkeypatch.setattr(os, call, flaky)
    new = _set(["n1", "n2", "n3"], ["d2-0", "d3-1", "d4-2"], 2, answers=False)
    with pytest.raises(OutputError, match="cannot write the test-set folder"):
        write_testset(out, corpus(), new)
    monkeypatch.undo()
    assert snapshot(out) == before
    assert list(load_dataset(out, "test", warn=False).queries) == ["q1", "q2"]


def test_a_first_write_that_fails_removes_its_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = os.replace
    calls: list[Any] = []

    def flaky(*args: Any) -> Any:
        calls.append(args)
        if len(calls) == 3:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(*args)

    monkeypatch.setattr(os, "replace", flaky)
    with pytest.raises(OutputError, match=r"qrels/test\.tsv: cannot write"):
        write_testset(tmp_path / "set", corpus(), _set(["q1"], ["d0-0"], 1, answers=True))
    assert not (tmp_path / "set").exists()


# -- a review made for another test set is refused ------------------------------------------------


@pytest.mark.parametrize("fingerprint", [True, False], ids=["fingerprint", "written-without"])
def test_a_review_of_another_corpus_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fingerprint: bool
) -> None:
    """Two folders from corpora sharing the ids d1-d3: A's review applied to B. A review row
    written without a fingerprint is known by its documents' texts."""
    out_a, out_b = tmp_path / "outA", tmp_path / "outB"
    aero = write_docs(tmp_path / "a" / "corpus.jsonl", {f"d{k}": v for k, v in AERO.items()})
    pets = write_docs(tmp_path / "b" / "corpus.jsonl", {f"d{k}": v for k, v in PETS.items()})
    assert generate(aero, out_a, 3) == 0 and generate(pets, out_b, 3) == 0
    before = snapshot(out_b)

    def strip(row: dict[str, Any]) -> None:
        if not fingerprint:
            del row["testset"]

    review = reviewed(out_a, tmp_path / "reviewA.jsonl", strip)
    assert run("generate", "--out", str(out_b), "--apply-review", str(review)) == 2
    err = capsys.readouterr().err
    assert f"{review}:1: query 'gen-1': " in err and "made for another test set" in err
    if not fingerprint:
        assert f"document 'd1' as the row shows it is not the document 'd1' of {out_b}" in err
    assert snapshot(out_b) == before


def test_an_old_review_after_regenerating_with_another_seed_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Same corpus, so every document the old rows show is still the folder's: the rows'
    fingerprint tells the seed-0 review from the seed-1 set."""
    source = write_corpus(tmp_path / "corpus")
    out = tmp_path / "set"
    assert generate(source, out, 4, "--seed", "0") == 0
    old = reviewed(out, tmp_path / "old-review.jsonl", lambda row: None)
    assert generate(source, out, 4, "--seed", "1") == 0
    before = snapshot(out)
    assert run("generate", "--out", str(out), "--apply-review", str(old)) == 2
    err = capsys.readouterr().err
    assert f"{old}:1: query 'gen-1': the row's testset fingerprint" in err
    assert snapshot(out) == before
    # The folder's own review still applies, and again after that.
    own = reviewed(out, tmp_path / "own.jsonl", lambda row: None)
    assert run("generate", "--out", str(out), "--apply-review", str(own)) == 0
    assert run("generate", "--out", str(out), "--apply-review", str(own)) == 0
