"""The per-dataset summary of a session that evaluated several (dataset, split) pairs: per
metric, the evaluations as rows, the pairs as columns and their mean (FlagEmbedding's and
MTEB's layout), with the Δ against the baseline in each cell."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.deltas import delta_text

if TYPE_CHECKING:
    from pytest_ragmetrics.report.outcome import Checked


@dataclass
class SummaryRow:
    """One evaluation across datasets: its label without the pair, a cell per pair."""

    label: str
    values: dict[str, float] = field(default_factory=dict)
    deltas: dict[str, float] = field(default_factory=dict)

    def mean(self, columns: Sequence[str]) -> float | None:
        """The mean over the pairs it has a value for (None: none) — unweighted, as MTEB."""
        cells = [self.values[c] for c in columns if c in self.values]
        finite = [v for v in cells if not math.isnan(v)]
        return sum(finite) / len(finite) if finite else None


@dataclass
class DatasetSummary:
    """One metric's table."""

    metric: str
    columns: list[str]
    rows: list[SummaryRow]

    def to_dict(self) -> dict[str, Any]:
        return {
            "columns": list(self.columns),
            "rows": [
                {
                    "evaluation": row.label,
                    "values": {c: _num(v) for c, v in row.values.items()},
                    "deltas": dict(row.deltas),
                    "mean": row.mean(self.columns),
                }
                for row in self.rows
            ],
        }


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
class Cell:
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
    cells = []
    for checked in evaluations:
        key = pair_key(checked.record.dataset)
        if checked.layer != "retrieval" or key is None:
            continue
        verdict = checked.outcome.baseline
        cells.append(
            Cell(
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


def summarize(
    cells: Sequence[Cell],
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


def summary_table(summary: DatasetSummary, tablefmt: str = "simple") -> str:
    """The table as text (tabulate's ``simple`` for the terminal, ``github`` for Markdown),
    its labels escaped for that sink."""
    from tabulate import tabulate

    from pytest_ragmetrics.report.escaping import for_markdown, for_terminal

    text = for_markdown if tablefmt == "github" else for_terminal
    rows = []
    for row in summary.rows:
        cells = []
        for column in summary.columns:
            value = row.values.get(column)
            if value is None:
                cells.append("")
                continue
            delta = row.deltas.get(column)
            shown = _fmt(value)
            cells.append(shown if delta is None else f"{shown} ({delta_text(delta)})")
        mean = row.mean(summary.columns)
        rows.append([text(row.label), *cells, _fmt(mean)])
    return tabulate(
        rows,
        headers=[text(summary.metric), *map(text, summary.columns), "mean"],
        tablefmt=tablefmt,
        disable_numparse=True,
        colalign=("left", *("right",) * (len(summary.columns) + 1)),
    )


def _fmt(value: float | None) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{value:.4f}"


def _num(value: float) -> float | None:
    return None if math.isnan(value) else value
