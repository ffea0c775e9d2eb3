"""Hook specifications for extending pytest-ragmetrics from a conftest.py or a plugin."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest


@pytest.hookspec()
def pytest_ragmetrics_register_metrics(register: Callable[..., None]) -> None:
    """Register extra retrieval metrics, once per process at configure time.

    Call ``register(name, function, cutoff="optional"|"required"|"none", worst=None,
    higher_is_better=True)``; ``function(ranked, k)`` receives
    :class:`pytest_ragmetrics.RankedJudgments` and returns one float per query, higher better
    (a lower-is-better metric is refused: register its negation). ``worst`` declares the
    metric's least value (0.0 for one in [0, 1]): a fall to it on every query then fails
    whatever the p-value, and a value below it is an error. The new names work everywhere a
    metric name does (marker, ini, reports, baselines).
    """


@pytest.hookspec()
def pytest_ragmetrics_evaluation_recorded(recorded: Any, item: pytest.Item) -> None:
    """Called in the process that ran ``item`` each time ``rag_eval`` records an evaluation.

    ``recorded`` is a :class:`pytest_ragmetrics.records.EvaluationRecord`; its outcome is
    not known yet.
    """


@pytest.hookspec()
def pytest_ragmetrics_modify_report(report: dict[str, Any], config: pytest.Config) -> None:
    """Modify the JSON report document in place before it is written (controller only)."""
