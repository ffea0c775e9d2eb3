"""The tables of ``ragmetrics compare`` with runs, built once as typed tables
(:mod:`pytest_ragmetrics.report.tables`) and rendered as text for the terminal or as Markdown:
every run's means with its Δ against the reference, each run's statistics against it, the
queries that changed most; over several datasets, a systems x pairs table per metric (the
per-dataset summary's builder) and each system's verdict per pair.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pytest_ragmetrics.deltas import OTHER_QUERIES, delta_text, same_shown
from pytest_ragmetrics.report.escaping import for_markdown, for_terminal
from pytest_ragmetrics.report.markdown import MARKS, message_markdown, notes_markdown, within_limit
from pytest_ragmetrics.report.tables import (
    Cell,
    Table,
    alignment,
    cells,
    mark_best,
    markdown_table,
    text_table,
)

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import MetricVerdict
    from pytest_ragmetrics.comparison.datasets import DatasetsComparison
    from pytest_ragmetrics.comparison.systems import SystemsComparison, Versus

Render = Callable[[Table], str]


def _value(value: float | None) -> str:
    return "n/a" if value is None or value != value else f"{value:.4f}"


def _significant(comparison: SystemsComparison, metric: MetricVerdict) -> bool:
    c = metric.comparison
    return c is not None and c.n > 0 and c.p_value < comparison.significance


def delta_cell(comparison: SystemsComparison, metric: MetricVerdict, extra: str = "") -> str:
    """A run's Δ against the reference and its marks: ``(+0.0343 ▲*)``; ``extra`` is a mark
    after them (``†``)."""
    marks = MARKS.get(metric.status, "") + ("*" if _significant(comparison, metric) else "")
    marks = f"{marks} {extra}".strip() if extra else marks
    return f"({delta_text(metric.delta)}{' ' + marks if marks else ''})"


def marks_legend(comparison: SystemsComparison) -> str:
    return (
        f"in brackets Δ against the reference: ▲ ▼ beyond the tolerance "
        f"({' '.join(comparison.tolerance)}), * p < {comparison.significance:g} (paired "
        "randomization test)"
    )


def runs_grid(comparison: SystemsComparison) -> Table:
    """Every run's means (the best of each metric marked), with the Δ against the
    reference, and its status.

    A Δ is over the queries the two runs pair; where those are not the queries of the means
    shown (a run that lacks queries, another query set), the Δ is marked † and the legend
    says so, since it is then not the difference of the two numbers in the column.
    """
    from pytest_ragmetrics.comparison import KIND_WORDS, k_text

    metrics = list(comparison.metrics)
    by_system = {id(v.system): v for v in comparison.versus}
    reference = comparison.reference.record.evaluation.mean
    rows = []
    elsewhere = False
    for system in comparison.systems:
        versus = by_system.get(id(system))
        verdicts = {m.metric: m for m in versus.verdict.metrics} if versus else {}
        row = list(cells([system.label, KIND_WORDS[system.kind], k_text(system.record.k)]))
        for metric in metrics:
            found = verdicts.get(metric)
            mean = system.record.evaluation.mean.get(metric)
            suffix = ""
            if found is not None:
                other = not (
                    same_shown(found.current, mean)
                    and same_shown(found.baseline, reference.get(metric))
                )
                elsewhere = elsewhere or other
                suffix = delta_cell(comparison, found, OTHER_QUERIES if other else "")
            row.append(Cell(_value(mean), suffix))
        row.append(Cell(versus.verdict.status if versus else "reference"))
        rows.append(row)
    marked = mark_best(rows, range(3, 3 + len(metrics)))
    align = (*alignment(3, len(metrics)), "left")
    headers = ("run", "input", "k", *metrics, "status")
    legend = [marks_legend(comparison)]
    if elsewhere:
        legend.append(
            f"{OTHER_QUERIES} Δ over the queries both runs have, not those of the means shown: "
            "the run's own table below gives both means over them"
        )
    return Table(headers, tuple(map(tuple, marked)), align, tuple(legend))


def versus_grid(versus: Versus) -> Table:
    """One run against the reference: per metric the means, Δ, its 95% CI, p and the
    wins / ties / losses over the queries."""
    rows = []
    for m in versus.verdict.metrics:
        c = m.comparison
        stats = ["", "", "", "", ""]
        if c is not None and c.n:
            ci = f"[{delta_text(c.ci_low)}, {delta_text(c.ci_high)}]"
            stats = [ci, f"{c.p_value:.4f}", str(c.better), str(c.same), str(c.worse)]
        values = [f"{m.baseline:.4f}", f"{m.current:.4f}", delta_text(m.delta), *stats]
        rows.append(cells([m.metric, *values, m.status]))
    headers = ("metric", "reference", "run", "Δ", "95% CI of Δ", "p", "wins", "ties", "losses")
    return Table((*headers, "status"), tuple(rows), (*alignment(1, 8), "left"))


def changes_grid(comparison: SystemsComparison, versus: Versus) -> Table | None:
    """The queries whose first metric changed most (None: none changed)."""
    from pytest_ragmetrics.comparison import rank_move

    changes = versus.most_changed.get(comparison.metrics[0], ())
    if not changes:
        return None
    rows = [
        cells(
            [
                c.query,
                f"{c.reference:.4f}",
                f"{c.value:.4f}",
                delta_text(c.delta),
                rank_move(c.rank_reference, c.rank_value),
            ]
        )
        for c in changes
    ]
    headers = ("query", "reference", "run", "Δ", "first relevant rank")
    return Table(headers, tuple(rows), (*alignment(1, 3), "left"))


def paired(versus: Versus) -> int:
    return max((m.comparison.n for m in versus.verdict.metrics if m.comparison), default=0)


def _notes(comparison: SystemsComparison) -> list[str]:
    """Every run's notes and its verdict's against the reference (as the JSON holds them),
    then what each run was not compared on."""
    from pytest_ragmetrics.baseline.verdicts import labelled_notes

    verdicts = {id(v.system): v.verdict for v in comparison.versus}
    notes = labelled_notes(
        (s.label, s.record.evaluation.notes, verdicts.get(id(s))) for s in comparison.systems
    )
    return notes + [n for v in comparison.versus for n in v.notes]


def _facts(comparison: SystemsComparison) -> list[tuple[str, str]]:
    """(what, value) of the comparison: the reference, the judgments, the scoring rules."""
    from pytest_ragmetrics.comparison import KIND_WORDS, semantics_text

    reference = comparison.reference
    facts = [("reference", f"{reference.label} ({KIND_WORDS[reference.kind]})")]
    if comparison.judgments is not None:
        facts.append(("judgments", comparison.judgments.description))
    semantics = reference.record.evaluation.semantics
    if semantics is not None:
        facts.append(("semantics", semantics_text(semantics.as_dict())))
    return facts


def _tally(comparison: SystemsComparison) -> str:
    counts: dict[str, int] = {}
    for versus in comparison.versus:
        counts[versus.verdict.status] = counts.get(versus.verdict.status, 0) + 1
    return ", ".join(f"{n} {status}" for status, n in counts.items())


# -- text -----------------------------------------------------------------------------------------


def comparison_text(comparison: SystemsComparison) -> str:
    """``compare RUN_A RUN_B ...`` in the terminal: the facts, every run's means, each run
    against the reference, the notes, what failed and why, and a tally."""
    parts = ["".join(f"{what}: {for_terminal(value)}\n" for what, value in _facts(comparison))]
    parts.append(text_table(runs_grid(comparison)) + "\n")
    for versus in comparison.versus:
        parts.append(_versus_text(comparison, versus))
    notes = _notes(comparison)
    if notes:
        parts.append("".join(f"note: {for_terminal(n)}\n" for n in notes))
    parts += [comparison.explanation(versus) + "\n" for versus in comparison.failed]
    reference = for_terminal(comparison.reference.label)
    parts.append(
        f"{len(comparison.systems)} runs, each against {reference}: {_tally(comparison)}; "
        f"{len(comparison.failed)} failed\n"
    )
    return "\n".join(parts)


def _versus_text(comparison: SystemsComparison, versus: Versus) -> str:
    head = for_terminal(f"{versus.system.label} against {comparison.reference.label}")
    head += f": {versus.verdict.status}"
    if not versus.verdict.metrics:
        return head + "\n"
    text = f"{head} ({paired(versus)} queries paired)\n{text_table(versus_grid(versus))}\n"
    changes = changes_grid(comparison, versus)
    if changes is not None:
        first = for_terminal(comparison.metrics[0])
        text += f"most changed by {first}:\n{text_table(changes)}\n"
    return text


# -- Markdown -------------------------------------------------------------------------------------


def comparison_markdown(comparison: SystemsComparison) -> str:
    """``compare RUN_A RUN_B ... --format markdown``: the same tables as the terminal's, the
    best value per metric in bold, what failed as lists."""
    facts = " ".join(
        f"{what.capitalize()}: {for_markdown(value)}." for what, value in _facts(comparison)
    )
    parts = ["## ragmetrics compare", "", facts, "", markdown_table(runs_grid(comparison))]
    for versus in comparison.versus:
        parts.append(_versus_markdown(comparison, versus))
    notes = _notes(comparison)
    if notes:
        parts.append(notes_markdown(notes))
    if comparison.failed:
        parts.append("### What failed\n")
        parts += [message_markdown(comparison.explanation(v)) for v in comparison.failed]
    parts.append(
        f"{len(comparison.systems)} runs, {len(comparison.failed)} failed against the reference.\n"
    )
    return within_limit("\n".join(parts))


def _versus_markdown(comparison: SystemsComparison, versus: Versus) -> str:
    head = (
        f"### {for_markdown(versus.system.label)} against "
        f"{for_markdown(comparison.reference.label)}: {versus.verdict.status}\n"
    )
    if not versus.verdict.metrics:
        return head
    parts = [head, markdown_table(versus_grid(versus))]
    changes = changes_grid(comparison, versus)
    if changes is not None:
        first = for_markdown(comparison.metrics[0])
        parts.append(f"Most changed by {first}:\n\n{markdown_table(changes)}")
    return "\n".join(parts)


# -- several datasets -----------------------------------------------------------------------------


def status_grid(comparison: DatasetsComparison) -> Table:
    """Each system's verdict against the reference, per pair (``-``: no run there)."""
    pairs = [p.pair for p in comparison.pairs]
    rows = [
        cells([label, *(comparison.status(label, p) for p in pairs)]) for label in comparison.labels
    ]
    return Table(("system", *pairs), tuple(rows), alignment(len(pairs) + 1, 0))


