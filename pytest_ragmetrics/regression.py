"""Regression verdicts: compare an evaluation with its baseline entry and explain the result."""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pytest_ragmetrics.baseline import UPDATE_HINT, round_values
from pytest_ragmetrics.errors import BaselineError
from pytest_ragmetrics.recorder import RecordedEvaluation
from pytest_ragmetrics.settings import Tolerances
from pytest_ragmetrics.stats import DEFAULT_SEED, PairedComparison, compare_paired

Status = Literal["ok", "improved", "regressed", "new", "not comparable"]


def describe_change(
    part: str,
    before: Mapping[str, str] | None,
    after: Mapping[str, str] | None,
    count_before: int | None,
    count_after: int | None,
) -> str:
    """e.g. 'corpus: 12 docs added, 3 changed, 1 removed (e.g. d17, d4, ...)'."""
    singular, plural = {
        "corpus": ("doc", "docs"),
        "queries": ("query", "queries"),
        "qrels": ("query's judgments", "queries' judgments"),
    }.get(part, ("", ""))
    if before is not None and after is not None:
        added = [k for k in after if k not in before]
        removed = [k for k in before if k not in after]
        changed = [k for k in after if k in before and before[k] != after[k]]
        bits = [
            f"{len(ids)} {kind}"
            for ids, kind in ((added, "added"), (changed, "changed"), (removed, "removed"))
            if ids
        ]
        if not bits:
            return f"{part}: same items, different order"
        total = len(added) + len(changed) + len(removed)
        first = bits[0].split(" ", 1)
        bits[0] = f"{first[0]} {singular if first[0] == '1' else plural} {first[1]}"
        examples = (added + changed + removed)[:5]
        more = ", ..." if total > 5 else ""
        return f"{part}: {', '.join(bits)} (e.g. {', '.join(examples)}{more})"
    if count_before is not None and count_after is not None and count_before != count_after:
        return (
            f"{part}: {count_before} → {count_after} {plural} "
            f"({count_after - count_before:+d}), contents differ"
        )
    return f"{part}: contents differ (same number of {plural or 'items'})"


# ---------------------------------------------------------------------------------------------
# Comparison.


@dataclass
class MetricVerdict:
    metric: str
    baseline: float
    current: float
    delta: float
    tolerance: str
    allowed_drop: float
    status: Status
    comparison: PairedComparison | None = None
    worst: list[tuple[str, float, int, int]] = field(default_factory=list)
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "metric": self.metric,
            "baseline": self.baseline,
            "current": self.current,
            "delta": self.delta,
            "tolerance": self.tolerance,
            "status": self.status,
        }
        if self.comparison is not None:
            c = self.comparison
            out.update(
                {
                    "ci95": [c.ci_low, c.ci_high],
                    "p_value": c.p_value,
                    "queries_worse": c.worse,
                    "queries_better": c.better,
                    "queries_same": c.same,
                }
            )
        if self.worst:
            out["most_regressed"] = [
                {"query": q, "delta": d, "rank_before": rb, "rank_after": ra}
                for q, d, rb, ra in self.worst
            ]
        if self.note:
            out["note"] = self.note
        return round_values(out)  # type: ignore[no-any-return]


@dataclass
class Verdict:
    status: Status
    metrics: list[MetricVerdict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    only_baseline: list[str] = field(default_factory=list)
    only_current: list[str] = field(default_factory=list)
    identity_change: str = ""

    @property
    def failed_metrics(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.status == "regressed"]

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "metrics": [m.to_dict() for m in self.metrics],
        }
        if self.reasons:
            out["reasons"] = self.reasons
        if self.only_baseline:
            out["queries_only_in_baseline"] = self.only_baseline
        if self.only_current:
            out["queries_only_in_current"] = self.only_current
        if self.identity_change:
            out["identity_change"] = self.identity_change
        return out


def _moved(query: str, delta: float, before: int, after: int) -> str:
    """How a query's first relevant document moved, e.g. '1234: rank 1 → 7 (Δ -0.613)'."""
    if before == after and before > 0:
        return f"{query}: first relevant still at rank {before}, others fell (Δ {delta:+.3f})"
    return f"{query}: rank {_rank_text(before)} → {_rank_text(after)} (Δ {delta:+.3f})"


def _rank_text(rank: int) -> str:
    return str(rank) if rank > 0 else "not retrieved"


