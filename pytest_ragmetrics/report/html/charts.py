"""The geometry of the page's charts: per metric, the per-query Δ chart (queries sorted by Δ,
binned into at most ``max_bars`` bars) and the histogram of per-query values now vs the
baseline, each with the numbers of its table; per metric verdict, the 95% CI of Δ as a
whisker. Coordinates are computed here; ``templates/charts.html.j2`` draws them as SVG."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from pytest_ragmetrics.deltas import delta_text

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import FloatArray, IntArray
    from pytest_ragmetrics.report.query_records import PerQueryValues

HISTOGRAM_BINS = 10
_NICE = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


def nice(number: float) -> float:
    """The smallest 'round' number at or above ``number``."""
    for step in _NICE:
        if number <= step + 1e-12:
            return step
    return float(10 ** math.ceil(math.log10(number)))


@dataclass
class Deltas:
    """One metric's per-query changes, sorted by Δ then query id (the ``i``-th is query
    ``ids[positions[i]]``)."""

    ids: list[str]
    positions: IntArray
    before: FloatArray
    now: FloatArray
    delta: FloatArray

    @classmethod
    def of(cls, values: PerQueryValues, metric: str) -> Deltas:
        positions, delta = values.deltas(metric)
        return cls(
            values.ids,
            positions,
            values.before(metric)[positions],
            values.now(metric)[positions],
            delta,
        )

    def row(self, i: int) -> tuple[str, float, float, float]:
        qid = self.ids[int(self.positions[i])]
        return qid, float(self.before[i]), float(self.now[i]), float(self.delta[i])

    @property
    def worse(self) -> int:
        return int((self.delta < 0).sum())

    @property
    def better(self) -> int:
        return int((self.delta > 0).sum())


class Frame(NamedTuple):
    """A chart's size and the margins around its plot."""

    width: int
    height: int
    left: int
    right: int
    top: int
    bottom: int

    @property
    def plot_width(self) -> int:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> int:
        return self.height - self.top - self.bottom


DELTA_FRAME = Frame(600, 190, left=52, right=10, top=12, bottom=40)
HISTOGRAM_FRAME = Frame(330, 190, left=40, right=8, top=12, bottom=40)


class Bar(NamedTuple):
    """A bar (coordinates as written) and its tooltip."""

    x: str
    y: str
    width: str
    height: str
    tip: str


class Label(NamedTuple):
    """A count under its segment of the Δ chart: 'worse', 'unchanged' or 'better'."""

    word: str
    x: str
    text: str


@dataclass
class DeltaChart:
    """Per-query Δ, queries sorted by Δ: worse below zero, better above, unchanged as a band
    on the zero line (``band``); its ``numbers`` are the table under it."""

    uid: str
    metric: str
    desc: str
    binned: bool
    band: Bar | None
    sides: list[tuple[str, list[Bar]]]
    mid: float
    up: str
    down: str
    labels: list[Label]
    numbers: list[tuple[str, str]]
    frame: Frame = DELTA_FRAME


def groups(start: int, length: int, count: int) -> list[tuple[int, int]]:
    """``length`` positions from ``start`` cut into ``count`` runs of nearly equal size, as
    (first position, size) pairs."""
    count = max(1, min(count, length))
    size, extra = divmod(length, count)
    out, position = [], start
    for i in range(count):
        n = size + (1 if i < extra else 0)
        out.append((position, n))
        position += n
    return out