def datasets_document(comparison: DatasetsComparison, *, markdown: bool) -> str:
    """``compare --dataset A=DIR --dataset B=DIR SYSTEM ...`` as text or Markdown: a
    systems x pairs table per metric with the mean (the per-dataset summary's builder; Δ
    against the reference in brackets), each system's verdict per pair, the notes, what
    failed and why, and a tally."""
    from pytest_ragmetrics.report.datasets import comparison_summaries, summary_grid

    render: Render = markdown_table if markdown else text_table
    escape = for_markdown if markdown else for_terminal
    reference = escape(comparison.reference)
    head = "## ragmetrics compare\n\n" if markdown else ""
    parts = [
        f"{head}Reference: {reference}; in brackets each system's Δ against it on that pair "
        "(the verdicts are in the last table).\n"
    ]
    parts += [render(summary_grid(s)).rstrip("\n") + "\n" for s in comparison_summaries(comparison)]
    verdicts = render(status_grid(comparison)).rstrip("\n")
    parts.append(f"Verdicts against {reference}:\n\n{verdicts}\n" if markdown else f"{verdicts}\n")
    parts += _failures(comparison, pair_notes(comparison), markdown=markdown)
    parts.append(
        f"{len(comparison.labels)} systems on {len(comparison.pairs)} pairs, each against "
        f"{escape(comparison.reference)}: {len(comparison.failed)} failed\n"
    )
    text = "\n".join(parts)
    return within_limit(text) if markdown else text


def pair_notes(comparison: DatasetsComparison) -> list[str]:
    """The notes of a comparison over several pairs, then each pair's (named by the pair)."""
    return list(comparison.notes) + [
        f"{p.pair}: {n}" for p in comparison.pairs if p.comparison for n in _notes(p.comparison)
    ]


def _failures(comparison: DatasetsComparison, notes: list[str], *, markdown: bool) -> list[str]:
    """The notes, then why each failed system failed, pair by pair."""
    by_pair = {p.pair: p.comparison for p in comparison.pairs}
    explained = [
        (pair, by_pair[pair].explanation(versus))  # type: ignore[union-attr]
        for pair, versus in comparison.failed
    ]
    if markdown:
        parts = [notes_markdown(notes)] if notes else []
        if explained:
            parts.append("### What failed\n")
        return parts + [message_markdown(f"on {pair}: {text}") for pair, text in explained]
    parts = ["".join(f"note: {for_terminal(n)}\n" for n in notes)] if notes else []
    return parts + [f"on {pair}: {text}\n" for pair, text in explained]
