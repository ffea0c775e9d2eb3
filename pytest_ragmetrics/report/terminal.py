"""Terminal summary: one table per layer, evaluations as rows, then baseline deltas and notes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

LAYERS = (("retrieval", "retrieval layer"), ("answer", "answer layer"))


def evaluation_label(entry: Mapping[str, Any]) -> str:
    return f"{entry['test']} [{entry['name']}]"


def status_of(entry: Mapping[str, Any]) -> str:
    """One word for the table: threshold failures first, then the baseline verdict."""
    outcome = entry.get("outcome") or {}
    baseline = str((outcome.get("baseline") or {}).get("status", "-"))
    if outcome.get("gate"):
        return f"{baseline} (not enforced)"
    if any(not t["passed"] for t in outcome.get("thresholds", [])):
        return (
            "below threshold" if baseline in ("-", "ok", "new") else f"below threshold, {baseline}"
        )
    return baseline


def _fmt(value: Any) -> str:
    if value is None:
        return "n/a"
    return f"{float(value):.4f}"


def _columns(entries: Sequence[Mapping[str, Any]], preferred: Sequence[str]) -> list[str]:
    present: dict[str, None] = {}
    for entry in entries:
        for metric in entry["metrics"]:
            present[metric] = None
    ordered = [m for m in preferred if m in present]
    return ordered + [m for m in present if m not in ordered]


def layer_table(entries: Sequence[Mapping[str, Any]], preferred: Sequence[str]) -> str:
    """A tabulate table of one layer's evaluations, with a Δ row under compared ones."""
    from tabulate import tabulate

    columns = _columns(entries, preferred)
    rows: list[list[str]] = []
    for entry in entries:
        metrics = entry["metrics"]
        rows.append(
            [
                evaluation_label(entry),
                *(_fmt(metrics.get(m)) if m in metrics else "" for m in columns),
                status_of(entry),
            ]
        )
        verdict = (entry.get("outcome") or {}).get("baseline") or {}
        deltas = {m["metric"]: m for m in verdict.get("metrics", [])}
        if deltas:
            rows.append(
                [
                    "  · baseline",
                    *(_fmt(deltas[m]["baseline"]) if m in deltas else "" for m in columns),
                    "",
                ]
            )
            rows.append(
                ["  · Δ", *(_delta_cell(deltas[m]) if m in deltas else "" for m in columns), ""]
            )
    return tabulate(
        rows,
        headers=["evaluation", *columns, "status"],
        tablefmt="simple",
        disable_numparse=True,
        colalign=("left", *("right",) * len(columns), "left"),
    )


def _delta_cell(metric: Mapping[str, Any]) -> str:
    mark = {"regressed": " !", "improved": " +"}.get(metric["status"], "")
    return f"{metric['delta']:+.4f}{mark}"


def summary_lines(
    entries: Sequence[Mapping[str, Any]],
    preferred: Sequence[str],
    *,
    update_counts: Mapping[str, int] | None = None,
    stale: Sequence[tuple[str, str]] = (),
    baseline_path: str = "",
) -> list[tuple[str, str]]:
    """(kind, text) pairs: kind is 'section' (a separator title) or 'line'."""
    out: list[tuple[str, str]] = []
    for layer, title in LAYERS:
        chosen = [e for e in entries if e["layer"] == layer]
        if not chosen:
            continue
        out.append(("section", f"ragmetrics: {title}"))
        out += [("line", line) for line in layer_table(chosen, preferred).splitlines()]
        notes: dict[str, None] = {}
        for entry in chosen:
            label = evaluation_label(entry)
            for note in entry.get("notes", []):
                notes[f"{label}: {note}"] = None
            outcome = entry.get("outcome") or {}
            if outcome.get("gate"):
                notes[f"{label}: {outcome['gate']}"] = None
            verdict = outcome.get("baseline") or {}
            for metric in verdict.get("metrics", []):
                if metric.get("note"):
                    notes[f"{label}: {metric['metric']} {metric['note']}"] = None
            if verdict.get("identity_change"):
                notes[
                    f"{label}: configuration changed since the baseline: "
                    f"{verdict['identity_change']}"
                ] = None
            for reason in verdict.get("reasons", []):
                notes[f"{label}: not comparable: {reason}"] = None
        if notes:
            out.append(("line", ""))
            out += [("line", f"note: {n}") for n in notes]
    if update_counts is not None:
        out.append(("line", ""))
        out.append(
            (
                "line",
                f"ragmetrics baseline {baseline_path}: {update_counts['updated']} "
                f"updated, {update_counts['added']} added, "
                f"{update_counts['removed']} removed",
            )
        )
    if stale:
        out.append(("line", ""))
        out.append(
            (
                "line",
                f"ragmetrics: {len(stale)} baseline entries belong to tests that no "
                "longer exist (stale; --ragmetrics-update-baseline removes them):",
            )
        )
        out += [("line", f"  {test} [{name}]") for test, name in stale]
    return out
