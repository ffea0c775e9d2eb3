"""pytest start-up with pytest-ragmetrics installed vs disabled (-p no:ragmetrics).

Runs ``pytest --co -q`` in a folder with one trivial test, alternating the two variants, and
prints the ratio of medians (target <= 1.05). Run: python benchmarks/bench_startup.py
"""

from __future__ import annotations

import argparse
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def timed(cmd: list[str], cwd: Path) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the child) of one run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(cmd, cwd=cwd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "test_trivial.py").write_text("def test_trivial():\n    assert True\n")
        base = [sys.executable, "-m", "pytest", "--co", "-q", "-p", "no:cacheprovider"]
        with_plugin: list[tuple[float, float]] = []
        without: list[tuple[float, float]] = []
        timed(base, root)  # warm the file-system cache
        for _ in range(args.rounds):
            with_plugin.append(timed(base, root))
            without.append(timed([*base, "-p", "no:ragmetrics"], root))
    print(f"pytest --co -q, one trivial test, median of {args.rounds} alternating runs")
    for label, index in (("wall", 0), ("CPU", 1)):
        a = statistics.median(t[index] for t in with_plugin)
        b = statistics.median(t[index] for t in without)
        print(
            f"  {label:4}: plugin installed {a * 1000:7.1f} ms, -p no:ragmetrics "
            f"{b * 1000:7.1f} ms, ratio {a / b:.3f}x (target <= 1.05)"
        )


if __name__ == "__main__":
    main()
