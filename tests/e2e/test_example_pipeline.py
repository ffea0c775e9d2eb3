"""The example suite's pipeline test (example_suite/test_pipeline.py) from its recorded answers:
no server, no generator; blessed into a private baseline, then the regression demo (top 1
abstract instead of 3) fails against it with a readable message. Slow: loads MiniLM."""

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
RECORDED = SUITE / "data" / "scifact" / "generated"
NAME = "SmolLM2-135M claim verification"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(
        not (RECORDED / "smollm2-135m-top3.answers.jsonl").is_file()
        or not (RECORDED / "smollm2-135m-top1.answers.jsonl").is_file(),
        reason="the example suite's recorded answers are not in this checkout",
    ),
]


def run(
    tmp_path: Path, cache: Path, *args: str, worse: bool = False
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    env.pop("RAGMETRICS_REGENERATE_ANSWERS", None)
    env.pop("RAGMETRICS_EXAMPLE_REGRESSION", None)
    if worse:
        env["RAGMETRICS_EXAMPLE_REGRESSION"] = "1"
    env["PYTHONPATH"] = os.pathsep.join([str(HELPERS), env.get("PYTHONPATH", "")])
    return subprocess.run(
        [
            sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "network_guard",
            "-p", "no:randomly", "test_pipeline.py",
            f"--ragmetrics-cache-dir={cache}",
            f"--ragmetrics-baseline={tmp_path / 'baseline.json'}",
            *args,
        ],
        cwd=SUITE, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip


def test_recorded_pipeline_then_the_regression_demo(scifact_cache: Path, tmp_path: Path) -> None:
    blessed = run(
        tmp_path, scifact_cache, "--ragmetrics-update-baseline",
        f"--ragmetrics-json={tmp_path / 'top3.json'}",
    )  # fmt: skip
    assert blessed.returncode == 0, blessed.stdout[-4000:] + blessed.stderr[-2000:]
    report = json.loads((tmp_path / "top3.json").read_text())
    found = {e["name"]: e for e in report["evaluations"]}
    pipeline = found[NAME]
    assert set(pipeline["metrics"]) >= {"answer_correctness", "groundedness", "context_relevance"}
    assert pipeline["cost"]["generator"]["replayed"] == 300
    assert pipeline["cost"]["generator"]["calls"] == 0
    trivial = found["always SUPPORT (trivial baseline)"]["metrics"]["answer_correctness"]
    assert 0.3 < trivial < 0.6
    worse = run(tmp_path, scifact_cache, worse=True)
    assert worse.returncode == 1, worse.stdout[-4000:]
    # The example suite runs two datasets, so the test id names the pair it ran on.
    test_id = "test_pipeline.py::test_claim_verification_pipeline[scifact-test]"
    assert f"'{NAME}' ({test_id}) regressed" in worse.stdout
    assert "--ragmetrics-update-baseline" in worse.stdout
    assert "Traceback" not in worse.stdout
