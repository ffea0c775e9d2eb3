"""Verdicts of a comparison with the baseline: per metric and per evaluation, their JSON form,
and the failure message that says what regressed, how surely, for which queries, and what to do."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from pytest_ragmetrics.baseline.store import UPDATE_HINT
from pytest_ragmetrics.controls import show_controls as one_line
from pytest_ragmetrics.deltas import delta_text
from pytest_ragmetrics.records import round_values
from pytest_ragmetrics.stats import PairedComparison

if TYPE_CHECKING:
    from pytest_ragmetrics.records import EvaluationRecord

# A metric's verdict may also be "lost": queries that had a value in the baseline have none
# now (an empty answer, no contexts, no verdict). It fails like "regressed", and an evaluation
# with a lost metric is "regressed".
Status = Literal["ok", "improved", "regressed", "lost", "new", "not comparable"]
FAILED_METRIC = ("regressed", "lost")
LOST_SHOWN = 20  # query ids a lost metric keeps in its JSON form
LOST_NAMED = 5  # ... and names in the failure message
# The note of a metric the baseline holds and this run does not compute at all: lost too.
NOT_COMPUTED = (
    "not computed by this run (it is not in ragmetrics_metrics, the test's metrics=... or its "
    "rag_threshold markers, or a registered metric is no longer registered)"
)


@dataclass(frozen=True)
class Holes:
    """Unjudged documents behind a metric's drop: in its top ``k`` (all retrieved: None), now
    and in the baseline (None: the baseline predates these counts), and its judged-only form
    (unjudged documents removed) before and after.

    ``explained``: the judged-only metric did not drop while more unjudged documents came in,
    so the drop comes from newly retrieved documents nobody judged (counted as non-relevant).
    """

    k: int | None
    unjudged_now: int
    shown_now: int
    unjudged_before: int | None = None
    shown_before: int | None = None
    judged_only_before: float | None = None
    judged_only_now: float | None = None
    judged_only_dropped: bool | None = None
    # The metric on human + supplementary qrels (judge labels for pooled unjudged documents).
    labelled_before: float | None = None
    labelled_now: float | None = None
    labelled_dropped: bool | None = None
    labels_used: bool = False
    labels_note: str = ""
    # Queries whose own drop the unjudged documents cannot explain: they lost every judged
    # relevant document they retrieved, or dropped with no more unjudged documents than before.
    unexplained: tuple[str, ...] = ()

    @property
    def labels_clear(self) -> bool:
        """Judge labels that count for pass/fail say the metric did not drop."""
        return self.labels_used and self.labelled_dropped is False

    @property
    def explained(self) -> bool:
        """The mean's judged-only form did not drop, more unjudged documents came in, and no
        query dropped for another reason (:attr:`unexplained`): a mean can hide a real loss
        on a few queries under many that only gained unjudged documents."""
        return (
            self.judged_only_dropped is False
            and (self.unjudged_before is None or self.unjudged_now > self.unjudged_before)
            and not self.unexplained
        )

    def to_dict(self) -> dict[str, Any]:
        return round_values(  # type: ignore[no-any-return]
            {
                "k": self.k,
                "unjudged_now": self.unjudged_now,
                "shown_now": self.shown_now,
                "unjudged_before": self.unjudged_before,
                "shown_before": self.shown_before,
                "judged_only_before": self.judged_only_before,
                "judged_only_now": self.judged_only_now,
                "judged_only_dropped": self.judged_only_dropped,
                "explained": self.explained,
                "labelled_before": self.labelled_before,
                "labelled_now": self.labelled_now,
                "labelled_dropped": self.labelled_dropped,
                "labels_used": self.labels_used,
                "labels_note": self.labels_note,
                **({"unexplained": list(self.unexplained)} if self.unexplained else {}),
            }
        )

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Holes:
        return cls(
            data.get("k"),
            int(data["unjudged_now"]),
            int(data["shown_now"]),
            data.get("unjudged_before"),
            data.get("shown_before"),
            data.get("judged_only_before"),
            data.get("judged_only_now"),
            data.get("judged_only_dropped"),
            data.get("labelled_before"),
            data.get("labelled_now"),
            data.get("labelled_dropped"),
            bool(data.get("labels_used", False)),
            str(data.get("labels_note", "")),
            tuple(str(q) for q in data.get("unexplained") or ()),
        )

    def lines(self, metric: str, words: Mapping[str, str]) -> list[str]:
        """What the failure message says about them (indented under the metric)."""
        top = "retrieved documents" if self.k is None else f"top {self.k}"
        now = f"{self.unjudged_now} of {self.shown_now}"
        if self.unjudged_before is None:
            before = f"unknown in the {words['before']} (recorded by an older version)"
        else:
            before = f"{self.unjudged_before} of {self.shown_before} in the {words['before']}"
        out = [f"    unjudged documents in the {top}: {now} now, {before}"]
        if self.labelled_now is not None:
            labelled = (
                f"    {metric} with the supplementary judge labels: "
                + ("-" if self.labelled_before is None else f"{self.labelled_before:.4f}")
                + f" → {self.labelled_now:.4f}"
            )
            if self.labelled_before is None:
                labelled += f" (the {words['before']} has no value with labels)"
            elif self.labelled_dropped is not None:
                labelled += ", dropped too" if self.labelled_dropped else ", did not drop"
            if self.labels_note:
                labelled += f" ({self.labels_note})"
            out.append(labelled)
        if self.unexplained:
            shown = ", ".join(repr(q) for q in self.unexplained[:5])
            more = f" and {len(self.unexplained) - 5} more" if len(self.unexplained) > 5 else ""
            out.append(
                f"    queries the unjudged documents do not explain ({len(self.unexplained)}): "
                f"{shown}{more} (they lost their judged relevant documents, or dropped with no "
                "more unjudged documents than before)"
            )
        if self.judged_only_before is None or self.judged_only_now is None:
            return out
        judged = (
            f"    {metric} on judged documents only ({metric}_judged): "
            f"{self.judged_only_before:.4f} → {self.judged_only_now:.4f}"
        )
        if self.explained:
            out.append(
                judged + ", did not drop: the drop comes from newly retrieved documents that "
                "nobody judged, which count as non-relevant"
            )
        elif self.judged_only_dropped:
            out.append(judged + ", dropped too: judged documents moved, not only holes")
        else:
            out.append(judged + ", did not drop")
        return out


HOLES_ADVICE = (
    "  Unjudged documents may well be relevant: judge them. `ragmetrics pool --qrels QRELS "
    "--run BEFORE --run AFTER --out pool.jsonl` lists them; fill it in, or label them with "
    "`ragmetrics judge-pool`, and name the qrels it writes in ragmetrics_supplementary_qrels. "
    "To let drops that only unjudged documents explain pass, set ragmetrics_unjudged_drops = "
    "pass (--unjudged-drops pass)."
)


@dataclass
class MetricVerdict:
    """One metric's part of a :class:`BaselineVerdict`: its baseline and current values, the
    change, the tolerance and paired comparison it was judged by, and its status."""

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
    holes: Holes | None = None
    # Queries that had a value in the baseline and have none now (the first LOST_SHOWN
    # named), and how many queries had a value in the baseline.
    lost: int = 0
    lost_queries: list[str] = field(default_factory=list)
    valued_before: int = 0
    # False: the metric is in the baseline but this run does not compute it (lost everywhere).
    computed: bool = True

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
        if self.holes is not None:
            out["holes"] = self.holes.to_dict()
        if self.lost:
            out["queries_lost"] = self.lost
            out["lost_queries"] = self.lost_queries[:LOST_SHOWN]
            out["queries_with_baseline_value"] = self.valued_before
        if not self.computed:
            out["computed"] = False
        return round_values(out)  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MetricVerdict:
        """Rebuild from :meth:`to_dict` (the xdist hand-off): ``to_dict`` gives ``data`` back."""
        comparison = None
        if "ci95" in data:
            worse, better, same = (
                data["queries_worse"],
                data["queries_better"],
                data["queries_same"],
            )
            low, high = data["ci95"]
            comparison = PairedComparison(
                worse + better + same, math.nan, low, high, data["p_value"], worse, better, same
            )
        return cls(
            data["metric"],
            _float(data["baseline"]),
            _float(data["current"]),
            _float(data["delta"]),
            data["tolerance"],
            math.nan,  # only the failure message, made before the hand-off, shows it
            data["status"],
            comparison,
            [
                (w["query"], w["delta"], w["rank_before"], w["rank_after"])
                for w in data.get("most_regressed", [])
            ],
            data.get("note", ""),
            None if data.get("holes") is None else Holes.from_dict(data["holes"]),
            int(data.get("queries_lost", 0)),
            list(data.get("lost_queries", [])),
            int(data.get("queries_with_baseline_value", 0)),
            bool(data.get("computed", True)),
        )


def _float(value: Any) -> float:
    """A stored number; None (a NaN made JSON: a lost value) is NaN again."""
    return math.nan if value is None else float(value)


@dataclass
class BaselineVerdict:
    """The outcome of comparing one evaluation with its baseline entry (``ok``, ``improved``,
    ``regressed``, ``new``, ``not comparable``) with each metric's :class:`MetricVerdict`.
    Not the judge's :class:`~pytest_ragmetrics.data.assessments.Verdict` (a yes/no on one
    subject of an answer)."""

    status: Status
    metrics: list[MetricVerdict] = field(default_factory=list)
    reasons: list[str] = field(default_factory=list)
    only_baseline: list[str] = field(default_factory=list)
    only_current: list[str] = field(default_factory=list)
    identity_change: str = ""
    # Metrics of the baseline entry that got no verdict: absent (or without a value) in this
    # run, or with no value on any query both hold.
    metrics_not_compared: list[str] = field(default_factory=list)
    # Set when ragmetrics_alpha cannot be reached with this many queries: no drop can fail on
    # significance, and the verdict says so even when nothing dropped.
    alpha_note: str = ""
    # Set when k fell below some metrics' cutoffs since the baseline: those values are not
    # over the same depth as the baseline's, and the verdict says so whatever its status.
    depth_note: str = ""
    # Metrics this run computes that the baseline entry lacks (added to ragmetrics_metrics
    # since it was blessed): not compared, so not gated until the next update.
    metrics_not_in_baseline: list[str] = field(default_factory=list)

    @property
    def failed_metrics(self) -> list[MetricVerdict]:
        return [m for m in self.metrics if m.status in FAILED_METRIC]

    @property
    def lost(self) -> dict[str, int]:
        """Metric -> queries that lost their value since the baseline (only lost metrics)."""
        return {m.metric: m.lost for m in self.metrics if m.status == "lost"}

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "status": self.status,
            "metrics": [m.to_dict() for m in self.metrics],
        }
        if self.lost:
            out["lost"] = self.lost
        if self.reasons:
            out["reasons"] = self.reasons
        if self.only_baseline:
            out["queries_only_in_baseline"] = self.only_baseline
        if self.only_current:
            out["queries_only_in_current"] = self.only_current
        if self.identity_change:
            out["identity_change"] = self.identity_change
        if self.metrics_not_compared:
            out["metrics_not_compared"] = self.metrics_not_compared
        if self.metrics_not_in_baseline:
            out["metrics_not_in_baseline"] = self.metrics_not_in_baseline
        if self.alpha_note:
            out["alpha_note"] = self.alpha_note
        if self.depth_note:
            out["depth_note"] = self.depth_note
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> BaselineVerdict:
        """Rebuild from :meth:`to_dict` (the xdist hand-off): ``to_dict`` gives ``data`` back."""
        return cls(
            data["status"],
            [MetricVerdict.from_dict(m) for m in data.get("metrics", [])],
            list(data.get("reasons", [])),
            list(data.get("queries_only_in_baseline", [])),
            list(data.get("queries_only_in_current", [])),
            data.get("identity_change", ""),
            list(data.get("metrics_not_compared", [])),
            data.get("alpha_note", ""),
            data.get("depth_note", ""),
            list(data.get("metrics_not_in_baseline", [])),
        )


# Up to this many evaluations that cannot reach alpha are named one note each; more share one.
SAID_APART = 3


def verdict_notes(verdict: BaselineVerdict) -> list[str]:
    """What a verdict says beside its values, in the words of every report: each metric's
    note (a drop that passed, means over other queries, an alpha out of reach), a
    configuration change, why it is not comparable, a k below some metrics' cutoffs. Not its
    :attr:`~BaselineVerdict.alpha_note`: :func:`labelled_notes` says that once for many."""
    notes = [f"{m.metric} {m.note}" for m in verdict.metrics if m.note]
    if verdict.identity_change:
        notes.append(f"configuration changed since the baseline: {verdict.identity_change}")
    notes += [f"not comparable: {reason}" for reason in verdict.reasons]
    if verdict.depth_note:
        notes.append(verdict.depth_note)
    return notes


def labelled_notes(
    evaluations: Iterable[tuple[str, Sequence[str], BaselineVerdict | None]],
) -> list[str]:
    """The notes of (label, its own notes, its verdict) evaluations, each once and prefixed
    by the label: its own notes, then :func:`verdict_notes`; an alpha that many evaluations
    cannot reach (per-query tests) is said once for all of them."""
    notes: dict[str, None] = {}
    unreachable: dict[str, list[str]] = {}
    for where, own, verdict in evaluations:
        found = [*own, *(verdict_notes(verdict) if verdict is not None else ())]
        notes.update((f"{where}: {note}", None) for note in found)
        if verdict is not None and verdict.alpha_note:
            unreachable.setdefault(verdict.alpha_note, []).append(where)
    for note, labels in unreachable.items():
        if len(labels) <= SAID_APART:
            notes.update((f"{where}: {note}", None) for where in labels)
        else:
            notes[f"{len(labels)} evaluations (e.g. {'; '.join(labels[:2])}): {note}"] = None
    return list(notes)


def moved(query: str, delta: float, before: int, after: int, text: str | None = None) -> str:
    """How a query's first relevant document moved, e.g. '1234 "what causes x": rank 1 → 7
    (Δ -0.613)' (``text``: the query's text, shortened); just the query and Δ when there are
    no ranks (-1: an answer-layer evaluation)."""
    query = one_line(query) + (f' "{short_text(text)}"' if text else "")
    if before < 0 or after < 0:
        return f"{query} (Δ {delta_text(delta, 3)})"
    if before == after and before > 0:
        return (
            f"{query}: first relevant still at rank {before}, others fell "
            f"(Δ {delta_text(delta, 3)})"
        )
    return f"{query}: rank {_rank_text(before)} → {_rank_text(after)} (Δ {delta_text(delta, 3)})"


TEXT_CHARS = 80  # of a query's text, in a failure message


def short_text(text: str) -> str:
    """A query's text on one line, cut to TEXT_CHARS characters ("…" says it was cut)."""
    shown = one_line(" ".join(text.split()))
    return shown if len(shown) <= TEXT_CHARS else shown[: TEXT_CHARS - 1].rstrip() + "…"


