"""The HTML report: one self-contained page per run, built from the JSON report document.

``html_report(document)`` is a pure function of a ``--ragmetrics-json`` document (schema in
``pytest_ragmetrics.report.json_report``). The page has no external resource: inline CSS, inline
SVG charts and a few lines of inline JavaScript (table sorting, opening every section before
printing), locked down by a Content-Security-Policy that allows nothing else, so it opens from
``file://`` or as a CI artifact and never touches the network. Per layer (retrieval, answers),
kept apart, it shows:

- the problems in words (what regressed, fell below a threshold or is not comparable, with Δ,
  CI, p and queries worse), then a matrix of evaluations x metrics (value, Δ, the 95% bootstrap
  CI of Δ drawn against zero, threshold) and every number in a sortable table (current,
  baseline, Δ, CI, p-value, queries worse/unchanged/better, tolerance, threshold, status);
- per evaluation: identity (retriever or judge, dataset and fingerprints, k, semantics), notes
  (unjudged share, configuration changes, κ gate, not-comparable reasons), and per metric a
  chart of per-query Δ (queries sorted by Δ; binned when there are more than ``max_bars``) and
  a histogram of per-query values now vs the baseline, each with a table of its numbers;
- a drill-down of the ``worst`` most regressed queries per metric: query text, ranking before
  → after (relevant documents highlighted, unjudged marked, rank moves), or for answers the
  answer now and before with the claims, verdicts and evidence.

Optional evaluation fields (absent from plain reports; filled by
``pytest_ragmetrics.report.query_records.add_query_details``; the page says what is missing
and draws what it can without them)::

    "baseline_per_query": {query_id: {metric: value | null}}   # the baseline's per-query values
    "queries": {query_id: {
        "text": str,                                     # the query (or question)
        # retrieval evaluations:
        "ranking": [[doc_id, score, grade | null], ...],          # top of this run, best first;
        "baseline_ranking": [[doc_id, score, grade | null], ...], # grade null = unjudged
        "relevant": {doc_id: grade},                     # judged relevant (grade ≥ level)
        "titles": {doc_id: title},
        # answer evaluations:
        "answer": str, "baseline_answer": str,
        "claims": [{"text": str, "supported": bool | null, "evidence": [context_id],
                    "score": number | null}],
        "baseline_claims": [...same...]
    }}

and one optional top-level field, written by ``ragmetrics compare --format html``::

    "comparison": {"before": str, "after": str, "tolerance": [str], "alpha": number | null,
                   "strict": bool, "not_compared": {"evaluations": [{"test", "name", "layer"}],
                   "metrics": [{"test", "name", "metrics"}], "queries": [{"test", "name",
                   "queries"}], "lines": [str]}}

or, comparing runs (:func:`systems_document`), ``{"reference": label, "runs": [label],
"judgments": str | null, "tolerance": [str], "alpha": number | null}``, with the reference's
evaluation marked ``"outcome": {"reference": true}``.

Values that do not have the expected type are shown as missing, never trusted: the page is
built from files people edit and hooks that modify reports.
"""

from __future__ import annotations

import base64
import hashlib
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_ragmetrics.data.model import FloatArray
from pytest_ragmetrics.deltas import delta_text
from pytest_ragmetrics.errors import BaselineError, ConfigError
from pytest_ragmetrics.report.escaping import for_html as esc
from pytest_ragmetrics.report.json_report import REPORT_SCHEMA, REPORT_VERSION
from pytest_ragmetrics.report.pair import not_compared_html
from pytest_ragmetrics.report.query_records import (
    PerQueryValues,
    baseline_per_query,
    baseline_records,
    detail_query_ids,
    most_regressed,
)
from pytest_ragmetrics.report.terminal import LAYER_TITLES
from pytest_ragmetrics.vocabulary import LAYERS

if TYPE_CHECKING:
    from pytest_ragmetrics.comparison import SystemsComparison

DEFAULT_WORST = 10
DEFAULT_MAX_BARS = 100
HISTOGRAM_BINS = 10
TEXT_PREVIEW = 90

