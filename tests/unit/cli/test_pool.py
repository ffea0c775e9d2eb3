"""``ragmetrics pool`` over a pool file a person filled in: the verdicts of the pairs still
pooled are kept (and counted); one that would be lost is a refusal, the file untouched."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main

RUN = "q1 Q0 d1 1 4.0 a\nq1 Q0 d7 2 3.0 a\nq1 Q0 d8 3 2.0 a\nq2 Q0 d9 1 1.0 a\n"


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.fixture
def paths(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\nq2 0 d2 1\n")
    (tmp_path / "a.run").write_text(RUN)
    return {
        "qrels": tmp_path / "qrels.txt",
        "run": tmp_path / "a.run",
        "pool": tmp_path / "p.jsonl",
    }


def pool(paths: dict[str, Path], *extra: str) -> tuple[int, str]:
    return run("pool", "--qrels", str(paths["qrels"]), "--run", str(paths["run"]), "--out",
               str(paths["pool"]), *extra)  # fmt: skip


def rows(path: Path) -> dict[tuple[str, str], dict]:
    found = [json.loads(line) for line in path.read_text().splitlines()]
    return {(r["query_id"], r["doc_id"]): r for r in found}


def decide(path: Path, verdicts: dict[tuple[str, str], bool]) -> None:
    """Fill in ``relevant`` as a person does, by editing the rows."""
    found = rows(path)
    for pair, relevant in verdicts.items():
        found[pair]["relevant"] = relevant
    path.write_text("".join(json.dumps(r) + "\n" for r in found.values()))


def test_a_second_pool_keeps_the_verdicts_a_person_filled_in(paths: dict[str, Path]) -> None:
    assert pool(paths)[0] == 0
    decide(paths["pool"], {("q1", "d7"): True, ("q2", "d9"): False})
    code, text = pool(paths)
    assert code == 0
    assert "kept the verdicts of 2 rows of the pool file it replaced" in text
    found = rows(paths["pool"])
    assert {pair: r["relevant"] for pair, r in found.items()} == {
        ("q1", "d7"): True,
        ("q1", "d8"): None,
        ("q2", "d9"): False,
    }
    code, text = pool(paths, "--format", "json")
    assert code == 0 and json.loads(text)["kept"] == 2


def test_a_verdict_whose_pair_left_the_pool_is_not_lost(
    paths: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert pool(paths)[0] == 0
    decide(paths["pool"], {("q1", "d8"): True})
    before = paths["pool"].read_bytes()
    code, _ = pool(paths, "--depth", "2")  # d8 is at rank 3: no longer pooled
    assert code == 2
    assert capsys.readouterr().err == (
        f"ragmetrics pool: error: --out {paths['pool']}: 1 rows there carry a verdict (relevant "
        "true/false) for pairs this pool no longer holds, or holds for another corpus: q1/d8 "
        "(line 2); replacing the file would lose them. Add them to the qrels first, or write the "
        "new pool to another file\n"
    )
    assert paths["pool"].read_bytes() == before


def test_a_verdict_the_qrels_now_hold_may_leave_the_pool(paths: dict[str, Path]) -> None:
    assert pool(paths)[0] == 0
    decide(paths["pool"], {("q1", "d7"): True})
    with paths["qrels"].open("a") as qrels:
        qrels.write("q1 0 d7 1\n")  # merged into the human judgments
    code, text = pool(paths)
    assert code == 0 and "kept" not in text
    assert ("q1", "d7") not in rows(paths["pool"])