def _rank_text(rank: int) -> str:
    return str(rank) if rank > 0 else "not retrieved"


# What an evaluation was compared with: a baseline file (the plugin's, or ``ragmetrics compare
# BASELINE REPORT``), an earlier JSON report, or the reference run of ``ragmetrics compare
# --qrels``. It decides the words of the failure message and its advice: only a baseline can be
# blessed with --ragmetrics-update-baseline.
Against = Literal["baseline", "report", "run"]

WORDS: dict[str, dict[str, str]] = {
    "baseline": {
        "regressed": "regressed against the baseline in {path}",
        "incomparable": "is not comparable with its baseline in {path}",
        "before": "baseline",
        "after": "current",
        "only_before": "the baseline",
        "only_after": "this run",
    },
    "report": {
        "regressed": "regressed against the baseline in {path}, a JSON report",
        "incomparable": "is not comparable with its baseline in {path}, a JSON report",
        "before": "baseline",
        "after": "current",
        "only_before": "the baseline report",
        "only_after": "this report",
    },
    "run": {
        "regressed": "is worse than the reference {path}",
        "incomparable": "is not comparable with the reference {path}",
        "before": "reference",
        "after": "this run",
        "only_before": "the reference",
        "only_after": "this run",
    },
}


def holes_lines(metric: MetricVerdict, against: Against) -> list[str]:
    """What the failure message says about the unjudged documents behind ``metric``'s drop."""
    if metric.holes is None:
        return []
    return metric.holes.lines(metric.metric, WORDS[against])