# --------------------------------------------------------------------------------------------
# Reading untrusted values.


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:
        return None
    return number if math.isfinite(number) else None


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _str(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _user(text: Any) -> str:
    """Text that came from the data (ids, query texts): escaped and bidi-isolated, so a
    right-to-left mark in a query id cannot reorder the page around it."""
    return f"<bdi>{esc(text)}</bdi>"


def _f(value: float | None, digits: int = 4) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _signed(value: float | None, digits: int = 4) -> str:
    return delta_text(value, digits)  # the one rule for a Δ (deltas.py): never "-0.0000"


def _num_cell(value: float | None, text: str | None = None, cls: str = "") -> str:
    data = "" if value is None else f' data-value="{value!r}"'
    klass = f"num {cls}".strip()
    return f'<td class="{klass}"{data}>{text if text is not None else _f(value)}</td>'


def _preview(text: str, limit: int = TEXT_PREVIEW) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


# --------------------------------------------------------------------------------------------
# Statuses.

# category: (label, symbol); the symbol and the label carry the meaning, colour only helps.
_CATEGORIES = {
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
_PROBLEMS = ("regressed", "below", "nc")


def _label(entry: Mapping[str, Any]) -> str:
    """'test [name]', as in the terminal table."""
    return f"{_str(entry.get('test'))} [{_str(entry.get('name'))}]"


def _verdict(entry: Mapping[str, Any]) -> Mapping[str, Any]:
    return _map(_map(entry.get("outcome")).get("baseline"))


def _categories(entry: Mapping[str, Any]) -> list[str]:
    """What an evaluation's outcome is, most serious first (usually one)."""
    outcome = _map(entry.get("outcome"))
    status = _str(_verdict(entry).get("status"))
    found = []
    if status == "regressed":
        found.append("regressed")
    if any(
        isinstance(t, Mapping) and t.get("passed") is False
        for t in _list(outcome.get("thresholds"))
    ):
        found.append("below")
    if status == "not comparable":
        found.append("nc")
    if _str(outcome.get("gate")):
        found.append("gated")
    if status == "improved":
        found.append("improved")
    if status == "ok":
        found.append("ok")
    if status == "new":
        found.append("new")
    if outcome.get("reference") is True:
        found.append("reference")
    return found or ["none"]


def _chip(category: str, text: str | None = None) -> str:
    label, symbol = _CATEGORIES[category]
    return (
        f'<span class="chip c-{category}"><span aria-hidden="true">{symbol}</span> '
        f"{esc(text or label)}</span>"
    )


def _metric_chip(status: str) -> str:
    category = {"regressed": "regressed", "improved": "improved", "ok": "ok"}.get(status)
    if status == "lost":
        return _chip("regressed", "lost")
    if category is None:
        return esc(status) if status else ""
    return _chip(category)


# --------------------------------------------------------------------------------------------
# Charts.

_NICE = (0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1.0, 2.0, 5.0, 10.0)


def _nice(value: float) -> float:
    """The smallest 'round' number at or above ``value``."""
    for step in _NICE:
        if value <= step + 1e-12:
            return step
    return float(10 ** math.ceil(math.log10(value)))


def _svg_open(width: int, height: int, title: str, desc: str, uid: str) -> str:
    return (
        f'<svg class="chart" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-labelledby="{uid}-t {uid}-d"><title id="{uid}-t">{esc(title)}</title>'
        f'<desc id="{uid}-d">{esc(desc)}</desc>'
    )


@dataclass
class _Deltas:
    """One metric's per-query changes, sorted by Δ then query id."""

    ids: list[str]
    before: FloatArray
    now: FloatArray
    delta: FloatArray

    @classmethod
    def of(cls, values: PerQueryValues, metric: str) -> _Deltas:
        positions, delta = values.deltas(metric)
        return cls(
            [values.ids[i] for i in positions.tolist()],
            values.before(metric)[positions],
            values.now(metric)[positions],
            delta,
        )

    def row(self, i: int) -> tuple[str, float, float, float]:
        return self.ids[i], float(self.before[i]), float(self.now[i]), float(self.delta[i])


def _groups(start: int, length: int, count: int) -> list[tuple[int, int]]:
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


def _delta_chart(d: _Deltas, metric: str, max_bars: int, uid: str) -> str:
    """Per-query Δ, queries sorted by Δ: worse below zero, better above, unchanged as a band."""
    # Long: one SVG drawn element by element (axes, bars, band, labels); split, the shared geometry
    # would travel as a dozen arguments.
    delta = d.delta
    n = len(delta)
    width, height = 600, 190
    left, right, top, bottom = 52, 10, 12, 40
    pw, ph = width - left - right, height - top - bottom
    n_worse = int((delta < 0).sum())
    n_better = int((delta > 0).sum())
    n_same = n - n_worse - n_better
    # One unit for both sides; a side with no bars keeps a sliver, so zero stays visible.
    down = _nice(-float(delta[0])) if n_worse else 0.0
    up = _nice(float(delta[-1])) if n_better else 0.0
    largest = max(up, down) or 0.01
    up, down = up or largest * 0.15, down or largest * 0.15
    unit = ph / (up + down)
    mid = top + up * unit
    step = pw / n
    binned = n > max_bars
    desc = (
        f"{n} queries sorted by their change in {metric}: {n_worse} worse, {n_same} "
        f"unchanged, {n_better} better"
        + (f"; bars are groups of queries (their mean Δ), at most {max_bars}" if binned else "")
    )
    parts = [
        _svg_open(width, height, f"Per-query Δ of {metric}", desc, uid),
        f'<rect class="plot" x="{left}" y="{top}" width="{pw}" height="{ph}"/>',
    ]
    # The unchanged queries sit between the worse and the better ones: a band on the zero line.
    if n_same:
        parts.append(
            f'<rect class="band" x="{left + n_worse * step:.1f}" y="{mid - 5:.1f}" '
            f'width="{n_same * step:.1f}" height="10"><title>{n_same} queries unchanged '
            "(Δ = 0)</title></rect>"
        )
    cumulative = np.concatenate([[0.0], np.cumsum(delta)])
    for first, length, cls in ((0, n_worse, "worse"), (n_worse + n_same, n_better, "better")):
        if not length:
            continue
        if binned:
            budget = max(2, max_bars - (1 if n_same else 0))
            groups = _groups(first, length, round(budget * length / (n_worse + n_better)))
        else:
            groups = [(i, 1) for i in range(first, first + length)]
        parts.append(f'<g class="{cls}">')
        for start, size in groups:
            mean = float(cumulative[start + size] - cumulative[start]) / size
            bar = max(abs(mean) * unit, 1.0)
            y = mid - bar if mean > 0 else mid
            w = max(size * step - (0.6 if step * size > 2 else 0), 0.4)
            if size == 1:
                q, b, c, dq = d.row(start)
                tip = f"{q}: Δ {delta_text(dq)} ({b:.4f} → {c:.4f})"
            else:
                tip = (
                    f"queries {start + 1} to {start + size} of {n} by Δ: Δ from "
                    f"{delta_text(float(delta[start]))} to "
                    f"{delta_text(float(delta[start + size - 1]))}, "
                    f"mean {delta_text(mean)}"
                )
            parts.append(
                f'<rect x="{left + start * step:.1f}" y="{y:.1f}" width="{w:.1f}" '
                f'height="{bar:.1f}"><title>{esc(tip)}</title></rect>'
            )
        parts.append("</g>")
    parts.append(
        f'<line class="zero" x1="{left}" x2="{left + pw}" y1="{mid:.1f}" y2="{mid:.1f}"/>'
        f'<text class="tick" x="{left - 6}" y="{mid + 4:.1f}" text-anchor="end">0</text>'
    )
    if n_better:
        parts.append(
            f'<text class="tick" x="{left - 6}" y="{top + 8}" text-anchor="end">{up:+g}</text>'
        )
    if n_worse:
        parts.append(
            f'<text class="tick" x="{left - 6}" y="{top + ph}" text-anchor="end">{-down:+g}</text>'
        )
    # Counts under their segments, kept inside the plot when a segment is narrow.
    y_label = height - bottom + 16
    for count, word, offset in (
        (n_worse, "worse", 0),
        (n_same, "unchanged", n_worse),
        (n_better, "better", n_worse + n_same),
    ):
        if not count:
            continue
        half = 3.2 * len(f"{count:,} {word}")
        x = min(max(left + (offset + count / 2) * step, left + half), left + pw - half)
        parts.append(
            f'<text class="seg seg-{word}" x="{x:.1f}" y="{y_label}" text-anchor="middle">'
            f"{count:,} {word}</text>"
        )
    parts.append(
        f'<text class="axis-label" x="{left}" y="{height - 6}">worst</text>'
        f'<text class="axis-label" x="{left + pw}" y="{height - 6}" text-anchor="end">best</text>'
        f'<text class="axis-label" x="{left + pw / 2:.1f}" y="{height - 6}" '
        f'text-anchor="middle">queries, sorted by Δ {esc(metric)}'
        f"{' (binned)' if binned else ''}</text></svg>"
    )
    return "".join(parts)


def _hist_counts(values: FloatArray, lo: float, hi: float, bins: int) -> list[int]:
    position = np.clip(((values - lo) / (hi - lo) * bins).astype(np.int64), 0, bins - 1)
    counts: list[int] = np.bincount(position, minlength=bins).tolist()
    return counts


def _histogram(
    now: FloatArray, before: FloatArray | None, metric: str, uid: str
) -> tuple[str, list[tuple[float, float, int, int | None]]]:
    """Per-query values now (filled) and in the baseline (outlined), and the bins drawn.
    ``now`` and ``before`` hold finite values only."""
    everything = np.concatenate([now, before if before is not None else np.empty(0)])
    lo = min(0.0, float(everything.min())) if len(everything) else 0.0
    hi = max(1.0, float(everything.max())) if len(everything) else 1.0
    bins = HISTOGRAM_BINS
    edges = [lo + (hi - lo) * i / bins for i in range(bins + 1)]
    c_now = _hist_counts(now, lo, hi, bins)
    c_before = _hist_counts(before, lo, hi, bins) if before is not None else None
    top_count = max([1, *c_now, *(c_before or [])])
    width, height = 330, 190
    left, right, top, bottom = 40, 8, 12, 40
    pw, ph = width - left - right, height - top - bottom
    bw = pw / bins
    desc = f"{len(now)} queries now" + (
        f", {len(before)} in the baseline" if before is not None else ", no baseline values"
    )
    parts = [
        _svg_open(width, height, f"Histogram of per-query {metric}", desc, uid),
        f'<rect class="plot" x="{left}" y="{top}" width="{pw}" height="{ph}"/>',
    ]
    table = []
    for i in range(bins):
        x = left + i * bw
        last = i == bins - 1
        bracket = "]" if last else ")"
        span = f"[{edges[i]:.2f}, {edges[i + 1]:.2f}{bracket}"
        b = c_before[i] if c_before is not None else None
        tip = f"{metric} in {span}: {c_now[i]} now" + ("" if b is None else f", {b} baseline")
        parts.append(f"<g><title>{esc(tip)}</title>")
        if b is not None:
            h = b / top_count * ph
            parts.append(
                f'<rect class="hist-base" x="{x + 1:.1f}" y="{top + ph - h:.1f}" '
                f'width="{bw - 2:.1f}" height="{h:.1f}"/>'
            )
        h = c_now[i] / top_count * ph
        inset = bw * 0.22 if b is not None else 1
        parts.append(
            f'<rect class="hist-now" x="{x + inset:.1f}" y="{top + ph - h:.1f}" '
            f'width="{bw - 2 * inset:.1f}" height="{h:.1f}"/></g>'
        )
        table.append((edges[i], edges[i + 1], c_now[i], b))
    parts.append(
        f'<text class="tick" x="{left - 5}" y="{top + 4}" text-anchor="end">{top_count}</text>'
        f'<text class="tick" x="{left - 5}" y="{top + ph + 4}" text-anchor="end">0</text>'
        f'<text class="tick" x="{left}" y="{top + ph + 14}" text-anchor="middle">{lo:g}</text>'
        f'<text class="tick" x="{left + pw}" y="{top + ph + 14}" text-anchor="middle">'
        f"{hi:g}</text>"
        f'<text class="axis-label" x="{left + pw / 2:.1f}" y="{height - 6}" '
        f'text-anchor="middle">{esc(metric)} per query</text></svg>'
    )
    return "".join(parts), table


def _ci_plot(low: float, high: float, delta: float, scale: float, cls: str) -> str:
    """The CI of Δ as a whisker on a zero-centred axis shared by the table."""
    width, height, pad = 100, 16, 4
    half = (width - 2 * pad) / 2
    zero = pad + half

    def x(v: float) -> float:
        return zero + max(-1.0, min(1.0, v / scale)) * half

    return (
        f'<svg class="ci {cls}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'aria-hidden="true"><line class="zero" x1="{zero}" x2="{zero}" y1="1" y2="{height - 1}"/>'
        f'<line class="whisker" x1="{x(low):.1f}" x2="{x(high):.1f}" y1="8" y2="8"/>'
        f'<circle cx="{x(delta):.1f}" cy="8" r="3"/></svg>'
    )


# --------------------------------------------------------------------------------------------
# The page.


class _Ids:
    """Element ids made from counters, never from data (a query id may be anything)."""

    def __init__(self) -> None:
        self.n = 0

    def __call__(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}{self.n}"


def _metric_verdicts(entry: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for item in _list(_verdict(entry).get("metrics")):
        if isinstance(item, Mapping) and isinstance(item.get("metric"), str):
            out[item["metric"]] = item
    return out


def _thresholds(entry: Mapping[str, Any]) -> dict[str, Mapping[str, Any]]:
    out: dict[str, Mapping[str, Any]] = {}
    for item in _list(_map(entry.get("outcome")).get("thresholds")):
        if isinstance(item, Mapping) and isinstance(item.get("metric"), str):
            out[item["metric"]] = item
    for metric, bound in _map(entry.get("thresholds")).items():
        if metric not in out and _num(bound) is not None:
            out[metric] = {"metric": metric, "threshold": bound}
    return out


def _metrics(entry: Mapping[str, Any], preferred: Sequence[str] = ()) -> list[str]:
    """The evaluation's metrics, those configured first in their configured order."""
    return _ordered([m for m in _map(entry.get("metrics")) if isinstance(m, str)], preferred)


def _ordered(present: Sequence[str], preferred: Sequence[str]) -> list[str]:
    return [m for m in preferred if m in present] + [m for m in present if m not in preferred]


def _relevance_level(entry: Mapping[str, Any]) -> int:
    level = _int(_map(entry.get("semantics")).get("relevance_level"))
    return 1 if level is None else level


def _notes(entry: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(kind, text) of everything a reviewer should read about an evaluation."""
    out: list[tuple[str, str]] = []
    outcome = _map(entry.get("outcome"))
    verdict = _verdict(entry)
    for reason in _list(verdict.get("reasons")):
        out.append(("nc", f"not comparable: {_str(reason)}"))
    if _str(outcome.get("gate")):
        out.append(("gated", _str(outcome.get("gate"))))
    if _str(verdict.get("identity_change")):
        out.append(
            ("change", f"configuration changed since the baseline: {verdict['identity_change']}")
        )
    for item in _metric_verdicts(entry).values():
        if _str(item.get("note")):
            out.append(("note", f"{item['metric']} {item['note']}"))
    for key, what in (
        ("queries_only_in_baseline", "queries only in the baseline"),
        ("queries_only_in_current", "queries only in this run"),
    ):
        ids = [q for q in _list(verdict.get(key)) if isinstance(q, str)]
        if ids:
            shown = ", ".join(ids[:10]) + (" …" if len(ids) > 10 else "")
            out.append(("note", f"{what} ({len(ids)}): {shown}"))
    for note in _list(entry.get("notes")):
        if isinstance(note, str):
            out.append(("note", note))
    return out


class _Renderer:
    def __init__(self, document: Mapping[str, Any], worst: int, max_bars: int) -> None:
        self.doc = document
        self.worst = worst
        self.max_bars = max_bars
        self.ids = _Ids()
        self.entries = [e for e in _list(document.get("evaluations")) if isinstance(e, Mapping)]
        self.anchor = {id(e): f"ev{i}" for i, e in enumerate(self.entries, start=1)}
        settings = _map(document.get("settings"))
        self.preferred = [m for m in _list(settings.get("metrics")) if isinstance(m, str)]

    # -- header ---------------------------------------------------------------------------------

    def title(self) -> str:
        comparison = _map(self.doc.get("comparison"))
        if "reference" in comparison:
            runs = len(_list(comparison.get("runs")))
            return f"ragmetrics: {runs} runs compared with {_str(comparison.get('reference'))}"
        if comparison:
            return (
                f"ragmetrics: {_str(comparison.get('after'))} compared with "
                f"{_str(comparison.get('before'))}"
            )
        return "ragmetrics report"

    def header(self) -> str:
        doc = self.doc
        counts: dict[str, int] = {}
        for entry in self.entries:
            for category in _categories(entry):
                counts[category] = counts.get(category, 0) + 1
        chips = " ".join(
            _chip(c, f"{counts[c]} {_CATEGORIES[c][0]}") for c in _CATEGORIES if c in counts
        )
        facts = []
        if _str(doc.get("created")):
            facts.append(f"created {esc(doc['created'])}")
        if _str(doc.get("plugin_version")):
            facts.append(f"pytest-ragmetrics {esc(doc['plugin_version'])}")
        comparison = _map(doc.get("comparison"))
        if "reference" in comparison:
            facts.append(
                f"verdicts of every run against {_user(_str(comparison.get('reference')))}"
            )
        elif comparison:
            facts.append(
                f"verdicts of {_user(_str(comparison.get('after')))} against "
                f"{_user(_str(comparison.get('before')))}"
            )
        n = len(self.entries)
        return (
            f'<header><h1>{esc(self.title())}</h1><p class="facts">{" · ".join(facts)}</p>'
            f'<p class="verdict" id="verdict"><strong>{n} evaluation{"s" if n != 1 else ""}'
            f"</strong> {chips}</p>{self.headline()}{not_compared_html(comparison)}</header>"
        )

    def headline(self) -> str:
        """The problems in words: what a reviewer reads first."""
        items = []
        for entry in self.entries:
            categories = _categories(entry)
            if not set(categories) & set(_PROBLEMS):
                continue
            link = f'<a href="#{self.anchor[id(entry)]}">{_user(_label(entry))}</a>'
            lines = []
            verdicts = _metric_verdicts(entry)
            for metric in _metrics(entry, self.preferred):
                item = verdicts.get(metric, {})
                if item.get("status") in ("regressed", "lost"):
                    lines.append(f"<li>{self.regression_sentence(item)}</li>")
            for t in _thresholds(entry).values():
                if t.get("passed") is False:
                    lines.append(
                        f"<li><b>{esc(t['metric'])}</b> {_f(_num(t.get('value')))} is below its "
                        f"threshold {_f(_num(t.get('threshold')))}</li>"
                    )
            for reason in _list(_verdict(entry).get("reasons")):
                lines.append(f"<li>not comparable: {_user(_str(reason))}</li>")
            chips = " ".join(_chip(c) for c in categories if c in (*_PROBLEMS, "gated"))
            items.append(f"<li>{chips} {link}<ul>{''.join(lines)}</ul></li>")
        if not items:
            if not self.entries:
                return '<p class="allgood">No evaluations were recorded.</p>'
            return (
                '<p class="allgood">Nothing regressed, fell below a threshold or became '
                "not comparable.</p>"
            )
        return f'<ul class="problems">{"".join(items)}</ul>'

    @staticmethod
    def regression_sentence(item: Mapping[str, Any]) -> str:
        base, now, delta = (
            _num(item.get("baseline")),
            _num(item.get("current")),
            _num(item.get("delta")),
        )
        text = f"<b>{esc(item['metric'])}</b> "
        lost = _int(item.get("queries_lost"))
        if item.get("status") == "lost" and lost:
            text += f"lost its value on {lost:,} queries that had one in the baseline; "
        text += f"{_f(base)} → {_f(now)} (Δ {_signed(delta)}"
        ci = _list(item.get("ci95"))
        if len(ci) == 2 and _num(ci[0]) is not None and _num(ci[1]) is not None:
            text += f", 95% CI [{_signed(_num(ci[0]))}, {_signed(_num(ci[1]))}]"
        p = _num(item.get("p_value"))
        if p is not None:
            text += f", p = {p:.4f}"
        text += ")"
        worse, n = _int(item.get("queries_worse")), _queries_compared(item)
        if worse is not None and n:
            text += f"; {worse:,} of {n:,} queries worse"
        return text

    # -- summary table --------------------------------------------------------------------------

    def matrix(self, entries: Sequence[Mapping[str, Any]], scale: float) -> str:
        """Evaluations as rows, metrics as columns: the layer at a glance."""
        columns = _ordered(
            list(dict.fromkeys(m for e in entries for m in _metrics(e))), self.preferred
        )
        head = "".join(f"<th>{esc(m)}</th>" for m in columns)
        rows = []
        for entry in entries:
            anchor = self.anchor[id(entry)]
            verdicts = _metric_verdicts(entry)
            thresholds = _thresholds(entry)
            metrics = _map(entry.get("metrics"))
            chips = " ".join(_chip(c) for c in _categories(entry))
            cells = [
                f'<th scope="row"><a href="#{anchor}">{_label_html(entry)}</a><br>{chips}</th>'
            ]
            for metric in columns:
                if metric not in metrics:
                    cells.append("<td></td>")
                    continue
                cells.append(
                    _matrix_cell(
                        metric,
                        _num(metrics[metric]),
                        verdicts.get(metric, {}),
                        thresholds.get(metric),
                        scale,
                    )
                )
            rows.append(f"<tr>{''.join(cells)}</tr>")
        return (
            f'<div class="wide"><table class="matrix"><thead><tr><th>evaluation</th>{head}</tr>'
            f"</thead><tbody>{''.join(rows)}</tbody></table></div>"
            f'<p class="hint">Each cell: the value now; Δ against the baseline with its 95% '
            f"bootstrap CI, drawn on one axis ±{scale:g} around zero (a whisker clear of the "
            "line is a significant change); ▼ regressed, ▲ improved beyond the tolerance; the "
            "threshold, ✗ when missed.</p>"
        )

    def summary(self, entries: Sequence[Mapping[str, Any]]) -> str:
        scale = 0.0
        for entry in entries:
            for item in _metric_verdicts(entry).values():
                values = [_num(item.get("delta"))] + [_num(v) for v in _list(item.get("ci95"))]
                scale = max([scale, *(abs(v) for v in values if v is not None)])
        scale = _nice(scale or 0.01)
        head = (
            "<thead><tr><th>evaluation</th><th>metric</th><th class=num>current</th>"
            "<th class=num>baseline</th><th class=num>Δ</th>"
            f'<th title="95% bootstrap CI of Δ; axis ±{scale:g}">95% CI of Δ</th>'
            "<th class=num>p</th><th class=num title='queries worse / unchanged / better'>"
            "queries \u2212/=/+</th><th>tolerance</th><th>threshold</th><th>status</th>"
            "</tr></thead>"
        )
        rows = []
        for entry in entries:
            label = _label_html(entry)
            anchor = self.anchor[id(entry)]
            verdicts = _metric_verdicts(entry)
            thresholds = _thresholds(entry)
            metrics = _metrics(entry, self.preferred)
            status = _categories(entry)
            if not metrics:
                rows.append(
                    f'<tr><td><a href="#{anchor}">{label}</a></td><td colspan=9></td>'
                    f"<td>{' '.join(_chip(c) for c in status)}</td></tr>"
                )
            for i, metric in enumerate(metrics):
                item = verdicts.get(metric, {})
                rows.append(
                    self.summary_row(
                        entry,
                        metric,
                        item,
                        thresholds.get(metric),
                        scale,
                        first=i == 0,
                        label=label,
                        anchor=anchor,
                    )
                )
        return self.matrix(entries, scale) + (
            '<details class="numbers table"><summary>Every number, one row per evaluation and '
            "metric (click a column heading to sort)</summary>"
            f'<div class="wide"><table class="summary sortable">{head}<tbody>{"".join(rows)}'
            "</tbody></table></div></details>"
        )

    def summary_row(
        self,
        entry: Mapping[str, Any],
        metric: str,
        item: Mapping[str, Any],
        threshold: Mapping[str, Any] | None,
        scale: float,
        *,
        first: bool,
        label: str,
        anchor: str,
    ) -> str:
        current = _num(_map(entry.get("metrics")).get(metric))
        status = _str(item.get("status"))
        cls = {"regressed": "worse", "lost": "worse", "improved": "better"}.get(status, "")
        delta = _num(item.get("delta"))
        ci = [_num(v) for v in _list(item.get("ci95"))]
        if len(ci) == 2 and ci[0] is not None and ci[1] is not None and delta is not None:
            ci_cell = (
                f'<td class="cicell" data-value="{ci[0]!r}">'
                f"{_ci_plot(ci[0], ci[1], delta, scale, cls or 'same')}"
                f'<span class="citext">[{_signed(ci[0])}, {_signed(ci[1])}]</span></td>'
            )
        else:
            ci_cell = "<td></td>"
        worse, same, better = (
            _int(item.get("queries_worse")),
            _int(item.get("queries_same")),
            _int(item.get("queries_better")),
        )
        moved = (
            f'<td class="num" data-value="{worse}">{worse:,} / {same:,} / {better:,}</td>'
            if worse is not None and same is not None and better is not None
            else "<td></td>"
        )
        threshold_cell = "<td></td>"
        if threshold is not None:
            bound = _num(threshold.get("threshold"))
            passed = threshold.get("passed")
            mark = {True: " ✓", False: " ✗"}.get(passed, "") if isinstance(passed, bool) else ""
            tcls = ' class="worse"' if passed is False else ""
            threshold_cell = f"<td{tcls}>≥ {_f(bound)}{mark}</td>"
        if item:
            status_cell = _metric_chip(status)
        else:
            status_cell = " ".join(_chip(c) for c in _categories(entry))
        row_cls = "first" if first else "cont"
        return (
            f'<tr class="{row_cls}"><td><a class="l" href="#{anchor}">{label}</a></td>'
            f"<td>{esc(metric)}</td>{_num_cell(current)}"
            f"{_num_cell(_num(item.get('baseline')))}"
            f"{_num_cell(delta, _signed(delta) if delta is not None else '', cls)}"
            f"{ci_cell}{_num_cell(_num(item.get('p_value')))}{moved}"
            f"<td>{esc(_str(item.get('tolerance')))}</td>{threshold_cell}"
            f'<td data-value="{esc(status)}">{status_cell}</td></tr>'
        )

    # -- one evaluation ---------------------------------------------------------------------------

    def evaluation(self, entry: Mapping[str, Any]) -> str:
        anchor = self.anchor[id(entry)]
        categories = _categories(entry)
        is_open = " open" if set(categories) & set(_PROBLEMS) else ""
        chips = " ".join(_chip(c) for c in categories)
        parts = [
            f'<details class="evaluation" id="{anchor}"{is_open}><summary><h3>'
            f"{_user(_label(entry))}</h3> {chips}</summary>",
            self.identity(entry),
        ]
        notes = _notes(entry)
        if notes:
            parts.append(
                '<ul class="notes">'
                + "".join(f'<li class="n-{kind}">{_user(text)}</li>' for kind, text in notes)
                + "</ul>"
            )
        missing = []
        if not isinstance(entry.get("baseline_per_query"), Mapping):
            missing.append(
                "the baseline's per-query values (<code>baseline_per_query</code>): no per-query "
                "Δ chart and no baseline histogram"
                + (
                    "; the comparison's most regressed queries are listed instead"
                    if any(most_regressed(entry, m) for m in _metrics(entry, self.preferred))
                    else ""
                )
            )
        records = _map(entry.get("queries"))
        if not records:
            missing.append(
                "per-query records (<code>queries</code>): no query texts, rankings or answers"
            )
        if missing and _str(_verdict(entry).get("status")) not in ("", "new"):
            parts.append('<p class="missing">Not in this report: ' + "; ".join(missing) + ".</p>")
        values = PerQueryValues(entry)
        detail_ids = detail_query_ids(entry, worst=self.worst, values=values)
        card_of = {q: f"{anchor}-q{i}" for i, q in enumerate(detail_ids, start=1)}
        for metric in _metrics(entry, self.preferred):
            parts.append(self.metric_block(entry, metric, values, card_of))
        if detail_ids:
            problem = bool(set(categories) & set(_PROBLEMS))
            parts.append(self.cards(entry, detail_ids, card_of, open_first=problem))
        parts.append("</details>")
        return "".join(parts)

    def identity(self, entry: Mapping[str, Any]) -> str:
        rows: list[tuple[str, str]] = []
        identity = _map(entry.get("identity"))
        for key, value in identity.items():
            rows.append((str(key), _flat(value)))
        dataset = _map(entry.get("dataset"))
        if dataset:
            bits = [_str(dataset.get("name"))]
            if _str(dataset.get("split")):
                bits.append(f"split {dataset['split']}")
            for key in ("documents", "queries"):
                if _int(dataset.get(key)) is not None:
                    bits.append(f"{dataset[key]:,} {key}")
            if _str(dataset.get("source")):
                bits.append(f"source {dataset['source']}")
            rows.append(("dataset", ", ".join(b for b in bits if b)))
            prints = _map(dataset.get("fingerprints"))
            if prints:
                # Whole: a reviewer compares them with another run's.
                rows.append(
                    ("fingerprints", "; ".join(f"{k} {_str(v)}" for k, v in prints.items()))
                )
        if _int(entry.get("k")) is not None:
            rows.append(("k", str(entry["k"])))
        elif "k" in entry and entry.get("layer") == "retrieval":
            rows.append(("k", "unknown (not recorded; a TREC run file has none)"))
        semantics = _map(entry.get("semantics"))
        if semantics:
            rows.append(("semantics", _flat(semantics)))
        n = _int(entry.get("num_queries"))
        if n is not None:
            rows.append(("queries evaluated", f"{n:,}"))
        rows.append(("layer", _str(entry.get("layer"))))
        body = "".join(f"<dt>{esc(k)}</dt><dd>{_user(v)}</dd>" for k, v in rows)
        return f'<dl class="identity">{body}</dl>'

    def metric_block(
        self,
        entry: Mapping[str, Any],
        metric: str,
        values: PerQueryValues,
        card_of: Mapping[str, str],
    ) -> str:
        verdict = _metric_verdicts(entry).get(metric, {})
        current = _num(_map(entry.get("metrics")).get(metric))
        heading = f"<h4>{esc(metric)} <span class=value>{_f(current)}</span>"
        if verdict:
            heading += (
                f" <span class=was>baseline {_f(_num(verdict.get('baseline')))}, Δ "
                f"{_signed(_num(verdict.get('delta')))}</span> "
                f"{_metric_chip(_str(verdict.get('status')))}"
            )
        parts = [f'<section class="metric">{heading}</h4><div class="charts">']
        deltas = _Deltas.of(values, metric)
        now = _finite(values.now(metric))
        before = _finite(values.baseline(metric)) if values.has_baseline else None
        numbers = []
        n = len(deltas.delta)
        if n and not deltas.delta.any():
            parts.append(f'<p class="empty">All {n:,} queries unchanged.</p>')
        elif n:
            uid = self.ids("c")
            parts.append(f"<figure>{_delta_chart(deltas, metric, self.max_bars, uid)}</figure>")
            numbers.append(_delta_numbers(deltas.delta))
        elif before is not None:
            parts.append('<p class="empty">No query has a value in both runs.</p>')
        hist, bins = _histogram(now, before, metric, self.ids("h"))
        parts.append(
            f"<figure>{hist}<figcaption>{_legend(before is not None)}</figcaption></figure>"
        )
        numbers.append(_hist_numbers(metric, bins, before is not None))
        parts.append("</div>")
        parts.append(
            '<details class="numbers"><summary>The numbers behind these charts</summary>'
            + "".join(numbers)
            + "</details>"
        )
        parts.append(self.query_tables(entry, metric, values, deltas, card_of))
        parts.append("</section>")
        return "".join(parts)

    def query_tables(
        self,
        entry: Mapping[str, Any],
        metric: str,
        values: PerQueryValues,
        deltas: _Deltas,
        card_of: Mapping[str, str],
    ) -> str:
        records = _map(entry.get("queries"))
        retrieval = entry.get("layer") == "retrieval"
        first_now = _map(_map(entry.get("details")).get("first_relevant_rank"))
        listed = {_str(m.get("query")): m for m in most_regressed(entry, metric)}
        level = _relevance_level(entry)
        out = []
        Row = tuple[str, float | None, float | None, float | None]
        table_rows: Sequence[Row]
        best: Sequence[Row]
        delta = deltas.delta
        if len(delta):
            n_worse, n_better = int((delta < 0).sum()), int((delta > 0).sum())
            table_rows = [deltas.row(i) for i in range(min(n_worse, self.worst))]
            best = [deltas.row(len(delta) - 1 - i) for i in range(min(n_better, self.worst))]
            title = f"Most regressed queries ({len(table_rows)} of {n_worse:,} worse)"
        elif listed:
            table_rows = [(q, None, None, _num(m.get("delta"))) for q, m in listed.items()][
                : self.worst
            ]
            best = []
            title = "Most regressed queries (from the comparison; per-query baseline values absent)"
        elif not _verdict(entry) or _str(_verdict(entry).get("status")) == "new":
            now = values.now(metric)
            table_rows = [
                (values.ids[i], None, float(now[i]), None)
                for i in values.lowest(metric, self.worst).tolist()
            ]
            best = []
            title = "Lowest-scoring queries (no baseline to compare with)"
        else:
            return ""
        if table_rows:
            out.append(f"<h5>{esc(title)}</h5>")
            out.append(
                self.query_table(table_rows, records, card_of, first_now, listed, retrieval, level)
            )
        if best:
            out.append(f"<h5>Most improved queries ({len(best)} of {n_better:,} better)</h5>")
            out.append(
                self.query_table(best, records, card_of, first_now, listed, retrieval, level)
            )
        return "".join(out)

    def query_table(
        self,
        rows: Sequence[tuple[str, float | None, float | None, float | None]],
        records: Mapping[str, Any],
        card_of: Mapping[str, str],
        first_now: Mapping[str, Any],
        listed: Mapping[str, Mapping[str, Any]],
        retrieval: bool,
        level: int,
    ) -> str:
        texts = {qid: _str(_map(records.get(qid)).get("text")) for qid, *_ in rows}
        moves = {
            qid: _rank_move(qid, records, first_now, listed, level) if retrieval else ""
            for qid, *_ in rows
        }
        # Columns with nothing to say are left out (no records: no texts).
        with_text, with_move = any(texts.values()), any(moves.values())
        head = (
            "<tr><th>query</th>"
            + ("<th>text</th>" if with_text else "")
            + "<th class=num>baseline</th><th class=num>now</th><th class=num>Δ</th>"
            + ("<th>first relevant rank</th>" if with_move else "")
            + "</tr>"
        )
        body = []
        for qid, before, now, delta in rows:
            ident = _user(qid)
            if qid in card_of:
                ident = f'<a href="#{card_of[qid]}">{ident}</a>'
            cls = "worse" if (delta or 0) < 0 else "better" if (delta or 0) > 0 else ""
            cells = f"<td>{ident}</td>"
            if with_text:
                text = texts[qid]
                cells += f"<td class=qtext>{_user(_preview(text)) if text else ''}</td>"
            cells += (
                f"{_num_cell(before)}{_num_cell(now)}"
                f"{_num_cell(delta, _signed(delta) if delta is not None else '', cls)}"
            )
            if with_move:
                cells += f"<td>{esc(moves[qid])}</td>"
            body.append(f"<tr>{cells}</tr>")
        return (
            f'<table class="queries sortable"><thead>{head}</thead>'
            f"<tbody>{''.join(body)}</tbody></table>"
        )

    # -- query cards ----------------------------------------------------------------------------

    def cards(
        self,
        entry: Mapping[str, Any],
        ids: Sequence[str],
        card_of: Mapping[str, str],
        *,
        open_first: bool,
    ) -> str:
        """A closed section per query (the worst one open when the evaluation failed)."""
        records = _map(entry.get("queries"))
        per_query = _map(entry.get("per_query"))
        base_pq = _map(entry.get("baseline_per_query"))
        metrics = _metrics(entry, self.preferred)
        level = _relevance_level(entry)
        out = [f'<h4 class="cards-title">Queries in detail ({len(ids)})</h4>']
        for position, qid in enumerate(ids):
            record = _map(records.get(qid))
            text = _str(record.get("text"))
            values = []
            for metric in metrics:
                now = _num(_map(per_query.get(qid)).get(metric))
                before = _num(_map(base_pq.get(qid)).get(metric)) if base_pq else None
                delta = None if now is None or before is None else now - before
                cls = "worse" if (delta or 0) < 0 else "better" if (delta or 0) > 0 else ""
                values.append(
                    f"<tr><td>{esc(metric)}</td>{_num_cell(before)}{_num_cell(now)}"
                    f"{_num_cell(delta, _signed(delta) if delta is not None else '', cls)}</tr>"
                )
            body = [
                f'<details class="query" id="{card_of[qid]}"'
                f"{' open' if open_first and position == 0 else ''}><summary>{_user(qid)}"
                f"{' — ' + _user(_preview(text)) if text else ''}</summary>"
            ]
            if text:
                body.append(f'<p class="qfull">{_user(text)}</p>')
            body.append(
                '<table class="qmetrics"><thead><tr><th>metric</th><th class=num>baseline</th>'
                f"<th class=num>now</th><th class=num>Δ</th></tr></thead><tbody>{''.join(values)}"
                "</tbody></table>"
            )
            if not record:
                body.append(
                    '<p class="missing">No record of this query in the report '
                    "(<code>queries</code>).</p>"
                )
            elif entry.get("layer") == "answer":
                body.append(_answer_detail(record))
            else:
                body.append(_ranking_detail(record, level))
            body.append("</details>")
            out.append("".join(body))
        return "".join(out)

    # -- the run --------------------------------------------------------------------------------

    def run_section(self) -> str:
        settings = _map(self.doc.get("settings"))
        rows = [(str(k), _flat(v)) for k, v in settings.items()]
        if _str(self.doc.get("plugin_version")):
            rows.insert(0, ("plugin version", self.doc["plugin_version"]))
        comparison = _map(self.doc.get("comparison"))
        for key, value in comparison.items():
            if key != "not_compared":  # named in the header
                rows.append((f"compare: {key}", _flat(value)))
        summary = _map(self.doc.get("summary"))
        update = _map(summary.get("baseline_update"))
        if update:
            rows.append(("baseline update", _flat(update)))
        stale = _list(summary.get("stale_baseline_entries"))
        if stale:
            shown = "; ".join(" ".join(str(x) for x in _list(s)) for s in stale[:20]) + (
                " …" if len(stale) > 20 else ""
            )
            rows.append((f"stale baseline entries ({len(stale)})", shown))
        body = "".join(f"<dt>{esc(k)}</dt><dd>{_user(v)}</dd>" for k, v in rows)
        return f'<section id="run"><h2>The run</h2><dl class="identity">{body}</dl></section>'

    def render(self) -> str:
        sections = []
        toc = []
        for layer in LAYERS:
            heading = LAYER_TITLES[layer]
            chosen = [e for e in self.entries if e.get("layer") == layer]
            if not chosen:
                continue
            title = heading[0].upper() + heading[1:]
            toc.append(f'<a href="#layer-{layer}">{esc(title)} ({len(chosen)})</a>')
            sections.append(
                f'<section class="layer" id="layer-{layer}"><h2>{esc(title)}</h2>'
                + self.summary(chosen)
                + "".join(self.evaluation(e) for e in chosen)
                + "</section>"
            )
        toc.append('<a href="#run">The run</a>')
        nav = f'<nav>{" · ".join(toc)} · <button type="button" id="expand">open all</button></nav>'
        body = self.header() + nav + "<main>" + "".join(sections) + self.run_section() + "</main>"
        footer = (
            "<footer>Made by pytest-ragmetrics from the JSON report. One file, no network: "
            "everything is in this page.</footer>"
        )
        return _page(self.title(), body + footer)


def _label_html(entry: Mapping[str, Any]) -> str:
    """The label, allowed to wrap after '::' and '/' rather than inside a word."""
    text = esc(_label(entry)).replace("::", "::<wbr>").replace("/", "/<wbr>")
    return f"<bdi>{text}</bdi>"


def _matrix_cell(
    metric: str,
    value: float | None,
    item: Mapping[str, Any],
    threshold: Mapping[str, Any] | None,
    scale: float,
) -> str:
    status = _str(item.get("status"))
    cls = {"regressed": "worse", "lost": "worse", "improved": "better"}.get(status, "same")
    delta = _num(item.get("delta"))
    ci = [_num(v) for v in _list(item.get("ci95"))]
    symbol = {"regressed": "▼ ", "lost": "▼ ", "improved": "▲ "}.get(status, "")
    tip = [f"{metric} {_f(value)}"]
    lines = [f'<span class="v">{symbol}{_f(value)}</span>']
    if delta is not None:
        text = f"Δ {_signed(delta)}"
        tip.append(f"baseline {_f(_num(item.get('baseline')))}, Δ {_signed(delta)}")
        if len(ci) == 2 and ci[0] is not None and ci[1] is not None:
            lines.append(_ci_plot(ci[0], ci[1], delta, scale, cls))
            tip.append(f"95% CI [{_signed(ci[0])}, {_signed(ci[1])}]")
        lines.append(f'<span class="d">{text}</span>')
        p = _num(item.get("p_value"))
        if p is not None:
            tip.append(f"p = {p:.4f}")
    if status:
        tip.append({"ok": "within tolerance"}.get(status, status))
    missed = False
    if threshold is not None:
        bound = _num(threshold.get("threshold"))
        missed = threshold.get("passed") is False
        lines.append(f'<span class="t">min {_f(bound, 2)}{" ✗" if missed else ""}</span>')
        tip.append(f"threshold {_f(bound)}{' missed' if missed else ''}")
    klass = f"cell {cls}{' missed' if missed else ''}"
    return f'<td class="{klass}" title="{esc("; ".join(tip))}">{"<br>".join(lines)}</td>'


def _queries_compared(item: Mapping[str, Any]) -> int:
    return sum(_int(item.get(k)) or 0 for k in ("queries_worse", "queries_same", "queries_better"))


def _flat(value: Any) -> str:
    """A short one-line text of a JSON value (identities, settings)."""
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        return ", ".join(f"{k}: {_flat(v)}" for k, v in value.items()) or "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_flat(v) for v in value) + "]"
    if value is None:
        return "—"
    return json.dumps(value)


def _legend(with_baseline: bool) -> str:
    now = '<span class="key key-now"></span> now'
    if not with_baseline:
        return now + " (no baseline per-query values)"
    return now + ' <span class="key key-base"></span> baseline'


def _finite(values: FloatArray) -> FloatArray:
    return values[~np.isnan(values)]


def _delta_numbers(deltas: FloatArray) -> str:
    worse = int((deltas < 0).sum())
    better = int((deltas > 0).sum())
    cells = [
        ("queries", f"{len(deltas):,}"),
        ("worse", f"{worse:,}"),
        ("unchanged", f"{len(deltas) - worse - better:,}"),
        ("better", f"{better:,}"),
        ("mean Δ", _signed(float(deltas.mean()))),
    ]
    quantiles = (0, 0.1, 0.25, 0.5, 0.75, 0.9, 1)
    names = ("min", "10%", "25%", "median", "75%", "90%", "max")
    for name, value in zip(names, np.quantile(deltas, quantiles).tolist(), strict=True):
        cells.append((f"Δ {name}", _signed(value)))
    head = "".join(f"<th>{esc(k)}</th>" for k, _ in cells)
    row = "".join(f"<td class=num>{v}</td>" for _, v in cells)
    return (
        '<table class="numbers-delta"><caption>Per-query Δ (queries with a value in both runs)'
        f"</caption><thead><tr>{head}</tr></thead><tbody><tr>{row}</tr></tbody></table>"
    )


def _hist_numbers(
    metric: str, bins: Sequence[tuple[float, float, int, int | None]], with_baseline: bool
) -> str:
    head = (
        "<tr><th>range</th><th class=num>now</th>"
        + ("<th class=num>baseline</th>" if with_baseline else "")
        + "</tr>"
    )
    body = []
    for i, (lo, hi, now, before) in enumerate(bins):
        bracket = "]" if i == len(bins) - 1 else ")"
        cells = f"<td>[{lo:.2f}, {hi:.2f}{bracket}</td><td class=num>{now:,}</td>"
        if with_baseline:
            cells += f"<td class=num>{before:,}</td>"
        body.append(f"<tr>{cells}</tr>")
    return (
        f'<table class="numbers-hist"><caption>Queries per range of {esc(metric)}</caption>'
        f"<thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"
    )


def _first_relevant(ranking: Sequence[Any], relevant: Mapping[str, Any], level: int) -> int:
    for rank, row in enumerate(ranking, start=1):
        doc, grade = row[0], row[2]
        if doc in relevant or (grade is not None and grade >= level):
            return rank
    return 0


def _rank_move(
    qid: str,
    records: Mapping[str, Any],
    first_now: Mapping[str, Any],
    listed: Mapping[str, Mapping[str, Any]],
    level: int,
) -> str:
    """'1 → 3' for the first relevant document's rank before and now (— when unknown)."""
    item = listed.get(qid, {})
    before, after = _int(item.get("rank_before")), _int(item.get("rank_after"))
    if (before or 0) < 0 or (after or 0) < 0:
        return ""  # no ranks: an answer-layer evaluation
    record = _map(records.get(qid))
    relevant = _map(record.get("relevant"))
    if before is None and isinstance(record.get("baseline_ranking"), list):
        before = _first_relevant(_rows(record["baseline_ranking"]), relevant, level)
    if after is None:
        after = _int(first_now.get(qid))
    if before is None and after is None:
        return ""

    def text(rank: int | None) -> str:
        return "?" if rank is None else "not retrieved" if rank == 0 else str(rank)

    return f"{text(before)} → {text(after)}"


def _rows(ranking: Any) -> list[tuple[str, float | None, int | None]]:
    """Ranking rows [doc, score, grade] that have the right shape; others are dropped."""
    out = []
    for row in _list(ranking):
        if isinstance(row, list) and row and isinstance(row[0], str):
            score = _num(row[1]) if len(row) > 1 else None
            grade = _int(row[2]) if len(row) > 2 else None
            out.append((row[0], score, grade))
    return out


def _ranking_detail(record: Mapping[str, Any], level: int) -> str:
    """The baseline's and this run's rankings side by side, rank by rank."""
    # Long: one table of a ranking before and after, column by column; split, its columns would be
    # spread apart.
    now = _rows(record.get("ranking"))
    before = _rows(record.get("baseline_ranking")) if "baseline_ranking" in record else None
    titles = {k: v for k, v in _map(record.get("titles")).items() if isinstance(v, str)}
    relevant = {k: _int(v) for k, v in _map(record.get("relevant")).items()}
    grades = {doc: grade for doc, _, grade in (before or []) + now if grade is not None}
    grades.update({k: v for k, v in relevant.items() if v is not None})
    rank_before = {doc: i for i, (doc, _, _) in enumerate(before or [], start=1)}
    rank_now = {doc: i for i, (doc, _, _) in enumerate(now, start=1)}

    def document(row: tuple[str, float | None, int | None] | None) -> str:
        if row is None:
            return "<td></td>"
        doc, score, _ = row
        grade = grades.get(doc)
        rel = grade is not None and grade >= level
        title = titles.get(doc, "")
        judgment = "unjudged" if grade is None else f"{'✔ ' if rel else ''}grade {grade}"
        cls = "rel" if rel else "unjudged" if grade is None else "judged"
        return (
            f'<td class="doc {cls}"><b>{_user(doc)}</b>'
            f"{' ' + _user(title) if title else ''} <span class=j>{esc(judgment)}</span>"
            f"{f' <span class=s>{score:.3f}</span>' if score is not None else ''}</td>"
        )

    def move(doc: str, rank: int, other: Mapping[str, int], forward: bool) -> str:
        """Where ``doc`` went (baseline side) or came from (this run's side)."""
        grade = grades.get(doc)
        rel = grade is not None and grade >= level
        was = other.get(doc)
        if was is None:
            text, sign = ("out of the top" if forward else "new"), (-1 if forward else 1)
        elif was == rank:
            text, sign = "=", 0
        elif forward:
            text, sign = f"→ {was}", (1 if was < rank else -1)
        else:
            arrow = "▲" if was > rank else "▼"
            text, sign = f"{arrow}{abs(was - rank)} (was {was})", (1 if was > rank else -1)
        cls = " better" if rel and sign > 0 else " worse" if rel and sign < 0 else ""
        return f'<td class="move{cls}">{esc(text)}</td>'

    depth = max(len(now), len(before or []))
    body = []
    for i in range(depth):
        cells = [f"<td class=num>{i + 1}</td>"]
        if before is not None:
            row = before[i] if i < len(before) else None
            cells.append(document(row))
            cells.append(move(row[0], i + 1, rank_now, True) if row else "<td></td>")
        row = now[i] if i < len(now) else None
        cells.append(document(row))
        if before is not None:
            cells.append(move(row[0], i + 1, rank_before, False) if row else "<td></td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    head = "<th class=num>rank</th>"
    if before is not None:
        head += "<th>baseline</th><th>went to</th>"
    head += "<th>now</th>" + ("<th>came from</th>" if before is not None else "")
    parts = [
        f'<table class="ranking"><thead><tr>{head}</tr></thead><tbody>{"".join(body)}'
        "</tbody></table>"
    ]
    if before is None:
        parts.append(
            '<p class="missing">The baseline\'s ranking of this query is not in the '
            "report (<code>baseline_ranking</code>).</p>"
        )
    missed = [d for d, g in relevant.items() if g is not None and g >= level and d not in rank_now]
    if missed:
        shown = ", ".join(
            f"{_user(d)} (grade {relevant[d]}"
            + (f", was rank {rank_before[d]}" if d in rank_before else "")
            + ")"
            for d in missed[:20]
        )
        parts.append(
            f'<p class="missed">Relevant but not in the top {len(now)} now: {shown}'
            + (" …" if len(missed) > 20 else "")
            + "</p>"
        )
    return "".join(parts)


def _claims(claims: Any) -> str:
    items = []
    for claim in _list(claims):
        if not isinstance(claim, Mapping):
            continue
        supported = claim.get("supported")
        if supported is True:
            chip = '<span class="chip c-improved">✓ supported</span>'
        elif supported is False:
            chip = '<span class="chip c-regressed">✗ not supported</span>'
        else:
            chip = '<span class="chip c-none">? unjudged</span>'
        evidence = [str(e) for e in _list(claim.get("evidence")) if isinstance(e, (str, int))]
        extra = ""
        if evidence:
            extra += (
                " <span class=evidence>evidence: "
                + ", ".join(_user(e) for e in evidence)
                + "</span>"
            )
        score = _num(claim.get("score"))
        if score is not None:
            extra += f" <span class=evidence>score {score:.3f}</span>"
        items.append(f"<li>{chip} {_user(_str(claim.get('text')))}{extra}</li>")
    if not items:
        return '<p class="empty">No claims.</p>'
    return f'<ul class="claims">{"".join(items)}</ul>'


def _answer_detail(record: Mapping[str, Any]) -> str:
    parts = ['<div class="rankings">']
    if "baseline_answer" in record or "baseline_claims" in record:
        parts.append(
            f"<div><h5>Baseline answer</h5><blockquote>{_user(_str(record.get('baseline_answer')))}"
            f"</blockquote>{_claims(record.get('baseline_claims'))}</div>"
        )
    parts.append(
        f"<div><h5>Answer now</h5><blockquote>{_user(_str(record.get('answer')))}</blockquote>"
        f"{_claims(record.get('claims'))}</div></div>"
    )
    if "baseline_answer" not in record:
        parts.append(
            '<p class="missing">The baseline\'s answer is not in the report '
            "(<code>baseline_answer</code>).</p>"
        )
    return "".join(parts)


# --------------------------------------------------------------------------------------------
# Page shell: CSS, JS, and a Content-Security-Policy that permits only these two inline blocks.

_CSS = """
:root{color-scheme:light dark;--fg:#1f2328;--muted:#59636e;--bg:#fff;--panel:#f6f8fa;
--line:#d1d9e0;--worse:#b84a00;--worse-bar:#d55e00;--worse-bg:#fde8d9;--better:#005f99;
--better-bar:#0072b2;--better-bg:#dcebf7;--nc:#7d3c6f;--nc-bg:#f5e3f0;--ok-bg:#eaeef2;
--band:#c9d1d9;--base:#8c959f;--rel-bg:#e6f4ea;--rel:#1a7f37}
@media screen and (prefers-color-scheme:dark){:root{--fg:#e6edf3;--muted:#9198a1;--bg:#0d1117;
--panel:#161b22;--line:#30363d;--worse:#ff9e5e;--worse-bar:#e8773a;--worse-bg:#3d2416;
--better:#79c0ff;--better-bar:#56b4e9;--better-bg:#13283d;--nc:#e7a6d6;--nc-bg:#3a2236;
--ok-bg:#21262d;--band:#3d444d;--base:#8b949e;--rel-bg:#12261b;--rel:#56d364}}
*{box-sizing:border-box}
body{margin:0 auto;max-width:1240px;padding:16px 24px 40px;color:var(--fg);background:var(--bg);
font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
h1{font-size:22px;margin:4px 0}h2{font-size:19px;margin:28px 0 8px;padding-bottom:4px;
border-bottom:1px solid var(--line)}h3{display:inline;font-size:15px;margin:0}
h4{font-size:14px;margin:18px 0 6px}h5{font-size:13px;margin:12px 0 4px;color:var(--muted)}
a{color:var(--better)}code{font-size:12px}
.facts,.hint,footer{color:var(--muted);font-size:12px}
.verdict{font-size:15px;margin:10px 0}.allgood{font-size:15px}
.chip{display:inline-block;padding:0 7px;border-radius:10px;font-size:12px;font-weight:600;
white-space:nowrap;background:var(--ok-bg);border:1px solid var(--line)}
.c-regressed,.c-below{background:var(--worse-bg);color:var(--worse);border-color:var(--worse)}
.c-improved{background:var(--better-bg);color:var(--better);border-color:var(--better)}
.c-nc{background:var(--nc-bg);color:var(--nc);border-color:var(--nc)}
.c-new{background:transparent;border-style:dashed}.c-gated,.c-none{color:var(--muted)}
.problems{padding-left:18px;margin:6px 0}.problems>li{margin:6px 0}
.problems ul{margin:2px 0;padding-left:20px}
[id]{scroll-margin-top:44px}
nav{position:sticky;top:0;background:var(--bg);padding:6px 0;border-bottom:1px solid var(--line);
z-index:1}nav button{font:inherit;font-size:12px}
table{border-collapse:collapse;margin:6px 0}.wide{overflow-x:auto}
th,td{padding:3px 7px;text-align:left;
vertical-align:top;border-bottom:1px solid var(--line)}
th{font-weight:600;font-size:12px;color:var(--muted);white-space:nowrap}
.sortable th{cursor:pointer}.sortable th[aria-sort]::after{content:" ↕";opacity:.5}
td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
td.worse,.worse{color:var(--worse);font-weight:600}td.better,.better{color:var(--better)}
.summary:not(.sorted) tr.cont a.l{display:none}
.matrix th[scope=row]{font-weight:400;font-size:12px;color:var(--fg);white-space:normal;
max-width:300px}.matrix td.cell{font-variant-numeric:tabular-nums;white-space:nowrap;
line-height:1.25;min-width:118px}.matrix .v{font-size:14px;font-weight:600}
.matrix .d,.matrix .t{font-size:11px;color:var(--muted)}
.matrix td.worse{background:var(--worse-bg)}.matrix td.worse .v{color:var(--worse)}
.matrix td.better{background:var(--better-bg)}.matrix td.better .v{color:var(--better)}
.matrix td.missed .t{color:var(--worse);font-weight:600}
.matrix td.missed{box-shadow:inset 0 0 0 2px var(--worse-bar)}
.summary tr.first td{border-top:2px solid var(--line)}
.summary td,.summary th{font-size:13px}.summary td:first-child{font-size:12px;max-width:260px;
word-break:break-word}.cicell{white-space:nowrap;line-height:1.1}
.citext{display:block;font-size:11px;color:var(--muted)}
svg.ci{vertical-align:middle}svg.ci .zero{stroke:var(--muted)}
svg.ci .whisker{stroke:var(--fg);stroke-width:2}svg.ci circle{fill:var(--fg)}
svg.ci.worse .whisker{stroke:var(--worse-bar)}svg.ci.worse circle{fill:var(--worse-bar)}
svg.ci.better .whisker{stroke:var(--better-bar)}svg.ci.better circle{fill:var(--better-bar)}
details.evaluation{border:1px solid var(--line);border-radius:8px;margin:12px 0;padding:6px 14px}
.metric{content-visibility:auto;contain-intrinsic-size:auto 480px}
details.evaluation>summary{cursor:pointer;padding:4px 0}
dl.identity{display:grid;grid-template-columns:max-content 1fr;gap:2px 12px;font-size:12px;
margin:8px 0}dl.identity dt{color:var(--muted)}dl.identity dd{margin:0;overflow-wrap:anywhere}
.notes{font-size:13px;padding-left:18px}.notes .n-nc,.notes .n-gated{font-weight:600}
.n-change{color:var(--nc)}
.missing{font-size:12px;color:var(--muted);font-style:italic}
.metric{border-top:1px dashed var(--line);margin-top:10px}
.value{font-variant-numeric:tabular-nums}.was{font-weight:400;color:var(--muted)}
.charts{display:flex;flex-wrap:wrap;gap:16px;align-items:flex-start}
figure{margin:0}figcaption{font-size:12px;color:var(--muted)}
svg.chart{max-width:100%;height:auto;font-size:11px}
svg.chart .plot{fill:var(--panel)}svg.chart .worse rect{fill:var(--worse-bar)}
svg.chart .better rect{fill:var(--better-bar)}svg.chart .band{fill:var(--band)}
svg.chart .zero{stroke:var(--fg);stroke-width:1}svg.chart text{fill:var(--muted)}
svg.chart .seg-worse{fill:var(--worse)}svg.chart .seg-better{fill:var(--better)}
svg.chart .hist-base{fill:none;stroke:var(--base);stroke-width:1.5;stroke-dasharray:3 2}
svg.chart .hist-now{fill:var(--better-bar)}
.key{display:inline-block;width:12px;height:10px;margin:0 3px 0 8px;vertical-align:middle}
.key-now{background:var(--better-bar)}.key-base{border:1.5px dashed var(--base)}
details.numbers{font-size:12px;margin:4px 0}details.numbers summary{cursor:pointer;
color:var(--muted)}details.numbers table{display:inline-table;margin-right:16px}
details.numbers caption{text-align:left;color:var(--muted)}
.queries td.qtext{max-width:420px}
.cards-title{margin-top:22px}
details.query{border-left:3px solid var(--line);margin:6px 0;padding:2px 10px}
details.query>summary{cursor:pointer}details.query[open]{border-left-color:var(--worse-bar)}
.qfull{font-size:15px;margin:6px 0}
.rankings{display:flex;flex-wrap:wrap;gap:20px}.rankings>div{flex:1 1 420px;min-width:0}
.ranking td{font-size:12px}.ranking td.doc{max-width:380px}
.ranking td.rel{background:var(--rel-bg)}.ranking td.rel .j{color:var(--rel);font-weight:600}
.ranking td.unjudged{color:var(--muted);font-style:italic}.ranking .j,.ranking .s{font-size:11px}
.ranking .s{color:var(--muted)}
.move{white-space:nowrap}.missed{font-size:12px}
blockquote{margin:4px 0;padding:6px 10px;background:var(--panel);border-radius:6px}
.claims{padding-left:18px;font-size:13px}.claims li{margin:3px 0}
.evidence{color:var(--muted);font-size:12px}
footer{margin-top:32px;border-top:1px solid var(--line);padding-top:8px}
@media print{nav,#expand{display:none}body{max-width:none;padding:0;font-size:11px}
figure,tr,details.query{break-inside:avoid}.metric{content-visibility:visible}
.wide{overflow:visible}.summary td,.summary th{font-size:10px;padding:2px 4px}
:root{--bg:#fff;--fg:#000}}
"""

# Sorting a table by a column (numbers by their data-value), and opening every section before
# printing (a closed <details> prints as its summary only).
_JS = """
(function(){
function key(td){if(!td)return"";var v=td.getAttribute("data-value");
if(v!==null&&v!==""&&!isNaN(v))return parseFloat(v);return td.textContent.trim().toLowerCase();}
document.querySelectorAll("table.sortable").forEach(function(table){
var ths=table.querySelectorAll("thead th");
ths.forEach(function(th,i){th.setAttribute("aria-sort","none");th.tabIndex=0;
function sort(){var body=table.tBodies[0];var rows=Array.prototype.slice.call(body.rows);
var dir=th.getAttribute("aria-sort")==="ascending"?-1:1;
rows.sort(function(a,b){var x=key(a.cells[i]),y=key(b.cells[i]);
if(typeof x!==typeof y){x=String(x);y=String(y);}return x<y?-dir:x>y?dir:0;});
ths.forEach(function(o){o.setAttribute("aria-sort","none");});
th.setAttribute("aria-sort",dir===1?"ascending":"descending");table.classList.add("sorted");
rows.forEach(function(r){body.appendChild(r);});}
th.addEventListener("click",sort);
th.addEventListener("keydown",function(e){if(e.key==="Enter"){sort();}});});});
function openAll(){document.querySelectorAll("details").forEach(function(d){d.open=true;});}
var b=document.getElementById("expand");if(b){b.addEventListener("click",openAll);}
window.addEventListener("beforeprint",openAll);
})();
"""


def _csp_hash(text: str) -> str:
    digest = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


CONTENT_SECURITY_POLICY = (
    f"default-src 'none'; style-src {_csp_hash(_CSS)}; script-src {_csp_hash(_JS)}; "
    "img-src 'none'; base-uri 'none'; form-action 'none'"
)


def _page(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        '<meta name="referrer" content="no-referrer">'
        f"<title>{esc(title)}</title><style>{_CSS}</style></head><body>{body}"
        f"<script>{_JS}</script></body></html>\n"
    )


def _check(document: Any) -> None:
    """A BaselineError unless ``document`` has the shape of a report: evaluations with a
    layer and metrics. Everything below that is read defensively (a value of the wrong type is
    shown as missing), so a hand-edited report renders instead of crashing."""
    if not isinstance(document, Mapping):
        raise BaselineError("the report is not a JSON object (a --ragmetrics-json document)")
    if "schema" in document and document["schema"] != REPORT_SCHEMA:
        raise BaselineError(f"schema {document['schema']!r} is not {REPORT_SCHEMA!r}")
    evaluations = document.get("evaluations")
    if not isinstance(evaluations, list):
        raise BaselineError("'evaluations' must be a list of objects")
    for i, entry in enumerate(evaluations, start=1):
        if not isinstance(entry, Mapping):
            raise BaselineError(f"evaluation #{i} must be an object")
        label = f"evaluation #{i} ({entry.get('test')!r} [{entry.get('name')}])"
        if entry.get("layer") not in ("retrieval", "answer"):
            raise BaselineError(f"{label}: 'layer' must be 'retrieval' or 'answer'")
        if not isinstance(entry.get("metrics"), Mapping):
            raise BaselineError(f"{label}: 'metrics' must map metric names to numbers")


def html_report(
    document: Mapping[str, Any],
    *,
    worst: int = DEFAULT_WORST,
    max_bars: int = DEFAULT_MAX_BARS,
) -> str:
    """One self-contained HTML page of a JSON report document (see the module docstring).

    ``worst``: queries shown in detail per metric; ``max_bars``: the most bars a per-query Δ
    chart draws (more queries are grouped). A document that is not a report, or whose
    evaluations lack what every report has, is a BaselineError saying which and what.
    """
    if isinstance(worst, bool) or not isinstance(worst, int) or worst < 1:
        raise ConfigError(f"worst={worst!r}: give a positive number of queries")
    if isinstance(max_bars, bool) or not isinstance(max_bars, int) or max_bars < 10:
        raise ConfigError(f"max_bars={max_bars!r}: give an integer of at least 10")
    _check(document)
    return _Renderer(document, worst, max_bars).render()


_BASELINE_KEYS = ("baseline_ranking", "baseline_answer", "baseline_claims")


def comparison_document(
    before: Mapping[tuple[str, str], Mapping[str, Any]],
    after: Mapping[tuple[str, str], Mapping[str, Any]],
    verdicts: Mapping[tuple[str, str], Mapping[str, Any]],
    *,
    header: Mapping[str, Any],
    comparison: Mapping[str, Any],
) -> dict[str, Any]:
    """The report document of ``ragmetrics compare --format html``: the evaluations of
    ``after`` with ``verdicts`` (against ``before``) as their baseline outcome, and the
    ``before`` evaluations' per-query values and records as their baseline's.

    ``before``/``after`` are :func:`~pytest_ragmetrics.baseline.compare.load_evaluations` results;
    ``header`` gives ``plugin_version``, ``created`` and ``settings`` (the after report's).
    Threshold results recorded in the after report are kept; its own baseline outcome, κ gate
    and baseline fields are replaced, since they were about another baseline.
    """
    evaluations = []
    for key in sorted(after):
        entry = dict(after[key])
        outcome = {k: v for k, v in _map(entry.get("outcome")).items() if k == "thresholds"}
        outcome["baseline"] = dict(verdicts.get(key) or {"status": "new", "metrics": []})
        entry["outcome"] = outcome
        entry.pop("baseline_per_query", None)
        records = {
            qid: {k: v for k, v in _map(record).items() if k not in _BASELINE_KEYS}
            for qid, record in _map(entry.get("queries")).items()
        }
        old = before.get(key)
        if old is not None:
            values = baseline_per_query(old)
            if values:
                entry["baseline_per_query"] = values
            records = baseline_records(records, old)
        if records:
            entry["queries"] = records
        else:
            entry.pop("queries", None)
        evaluations.append(entry)
    document = {k: header[k] for k in ("plugin_version", "created", "settings") if k in header}
    document.update(
        {
            "schema": REPORT_SCHEMA,
            "version": REPORT_VERSION,
            "comparison": dict(comparison),
            "evaluations": evaluations,
        }
    )
    return document


def systems_document(comparison: SystemsComparison) -> dict[str, Any]:
    """The report document of ``ragmetrics compare --qrels Q RUN_A RUN_B ... --format html``:
    the reference first (marked as such), then every run with its verdict against the
    reference as its baseline outcome and the reference's per-query values as its baseline's.
    TREC runs bring their rankings (with the query texts and titles of --dataset) for the
    drill-down."""
    from pytest_ragmetrics.comparison import KIND_WORDS
    from pytest_ragmetrics.report.query_records import add_query_details

    reference = comparison.reference
    judgments = comparison.judgments
    qrels = None if judgments is None else judgments.qrels
    dataset = None if judgments is None else judgments.dataset
    verdicts = {id(v.system): v.verdict for v in comparison.versus}
    evaluations = []
    reference_entry: dict[str, Any] = {}
    for system in comparison.systems:
        entry = system.record.to_dict()
        if system.kind in ("report", "baseline"):
            entry.update(test=f"{system.path}: {system.record.test}")
        else:
            entry.update(test=system.label, name=KIND_WORDS[system.kind])
        verdict = verdicts.get(id(system))
        if verdict is None:
            entry["outcome"] = {"reference": True}
            reference_entry = entry
        else:
            entry["outcome"] = {"baseline": verdict.to_dict()}
        if system.run is not None and qrels is not None:
            add_query_details(
                entry,
                baseline_entry=reference_entry if verdict is not None else None,
                run=system.run,
                baseline_run=reference.run if verdict is not None else None,
                dataset=dataset,
                qrels=qrels,
            )
        elif verdict is not None:
            values = baseline_per_query(reference_entry)
            if values:
                entry["baseline_per_query"] = values
        evaluations.append(entry)
    semantics = reference.record.evaluation.semantics
    return {
        "schema": REPORT_SCHEMA,
        "version": REPORT_VERSION,
        "settings": {
            "metrics": list(comparison.metrics),
            "semantics": None if semantics is None else semantics.as_dict(),
        },
        "comparison": {
            "reference": reference.label,
            "runs": [system.label for system in comparison.systems],
            "judgments": None if judgments is None else judgments.description,
            "tolerance": list(comparison.tolerance),
            "alpha": comparison.alpha,
        },
        "evaluations": evaluations,
    }
