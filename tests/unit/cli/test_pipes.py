"""Inputs given as pipes (``<(cat b.run)``): a pipe can be read once, and a command that looks
at an input twice (what is it? then read it) must see the same bytes both times."""

from __future__ import annotations

import gzip
import io
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main

QRELS = "".join(f"q{i} 0 r{i} 1\n" for i in range(1, 5))
RUN_A = "".join(f"q{i} Q0 r{i} 1 2.0 a\nq{i} Q0 x{i} 2 1.0 a\n" for i in range(1, 5))
RUN_B = "".join(f"q{i} Q0 x{i} 1 2.0 b\nq{i} Q0 r{i} 2 1.0 b\n" for i in range(1, 5))


@pytest.fixture
def piped() -> Iterator[Callable[[str | bytes], str]]:
    """``piped(text)``: a path that reads ``text`` (str or bytes) from a pipe, as the shell's
    ``<(...)``."""
    opened: list[int] = []

    def make(text: str | bytes) -> str:
        read, write = os.pipe()
        os.write(write, text.encode() if isinstance(text, str) else text)  # fits the buffer
        os.close(write)
        opened.append(read)
        return f"/dev/fd/{read}"

    yield make
    for fd in opened:
        os.close(fd)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    paths = {"qrels": QRELS, "a": RUN_A, "b": RUN_B}
    for name, text in paths.items():
        (tmp_path / name).write_text(text)
    return {name: str(tmp_path / name) for name in paths}


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


def test_compare_reads_a_piped_run(
    files: dict[str, str], piped: Callable[[str | bytes], str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = run("compare", "--qrels", files["qrels"], files["a"], piped(RUN_B), "-m", "map")
    assert code == 1, capsys.readouterr().err  # b is worse: read, not "empty"
    assert "0.5000 (-0.5000 ▼)" in text


def test_compare_reads_piped_qrels_and_a_piped_reference(
    files: dict[str, str], piped: Callable[[str | bytes], str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--qrels", piped(QRELS), piped(RUN_A), files["a"], "-m", "map", "--format", "json")
    code, text = run("compare", *args)
    assert code == 0, capsys.readouterr().err
    assert [r["metrics"]["map"] for r in json.loads(text)["runs"]] == [1.0, 1.0]


def test_compare_reads_piped_evaluate_outputs(
    files: dict[str, str], piped: Callable[[str | bytes], str], capsys: pytest.CaptureFixture[str]
) -> None:
    outputs = []
    for name in ("a", "b"):
        code, text = run("evaluate", "--qrels", files["qrels"], "--run", files[name], "--format",
                         "json", "-m", "map")  # fmt: skip
        assert code == 0
        outputs.append(piped(text))
    code, text = run("compare", *outputs)
    assert code == 1, capsys.readouterr().err
    assert "0.5000 (-0.5000 ▼)" in text


def test_compare_html_of_two_piped_reports(
    tmp_path: Path, piped: Callable[[str | bytes], str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The page's header is read from the second report again: from the bytes already read."""
    from tests.unit.cli.test_compare import report

    document = json.dumps(report({f"q{i}": 1.0 for i in range(5)}) | {"plugin_version": "9.9"})
    page = tmp_path / "page.html"
    code, _ = run("compare", piped(document), piped(document), "--format", "html", "--out",
                  str(page))  # fmt: skip
    assert code == 0, capsys.readouterr().err
    assert "9.9" in page.read_text(encoding="utf-8")


def test_evaluate_of_several_piped_runs_names_them_by_tag(
    files: dict[str, str], piped: Callable[[str | bytes], str], capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--qrels", files["qrels"], "--run", piped(RUN_A), "--run", piped(RUN_B))
    code, text = run("evaluate", *args, "-m", "map", "--format", "json")
    assert code == 0, capsys.readouterr().err
    assert json.loads(text)["by_dataset"]["map"]["rows"][0]["evaluation"] == "a"


def test_pool_reads_a_piped_run(
    files: dict[str, str], piped: Callable[[str | bytes], str], tmp_path: Path
) -> None:
    pool = tmp_path / "pool.jsonl"
    code, _ = run("pool", "--qrels", files["qrels"], "--run", piped(RUN_B), "--out", str(pool))
    assert code == 0
    rows = [json.loads(line) for line in pool.read_text().splitlines()]
    assert [(r["query_id"], r["doc_id"], r["runs"]) for r in rows][:1] == [("q1", "x1", {"b": 1})]


def test_gzipped_inputs_through_pipes_are_recognised_by_their_bytes(
    files: dict[str, str], piped: Callable[[str | bytes], str], capsys: pytest.CaptureFixture[str]
) -> None:
    """``<(cat b.run.gz)`` has no .gz name: the gzip magic bytes say what it is, for runs and
    qrels alike (read whole once, looked at, then read)."""
    code, text = run("compare", "--qrels", piped(gzip.compress(QRELS.encode())), files["a"],
                     piped(gzip.compress(RUN_B.encode())), "-m", "map")  # fmt: skip
    assert code == 1, capsys.readouterr().err  # b is worse: read, not refused as text
    assert "0.5000 (-0.5000 ▼)" in text
    args = ("--qrels", files["qrels"], "--run", piped(gzip.compress(RUN_B.encode())))
    code, text = run("evaluate", *args, "-m", "map", "--format", "json")
    assert code == 0, capsys.readouterr().err
    assert json.loads(text)["metrics"]["map"] == 0.5


def test_a_gzipped_file_without_a_gz_name_is_read(
    files: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    named = tmp_path / "b.run"
    named.write_bytes(gzip.compress(RUN_B.encode()))
    code, text = run("compare", "--qrels", files["qrels"], files["a"], str(named), "-m", "map")
    assert code == 1, capsys.readouterr().err
    assert "0.5000 (-0.5000 ▼)" in text
