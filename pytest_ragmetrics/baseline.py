"""The baseline file: load, compare (paired statistics, per-query diffs), update, comparability."""

from __future__ import annotations

import gzip
import json
import math
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np

from pytest_ragmetrics.errors import BaselineError
from pytest_ragmetrics.fileio import atomic_write_bytes, atomic_write_text
from pytest_ragmetrics.recorder import RecordedEvaluation
from pytest_ragmetrics.settings import Tolerances
from pytest_ragmetrics.stats import DEFAULT_SEED, PairedComparison, compare_paired

SCHEMA_VERSION = 1
DIGITS = 6  # per-query values are rounded so diffs in code review stay readable
Status = Literal["ok", "improved", "regressed", "new", "not comparable"]
UPDATE_HINT = "--ragmetrics-update-baseline"


def _round(value: Any) -> Any:
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, DIGITS)
    if isinstance(value, dict):
        return {k: _round(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_round(v) for v in value]
    return value


def entry_from_recorded(recorded: RecordedEvaluation, plugin_version: str) -> dict[str, Any]:
    """The baseline entry of one evaluation (no thresholds/outcomes: those are per run)."""
    data = recorded.to_dict()
    entry: dict[str, Any] = _round(
        {
            "layer": data["layer"],
            "identity": data["identity"],
            "dataset": data["dataset"],
            "k": data["k"],
            "semantics": data["semantics"],
            "metrics": data["metrics"],
            "num_queries": data["num_queries"],
            "per_query": data["per_query"],
            "details": data["details"],
            "plugin_version": plugin_version,
        }
    )
    return entry


class BaselineStore:
    """The entries of one baseline file: ``entries[test id][evaluation name] -> entry``."""

    def __init__(
        self,
        path: Path,
        entries: dict[str, dict[str, dict[str, Any]]] | None = None,
        *,
        exists: bool = False,
    ) -> None:
        self.path = path
        self.entries = entries or {}
        self.exists = exists

    @classmethod
    def load(cls, path: Path) -> BaselineStore:
        """Read ``path``; a missing file is an empty store, a broken one a BaselineError."""
        if not path.exists():
            return cls(path)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as exc:
            raise BaselineError(f"{path}: cannot read the baseline file ({exc})") from None
        fix = (
            f"restore it from version control (git checkout -- {path.name}) or delete it "
            f"and run with {UPDATE_HINT}"
        )
        if not text.strip():
            raise BaselineError(f"{path}: the baseline file is empty; {fix}")
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise BaselineError(
                f"{path}:{exc.lineno}: the baseline file is not valid JSON ({exc.msg}); {fix}"
            ) from None
        if not isinstance(data, dict) or "schema_version" not in data:
            raise BaselineError(
                f"{path}: not a pytest-ragmetrics baseline (no schema_version); {fix}"
            )
        version = data["schema_version"]
        if not isinstance(version, int) or isinstance(version, bool):
            raise BaselineError(f"{path}: schema_version {version!r} is not an integer; {fix}")
        if version > SCHEMA_VERSION:
            raise BaselineError(
                f"{path}: written by a newer pytest-ragmetrics (baseline schema {version}, this "
                f"version reads up to {SCHEMA_VERSION}); upgrade pytest-ragmetrics"
            )
        entries = data.get("entries")
        if not isinstance(entries, dict):
            raise BaselineError(f"{path}: 'entries' must be an object; {fix}")
        for test, named in entries.items():
            if not isinstance(named, dict):
                raise BaselineError(f"{path}: entry {test!r} must be an object; {fix}")
            for name, entry in named.items():
                problem = _check_entry(entry)
                if problem:
                    raise BaselineError(f"{path}: entry {test!r} [{name}]: {problem}; {fix}")
        return cls(path, entries, exists=True)

    def get(self, test: str, name: str) -> dict[str, Any] | None:
        return self.entries.get(test, {}).get(name)

    def entry_keys(self) -> list[tuple[str, str]]:
        return [(t, n) for t, named in self.entries.items() for n in named]

    def updated(
        self,
        recorded: Iterable[RecordedEvaluation],
        ran_tests: Iterable[str],
        stale: Iterable[tuple[str, str]],
        plugin_version: str,
    ) -> tuple[BaselineStore, dict[str, int]]:
        """A new store with the recorded evaluations written in.

        Entries of tests that ran but no longer record that evaluation, and stale entries, are
        removed; everything else is untouched.
        """
        entries = {t: dict(named) for t, named in self.entries.items()}
        counts = {"updated": 0, "added": 0, "removed": 0, "unchanged": 0}
        seen: set[tuple[str, str]] = set()
        for item in recorded:
            entry = entry_from_recorded(item, plugin_version)
            seen.add(item.key)
            old = entries.get(item.test, {}).get(item.name)
            if old is None:
                counts["added"] += 1
            elif _strip_version(old) == _strip_version(entry):
                counts["unchanged"] += 1
            else:
                counts["updated"] += 1
            entries.setdefault(item.test, {})[item.name] = entry
        to_remove = set(stale)
        for test in set(ran_tests):
            for name in list(entries.get(test, {})):
                if (test, name) not in seen:
                    to_remove.add((test, name))
        for test, name in to_remove:
            if name in entries.get(test, {}):
                del entries[test][name]
                counts["removed"] += 1
                if not entries[test]:
                    del entries[test]
        return BaselineStore(self.path, entries, exists=True), counts

    def dumps(self) -> str:
        """The file content: sorted keys, two-space indent, trailing newline."""
        data = {"schema_version": SCHEMA_VERSION, "entries": self.entries}
        return (
            json.dumps(data, indent=2, sort_keys=True, ensure_ascii=False, allow_nan=False) + "\n"
        )

    def save(self) -> None:
        """Write atomically (temp file in the same folder + os.replace)."""
        try:
            atomic_write_text(self.path, self.dumps())
        except OSError as exc:
            raise BaselineError(f"{self.path}: cannot write the baseline ({exc})") from None


def _strip_version(entry: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in entry.items() if k != "plugin_version"}


def _check_entry(entry: Any) -> str | None:
    if not isinstance(entry, dict):
        return "must be an object"
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict) or not all(
        v is None or (isinstance(v, (int, float)) and not isinstance(v, bool))
        for v in metrics.values()
    ):
        return "'metrics' must map metric names to numbers"
    per_query = entry.get("per_query", {})
    if not isinstance(per_query, dict) or not all(isinstance(v, dict) for v in per_query.values()):
        return "'per_query' must map query ids to {metric: value}"
    for qid, row in per_query.items():
        for metric, value in row.items():
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, (int, float))
            ):
                return f"per-query value of {metric!r} for query {qid!r} is not a number"
    if entry.get("layer") not in ("retrieval", "answer"):
        return "'layer' must be 'retrieval' or 'answer'"
    return None


