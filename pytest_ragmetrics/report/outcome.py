"""The outcome of a session, computed once: every evaluation record with what its checks found
(thresholds, the baseline verdict, the judge gate), the baseline update, stale entries, the
settings. The terminal, JSON and Markdown reports only render it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.vocabulary import Layer

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict
    from pytest_ragmetrics.cache import ClearReport
    from pytest_ragmetrics.records import EvaluationRecord


@dataclass(frozen=True)
class ThresholdResult:
    """One ``rag_threshold`` bound checked against an evaluation's mean."""

    metric: str
    value: float | None  # None: no query had a value
    threshold: float
    passed: bool

    @classmethod
    def check(cls, metric: str, mean: float, bound: float) -> ThresholdResult:
        passed = not math.isnan(mean) and mean >= bound
        return cls(metric, None if math.isnan(mean) else mean, bound, passed)

    def to_dict(self) -> dict[str, Any]:
        return {
            "metric": self.metric,
            "value": self.value,
            "threshold": self.threshold,
            "passed": self.passed,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ThresholdResult:
        return cls(data["metric"], data["value"], data["threshold"], data["passed"])


@dataclass(frozen=True)
class EvaluationOutcome:
    """What the end-of-test checks found for one evaluation.

    ``gate`` says why an answer evaluation may not fail its test at all (the calibrated κ of
    the judge behind every metric is unknown or below ``ragmetrics_min_judge_kappa``); empty
    when it may. ``not_enforced`` names the metrics of an evaluation that may fail on its
    other metrics but not on these (each answer-layer metric has its own question, and so its
    own κ), with the reason. ``update`` says what ``--ragmetrics-update-baseline`` did to its
    entry (``added``, ``updated``, ``unchanged``, or ``not updated``: its test failed);
    empty without an update.
    """

    thresholds: tuple[ThresholdResult, ...] = ()
    baseline: BaselineVerdict | None = None
    gate: str = ""
    update: str = ""
    not_enforced: Mapping[str, str] = field(default_factory=dict)
    # The full failure message of a regressed or not comparable verdict (the test shows the
    # short one unless pytest -v): kept in the JSON report.
    message: str = ""

    @property
    def status(self) -> str:
        """One word for the tables: threshold failures first, then the baseline verdict, then
        what an update did to the baseline entry."""
        baseline = self.baseline.status if self.baseline is not None else "-"
        if self.gate:
            text = f"{baseline} (not enforced)"
        elif any(not t.passed and t.metric not in self.not_enforced for t in self.thresholds):
            text = (
                "below threshold"
                if baseline in ("-", "ok", "new")
                else f"below threshold, {baseline}"
            )
        else:
            text = baseline
        if not self.update or self.update == "unchanged":
            return text
        if text in ("-", "new"):
            return self.update
        if text.startswith("new "):  # "new (not enforced)"
            return self.update + text[3:]
        return f"{text}, {self.update}"

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if self.thresholds:
            out["thresholds"] = [t.to_dict() for t in self.thresholds]
        if self.baseline is not None:
            out["baseline"] = self.baseline.to_dict()
        if self.gate:
            out["gate"] = self.gate
        if self.update:
            out["update"] = self.update
        if self.not_enforced:
            out["not_enforced"] = dict(self.not_enforced)
        if self.message:
            out["message"] = self.message
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationOutcome:
        from pytest_ragmetrics.baseline.verdicts import BaselineVerdict

        baseline = data.get("baseline")
        return cls(
            tuple(ThresholdResult.from_dict(t) for t in data.get("thresholds", [])),
            None if baseline is None else BaselineVerdict.from_dict(baseline),
            data.get("gate", ""),
            data.get("update", ""),
            dict(data.get("not_enforced") or {}),
            str(data.get("message", "")),
        )


@dataclass(frozen=True)
class Checked:
    """An evaluation record with its outcome: one row of every report."""

    record: EvaluationRecord
    outcome: EvaluationOutcome = EvaluationOutcome()

    @property
    def label(self) -> str:
        return self.record.label

    @property
    def layer(self) -> Layer:
        return self.record.layer

    def to_dict(self) -> dict[str, Any]:
        """The evaluation as the JSON report holds it."""
        return {**self.record.to_dict(), "outcome": self.outcome.to_dict()}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checked:
        from pytest_ragmetrics.records import EvaluationRecord

        return cls(
            EvaluationRecord.from_dict(data),
            EvaluationOutcome.from_dict(data.get("outcome") or {}),
        )


def _own_notes(checked: Checked) -> list[str]:
    """An evaluation's notes before its verdict's: the evaluation's, its judge gate, the
    thresholds not enforced."""
    outcome = checked.outcome
    notes = list(checked.record.evaluation.notes)
    if outcome.gate:
        notes.append(outcome.gate)
    return notes + [f"{name} not enforced: {why}" for name, why in outcome.not_enforced.items()]


@dataclass
class SessionOutcome:
    """Everything the reports show about one session (controller side)."""

    evaluations: list[Checked]
    metrics: Sequence[str]  # the configured metrics: the preferred column order
    settings: Mapping[str, Any] = field(default_factory=dict)
    plugin_version: str = ""
    baseline_path: str = ""
    update_counts: Mapping[str, int] | None = None
    # After an update: the files to commit (the baseline and the dataset digests beside it).
    commit_paths: Sequence[str] = ()
    # Entries whose test no longer exists (its file collected whole): lost, they fail the run.
    stale: Sequence[tuple[str, str]] = ()
    # Entries of tests that ran without recording them: lost, they failed their tests.
    unrecorded: Sequence[tuple[str, str]] = ()
    # Thresholds no evaluation of their test could check (a layer it recorded nothing of):
    # (test, failure), each failed its test.
    unchecked: Sequence[tuple[str, str]] = ()
    cleared: ClearReport | None = None
    cache_path: str = ""

    def __post_init__(self) -> None:
        self.evaluations = sorted(self.evaluations, key=lambda c: c.record.key)
        self.unrecorded = sorted(self.unrecorded)
        self.unchecked = sorted(self.unchecked)

    @property
    def dataset_order(self) -> list[str]:
        """The configured (dataset, split) pairs, ``name-split``, in the configured order."""
        from pytest_ragmetrics.data.selection import pair_key

        return [pair_key(d["name"], d["split"]) for d in self.settings.get("datasets", [])]

    def layer(self, layer: Layer) -> list[Checked]:
        return [c for c in self.evaluations if c.layer == layer]

    def notes(self, layer: Layer) -> list[str]:
        """Every note of a layer's evaluations, each once, prefixed by the evaluation's label;
        an alpha that many evaluations cannot reach (per-query tests) is said once for all."""
        from pytest_ragmetrics.baseline.verdicts import labelled_notes

        return labelled_notes(
            (checked.label, _own_notes(checked), checked.outcome.baseline)
            for checked in self.layer(layer)
        )

    def lost_entries_lines(self) -> list[str]:
        """What the baseline holds that this run did not compute, in words ([] if nothing):
        stale entries (their tests no longer exist) and entries of tests that ran without
        recording them. Every line is plain text; renderers escape it for their sink."""
        from pytest_ragmetrics.baseline.store import UPDATE_HINT
        from pytest_ragmetrics.records import label

        updated = self.update_counts is not None
        lines = []
        if self.stale:
            lines.append(
                f"ragmetrics: {len(self.stale)} baseline entries belong to tests that no longer "
                "exist (stale: a test, a dataset or a query is gone): "
                + (
                    "removed by this update:"
                    if updated
                    else f"their values are lost, and the run fails; if that is intended, "
                    f"bless with {UPDATE_HINT}, which removes them:"
                )
            )
            lines += [f"  {label(test, name)}" for test, name in self.stale]
        if self.unrecorded:
            lines.append(
                f"ragmetrics: {len(self.unrecorded)} baseline entries belong to tests that ran "
                "without recording them: "
                + ("removed by this update:" if updated else "lost (their tests failed):")
            )
            lines += [f"  {label(test, name)}" for test, name in self.unrecorded]
        return lines

    def not_updated_lines(self) -> list[str]:
        """After an update, the evaluations it left as they were because their tests failed
        ([] if none). Plain text; renderers escape it for their sink."""
        failed = [c.label for c in self.evaluations if c.outcome.update == "not updated"]
        if not failed:
            return []
        count = len(failed)
        return [
            f"ragmetrics: {count} evaluation{'s' if count != 1 else ''} not updated: "
            f"{'their tests' if count != 1 else 'its test'} failed, so the baseline keeps "
            "what it had (a failed test's numbers may be incomplete); fix the test and run "
            "with --ragmetrics-update-baseline again:",
            *(f"  {label}" for label in failed),
        ]

    def unchecked_lines(self) -> list[str]:
        """The thresholds no evaluation could check, in words ([] if none): a headline, then
        a line per test and failure. Plain text; renderers escape it for their sink."""
        if not self.unchecked:
            return []
        count = len(self.unchecked)
        return [
            f"ragmetrics: {count} threshold{'s' if count != 1 else ''} could not be checked "
            "(no evaluation of the layer was recorded); their tests failed:",
            *(f"  {test}: {message}" for test, message in self.unchecked),
        ]
