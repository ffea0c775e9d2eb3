"""One evaluation's section of the page: its identity (retriever or judge, dataset and
fingerprints, k, semantics), its notes, what the report lacks, per metric the charts, their
numbers and the queries that moved, and the cards of the queries shown in detail."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_ragmetrics.report.html.cards import Card, cards
from pytest_ragmetrics.report.html.charts import (
    DeltaChart,
    Deltas,
    Histogram,
    delta_chart,
    histogram,
)
from pytest_ragmetrics.report.html.queries import Queries, QueryTable, query_tables
from pytest_ragmetrics.report.html.shown import Chip, Shown, metric_chip, value
from pytest_ragmetrics.report.query_records import PerQueryValues, choose_detail_ids

if TYPE_CHECKING:
    from collections.abc import Callable

    from pytest_ragmetrics.data.model import FloatArray

NOTES_IDS_SHOWN = 10


@dataclass
class MetricBlock:
    """One metric of an evaluation: its value, its verdict, its charts and its queries.
    ``empty`` says why there is no Δ chart ('' when there is one, or nothing to say)."""

    metric: str
    current: float | None
    baseline: float | None
    delta: float | None
    chip: Chip | None
    with_verdict: bool
    empty: str
    chart: DeltaChart | None
    histogram: Histogram
    tables: list[QueryTable]


@dataclass
class EvaluationView:
    shown: Shown
    identity: list[tuple[str, str]]
    notes: list[tuple[str, str]]
    no_baseline_values: bool  # shown as missing (with ``listed_instead``) when there is a verdict
    listed_instead: bool
    no_records: bool
    blocks: list[MetricBlock]
    cards: list[Card]

    @property
    def says_missing(self) -> bool:
        return (self.no_baseline_values or self.no_records) and self.shown.status not in (
            "",
            "new",
        )


def evaluation_view(
    shown: Shown, *, worst: int, max_bars: int, uid: Callable[[str], str]
) -> EvaluationView:
    """The section of ``shown``; ``uid`` makes the charts' element ids (counters, never data)."""
    fields = shown.checked.record.report_fields
    values = PerQueryValues.of_record(shown.checked.record)
    q = Queries(shown, values)
    verdict = shown.verdict
    detail_ids = choose_detail_ids(
        values,
        shown.checked.record.evaluation.metrics,
        worst=worst,
        listed=lambda metric: [w[0] for w in getattr(shown.verdicts.get(metric), "worst", [])],
        verdict=verdict is not None and verdict.status != "new",
    )
    q.card_of = {qid: f"{shown.anchor}-q{i}" for i, qid in enumerate(detail_ids, start=1)}
    blocks = [_metric_block(q, metric, worst, max_bars, uid) for metric in shown.metrics]
    return EvaluationView(
        shown,
        identity_rows(shown),
        notes(shown),
        not isinstance(fields.get("baseline_per_query"), Mapping),
        any(m.worst for m in shown.verdicts.values() if m.metric in shown.metrics),
        not q.records,
        blocks,
        cards(q, detail_ids, open_first=shown.problem),
    )


def _metric_block(
    q: Queries, metric: str, worst: int, max_bars: int, uid: Callable[[str], str]
) -> MetricBlock:
    verdict = q.shown.verdicts.get(metric)
    deltas = Deltas.of(q.values, metric)
    now = _finite(q.values.now(metric))
    before = _finite(q.values.baseline(metric)) if q.values.has_baseline else None
    n = len(deltas.delta)
    chart, empty = None, ""
    if n and not deltas.delta.any():
        empty = f"All {n:,} queries unchanged."
    elif n:
        chart = delta_chart(deltas, metric, max_bars, uid("c"))
    elif before is not None:
        empty = "No query has a value in both runs."
    return MetricBlock(
        metric,
        q.shown.means.get(metric),
        None if verdict is None else value(verdict.baseline),
        None if verdict is None else value(verdict.delta),
        None if verdict is None else metric_chip(verdict.status),
        verdict is not None,
        empty,
        chart,
        histogram(now, before, metric, uid("h")),
        query_tables(q, metric, deltas, worst),
    )


def _finite(values: FloatArray) -> FloatArray:
    return values[~np.isnan(values)]


def identity_rows(shown: Shown) -> list[tuple[str, str]]:
    """(name, text) of what the evaluation ran: identity, dataset, k, semantics, queries."""
    record = shown.checked.record
    rows = [(str(key), flat(item)) for key, item in record.identity.items()]
    dataset = record.dataset or {}
    if dataset:
        bits = [str(dataset.get("name") or "")]
        if dataset.get("split"):
            bits.append(f"split {dataset['split']}")
        for key in ("documents", "queries"):
            if isinstance(dataset.get(key), int):
                bits.append(f"{dataset[key]:,} {key}")
        if dataset.get("source"):
            bits.append(f"source {dataset['source']}")
        rows.append(("dataset", ", ".join(b for b in bits if b)))
        prints = dataset.get("fingerprints") or {}
        if prints:  # whole: a reviewer compares them with another run's
            rows.append(("fingerprints", "; ".join(f"{k} {v}" for k, v in prints.items())))
    if record.k is not None:
        rows.append(("k", str(record.k)))
    elif shown.layer == "retrieval":
        rows.append(("k", "unknown (not recorded; a TREC run file has none)"))
    semantics = record.evaluation.semantics
    if semantics is not None:
        rows.append(("semantics", flat(semantics.as_dict())))
    rows.append(("queries evaluated", f"{len(record.evaluation):,}"))
    rows.append(("layer", shown.layer))
    return rows


def notes(shown: Shown) -> list[tuple[str, str]]:
    """(kind, text) of everything a reviewer should read about an evaluation."""
    out: list[tuple[str, str]] = []
    verdict = shown.verdict
    gate = shown.checked.outcome.gate
    if verdict is not None:
        out += [("nc", f"not comparable: {reason}") for reason in verdict.reasons]
    if gate:
        out.append(("gated", gate))
    if verdict is not None:
        if verdict.identity_change:
            change = f"configuration changed since the baseline: {verdict.identity_change}"
            out.append(("change", change))
        if verdict.depth_note:
            out.append(("change", verdict.depth_note))
        out += [("note", f"{m.metric} {m.note}") for m in verdict.metrics if m.note]
        if verdict.alpha_note:
            out.append(("note", verdict.alpha_note))
        for ids, what in (
            (verdict.only_baseline, "queries only in the baseline"),
            (verdict.only_current, "queries only in this run"),
        ):
            if ids:
                shown_ids = ", ".join(ids[:NOTES_IDS_SHOWN])
                more = " …" if len(ids) > NOTES_IDS_SHOWN else ""
                out.append(("note", f"{what} ({len(ids)}): {shown_ids}{more}"))
    out += [("note", note) for note in shown.checked.record.evaluation.notes]
    return out


def flat(item: Any) -> str:
    """A short one-line text of a JSON value (identities, settings)."""
    if isinstance(item, str):
        return item
    if isinstance(item, Mapping):
        return ", ".join(f"{k}: {flat(v)}" for k, v in item.items()) or "{}"
    if isinstance(item, (list, tuple)):
        return "[" + ", ".join(flat(v) for v in item) + "]"
    if item is None:
        return "—"
    return json.dumps(item)