# ---------------------------------------------------------------------------------------------
# Dataset digests: let "not comparable" say what changed (12 docs added, 3 changed).


def digests_path(baseline_path: Path, part: str, fingerprint: str) -> Path:
    return baseline_path.parent / "datasets" / f"{part}-{fingerprint[:16]}.json.gz"


def save_digests(
    baseline_path: Path, part: str, fingerprint: str, digests: Mapping[str, Any]
) -> None:
    """Store per-item digests of one dataset part beside the baseline (gzipped, idempotent)."""
    path = digests_path(baseline_path, part, fingerprint)
    if path.exists():
        return
    body = json.dumps(digests, sort_keys=True, separators=(",", ":")).encode()
    atomic_write_bytes(path, gzip.compress(body, mtime=0))


def load_digests(baseline_path: Path, part: str, fingerprint: str) -> dict[str, Any] | None:
    path = digests_path(baseline_path, part, fingerprint)
    try:
        data = json.loads(gzip.decompress(path.read_bytes()))
    except (OSError, ValueError, EOFError):
        return None
    return data if isinstance(data, dict) else None


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
        return _round(out)  # type: ignore[no-any-return]


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
    current = _round(recorded.to_dict())
    reasons = _incomparable(entry, current, dataset_change or {})
    verdict = Verdict(
        "ok",
        identity_change=_identity_change(entry.get("identity") or {}, current["identity"] or {}),
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
            moved = "; ".join(
                f"{q}: rank {_rank_text(rb)} → {_rank_text(ra)} (Δ {d:+.3f})"
                for q, d, rb, ra in m.worst
            )
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
