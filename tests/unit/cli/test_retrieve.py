"""``ragmetrics retrieve``: writes a TREC run that ``ragmetrics evaluate`` reads."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics import read_run
from pytest_ragmetrics.cli import main

DOCS = [
    {"_id": "d1", "title": "Cats", "text": "Cats purr when they are content."},
    {"_id": "d2", "title": "Bread", "text": "Bake bread in a hot oven."},
    {"_id": "d3", "title": "Moon", "text": "The Moon orbits the Earth."},
    {"_id": "d4", "title": "Rain", "text": "Storms bring heavy rain."},
]
QUERIES = [
    {"_id": "q1", "text": "why do cats purr"},
    {"_id": "q2", "text": "baking bread in an oven"},
    {"_id": "q3", "text": "not judged, so not searched"},
]


@pytest.fixture
def dataset(tmp_path: Path) -> Path:
    root = tmp_path / "tiny"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in DOCS))
    (root / "queries.jsonl").write_text("".join(json.dumps(q) + "\n" for q in QUERIES))
    (root / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    return root


def _run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


@pytest.mark.parametrize("retriever", ["bm25", "dense"])
def test_retrieve_then_evaluate(dataset: Path, tmp_path: Path, retriever: str) -> None:
    if retriever == "dense":
        pytest.importorskip("sentence_transformers")
    run_path = tmp_path / "run.trec"
    cache = tmp_path / "cache"
    code, text = _run(
        "retrieve",
        "--dataset", str(dataset),
        "--retriever", retriever,
        "--k", "3",
        "--cache-dir", str(cache),
        "--out", str(run_path),
    )  # fmt: skip
    assert code == 0, text
    assert f"2 queries x top 3 of 4 documents -> {run_path}" in text
    run = read_run(run_path)
    assert sorted(run) == ["q1", "q2"]
    # Dense ranks every document; BM25 only those holding a query term (one each here).
    assert run.depths().tolist() == ([3, 3] if retriever == "dense" else [1, 1])
    assert run.ranking("q1")[0][0] == "d1" and run.ranking("q2")[0][0] == "d2"
    assert any(cache.iterdir())
    first_line = run_path.read_text().splitlines()[0].split()
    assert first_line[:4] == ["q1", "Q0", "d1", "1"]
    assert first_line[5] == ("bm25" if retriever == "bm25" else "dense:all-MiniLM-L6-v2")
    code, text = _run(
        "evaluate", "--qrels", str(dataset / "qrels" / "test.tsv"), "--run", str(run_path),
        "-m", "mrr", "--format", "json",
    )  # fmt: skip
    assert code == 0
    assert json.loads(text)["metrics"]["mrr"] == 1.0


def test_no_cache_writes_no_cache(dataset: Path, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    code, _ = _run(
        "retrieve", "--dataset", str(dataset), "--retriever", "bm25", "--no-cache",
        "--cache-dir", str(cache), "--out", str(tmp_path / "run.trec"),
    )  # fmt: skip
    assert code == 0
    assert not cache.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--split", "dev"], "split 'dev' not found"),
        (["--k", "0"], "--k must be a positive integer"),
        (["--batch-size", "8"], "--batch-size: only for --retriever dense"),
    ],
)
def test_bad_input_exits_2_with_a_reason(
    dataset: Path,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    extra: list[str],
    message: str,
) -> None:
    out = tmp_path / "run.trec"
    code, _ = _run(
        "retrieve", "--dataset", str(dataset), "--retriever", "bm25", "--out", str(out),
        "--cache-dir", str(tmp_path / "cache"), *extra,
    )  # fmt: skip
    assert code == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_bad_model_exits_2(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _ = _run(
        "retrieve", "--dataset", str(dataset), "--retriever", "dense", "--no-cache",
        "--model", str(tmp_path / "missing-model"), "--out", str(tmp_path / "run.trec"),
    )  # fmt: skip
    assert code == 2
    assert "does not exist" in capsys.readouterr().err


def test_short_rankings_are_a_note_not_a_warning(
    dataset: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A retriever returning fewer than k documents is told in one note line."""
    from pytest_ragmetrics.retrievers import bm25 as bm25_module

    searched = bm25_module.BM25Retriever.search

    def matching_only(self: object, queries: object, k: int) -> object:
        return searched(self, queries, k).truncate(1)  # type: ignore[arg-type, attr-defined]

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(bm25_module.BM25Retriever, "search", matching_only)
        code, text = _run(
            "retrieve", "--dataset", str(dataset), "--retriever", "bm25", "--k", "3",
            "--no-cache", "--out", str(tmp_path / "run.trec"),
        )  # fmt: skip
    assert code == 0, text
    assert (
        "note: retriever 'bm25' returned fewer than 3 documents for 2 of 2 queries (shortest 1)"
        in text
    )
    assert "warning" not in capsys.readouterr().err