def holes_advice(verdict: BaselineVerdict) -> list[str]:
    """The advice on judging the holes, when some failed metric's drop they explain."""
    if any(m.holes is not None and m.holes.explained for m in verdict.failed_metrics):
        return [HOLES_ADVICE]
    return []


def advice(against: Against, status: str, path: str) -> str:
    """What to do about a regressed or not comparable evaluation compared with ``path``."""
    if against == "report":
        if status == "not comparable":
            return (
                "What to do: compare reports made on the same dataset with the same metric "
                "settings. A report records one run; it is not a baseline, so there is nothing "
                "to update."
            )
        return (
            "What to do: fix the regression; if the new numbers are intended, nothing needs "
            "updating (a report records one run, it is not a baseline): compare later reports "
            "with this one."
        )
    if against == "run":
        if status == "not comparable":
            return (
                "What to do: evaluate every input against the same judgments with the same "
                "metric settings (--qrels or --dataset, --relevance-level, --gain, --query-set, "
                "-J as they were recorded)."
            )
        return (
            "What to do: nothing, if a worse run is what you expected; otherwise fix it. To "
            "let drops like this pass, raise --tolerance, or give --alpha to fail only on "
            "significant drops."
        )
    if status == "not comparable":
        return (
            "What to do: if the change is intended, record new numbers with "
            f"{UPDATE_HINT}; otherwise restore the dataset and settings the baseline was made "
            "with."
        )
    return (
        "What to do: fix the regression, or if the new numbers are intended, bless them with "
        f"{UPDATE_HINT} and commit what it lists ({path} and the dataset digests beside it)."
    )


