"""What a test records: evaluations with their configuration identity, in a transferable form."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from pytest_ragmetrics.data.judged import JudgedRankings
from pytest_ragmetrics.data.model import Dataset, Qrels, Run
from pytest_ragmetrics.errors import ConfigError, MetricError
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.metrics.names import parse_metric, parse_metrics
from pytest_ragmetrics.metrics.retrieval import evaluate
from pytest_ragmetrics.metrics.semantics import MetricSemantics

Layer = Literal["retrieval", "answer"]


def dataset_identity(dataset: Dataset) -> dict[str, Any]:
    """What an evaluation needs to know about the dataset it ran on."""
    return {
        "name": dataset.name,
        "split": dataset.split,
        "documents": len(dataset.corpus),
        "queries": len(dataset.queries),
        "fingerprints": dataset.fingerprints,
    }


@dataclass
class RecordedEvaluation:
    """One evaluation recorded by one test, with everything needed to compare it later."""

    test: str
    name: str
    evaluation: Evaluation
    identity: dict[str, Any] = field(default_factory=dict)
    dataset: dict[str, Any] | None = None
    k: int | None = None
    thresholds: dict[str, float] = field(default_factory=dict)
    outcome: dict[str, Any] = field(default_factory=dict)

    @property
    def layer(self) -> Layer:
        return self.evaluation.layer

    @property
    def key(self) -> tuple[str, str]:
        return (self.test, self.name)

    @property
    def label(self) -> str:
        return f"{self.test} [{self.name}]"

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (travels on xdist reports; the JSON report and baseline use it)."""
        data = self.evaluation.to_dict(per_query=True)
        return {
            "test": self.test,
            "name": self.name,
            "layer": self.layer,
            "identity": self.identity,
            "dataset": self.dataset,
            "k": self.k,
            "semantics": data.pop("semantics"),
            "metrics": data.pop("metrics"),
            "num_queries": data.pop("num_queries"),
            "per_query": data.pop("per_query", {}),
            "details": data.pop("details", {}),
            "notes": data.pop("notes", []),
            "thresholds": dict(self.thresholds),
            "outcome": dict(self.outcome),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RecordedEvaluation:
        semantics = data.get("semantics")
        evaluation = Evaluation.from_per_query(
            data.get("per_query", {}),
            layer=data.get("layer", "retrieval"),
            semantics=MetricSemantics(**semantics) if semantics else None,
            details=data.get("details") or None,
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
            outcome=dict(data.get("outcome") or {}),
        )


def parse_thresholds(
    kwargs: Mapping[str, Any], args: Iterable[Any] = (), *, where: str = "rag_threshold"
) -> dict[str, float]:
    """Validate ``rag_threshold(metric=value, ...)``; canonical metric name -> threshold."""
    if list(args):
        raise ConfigError(
            f"{where}: give thresholds as keywords, e.g. rag_threshold(recall_at_5=0.7)"
        )
    if not kwargs:
        raise ConfigError(f"{where}: no thresholds given, e.g. rag_threshold(recall_at_5=0.7)")
    out: dict[str, float] = {}
    given_as: dict[str, str] = {}
    for name, value in kwargs.items():
        try:
            spec = parse_metric(name)
        except MetricError as exc:
            raise ConfigError(f"{where}: {exc}") from None
        if spec.name in given_as:
            raise ConfigError(
                f"{where}: {given_as[spec.name]} and {name} are the same metric ({spec.name}); "
                "give its threshold once"
            )
        given_as[spec.name] = name
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{where}: {name}={value!r} is not a number in [0, 1]")
        if not (0.0 <= float(value) <= 1.0):
            raise ConfigError(f"{where}: {name}={value!r} is outside [0, 1]")
        out[spec.name] = float(value)
    return out


class RagEval:
    """The ``rag_eval`` fixture: evaluates runs and answers and records them for this test."""

    def __init__(
        self,
        test: str,
        *,
        metrics: Iterable[str],
        semantics: MetricSemantics,
        k: int,
        thresholds: Mapping[str, float] | Callable[[], Mapping[str, float]],
        dataset: Callable[[], Dataset],
        on_record: Callable[[RecordedEvaluation], None] | None = None,
    ) -> None:
        self.test = test
        self._metrics = tuple(metrics)
        self._semantics = semantics
        self._k = k
        # Read when an evaluation is recorded: a marker added during the test still counts.
        self._thresholds_of = thresholds if callable(thresholds) else lambda: thresholds
        self._dataset = dataset
        self._on_record = on_record
        self.recorded: list[RecordedEvaluation] = []

    @property
    def _thresholds(self) -> dict[str, float]:
        return dict(self._thresholds_of())

    def _metrics_for(
        self, layer: Layer, extra: Iterable[str] | str | None, default: Iterable[str] = ()
    ) -> list[str]:
        """Configured metrics of ``layer`` (or ``default`` if none), thresholds, ``extra``."""
        names = [m for m in self._metrics if parse_metric(m).layer == layer] or list(default)
        names += [m for m in self._thresholds if parse_metric(m).layer == layer]
        if extra is not None:
            names += [spec.name for spec in parse_metrics(extra)]
        return list(dict.fromkeys(names))

    def _name(self, name: str | None, default: str) -> str:
        if name is not None and not isinstance(name, str):
            raise ConfigError(
                f"{self.test}: name={name!r} ({type(name).__name__}) must be a string, e.g. "
                f"name={str(name)!r}"
            )
        chosen = name or default
        if any(r.name == chosen for r in self.recorded):
            raise ConfigError(
                f"{self.test}: an evaluation named {chosen!r} was already recorded in this test; "
                "pass a distinct name=..."
            )
        return chosen

    def _record(self, recorded: RecordedEvaluation) -> None:
        self.recorded.append(recorded)
        if self._on_record is not None:
            self._on_record(recorded)

    def retrieval(
        self,
        run: Run | JudgedRankings | Mapping[str, Mapping[str, float]],
        qrels: Qrels | Mapping[str, Mapping[str, int]] | None = None,
        name: str | None = None,
        *,
        metrics: Iterable[str] | str | None = None,
        retriever: Any = None,
    ) -> Evaluation:
        """Evaluate ``run`` (qrels default to the dataset's) and record it; returns the result.

        ``retriever`` (or the run's own provenance) gives the identity stored in reports and
        baselines.
        """
        dataset_info: dict[str, Any] | None = None
        if isinstance(run, JudgedRankings):
            judged_qrels = run.qrels
            run_obj: Run | Mapping[str, Mapping[str, float]] = run.run
            if qrels is None:
                qrels = judged_qrels
            dataset_info = {
                "name": "judged rankings",
                "source": run.source,
                "fingerprints": {"qrels": judged_qrels.fingerprint},
            }
        else:
            run_obj = run
        if qrels is None:
            dataset = self._dataset()
            qrels = dataset.qrels
            dataset_info = dataset_identity(dataset)
        elif dataset_info is None:
            qrels_obj = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
            qrels = qrels_obj
            dataset_info = {
                "name": "custom qrels",
                "fingerprints": {"qrels": qrels_obj.fingerprint},
            }
        names = self._metrics_for("retrieval", metrics)
        evaluation = evaluate(
            qrels,
            run_obj,
            names,
            relevance_level=self._semantics.relevance_level,
            gain=self._semantics.gain,
            query_set=self._semantics.query_set,
        )
        identity, k = _identity_of(run_obj, retriever)
        recorded = RecordedEvaluation(
            test=self.test,
            name=self._name(name, "retrieval"),
            evaluation=evaluation,
            identity=identity,
            dataset=dataset_info,
            k=k,
            thresholds={m: v for m, v in self._thresholds.items() if m in evaluation.metrics},
        )
        self._record(recorded)
        return evaluation

    def answers(
        self,
        assessments: Iterable[Any],
        name: str | None = None,
        *,
        metrics: Iterable[str] | str | None = None,
    ) -> Evaluation:
        """Evaluate answer assessments and record them; returns the result.

        The metrics are the answer-layer ones in ragmetrics_metrics and the thresholds, plus
        ``metrics``; both groundedness and answer_relevance when none is configured.
        """
        from pytest_ragmetrics.metrics.answer import ANSWER_METRICS, evaluate_answers

        items = list(assessments)
        names = self._metrics_for("answer", metrics, default=ANSWER_METRICS)
        evaluation = evaluate_answers(items, names)
        judges: dict[str, Any] = {}
        for item in items:
            judge = getattr(item, "judge", None)
            if judge:
                judges.setdefault(_stable_json(judge), judge)
        identity: dict[str, Any] = {}
        if len(judges) == 1:
            identity = {"judge": next(iter(judges.values()))}
        elif judges:
            identity = {"judges": list(judges.values())}
        recorded = RecordedEvaluation(
            test=self.test,
            name=self._name(name, "answers"),
            evaluation=evaluation,
            identity=identity,
            dataset=None,
            thresholds={m: v for m, v in self._thresholds.items() if m in evaluation.metrics},
        )
        self._record(recorded)
        return evaluation


def _stable_json(value: Any) -> str:
    import json

    return json.dumps(value, sort_keys=True, default=str)


def _identity_of(run: Any, retriever: Any) -> tuple[dict[str, Any], int | None]:
    """Retriever identity and k from an explicit retriever or the run's provenance."""
    provenance = getattr(run, "provenance", None) or {}
    identity: dict[str, Any] = {}
    if retriever is not None:
        get = getattr(retriever, "identity", None)
        identity = {"retriever": get() if callable(get) else {"name": str(retriever)}}
    elif provenance.get("retriever"):
        identity = {"retriever": provenance["retriever"]}
    k = provenance.get("k")
    if not isinstance(k, int):
        k = _depth(run)
    return identity, k


def _depth(run: Any) -> int | None:
    """How many documents the run retrieved for its deepest query (its effective k)."""
    if isinstance(run, Run):
        depths = run.depths()
        return int(depths.max()) if len(depths) else 0
    if isinstance(run, Mapping):
        return max((len(docs) for docs in run.values()), default=0)
    return None
