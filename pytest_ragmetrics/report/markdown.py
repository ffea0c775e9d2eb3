"""The Markdown report (for $GITHUB_STEP_SUMMARY): per layer, per metric a table, best in bold."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_ragmetrics.report.terminal import LAYER_TITLES, columns
from pytest_ragmetrics.vocabulary import LAYERS

if TYPE_CHECKING:
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome

MAX_BYTES = 1024 * 1024 - 4096  # GitHub rejects step summaries over 1 MiB


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_report(outcome: SessionOutcome, *, title: str = "pytest-ragmetrics") -> str:
    """Markdown text; truncated with a note if it would exceed GitHub's 1 MiB summary limit."""
    parts = [f"## {title}\n"]
    if not outcome.evaluations:
        parts.append("No evaluations were recorded.\n")
    for layer in LAYERS:
        chosen = outcome.layer(layer)
        if not chosen:
            continue
        parts.append(f"### {LAYER_TITLES[layer].capitalize()}\n")
        for metric in columns(chosen, outcome.metrics):
            table = _metric_table(chosen, metric)
            if table:
                parts.append(table)
        notes = []
        for checked in chosen:
            for note in checked.record.evaluation.notes:
                notes.append(f"- {_cell(checked.label)}: {_cell(note)}")
            if checked.outcome.gate:
                notes.append(f"- {_cell(checked.label)}: {_cell(checked.outcome.gate)}")
        if notes:
            parts.append("Notes:\n\n" + "\n".join(notes) + "\n")
    return _within_limit("\n".join(parts))


def _metric_table(chosen: Sequence[Checked], metric: str) -> str:
    rows = [c for c in chosen if _value(c, metric) is not None]
    if not rows:
        return ""
    best = max(float(_value(c, metric) or 0.0) for c in rows)
    lines = [
        f"#### {metric}\n",
        "| evaluation | value | baseline | Δ | status |",
        "|---|---:|---:|---:|---|",
    ]
    for checked in rows:
        value = float(_value(checked, metric) or 0.0)
        shown = f"{value:.4f}"
        if len(rows) > 1 and value == best:
            shown = f"**{shown}**"
        verdict = checked.outcome.baseline
        m = next((x for x in verdict.metrics if x.metric == metric), None) if verdict else None
        base = f"{m.baseline:.4f}" if m else "-"
        delta = f"{m.delta:+.4f}" if m else "-"
        lines.append(
            f"| {_cell(checked.label)} | {shown} | {base} | {delta} | "
            f"{_cell(checked.outcome.status)} |"
        )
    return "\n".join(lines) + "\n"


def _value(checked: Checked, metric: str) -> float | None:
    value = checked.record.evaluation.mean.get(metric)
    return None if value is None or value != value else value


def _within_limit(text: str) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_BYTES:
        cut = encoded[:MAX_BYTES].decode("utf-8", errors="ignore")
        text = cut[: cut.rfind("\n") + 1] + (
            "\n_Report truncated to stay under GitHub's 1 MiB step-summary limit; see the JSON "
            "report (--ragmetrics-json) for everything._\n"
        )
    return text
