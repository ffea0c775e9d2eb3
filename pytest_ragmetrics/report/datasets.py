"""The per-dataset summary: per metric, the evaluations (or systems) as rows, the (dataset,
split) pairs as columns and their mean (FlagEmbedding's and MTEB's layout), with the Δ against
the baseline in each cell.

One builder and one rule for every place that shows it (the plugin's terminal, Markdown and
JSON reports; ``ragmetrics evaluate``, ``retrieve`` and ``compare`` over several datasets): a
row without a value on some pair shows ``-`` there and has no mean, since a mean over fewer
pairs would sit beside full ones as if it compared with them."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.deltas import delta_text
from pytest_ragmetrics.report.tables import (
    MISSING,
    Cell,
    Table,
    alignment,
    mark_best,
    markdown_table,
    text_table,
)

if TYPE_CHECKING:
    from pytest_ragmetrics.comparison.datasets import DatasetsComparison
    from pytest_ragmetrics.report.outcome import Checked


SUMMARY_NOTE = "mean over datasets; Δ to the baseline in brackets"
PARTIAL_LEGEND = (
    "- means no value on that pair; a row with one has no mean (a mean over fewer pairs would "
    "not compare with the others)"
)


@dataclass
class SummaryRow:
    """One evaluation across datasets: its label without the pair, a cell per pair."""

    label: str
    values: dict[str, float] = field(default_factory=dict)
    deltas: dict[str, float] = field(default_factory=dict)

    def missing(self, columns: Sequence[str]) -> list[str]:
        """The pairs it has no value on (NaN included: the metric is undefined there)."""
        return [c for c in columns if c not in self.values or math.isnan(self.values[c])]

    def mean(self, columns: Sequence[str]) -> float | None:
        """The unweighted mean over every pair (as MTEB and FlagEmbedding), or None when it
        misses one: a mean over fewer pairs would sit beside the others as if it compared."""
        if self.missing(columns):
            return None
        return sum(self.values[c] for c in columns) / len(columns)


@dataclass
class DatasetSummary:
    """One metric's table: the evaluations (systems) as rows, the pairs as columns."""

    metric: str
    columns: list[str]
    rows: list[SummaryRow]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"columns": list(self.columns), "rows": []}
        for row in self.rows:
            item: dict[str, Any] = {
                "evaluation": row.label,
                "values": {c: _num(v) for c, v in row.values.items()},
                "deltas": dict(row.deltas),
                "mean": row.mean(self.columns),
            }
            missing = row.missing(self.columns)
            if missing:
                item["missing"] = missing  # why "mean" is null
            out["rows"].append(item)
        return out


def pair_key(dataset: Any) -> str | None:
    """The pair key (``name-split``) of an evaluation's dataset identity (None: no named
    dataset)."""
    from pytest_ragmetrics.data.selection import pair_key as key_of

    if not isinstance(dataset, dict) or not dataset.get("name") or not dataset.get("split"):
        return None
    return key_of(str(dataset["name"]), str(dataset["split"]))


def without_pair(test: str, key: str) -> str:
    """A test id without the (dataset, split) pair in its parameters."""
    if "[" not in test:
        return test
    head, _, params = test.partition("[")
    parts = params[:-1].split("-") if params.endswith("]") else params.split("-")
    pair = key.split("-")
    for i in range(len(parts) - len(pair) + 1):
        if parts[i : i + len(pair)] == pair:
            parts = parts[:i] + parts[i + len(pair) :]
            break
    return f"{head}[{'-'.join(parts)}]" if parts else head


@dataclass(frozen=True)
class PairMeans:
    """One evaluation's means on one pair: a row label, the pair, the means and the Δs."""

    label: str
    key: str
    means: Mapping[str, float]
    deltas: Mapping[str, float] = field(default_factory=dict)


