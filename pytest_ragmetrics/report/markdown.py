"""Markdown (for $GITHUB_STEP_SUMMARY and pull-request comments): the session report, and the
details of ``ragmetrics compare BASELINE_OR_REPORT REPORT --format markdown`` (the runs form is
in :mod:`pytest_ragmetrics.report.comparison`).

The session report has, per layer, one table with a row per evaluation and a column per metric,
like the terminal table: the value, Δ against the baseline in brackets, the best value of each
metric in bold, and the status. Evaluations of several datasets get one table per dataset (a
best value across datasets would mean nothing). Failure explanations are lists, not text.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.deltas import OTHER_QUERIES, delta_text, over_other_queries
from pytest_ragmetrics.report.escaping import for_markdown as inline
from pytest_ragmetrics.report.terminal import LAYER_TITLES, columns
from pytest_ragmetrics.vocabulary import LAYERS

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import Against, BaselineVerdict, MetricVerdict
    from pytest_ragmetrics.records import EvaluationRecord
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome

MAX_BYTES = 1024 * 1024 - 4096  # GitHub rejects step summaries over 1 MiB
MARKS = {"regressed": "▼", "improved": "▲", "lost": "▼"}


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
            parts.append(notes_markdown(notes))
    from pytest_ragmetrics.report.datasets import SUMMARY_NOTE, dataset_summaries, summary_table

    summaries = dataset_summaries(outcome.evaluations, outcome.metrics, outcome.dataset_order)
    if summaries:
        parts.append(f"### Per dataset\n\n{SUMMARY_NOTE[0].upper()}{SUMMARY_NOTE[1:]}.\n")
        parts += [summary_table(s, "github") + "\n" for s in summaries]
    lost = outcome.lost_entries_lines()
    if lost:
        parts.append("### Lost baseline entries\n\n" + "".join(_lost_line(line) for line in lost))
    unchecked = outcome.unchecked_lines()
    if unchecked:
        parts.append("### Thresholds not checked\n\n" + "".join(map(_lost_line, unchecked)))
    return within_limit("\n".join(parts))


def _lost_line(line: str) -> str:
    """A headline of :meth:`SessionOutcome.lost_entries_lines` as a paragraph, an entry as a
    list item."""
    if line.startswith("  "):
        return f"- {inline(line.strip())}\n"
    return f"\n{inline(line, starts_line=True)}\n\n"


def notes_markdown(notes: Sequence[str]) -> str:
    return "Notes:\n\n" + "".join(f"- {inline(n, starts_line=True)}\n" for n in notes)


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
    shown = {"bold": False, "delta": False, "missed": False, "elsewhere": False}
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
                # A metric of the baseline this run no longer computes: lost, as the terminal
                # shows it; a metric of other evaluations only: empty.
                lost = metric in deltas and deltas[metric].status == "lost"
                cells.append("not computed" + _delta(deltas[metric]) if lost else "")
                shown["delta"] = shown["delta"] or lost
                continue
            value = _value(checked, metric)
            cell = "n/a" if value is None else f"{value:.4f}"
            if several and value is not None and value == best[metric]:
                cell, shown["bold"] = f"**{cell}**", True
            if metric in deltas:
                found = deltas[metric]
                other = over_other_queries(found.current, value)
                cell, shown["delta"] = cell + _delta(found, OTHER_QUERIES if other else ""), True
                shown["elsewhere"] = shown["elsewhere"] or other
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
    if shown["elsewhere"]:
        legend.append(
            f"{OTHER_QUERIES} Δ over only the queries both the baseline and this run hold, not "
            "those of the value shown: the notes give the means over them"
        )
    if shown["missed"]:
        legend.append("✗ below the threshold")
    text = "\n".join(lines) + "\n"
    if legend:
        sentence = "; ".join(legend)
        text += f"\n{sentence[0].upper()}{sentence[1:]}.\n"
    return text


def _delta(metric: MetricVerdict, other: str = "") -> str:
    """`` (Δ mark)`` after a value; ``other`` marks a Δ over other queries than the value's."""
    mark = MARKS.get(metric.status, "")
    if metric.status == "lost":
        return f" (lost on {metric.lost} queries {mark})"
    marks = " ".join(m for m in (mark, other) if m)
    return f" ({delta_text(metric.delta)}{' ' + marks if marks else ''})"


def _best(values: Any) -> float | None:
    present = [v for v in values if v is not None]
    return max(present) if present else None


def _value(checked: Checked, metric: str) -> float | None:
    value = checked.record.evaluation.mean.get(metric)
    return None if value is None or value != value else value


def within_limit(text: str) -> str:
    encoded = text.encode("utf-8")
    if len(encoded) > MAX_BYTES:
        cut = encoded[:MAX_BYTES].decode("utf-8", errors="ignore")
        text = cut[: cut.rfind("\n") + 1] + (
            "\n_Report truncated to stay under GitHub's 1 MiB step-summary limit; see the JSON "
            "report (--ragmetrics-json) for everything._\n"
        )
    return text


# -- failure explanations ----------------------------------------------------------------------


def message_markdown(message: str) -> str:
    """A failure message (``baseline.verdicts.failure_message``) as Markdown: its first line
    in bold, its indented lines as a nested list, "What to do" as a paragraph."""
    # Only "\n" is the message's own line structure; any other line break is in a value.
    first, *rest = message.split("\n")
    out = [f"**{inline(first)}**", ""]
    listing = False
    for line in rest:
        depth = len(line) - len(line.lstrip(" "))
        if depth:
            out.append("  " * (depth // 2 - 1) + f"- {inline(line.strip(), starts_line=True)}")
            listing = True
            continue
        if listing:
            out.append("")
            listing = False
        out.append(inline(line, starts_line=True))
    return "\n".join(out) + "\n"


def failures_markdown(
    failed: Sequence[tuple[EvaluationRecord, BaselineVerdict]], before: str, *, against: Against
) -> str:
    """The details under ``compare BASELINE_OR_REPORT REPORT --format markdown``'s table."""
    from pytest_ragmetrics.baseline.verdicts import failure_message

    if not failed:
        return ""
    parts = ["", "### What failed", ""]
    for recorded, verdict in failed:
        parts.append(message_markdown(failure_message(recorded, verdict, before, against=against)))
    return "\n".join(parts)
