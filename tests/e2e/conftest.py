"""The slow tier: every test under tests/e2e/ is marked ``slow``.

These run real models, real datasets, a Ray cluster, a llama.cpp server or fresh virtual
environments (minutes each); ``pytest -m "not slow"`` leaves them out and ``pytest -m slow``
runs them. A test placed here is slow by where it lives, whatever markers its file sets.
"""

from __future__ import annotations

from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parent


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if HERE in item.path.resolve().parents:
            item.add_marker(pytest.mark.slow)
