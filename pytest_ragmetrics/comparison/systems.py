"""Comparing systems on the same judgments: ``ragmetrics compare --qrels Q RUN_A RUN_B ...``.

Each input becomes a :class:`System` around an :class:`~pytest_ragmetrics.records.EvaluationRecord`:
a TREC run, evaluated here against the judgments; a ``ragmetrics evaluate --format json`` output
(the *evaluation document*, written by :func:`evaluation_document` and read here); or a retrieval
evaluation of a JSON report or a baseline file. Every later system is compared with the first,
the reference, by :func:`~pytest_ragmetrics.baseline.compare.compare_to_baseline` — the
plugin's own verdict: Δ of each mean against the tolerance, the paired bootstrap CI and
randomization p over the shared queries, and the queries worse / better / unchanged (losses,
wins, ties) — plus the queries that moved most either way.

Nothing is guessed: a TREC run does not record the k it was retrieved with, so its k is
unknown (never its depth), and a document that does not say which judgments and scoring rules
made its numbers is refused rather than compared.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.comparison.inputs import Input, InputKind, Judgments, records_of, where
from pytest_ragmetrics.controls import show_controls as one_line
from pytest_ragmetrics.deltas import change, delta_text
from pytest_ragmetrics.deltas import delta as delta_of
from pytest_ragmetrics.errors import BaselineError, ConfigError, MetricError
from pytest_ragmetrics.stats import DEFAULT_SEED

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.tolerances import Tolerances
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict
    from pytest_ragmetrics.data.model import Run
    from pytest_ragmetrics.metrics.semantics import MetricSemantics
    from pytest_ragmetrics.records import EvaluationRecord

COMPARISON_SCHEMA = "pytest-ragmetrics/comparison"  # ragmetrics compare --format json (runs)
COMPARISON_VERSION = 1
MOST_CHANGED = 5  # queries listed per run and metric
SIGNIFICANCE = 0.05  # the table's significance mark when no --alpha is given

# -- systems ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class System:
    """One compared system: a run, an evaluate output, or one evaluation of a report or
    baseline. ``record.k`` is what was recorded (None for a TREC run: unknown)."""

    label: str
    kind: InputKind
    path: str
    record: EvaluationRecord
    run: Run | None = None  # a TREC run's rankings, for the HTML page's drill-down

    def to_dict(self) -> dict[str, Any]:
        from pytest_ragmetrics.records import round_values

        out: dict[str, Any] = {"label": self.label, "kind": self.kind, "path": self.path}
        if self.kind in ("report", "baseline"):
            out.update(test=self.record.test, name=self.record.name)
        evaluation = self.record.evaluation
        out.update(
            k=self.record.k,
            num_queries=len(evaluation),
            dataset=None if self.record.dataset is None else dict(self.record.dataset),
            semantics=None if evaluation.semantics is None else evaluation.semantics.as_dict(),
            metrics=round_values(dict(evaluation.mean)),
        )
        if evaluation.notes:
            out["notes"] = list(evaluation.notes)
        return out


def load_systems(
    inputs: Sequence[Input],
    *,
    judgments: Judgments | None,
    metrics: Sequence[str] | None,
    judged_only: bool = False,
    semantics: MetricSemantics | None = None,
    select: Sequence[str] = (),
) -> list[System]:
    """The systems of ``inputs``, in order, all with the same metrics.

    ``metrics`` (None: ``DEFAULT_METRICS`` for runs alone, else the metrics every evaluation
    given has) are computed for the TREC runs against ``judgments`` under ``semantics``; the
    evaluations read from files must hold them. ``select`` keeps, from reports and baselines,
    the evaluations whose name, test id or label is one of its items.
    """
    from pytest_ragmetrics.metrics.semantics import MetricSemantics

    found = [_read(item, select) for item in inputs]
    read = [(item, record) for item, records, _ in found for record in records]
    _check_judgments(found, read, judgments)
    names = metric_names(metrics, judged_only, read)
    for item, record in read:
        missing = [m for m in names if m not in record.evaluation.metrics]
        if missing:
            raise MetricError(
                f"{item.path}: {where(item, record)}has no per-query values of "
                f"{', '.join(missing)} (it has {', '.join(record.evaluation.metrics)}); give "
                "-m with metrics every input has"
            )
    systems: list[System] = []
    for item, records, run in found:
        if run is None:
            systems += _file_systems(item, records, names)
            continue
        assert judgments is not None  # _check_judgments refused runs without them
        rules = semantics or MetricSemantics()
        record = evaluate_run(item.path, run, judgments, names, rules)
        systems.append(System(item.path, "run", item.path, record, run))
    return _unique_labels(systems)


_Found = tuple[Input, list["EvaluationRecord"], "Run | None"]


def _read(item: Input, select: Sequence[str]) -> _Found:
    """A TREC run read (any file that is no JSON is one), or the records of a JSON input."""
    from pytest_ragmetrics.data.trec import read_run

    if item.kind in ("run", "text"):
        return item, [], read_run(item.path)
    return item, records_of(item, select), None


def _check_judgments(
    found: Sequence[_Found],
    read: Sequence[tuple[Input, EvaluationRecord]],
    judgments: Judgments | None,
) -> None:
    """A ConfigError for runs without judgments; a BaselineError for an evaluation made on
    other qrels than ``judgments``."""
    runs = [item.path for item, _, run in found if run is not None]
    if runs and judgments is None:
        raise ConfigError(
            f"{runs[0]}: a TREC run; comparing runs needs their judgments: give --qrels FILE "
            "or --dataset DIR"
        )
    if judgments is None:
        return
    wanted = judgments.identity["fingerprints"]["qrels"]
    for item, record in read:
        recorded = ((record.dataset or {}).get("fingerprints") or {}).get("qrels")
        if recorded is not None and recorded != wanted:
            raise BaselineError(
                f"{item.path}: {where(item, record)}was evaluated on other judgments than "
                f"{judgments.description} (the qrels fingerprints differ); give the qrels "
                "it was evaluated on"
            )


def _file_systems(
    item: Input, records: Sequence[EvaluationRecord], names: Sequence[str]
) -> list[System]:
    """A system per evaluation of a JSON input, labelled by the file (and the evaluation's
    name, or its label when names repeat), on the metrics ``names``."""
    systems = []
    for record in records:
        label = item.path
        if len(records) > 1:
            label = f"{item.path} [{record.name}]"
            if sum(r.name == record.name for r in records) > 1:
                label = f"{item.path} {record.label}"
        kept = dataclasses.replace(record, evaluation=record.evaluation.select(names))
        systems.append(System(label, item.kind, item.path, kept))
    return systems


def metric_names(
    metrics: Sequence[str] | None,
    judged_only: bool,
    read: Sequence[tuple[Input, EvaluationRecord]] = (),
) -> list[str]:
    """Canonical metric names: those asked for, or the default for runs alone, or the ones
    every evaluation read from a file has; ``judged_only`` gives their judged-only forms."""
    from pytest_ragmetrics.metrics.names import judged_only_name, parse_metrics
    from pytest_ragmetrics.vocabulary import DEFAULT_METRICS

    if metrics:
        names = [spec.name for spec in parse_metrics(metrics)]
    elif read:
        first = read[0][1].evaluation.metrics
        names = [m for m in first if all(m in r.evaluation.metrics for _, r in read)]
        if not names:
            held = "; ".join(f"{item.path}: {', '.join(r.evaluation.metrics)}" for item, r in read)
            raise MetricError(f"the inputs have no metric in common ({held}); give -m")
    else:
        names = list(DEFAULT_METRICS)
    if judged_only:
        try:
            names = list(dict.fromkeys(judged_only_name(name) for name in names))
        except MetricError as exc:
            raise MetricError(f"-J: {exc}") from None
    return names


def evaluate_run(
    path: str, run: Run, judgments: Judgments, metrics: Sequence[str], rules: MetricSemantics
) -> EvaluationRecord:
    """The record of a TREC run scored against ``judgments`` (its k unknown: None)."""
    from pytest_ragmetrics.comparison.runs import score
    from pytest_ragmetrics.records import EvaluationRecord

    evaluation = score(judgments.qrels, run, metrics, rules)
    # k stays None: a run file does not say how many documents were asked for, and its
    # depth is not that number (a retriever may return fewer).
    return EvaluationRecord(path, "run", evaluation, dataset=dict(judgments.identity))


def _unique_labels(systems: list[System]) -> list[System]:
    seen: dict[str, int] = {}
    out = []
    for system in systems:
        count = seen.get(system.label, 0) + 1
        seen[system.label] = count
        out.append(
            system if count == 1 else dataclasses.replace(system, label=f"{system.label} #{count}")
        )
    return out


# -- the comparison --------------------------------------------------------------------------------


@dataclass(frozen=True)
class QueryChange:
    """One query's value in the reference and in the compared run (first relevant ranks:
    0 when none was retrieved, None when not recorded)."""

    query: str
    reference: float
    value: float
    rank_reference: int | None
    rank_value: int | None

    @property
    def delta(self) -> float:
        return delta_of(self.reference, self.value)

    def to_dict(self) -> dict[str, Any]:
        from pytest_ragmetrics.records import round_values

        return round_values(  # type: ignore[no-any-return]
            {
                "query": self.query,
                "reference": self.reference,
                "value": self.value,
                "delta": self.delta,
                "rank_reference": self.rank_reference,
                "rank_value": self.rank_value,
            }
        )


@dataclass(frozen=True)
class Versus:
    """One system against the reference: the verdict (per metric Δ, CI, p, losses / wins /
    ties as queries worse / better / same) and the queries that changed most per metric."""

    system: System
    verdict: BaselineVerdict
    most_changed: Mapping[str, tuple[QueryChange, ...]]
    notes: tuple[str, ...] = ()

    @property
    def failed(self) -> bool:
        return self.verdict.status in ("regressed", "not comparable")


@dataclass(frozen=True)
class SystemsComparison:
    """Every system against the first (the reference), on the same metrics."""

    systems: tuple[System, ...]
    versus: tuple[Versus, ...]
    metrics: tuple[str, ...]
    tolerance: tuple[str, ...]
    alpha: float | None = None
    judgments: Judgments | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def reference(self) -> System:
        return self.systems[0]

    @property
    def failed(self) -> list[Versus]:
        return [v for v in self.versus if v.failed]

    def explanation(self, versus: Versus) -> str:
        """Why ``versus`` failed, ending with what to do: the reasons of a run that is not
        comparable; for a worse one, the metrics that dropped beyond the tolerance (its table
        has the rest). Lines in the shape of ``failure_message``'s."""
        from pytest_ragmetrics.baseline.verdicts import (
            advice,
            failure_message,
            holes_advice,
            holes_lines,
            lost_lines,
        )

        reference = one_line(self.reference.label)
        if versus.verdict.status == "not comparable":
            return failure_message(
                versus.system.record,
                versus.verdict,
                reference,
                against="run",
                subject=versus.system.label,
            )
        system = one_line(versus.system.label)
        lines = [f"ragmetrics: {system} is worse than the reference {reference}:"]
        for m in versus.verdict.failed_metrics:
            lines += lost_lines(m, {"before": "reference"})
            if m.status == "lost" and math.isnan(m.delta):
                continue
            line = f"  {m.metric}: Δ {delta_text(m.delta)} (allowed drop {m.allowed_drop:.4f}"
            c = m.comparison
            if c is not None and c.n:
                line += f"; p = {c.p_value:.4f}, {c.worse} of {c.n} queries worse"
            lines.append(line + ")")
            lines += holes_lines(m, "run")
        lines += holes_advice(versus.verdict)
        lines.append(advice("run", "regressed", reference))
        return "\n".join(lines)

    @property
    def significance(self) -> float:
        """The level below which a p-value is marked significant (--alpha, else 0.05)."""
        return self.alpha if self.alpha is not None else SIGNIFICANCE

    def to_dict(self) -> dict[str, Any]:
        """The JSON of ``compare --format json`` with runs::

            {"schema": "pytest-ragmetrics/comparison", "version": 1,
             "judgments": str | null, "metrics": [metric], "tolerance": [str],
             "alpha": number | null, "reference": label,
             "runs": [{"label", "kind", "path", ["test", "name"], "k" (null: unknown),
                       "num_queries", "dataset", "semantics", "metrics": {metric: mean},
                       ["notes"]}],
             "comparisons": [{"run": label, "reference": label,
                              "status": "ok" | "improved" | "regressed" | "not comparable",
                              "metrics": [{"metric", "baseline" (the reference's mean),
                                           "current" (this run's), "delta", "tolerance",
                                           "status", "ci95", "p_value", "queries_worse"
                                           (losses), "queries_better" (wins), "queries_same"
                                           (ties), ["most_regressed", "note"]}],
                              ["reasons", "queries_only_in_baseline" (the reference),
                               "queries_only_in_current" (this run)],
                              "most_changed": {metric: [{"query", "reference", "value",
                                               "delta", "rank_reference", "rank_value"}]},
                              ["notes"]}],
             "failed": N, ["notes"]}

        The verdicts have the shape of the two-argument form's (and the JSON report's).
        """
        comparisons = []
        for versus in self.versus:
            item: dict[str, Any] = {
                "run": versus.system.label,
                "reference": self.reference.label,
                **versus.verdict.to_dict(),
                "most_changed": {
                    metric: [change.to_dict() for change in changes]
                    for metric, changes in versus.most_changed.items()
                },
            }
            if versus.notes:
                item["notes"] = list(versus.notes)
            comparisons.append(item)
        out: dict[str, Any] = {
            "schema": COMPARISON_SCHEMA,
            "version": COMPARISON_VERSION,
            "judgments": None if self.judgments is None else self.judgments.description,
            "metrics": list(self.metrics),
            "tolerance": list(self.tolerance),
            "alpha": self.alpha,
            "reference": self.reference.label,
            "runs": [system.to_dict() for system in self.systems],
            "comparisons": comparisons,
            "failed": len(self.failed),
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def compare_systems(
    systems: Sequence[System],
    tolerances: Tolerances,
    *,
    tolerance: Sequence[str] = ("0.01",),
    alpha: float | None = None,
    judgments: Judgments | None = None,
    most_changed: int = MOST_CHANGED,
    seed: int = DEFAULT_SEED,
    unjudged_drops: str = "fail",
) -> SystemsComparison:
    """Every system after the first against the first (``tolerance`` is how
    ``tolerances`` was written, for the reports)."""
    from pytest_ragmetrics.baseline.compare import compare_to_baseline
    from pytest_ragmetrics.baseline.pair import not_compared_notes

    if len(systems) < 2:
        raise ConfigError(
            f"compare needs at least two runs; {systems[0].path if systems else 'the input'} "
            "gives one"
        )
    reference = systems[0]
    versus = []
    for system in systems[1:]:
        before, after, notes = _paired_forms(reference, system)
        verdict = compare_to_baseline(
            after, before, tolerances, alpha=alpha, seed=seed, unjudged_drops=unjudged_drops
        )
        notes += not_compared_notes(system.label, verdict)  # never silent: baseline/pair.py
        versus.append(
            Versus(system, verdict, _most_changed(before, after, most_changed), tuple(notes))
        )
    metrics = reference.record.evaluation.metrics
    return SystemsComparison(
        tuple(systems),
        tuple(versus),
        metrics,
        tuple(tolerance),
        alpha,
        judgments,
    )


def _paired_forms(
    reference: System, system: System
) -> tuple[dict[str, Any], EvaluationRecord, list[str]]:
    """The reference as a baseline entry and the system as a record, for the verdict.

    Identities and k are left out: systems differ on purpose, and a k change is no reason.
    Only the dataset parts both recorded are compared (a run knows its qrels, a report
    evaluation its corpus and queries too).
    """
    entry = reference.record.compared_form()
    before = (entry.get("dataset") or {}).get("fingerprints") or {}
    after = ((system.record.dataset or {}).get("fingerprints")) or {}
    shared = sorted(set(before) & set(after))
    notes = []
    if "qrels" not in shared:
        notes.append(
            f"{system.label}: cannot check that it was evaluated on the reference's judgments "
            "(a qrels fingerprint is missing from one of them)"
        )
    entry.update(
        identity={},
        k=None,
        dataset={"fingerprints": {part: before[part] for part in shared}},
    )
    record = dataclasses.replace(
        system.record,
        identity={},
        k=None,
        dataset={"fingerprints": {part: after[part] for part in shared}},
    )
    return entry, record, notes


def _most_changed(
    entry: Mapping[str, Any], record: EvaluationRecord, n: int
) -> dict[str, tuple[QueryChange, ...]]:
    """Per metric, the ``n`` shared queries whose value moved most (either way)."""
    current = record.compared_form()
    base_pq: Mapping[str, Mapping[str, Any]] = entry.get("per_query") or {}
    cur_pq: Mapping[str, Mapping[str, Any]] = current["per_query"]
    base_rank = (entry.get("details") or {}).get("first_relevant_rank")
    cur_rank = (current.get("details") or {}).get("first_relevant_rank")
    shared = [q for q in cur_pq if q in base_pq]
    out: dict[str, tuple[QueryChange, ...]] = {}
    for metric in current["metrics"]:
        changes = []
        for q in shared:
            before, after = base_pq[q].get(metric), cur_pq[q].get(metric)
            if before is None or after is None or change(delta_of(before, after)) == "tied":
                continue
            changes.append(
                QueryChange(
                    q,
                    float(before),
                    float(after),
                    None if base_rank is None else int(base_rank.get(q, 0)),
                    None if cur_rank is None else int(cur_rank.get(q, 0)),
                )
            )
        changes.sort(key=lambda c: (-abs(c.delta), c.query))
        out[metric] = tuple(changes[:n])
    return out


# -- words the renderers share ---------------------------------------------------------------------


def k_text(k: int | None) -> str:
    """A system's k: what was recorded, or "unknown" (a TREC run records none)."""
    return "unknown" if k is None else str(k)


def semantics_text(rules: Mapping[str, Any]) -> str:
    """The scoring rules in words: 'relevance level 1, linear gain, query set qrels'."""
    text = (
        f"relevance level {rules.get('relevance_level')}, {rules.get('gain')} gain, query set "
        f"{rules.get('query_set')}"
    )
    if rules.get("ignore_identical_ids"):
        text += ", identical ids ignored"
    return text


def rank_move(before: int | None, after: int | None) -> str:
    """How a query's first relevant document moved: '7 → 1', '1 → none'; '' if unrecorded."""
    if before is None or after is None:
        return ""
    return f"{before or 'none'} → {after or 'none'}"
