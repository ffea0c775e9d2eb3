"""The page of ``ragmetrics compare --dataset A=DIR --dataset B=DIR SYSTEM ... --format html``:
the tables the text and Markdown forms print (per metric a systems x pairs table with the
mean and the best of each column in bold; each system's verdict per pair), then every system's
evaluation on every pair, labelled ``system [pair]``, with its verdict against the reference
on that pair as its baseline outcome (what regressed is in the page's list of problems)."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING

from pytest_ragmetrics.report.html.page import Compared, ReportPage, TableGroup, systems_page
from pytest_ragmetrics.report.outcome import Checked, EvaluationOutcome

if TYPE_CHECKING:
    from pytest_ragmetrics.comparison.datasets import DatasetsComparison, PairComparison


def datasets_page(comparison: DatasetsComparison) -> ReportPage:
    """The page of a comparison of systems over several (dataset, split) pairs."""
    evaluations: list[Checked] = []
    references: list[tuple[str, str]] = []
    for pair in comparison.pairs:
        found = pair_evaluations(pair)
        if pair.systems and pair.systems[0].label == comparison.reference:
            references.append(found[0].record.key)
        evaluations += found
    return ReportPage(
        tuple(evaluations),
        tuple(comparison.metrics),
        {"metrics": list(comparison.metrics)},
        compared=Compared(
            reference=comparison.reference,
            runs=tuple(comparison.labels),
            tolerance=tuple(comparison.tolerance),
            alpha=comparison.alpha,
            reference_keys=tuple(references),
            pairs=tuple(p.pair for p in comparison.pairs),
        ),
        tables=datasets_tables(comparison),
    )


def datasets_tables(comparison: DatasetsComparison) -> tuple[TableGroup, ...]:
    """The per-dataset summary of the systems, then their verdicts pair by pair."""
    from pytest_ragmetrics.report.comparison import pair_notes, status_grid
    from pytest_ragmetrics.report.datasets import comparison_summaries, summary_grid

    reference = comparison.reference
    summary = TableGroup(
        "Per dataset",
        f"Each system's mean on each pair and over the pairs; in brackets its Δ against "
        f"{reference} on that pair.",
        tuple(summary_grid(s) for s in comparison_summaries(comparison)),
    )
    failed = len(comparison.failed)
    verdicts = TableGroup(
        "Verdicts",
        f"Each system against {reference}, pair by pair (-: no run there); {failed} failed.",
        (status_grid(comparison),),
        tuple(pair_notes(comparison)),
    )
    return summary, verdicts


def pair_evaluations(pair: PairComparison) -> list[Checked]:
    """The systems' evaluations on one pair, each named by the pair: with its verdict against
    the reference when they were compared there (see ``systems_page``), else as they are."""
    if pair.comparison is not None:
        found = list(systems_page(pair.comparison).evaluations)
    else:
        found = [
            Checked(dataclasses.replace(s.record, test=s.label), EvaluationOutcome())
            for s in pair.systems
        ]
    return [
        dataclasses.replace(c, record=dataclasses.replace(c.record, name=pair.pair)) for c in found
    ]
