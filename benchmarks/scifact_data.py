"""Where the benchmarks find SciFact: the example suite's copy, else the shared reference data."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def scifact() -> Path:
    for candidate in (
        REPO / "example_suite" / "data" / "scifact",
        REPO.parent / "shared" / "data" / "scifact",
    ):
        if candidate.is_dir():
            return candidate
    raise SystemExit("SciFact not found in example_suite/data or ../shared/data")