def failure_message(
    recorded: EvaluationRecord,
    verdict: BaselineVerdict,
    baseline_path: str,
    *,
    against: Against = "baseline",
    subject: str | None = None,
    texts: Mapping[str, str] | None = None,
) -> str:
    """The failure text of a regressed or not comparable evaluation, ending with what to do.

    ``against`` says what ``baseline_path`` is (its words and the advice follow: only a
    baseline is blessed with --ragmetrics-update-baseline); ``subject`` names the evaluation
    (default: its name and test); ``texts`` gives the text of queries by id, shown beside the
    most regressed ones.
    """
    words = WORDS[against]
    lines: list[str] = []
    where = failure_subject(recorded, subject)
    if verdict.status == "not comparable":
        lines.append(f"ragmetrics: {where} {words['incomparable'].format(path=baseline_path)}:")
        lines += [f"  {one_line(reason)}" for reason in verdict.reasons]
        lines += _query_set_lines(verdict, words)
        lines.append(advice(against, verdict.status, baseline_path))
        return "\n".join(lines)
    lines.append(f"ragmetrics: {where} {words['regressed'].format(path=baseline_path)}:")
    for m in verdict.failed_metrics:
        lines += _metric_lines(m, words, against, texts or {})
    lines += holes_advice(verdict)
    lines += lost_advice(verdict, words)
    if verdict.identity_change:
        lines.append(f"  configuration changed: {one_line(verdict.identity_change)}")
    if verdict.depth_note:
        lines.append(f"  {one_line(verdict.depth_note)}")
    lines += _query_set_lines(verdict, words)
    lines.append(advice(against, verdict.status, baseline_path))
    return "\n".join(lines)


