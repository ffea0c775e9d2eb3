"""Evaluation: a per-query x metric matrix with its means and the semantics that produced it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, Literal

import numpy as np

from pytest_ragmetrics.data.model import FloatArray, IntArray, StrArray, as_str_array
from pytest_ragmetrics.errors import MetricError
from pytest_ragmetrics.metrics.semantics import MetricSemantics


@dataclass(frozen=True)
class Supplemented:
    """An evaluation's metrics on its human qrels plus supplementary judge labels (human
    judgments win), and what those labels are: the file, the judge, how many labels were used,
    their fingerprint, the judge's calibrated kappa and the bound, and whether they count for
    pass/fail (``reason`` says why not)."""

    metrics: dict[str, float | None]
    qrels: str | None = None
    judge: dict[str, Any] | None = None
    labels_used: int = 0
    fingerprint: str | None = None
    kappa: float | None = None
    min_kappa: float | None = None
    used: bool = True
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "metrics": dict(self.metrics),
            "qrels": self.qrels,
            "judge": None if self.judge is None else dict(self.judge),
            "labels_used": self.labels_used,
            "fingerprint": self.fingerprint,
            "kappa": self.kappa,
            "min_kappa": self.min_kappa,
            "used": self.used,
            "reason": self.reason,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Supplemented:
        """Rebuild from :meth:`to_dict` (checked by schema.py where read from a file)."""
        return cls(
            {m: None if v is None else float(v) for m, v in (data.get("metrics") or {}).items()},
            data.get("qrels"),
            None if data.get("judge") is None else dict(data["judge"]),
            int(data.get("labels_used") or 0),
            data.get("fingerprint"),
            None if data.get("kappa") is None else float(data["kappa"]),
            None if data.get("min_kappa") is None else float(data["min_kappa"]),
            bool(data.get("used", True)),
            str(data.get("reason") or ""),
        )


@dataclass(eq=False)
class Evaluation:
    """Metric values per query, aligned numpy arrays, plus means.

    ``values[i, j]`` is metric ``metrics[j]`` for query ``query_ids[i]``. NaN means "not
    applicable" (an answer with no claims) and is left out of the mean.

    ``judged_only`` holds, for a retrieval evaluation, the mean of each metric's judged-only
    form (``<metric>_judged``, unjudged documents removed) beside its plain value, and
    ``details`` the unjudged documents in each metric's top k per query (``unjudged_at_<k>``,
    ``unjudged`` for all retrieved): what tells a drop caused by documents nobody judged from a
    real one. ``supplemented`` holds the means on the human qrels plus supplementary judge
    labels (human judgments win), when such labels were given.
    """

    query_ids: StrArray
    metrics: tuple[str, ...]
    values: FloatArray
    layer: Literal["retrieval", "answer"] = "retrieval"
    semantics: MetricSemantics | None = None
    details: dict[str, IntArray] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    judged_only: dict[str, float] = field(default_factory=dict)
    supplemented: Supplemented | None = None

    def __post_init__(self) -> None:
        if self.values.shape != (len(self.query_ids), len(self.metrics)):
            raise MetricError(
                f"evaluation values have shape {self.values.shape}, expected "
                f"({len(self.query_ids)}, {len(self.metrics)})"
            )

    @cached_property
    def mean(self) -> dict[str, float]:
        """metric -> mean over queries (NaN entries excluded; NaN if none remain)."""
        result: dict[str, float] = {}
        for j, name in enumerate(self.metrics):
            column = self.values[:, j]
            finite = column[~np.isnan(column)]
            result[name] = float(finite.mean()) if len(finite) else math.nan
        return result

    @cached_property
    def per_query(self) -> dict[str, dict[str, float]]:
        """query id -> metric -> value."""
        rows = self.values.tolist()
        return {
            qid: dict(zip(self.metrics, row, strict=True))
            for qid, row in zip(self.query_ids.tolist(), rows, strict=True)
        }

    def column(self, metric: str) -> FloatArray:
        """One metric's per-query values, aligned with ``query_ids``."""
        try:
            j = self.metrics.index(metric)
        except ValueError:
            raise MetricError(
                f"metric {metric!r} was not computed in this evaluation; it has "
                f"{', '.join(self.metrics)}"
            ) from None
        return self.values[:, j]

    def __len__(self) -> int:
        return len(self.query_ids)

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v:.4f}" for k, v in self.mean.items())
        return f"Evaluation({self.layer}, {len(self)} queries: {shown})"

    def select(self, metrics: Sequence[str]) -> Evaluation:
        """The same evaluation restricted to some of its metrics."""
        cols = [self.metrics.index(m) for m in metrics if m in self.metrics]
        return Evaluation(
            self.query_ids,
            tuple(self.metrics[c] for c in cols),
            self.values[:, cols],
            self.layer,
            self.semantics,
            self.details,
            list(self.notes),
            {m: v for m, v in self.judged_only.items() if m in metrics},
            self.supplemented,
        )

    def to_dict(self, *, per_query: bool = True, digits: int | None = None) -> dict[str, Any]:
        """A JSON-ready dict (NaN becomes null)."""

        def num(x: float) -> float | None:
            if math.isnan(x):
                return None
            return round(x, digits) if digits is not None else x

        out: dict[str, Any] = {
            "layer": self.layer,
            "metrics": {k: num(v) for k, v in self.mean.items()},
            "num_queries": len(self),
            "semantics": None if self.semantics is None else self.semantics.as_dict(),
        }
        if self.notes:
            out["notes"] = list(self.notes)
        if self.judged_only:
            out["judged_only"] = {k: num(v) for k, v in self.judged_only.items()}
        if self.supplemented is not None:
            out["supplemented"] = self.supplemented.to_dict()
        if per_query:
            out["per_query"] = {
                qid: {m: num(v) for m, v in row.items()} for qid, row in self.per_query.items()
            }
            if self.details:
                out["details"] = {
                    name: dict(zip(self.query_ids.tolist(), arr.tolist(), strict=True))
                    for name, arr in self.details.items()
                }
        return out

    @classmethod
    def from_per_query(
        cls,
        per_query: Mapping[str, Mapping[str, float | None]],
        *,
        layer: Literal["retrieval", "answer"] = "retrieval",
        semantics: MetricSemantics | None = None,
        details: Mapping[str, Mapping[str, int]] | None = None,
        judged_only: Mapping[str, float | None] | None = None,
        supplemented: Mapping[str, Any] | None = None,
    ) -> Evaluation:
        """Rebuild from ``{query_id: {metric: value}}`` (None for not applicable)."""
        query_ids = list(per_query)
        metrics: list[str] = []
        for row in per_query.values():
            for m in row:
                if m not in metrics:
                    metrics.append(m)
        values = np.full((len(query_ids), len(metrics)), np.nan)
        for i, row in enumerate(per_query.values()):
            for j, m in enumerate(metrics):
                v = row.get(m)
                values[i, j] = np.nan if v is None else float(v)
        detail_arrays = {
            name: np.asarray([int(d.get(q, 0)) for q in query_ids], dtype=np.int64)
            for name, d in (details or {}).items()
        }
        return cls(
            as_str_array(query_ids),
            tuple(metrics),
            values,
            layer,
            semantics,
            detail_arrays,
            judged_only={
                m: math.nan if v is None else float(v) for m, v in (judged_only or {}).items()
            },
            supplemented=None if supplemented is None else Supplemented.from_dict(supplemented),
        )
