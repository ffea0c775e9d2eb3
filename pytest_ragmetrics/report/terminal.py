"""Terminal summary: one table per layer, evaluations as rows, then baseline deltas and notes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_ragmetrics.deltas import OTHER_QUERIES, delta_text, over_other_queries
from pytest_ragmetrics.report.escaping import for_terminal
from pytest_ragmetrics.vocabulary import LAYERS

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import MetricVerdict
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome

LAYER_TITLES = {"retrieval": "retrieval layer", "answer": "answer layer"}


def _fmt(value: float | None) -> str:
    if value is None or value != value:  # NaN: not applicable
        return "n/a"
    return f"{float(value):.4f}"


def columns(evaluations: Sequence[Checked], preferred: Sequence[str]) -> list[str]:
    """The metrics of these evaluations, the configured ones first in their order."""
    present: dict[str, None] = {}
    for checked in evaluations:
        for metric in checked.record.evaluation.metrics:
            present[metric] = None
        verdict = checked.outcome.baseline
        for found in verdict.metrics if verdict is not None else ():
            present[found.metric] = None  # a metric lost since the baseline has its column
    ordered = [m for m in preferred if m in present]
    return ordered + [m for m in present if m not in ordered]


def layer_table(evaluations: Sequence[Checked], preferred: Sequence[str]) -> str:
    """A tabulate table of one layer's evaluations, with baseline and Δ rows under compared ones."""
    from tabulate import tabulate

    names = columns(evaluations, preferred)
    rows: list[list[str]] = []
    elsewhere = False
    for checked in evaluations:
        mean = checked.record.evaluation.mean
        rows.append(
            [
                for_terminal(checked.label),
                *(_fmt(mean[m]) if m in mean else "" for m in names),
                checked.outcome.status,
            ]
        )
        labelled = checked.record.evaluation.supplemented
        if labelled is not None:
            rows.append(
                [
                    "  · + judge labels",
                    *(_fmt(labelled.metrics.get(m)) if m in mean else "" for m in names),
                    "" if labelled.used else "shown only",
                ]
            )
        verdict = checked.outcome.baseline
        deltas = {m.metric: m for m in verdict.metrics} if verdict is not None else {}
        if deltas:
            added = _baseline_rows(deltas, mean, names)
            rows += added
            elsewhere = elsewhere or len(added) == 3  # with its "· same queries" row
    table = tabulate(
        rows,
        headers=["evaluation", *map(for_terminal, names), "status"],
        tablefmt="simple",
        disable_numparse=True,
        colalign=("left", *("right",) * len(names), "left"),
    )
    if elsewhere:
        table += (
            f"\n{OTHER_QUERIES} Δ over only the queries both the baseline and this run hold; "
            "its means are the · baseline and · same queries rows (the notes say how many)"
        )
    return table


def _baseline_rows(
    deltas: Mapping[str, MetricVerdict], mean: Mapping[str, float], names: Sequence[str]
) -> list[list[str]]:
    """The rows under a compared evaluation: the baseline's means, this run's over the same
    queries where those are not the means shown above (a side holds other queries), and Δ."""
    other = {m for m, v in deltas.items() if over_other_queries(v.current, mean.get(m))}
    rows = [["  · baseline", *(_fmt(deltas[m].baseline) if m in deltas else "" for m in names)]]
    if other:
        rows.append(
            ["  · same queries", *(_fmt(deltas[m].current) if m in other else "" for m in names)]
        )
    cells = (
        _delta_cell(deltas[m]) + (f" {OTHER_QUERIES}" if m in other else "") if m in deltas else ""
        for m in names
    )
    rows.append(["  · Δ", *cells])
    return [[*row, ""] for row in rows]


def _delta_cell(metric: MetricVerdict) -> str:
    if metric.status == "lost":
        return f"lost {metric.lost} !"  # queries that had a value in the baseline, n/a now
    mark = {"regressed": " !", "improved": " +"}.get(metric.status, "")
    return f"{delta_text(metric.delta)}{mark}"


def summary_lines(outcome: SessionOutcome) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is 'section' (a separator title) or 'line'; every text on one
    line, its control characters shown as escapes."""
    out: list[tuple[str, str]] = []
    if outcome.cleared is not None:
        out.append(("line", f"ragmetrics: {outcome.cleared.describe(outcome.cache_path)}"))
    for layer in LAYERS:
        chosen = outcome.layer(layer)
        if not chosen:
            continue
        out.append(("section", f"ragmetrics: {LAYER_TITLES[layer]}"))
        out += [("line", line) for line in layer_table(chosen, outcome.metrics).splitlines()]
        notes = outcome.notes(layer)
        if notes:
            out.append(("line", ""))
            out += [("line", f"note: {n}") for n in notes]
    from pytest_ragmetrics.report.datasets import dataset_summaries, summary_table

    summaries = dataset_summaries(outcome.evaluations, outcome.metrics, outcome.dataset_order)
    if summaries:
        out.append(("section", "ragmetrics: per dataset (mean over datasets; Δ to baseline)"))
        for summary in summaries:
            out += [("line", line) for line in summary_table(summary).splitlines()]
            out.append(("line", ""))
    counts = outcome.update_counts
    if counts is not None:
        out.append(("line", ""))
        out.append(
            (
                "line",
                f"ragmetrics baseline {outcome.baseline_path}: {counts['updated']} updated, "
                f"{counts['added']} added, {counts['removed']} removed, "
                f"{counts['unchanged']} unchanged"
                + (f", {counts['not_updated']} not updated" if counts.get("not_updated") else ""),
            )
        )
        if outcome.commit_paths:
            out.append(("line", "commit: " + " ".join(outcome.commit_paths)))
        out += [("line", line) for line in outcome.not_updated_lines()]
    for lines in (outcome.lost_entries_lines(), outcome.unchecked_lines()):
        if lines:
            out.append(("line", ""))
            out += [("line", line) for line in lines]
    return [(kind, for_terminal(text)) for kind, text in out]
