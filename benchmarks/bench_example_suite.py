"""The example suite cold (empty cache: encodes the corpora and the judge's sentences) vs warm.

Runs `pytest example_suite` in fresh processes with one temporary cache folder: once cold, then
twice warm, and prints the wall times, their ratio, and the cold run's slowest steps as pytest's
--durations reports them (a fixture's set-up is where a corpus is encoded or indexed; the answer
test's call is where the judge encodes its sentences). Warm reads embeddings, runs and verdicts
from the cache.

Run: python benchmarks/bench_example_suite.py
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SUITE = Path(__file__).resolve().parents[1] / "example_suite"


def run(cache: Path) -> tuple[float, list[str]]:
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:randomly",
            "--durations=8",
            "--durations-min=1",
            f"--ragmetrics-cache-dir={cache}",
        ],
        cwd=SUITE,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )
    elapsed = time.perf_counter() - start
    if result.returncode != 0:
        sys.exit(f"example suite failed:\n{result.stdout[-3000:]}")
    return elapsed, _slowest(result.stdout)


def _slowest(output: str) -> list[str]:
    """The lines of pytest's 'slowest durations' block."""
    lines = output.splitlines()
    start = next((i for i, line in enumerate(lines) if "slowest" in line and "=" in line), None)
    if start is None:
        return []
    block = []
    for line in lines[start + 1 :]:
        if not line.strip() or line.startswith(("=", "(")):
            break
        block.append(line)
    return block


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "cache"
        cold, steps = run(cache)
        warm, _ = run(cache)
        warm2, _ = run(cache)
    best_warm = min(warm, warm2)
    print("pytest example_suite (SciFact and Cranfield: dense + BM25 + per-query + answer layer)")
    print(f"  cold (empty cache): {cold:8.1f} s")
    print(f"  warm (best of 2):   {best_warm:8.1f} s")
    print(f"  ratio:              {cold / best_warm:8.1f}x")
    print("  slowest steps of the cold run (pytest --durations):")
    for line in steps:
        print(f"    {line}")


if __name__ == "__main__":
    main()
