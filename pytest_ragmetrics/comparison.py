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
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_ragmetrics.deltas import change, delta_text
from pytest_ragmetrics.deltas import delta as delta_of
from pytest_ragmetrics.errors import BaselineError, ConfigError, MetricError, ReportError
from pytest_ragmetrics.schema import EVALUATION_SCHEMA as EVALUATION_SCHEMA
from pytest_ragmetrics.schema import EVALUATION_VERSION as EVALUATION_VERSION
from pytest_ragmetrics.stats import DEFAULT_SEED

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.tolerances import Tolerances
    from pytest_ragmetrics.baseline.verdicts import Verdict
    from pytest_ragmetrics.data.model import Dataset, Qrels, Run
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.metrics.semantics import MetricSemantics
    from pytest_ragmetrics.records import EvaluationRecord

COMPARISON_SCHEMA = "pytest-ragmetrics/comparison"  # ragmetrics compare --format json (runs)
COMPARISON_VERSION = 1
MOST_CHANGED = 5  # queries listed per run and metric
SIGNIFICANCE = 0.05  # the table's significance mark when no --alpha is given
_SNIFF_BYTES = 65536

# What a file given to compare is. "json" and "text" are files that are none of ours: the first
# is refused with its problem named; the second is read as a TREC run when runs are compared.
InputKind = Literal["run", "evaluation", "report", "baseline", "json", "text"]
KIND_WORDS: dict[str, str] = {
    "run": "TREC run",
    "evaluation": "evaluate output",
    "report": "JSON report",
    "baseline": "baseline",
}


# -- the evaluate document ------------------------------------------------------------------------


def evaluation_document(
    evaluation: Evaluation, *, run: str, dataset: Mapping[str, Any]
) -> dict[str, Any]:
    """What ``ragmetrics evaluate --format json`` writes: the means, every per-query value
    (what a paired comparison needs), the judgments' fingerprint and the scoring rules, under a
    schema name that ``compare`` recognises::

        {"schema": "pytest-ragmetrics/evaluation", "version": 1, "plugin_version",
         "run": path, "dataset": {"name", "split" | "source", "fingerprints": {"qrels"}},
         "k": null,                      # a TREC run does not record the k it was made with
         "layer": "retrieval", "metrics": {metric: mean | null}, "num_queries",
         "semantics": {"relevance_level", "gain", "query_set"[, "ignore_identical_ids"]},
         "per_query": {query_id: {metric: value | null}},
         "details": {"first_relevant_rank": {query_id: rank, 0 if none retrieved}},
         "notes": [str]}                 # only when there are some
    """
    from pytest_ragmetrics._version import __version__

    data = evaluation.to_dict(per_query=True)
    return {
        "schema": EVALUATION_SCHEMA,
        "version": EVALUATION_VERSION,
        "plugin_version": __version__,
        "metrics": data["metrics"],
        "num_queries": data["num_queries"],
        "run": run,
        "dataset": dict(dataset),
        "k": None,
        "layer": data["layer"],
        "semantics": data["semantics"],
        **{key: data[key] for key in ("notes", "per_query", "details") if key in data},
    }


# -- the judgments -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgments:
    """The qrels runs are evaluated against, and how a record names them."""

    qrels: Qrels
    identity: Mapping[str, Any]  # a record's "dataset": name/split or source, qrels fingerprint
    description: str
    dataset: Dataset | None = None  # with --dataset: query texts and titles for the HTML page


def load_judgments(qrels: str | None, dataset: str | None, split: str | None) -> Judgments:
    """The judgments of ``--qrels FILE`` or ``--dataset DIR [--split S]`` (one is given)."""
    from pytest_ragmetrics.data.trec import read_qrels

    if dataset is None:
        if split is not None:
            raise ConfigError("--split: only with --dataset")
        if qrels is None:
            raise ConfigError("give --qrels FILE or --dataset DIR")
        judged = read_qrels(qrels)
        identity = {
            "name": "qrels",
            "source": qrels,
            "fingerprints": {"qrels": judged.fingerprint},
        }
        return Judgments(judged, identity, qrels)
    from pytest_ragmetrics.data.layouts import load_dataset

    loaded = load_dataset(dataset, split or "test")
    identity = {
        "name": loaded.name,
        "split": loaded.split,
        "fingerprints": {"qrels": loaded.qrels.fingerprint},
    }
    return Judgments(loaded.qrels, identity, f"{dataset} ({loaded.name}, {loaded.split})", loaded)


# -- what a file is --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """One file given to ``compare``: what it is and, for a JSON file, its value."""

    path: str
    kind: InputKind
    data: Any = None


def read_input(path: str) -> Input:
    """Sniff ``path`` (a TREC run is read later, streaming) or read its JSON value.

    A JSON file that cannot be read is a ReportError naming the file and line; what it holds
    is checked when it is used (:mod:`pytest_ragmetrics.schema`).
    """
    from pytest_ragmetrics.fileio import read_json_file
    from pytest_ragmetrics.schema import document_kind

    looks = _sniff(Path(path))
    if looks != "json":
        return Input(path, looks)
    try:
        data = read_json_file(Path(path), error=ReportError)
    except FileNotFoundError:
        raise ReportError(f"{path}: file not found") from None
    return Input(path, document_kind(data) or "json", data)


