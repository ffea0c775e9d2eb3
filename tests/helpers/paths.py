"""Where things are in the checkout, for a test in any folder under ``tests/``."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TESTS = REPO / "tests"
HELPERS = TESTS / "helpers"  # on PYTHONPATH for ``-p network_guard`` in a child pytest
TEST_DATA = TESTS / "data"