def failure_subject(recorded: EvaluationRecord, subject: str | None = None) -> str:
    """How a failure message names its evaluation, on one line (a newline in a name or id
    cannot forge a line of the message)."""
    return one_line(subject if subject is not None else f"'{recorded.name}' ({recorded.test})")


def _metric_lines(
    m: MetricVerdict, words: Mapping[str, str], against: Against, texts: Mapping[str, str]
) -> list[str]:
    """The full message's block of one failed metric."""
    lines = lost_lines(m, words)
    c = m.comparison
    if m.status == "lost" and not (c is not None and c.n):
        return lines
    lines.append(
        f"  {m.metric}: {words['before']} {m.baseline:.4f} → {words['after']} "
        f"{m.current:.4f}, Δ {delta_text(m.delta)} (allowed drop {m.allowed_drop:.4f}, "
        f"tolerance {m.tolerance})"
        + (f" on the {c.n} queries that still have a value" if m.status == "lost" and c else "")
    )
    if c is not None and c.n:
        lines.append(
            f"    95% bootstrap CI of Δ [{delta_text(c.ci_low)}, {delta_text(c.ci_high)}]; "
            f"paired randomization test p = {c.p_value:.4f} ({c.n} queries)"
        )
        lines.append(f"    queries: {c.worse} worse, {c.better} better, {c.same} unchanged")
    if m.worst:
        shown = "; ".join(moved(q, d, rb, ra, texts.get(q)) for q, d, rb, ra in m.worst)
        lines.append(f"    most regressed: {shown}")
    if m.note:
        lines.append(f"    {m.note}")
    return lines + holes_lines(m, against)


