"""Where the tests find SciFact: the example suite's gzipped copy or the shared reference data."""

from __future__ import annotations

from pathlib import Path

from tests.helpers.paths import REPO

_COPY = REPO / "example_suite" / "data" / "scifact"
_SHARED = REPO.parent / "shared" / "data" / "scifact"


def _first_existing(*candidates: Path) -> Path:
    """The first candidate that exists, else the first (so a skip message can name it)."""
    return next((p for p in candidates if p.exists()), candidates[0])


# The BEIR folder (corpus, queries, qrels).
SCIFACT = _first_existing(_COPY, _SHARED)
# The annotated claim-abstract pairs (claim, context_sentences, label).
CLAIM_LABELS = _first_existing(
    _SHARED / "claim_support.dev.jsonl", _COPY / "claim_support.dev.jsonl.gz"
)
