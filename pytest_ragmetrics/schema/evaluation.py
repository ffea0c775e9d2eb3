"""The check of one evaluation document: a baseline entry, a JSON report's evaluation, an
evaluate output."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from pytest_ragmetrics.schema.fields import (
    COUNT,
    OBJECT,
    STRING,
    STRINGS,
    Check,
    is_int,
    is_number,
    number_map,
    optional,
    problem_of,
)
from pytest_ragmetrics.vocabulary import LAYERS

_EVALUATION_SPEC: dict[str, Check] = {
    "num_queries": COUNT,
    "k": optional(COUNT),
    "identity": optional(OBJECT),
    "semantics": optional(OBJECT),
    "notes": STRINGS,
    "outcome": optional(OBJECT),
    "test": STRING,
    "name": STRING,
    "plugin_version": STRING,
}


def evaluation_problem(entry: Any) -> str | None:
    """What is wrong with an evaluation document (None when every field we use is sound)."""
    if not isinstance(entry, Mapping):
        return "must be an object"
    if entry.get("layer") not in LAYERS:
        return "'layer' must be 'retrieval' or 'answer'"
    checks: tuple[Callable[[], str | None], ...] = (
        lambda: number_map(entry.get("metrics"), "metrics", nullable=True),
        lambda: per_query_problem(entry.get("per_query", {}), "per_query", "per-query value"),
        lambda: details_problem(_or_empty(entry.get("details")), "details"),
        lambda: number_map(entry.get("judged_only", {}), "judged_only", nullable=True),
        lambda: _supplemented_problem(entry.get("supplemented")),
        lambda: problem_of(entry, _EVALUATION_SPEC, ""),
        lambda: _semantics_problem(entry.get("semantics") or {}),
        lambda: _dataset_problem(entry.get("dataset")),
        lambda: number_map(_or_empty(entry.get("thresholds")), "thresholds", nullable=False),
        lambda: _spelling_problem(entry),
        lambda: range_problem(entry),
        lambda: means_problem(entry.get("metrics"), entry.get("per_query", {})),
        lambda: count_problem(entry.get("num_queries"), entry.get("per_query")),
    )
    for check in checks:
        problem = check()
        if problem:
            return problem
    return None


def _spelling_problem(entry: Mapping[str, Any]) -> str | None:
    """A metric held under another spelling of its name (``ndcg_cut_10``, ``NDCG@10``): read
    as it is, the metric would be lost and its own name missing from the file."""
    from pytest_ragmetrics.errors import MetricError
    from pytest_ragmetrics.metrics.names import parse_metric

    supplemented = entry.get("supplemented")
    fields = {
        "metrics": entry.get("metrics"),
        "judged_only": entry.get("judged_only"),
        "thresholds": entry.get("thresholds"),
        "supplemented.metrics": supplemented.get("metrics") if supplemented else None,
    }
    for field, values in fields.items():
        for name in values or {}:
            try:
                canonical = parse_metric(name).name
            except MetricError:
                continue  # a metric registered where the file was written, not here
            if canonical != name:
                return (
                    f"'{field}.{name}' is another spelling of {canonical!r}: a metric is "
                    f"held under its own name; rename the key to {canonical!r}"
                )
    return None


# Stored values are rounded to six decimals; a value of a [0, 1] metric may lie this far out.
RANGE_SLACK = 1e-6
# The largest magnitude of any metric's value, registered metrics included: rounding to six
# decimals multiplies by 1e6, and means, Δs and bootstrap intervals add up millions of values,
# so values near the largest float (1.8e308) overflow to inf (and numpy's warnings, one per
# resample, stall a run). Far above anything a metric means (a registered one may be large).
MAX_MAGNITUDE = 1e280


def range_problem(entry: Mapping[str, Any]) -> str | None:
    """A value of a built-in metric (each lies in [0, 1]) outside [0, 1]: no evaluation wrote
    it, and a baseline mean of -1 could never be regressed from, nor one of 1e300 reached."""
    from pytest_ragmetrics.errors import MetricError
    from pytest_ragmetrics.metrics.names import in_unit_interval, parse_metric

    supplemented = entry.get("supplemented") or {}
    values: list[tuple[str, str, Any]] = [
        (f"metrics.{m}", m, v) for m, v in (entry.get("metrics") or {}).items()
    ]
    values += [(f"judged_only.{m}", m, v) for m, v in (entry.get("judged_only") or {}).items()]
    values += [
        (f"supplemented.metrics.{m}", m, v) for m, v in (supplemented.get("metrics") or {}).items()
    ]
    for key in ("per_query", "baseline_per_query"):  # the latter: a report's, for its page
        rows = entry.get(key)
        values += [
            (f"{key}.{q}.{m}", m, v)
            for q, row in (rows.items() if isinstance(rows, Mapping) else ())
            if isinstance(row, Mapping)
            for m, v in row.items()
        ]
    bounded: dict[str, bool] = {}
    for field, metric, value in values:
        if not is_number(value) or -RANGE_SLACK <= value <= 1 + RANGE_SLACK:
            continue  # null and NaN are checked (or allowed) elsewhere
        if metric not in bounded:
            try:
                bounded[metric] = in_unit_interval(parse_metric(metric))
            except MetricError:
                bounded[metric] = False  # registered where the file was written, not here
        if bounded[metric]:
            return (
                f"'{field}' is {value!r}, outside [0, 1] where every value of {metric} lies: "
                "no evaluation wrote it (an edit?)"
            )
        if abs(value) > MAX_MAGNITUDE:
            return (
                f"'{field}' is {value!r}, beyond ±{MAX_MAGNITUDE:g}, more than any metric's "
                "value can be compared with (its mean, Δ and confidence interval would "
                "overflow): no evaluation wrote it (an edit?)"
            )
    return None


def _or_empty(value: Any) -> Any:
    return {} if value is None else value


def _supplemented_problem(supplemented: Any) -> str | None:
    if supplemented is None:
        return None
    if not isinstance(supplemented, Mapping):
        return "'supplemented' must be an object"
    problem = number_map(supplemented.get("metrics", {}), "supplemented.metrics", nullable=True)
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


def per_query_problem(per_query: Any, field: str, words: str) -> str | None:
    """``field`` must map query ids to ``{metric: number or null}`` (``words``: what a value
    is called in the message)."""
    return _nested_problem(
        per_query,
        field,
        ("query ids", "{metric: value}"),
        lambda v: v is None or is_number(v),
        lambda qid, metric: f"{words} of {metric!r} for query {qid!r} is not a number",
    )


# A stored mean and the mean of its stored per-query values (each rounded to six decimals) may
# differ by rounding, never by more than this.
MEAN_ROUNDING = 2e-6


def means_problem(metrics: Any, per_query: Any) -> str | None:
    """A mean that is not the mean of its per-query values (null ones left out, as the
    engine leaves them out). The plugin compares means and the statistics pair per-query
    values, so a file holding both (a merge that took one side's means and the other's
    per-query values, a hand edit) would be judged two ways at once."""
    if not isinstance(metrics, Mapping) or not isinstance(per_query, Mapping):
        return None  # their shapes are checked (and named) before
    for metric, mean in metrics.items():
        if not is_number(mean) or mean != mean:
            continue
        values = [
            row[metric]
            for row in per_query.values()
            if is_number(row.get(metric)) and row[metric] == row[metric]
        ]
        if values and abs(sum(values) / len(values) - mean) > MEAN_ROUNDING:
            return (
                f"'metrics.{metric}' is {mean!r} but its {len(values)} per-query values "
                f"average {sum(values) / len(values):.6f}: the file mixes two versions (a "
                "merge, an edit)"
            )
    per_query_metrics = {name for row in per_query.values() for name in row}
    unmatched = sorted(per_query_metrics ^ set(metrics)) if per_query_metrics else []
    if unmatched:
        name = unmatched[0]
        what = (
            "per-query values but no mean"
            if name in per_query_metrics
            else "a mean but no per-query value"
        )
        return f"{name!r} has {what}: the file mixes two versions (a merge, an edit)"
    return None


def count_problem(num_queries: Any, per_query: Any) -> str | None:
    """Per-query values held for other queries than ``num_queries`` counts: a comparison
    would pair fewer queries than the evaluation had, and its means would be another
    evaluation's (a row cut out of a file, a merge)."""
    if not isinstance(per_query, Mapping) or not per_query or not isinstance(num_queries, int):
        return None
    if len(per_query) == num_queries:
        return None
    return (
        f"'num_queries' is {num_queries} but 'per_query' holds {len(per_query)} queries: the "
        "file mixes two versions (a merge, an edit)"
    )


def details_problem(details: Any, field: str) -> str | None:
    """``field`` must map detail names to ``{query id: integer}``."""
    return _nested_problem(
        details,
        field,
        ("names", "{query id: integer}"),
        is_int,
        lambda name, qid: f"{field} value {name!r} for query {qid!r} is not an integer",
    )


def _nested_problem(
    data: Any,
    field: str,
    shape: tuple[str, str],
    test: Callable[[Any], bool],
    bad: Callable[[str, str], str],
) -> str | None:
    outer, inner = shape
    if not isinstance(data, Mapping):
        return f"{field!r} must map {outer} to {inner}"
    for key, row in data.items():
        if not isinstance(row, Mapping):
            return f"{field}[{key!r}] must be an object {inner}"
        for name, item in row.items():
            if not test(item):
                return bad(key, name)
    return None
