"""Comparing an evaluation with its baseline entry (or a report with another): per metric, the
drop against the tolerance with paired statistics over the shared queries; "not comparable"
when the dataset or the scoring rules differ."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from pytest_ragmetrics.baseline.lost import (
    Gates,
    ValueSets,
    alpha_unreachable,
    attainable_note,
    collapsed,
    no_worst_note,
    valued,
)
from pytest_ragmetrics.baseline.tolerances import Tolerance, Tolerances
from pytest_ragmetrics.baseline.verdicts import (
    FAILED_METRIC,
    LOST_SHOWN,
    NOT_COMPUTED,
    BaselineVerdict,
    Holes,
    MetricVerdict,
    Status,
)
from pytest_ragmetrics.deltas import delta as delta_of
from pytest_ragmetrics.deltas import delta_text, deltas
from pytest_ragmetrics.errors import BaselineError
from pytest_ragmetrics.metrics.semantics import same_rules
from pytest_ragmetrics.records import EvaluationRecord, round_values
from pytest_ragmetrics.schema import Document
from pytest_ragmetrics.stats import DEFAULT_SEED, PairedComparison, compare_paired

MOST_REGRESSED = 5  # queries named per regressed metric
# What a drop that only unjudged documents explain does (ragmetrics_unjudged_drops).
UNJUDGED_DROPS = ("fail", "pass")


def compare_to_baseline(
    recorded: EvaluationRecord,
    entry: Mapping[str, Any] | None,
    tolerances: Tolerances,
    *,
    alpha: float | None = None,
    seed: int = DEFAULT_SEED,
    dataset_change: Mapping[str, str] | None = None,
    unjudged_drops: str = "fail",
    not_enforced: Mapping[str, str] | None = None,
) -> BaselineVerdict:
    """Compare one recorded evaluation with its baseline entry.

    ``dataset_change`` maps a dataset part to a human description of how it changed (built by
    the caller, who can see both datasets); without it a generic description is used. A
    regressed retrieval metric says how many unjudged documents its top k holds now and in
    the baseline, and whether its judged-only form dropped too; when it did not (the drop
    comes from newly retrieved unjudged documents), ``unjudged_drops="pass"`` lets it pass.
    A drop of a metric in ``not_enforced`` (metric -> why: its judge's κ gate) is shown, with
    the reason, but is no regression. A metric of the entry that this evaluation no longer
    computes is ``lost``, like a value that is n/a now.
    """
    if unjudged_drops not in UNJUDGED_DROPS:
        raise BaselineError(
            f"unjudged_drops must be {' or '.join(UNJUDGED_DROPS)}, got {unjudged_drops!r}"
        )
    if entry is None:
        # Nothing to compare yet, but a gate that can never work is said from the first run.
        return BaselineVerdict(
            "new", alpha_note=alpha_unreachable(_valued_queries(recorded), alpha, seed)
        )
    # Both sides at the stored precision (deltas.py), so an unchanged run has Δ exactly 0 even
    # when the "baseline" is a JSON report holding unrounded values.
    current = recorded.compared_form()
    entry = dict(round_values(dict(entry)))
    verdict = _verdict_frame(entry, current)
    reasons = _incomparable(entry, current, dataset_change or {})
    if reasons:
        verdict.status = "not comparable"
        verdict.reasons = reasons
        verdict.alpha_note = alpha_unreachable(_valued_queries(recorded), alpha, seed)
        return verdict
    pairs = _Pairs(entry, current, [q for q in current["per_query"] if q in entry["per_query"]])
    verdict.metrics = _metric_verdicts(
        pairs, verdict, tolerances, Gates(alpha, seed, unjudged_drops)
    )
    verdict.depth_note = _depth_note(verdict.metrics, entry.get("k"), current["k"])
    compared = {m.metric for m in verdict.metrics if m.computed}
    verdict.metrics_not_compared = [m for m in entry["metrics"] if m not in compared]
    verdict.metrics_not_in_baseline = [m for m in current["metrics"] if m not in entry["metrics"]]
    verdict.metrics = [_enforced(found, not_enforced or {}) for found in verdict.metrics]
    if not any("smallest attainable p" in m.note for m in verdict.metrics):
        verdict.alpha_note = alpha_unreachable(len(pairs.shared), alpha, seed)
    verdict.status = _overall_status(verdict.metrics)
    return verdict


def _overall_status(metrics: Sequence[MetricVerdict]) -> Status:
    """A comparable evaluation's status from its metrics': regressed when any failed (a drop
    beyond its tolerance, or lost), else improved when any improved, else ok."""
    statuses = {m.status for m in metrics}
    if statuses & set(FAILED_METRIC):
        return "regressed"
    return "improved" if "improved" in statuses else "ok"


def _metric_verdicts(
    pairs: _Pairs, verdict: BaselineVerdict, tolerances: Tolerances, gates: Gates
) -> list[MetricVerdict]:
    """Every metric of the entry with a value, compared (or lost); metrics the entry has no
    value of are not compared: there is nothing to lose or compare with."""
    entry, current = pairs.entry, pairs.current_form
    noise = (current.get("judge_noise") or {}).get("noise") or {}
    out = []
    for metric, now in current["metrics"].items():
        before = entry["metrics"].get(metric)
        if before is None:
            continue
        found = _paired_verdict(
            pairs,
            metric,
            float(before),
            now,
            verdict,
            tolerances.for_metric(metric),
            dataclasses.replace(gates, noise=noise.get(metric)),
        )
        if found is not None:
            out.append(found)
    return out + _not_computed(entry, current, pairs, tolerances)


def _verdict_frame(entry: dict[str, Any], current: Mapping[str, Any]) -> BaselineVerdict:
    """The verdict before any metric is compared: the configuration change and the queries
    only one side holds (``entry`` gets empty ``metrics`` and ``per_query`` when it has none)."""
    entry["metrics"] = entry.get("metrics") or {}
    entry["per_query"] = entry.get("per_query") or {}
    base_pq, cur_pq = entry["per_query"], current["per_query"]
    return BaselineVerdict(
        "ok",
        identity_change=_identity_change(
            {"k": entry.get("k"), **(entry.get("identity") or {})},
            {"k": current["k"], **_as_recorded_then(entry.get("identity"), current["identity"])},
        ),
        only_baseline=sorted(q for q in base_pq if q not in cur_pq),
        only_current=sorted(q for q in cur_pq if q not in base_pq),
    )


def _valued_queries(recorded: EvaluationRecord) -> int:
    """How many queries of an evaluation have a value of some metric (what a paired test of
    its next run could pair at most)."""
    per_query = recorded.compared_form()["per_query"]
    return sum(1 for values in per_query.values() if any(valued(v) for v in values.values()))


def _not_computed(
    entry: Mapping[str, Any],
    current: Mapping[str, Any],
    pairs: _Pairs,
    tolerances: Tolerances,
) -> list[MetricVerdict]:
    """The entry's metrics with a value that this evaluation does not compute at all (removed
    from ragmetrics_metrics or the test's ``metrics=``, a registered metric no longer
    registered): each is lost on every query that had a value of it."""
    out = []
    for metric, before in entry["metrics"].items():
        if before is None or metric in current["metrics"]:
            continue
        had = sorted(q for q, v in pairs.base.items() if valued(v.get(metric)))
        tolerance = tolerances.for_metric(metric)
        out.append(
            MetricVerdict(
                metric,
                float(before),
                math.nan,
                math.nan,
                str(tolerance),
                tolerance.allowed_drop(float(before)),
                "lost",
                note=NOT_COMPUTED,
                lost=len(had),
                lost_queries=had[:LOST_SHOWN],
                valued_before=len(had),
                computed=False,
            )
        )
    return out


def _depth_note(metrics: Sequence[MetricVerdict], k_before: Any, k_now: Any) -> str:
    """Say so when the ranking depth fell below some metrics' cutoffs since the baseline: their
    values now count only the top ``k_now`` documents (a cut the baseline did not have)."""
    from pytest_ragmetrics.errors import MetricError
    from pytest_ragmetrics.metrics.names import parse_metric

    if not (isinstance(k_before, int) and isinstance(k_now, int)) or k_now >= k_before:
        return ""
    cut = []
    for found in metrics:
        try:
            cutoff = parse_metric(found.metric).k
        except MetricError:
            continue  # a metric registered in the run that made the file, not in this one
        if found.computed and (cutoff is None or cutoff > k_now):
            cut.append(found.metric)
    if not cut:
        return ""
    verb, whose = ("counts", "its value is") if len(cut) == 1 else ("count", "their values are")
    return (
        f"k {k_before} → {k_now}: {', '.join(cut)} {verb} only the top {k_now} documents now, "
        f"where the baseline counted deeper: {whose} not over the same depth"
    )


def _enforced(found: MetricVerdict, not_enforced: Mapping[str, str]) -> MetricVerdict:
    """A regression of a metric whose judge may not fail a test is shown but passes."""
    reason = not_enforced.get(found.metric)
    if not reason or found.status != "regressed":
        return found
    return dataclasses.replace(
        found, status="ok", note=f"dropped {delta_text(found.delta)}, not enforced: {reason}"
    )


def _paired_verdict(
    pairs: _Pairs,
    metric: str,
    before: float,
    now: float | None,
    verdict: BaselineVerdict,
    tolerance: Tolerance,
    gates: Gates,
) -> MetricVerdict | None:
    """One metric's verdict on the queries both have a value for; "lost" when queries that
    had a value in the baseline have none now (None: nothing to compare or lose)."""
    b, c = pairs.values(metric)
    sets = ValueSets.of(
        pairs.shared,
        b,
        c,
        pairs.base,
        metric,
        now_has_none=now is None,
        gone=verdict.only_baseline,
    )
    mean_before, mean_now = before, now
    paired = sets.paired_means(b, c)
    only = (len(verdict.only_baseline), len(verdict.only_current))
    note = sets.note(before, now, *only, bool(pairs.shared), paired)
    if note:
        # Means over different queries are not a change of the system: compare the queries
        # both have a value for (the paired statistics do too), and say so.
        mean_before, mean_now = paired
    if mean_now is None or math.isnan(mean_now) or math.isnan(mean_before):
        if not sets.lost:
            return None
        return MetricVerdict(
            metric,
            before,
            math.nan,
            math.nan,
            str(tolerance),
            tolerance.allowed_drop(before),
            "lost",
            note=note,
            lost=len(sets.lost),
            lost_queries=sets.lost[:LOST_SHOWN],
            valued_before=sets.valued_before,
        )
    found = _metric_verdict(pairs, metric, mean_before, float(mean_now), tolerance, gates)
    if note:
        found = dataclasses.replace(found, note=f"{note}; {found.note}" if found.note else note)
    if sets.lost:
        found = dataclasses.replace(
            found,
            status="lost",
            lost=len(sets.lost),
            lost_queries=sets.lost[:LOST_SHOWN],
            valued_before=sets.valued_before,
        )
    return found


class _Pairs:
    """The per-query values of the baseline entry and the current evaluation, paired."""

    def __init__(
        self, entry: Mapping[str, Any], current: Mapping[str, Any], shared: Sequence[str]
    ) -> None:
        self.entry, self.current_form = entry, current
        self.base = entry.get("per_query") or {}
        self.current = current["per_query"]
        self.shared = list(shared)
        self.base_details: Mapping[str, Any] = entry.get("details") or {}
        self.current_details: Mapping[str, Any] = current.get("details") or {}
        self.base_rank = self.base_details.get("first_relevant_rank", {})
        self.current_rank = self.current_details.get("first_relevant_rank", {})
        self.base_judged_only: Mapping[str, Any] = entry.get("judged_only") or {}
        self.current_judged_only: Mapping[str, Any] = current.get("judged_only") or {}
        self.base_labelled: Mapping[str, Any] = entry.get("supplemented") or {}
        self.current_labelled: Mapping[str, Any] = current.get("supplemented") or {}

    def values(self, metric: str) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        b = np.asarray([_num(self.base[q].get(metric)) for q in self.shared])
        c = np.asarray([_num(self.current[q].get(metric)) for q in self.shared])
        return b, c

    def most_regressed(self, deltas: np.ndarray[Any, Any]) -> list[tuple[str, float, int, int]]:
        """The queries that lost most: (query, Δ, first relevant rank before, after)."""
        worst = []
        for i in np.argsort(deltas, kind="stable")[:MOST_REGRESSED]:
            if not deltas[i] < 0:
                break
            q = self.shared[int(i)]
            if not (self.base_rank or self.current_rank):
                # No ranks to show (an answer-layer evaluation): -1 says so.
                worst.append((q, float(deltas[i]), -1, -1))
                continue
            ranks = (int(self.base_rank.get(q, 0) or 0), int(self.current_rank.get(q, 0) or 0))
            worst.append((q, float(deltas[i]), *ranks))
        return worst


def _unjudged(details: Mapping[str, Any], k: int | None) -> tuple[int, int] | None:
    """(unjudged documents in the top k, documents in the top k) summed over queries, or None
    when ``details`` lack the count (an answer evaluation, or a baseline of an older version)."""
    from pytest_ragmetrics.metrics.retrieval import unjudged_detail

    counts = details.get(unjudged_detail(k))
    retrieved = details.get("num_retrieved")
    if not isinstance(counts, Mapping) or not isinstance(retrieved, Mapping):
        return None
    shown = sum(
        int(n) if k is None else min(int(n), k) for q, n in retrieved.items() if q in counts
    )
    return sum(int(n) for n in counts.values()), shown


def _holes(pairs: _Pairs, metric: str, allowed: float) -> Holes | None:
    """The unjudged documents behind a drop of ``metric`` (None for metrics they cannot
    explain: answer metrics, hole-tolerant ones, or a current evaluation without counts)."""
    from pytest_ragmetrics.errors import MetricError
    from pytest_ragmetrics.metrics.names import parse_metric
    from pytest_ragmetrics.metrics.retrieval import HOLE_TOLERANT

    try:
        spec = parse_metric(metric)
    except MetricError:
        return None  # a metric registered in the run that made the file, not in this one
    if spec.layer != "retrieval" or spec.judged_only or spec.family in HOLE_TOLERANT:
        return None
    now = _unjudged(pairs.current_details, spec.k)
    if now is None:
        return None
    before = _unjudged(pairs.base_details, spec.k)
    jo_before = pairs.base_judged_only.get(metric)
    jo_now = pairs.current_judged_only.get(metric)
    dropped = None
    if jo_before is not None and jo_now is not None:
        dropped = float(jo_now) - float(jo_before) < -allowed - 1e-12
    lab_before = (pairs.base_labelled.get("metrics") or {}).get(metric)
    lab_now = (pairs.current_labelled.get("metrics") or {}).get(metric)
    lab_dropped = None
    if lab_before is not None and lab_now is not None:
        lab_dropped = float(lab_now) - float(lab_before) < -allowed - 1e-12
    used = bool(pairs.current_labelled.get("used"))
    notes = []
    if not used and (lab_before is not None or lab_now is not None):
        reason = pairs.current_labelled.get("reason")
        notes.append("shown only, not used for pass/fail" + (f": {reason}" if reason else ""))
    before_labels = pairs.base_labelled.get("fingerprint")
    if before_labels and before_labels != pairs.current_labelled.get("fingerprint"):
        # The baseline's value used the labels of its day; the new ones may move it too.
        notes.append("the labels changed since the baseline recorded its value with labels")
    note = "; ".join(notes)
    return Holes(
        spec.k,
        now[0],
        now[1],
        None if before is None else before[0],
        None if before is None else before[1],
        None if jo_before is None else float(jo_before),
        None if jo_now is None else float(jo_now),
        dropped,
        None if lab_before is None else float(lab_before),
        None if lab_now is None else float(lab_now),
        lab_dropped,
        used and lab_now is not None,
        note,
        _unexplained(pairs, metric, spec.k),
    )


def _unexplained(pairs: _Pairs, metric: str, k: int | None) -> tuple[str, ...]:
    """The queries whose drop of ``metric`` holes cannot explain: those that lost every
    judged relevant document they retrieved (first relevant rank → none), and, when both
    sides counted them, those with no more unjudged documents in the top ``k`` than before."""
    from pytest_ragmetrics.metrics.retrieval import unjudged_detail

    b, c = pairs.values(metric)
    key = unjudged_detail(k)
    now, before = pairs.current_details.get(key), pairs.base_details.get(key)
    if not (isinstance(now, Mapping) and isinstance(before, Mapping)):
        now = before = None  # one side did not count them: only lost documents tell
    found = []
    for q, was, is_ in zip(pairs.shared, b.tolist(), c.tolist(), strict=True):
        if not is_ < was - 1e-12:
            continue
        retrieved = int(pairs.base_rank.get(q, 0) or 0), int(pairs.current_rank.get(q, 0) or 0)
        lost = retrieved[0] > 0 and retrieved[1] == 0
        if lost or (now is not None and before is not None and now.get(q, 0) <= before.get(q, 0)):
            found.append(q)
    return tuple(found)


def _metric_verdict(
    pairs: _Pairs,
    metric: str,
    before: float,
    now: float,
    tolerance: Tolerance,
    gates: Gates,
) -> MetricVerdict:
    b, c = pairs.values(metric)
    comparison: PairedComparison | None = (
        compare_paired(b, c, seed=gates.seed) if pairs.shared else None
    )
    alpha, noise, unjudged_drops = gates.alpha, gates.noise, gates.unjudged_drops
    delta = delta_of(before, now)
    allowed = tolerance.allowed_drop(before)
    status: Status = "ok"
    note = ""
    cannot = attainable_note(comparison, alpha, gates.seed)
    if delta < -allowed - 1e-12:
        status = "regressed"
        collapse = collapsed(metric, b, c)
        if collapse:
            note = collapse + cannot  # whatever the p-value or the judge's noise says
        elif alpha is not None and comparison is not None and comparison.p_value >= alpha:
            status = "ok"
            note = (
                f"dropped {delta_text(delta)} but not significantly (p = "
                f"{comparison.p_value:.4f} ≥ alpha {alpha:g}){cannot}"
            )
            note += no_worst_note(metric) if cannot else ""
        elif noise is not None and -delta <= noise + 1e-12:
            # The judge's verdicts on the same answers moved this much between repeats.
            status = "ok"
            note = (
                f"dropped {delta_text(delta)}, within judge noise (the mean moved by up to "
                f"{noise:.4f} between repeated judgings of the same answers)"
            )
    elif delta > allowed + 1e-12:
        status, note = _improved(delta, comparison, alpha, cannot)
    holes = _holes(pairs, metric, allowed) if status == "regressed" else None
    if holes is not None and holes.labels_clear:
        status = "ok"
        note = (
            f"dropped {delta_text(delta)} on the human qrels, but not with the supplementary judge "
            f"labels for the unjudged documents ({holes.labelled_before:.4f} → "
            f"{holes.labelled_now:.4f})"
        )
    elif holes is not None and holes.explained and unjudged_drops == "pass":
        status = "ok"
        note = (
            f"dropped {delta_text(delta)}, but only through newly retrieved unjudged documents "
            "(its judged-only form did not drop); passed by ragmetrics_unjudged_drops = pass"
        )
    worst = pairs.most_regressed(deltas(b, c)) if status == "regressed" and pairs.shared else []
    return MetricVerdict(
        metric, before, now, delta, str(tolerance), allowed, status, comparison, worst, note, holes
    )


def _improved(
    delta: float, comparison: PairedComparison | None, alpha: float | None, cannot: str
) -> tuple[Status, str]:
    """A rise beyond the tolerance is "improved" only when the paired statistics agree: some
    query better, the paired mean up, and with ``alpha`` a significant p."""
    if comparison is None:
        return "improved", ""
    if comparison.n == 0 or comparison.better == 0 or not comparison.mean_delta > 0:
        return "ok", (
            f"rose {delta:+.4f}, but no query that has a value in both is better "
            f"({comparison.better} better, {comparison.worse} worse of {comparison.n}): "
            "not improved"
        )
    if alpha is not None and comparison.p_value >= alpha:
        return "ok", (
            f"rose {delta:+.4f} but not significantly (p = {comparison.p_value:.4f} ≥ alpha "
            f"{alpha:g}){cannot}"
        )
    return "improved", ""


def _identity_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What differs between two identities, leaf by leaf (``questions.context_relevance.
    parameters.threshold: 0.6 → 0.5``); '' when nothing does."""
    if before == after:
        return ""
    changed: list[str] = []
    _changed_leaves(before, after, "", changed)
    shown = changed[:SHOWN_CHANGES]
    more = len(changed) - len(shown)
    return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