def delta_chart(d: Deltas, metric: str, max_bars: int, uid: str) -> DeltaChart:
    """The Δ chart of ``d`` (at least one query changed)."""
    delta = d.delta
    n, n_worse, n_better = len(delta), d.worse, d.better
    n_same = n - n_worse - n_better
    chart = DeltaChart(uid, metric, "", n > max_bars, None, [], 0.0, "", "", [], [])
    frame = chart.frame
    ph, pw = frame.plot_height, frame.plot_width
    # One unit for both sides; a side with no bars keeps a sliver, so zero stays visible.
    down = nice(-float(delta[0])) if n_worse else 0.0
    up = nice(float(delta[-1])) if n_better else 0.0
    largest = max(up, down) or 0.01
    up, down = up or largest * 0.15, down or largest * 0.15
    unit = ph / (up + down)
    chart.mid = frame.top + up * unit
    step = pw / n
    chart.desc = (
        f"{n} queries sorted by their change in {metric}: {n_worse} worse, {n_same} "
        f"unchanged, {n_better} better"
        + (
            f"; bars are groups of queries (their mean Δ), at most {max_bars}"
            if chart.binned
            else ""
        )
    )
    if n_same:
        tip = f"{n_same} queries unchanged (Δ = 0)"
        x = f"{frame.left + n_worse * step:.1f}"
        chart.band = Bar(x, f"{chart.mid - 5:.1f}", f"{n_same * step:.1f}", "10", tip)
    cumulative = np.concatenate([[0.0], np.cumsum(delta)])
    for first, length, cls in ((0, n_worse, "worse"), (n_worse + n_same, n_better, "better")):
        if not length:
            continue
        if chart.binned:
            budget = max(2, max_bars - (1 if n_same else 0))
            runs = groups(first, length, round(budget * length / (n_worse + n_better)))
        else:
            runs = [(i, 1) for i in range(first, first + length)]
        bars = [_bar(d, cumulative, start, size, step, unit, chart) for start, size in runs]
        chart.sides.append((cls, bars))
    chart.up = f"{up:+g}" if n_better else ""
    chart.down = f"{-down:+g}" if n_worse else ""
    chart.labels = _labels(chart, (n_worse, n_same, n_better), step)
    chart.numbers = delta_numbers(delta)
    return chart


def _bar(
    d: Deltas,
    cumulative: FloatArray,
    start: int,
    size: int,
    step: float,
    unit: float,
    chart: DeltaChart,
) -> Bar:
    """The bar of queries ``start`` to ``start + size`` (by Δ): their mean Δ."""
    mean = float(cumulative[start + size] - cumulative[start]) / size
    bar = max(abs(mean) * unit, 1.0)
    y = chart.mid - bar if mean > 0 else chart.mid
    w = max(size * step - (0.6 if step * size > 2 else 0), 0.4)
    if size == 1:
        q, b, c, dq = d.row(start)
        tip = f"{q}: Δ {delta_text(dq)} ({b:.4f} → {c:.4f})"
    else:
        tip = (
            f"queries {start + 1} to {start + size} of {len(d.delta)} by Δ: Δ from "
            f"{delta_text(float(d.delta[start]))} to "
            f"{delta_text(float(d.delta[start + size - 1]))}, mean {delta_text(mean)}"
        )
    return Bar(f"{chart.frame.left + start * step:.1f}", f"{y:.1f}", f"{w:.1f}", f"{bar:.1f}", tip)


def _labels(chart: DeltaChart, counts: tuple[int, int, int], step: float) -> list[Label]:
    """Counts under their segments, kept inside the plot when a segment is narrow."""
    n_worse, n_same, n_better = counts
    left, pw = chart.frame.left, chart.frame.plot_width
    out = []
    for count, word, offset in (
        (n_worse, "worse", 0),
        (n_same, "unchanged", n_worse),
        (n_better, "better", n_worse + n_same),
    ):
        if not count:
            continue
        text = f"{count:,} {word}"
        half = 3.2 * len(text)
        x = min(max(left + (offset + count / 2) * step, left + half), left + pw - half)
        out.append(Label(word, f"{x:.1f}", text))
    return out


def delta_numbers(deltas: FloatArray) -> list[tuple[str, str]]:
    """(name, value) of the per-query Δ: counts, mean and quantiles."""
    worse = int((deltas < 0).sum())
    better = int((deltas > 0).sum())
    cells = [
        ("queries", f"{len(deltas):,}"),
        ("worse", f"{worse:,}"),
        ("unchanged", f"{len(deltas) - worse - better:,}"),
        ("better", f"{better:,}"),
        ("mean Δ", delta_text(float(deltas.mean()))),
    ]
    quantiles = (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1)
    names = ("min", "10%", "25%", "median", "75%", "90%", "max")
    for name, q in zip(names, np.quantile(deltas, quantiles).tolist(), strict=True):
        cells.append((f"Δ {name}", delta_text(q)))
    return cells