def lost_lines(metric: MetricVerdict, words: Mapping[str, str]) -> list[str]:
    """What the failure message says about the queries whose value of ``metric`` was lost."""
    if metric.status != "lost":
        return []
    if not metric.computed:
        return [
            f"  {metric.metric}: lost: {NOT_COMPUTED}; the {words['before']} has a value on "
            f"{metric.valued_before} queries"
        ]
    named = ", ".join(metric.lost_queries[:LOST_NAMED])
    more = ", ..." if metric.lost > LOST_NAMED else ""
    of = f" of {metric.valued_before}" if metric.valued_before else ""
    return [
        f"  {metric.metric}: lost: {metric.lost}{of} queries had a value in the "
        f"{words['before']} and have none now (n/a): {named}{more}"
    ]


def lost_advice(verdict: BaselineVerdict, words: Mapping[str, str]) -> list[str]:
    """The advice on lost values: a missing value is a failure, never a skipped metric."""
    if not verdict.lost:
        return []
    return [
        "  A value that is n/a now is lost, not skipped: find why those queries have none (an "
        "empty answer, no claims or contexts, a judge that gave no verdict, a metric that "
        f"cannot be computed). A mean over fewer queries than the {words['before']}'s is no "
        "basis for ok."
    ]


def _query_set_lines(verdict: BaselineVerdict, words: Mapping[str, str]) -> list[str]:
    lines = []
    named = {m.metric for m in verdict.metrics if not m.computed}  # already said: lost
    not_compared = [m for m in verdict.metrics_not_compared if m not in named]
    if not_compared:
        lines.append(
            f"  metrics of {words['only_before']} not compared (no value in "
            f"{words['only_after']}): {', '.join(not_compared)}"
        )
    if verdict.metrics_not_in_baseline:
        lines.append(
            f"  metrics not in {words['only_before']} (not compared: no value there): "
            f"{', '.join(verdict.metrics_not_in_baseline)}"
        )
    if verdict.only_baseline:
        lines.append(
            f"  queries only in {words['only_before']} ({len(verdict.only_baseline)}): "
            f"{one_line(', '.join(verdict.only_baseline[:10]))}"
            f"{' ...' if len(verdict.only_baseline) > 10 else ''}"
        )
    if verdict.only_current:
        lines.append(
            f"  queries only in {words['only_after']} ({len(verdict.only_current)}): "
            f"{one_line(', '.join(verdict.only_current[:10]))}"
            f"{' ...' if len(verdict.only_current) > 10 else ''}"
        )
    return lines