SHOWN_CHANGES = 6


def _changed_leaves(before: Any, after: Any, path: str, changed: list[str]) -> None:
    if isinstance(before, Mapping) and isinstance(after, Mapping):
        for key in sorted(set(before) | set(after), key=str):
            if key == "k" and not path and (before.get(key) is None or after.get(key) is None):
                continue  # an unknown k (a run read from a file records none) is not a change
            if key == "rubric_sha256" and before.get("rubric") != after.get("rubric"):
                continue  # the rubric itself is shown
            if before.get(key) != after.get(key):
                _changed_leaves(before.get(key), after.get(key), f"{path}{key}.", changed)
        return
    changed.append(f"{path.rstrip('.')}: {_short(before)} → {_short(after)}")


def _short(value: Any) -> str:
    text = json.dumps(value, sort_keys=True, default=str)
    return text if len(text) <= 120 else text[:117] + "..."


def _num(value: Any) -> float:
    return math.nan if value is None else float(value)


def _incomparable(
    entry: Mapping[str, Any], current: Mapping[str, Any], dataset_change: Mapping[str, str]
) -> list[str]:
    reasons: list[str] = []
    if entry.get("layer") != current["layer"]:
        reasons.append(f"layer: {entry.get('layer')} → {current['layer']}")
    if not same_rules(entry.get("semantics"), current["semantics"]):
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
    if current["layer"] == "answer" and entry.get("layer") == "answer":
        reasons += _instrument_change(entry.get("identity") or {}, current["identity"] or {})
    return reasons


