"""Checks of the evaluation documents we read back (baseline entries, JSON report evaluations).

A hand edit, a file written by another version or a fuzzer can put any JSON value anywhere.
Everything a later step uses is checked here, once, so that it fails with the file, the entry
and the field named instead of a TypeError or OverflowError deep in the comparison. Keys this
version does not know are ignored (a newer version may add some); known keys must hold what
this version expects.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

# JSON integers are unbounded; the values we keep are counts, ranks and cutoffs.
MAX_INT = 2**63 - 1


def is_int(value: Any, *, low: int = -MAX_INT - 1, high: int = MAX_INT) -> bool:
    """An int (not a bool) within [low, high]."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool) that converts to a finite float."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_INT - 1 <= value <= MAX_INT
    return isinstance(value, float) and math.isfinite(value)


def _number_map(value: Any, field: str, *, nullable: bool) -> str | None:
    wanted = f"{field!r} must map metric names to numbers"
    if not isinstance(value, Mapping):
        return wanted
    for key, item in value.items():
        if item is None and nullable:
            continue
        if not is_number(item):
            return f"{wanted} ({field}[{key!r}] is {_short(item)})"
    return None


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def evaluation_problem(entry: Any) -> str | None:
    """What is wrong with an evaluation document (None when every field we use is sound)."""
    if not isinstance(entry, Mapping):
        return "must be an object"
    if entry.get("layer") not in ("retrieval", "answer"):
        return "'layer' must be 'retrieval' or 'answer'"
    problem = _number_map(entry.get("metrics"), "metrics", nullable=True)
    if problem:
        return problem
    per_query = entry.get("per_query", {})
    if not isinstance(per_query, Mapping):
        return "'per_query' must map query ids to {metric: value}"
    for qid, row in per_query.items():
        if not isinstance(row, Mapping):
            return f"per_query[{qid!r}] must be an object {{metric: value}}"
        for metric, value in row.items():
            if value is not None and not is_number(value):
                return f"per-query value of {metric!r} for query {qid!r} is not a number"
    details = entry.get("details")
    if details is not None:
        if not isinstance(details, Mapping):
            return "'details' must map names to {query id: integer}"
        for name, values in details.items():
            if not isinstance(values, Mapping):
                return f"details[{name!r}] must be an object {{query id: integer}}"
            for qid, value in values.items():
                if not is_int(value):
                    return f"details value {name!r} for query {qid!r} is not an integer"
    if "judged_only" in entry:
        problem = _number_map(entry["judged_only"], "judged_only", nullable=True)
        if problem:
            return problem
    problem = _supplemented_problem(entry.get("supplemented"))
    if problem:
        return problem
    if "num_queries" in entry and not is_int(entry["num_queries"], low=0):
        return "'num_queries' must be a non-negative integer"
    k = entry.get("k")
    if k is not None and not is_int(k, low=0):
        return "'k' must be a non-negative integer or null"
    for key in ("identity", "semantics"):
        if entry.get(key) is not None and not isinstance(entry[key], Mapping):
            return f"{key!r} must be an object"
    problem = _semantics_problem(entry.get("semantics") or {})
    if problem:
        return problem
    problem = _dataset_problem(entry.get("dataset"))
    if problem:
        return problem
    notes = entry.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        return "'notes' must be a list of strings"
    if entry.get("outcome") is not None and not isinstance(entry["outcome"], Mapping):
        return "'outcome' must be an object"
    thresholds = entry.get("thresholds")
    if thresholds is not None:
        problem = _number_map(thresholds, "thresholds", nullable=False)
        if problem:
            return problem
    for key in ("test", "name", "plugin_version"):
        if key in entry and not isinstance(entry[key], str):
            return f"{key!r} must be a string"
    return None


def _supplemented_problem(supplemented: Any) -> str | None:
    if supplemented is None:
        return None
    if not isinstance(supplemented, Mapping):
        return "'supplemented' must be an object"
    problem = _number_map(supplemented.get("metrics", {}), "supplemented.metrics", nullable=True)
    if problem:
        return problem
    if not is_int(supplemented.get("labels_used", 0), low=0):
        return "'supplemented.labels_used' must be a non-negative integer"
    for key in ("kappa", "min_kappa"):
        value = supplemented.get(key)
        if value is not None and not is_number(value):
            return f"'supplemented.{key}' must be a number or null"
    if not isinstance(supplemented.get("used", True), bool):
        return "'supplemented.used' must be true or false"
    for key in ("qrels", "fingerprint", "reason"):
        value = supplemented.get(key)
        if value is not None and not isinstance(value, str):
            return f"'supplemented.{key}' must be a string"
    judge = supplemented.get("judge")
    if judge is not None and not isinstance(judge, Mapping):
        return "'supplemented.judge' must be an object"
    return None


def _dataset_problem(dataset: Any) -> str | None:
    if dataset is None:
        return None
    if not isinstance(dataset, Mapping):
        return "'dataset' must be an object"
    fingerprints = dataset.get("fingerprints")
    if fingerprints is not None and not (
        isinstance(fingerprints, Mapping) and all(isinstance(v, str) for v in fingerprints.values())
    ):
        return "'dataset.fingerprints' must map dataset parts to fingerprint strings"
    for key in ("documents", "queries"):
        value = dataset.get(key)
        if value is not None and not is_int(value, low=0):
            return f"'dataset.{key}' must be a non-negative integer"
    for key in ("name", "split", "source"):
        value = dataset.get(key)
        if value is not None and not isinstance(value, str):
            return f"'dataset.{key}' must be a string"
    return None


def _semantics_problem(semantics: Mapping[str, Any]) -> str | None:
    import dataclasses

    from pytest_ragmetrics.metrics.semantics import GAINS, QUERY_SETS, MetricSemantics

    known = {f.name for f in dataclasses.fields(MetricSemantics)}
    unknown = sorted(set(semantics) - known)
    if unknown:
        # Unlike other extra keys, a scoring rule we do not know changes what numbers mean.
        return (
            f"'semantics.{unknown[0]}' is a scoring rule this version of pytest-ragmetrics "
            "does not know (written by a newer version?); upgrade pytest-ragmetrics"
        )
    if "relevance_level" in semantics and not is_int(
        semantics["relevance_level"], low=-(2**31), high=2**31 - 1
    ):
        return "'semantics.relevance_level' must be an integer"
    if "gain" in semantics and semantics["gain"] not in GAINS:
        return f"'semantics.gain' must be one of {', '.join(GAINS)}"
    if "query_set" in semantics and semantics["query_set"] not in QUERY_SETS:
        return f"'semantics.query_set' must be one of {', '.join(QUERY_SETS)}"
    if not isinstance(semantics.get("ignore_identical_ids", False), bool):
        return "'semantics.ignore_identical_ids' must be true or false"
    return None