class Bin(NamedTuple):
    """One bin of the histogram: its range as written, counts now and in the baseline, and
    its bars (the baseline's None without baseline values)."""

    span: str
    now: int
    before: int | None
    tip: str
    now_bar: Bar
    before_bar: Bar | None


@dataclass
class Histogram:
    """Per-query values now (filled) and in the baseline (outlined)."""

    uid: str
    metric: str
    desc: str
    bins: list[Bin]
    top_count: int
    low: str
    high: str
    with_baseline: bool
    frame: Frame = HISTOGRAM_FRAME


def _counts(values: FloatArray, lo: float, hi: float, bins: int) -> list[int]:
    position = np.clip(((values - lo) / (hi - lo) * bins).astype(np.int64), 0, bins - 1)
    counts: list[int] = np.bincount(position, minlength=bins).tolist()
    return counts


def histogram(now: FloatArray, before: FloatArray | None, metric: str, uid: str) -> Histogram:
    """The histogram of ``now`` and ``before`` (finite values only)."""
    everything = np.concatenate([now, before if before is not None else np.empty(0)])
    lo = min(0.0, float(everything.min())) if len(everything) else 0.0
    hi = max(1.0, float(everything.max())) if len(everything) else 1.0
    edges = [lo + (hi - lo) * i / HISTOGRAM_BINS for i in range(HISTOGRAM_BINS + 1)]
    c_now = _counts(now, lo, hi, HISTOGRAM_BINS)
    c_before = _counts(before, lo, hi, HISTOGRAM_BINS) if before is not None else None
    top_count = max([1, *c_now, *(c_before or [])])
    desc = f"{len(now)} queries now" + (
        f", {len(before)} in the baseline" if before is not None else ", no baseline values"
    )
    chart = Histogram(uid, metric, desc, [], top_count, f"{lo:g}", f"{hi:g}", before is not None)
    frame = chart.frame
    ph, bw = frame.plot_height, frame.plot_width / HISTOGRAM_BINS
    for i in range(HISTOGRAM_BINS):
        x = frame.left + i * bw
        bracket = "]" if i == HISTOGRAM_BINS - 1 else ")"
        span = f"[{edges[i]:.2f}, {edges[i + 1]:.2f}{bracket}"
        b = c_before[i] if c_before is not None else None
        tip = f"{metric} in {span}: {c_now[i]} now" + ("" if b is None else f", {b} baseline")
        base_bar = None
        if b is not None:
            h = b / top_count * ph
            base_bar = Bar(
                f"{x + 1:.1f}", f"{frame.top + ph - h:.1f}", f"{bw - 2:.1f}", f"{h:.1f}", ""
            )
        h = c_now[i] / top_count * ph
        inset = bw * 0.22 if b is not None else 1
        now_bar = Bar(
            f"{x + inset:.1f}", f"{frame.top + ph - h:.1f}", f"{bw - 2 * inset:.1f}", f"{h:.1f}", ""
        )
        chart.bins.append(Bin(span, c_now[i], b, tip, now_bar, base_bar))
    return chart


class Whisker(NamedTuple):
    """The CI of Δ as a whisker on a zero-centred axis ±``scale`` shared by a table."""

    cls: str
    zero: float
    low: str
    high: str
    delta: str


def whisker(low: float, high: float, delta: float, scale: float, cls: str) -> Whisker:
    half = (100 - 2 * 4) / 2
    zero = 4 + half

    def x(v: float) -> str:
        return f"{zero + max(-1.0, min(1.0, v / scale)) * half:.1f}"

    return Whisker(cls, zero, x(low), x(high), x(delta))
