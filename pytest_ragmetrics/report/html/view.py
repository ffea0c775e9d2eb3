"""The page as the templates draw it: the header (the problems in words), per layer the
matrix of evaluations x metrics and the table of every number, each evaluation's section,
and the run's settings. Built from a :class:`~pytest_ragmetrics.report.html.page.ReportPage`."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from pytest_ragmetrics.deltas import OTHER_QUERIES, over_other_queries
from pytest_ragmetrics.report.html.charts import Whisker, nice, whisker
from pytest_ragmetrics.report.html.evaluation import EvaluationView, evaluation_view, flat
from pytest_ragmetrics.report.html.shown import (
    CATEGORIES,
    PROBLEMS,
    STATUS_CLASS,
    STATUS_MARK,
    Bound,
    Cell,
    Chip,
    Shown,
    cell,
    chip,
    fixed,
    metric_chip,
    ordered,
    signed,
    value,
)
from pytest_ragmetrics.report.terminal import LAYER_TITLES
from pytest_ragmetrics.vocabulary import LAYERS

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import MetricVerdict
    from pytest_ragmetrics.report.html.page import ReportPage, TableGroup
    from pytest_ragmetrics.report.tables import Table

STALE_SHOWN = 20


class Problem(NamedTuple):
    """An evaluation that regressed, fell below a threshold or is not comparable, and what
    says how: (metric, sentence) per regressed metric, the thresholds missed, the reasons."""

    shown: Shown
    chips: list[Chip]
    regressions: list[tuple[str, str]]
    below: list[Bound]
    reasons: list[str]


class MatrixCell(NamedTuple):
    cls: str
    tip: str
    mark: str
    value: str
    whisker: Whisker | None
    delta: str
    threshold: str


class SummaryRow(NamedTuple):
    """A row of the table of every number; ``verdict``: the metric has a baseline verdict
    (its status shows as its ``chip``, else the evaluation's chips show)."""

    shown: Shown
    metric: str
    first: bool
    verdict: bool
    cells: list[Cell]  # current, baseline, Δ
    ci: tuple[str, Whisker, str] | None  # data-value, whisker, text
    p: Cell
    moved: tuple[int, int, int] | None
    tolerance: str
    threshold: tuple[str, str] | None  # class, text
    status: str
    chip: Chip | None


@dataclass
class Layer:
    layer: str
    title: str
    entries: list[Shown]
    scale: float
    columns: list[str]
    matrix: list[tuple[Shown, list[MatrixCell | None]]]
    summary: list[tuple[Shown, list[SummaryRow]]]
    sections: list[EvaluationView]
    # Some Δ is over only the queries both the baseline and this run hold (marked †).
    elsewhere: bool = False


class Grid(NamedTuple):
    """A typed table as drawn: its cells (the best of a column in bold) and the sentence
    under it."""

    table: Table
    legend: str


class Group(NamedTuple):
    """Tables shown together before the layers (see ``TableGroup``), with their anchor."""

    anchor: str
    title: str
    intro: str
    grids: list[Grid]
    notes: list[str]


def groups(page: ReportPage) -> list[Group]:
    """The page's groups of tables, each table with its legend as one sentence."""
    from pytest_ragmetrics.report.tables import legend_of

    def grid(table: Table) -> Grid:
        sentence = "; ".join(legend_of(table, bold=True))
        return Grid(table, sentence[:1].upper() + sentence[1:] + ("." if sentence else ""))

    def group(i: int, found: TableGroup) -> Group:
        grids = [grid(t) for t in found.tables]
        return Group(f"tables{i}", found.title, found.intro, grids, list(found.notes))

    return [group(i, found) for i, found in enumerate(page.tables, start=1)]


# A fact of the header: its parts, (text, True) for text from the data (shown isolated).
Fact = list[tuple[str, bool]]


@dataclass
class PageView:
    title: str
    facts: list[Fact]
    count: int
    totals: list[Chip]
    problems: list[Problem]
    not_compared: list[tuple[str, list[str]]]
    unchecked: list[tuple[str, str]]
    tables: list[Group]
    layers: list[Layer]
    run: list[tuple[str, str]]


def page_view(page: ReportPage, *, worst: int, max_bars: int) -> PageView:
    """Everything the templates draw of ``page``."""
    preferred = list(page.metrics)
    entries = [
        Shown.of(
            c,
            f"ev{i}",
            preferred,
            reference=page.is_reference(c),
            means=page.means.get(c.record.key),
        )
        for i, c in enumerate(page.evaluations, start=1)
    ]
    ids = _Ids()
    layers = []
    for layer in LAYERS:
        chosen = [s for s in entries if s.layer == layer]
        if chosen:
            heading = LAYER_TITLES[layer]
            layers.append(_layer(layer, heading[0].upper() + heading[1:], chosen, preferred))
            layers[-1].sections = [
                evaluation_view(s, worst=worst, max_bars=max_bars, uid=ids) for s in chosen
            ]
    counts: dict[str, int] = {}
    for shown in entries:
        for category in shown.categories:
            counts[category] = counts.get(category, 0) + 1
    return PageView(
        title(page),
        facts(page),
        len(entries),
        [chip(c, f"{counts[c]} {CATEGORIES[c][0]}") for c in CATEGORIES if c in counts],
        [_problem(s) for s in entries if s.problem],
        not_compared(page),
        list(page.unchecked),
        groups(page),
        layers,
        run_rows(page),
    )


class _Ids:
    """Element ids made from counters, never from data (a query id may be anything)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def title(page: ReportPage) -> str:
    compared = page.compared
    if compared is None:
        return "ragmetrics report"
    if compared.pairs:
        return (
            f"ragmetrics: {len(compared.runs)} systems compared with {compared.reference} on "
            f"{len(compared.pairs)} datasets"
        )
    if compared.of_runs:
        return f"ragmetrics: {len(compared.runs)} runs compared with {compared.reference}"
    return f"ragmetrics: {compared.after} compared with {compared.before}"


def facts(page: ReportPage) -> list[Fact]:
    """The header's facts: when, by which version, what was compared with what."""
    out: list[Fact] = []
    if page.created:
        out.append([(f"created {page.created}", False)])
    if page.plugin_version:
        out.append([(f"pytest-ragmetrics {page.plugin_version}", False)])
    compared = page.compared
    if compared is not None and compared.of_runs:
        what = "system" if compared.pairs else "run"
        out.append([(f"verdicts of every {what} against ", False), (compared.reference, True)])
        if compared.pairs:
            out[-1].append((", dataset by dataset", False))
    elif compared is not None:
        out.append(
            [
                ("verdicts of ", False),
                (compared.after, True),
                (" against ", False),
                (compared.before, True),
            ]
        )
    return out


def _problem(shown: Shown) -> Problem:
    verdict = shown.verdict
    return Problem(
        shown,
        [chip(c) for c in shown.categories if c in (*PROBLEMS, "gated")],
        [
            (m, regression_sentence(shown.verdicts[m]))
            for m in shown.metrics
            if m in shown.verdicts and shown.verdicts[m].status in ("regressed", "lost")
        ],
        [b for b in shown.bounds.values() if b.passed is False],
        [] if verdict is None else list(verdict.reasons),
    )


def regression_sentence(item: MetricVerdict) -> str:
    """How a metric regressed, after its name: values, Δ, CI, p, queries worse."""
    text = ""
    if item.status == "lost" and item.lost:
        text += f"lost its value on {item.lost:,} queries that had one in the baseline; "
    text += f"{fixed(value(item.baseline))} → {fixed(value(item.current))} "
    text += f"(Δ {signed(value(item.delta))}"
    ci = ci_of(item)
    if ci is not None:
        text += f", 95% CI [{signed(ci[0])}, {signed(ci[1])}]"
    p = p_of(item)
    if p is not None:
        text += f", p = {p:.4f}"
    text += ")"
    c = item.comparison
    if c is not None and c.worse + c.same + c.better:
        text += f"; {c.worse:,} of {c.worse + c.same + c.better:,} queries worse"
    return text


def not_compared(page: ReportPage) -> list[tuple[str, list[str]]]:
    """What a comparison of two reports left out: (line, its indented items) in order."""
    out: list[tuple[str, list[str]]] = []
    for line in page.compared.not_compared if page.compared is not None else ():
        if line.startswith("  ") and out:
            out[-1][1].append(line.strip())
        elif line.startswith("  "):
            out.append(("", [line.strip()]))
        else:
            out.append((line, []))
    return out


def _layer(layer: str, heading: str, entries: list[Shown], preferred: Sequence[str]) -> Layer:
    scale = 0.0
    for shown in entries:
        for item in shown.verdicts.values():
            numbers = [value(item.delta)]
            if item.comparison is not None:
                numbers += [value(item.comparison.ci_low), value(item.comparison.ci_high)]
            scale = max([scale, *(abs(v) for v in numbers if v is not None)])
    scale = nice(scale or 0.01)
    columns = ordered(list(dict.fromkeys(m for s in entries for m in s.metrics)), preferred)
    matrix = [
        (s, [matrix_cell(s, m, scale) if m in s.means else None for m in columns]) for s in entries
    ]
    summary = [
        (s, [summary_row(s, metric, scale, first=i == 0) for i, metric in enumerate(s.metrics)])
        for s in entries
    ]
    elsewhere = any(
        _elsewhere(s.verdicts.get(m), s.means.get(m)) for s in entries for m in s.metrics
    )
    return Layer(layer, heading, entries, scale, columns, matrix, summary, [], elsewhere)


def _elsewhere(item: MetricVerdict | None, mean: float | None) -> bool:
    """Whether a metric's Δ is over other queries than its value shown (see deltas)."""
    if item is None:
        return False
    now = value(item.current)
    return over_other_queries(math.nan if now is None else now, mean)


def ci_of(item: MetricVerdict | None) -> tuple[float, float] | None:
    if item is None or item.comparison is None:
        return None
    low, high = value(item.comparison.ci_low), value(item.comparison.ci_high)
    return None if low is None or high is None else (low, high)


def p_of(item: MetricVerdict | None) -> float | None:
    return None if item is None or item.comparison is None else value(item.comparison.p_value)


def matrix_cell(shown: Shown, metric: str, scale: float) -> MatrixCell:
    """A cell of the matrix: the value now, Δ with its CI, the threshold; all in its tip."""
    number = shown.means.get(metric)
    item = shown.verdicts.get(metric)
    status = "" if item is None else item.status
    cls = STATUS_CLASS.get(status, "same")
    delta = None if item is None else value(item.delta)
    ci = ci_of(item)
    tip = [f"{metric} {fixed(number)}"]
    drawn, delta_text = None, ""
    if delta is not None:
        assert item is not None
        delta_text = f"Δ {signed(delta)}"
        if _elsewhere(item, number):
            delta_text += f" {OTHER_QUERIES}"
            tip.append(
                f"over the queries both the baseline and this run hold: baseline "
                f"{fixed(value(item.baseline))}, now {fixed(value(item.current))}"
            )
        else:
            tip.append(f"baseline {fixed(value(item.baseline))}")
        tip[-1] += f", Δ {signed(delta)}"
        if ci is not None:
            drawn = whisker(ci[0], ci[1], delta, scale, cls)
            tip.append(f"95% CI [{signed(ci[0])}, {signed(ci[1])}]")
        p = p_of(item)
        if p is not None:
            tip.append(f"p = {p:.4f}")
    if status:
        tip.append({"ok": "within tolerance"}.get(status, status))
    bound = shown.bounds.get(metric)
    threshold, missed = "", False
    if bound is not None:
        missed = bound.passed is False
        threshold = f"min {fixed(bound.threshold, 2)}{' ✗' if missed else ''}"
        tip.append(f"threshold {fixed(bound.threshold)}{' missed' if missed else ''}")
    return MatrixCell(
        f"cell {cls}{' missed' if missed else ''}",
        "; ".join(tip),
        STATUS_MARK.get(status, ""),
        fixed(number),
        drawn,
        delta_text,
        threshold,
    )


def summary_row(shown: Shown, metric: str, scale: float, *, first: bool) -> SummaryRow:
    """A row of the table of every number."""
    item = shown.verdicts.get(metric)
    status = "" if item is None else item.status
    cls = STATUS_CLASS.get(status, "")
    delta = None if item is None else value(item.delta)
    ci = ci_of(item)
    ci_cell = None
    if ci is not None and delta is not None:
        text = f"[{signed(ci[0])}, {signed(ci[1])}]"
        ci_cell = (repr(ci[0]), whisker(ci[0], ci[1], delta, scale, cls or "same"), text)
    moved = None
    if item is not None and item.comparison is not None:
        c = item.comparison
        moved = (c.worse, c.same, c.better)
    bound = shown.bounds.get(metric)
    threshold = None
    if bound is not None:
        mark = {True: " ✓", False: " ✗"}.get(bound.passed, "") if bound.passed is not None else ""
        threshold = ("worse" if bound.passed is False else "", f"≥ {fixed(bound.threshold)}{mark}")
    return SummaryRow(
        shown,
        metric,
        first,
        item is not None,
        [
            cell(shown.means.get(metric)),
            cell(None if item is None else value(item.baseline)),
            cell(delta, _delta_shown(delta, item, shown.means.get(metric)), cls),
        ],
        ci_cell,
        cell(p_of(item)),
        moved,
        "" if item is None else item.tolerance,
        threshold,
        status,
        None if item is None else metric_chip(status),
    )


def _delta_shown(delta: float | None, item: MetricVerdict | None, mean: float | None) -> str:
    """A Δ as the table of every number writes it, marked when over other queries."""
    if delta is None:
        return ""
    return signed(delta) + (f" {OTHER_QUERIES}" if _elsewhere(item, mean) else "")


def run_rows(page: ReportPage) -> list[tuple[str, str]]:
    """(name, text) of the run: settings, plugin version, comparison, baseline update, stale
    baseline entries."""
    rows = [(str(k), flat(v)) for k, v in page.settings.items()]
    if page.plugin_version:
        rows.insert(0, ("plugin version", page.plugin_version))
    if page.compared is not None:
        rows += [(f"compare: {k}", flat(v)) for k, v in page.compared.settings()]
    if page.baseline_update:
        rows.append(("baseline update", flat(page.baseline_update)))
    if page.stale:
        shown = "; ".join(" ".join(s) for s in page.stale[:STALE_SHOWN])
        more = " …" if len(page.stale) > STALE_SHOWN else ""
        rows.append((f"stale baseline entries ({len(page.stale)})", shown + more))
    return rows
