"""Where the plugin keeps its state in pytest's objects (stash keys), and how to read it."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from pytest_ragmetrics.plugin.recording import RagEval  # noqa: F401 - used in quotes
    from pytest_ragmetrics.plugin.session import RagSession
    from pytest_ragmetrics.report.outcome import Checked

SESSION_KEY = pytest.StashKey["RagSession"]()
RAG_EVAL_KEY = pytest.StashKey["RagEval"]()


@dataclass(frozen=True)
class CheckedTest:
    """What a test's checks found, carried by its call report to the controller (xdist): the
    evaluations it recorded with their outcomes, whether it crashed, the names of its
    baseline entries it ran without recording (lost), and the failures of its thresholds that
    no evaluation of the test could check (unchecked)."""

    checked: list[Checked]
    errored: bool
    unrecorded: tuple[str, ...] = ()
    unchecked: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "evaluations": [c.to_dict() for c in self.checked],
            "errored": self.errored,
            "unrecorded": list(self.unrecorded),
            "unchecked": list(self.unchecked),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CheckedTest:
        from pytest_ragmetrics.report.outcome import Checked

        return cls(
            [Checked.from_dict(e) for e in data["evaluations"]],
            bool(data["errored"]),
            tuple(str(n) for n in data.get("unrecorded", ())),
            tuple(str(m) for m in data.get("unchecked", ())),
        )


# What a test's checks found, until its call report carries it (to the controller under xdist).
CHECKED_KEY = pytest.StashKey[CheckedTest]()


def rag_session(config: pytest.Config) -> RagSession:
    return config.stash[SESSION_KEY]


def thresholds_of(item: pytest.Item) -> dict[str, float]:
    """Merged rag_threshold bounds, the closest level winning (validated at collection):
    the function's markers over its class's over its module's.

    A marker with ``dataset="name"`` (or ``"name-split"``) applies only to the instances of
    the test that run on that dataset, and beats a marker without one at the same level; a
    name no configured dataset has is an error. Two markers of one level that bound the same
    metric in the same scope are an error: which was meant is not known (stacked decorators
    apply bottom up, so the looser could win unseen).
    """
    merged: dict[str, float] = {}
    for _, markers in itertools.groupby(
        item.iter_markers_with_node("rag_threshold"), key=lambda found: id(found[0])
    ):
        level: dict[tuple[bool, str], float] = {}
        for _, marker in markers:
            _level_bounds(item, marker, level)
        for scoped in (True, False):
            for (is_scoped, metric), bound in level.items():
                if is_scoped == scoped:
                    merged.setdefault(metric, bound)
    return merged


def _level_bounds(
    item: pytest.Item, marker: pytest.Mark, level: dict[tuple[bool, str], float]
) -> None:
    """Add one marker's bounds (when they apply to ``item``) to its level's, keyed by
    (dataset-scoped, metric); a bound already there is a ConfigError."""
    from pytest_ragmetrics.errors import ConfigError
    from pytest_ragmetrics.plugin.recording import parse_thresholds

    callspec = getattr(item, "callspec", None)
    key = callspec.params.get("rag_dataset") if callspec is not None else None
    pairs = rag_session(item.config).settings.datasets
    bounds = dict(marker.kwargs)
    dataset = bounds.pop("dataset", None)
    if dataset is not None:
        if not isinstance(dataset, str) or not any(dataset in (p.name, p.key) for p in pairs):
            known = ", ".join(dict.fromkeys(p.name for p in pairs)) or "none"
            raise ConfigError(
                f"rag_threshold(dataset={dataset!r}): no such dataset is configured "
                f"(configured: {known})"
            )
        pair = next((p for p in pairs if p.key == key), None)
        if pair is not None and dataset not in (pair.name, pair.key):
            return
    for metric, bound in parse_thresholds(bounds, marker.args).items():
        slot = (dataset is not None, metric)
        if slot in level:
            raise ConfigError(
                f"rag_threshold: two markers at one level bound {metric} "
                f"({level[slot]:g} and {bound:g}); give its threshold once"
            )
        level[slot] = bound