def dataset_summaries(
    evaluations: Sequence[Checked], metrics: Sequence[str], order: Sequence[str] = ()
) -> list[DatasetSummary]:
    """A table per metric, when retrieval evaluations ran on at least two pairs (else []);
    the columns in ``order`` (the configured pairs) first."""
    cells: list[PairMeans] = []
    for checked in evaluations:
        key = pair_key(checked.record.dataset)
        if checked.layer != "retrieval" or key is None:
            continue
        verdict = checked.outcome.baseline
        cells.append(
            PairMeans(
                f"{without_pair(checked.record.test, key)} [{checked.record.name}]",
                key,
                checked.record.evaluation.mean,
                # A lost metric has no Δ (NaN): it is shown without one.
                {m.metric: m.delta for m in verdict.metrics if m.delta == m.delta}
                if verdict is not None
                else {},
            )
        )
    return summarize(cells, metrics, order)


def comparison_summaries(comparison: DatasetsComparison) -> list[DatasetSummary]:
    """The systems x pairs tables of ``compare`` over several datasets, one per metric: each
    system's means on each pair with its Δ against the reference there."""
    cells = []
    for pair in comparison.pairs:
        verdicts = (
            {}
            if pair.comparison is None
            else {v.system.label: v.verdict for v in pair.comparison.versus}
        )
        for system in pair.systems:
            verdict = verdicts.get(system.label)
            deltas = (
                {}
                if verdict is None
                else {m.metric: m.delta for m in verdict.metrics if m.delta == m.delta}
            )
            cells.append(PairMeans(system.label, pair.pair, system.record.evaluation.mean, deltas))
    rows = [*comparison.labels]
    tables = summarize(
        cells, comparison.metrics, [p.pair for p in comparison.pairs], minimum_pairs=1
    )
    for table in tables:  # the systems in the order given, the reference first
        table.rows.sort(key=lambda row: rows.index(row.label))
    return tables


def summarize(
    cells: Sequence[PairMeans],
    metrics: Sequence[str],
    order: Sequence[str] = (),
    *,
    minimum_pairs: int = 2,
) -> list[DatasetSummary]:
    """A table per metric (``metrics`` first, then any other the cells have) when the cells
    cover at least ``minimum_pairs`` pairs; else []."""
    seen = {cell.key for cell in cells}
    pairs = [key for key in order if key in seen]
    pairs += [key for key in dict.fromkeys(cell.key for cell in cells) if key not in pairs]
    if len(pairs) < minimum_pairs:
        return []
    present = dict.fromkeys(m for cell in cells for m in cell.means)
    names = [m for m in metrics if m in present] + [m for m in present if m not in metrics]
    tables = []
    for metric in names:
        rows: dict[str, SummaryRow] = {}
        for cell in cells:
            if metric not in cell.means:
                continue
            row = rows.setdefault(cell.label, SummaryRow(cell.label))
            row.values[cell.key] = cell.means[metric]
            if metric in cell.deltas:
                row.deltas[cell.key] = cell.deltas[metric]
        tables.append(DatasetSummary(metric, pairs, list(rows.values())))
    return tables


def summary_grid(summary: DatasetSummary) -> Table:
    """The typed table of one metric (every sink renders this one): a row per evaluation, a
    column per pair (the value, its Δ against the baseline in brackets), the mean; ``-`` where
    a row has no value, and no mean for such a row; the best of each column marked."""
    rows = []
    for row in summary.rows:
        line = [Cell(row.label)]
        for column in summary.columns:
            value = row.values.get(column)
            delta = row.deltas.get(column)
            suffix = "" if delta is None else f"({delta_text(delta)})"
            line.append(Cell(MISSING if value is None else _fmt(value), suffix))
        line.append(Cell(_fmt(row.mean(summary.columns))))
        rows.append(line)
    numbers = range(1, len(summary.columns) + 2)
    partial = any(row.missing(summary.columns) for row in summary.rows)
    return Table(
        (summary.metric, *summary.columns, "mean"),
        tuple(map(tuple, mark_best(rows, numbers))),
        alignment(1, len(numbers)),
        (PARTIAL_LEGEND,) if partial else (),
    )


def summary_table(summary: DatasetSummary, tablefmt: str = "simple") -> str:
    """The table as text: ``simple`` for the terminal, ``github`` for Markdown."""
    grid = summary_grid(summary)
    return markdown_table(grid).rstrip("\n") if tablefmt == "github" else text_table(grid)


def _fmt(value: float | None) -> str:
    if value is None:
        return MISSING
    return "n/a" if math.isnan(value) else f"{value:.4f}"


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value
