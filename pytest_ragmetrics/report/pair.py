"""The renderers of ``ragmetrics compare BASELINE_OR_REPORT REPORT``: the table (text or
Markdown) with the failure messages, and the HTML page's paragraph on what was not compared.
Each names every evaluation, metric and query of the baseline that was not compared."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.deltas import OTHER_QUERIES, delta_text, over_other_queries

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.pair import PairComparison
    from pytest_ragmetrics.baseline.verdicts import Against


def pair_table(comparison: PairComparison, *, markdown: bool, against: Against) -> str:
    """A row per metric, then the notes, what failed and why, what was not compared, and the
    summary."""
    from tabulate import tabulate

    from pytest_ragmetrics.report.escaping import for_markdown, for_terminal

    rows, elsewhere = _rows(comparison)
    cell = for_markdown if markdown else for_terminal
    text = (
        tabulate(
            [[cell(value) for value in row] for row in rows],
            headers=["evaluation", "metric", "before", "after", "Δ", "status"],
            tablefmt="github" if markdown else "simple",
            disable_numparse=True,
        )
        + "\n"
    )
    if elsewhere:
        text += f"\n{OTHER_QUERIES_LEGEND}\n"
    notes = comparison.notes()
    if markdown:
        from pytest_ragmetrics.report.markdown import failures_markdown, notes_markdown

        text += f"\n{notes_markdown(notes)}" if notes else ""
        text += failures_markdown(comparison.failed, comparison.before, against=against)
        lines = comparison.not_compared_lines()
        if lines:
            text += "\n### Not compared\n\n" + "".join(
                f"{'  ' if line.startswith('  ') else ''}- {for_markdown(line.strip())}\n"
                for line in lines
            )
    else:
        from pytest_ragmetrics.baseline.verdicts import failure_message

        text += "".join(f"\nnote: {for_terminal(n)}" for n in notes) + ("\n" if notes else "")
        for recorded, verdict in comparison.failed:
            message = failure_message(recorded, verdict, comparison.before, against=against)
            text += f"\n{message}\n"
        lines = comparison.not_compared_lines()
        if lines:
            text += "\n" + "\n".join(for_terminal(line) for line in lines) + "\n"
    return text + f"\n{comparison.summary()}\n"


# Under the table when some Δ is over other queries than the means beside it.
OTHER_QUERIES_LEGEND = (
    f"{OTHER_QUERIES} Δ over only the queries both hold, not those of the means shown: the "
    "· same queries row under it gives the means over them (the notes say how many)"
)


def _rows(comparison: PairComparison) -> tuple[list[list[str]], bool]:
    """The table's rows: per metric the means each side records, Δ and the status; where Δ
    is over other queries than those means (a side holds queries the other lacks), Δ marked
    :data:`OTHER_QUERIES` and a ``· same queries`` row with the means over the queries both
    hold. Also whether any Δ is so marked."""
    rows: list[list[str]] = []
    elsewhere = False
    for recorded, verdict in comparison.results:
        where = f"{recorded.test} [{recorded.name}]"
        if not verdict.metrics:
            rows.append([where, "", "", "", "", verdict.status])
        before = comparison.before_means.get(recorded.key, {})
        after = recorded.evaluation.mean
        for m in verdict.metrics:
            shown = (before.get(m.metric, m.baseline), after.get(m.metric, m.current))
            other = over_other_queries(m.baseline, shown[0]) or over_other_queries(
                m.current, shown[1]
            )
            numbers = [_value(shown[0]), _value(shown[1]), delta_text(m.delta)]
            if other:
                numbers[2] += f" {OTHER_QUERIES}"
            status = f"lost on {m.lost}" if m.status == "lost" else m.status
            rows.append([where, m.metric, *numbers, status])
            if other:
                same = [_value(m.baseline), _value(m.current)]
                rows.append(["", "· same queries", *same, "", ""])
            elsewhere = elsewhere or other
            where = ""
    return rows, elsewhere


def _value(value: float) -> str:
    return "n/a" if math.isnan(value) else f"{value:.4f}"


def not_compared_html(comparison: Mapping[str, Any]) -> str:
    """The HTML page's paragraph naming what was not compared ('' when everything was):
    ``comparison`` is the document's "comparison" field (see :func:`report.html.
    comparison_document`)."""
    found = comparison.get("not_compared")
    lines = found.get("lines") if isinstance(found, Mapping) else None
    if not isinstance(lines, list) or not lines:
        return ""
    parts, items = [], []
    for line in (str(line) for line in lines):
        if line.startswith("  "):
            items.append(f"<li><bdi>{html.escape(line.strip())}</bdi></li>")
            continue
        if items:
            parts.append(f"<ul>{''.join(items)}</ul>")
            items = []
        parts.append(f"<p><strong>{html.escape(line)}</strong></p>")
    if items:
        parts.append(f"<ul>{''.join(items)}</ul>")
    return f'<div class="not-compared" id="not-compared">{"".join(parts)}</div>'
