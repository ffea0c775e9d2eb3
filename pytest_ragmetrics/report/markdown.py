"""The Markdown report (for $GITHUB_STEP_SUMMARY): per layer, per metric a table, best in bold."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_ragmetrics.report.terminal import LAYERS, _columns, evaluation_label, status_of

MAX_BYTES = 1024 * 1024 - 4096  # GitHub rejects step summaries over 1 MiB


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def markdown_report(
    entries: Sequence[Mapping[str, Any]],
    preferred: Sequence[str],
    *,
    title: str = "pytest-ragmetrics",
) -> str:
    """Markdown text; truncated with a note if it would exceed GitHub's 1 MiB summary limit."""
    ordered = sorted(entries, key=lambda e: (e["test"], e["name"]))
    parts = [f"## {title}\n"]
    if not ordered:
        parts.append("No evaluations were recorded.\n")
    for layer, heading in LAYERS:
        chosen = [e for e in ordered if e["layer"] == layer]
        if not chosen:
            continue
        parts.append(f"### {heading.capitalize()}\n")
        for metric in _columns(chosen, preferred):
            rows = [e for e in chosen if e["metrics"].get(metric) is not None]
            if not rows:
                continue
            best = max(float(e["metrics"][metric]) for e in rows)
            lines = [
                f"#### {metric}\n",
                "| evaluation | value | baseline | Δ | status |",
                "|---|---:|---:|---:|---|",
            ]
            for e in rows:
                value = float(e["metrics"][metric])
                shown = f"{value:.4f}"
                if len(rows) > 1 and value == best:
                    shown = f"**{shown}**"
                verdict = (e.get("outcome") or {}).get("baseline") or {}
                m = next((x for x in verdict.get("metrics", []) if x["metric"] == metric), None)
                base = f"{m['baseline']:.4f}" if m else "-"
                delta = f"{m['delta']:+.4f}" if m else "-"
                lines.append(
                    f"| {_cell(evaluation_label(e))} | {shown} | {base} | {delta} | "
                    f"{_cell(status_of(e))} |"
                )
            parts.append("\n".join(lines) + "\n")
        notes = []
        for e in chosen:
            for note in e.get("notes", []):
                notes.append(f"- {_cell(evaluation_label(e))}: {_cell(note)}")
            gate = (e.get("outcome") or {}).get("gate")
            if gate:
                notes.append(f"- {_cell(evaluation_label(e))}: {_cell(gate)}")
        if notes:
            parts.append("Notes:\n\n" + "\n".join(notes) + "\n")
    text = "\n".join(parts)
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_BYTES:
        cut = encoded[:MAX_BYTES].decode("utf-8", errors="ignore")
        text = cut[: cut.rfind("\n") + 1] + (
            "\n_Report truncated to stay under GitHub's 1 MiB step-summary limit; see the JSON "
            "report (--ragmetrics-json) for everything._\n"
        )
    return text
