"""Cranfield 1400 as shipped in example_suite/data/cranfield: its dataset.json reads it right
(225 queries numbered by position in the qrels, the inverted relevance scale), the CLI and the
plugin load it like any folder, and BM25 (fast) and all-MiniLM-L6-v2 (slow) give the numbers
measured when it was added. There is no single published reference for Cranfield; these numbers
guard against regressions of our own.
"""

from __future__ import annotations

import json
import os
from io import StringIO
from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics import Run, evaluate, load_dataset
from pytest_ragmetrics.cli import main
from tests.helpers.paths import REPO

CRANFIELD = REPO / "example_suite" / "data" / "cranfield"
METRICS = ["ndcg_at_10", "recall_at_100", "map"]
# Measured on the commit that added Cranfield: top 1,000 per query, trec_eval semantics. BM25's
# MAP was 0.31052 while bm25s filled each list to 1,000 with documents matching no query term
# (by corpus order); only matching ones are returned since (a query matches 159 or more).
BM25 = {"ndcg_at_10": 0.37299, "recall_at_100": 0.73810, "map": 0.31039}
MINILM = {"ndcg_at_10": 0.38167, "recall_at_100": 0.77244, "map": 0.32724}

pytestmark = pytest.mark.skipif(
    not CRANFIELD.is_dir(), reason="example_suite/data/cranfield is not in this checkout"
)


def raw_qrels() -> list[tuple[int, str, int]]:
    """cranqrel as written: (query number, document, Cleverdon's code)."""
    rows = []
    for line in (CRANFIELD / "cranqrel").read_text().splitlines():
        query, doc, code = line.split()
        rows.append((int(query), doc, int(code)))
    return rows


def test_counts() -> None:
    dataset = load_dataset(CRANFIELD)
    assert (dataset.name, dataset.split) == ("cranfield", "test")
    assert len(dataset.corpus) == 1400
    assert len(dataset.queries) == 225
    assert dataset.qrels.num_judgments == 1837 == len(raw_qrels())
    grades, counts = np.unique(dataset.qrels.grades, return_counts=True)
    # code 1 (complete answer) -> 4, 2 -> 3, 3 -> 2, 4 (minimal interest) -> 1, -1 -> 0
    assert dict(zip(grades.tolist(), counts.tolist(), strict=True)) == {
        4: 128,
        3: 387,
        2: 734,
        1: 363,
        0: 225,
    }
    assert int(dataset.qrels.num_relevant().sum()) == 1612
    assert not dataset.notes  # every judged document is in the corpus


def test_query_ids_are_the_files_and_the_qrels_count_by_position() -> None:
    dataset = load_dataset(CRANFIELD)
    ids = list(dataset.queries.query_ids)
    assert ids[:4] == ["001", "002", "004", "008"]
    assert ids[-1] == "365"
    by_position = {n: ids[n - 1] for n in range(1, 226)}
    expected: dict[str, dict[str, int]] = {}
    for number, doc, code in raw_qrels():
        expected.setdefault(by_position[number], {})[doc] = 5 - code if code > 0 else 0
    assert dataset.qrels.to_dict() == expected
    # .I 002 is the second query: qrels query 2.
    assert dataset.qrels.judgments("002") == expected["002"]
    assert dataset.qrels.judgments("002")["12"] == 4  # '2 12 1': a complete answer
    # .I 004 is the third: it gets qrels query 3 (heat conduction in composite slabs, with
    # document 485 'linear heat flow in a composite slab' at -1), not qrels query 4.
    assert "composite slabs" in dataset.queries["004"]
    assert dataset.qrels.judgments("004")["485"] == 0
    assert "488" not in dataset.qrels.judgments("004")


def test_documents() -> None:
    corpus = load_dataset(CRANFIELD).corpus
    first = corpus["1"]
    assert first.title == (
        "experimental investigation of the aerodynamics of a wing in a slipstream ."
    )
    assert first.text.startswith("experimental investigation of the aerodynamics of a\nwing")
    assert "brenckman" not in first.text  # .A and .B are not part of the text
    assert corpus["471"].text == corpus["995"].text == ""  # empty in the distribution


def bm25_run(k: int = 1000) -> Run:
    pytest.importorskip("bm25s")
    from pytest_ragmetrics.retrievers import BM25Retriever

    dataset = load_dataset(CRANFIELD)
    return BM25Retriever(dataset.corpus).search(dataset.queries, k)


def test_bm25_numbers() -> None:
    dataset = load_dataset(CRANFIELD)
    evaluation = evaluate(dataset.qrels, bm25_run(), METRICS)
    assert evaluation.mean == pytest.approx(BM25, abs=1e-4)


def test_cli_retrieve_and_evaluate(tmp_path: Path) -> None:
    pytest.importorskip("bm25s")
    run = tmp_path / "bm25.run"
    assert (
        main(
            [
                "retrieve",
                *("--dataset", str(CRANFIELD), "--retriever", "bm25", "--k", "1000"),
                *("--no-cache", "--out", str(run)),
            ],
            out=StringIO(),
        )
        == 0
    )
    out = StringIO()
    args = ["evaluate", "--dataset", str(CRANFIELD), "--run", str(run), "--format", "json"]
    assert main([*args, *(f"-m{m}" for m in METRICS)], out=out) == 0
    payload = json.loads(out.getvalue())
    assert payload["num_queries"] == 225
    assert payload["metrics"] == pytest.approx(BM25, abs=1e-4)


def test_cli_split_needs_a_dataset(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["evaluate", "--qrels", "q", "--run", "r", "--split", "dev"], out=StringIO())
    assert code == 2
    assert "--split: only with --dataset" in capsys.readouterr().err


def test_cli_unknown_split(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run = tmp_path / "r"
    run.write_text("001 Q0 1 1 1.0 x\n")
    code = main(["evaluate", "--dataset", str(CRANFIELD), "--run", str(run), "--split", "dev"])
    assert code == 2
    assert "split 'dev' not found in dataset.json's 'qrels'; available splits: test" in (
        capsys.readouterr().err
    )


def test_the_plugin_reads_it_unchanged(pytester: pytest.Pytester) -> None:
    pytest.importorskip("bm25s")
    pytester.makepyprojecttoml(
        f"""
        [tool.pytest.ini_options]
        ragmetrics_dataset = "{CRANFIELD.as_posix()}"
        ragmetrics_retriever = "bm25"
        ragmetrics_k = "1000"
        ragmetrics_metrics = "ndcg_at_10 recall_at_100 map"
        """
    )
    pytester.makepyfile(
        f"""
        import pytest

        def test_cranfield(rag_dataset, rag_eval, rag_run):
            assert len(rag_dataset.queries) == 225
            evaluation = rag_eval.retrieval(rag_run, name="bm25")
            assert evaluation.mean == pytest.approx({BM25!r}, abs=1e-4)
        """
    )
    result = pytester.runpytest("-p", "no:cacheprovider", "-p", "no:randomly")
    result.assert_outcomes(passed=1)


@pytest.mark.slow
def test_minilm_numbers(tmp_path_factory: pytest.TempPathFactory) -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("faiss")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    from pytest_ragmetrics.retrievers import DenseRetriever

    dataset = load_dataset(CRANFIELD)
    retriever = DenseRetriever(dataset.corpus, cache=tmp_path_factory.mktemp("cranfield-cache"))
    run = retriever.search(dataset.queries, 1000)
    evaluation = evaluate(dataset.qrels, run, METRICS)
    assert evaluation.mean == pytest.approx(MINILM, abs=5e-4)
