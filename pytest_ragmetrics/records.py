"""The evaluation record: one typed object from ``rag_eval`` to the controller, the baseline,
the comparison and every report.

A record is what one test measured under one name: the per-query metric values (an
:class:`~pytest_ragmetrics.metrics.evaluation.Evaluation`) with everything needed to compare
them later — the retriever or judge identity, the dataset it ran on, k, the metric semantics
and the test's thresholds. It is serialised only at the edges (the xdist hand-off, the baseline
file, the JSON report), always through :meth:`EvaluationRecord.to_dict` /
:meth:`EvaluationRecord.from_dict`.
"""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.deltas import DIGITS as DIGITS
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.metrics.semantics import MetricSemantics
from pytest_ragmetrics.vocabulary import Layer

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Dataset

# Optional, never in the baseline: the HTML report's per-query fields, and for answer-layer
# evaluations what they cost (calls, cache hits, tokens) and the judge's measured noise.
REPORT_FIELDS = ("queries", "baseline_per_query", "baseline_details", "cost", "judge_noise")
# DIGITS: the precision stored values are rounded to (one rule with every Δ: deltas.py).


def round_values(value: Any) -> Any:
    """``value`` with every float rounded to :data:`DIGITS` digits and NaN made None."""
    if isinstance(value, float):
        return None if math.isnan(value) else round(value, DIGITS) + 0.0  # never -0.0
    if isinstance(value, dict):
        return {k: round_values(v) for k, v in value.items()}
    if isinstance(value, list):
        return [round_values(v) for v in value]
    return value


def dataset_identity(dataset: Dataset) -> dict[str, Any]:
    """What an evaluation needs to know about the dataset it ran on."""
    return {
        "name": dataset.name,
        "split": dataset.split,
        "documents": len(dataset.corpus),
        "queries": len(dataset.queries),
        "fingerprints": dataset.fingerprints,
    }


def label(test: str, name: str) -> str:
    """How an evaluation is named in tables and messages: ``test_file.py::test [name]``."""
    return f"{test} [{name}]"


@dataclass(frozen=True)
class EvaluationRecord:
    """One evaluation recorded by one test, with everything needed to compare it later.

    ``identity`` is ``{"retriever": {...}}`` for a retrieval evaluation, ``{"judge": {...}}``
    (or ``{"judges": [...]}`` when answers came from several) for an answer-layer one; ``k``
    is how many documents per query the retriever was asked for.
    """

    test: str
    name: str
    evaluation: Evaluation
    identity: Mapping[str, Any] = field(default_factory=dict)
    dataset: Mapping[str, Any] | None = None
    k: int | None = None
    thresholds: Mapping[str, float] = field(default_factory=dict)
    # Optional per-query fields only the reports use (the HTML page's rankings, answers and
    # baseline values, see report/query_records.py); never stored in the baseline.
    report_fields: Mapping[str, Any] = field(default_factory=dict)

    @property
    def layer(self) -> Layer:
        return self.evaluation.layer

    @property
    def key(self) -> tuple[str, str]:
        return (self.test, self.name)

    @property
    def label(self) -> str:
        return label(self.test, self.name)

    def with_thresholds(self, thresholds: Mapping[str, float]) -> EvaluationRecord:
        return dataclasses.replace(self, thresholds=dict(thresholds))

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: the xdist hand-off, the JSON report (which adds ``outcome``) and,
        rounded, the baseline entry."""
        data = self.evaluation.to_dict(per_query=True)
        return {
            "test": self.test,
            "name": self.name,
            "layer": self.layer,
            "identity": dict(self.identity),
            "dataset": None if self.dataset is None else dict(self.dataset),
            "k": self.k,
            "semantics": data["semantics"],
            "metrics": data["metrics"],
            "num_queries": data["num_queries"],
            "per_query": data.get("per_query", {}),
            "details": data.get("details", {}),
            "notes": data.get("notes", []),
            "thresholds": dict(self.thresholds),
            # Only when computed: answer evaluations and older baselines have none.
            **{key: data[key] for key in ("judged_only", "supplemented") if key in data},
            **self.report_fields,
        }

    def baseline_entry(self, plugin_version: str) -> dict[str, Any]:
        """The baseline entry (no test, name or thresholds: those are the key and per run)."""
        data = self.to_dict()
        for key in ("test", "name", "thresholds", "notes", *self.report_fields):
            del data[key]
        data["plugin_version"] = plugin_version
        return round_values(data)  # type: ignore[no-any-return]

    def compared_form(self) -> dict[str, Any]:
        """:meth:`to_dict` at the baseline's precision, so an unchanged run has Δ exactly 0."""
        return round_values(self.to_dict())  # type: ignore[no-any-return]

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> EvaluationRecord:
        """Rebuild from :meth:`to_dict` (or a baseline entry with ``test`` and ``name``)."""
        semantics = data.get("semantics")
        evaluation = Evaluation.from_per_query(
            data.get("per_query", {}),
            layer=data.get("layer", "retrieval"),
            semantics=MetricSemantics(**semantics) if semantics else None,
            details=data.get("details") or None,
            judged_only=data.get("judged_only") or None,
            supplemented=data.get("supplemented"),
        )
        # Keep the metric order of the recording even when some queries lack a metric.
        metrics = tuple(data.get("metrics", {}).keys()) or evaluation.metrics
        if metrics != evaluation.metrics and set(metrics) == set(evaluation.metrics):
            evaluation = evaluation.select(list(metrics))
        evaluation.notes.extend(data.get("notes", []))
        return cls(
            test=data["test"],
            name=data["name"],
            evaluation=evaluation,
            identity=dict(data.get("identity") or {}),
            dataset=data.get("dataset"),
            k=data.get("k"),
            thresholds=dict(data.get("thresholds") or {}),
            report_fields={k: data[k] for k in REPORT_FIELDS if k in data},
        )


def stable_json(value: Any) -> str:
    """Canonical JSON of an identity, to tell identities apart."""
    return json.dumps(value, sort_keys=True, default=str)