def _sniff(path: Path) -> InputKind:
    """'json' for a file named .json or opening with { or [; 'run' for a gzipped file or one
    whose first line has the columns of a TREC run (qid Q0 doc rank score [tag]); else 'text'
    (a missing file included: its reader says so)."""
    from pytest_ragmetrics.data.textfile import split_fields

    if path.name.endswith(".json"):
        return "json"
    if path.name.endswith(".gz"):
        return "run"
    try:
        with open(path, "rb") as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return "text"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith(("{", "[")):
        return "json"
    fields = split_fields(text.split("\n", 1)[0])
    if len(fields) >= 5:
        try:
            score = float(fields[4])
        except ValueError:
            return "text"
        if math.isfinite(score):
            return "run"
    return "text"


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
    # Long: one dispatch over the input kinds, each branch a few lines; kept together so the kinds
    # read side by side.
    from pytest_ragmetrics.data.trec import read_run
    from pytest_ragmetrics.metrics.semantics import MetricSemantics

    rules = semantics or MetricSemantics()
    found: list[tuple[Input, list[EvaluationRecord], Run | None]] = []
    for item in inputs:
        if item.kind in ("run", "text"):
            found.append((item, [], read_run(item.path)))
        else:
            found.append((item, _records(item, select), None))
    runs = [item.path for item, _, run in found if run is not None]
    if runs and judgments is None:
        raise ConfigError(
            f"{runs[0]}: a TREC run; comparing runs needs their judgments: give --qrels FILE "
            "or --dataset DIR"
        )
    read = [(item, record) for item, records, _ in found for record in records]
    if judgments is not None:
        wanted = judgments.identity["fingerprints"]["qrels"]
        for item, record in read:
            recorded = ((record.dataset or {}).get("fingerprints") or {}).get("qrels")
            if recorded is not None and recorded != wanted:
                raise BaselineError(
                    f"{item.path}: {_where(item, record)}was evaluated on other judgments than "
                    f"{judgments.description} (the qrels fingerprints differ); give the qrels "
                    "it was evaluated on"
                )
    names = _metric_names(metrics, judged_only, read)
    for item, record in read:
        missing = [m for m in names if m not in record.evaluation.metrics]
        if missing:
            raise MetricError(
                f"{item.path}: {_where(item, record)}has no per-query values of "
                f"{', '.join(missing)} (it has {', '.join(record.evaluation.metrics)}); give "
                "-m with metrics every input has"
            )
    systems: list[System] = []
    for item, records, run in found:
        if run is not None:
            assert judgments is not None
            record = _evaluate_run(item.path, run, judgments, names, rules)
            systems.append(System(item.path, "run", item.path, record, run))
            continue
        for record in records:
            label = item.path
            if len(records) > 1:
                label = f"{item.path} [{record.name}]"
                if sum(r.name == record.name for r in records) > 1:
                    label = f"{item.path} {record.label}"
            kept = dataclasses.replace(record, evaluation=record.evaluation.select(names))
            systems.append(System(label, item.kind, item.path, kept))
    return _unique_labels(systems)


def _where(item: Input, record: EvaluationRecord) -> str:
    return f"{record.label}: " if item.kind in ("report", "baseline") else ""


def _records(item: Input, select: Sequence[str]) -> list[EvaluationRecord]:
    """The retrieval evaluations of a JSON input, as records (every field checked)."""
    from pytest_ragmetrics.records import EvaluationRecord

    path = item.path
    if item.kind == "evaluation":
        return [_evaluate_output(item)]
    if item.kind == "json":
        raise ReportError(
            f"{path}: not a TREC run, a 'ragmetrics evaluate --format json' output, a JSON "
            "report (--ragmetrics-json) or a baseline file"
        )
    from pytest_ragmetrics.baseline.compare import evaluations_in

    entries = evaluations_in(item.data, Path(path))
    records = []
    for entry in entries.values():
        record = EvaluationRecord.from_dict(entry)
        if record.layer != "retrieval":
            continue
        if select and not {record.name, record.test, record.label} & set(select):
            continue
        if not len(record.evaluation):
            raise BaselineError(
                f"{path}: {record.label} has no per-query values; a paired comparison needs them"
            )
        records.append(record)
    if not records:
        wanted = f" named {', '.join(select)}" if select else ""
        have = ", ".join(
            f"{e['name']} ({e['layer']})" for e in entries.values() if isinstance(e, Mapping)
        )
        raise BaselineError(
            f"{path}: no retrieval evaluation{wanted} (it has: {have or 'none'}); answer-layer "
            "evaluations are compared by 'ragmetrics compare BASELINE_OR_REPORT REPORT'"
        )
    return records


def _evaluate_output(item: Input) -> EvaluationRecord:
    """The record of a ``ragmetrics evaluate --format json`` output."""
    from pytest_ragmetrics.records import EvaluationRecord
    from pytest_ragmetrics.schema import check_document

    data, path = item.data, item.path
    check_document(data, "evaluation", path)
    if not data.get("per_query"):
        raise ReportError(f"{path}: no per-query values; a paired comparison needs them")
    record = EvaluationRecord.from_dict({**data, "test": path, "name": "evaluation"})
    return dataclasses.replace(record, identity={})


def _metric_names(
    metrics: Sequence[str] | None,
    judged_only: bool,
    read: Sequence[tuple[Input, EvaluationRecord]],
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


def _evaluate_run(
    path: str, run: Run, judgments: Judgments, metrics: Sequence[str], rules: MetricSemantics
) -> EvaluationRecord:
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.records import EvaluationRecord

    evaluation = evaluate(
        judgments.qrels,
        run,
        list(metrics),
        relevance_level=rules.relevance_level,
        gain=rules.gain,
        query_set=rules.query_set,
        ignore_identical_ids=rules.ignore_identical_ids,
    )
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
    verdict: Verdict
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
        from pytest_ragmetrics.report.escaping import for_terminal as one_line

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
