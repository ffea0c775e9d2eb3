"""Markdown (for $GITHUB_STEP_SUMMARY and pull-request comments): the session report.

The session report has, per layer, one table with a row per evaluation and a column per metric,
like the terminal table: the value, Δ against the baseline in brackets, the best value of each
metric in bold, and the status. Evaluations of several datasets get one table per dataset (a
best value across datasets would mean nothing).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.report.terminal import LAYER_TITLES, columns
from pytest_ragmetrics.vocabulary import LAYERS

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import MetricVerdict
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome

MAX_BYTES = 1024 * 1024 - 4096  # GitHub rejects step summaries over 1 MiB
_MARKS = {"regressed": "▼", "improved": "▲"}
# Characters that would turn text into markup; an underscore only at a word's edge (GitHub
# never reads one inside a word as emphasis, so ndcg_at_10 stays readable).
_MARKUP = re.compile(r"[\\`*<>|]|(?<![0-9A-Za-z])_|_(?![0-9A-Za-z])|\](?=\()")


def inline(text: str) -> str:
    """``text`` as literal Markdown on one line (table cells, list items)."""
    return _MARKUP.sub(lambda m: "\\" + m.group(0), " ".join(str(text).splitlines()))


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
        groups = _by_dataset(chosen)
        for name, group in groups.items():
            if len(groups) > 1:
                parts.append(f"#### {inline(name)}\n")
            parts.append(_layer_table(group, outcome.metrics))
        notes = outcome.notes(layer)
        if notes:
            parts.append("Notes:\n\n" + "".join(f"- {inline(n)}\n" for n in notes))
    return _within_limit("\n".join(parts))


def _by_dataset(chosen: Sequence[Checked]) -> dict[str, list[Checked]]:
    groups: dict[str, list[Checked]] = {}
    for checked in chosen:
        groups.setdefault(_dataset_name(checked.record.dataset), []).append(checked)
    return groups


def _dataset_name(dataset: Mapping[str, Any] | None) -> str:
    if not dataset:
        return "no dataset recorded"
    name = str(dataset.get("name") or "dataset")
    extra = [str(dataset[k]) for k in ("split", "source") if dataset.get(k)]
    return f"{name} ({', '.join(extra)})" if extra else name


def _layer_table(chosen: Sequence[Checked], preferred: Sequence[str]) -> str:
    """Evaluations as rows, metrics as columns: value (Δ against the baseline), best in bold."""
    names = columns(chosen, preferred)
    best = {m: _best(_value(c, m) for c in chosen) for m in names}
    several = len(chosen) > 1
    shown = {"bold": False, "delta": False, "missed": False}
    lines = [
        "| evaluation | " + " | ".join(inline(m) for m in names) + " | status |",
        "|---|" + "---:|" * len(names) + "---|",
    ]
    for checked in chosen:
        verdict = checked.outcome.baseline
        deltas = {m.metric: m for m in verdict.metrics} if verdict is not None else {}
        missed = {t.metric for t in checked.outcome.thresholds if not t.passed}
        cells = []
        for metric in names:
            if metric not in checked.record.evaluation.metrics:
                cells.append("")
                continue
            value = _value(checked, metric)
            cell = "n/a" if value is None else f"{value:.4f}"
            if several and value is not None and value == best[metric]:
                cell, shown["bold"] = f"**{cell}**", True
            if metric in deltas:
                cell, shown["delta"] = cell + _delta(deltas[metric]), True
            if metric in missed:
                cell, shown["missed"] = cell + " ✗", True
            cells.append(cell)
        lines.append(
            f"| {inline(checked.label)} | "
            + " | ".join(cells)
            + f" | {inline(checked.outcome.status)} |"
        )
    legend = []
    if shown["bold"]:
        legend.append("best value per metric in bold")
    if shown["delta"]:
        legend.append(
            "in brackets Δ against the baseline, ▼ regressed / ▲ improved beyond the tolerance"
        )
    if shown["missed"]:
        legend.append("✗ below the threshold")
    text = "\n".join(lines) + "\n"
    if legend:
        sentence = "; ".join(legend)
        text += f"\n{sentence[0].upper()}{sentence[1:]}.\n"
    return text


def _delta(metric: MetricVerdict) -> str:
    mark = _MARKS.get(metric.status, "")
    return f" ({metric.delta:+.4f}{' ' + mark if mark else ''})"


def _best(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


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