# What measures an answer-layer evaluation, as against what it measures (the pipeline).
_INSTRUMENT = ("judge", "questions")


def _as_recorded_then(before: Any, after: Any) -> Mapping[str, Any]:
    """``after`` without the question identities ``before`` does not hold when both record
    the same judge. A question an earlier version did not record (answer_relevance's, recorded
    since calibration can measure it) is asked with that judge's own prompts and parameters,
    which the judge's identity holds: the same judge is the same question."""
    if not isinstance(after, Mapping):
        return {}
    if not isinstance(before, Mapping) or not before.get("judge"):
        return after
    recorded = before.get("questions")
    had: Mapping[str, Any] = recorded if isinstance(recorded, Mapping) else {}
    questions = after.get("questions")
    if before.get("judge") != after.get("judge") or not isinstance(questions, Mapping):
        return after
    kept = {name: value for name, value in questions.items() if name in had}
    if len(kept) == len(questions):
        return after
    trimmed = {key: value for key, value in after.items() if key != "questions"}
    return {**trimmed, "questions": kept} if "questions" in before else trimmed


def _instrument_change(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """Why answer metrics judged by another judge (its model, prompts, sampling, or the
    question behind a metric) cannot be compared with the baseline's: a lenient judge would
    read a worse pipeline as improved. Nothing when the baseline recorded no judge."""
    if not before.get("judge"):
        return []
    was = {key: before.get(key) for key in _INSTRUMENT}
    now = {key: _as_recorded_then(before, after).get(key) for key in _INSTRUMENT}
    change = _identity_change(was, now)
    if not change:
        return []
    return [f"the judge changed ({change}): its numbers measure with another instrument"]


def load_evaluations(path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """The evaluations of a baseline file or a JSON report, keyed by (test id, name).

    Every field the comparison uses is checked (:func:`~pytest_ragmetrics.schema.
    read_document`: a BaselineError for a baseline, a ReportError for a report, naming the
    file, the evaluation and the field); keys this version does not know are ignored; a
    document of a newer schema version is refused.
    """
    from pytest_ragmetrics.schema import read_document

    return entries_of(read_document(path, ("report", "baseline")))


def evaluations_in(data: Any, path: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """:func:`load_evaluations` of a file already read: ``data`` is its JSON value."""
    from pytest_ragmetrics.schema import recognise

    return entries_of(recognise(data, ("report", "baseline"), path))


def entries_of(document: Document) -> dict[tuple[str, str], dict[str, Any]]:
    """The evaluations of a checked report or baseline file, keyed by (test id, name)."""
    data = document.data
    if document.kind == "baseline":
        return {
            (test, name): {"test": test, "name": name, **entry}
            for test, named in data["entries"].items()
            for name, entry in named.items()
        }
    return {(entry["test"], entry["name"]): entry for entry in data["evaluations"]}


def compare_files(
    before: Path,
    after: Path,
    tolerances: Tolerances,
    *,
    alpha: float | None = None,
    unjudged_drops: str = "fail",
) -> list[tuple[EvaluationRecord, BaselineVerdict]]:
    """Verdicts for every evaluation of ``after`` against ``before`` (missing ones are new)."""
    return compare_evaluations(
        load_evaluations(before),
        load_evaluations(after),
        tolerances,
        alpha=alpha,
        unjudged_drops=unjudged_drops,
    )


def compare_evaluations(
    old: Mapping[tuple[str, str], Mapping[str, Any]],
    new: Mapping[tuple[str, str], Mapping[str, Any]],
    tolerances: Tolerances,
    *,
    alpha: float | None = None,
    unjudged_drops: str = "fail",
) -> list[tuple[EvaluationRecord, BaselineVerdict]]:
    """:func:`compare_files` on evaluations already read with :func:`load_evaluations`."""
    results = []
    for key in sorted(new):
        recorded = EvaluationRecord.from_dict(new[key])
        verdict = compare_to_baseline(
            recorded, old.get(key), tolerances, alpha=alpha, unjudged_drops=unjudged_drops
        )
        results.append((recorded, verdict))
    return results
