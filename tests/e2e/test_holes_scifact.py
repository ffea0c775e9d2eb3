"""The evidence of README's "Unjudged documents" table on SciFact: dense vs BM25 under plain,
judged-only and bpref metrics, and the pool of their top 10. Slow: the dense run needs the corpus
embeddings (read from the example suite's cache when it holds them, else computed there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main
from tests.helpers.paths import REPO
from tests.helpers.scifact_data import SCIFACT

pytestmark = pytest.mark.slow

CACHE = REPO / "example_suite" / ".ragmetrics" / "cache"
METRICS = ["ndcg_at_10", "map_at_100", "bpref"]


def _means(capsys: pytest.CaptureFixture[str], run: Path) -> dict[str, float]:
    args = ["evaluate", "--dataset", str(SCIFACT), "--run", str(run), "--format", "json"]
    assert main([*args, *(f"-m{m}" for m in METRICS)]) == 0
    metrics: dict[str, float] = json.loads(capsys.readouterr().out)["metrics"]
    return metrics


def test_judged_only_metrics_reverse_the_order_of_dense_and_bm25_on_scifact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if not SCIFACT.exists():
        pytest.skip(f"SciFact is not at {SCIFACT}")
    runs = {}
    for kind in ("dense", "bm25"):
        runs[kind] = tmp_path / f"{kind}.trec"
        args = ["retrieve", "--dataset", str(SCIFACT), "--retriever", kind, "--k", "100"]
        assert main([*args, "--cache-dir", str(CACHE), "--out", str(runs[kind])]) == 0
    capsys.readouterr()
    plain = {kind: _means(capsys, run) for kind, run in runs.items()}
    judged = {kind: _judged(capsys, run) for kind, run in runs.items()}
    # Plain metrics (holes count as non-relevant): BM25 ahead.
    assert plain["bm25"]["ndcg_at_10"] > plain["dense"]["ndcg_at_10"]
    assert plain["bm25"]["map_at_100"] > plain["dense"]["map_at_100"]
    # Holes set aside: dense ahead (SciFact judges only relevant documents, so bpref and the
    # judged-only metrics come close to recall).
    assert plain["dense"]["bpref"] > plain["bm25"]["bpref"]
    assert judged["dense"]["ndcg_at_10_judged"] > judged["bm25"]["ndcg_at_10_judged"]
    pool = tmp_path / "pool.jsonl"
    assert main(
        ["pool", "--dataset", str(SCIFACT), "--run", str(runs["dense"]), "--run",
         str(runs["bm25"]), "--depth", "10", "--out", str(pool), "--format", "json"]
    ) == 0  # fmt: skip
    summary = json.loads(capsys.readouterr().out)
    # Over 90% of each top 10 is unjudged; the union of the two is far larger than either.
    assert min(summary["unjudged_per_run"].values()) > 0.9 * 3000
    assert summary["pairs"] > 1.5 * max(summary["unjudged_per_run"].values())


def _judged(capsys: pytest.CaptureFixture[str], run: Path) -> dict[str, float]:
    args = ["evaluate", "--dataset", str(SCIFACT), "--run", str(run), "--format", "json", "-J"]
    assert main([*args, "-mndcg_at_10", "-mmap_at_100"]) == 0
    metrics: dict[str, float] = json.loads(capsys.readouterr().out)["metrics"]
    return metrics


def test_relevance_calibration_figures_quoted_in_the_readme(
    scifact_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """calibrate --question relevance --judge embedding on SciFact test: 339 relevant pairs
    against 339 sampled negatives, threshold tuned on a seeded half (README, "Unjudged
    documents"). Embeds 300 questions and 678 abstracts (minutes on a CPU)."""
    if not SCIFACT.exists():
        pytest.skip(f"SciFact is not at {SCIFACT}")
    args = ["calibrate", "--question", "relevance", "--judge", "embedding", "--format", "json"]
    assert main([*args, "--dataset", str(SCIFACT), "--cache-dir", str(scifact_cache)]) == 0
    result = json.loads(capsys.readouterr().out)
    assert result["labels"]["n"] == 678 and result["labels"]["positives"] == 339
    assert "339 negatives were sampled (1 per positive" in result["labels"]["negatives"]
    assert result["threshold"] == 0.31
    assert result["n"] == 339 and round(result["kappa"], 3) == 0.929
