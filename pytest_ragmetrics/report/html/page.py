"""What one HTML page shows, as typed objects: the checked evaluations of a session, a JSON
report, a baseline, or a ``ragmetrics compare`` of two reports or of several runs.

Every constructor ends in the same :class:`ReportPage`, so the page is drawn from the records
the terminal and Markdown reports draw (:class:`~pytest_ragmetrics.report.outcome.Checked`),
never from a raw dict; a document read from a file is checked first
(:func:`~pytest_ragmetrics.schema.read_document`), so a malformed one is a ReportError (or a
BaselineError for a baseline file) naming the file and the field.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.report.outcome import Checked, EvaluationOutcome, ThresholdResult
from pytest_ragmetrics.report.tables import Table

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict
    from pytest_ragmetrics.comparison import SystemsComparison
    from pytest_ragmetrics.records import EvaluationRecord
    from pytest_ragmetrics.report.outcome import SessionOutcome
    from pytest_ragmetrics.schema import Document


@dataclass(frozen=True)
class Compared:
    """What a ``ragmetrics compare --format html`` page compared: two reports (``before``,
    ``after``) or runs against the first (``reference``, ``runs``, ``reference_keys``: the
    reference's evaluations, one per (dataset, split) pair in ``pairs`` when there are
    several)."""

    before: str = ""
    after: str = ""
    reference: str = ""
    runs: tuple[str, ...] = ()
    judgments: str | None = None
    tolerance: tuple[str, ...] = ()
    alpha: float | None = None
    strict: bool | None = None
    # What was not compared, as ``PairComparison.not_compared()["lines"]`` says it (indented
    # lines are the items of the line before).
    not_compared: tuple[str, ...] = ()
    reference_keys: tuple[tuple[str, str], ...] = ()
    pairs: tuple[str, ...] = ()

    @property
    def of_runs(self) -> bool:
        return bool(self.reference)

    def settings(self) -> list[tuple[str, Any]]:
        """(name, value) of the comparison's settings, shown with the run's."""
        if self.of_runs:
            return [
                ("reference", self.reference),
                ("runs", list(self.runs)),
                *([("datasets", list(self.pairs))] if self.pairs else []),
                ("judgments", self.judgments),
                ("tolerance", list(self.tolerance)),
                ("alpha", self.alpha),
            ]
        return [
            ("before", self.before),
            ("after", self.after),
            ("tolerance", list(self.tolerance)),
            ("alpha", self.alpha),
            ("strict", self.strict),
        ]


@dataclass(frozen=True)
class TableGroup:
    """Typed tables shown together before the layers, under ``title``: the per-dataset
    summary (a table per metric), the verdicts of ``compare`` over several datasets. ``notes``
    follow the tables."""

    title: str
    intro: str
    tables: tuple[Table, ...]
    notes: tuple[str, ...] = ()


def dataset_tables(
    evaluations: Sequence[Checked], metrics: Sequence[str], order: Sequence[str] = ()
) -> tuple[TableGroup, ...]:
    """The per-dataset summary of a run's retrieval evaluations, when they ran on several
    (dataset, split) pairs (else none), as the terminal and Markdown reports show it."""
    from pytest_ragmetrics.report.datasets import SUMMARY_NOTE, dataset_summaries, summary_grid

    summaries = dataset_summaries(evaluations, metrics, order)
    if not summaries:
        return ()
    intro = SUMMARY_NOTE[0].upper() + SUMMARY_NOTE[1:] + "."
    return (TableGroup("Per dataset", intro, tuple(summary_grid(s) for s in summaries)),)


@dataclass(frozen=True)
class ReportPage:
    """The evaluations of one page, in the order shown, with what the page says about the
    run: the settings (``metrics``: the configured order of metric columns), the plugin
    version, when it was made, the baseline update and stale baseline entries, and what a
    ``compare`` page compared."""

    evaluations: tuple[Checked, ...]
    metrics: tuple[str, ...] = ()
    settings: Mapping[str, Any] = field(default_factory=dict)
    plugin_version: str = ""
    created: str = ""
    baseline_update: Mapping[str, Any] | None = None
    stale: tuple[tuple[str, str], ...] = ()
    # (test, failure) of thresholds no evaluation of their test could check.
    unchecked: tuple[tuple[str, str], ...] = ()
    compared: Compared | None = None
    # The means a report holds, by evaluation (test, name): shown as they are written there
    # (recomputed from its per-query values, one may differ in the last digit).
    means: Mapping[tuple[str, str], Mapping[str, float | None]] = field(default_factory=dict)
    tables: tuple[TableGroup, ...] = ()

    @classmethod
    def of_outcome(cls, outcome: SessionOutcome, *, created: str = "") -> ReportPage:
        """The page of a session (what the plugin writes with --ragmetrics-html)."""
        update = None
        if outcome.update_counts is not None:
            update = {**outcome.update_counts, "commit": list(outcome.commit_paths)}
        return cls(
            tuple(outcome.evaluations),
            tuple(outcome.metrics),
            dict(outcome.settings),
            outcome.plugin_version,
            created,
            update,
            tuple(outcome.stale),
            tuple(outcome.unchecked),
            tables=dataset_tables(outcome.evaluations, outcome.metrics, outcome.dataset_order),
        )

    def is_reference(self, checked: Checked) -> bool:
        return self.compared is not None and checked.record.key in self.compared.reference_keys


def read_report_page(path: str | Path) -> ReportPage:
    """The page of a JSON report or a baseline file (``ragmetrics report``), every field
    checked: a ReportError (BaselineError for a baseline) names the file and the field."""
    from pytest_ragmetrics.schema import read_document

    return page_of_document(read_document(path, ("report", "baseline")))


def report_page(data: Any, path: str | Path = "the report") -> ReportPage:
    """:func:`read_report_page` of a JSON value already read (``path`` names it in errors)."""
    from pytest_ragmetrics.schema import recognise

    return page_of_document(recognise(data, ("report", "baseline"), path))


def page_of_document(document: Document) -> ReportPage:
    """The page of a checked report or baseline document."""
    from pytest_ragmetrics.baseline.compare import entries_of

    entries = entries_of(document)
    evaluations = tuple(Checked.from_dict(e) for e in entries.values())
    means = {key: entry["metrics"] for key, entry in entries.items()}
    if document.kind == "baseline":
        return ReportPage(evaluations, means=means, tables=dataset_tables(evaluations, ()))
    data = document.data
    settings = data.get("settings") or {}
    summary = data.get("summary") or {}
    metrics = tuple(settings.get("metrics") or ())
    return ReportPage(
        evaluations,
        metrics,
        settings,
        data.get("plugin_version", ""),
        data.get("created", ""),
        summary.get("baseline_update"),
        tuple((test, name) for test, name in summary.get("stale_baseline_entries") or ()),
        tuple((test, why) for test, why in summary.get("unchecked_thresholds") or ()),
        means=means,
        tables=dataset_tables(evaluations, metrics, _pair_order(summary)),
    )


def _pair_order(summary: Mapping[str, Any]) -> list[str]:
    """The (dataset, split) pairs in the order the run configured them, as its per-dataset
    summary wrote them (none when it has none, or not as written)."""
    tables = summary.get("by_dataset")
    first = next(iter(tables.values()), None) if isinstance(tables, dict) else None
    columns = first.get("columns") if isinstance(first, dict) else None
    return [c for c in columns if isinstance(c, str)] if isinstance(columns, list) else []


# The records' fields about their own baseline: replaced by the other report's.
_BASELINE_KEYS = ("baseline_ranking", "baseline_answer", "baseline_claims")


def comparison_page(
    before: Mapping[tuple[str, str], Mapping[str, Any]],
    after: Mapping[tuple[str, str], Mapping[str, Any]],
    verdicts: Mapping[tuple[str, str], BaselineVerdict],
    *,
    header: Mapping[str, Any],
    compared: Compared,
) -> ReportPage:
    """The page of ``ragmetrics compare BEFORE AFTER --format html``: the evaluations of
    ``after`` with ``verdicts`` (against ``before``) as their baseline outcome, and the
    ``before`` evaluations' per-query values, details and records as their baseline's.

    ``before``/``after`` are :func:`~pytest_ragmetrics.baseline.compare.load_evaluations`
    results; ``header`` gives ``plugin_version``, ``created`` and ``settings`` (the after
    report's). Threshold results recorded in the after report are kept; its own baseline
    outcome, κ gate and baseline fields are replaced, since they were about another baseline.
    """
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict
    from pytest_ragmetrics.records import EvaluationRecord

    evaluations = []
    for key in sorted(after):
        entry = dict(after[key])
        thresholds = (entry.get("outcome") or {}).get("thresholds", [])
        record = EvaluationRecord.from_dict(entry)
        record = dataclasses.replace(
            record, report_fields=_against(record.report_fields, before.get(key))
        )
        outcome = EvaluationOutcome(
            tuple(ThresholdResult.from_dict(t) for t in thresholds),
            verdicts.get(key) or BaselineVerdict("new"),
        )
        evaluations.append(Checked(record, outcome))
    settings = header.get("settings") or {}
    return ReportPage(
        tuple(evaluations),
        tuple(settings.get("metrics") or ()),
        settings,
        header.get("plugin_version", ""),
        header.get("created", ""),
        compared=compared,
    )


def _against(fields: Mapping[str, Any], old: Mapping[str, Any] | None) -> dict[str, Any]:
    """A record's report fields with their baseline parts taken from ``old`` (the evaluation
    it is compared with), none of its own."""
    from pytest_ragmetrics.report.query_records import (
        baseline_details,
        baseline_per_query,
        baseline_records,
    )

    out = {k: v for k, v in fields.items() if k not in ("baseline_per_query", "baseline_details")}
    records = {
        qid: {k: v for k, v in record.items() if k not in _BASELINE_KEYS}
        for qid, record in (fields.get("queries") or {}).items()
    }
    if old is not None:
        for key, value in (
            ("baseline_per_query", baseline_per_query(old)),
            ("baseline_details", baseline_details(old)),
        ):
            if value:
                out[key] = value
        records = baseline_records(records, old)
    out.pop("queries", None)
    if records:
        out["queries"] = records
    return out


def systems_page(comparison: SystemsComparison) -> ReportPage:
    """The page of ``ragmetrics compare --qrels Q RUN_A RUN_B ... --format html``: the
    reference first (marked as such), then every run with its verdict against the reference
    as its baseline outcome and the reference's per-query values as its baseline's. TREC runs
    bring their rankings (with the query texts and titles of --dataset) for the drill-down."""
    from pytest_ragmetrics.comparison import KIND_WORDS

    verdicts = {id(v.system): v.verdict for v in comparison.versus}
    reference = comparison.reference
    evaluations = []
    for system in comparison.systems:
        test, name = system.label, KIND_WORDS.get(system.kind, system.kind)
        if system.kind in ("report", "baseline"):
            test, name = f"{system.path}: {system.record.test}", system.record.name
        verdict = verdicts.get(id(system))
        fields = _system_fields(comparison, system.record, system.run, verdict is not None)
        record = dataclasses.replace(system.record, test=test, name=name, report_fields=fields)
        evaluations.append(Checked(record, EvaluationOutcome(baseline=verdict)))
    semantics = reference.record.evaluation.semantics
    judgments = comparison.judgments
    return ReportPage(
        tuple(evaluations),
        tuple(comparison.metrics),
        {
            "metrics": list(comparison.metrics),
            "semantics": None if semantics is None else semantics.as_dict(),
        },
        compared=Compared(
            reference=reference.label,
            runs=tuple(system.label for system in comparison.systems),
            judgments=None if judgments is None else judgments.description,
            tolerance=tuple(comparison.tolerance),
            alpha=comparison.alpha,
            reference_keys=(evaluations[0].record.key,),
        ),
    )


def _system_fields(
    comparison: SystemsComparison, record: EvaluationRecord, run: Any, versus: bool
) -> dict[str, Any]:
    """The per-query fields of one system's evaluation: its rankings (a TREC run, with
    judgments) and, against the reference, the reference's values and rankings."""
    from pytest_ragmetrics.records import REPORT_FIELDS
    from pytest_ragmetrics.report.query_records import add_query_details

    reference = comparison.reference
    reference_entry = reference.record.to_dict() if versus else None
    judgments = comparison.judgments
    if run is not None and judgments is not None:
        entry = add_query_details(
            record.to_dict(),
            baseline_entry=reference_entry,
            run=run,
            baseline_run=reference.run if versus else None,
            dataset=judgments.dataset,
            qrels=judgments.qrels,
        )
        return {key: entry[key] for key in REPORT_FIELDS if key in entry}
    # An evaluation of a report or baseline: its own records, the reference's as baseline.
    return _against(record.report_fields, reference_entry)
