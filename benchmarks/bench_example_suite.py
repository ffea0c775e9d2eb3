"""The example suite cold (empty cache: encodes the corpus and the judge's sentences) vs warm.

Runs `pytest example_suite` twice in fresh processes with one temporary cache folder and prints
both wall times and their ratio. Cold is dominated by encoding 5,183 abstracts (~4 min on 2 CPU
cores); warm reads embeddings, runs and verdicts from the cache.

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


def run(cache: Path) -> float:
    start = time.perf_counter()
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
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
    return elapsed


def main() -> None:
    with tempfile.TemporaryDirectory() as folder:
        cache = Path(folder) / "cache"
        cold = run(cache)
        warm = run(cache)
        warm2 = run(cache)
    best_warm = min(warm, warm2)
    print("pytest example_suite (SciFact: dense + BM25 + per-query + answer layer)")
    print(f"  cold (empty cache): {cold:8.1f} s")
    print(f"  warm (best of 2):   {best_warm:8.1f} s")
    print(f"  ratio:              {cold / best_warm:8.1f}x")


if __name__ == "__main__":
    main()
