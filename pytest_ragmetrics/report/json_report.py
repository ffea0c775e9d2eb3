"""The JSON report: versioned, one document per session, evaluations sorted by test and name.

Schema (version 1)::

    {
      "schema": "pytest-ragmetrics/report", "version": 1, "plugin_version": "0.1.0",
      "created": "2026-01-01T00:00:00+00:00",          # the only field that differs between runs
      "settings": {"k", "metrics", "semantics", "tolerance", "alpha", "strict",
                   "update_baseline", "baseline"},
      "evaluations": [{
          "test", "name", "layer",                       # layer: "retrieval" | "answer"
          "identity": {"retriever": {...}} | {"judge": {...}},
          "dataset": {"name", "split", "documents", "queries",
                      "fingerprints": {"corpus", "queries", "qrels"}} | null,
          "k", "semantics": {"relevance_level", "gain", "query_set"} | null,
          "metrics": {metric: mean | null}, "num_queries",
          "per_query": {query_id: {metric: value | null}},
          "details": {"first_relevant_rank" | "claims" | ...: {query_id: int}},
          "notes": [str],
          "thresholds": {metric: bound},
          "outcome": {"thresholds": [{"metric", "value", "threshold", "passed"}],
                      "baseline": {"status", "metrics": [{"metric", "baseline", "current",
                                   "delta", "tolerance", "status", "ci95", "p_value", ...}]},
                      "gate": str,
                      "update": "added" | "updated" | "unchanged" | "not updated"},
          # Optional, for the HTML report (pytest_ragmetrics.report.html; filled by
          # pytest_ragmetrics.report.query_records.add_query_details whenever a JSON or HTML
          # report is written); the baseline never stores them:
          "baseline_per_query": {query_id: {metric: value | null}},
          "baseline_details": {"first_relevant_rank" | ...: {query_id: int}},
          "queries": {query_id: {"text",
                                 "ranking" | "baseline_ranking": [[doc_id, score, grade | null]],
                                 "relevant": {doc_id: grade}, "titles": {doc_id: title},
                                 "answer" | "baseline_answer": str,
                                 "claims" | "baseline_claims": [{"text", "supported",
                                                                 "evidence", "score"}]}}
      }],
      "summary": {"evaluations": N, "by_layer": {...}, "by_status": {...},
                  "baseline_update": {"updated", "added", "removed", "unchanged",
                                      "not_updated" (only when some tests failed)} | null,
                  "stale_baseline_entries": [[test, name]],      # lost: their tests are gone
                  "unrecorded_baseline_entries": [[test, name]],  # lost: ran, not recorded
                  "unchecked_thresholds": [[test, failure]]}  # no evaluation to check them
    }
"""

from __future__ import annotations

import datetime as _dt
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.schema import REPORT_SCHEMA as REPORT_SCHEMA
from pytest_ragmetrics.schema import REPORT_VERSION as REPORT_VERSION

if TYPE_CHECKING:
    from pytest_ragmetrics.report.outcome import SessionOutcome


def build_report(outcome: SessionOutcome) -> dict[str, Any]:
    """The report document (see the module docstring for the schema)."""
    by_layer: dict[str, int] = {}
    by_status: dict[str, int] = {}
    for checked in outcome.evaluations:
        by_layer[checked.layer] = by_layer.get(checked.layer, 0) + 1
        status = checked.outcome.status
        by_status[status] = by_status.get(status, 0) + 1
    counts = outcome.update_counts
    summary: dict[str, Any] = {}
    from pytest_ragmetrics.report.datasets import dataset_summaries

    by_dataset = dataset_summaries(outcome.evaluations, outcome.metrics, outcome.dataset_order)
    if by_dataset:  # several (dataset, split) pairs: one table per metric
        summary["by_dataset"] = {s.metric: s.to_dict() for s in by_dataset}
    return {
        "schema": REPORT_SCHEMA,
        "version": REPORT_VERSION,
        "plugin_version": outcome.plugin_version,
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
        "settings": dict(outcome.settings),
        "evaluations": [checked.to_dict() for checked in outcome.evaluations],
        "summary": {
            "evaluations": len(outcome.evaluations),
            "by_layer": by_layer,
            "by_status": by_status,
            "baseline_update": (
                {**counts, "commit": list(outcome.commit_paths)} if counts is not None else None
            ),
            "stale_baseline_entries": [list(s) for s in outcome.stale],
            "unrecorded_baseline_entries": [list(s) for s in outcome.unrecorded],
            "unchecked_thresholds": [list(s) for s in outcome.unchecked],
            **summary,
        },
    }
