"""The ``ragmetrics`` command on several datasets and splits: runs per pair and a summary."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main
from tests.plugin.test_datasets import write_beir


def animals_and_planets(tmp_path: Path) -> list[str]:
    """Two BEIR folders (animals: test and dev splits; planets: test) as NAME=DIR values."""
    write_beir(
        tmp_path / "animals",
        {"d1": "cats purr", "d2": "dogs bark", "d3": "birds sing"},
        {"q1": "cats purr", "q2": "dogs bark", "q3": "birds sing"},
        {"test": {"q1": {"d1": 1}, "q2": {"d2": 1}}, "dev": {"q3": {"d3": 1}}},
    )
    write_beir(
        tmp_path / "planets",
        {"p1": "mars is red", "p2": "venus is hot", "p3": "mars has moons"},
        {"m1": "red mars", "m2": "hot venus"},
        {"test": {"m1": {"p1": 1}, "m2": {"p2": 1}}},
    )
    return [f"animals={tmp_path / 'animals'}", f"planets={tmp_path / 'planets'}"]


@pytest.fixture
def folders(tmp_path: Path) -> list[str]:
    pytest.importorskip("bm25s")
    return animals_and_planets(tmp_path)


def test_retrieve_writes_a_run_per_pair_and_a_summary(
    folders: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    runs = tmp_path / "runs"
    args = ["retrieve", "--retriever", "bm25", "--no-cache", "--out", str(runs)]
    args += ["--dataset", folders[0], "--dataset", folders[1], "--split", "animals=test,dev"]
    assert main([*args, "-m", "recall_at_1", "--format", "json"]) == 0
    assert sorted(p.name for p in runs.iterdir()) == [
        "animals-dev.trec",
        "animals-test.trec",
        "planets-test.trec",
    ]
    summary = json.loads(capsys.readouterr().out)["by_dataset"]["recall_at_1"]
    assert summary["columns"] == ["animals-test", "animals-dev", "planets-test"]
    [row] = summary["rows"]
    assert row["evaluation"] == "bm25"
    assert row["values"] == {"animals-test": 1.0, "animals-dev": 1.0, "planets-test": 1.0}
    assert row["mean"] == 1.0
    # The runs evaluate again, pair by pair, with the same numbers.
    evaluate = ["evaluate", "--dataset", folders[0], "--dataset", folders[1], "-m", "recall_at_1"]
    evaluate += ["--split", "animals=test,dev"]
    for pair in ("animals-test", "animals-dev", "planets-test"):
        evaluate += ["--run", f"{pair}={runs / (pair + '.trec')}"]
    assert main(evaluate) == 0
    table = capsys.readouterr().out
    assert table.split()[:5] == [
        "recall_at_1",
        "animals-test",
        "animals-dev",
        "planets-test",
        "mean",
    ]
    assert "bm25" in table and "1.0000" in table


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--run", "RUN"], "with several datasets say which pair it is for"),
        (["--run", "moons=RUN"], "'moons' is no --dataset pair"),
    ],
)
def test_evaluate_says_which_run_goes_where(
    folders: list[str],
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    extra = [e.replace("RUN", str(run)) for e in extra]
    assert main(["evaluate", "--dataset", folders[0], "--dataset", folders[1], *extra]) == 2
    assert message in capsys.readouterr().err


def test_retrieve_to_a_file_with_several_datasets_is_refused(
    folders: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "run.trec"
    out.write_text("keep me")
    args = ["retrieve", "--retriever", "bm25", "--out", str(out)]
    assert main([*args, "--dataset", folders[0], "--dataset", folders[1]]) == 2
    assert "--out is a folder" in capsys.readouterr().err
    assert out.read_text() == "keep me"


@pytest.mark.parametrize(
    ("dataset", "extra", "message"),
    [
        ("animals", ["--run", "moons=RUN"], "'moons' is no --dataset pair (the pairs are animals-"),
        (None, ["--run", "animals=RUN"], "a PAIR= prefix names a --dataset pair; there is none"),
        ("animals", ["--split", "", "--run", "RUN"], "argument --split: the value is empty"),
        ("animals", ["--split", "test", "--split", " ", "--run", "RUN"], "--split: the value is "),
    ],
    ids=["unknown-pair", "prefix-without-dataset", "empty-split", "blank-split-repeated"],
)  # fmt: skip
def test_evaluate_with_one_run_checks_what_it_is_told(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    dataset: str | None,
    extra: list[str],
    message: str,
) -> None:
    # With one run and one pair, a wrong PAIR= prefix or an empty --split was ignored (exit 0,
    # the run scored against whatever pair there was, the split silently 'test').
    folders = animals_and_planets(tmp_path)
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    where = (
        ["--dataset", folders[0]]
        if dataset
        else ["--qrels", str(tmp_path / "animals" / "qrels" / "test.tsv")]
    )
    extra = [e.replace("RUN", str(run)) for e in extra]
    try:
        code = main(["evaluate", *where, *extra])
    except SystemExit as exc:  # a usage error (an empty value)
        code = exc.code
    assert code == 2
    assert message in capsys.readouterr().err


def test_one_folder_given_twice_under_two_names_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    animals = animals_and_planets(tmp_path)[0].split("=", 1)[1]
    run = tmp_path / "run.trec"
    run.write_text("q1 Q0 d1 1 1.0 t\n")
    args = ["evaluate", "--dataset", f"a={animals}", "--dataset", f"b={animals}/", "--run"]
    assert main([*args, f"a={run}", "--run", f"b={run}"]) == 2
    err = capsys.readouterr().err
    assert f"--dataset: datasets 'a' and 'b' are the same folder ({animals}), split 'test'" in err