def _identity_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    if before == after:
        return ""
    keys = sorted(set(before) | set(after))
    changed = []
    for key in keys:
        if before.get(key) != after.get(key):
            changed.append(f"{key}: {_short(before.get(key))} → {_short(after.get(key))}")
    return "; ".join(changed)


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def compare_to_baseline(
    recorded: RecordedEvaluation,
    entry: Mapping[str, Any] | None,
    tolerances: Tolerances,
    *,
    alpha: float | None = None,
    seed: int = DEFAULT_SEED,
    dataset_change: Mapping[str, str] | None = None,
) -> Verdict:
    """Compare one recorded evaluation with its baseline entry.

    ``dataset_change`` maps a dataset part to a human description of how it changed (built by
    the caller, who can see both datasets); without it a generic description is used.
    """
    if entry is None:
        return Verdict("new")
    # Compare at the baseline's precision, so an unchanged run has a delta of exactly 0.
    current = round_values(recorded.to_dict())
    reasons = _incomparable(entry, current, dataset_change or {})
    verdict = Verdict(
        "ok",
        identity_change=_identity_change(
            {"k": entry.get("k"), **(entry.get("identity") or {})},
            {"k": current["k"], **(current["identity"] or {})},
        ),
    )
    base_pq: Mapping[str, Mapping[str, Any]] = entry.get("per_query") or {}
    cur_pq: Mapping[str, Mapping[str, Any]] = current["per_query"]
    verdict.only_baseline = sorted(q for q in base_pq if q not in cur_pq)
    verdict.only_current = sorted(q for q in cur_pq if q not in base_pq)
    if reasons:
        verdict.status = "not comparable"
        verdict.reasons = reasons
        return verdict
    shared = [q for q in cur_pq if q in base_pq]
    base_rank = (entry.get("details") or {}).get("first_relevant_rank", {})
    cur_rank = current["details"].get("first_relevant_rank", {})
    for metric, now in current["metrics"].items():
        before = entry.get("metrics", {}).get(metric)
        if before is None or now is None:
            continue
        tol = tolerances.for_metric(metric)
        b = np.asarray([_num(base_pq[q].get(metric)) for q in shared])
        c = np.asarray([_num(cur_pq[q].get(metric)) for q in shared])
        comparison = compare_paired(b, c, seed=seed) if shared else None
        delta = float(now) - float(before)
        allowed = tol.allowed_drop(float(before))
        status: Status = "ok"
        note = ""
        if delta < -allowed - 1e-12:
            status = "regressed"
            if alpha is not None and comparison is not None and comparison.p_value >= alpha:
                status = "ok"
                note = (
                    f"dropped {delta:+.4f} but not significantly (p = "
                    f"{comparison.p_value:.4f} ≥ alpha {alpha:g})"
                )
        elif delta > allowed + 1e-12:
            status = "improved"
        worst: list[tuple[str, float, int, int]] = []
        if status == "regressed" and shared:
            d = c - b
            order = np.argsort(d, kind="stable")
            for i in order[:5]:
                if not d[i] < 0:
                    break
                q = shared[int(i)]
                worst.append(
                    (q, float(d[i]), int(base_rank.get(q, 0) or 0), int(cur_rank.get(q, 0) or 0))
                )
        verdict.metrics.append(
            MetricVerdict(
                metric,
                float(before),
                float(now),
                delta,
                str(tol),
                allowed,
                status,
                comparison,
                worst,
                note,
            )
        )
    statuses = {m.status for m in verdict.metrics}
    verdict.status = (
        "regressed" if "regressed" in statuses else "improved" if "improved" in statuses else "ok"
    )
    return verdict


def _num(value: Any) -> float:
    return math.nan if value is None else float(value)


def _incomparable(
    entry: Mapping[str, Any], current: Mapping[str, Any], dataset_change: Mapping[str, str]
) -> list[str]:
    reasons: list[str] = []
    if entry.get("layer") != current["layer"]:
        reasons.append(f"layer: {entry.get('layer')} → {current['layer']}")
    if (entry.get("semantics") or None) != (current["semantics"] or None):
        reasons.append(
            f"metric semantics: {_short(entry.get('semantics'))} → {_short(current['semantics'])}"
        )
    before = ((entry.get("dataset") or {}).get("fingerprints")) or {}
    after = ((current.get("dataset") or {}).get("fingerprints")) or {}
    for part in ("corpus", "queries", "qrels"):
        if part in before and part in after and before[part] != after[part]:
            reasons.append(dataset_change.get(part) or f"{part}: contents differ")
        elif (part in before) != (part in after):
            reasons.append(f"{part}: the baseline and this run use different datasets")
    return reasons


def failure_message(recorded: RecordedEvaluation, verdict: Verdict, baseline_path: str) -> str:
    """The failure text of a regressed or not comparable evaluation, ending with what to do."""
    lines: list[str] = []
    where = f"'{recorded.name}' ({recorded.test})"
    if verdict.status == "not comparable":
        lines.append(f"ragmetrics: {where} is not comparable with its baseline in {baseline_path}:")
        lines += [f"  {reason}" for reason in verdict.reasons]
        lines += _query_set_lines(verdict)
        lines.append(
            "What to do: if the change is intended, record new numbers with "
            f"{UPDATE_HINT}; otherwise restore the dataset and settings the baseline was made "
            "with."
        )
        return "\n".join(lines)
    lines.append(f"ragmetrics: {where} regressed against the baseline in {baseline_path}:")
    for m in verdict.failed_metrics:
        lines.append(
            f"  {m.metric}: baseline {m.baseline:.4f} → current {m.current:.4f}, "
            f"Δ {m.delta:+.4f} (allowed drop {m.allowed_drop:.4f}, tolerance "
            f"{m.tolerance})"
        )
        c = m.comparison
        if c is not None and c.n:
            lines.append(
                f"    95% bootstrap CI of Δ [{c.ci_low:+.4f}, {c.ci_high:+.4f}]; "
                f"paired randomization test p = {c.p_value:.4f} ({c.n} queries)"
            )
            lines.append(f"    queries: {c.worse} worse, {c.better} better, {c.same} unchanged")
        if m.worst:
            moved = "; ".join(_moved(q, d, rb, ra) for q, d, rb, ra in m.worst)
            lines.append(f"    most regressed: {moved}")
    if verdict.identity_change:
        lines.append(f"  configuration changed: {verdict.identity_change}")
    lines += _query_set_lines(verdict)
    lines.append(
        "What to do: fix the regression, or if the new numbers are intended, bless them with "
        f"{UPDATE_HINT} and commit {baseline_path}."
    )
    return "\n".join(lines)


