"""Where the plugin keeps its state in pytest's objects (stash keys), and how to read it."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_ragmetrics.plugin.recording import RagEval  # noqa: F401 - used in quotes
    from pytest_ragmetrics.plugin.session import RagSession
    from pytest_ragmetrics.report.outcome import Checked  # noqa: F401 - used in quotes

SESSION_KEY = pytest.StashKey["RagSession"]()
RAG_EVAL_KEY = pytest.StashKey["RagEval"]()
# What a test's checks found, until its call report carries it (to the controller under xdist).
CHECKED_KEY = pytest.StashKey["tuple[list[Checked], bool]"]()


def rag_session(config: pytest.Config) -> RagSession:
    return config.stash[SESSION_KEY]


def thresholds_of(item: pytest.Item) -> dict[str, float]:
    """Merged rag_threshold bounds, the closest marker winning (validated at collection)."""
    from pytest_ragmetrics.plugin.recording import parse_thresholds

    merged: dict[str, float] = {}
    for marker in item.iter_markers("rag_threshold"):
        for metric, bound in parse_thresholds(marker.kwargs, marker.args).items():
            merged.setdefault(metric, bound)
    return merged
