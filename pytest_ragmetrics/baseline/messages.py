"""The short failure message of a regression, what a test shows by default (as pytest shows a
short assertion diff unless ``-v``): per failed metric (lost values first, then the largest
drop) its Δ with the confidence interval and how many queries got worse, the three most
regressed queries of the first with their text, and what to do.
The full message (:func:`~pytest_ragmetrics.baseline.verdicts.failure_message`) is shown with
``-v`` and kept in the JSON report."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from pytest_ragmetrics.baseline.verdicts import (
    WORDS,
    Against,
    BaselineVerdict,
    MetricVerdict,
    advice,
    failure_message,
    failure_subject,
    moved,
)
from pytest_ragmetrics.controls import show_controls as one_line
from pytest_ragmetrics.deltas import delta_text

if TYPE_CHECKING:
    from pytest_ragmetrics.records import EvaluationRecord

SHOWN_METRICS = 4  # failed metrics given a line each; the others are named
SHOWN_QUERIES = 3  # most regressed queries, with their text
MORE = (
    "(-v shows the full message: every most regressed query, the unjudged documents behind a "
    "drop, the tolerance; the JSON report keeps it)"
)


def compact_message(
    recorded: EvaluationRecord,
    verdict: BaselineVerdict,
    baseline_path: str,
    *,
    texts: Mapping[str, str] | None = None,
    against: Against = "baseline",
) -> str:
    """The short failure text of a regressed evaluation (a not comparable one is short already
    and keeps its full text), ending with what to do and how to see more."""
    if verdict.status != "regressed":
        return failure_message(recorded, verdict, baseline_path, against=against, texts=texts)
    words = WORDS[against]
    where = failure_subject(recorded)
    lines = [f"ragmetrics: {where} {words['regressed'].format(path=baseline_path)}:"]
    failed = sorted(verdict.failed_metrics, key=_severity)
    for metric in failed[:SHOWN_METRICS]:
        lines += _metric_lines(metric, words)
    if len(failed) > SHOWN_METRICS:
        rest = [m.metric for m in failed[SHOWN_METRICS:]]
        lines.append(f"  and {len(rest)} more: {', '.join(rest)}")
    lines += _worst_lines(failed, texts or {})
    if any(m.holes is not None and m.holes.explained for m in failed):
        lines.append(
            "  the drop may come from newly retrieved documents nobody judged (-v: how many)"
        )
    if verdict.identity_change:
        lines.append(f"  configuration changed: {one_line(verdict.identity_change)}")
    if verdict.depth_note:
        lines.append(f"  {one_line(verdict.depth_note)}")
    if verdict.only_baseline or verdict.only_current:
        lines.append(
            f"  queries: {len(verdict.only_baseline)} only in {words['only_before']}, "
            f"{len(verdict.only_current)} only in {words['only_after']}"
        )
    lines.append(advice(against, verdict.status, baseline_path))
    lines.append(MORE)
    return "\n".join(lines)


def _severity(m: MetricVerdict) -> tuple[int, float]:
    """Lost values first, then the largest drop: what the reader should look at first."""
    return (0 if m.status == "lost" else 1, m.delta if m.delta == m.delta else 0.0)


def _metric_lines(m: MetricVerdict, words: Mapping[str, str]) -> list[str]:
    """One line for a failed metric (two when it also lost values), and the first clause of
    its note when that is why it failed (a collapse, a mean over fewer queries)."""
    lines = []
    if m.status == "lost":
        if not m.computed:
            return [
                f"  {m.metric}: lost: not computed by this run (the {words['before']} has a "
                f"value on {m.valued_before} queries)"
            ]
        of = f" of {m.valued_before}" if m.valued_before else ""
        named = ", ".join(one_line(q) for q in m.lost_queries[:SHOWN_QUERIES])
        more = ", ..." if m.lost > SHOWN_QUERIES else ""
        lines.append(f"  {m.metric}: lost on {m.lost}{of} queries (n/a now): {named}{more}")
    c = m.comparison
    if c is None or not c.n:
        if m.status == "lost":
            return lines
        # No query paired (the entry holds no per-query values): the means alone, said so.
        return [
            *lines,
            f"  {m.metric}: {m.baseline:.4f} → {m.current:.4f}, Δ {delta_text(m.delta)} (no "
            "per-query values to pair: means only)",
        ]
    lines.append(
        f"  {m.metric}: {m.baseline:.4f} → {m.current:.4f}, Δ {delta_text(m.delta)} "
        f"(95% CI [{delta_text(c.ci_low)}, {delta_text(c.ci_high)}], p = {c.p_value:.4f}); "
        f"{c.worse} of {c.n} queries worse, {c.better} better"
    )
    if m.note:
        lines.append(f"    {one_line(m.note.split('; ')[0])}")
    return lines


def _worst_lines(failed: list[MetricVerdict], texts: Mapping[str, str]) -> list[str]:
    """The most regressed queries of the first failed metric that has some, with their text."""
    for m in failed:
        if m.worst:
            lines = [f"  most regressed in {m.metric}:"]
            lines += [
                f"    {moved(q, d, rb, ra, texts.get(q))}"
                for q, d, rb, ra in m.worst[:SHOWN_QUERIES]
            ]
            return lines
    return []
