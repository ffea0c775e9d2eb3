"""The main job: the example suite on SciFact and Cranfield in one session reproduces MTEB on
SciFact, offline, under xdist, and warm.

Slow: a cold run encodes 5,183 abstracts (minutes). The cache folder is shared with the other
slow SciFact tests of the session, so the corpus is encoded once per test session.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.paths import HELPERS, REPO

ROOT = REPO
SUITE = ROOT / "example_suite"
MTEB_MINILM = {
    "ndcg_at_10": 0.64508,
    "map_at_10": 0.59593,
    "mrr_at_10": 0.60472,
    "recall_at_10": 0.78333,
    "recall_at_100": 0.925,
    "precision_at_1": 0.50333,
}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not SUITE.is_dir(), reason="example_suite/ is not in this checkout"),
]


def run_suite(
    cache: Path, report: Path, *args: str, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the example suite in place with a private cache and report, behind the network guard."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(
        [str(HELPERS), environment.get("PYTHONPATH", "")]
    ).rstrip(os.pathsep)
    environment.pop("RAGMETRICS_EXAMPLE_REGRESSION", None)
    environment.update(env or {})
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:cacheprovider",
            "-p",
            "network_guard",
            f"--ragmetrics-cache-dir={cache}",
            f"--ragmetrics-json={report}",
            *args,
        ],
        cwd=SUITE,
        env=environment,
        capture_output=True,
        text=True,
        check=False,
    )


def evaluations(report: Path) -> dict[tuple[str, str], dict]:
    """(evaluation name, dataset name) -> the report's evaluation."""
    data = json.loads(report.read_text())
    return {(e["name"], (e.get("dataset") or {}).get("name", "")): e for e in data["evaluations"]}


def test_example_suite_cold_xdist_then_warm(scifact_cache: Path, tmp_path: Path) -> None:
    cold = run_suite(scifact_cache, tmp_path / "cold.json", "-n", "2")
    assert cold.returncode == 0, cold.stdout[-4000:] + cold.stderr[-2000:]
    assert "ragmetrics: retrieval layer" in cold.stdout
    assert "ragmetrics: answer layer" in cold.stdout
    found = evaluations(tmp_path / "cold.json")
    dense = found["all-MiniLM-L6-v2", "scifact"]
    for metric, published in MTEB_MINILM.items():
        assert dense["metrics"][metric] == pytest.approx(published, abs=1e-4), metric
    assert all(e["outcome"]["baseline"]["status"] == "ok" for e in found.values())
    assert found["bm25", "scifact"]["metrics"]["ndcg_at_10"] == pytest.approx(0.68736, abs=0.01)
    # Cranfield (SMART files, graded qrels mapped by its dataset.json), in the same session.
    assert found["all-MiniLM-L6-v2", "cranfield"]["metrics"]["ndcg_at_10"] == pytest.approx(
        0.38167, abs=1e-4
    )
    assert found["bm25", "cranfield"]["metrics"]["ndcg_at_10"] == pytest.approx(0.37299, abs=1e-4)
    summary = json.loads((tmp_path / "cold.json").read_text())["summary"]["by_dataset"]
    assert list(summary["ndcg_at_10"]["columns"]) == ["scifact-test", "cranfield-test"]

    from pytest_ragmetrics import load_dataset
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.retrievers import DenseRetriever

    corpus = load_dataset(SUITE / "data" / "scifact").corpus
    key = DenseRetriever(corpus).embedding_key()
    assert Cache(scifact_cache).computations("embeddings", key) == 1  # -n 2 encoded once

    warm = run_suite(scifact_cache, tmp_path / "warm.json", "-p", "no:xdist")
    assert warm.returncode == 0, warm.stdout[-4000:]
    assert Cache(scifact_cache).computations("embeddings", key) == 1
    cold_report = json.loads((tmp_path / "cold.json").read_text())
    warm_report = json.loads((tmp_path / "warm.json").read_text())
    cold_report.pop("created")
    warm_report.pop("created")
    assert cold_report == warm_report

    worse = run_suite(
        scifact_cache,
        tmp_path / "worse.json",
        "-k",
        "dense",
        env={"RAGMETRICS_EXAMPLE_REGRESSION": "1"},
    )
    assert worse.returncode == 1
    assert (
        "'all-MiniLM-L6-v2' (test_retrieval.py::test_dense_minilm[scifact-test]) regressed "
        "against the baseline" in worse.stdout
    )
    assert "configuration changed: k: 100 → 5" in worse.stdout
    assert "--ragmetrics-update-baseline" in worse.stdout