def _query_set_lines(verdict: Verdict) -> list[str]:
    lines = []
    if verdict.only_baseline:
        lines.append(
            f"  queries only in the baseline ({len(verdict.only_baseline)}): "
            f"{', '.join(verdict.only_baseline[:10])}"
            f"{' ...' if len(verdict.only_baseline) > 10 else ''}"
        )
    if verdict.only_current:
        lines.append(
            f"  queries only in this run ({len(verdict.only_current)}): "
            f"{', '.join(verdict.only_current[:10])}"
            f"{' ...' if len(verdict.only_current) > 10 else ''}"
        )
    return lines


def load_evaluations(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The evaluations of a baseline file or a JSON report, keyed by (test id, name).

    Every field the comparison uses is checked (a BaselineError names the file, the
    evaluation and the field); keys this version does not know are ignored; a report of a
    newer schema version is refused.
    """
    from pytest_ragmetrics.baseline import BaselineStore
    from pytest_ragmetrics.fileio import read_json_file
    from pytest_ragmetrics.report.json_report import REPORT_SCHEMA, REPORT_VERSION
    from pytest_ragmetrics.schema import evaluation_problem, is_int

    try:
        data = read_json_file(path, error=BaselineError)
    except FileNotFoundError:
        raise BaselineError(f"{path}: file not found") from None
    if isinstance(data, dict) and "schema_version" in data:
        store = BaselineStore.load(path)
        return {
            (test, name): {"test": test, "name": name, **entry}
            for test, named in store.entries.items()
            for name, entry in named.items()
        }
    if not isinstance(data, dict) or ("schema" not in data and "evaluations" not in data):
        raise BaselineError(
            f"{path}: neither a pytest-ragmetrics JSON report (--ragmetrics-json) nor a baseline "
            "file"
        )
    if "schema" in data and data["schema"] != REPORT_SCHEMA:
        raise BaselineError(f"{path}: schema {data['schema']!r} is not {REPORT_SCHEMA!r}")
    version = data.get("version", REPORT_VERSION)
    if not is_int(version):
        raise BaselineError(f"{path}: report version {version!r} is not an integer")
    if version > REPORT_VERSION:
        raise BaselineError(
            f"{path}: written by a newer pytest-ragmetrics (report version {version}, this "
            f"version reads up to {REPORT_VERSION}); upgrade pytest-ragmetrics"
        )
    evaluations = data.get("evaluations")
    if not isinstance(evaluations, list):
        raise BaselineError(f"{path}: 'evaluations' must be a list of objects")
    out: dict[tuple[str, str], dict[str, Any]] = {}
    for i, entry in enumerate(evaluations, start=1):
        if not isinstance(entry, dict) or not {"test", "name", "metrics"} <= set(entry):
            raise BaselineError(f"{path}: evaluation #{i} lacks test, name or metrics")
        label = f"evaluation #{i} ({entry.get('test')!r} [{entry.get('name')}])"
        if not isinstance(entry["test"], str) or not isinstance(entry["name"], str):
            raise BaselineError(f"{path}: {label}: 'test' and 'name' must be strings")
        problem = evaluation_problem(entry)
        if problem:
            raise BaselineError(f"{path}: {label}: {problem}")
        key = (entry["test"], entry["name"])
        if key in out:
            raise BaselineError(f"{path}: {label} appears twice")
        out[key] = entry
    return out


def compare_files(
    before: Path,
    after: Path,
    tolerances: Tolerances,
    *,
    alpha: float | None = None,
) -> list[tuple[RecordedEvaluation, Verdict]]:
    """Verdicts for every evaluation of ``after`` against ``before`` (missing ones are new)."""
    return compare_evaluations(
        load_evaluations(before), load_evaluations(after), tolerances, alpha=alpha
    )


def compare_evaluations(
    old: Mapping[tuple[str, str], Mapping[str, Any]],
    new: Mapping[tuple[str, str], Mapping[str, Any]],
    tolerances: Tolerances,
    *,
    alpha: float | None = None,
) -> list[tuple[RecordedEvaluation, Verdict]]:
    """:func:`compare_files` on evaluations already read with :func:`load_evaluations`."""
    results = []
    for key in sorted(new):
        recorded = RecordedEvaluation.from_dict(new[key])
        results.append(
            (recorded, compare_to_baseline(recorded, old.get(key), tolerances, alpha=alpha))
        )
    return results
