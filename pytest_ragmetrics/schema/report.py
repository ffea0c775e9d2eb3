"""The checks of what only a JSON report holds: each evaluation's outcome (threshold results,
the baseline verdict, the gate) and the optional per-query fields of the HTML page."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_ragmetrics.schema.evaluation import (
    details_problem,
    evaluation_problem,
    per_query_problem,
)
from pytest_ragmetrics.schema.fields import (
    BOOLEAN,
    COUNT,
    INTEGER,
    LIST,
    NUMBER,
    OBJECT,
    STATUS,
    STRING,
    STRINGS,
    Check,
    each,
    is_int,
    is_number,
    optional,
    pairs_problem,
    problem_of,
    version_problem,
)

REPORT_SCHEMA = "pytest-ragmetrics/report"  # --ragmetrics-json
REPORT_VERSION = 1

_REPORT_SPEC: dict[str, Check] = {
    "created": STRING,
    "plugin_version": STRING,
    "settings": OBJECT,
    "summary": OBJECT,
}


def _string_pairs(what: str) -> Check:
    """A list of ``[test, what]`` pairs of strings."""
    return (
        lambda v: (
            isinstance(v, list)
            and all(
                isinstance(s, list) and len(s) == 2 and all(isinstance(x, str) for x in s)
                for s in v
            )
        ),
        f"a list of [test, {what}] pairs",
    )


_SUMMARY_SPEC: dict[str, Check] = {
    "baseline_update": optional(OBJECT),
    "stale_baseline_entries": _string_pairs("name"),
    "unchecked_thresholds": optional(_string_pairs("failure")),
}
_THRESHOLD_SPEC = {
    "metric": STRING,
    "value": optional(NUMBER),
    "threshold": NUMBER,
    "passed": BOOLEAN,
}
_OUTCOME_SPEC = {"gate": STRING, "update": STRING, "thresholds": LIST}
_VERDICT_SPEC = {
    "status": STATUS,
    "metrics": LIST,
    "reasons": STRINGS,
    "queries_only_in_baseline": STRINGS,
    "queries_only_in_current": STRINGS,
    "metrics_not_compared": STRINGS,
    "identity_change": STRING,
    "alpha_note": STRING,
}
_METRIC_VERDICT_SPEC = {
    "metric": STRING,
    "baseline": optional(NUMBER),
    "current": optional(NUMBER),
    "delta": optional(NUMBER),
    "tolerance": STRING,
    "status": STATUS,
    "ci95": (
        lambda v: isinstance(v, list) and len(v) == 2 and all(x is None or is_number(x) for x in v),
        "two numbers (or nulls)",
    ),
    "p_value": optional(NUMBER),
    "queries_worse": COUNT,
    "queries_better": COUNT,
    "queries_same": COUNT,
    "note": STRING,
    "holes": OBJECT,
    "queries_lost": COUNT,
    "lost_queries": STRINGS,
    "queries_with_baseline_value": COUNT,
}
_MOVED_SPEC = {"query": STRING, "delta": NUMBER, "rank_before": INTEGER, "rank_after": INTEGER}
_HOLES_SPEC = {
    "k": optional(COUNT),
    "unjudged_now": COUNT,
    "shown_now": COUNT,
    "unjudged_before": optional(COUNT),
    "shown_before": optional(COUNT),
    "judged_only_before": optional(NUMBER),
    "judged_only_now": optional(NUMBER),
    "judged_only_dropped": optional(BOOLEAN),
    "labelled_before": optional(NUMBER),
    "labelled_now": optional(NUMBER),
    "labelled_dropped": optional(BOOLEAN),
    "labels_used": BOOLEAN,
    "labels_note": STRING,
    "unexplained": optional(STRINGS),
}


def _outcome_problem(outcome: Any) -> str | None:
    """What is wrong with an evaluation's ``outcome`` (what ``EvaluationOutcome.from_dict``
    reads: threshold results, the baseline verdict, the gate)."""
    if outcome is None:
        return None
    problem = problem_of(outcome, _OUTCOME_SPEC, "outcome.") or pairs_problem(
        outcome.get("not_enforced", {}), STRING, "outcome.not_enforced"
    )
    if problem:
        return problem
    problem = each(
        outcome.get("thresholds", []),
        lambda t, where: problem_of(t, _THRESHOLD_SPEC, where, required=list(_THRESHOLD_SPEC)),
        "outcome.thresholds",
    )
    if problem or outcome.get("baseline") is None:
        return problem
    return _verdict_problem(outcome["baseline"], "outcome.baseline.")


def _verdict_problem(verdict: Any, where: str) -> str | None:
    problem = problem_of(verdict, _VERDICT_SPEC, where, required=["status"])
    if problem:
        return problem
    return each(verdict.get("metrics", []), _metric_verdict_problem, f"{where}metrics")


def _metric_verdict_problem(item: Any, where: str) -> str | None:
    required = ["metric", "baseline", "current", "delta", "tolerance", "status"]
    if isinstance(item, Mapping) and "ci95" in item:
        required += ["p_value", "queries_worse", "queries_better", "queries_same"]
    problem = problem_of(item, _METRIC_VERDICT_SPEC, where, required=required)
    if problem:
        return problem
    if "holes" in item:
        problem = problem_of(
            item["holes"], _HOLES_SPEC, f"{where}holes.", required=["unjudged_now", "shown_now"]
        )
        if problem:
            return problem
    return each(
        item.get("most_regressed", []),
        lambda m, at: problem_of(m, _MOVED_SPEC, at, required=list(_MOVED_SPEC)),
        f"{where}most_regressed",
    )


def _report_fields_problem(entry: Mapping[str, Any]) -> str | None:
    """What is wrong with the report's optional per-query fields (the HTML page's)."""
    if "baseline_per_query" in entry:
        problem = per_query_problem(
            entry["baseline_per_query"], "baseline_per_query", "baseline per-query value"
        )
        if problem:
            return problem
    if "baseline_details" in entry:
        problem = details_problem(entry["baseline_details"], "baseline_details")
        if problem:
            return problem
    for key in ("cost", "judge_noise"):
        if key in entry and not isinstance(entry[key], Mapping):
            return f"{key!r} must be an object"
    queries = entry.get("queries", {})
    if not isinstance(queries, Mapping):
        return "'queries' must map query ids to records"
    for qid, record in queries.items():
        problem = _query_record_problem(record, f"queries[{qid!r}].")
        if problem:
            return problem
    return None


_RECORD_SPEC = {
    "text": STRING,
    "answer": STRING,
    "baseline_answer": STRING,
}
RANKING_ROW: Check = (
    lambda row: (
        isinstance(row, list)
        and len(row) == 3
        and isinstance(row[0], str)
        and (row[1] is None or is_number(row[1]))
        and (row[2] is None or is_int(row[2]))
    ),
    "[document id, score or null, grade or null]",
)
_CLAIM_SPEC = {
    "text": STRING,
    "supported": optional(BOOLEAN),
    "evidence": (
        lambda v: isinstance(v, list) and all(isinstance(e, str) or is_int(e) for e in v),
        "a list of context ids",
    ),
    "score": optional(NUMBER),
}


def _query_record_problem(record: Any, where: str) -> str | None:
    problem = problem_of(record, _RECORD_SPEC, where)
    if problem:
        return problem
    for key in ("ranking", "baseline_ranking"):
        if key in record:
            problem = each(
                record[key],
                lambda row, at: (
                    None
                    if RANKING_ROW[0](row)
                    else (f"'{at.rstrip('.')}' must be {RANKING_ROW[1]}")
                ),
                f"{where}{key}",
            )
            if problem:
                return problem
    for key, check in (("relevant", INTEGER), ("titles", STRING)):
        if key in record:
            problem = pairs_problem(record[key], check, f"{where}{key}")
            if problem:
                return problem
    for key in ("claims", "baseline_claims"):
        if key in record:
            problem = each(
                record[key], lambda c, at: problem_of(c, _CLAIM_SPEC, at), f"{where}{key}"
            )
            if problem:
                return problem
    return None


def report_problem(data: Any) -> str | None:
    """What is wrong with a JSON report (None when it is sound): its schema and version, its
    header, and per evaluation every field a reader uses."""
    if not isinstance(data, dict):
        return "not a JSON object (a --ragmetrics-json document)"
    if "schema" in data and data["schema"] != REPORT_SCHEMA:
        return f"schema {data['schema']!r} is not {REPORT_SCHEMA!r}"
    problem = (
        version_problem(data, "version", REPORT_VERSION, "report version")
        or problem_of(data, _REPORT_SPEC, "")
        or problem_of(data.get("settings", {}), {"metrics": STRINGS}, "settings.")
        or problem_of(data.get("summary", {}), _SUMMARY_SPEC, "summary.")
    )
    if problem:
        return problem
    evaluations = data.get("evaluations")
    if not isinstance(evaluations, list):
        return "'evaluations' must be a list of objects"
    seen: set[tuple[str, str]] = set()
    for i, entry in enumerate(evaluations, start=1):
        if not isinstance(entry, dict):
            return f"evaluation #{i} must be an object"
        label = f"evaluation #{i} ({entry.get('test')!r} [{entry.get('name')}])"
        if not {"test", "name", "metrics"} <= set(entry):
            return f"evaluation #{i} lacks test, name or metrics"
        if not isinstance(entry["test"], str) or not isinstance(entry["name"], str):
            return f"{label}: 'test' and 'name' must be strings"
        problem = (
            evaluation_problem(entry)
            or _outcome_problem(entry.get("outcome"))
            or _report_fields_problem(entry)
        )
        if problem:
            return f"{label}: {problem}"
        if (entry["test"], entry["name"]) in seen:
            return f"{label} appears twice"
        seen.add((entry["test"], entry["name"]))
    return None
