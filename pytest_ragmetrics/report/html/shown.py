"""How the page writes what it shows: numbers, Δ, table cells, status chips, and one
evaluation's facts gathered once (:class:`Shown`) for every part of the page that shows it."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from pytest_ragmetrics.deltas import delta_text

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict, MetricVerdict
    from pytest_ragmetrics.report.outcome import Checked

# category: (label, symbol); the symbol and the label carry the meaning, colour only helps.
CATEGORIES = {
    "regressed": ("regressed", "▼"),
    "below": ("below threshold", "✗"),
    "nc": ("not comparable", "≠"),
    "gated": ("not enforced", "○"),
    "improved": ("improved", "▲"),
    "ok": ("within tolerance", "●"),
    "new": ("new", "+"),
    "reference": ("reference", "◆"),
    "none": ("no baseline verdict", "-"),
}
PROBLEMS = ("regressed", "below", "nc")
# A metric verdict's status as a cell's class and a value's mark.
STATUS_CLASS = {"regressed": "worse", "lost": "worse", "improved": "better"}
STATUS_MARK = {"regressed": "▼ ", "lost": "▼ ", "improved": "▲ "}


def value(number: float | None) -> float | None:
    """A number to show, or None: a missing value (NaN, None, infinite) is not shown."""
    if number is None or not math.isfinite(number):
        return None
    return float(number)


def fixed(number: float | None, digits: int = 4) -> str:
    return "n/a" if number is None else f"{number:.{digits}f}"


def signed(number: float | None) -> str:
    return delta_text(number)  # the one rule for a Δ (deltas.py): never "-0.0000"


def side(delta: float | None) -> str:
    """A row's class by the sign of its Δ."""
    return "worse" if (delta or 0) < 0 else "better" if (delta or 0) > 0 else ""


class Cell(NamedTuple):
    """A table cell of a number: its text, its sort key (``data-value``) and class."""

    text: str
    data: str | None
    cls: str


def cell(number: float | None, text: str | None = None, cls: str = "") -> Cell:
    shown = fixed(number) if text is None else text
    return Cell(shown, None if number is None else repr(number), f"num {cls}".strip())


def delta_cell(delta: float | None, cls: str = "") -> Cell:
    return cell(delta, "" if delta is None else signed(delta), cls)


class Chip(NamedTuple):
    """A status as a chip (``category`` empty: plain text)."""

    category: str
    symbol: str
    text: str


def chip(category: str, text: str | None = None) -> Chip:
    label, symbol = CATEGORIES[category]
    return Chip(category, symbol, text or label)


def metric_chip(status: str) -> Chip | None:
    """A metric verdict's status: a chip, or plain words for the others (None: no status)."""
    if status == "lost":
        return chip("regressed", "lost")
    category = {"regressed": "regressed", "improved": "improved", "ok": "ok"}.get(status)
    if category is not None:
        return chip(category)
    return Chip("", "", status) if status else None


def label_parts(label: str) -> list[str]:
    """The label cut after each '::' and '/', where the page lets it wrap."""
    return re.split(r"(?<=::)|(?<=/)", label)


class Bound(NamedTuple):
    """A threshold of a metric: its bound, and when checked, the mean and whether it passed."""

    metric: str
    threshold: float
    value: float | None = None
    passed: bool | None = None


@dataclass
class Shown:
    """One evaluation as the page shows it: its anchor, statuses, metrics in the configured
    order, means, metric verdicts and thresholds."""

    checked: Checked
    anchor: str
    categories: list[str]
    metrics: list[str]
    means: dict[str, float | None]
    verdicts: dict[str, MetricVerdict]
    bounds: dict[str, Bound]

    @classmethod
    def of(
        cls,
        checked: Checked,
        anchor: str,
        preferred: Sequence[str],
        *,
        reference: bool,
        means: Mapping[str, float | None] | None = None,
    ) -> Shown:
        """``means``: as a report holds them, when it was read from one."""
        from pytest_ragmetrics.baseline.verdicts import BaselineVerdict

        evaluation = checked.record.evaluation
        verdict = checked.outcome.baseline
        if verdict is not None:  # its numbers as the JSON report holds them (rounded)
            verdict = BaselineVerdict.from_dict(verdict.to_dict())
        bounds = {
            t.metric: Bound(t.metric, t.threshold, t.value, t.passed)
            for t in checked.outcome.thresholds
        }
        for metric, bound in checked.record.thresholds.items():
            if metric not in bounds and value(bound) is not None:
                bounds[metric] = Bound(metric, bound)
        # A metric of the baseline this run no longer computes keeps its column: lost.
        lost = [] if verdict is None else [m.metric for m in verdict.metrics if m.status == "lost"]
        present = list(dict.fromkeys([*evaluation.metrics, *lost]))
        return cls(
            checked,
            anchor,
            categories(checked, reference=reference),
            ordered(present, preferred),
            {m: value((means or evaluation.mean).get(m)) for m in present},
            {} if verdict is None else {m.metric: m for m in verdict.metrics},
            bounds,
        )

    @property
    def label(self) -> str:
        return self.checked.label

    @property
    def layer(self) -> str:
        return self.checked.layer

    @property
    def verdict(self) -> BaselineVerdict | None:
        return self.checked.outcome.baseline

    @property
    def status(self) -> str:
        return "" if self.verdict is None else self.verdict.status

    @property
    def problem(self) -> bool:
        return bool(set(self.categories) & set(PROBLEMS))

    @property
    def chips(self) -> list[Chip]:
        return [chip(c) for c in self.categories]

    @property
    def parts(self) -> list[str]:
        return label_parts(self.label)


def categories(checked: Checked, *, reference: bool = False) -> list[str]:
    """What an evaluation's outcome is, most serious first (usually one)."""
    outcome = checked.outcome
    status = "" if outcome.baseline is None else outcome.baseline.status
    found = []
    if status == "regressed":
        found.append("regressed")
    if any(t.passed is False for t in outcome.thresholds):
        found.append("below")
    if status == "not comparable":
        found.append("nc")
    if outcome.gate:
        found.append("gated")
    found += [s for s in ("improved", "ok", "new") if status == s]
    if reference:
        found.append("reference")
    return found or ["none"]


def ordered(present: Sequence[str], preferred: Sequence[str]) -> list[str]:
    """``present`` with the ``preferred`` ones first, in their order."""
    return [m for m in preferred if m in present] + [m for m in present if m not in preferred]
