"""The ``rag_eval`` fixture's object: evaluates runs and answers in a test and records each
evaluation (an :class:`~pytest_ragmetrics.records.EvaluationRecord`), with the thresholds of
the test's ``rag_threshold`` markers."""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from pytest_ragmetrics.cache import identity_of
from pytest_ragmetrics.data.judged import JudgedRankings
from pytest_ragmetrics.data.model import Dataset, Qrels, Queries, Run
from pytest_ragmetrics.data.run import run_from_dict
from pytest_ragmetrics.errors import ConfigError, MetricError, RagMetricsError
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.metrics.names import parse_metric, parse_metrics
from pytest_ragmetrics.metrics.retrieval import evaluate
from pytest_ragmetrics.metrics.semantics import MetricSemantics
from pytest_ragmetrics.pooling import Supplement, supplemented_note
from pytest_ragmetrics.records import EvaluationRecord, dataset_identity, stable_json
from pytest_ragmetrics.twins import same_class
from pytest_ragmetrics.values import real_number, shown
from pytest_ragmetrics.vocabulary import DEFAULT_ANSWER_METRICS, Layer


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
        number = real_number(value)
        if number is None:
            raise ConfigError(f"{where}: {name}={shown(value)} is not a number in [0, 1]")
        if not (0.0 <= number <= 1.0):
            raise ConfigError(f"{where}: {name}={shown(value)} is outside [0, 1]")
        out[spec.name] = number
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
        supplement: Callable[[], Supplement | None] | None = None,
        on_record: Callable[[EvaluationRecord], None] | None = None,
        report_fields: Callable[..., Mapping[str, Any]] | None = None,
        query: str | None = None,
    ) -> None:
        self.test = test
        # In a rag_query test, the query of this instance: a retrieval evaluation covers it
        # alone, so its means and thresholds are that query's, not every query's.
        self._query = query
        self._metrics = tuple(metrics)
        self._semantics = semantics
        self._k = k
        # Read when an evaluation is recorded: a marker added during the test still counts.
        self._thresholds_of = thresholds if callable(thresholds) else lambda: thresholds
        self._dataset = dataset
        self._supplement = supplement
        self._on_record = on_record
        # Given the record and what it was computed from (run, qrels, dataset, assessments),
        # the optional per-query fields of the HTML report; None when no page is wanted.
        self._report_fields = report_fields
        self.recorded: list[EvaluationRecord] = []
        # Per evaluation name, the texts of its queries that the test had at hand (the
        # dataset's, or the questions the answers were given), for its failure message.
        self._texts: dict[str, Mapping[str, str] | Queries] = {}

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

    def _new_record(
        self, name: str, evaluation: Evaluation, identity: dict[str, Any], **fields: Any
    ) -> EvaluationRecord:
        """This test's record ``name`` of ``evaluation``, with the test's thresholds of the
        metrics it measured."""
        thresholds = {m: v for m, v in self._thresholds.items() if m in evaluation.metrics}
        return EvaluationRecord(
            test=self.test,
            name=name,
            evaluation=evaluation,
            identity=identity,
            thresholds=thresholds,
            **fields,
        )

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

    def _record(self, recorded: EvaluationRecord, **sources: Any) -> None:
        if self._report_fields is not None:
            fields = self._report_fields(recorded, **sources)
            recorded = dataclasses.replace(
                recorded, report_fields={**recorded.report_fields, **fields}
            )
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
        scores: str | None = None,
    ) -> Evaluation:
        """Evaluate ``run`` (qrels default to the dataset's) and record it; returns the result.
        In a ``rag_query`` test only that test's query is evaluated.

        ``retriever`` (or, without it, the retriever the run records, as ``rag_run``'s does)
        gives the identity stored in reports and baselines. ``scores`` declares which way a
        dict run's scores point, as for :meth:`Run.from_dict`.
        """
        run_obj, judgments, dataset_info, sources = self._judgments_of(run, qrels, scores)
        if self._query is not None:
            run_obj, judgments = self._own_query(run_obj, judgments)
        names = self._metrics_for("retrieval", metrics)
        rules = self._semantics
        options: dict[str, Any] = {
            "relevance_level": rules.relevance_level,
            "gain": rules.gain,
            "query_set": rules.query_set,
            "ignore_identical_ids": rules.ignore_identical_ids,
        }
        evaluation = evaluate(judgments, run_obj, names, **options)
        supplement = self._supplement() if self._supplement and "dataset" in sources else None
        if supplement is not None:
            evaluation.supplemented = supplement.evaluate(judgments, run_obj, names, **options)
            evaluation.notes.append(supplemented_note(evaluation))
            evaluation.notes.extend(supplement.notes)
        identity, k = _source_of(run_obj, retriever)
        evaluation.notes.extend(_run_notes(run_obj, evaluation, identity, sources.get("dataset")))
        recorded = self._new_record(
            self._name(name, "retrieval"), evaluation, identity, dataset=dataset_info, k=k
        )
        if "dataset" in sources:
            self._texts[recorded.name] = sources["dataset"].queries
        self._record(recorded, run=run_obj, qrels=judgments, **sources)
        return evaluation

    def _own_query(self, run: Run, judgments: Qrels) -> tuple[Run, Qrels]:
        """In a ``rag_query`` test, the run and judgments of its query alone; a run (or qrels)
        without that query is an error naming it, not "empty"."""
        query = self._query
        assert query is not None
        for what, ids, fix in (
            ("run has no ranking", run.query_ids, "pass a run that ranks it (rag_run does)"),
            ("qrels have no judgment", judgments.query_ids, "pass qrels that judge it"),
        ):
            if len(ids) and query not in set(ids.tolist()):
                some = ", ".join(map(repr, ids[:3].tolist()))
                raise ConfigError(
                    f"{self.test}: rag_eval.retrieval: the {what} for this test's query "
                    f"{query!r} (it has {len(ids)} other quer{'y' if len(ids) == 1 else 'ies'}, "
                    f"e.g. {some}); in a rag_query test it evaluates that query alone: {fix}, "
                    "or keep the test to the queries it has with @pytest.mark.rag_queries(...)"
                )
        return run.restrict([query]), judgments.restrict([query])

    def _judgments_of(
        self,
        run: Run | JudgedRankings | Mapping[str, Mapping[str, float]],
        qrels: Qrels | Mapping[str, Mapping[str, int]] | None,
        scores: str | None,
    ) -> tuple[Run, Qrels, dict[str, Any], dict[str, Any]]:
        """The run to evaluate, the judgments to evaluate it with, what the record says of
        them (the dataset's identity, or the rankings' or qrels' own), and the sources the
        report may show (the dataset, when its qrels are used)."""
        if isinstance(run, JudgedRankings):
            # The judgments used are the ones fingerprinted: qrels= replaces the rankings' own.
            judged = Qrels.from_dict(run.qrels if qrels is None else qrels)
            info = {
                "name": "judged rankings",
                "source": run.source,
                "fingerprints": {"qrels": judged.fingerprint},
            }
            return run.run, judged, info, {}
        if isinstance(run, Mapping):  # read once, its direction declared, as every report sees it
            run = run_from_dict(run, scores, fix="rag_eval.retrieval(run, scores={kind!r})")
        elif same_class(run, Run):
            run = Run.from_dict(run)  # ours as it is; from another import of its module, a copy
        if qrels is None:
            try:
                dataset = self._dataset()
            except ConfigError as exc:
                raise ConfigError(f"{self.test}: {exc}") from None
            return run, dataset.qrels, dataset_identity(dataset), {"dataset": dataset}
        given = qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)
        info = {"name": "custom qrels", "fingerprints": {"qrels": given.fingerprint}}
        return run, given, info, {}

    def answers(
        self,
        assessments: Iterable[Any],
        name: str | None = None,
        *,
        metrics: Iterable[str] | str | None = None,
        cost: Mapping[str, Any] | None = None,
        noise: Any = None,
    ) -> Evaluation:
        """Evaluate answer assessments and record them; returns the result. In a ``rag_query``
        test only the assessments of that test's query are evaluated (none is an error).

        The metrics are the answer-layer ones in ragmetrics_metrics and the thresholds, plus
        ``metrics``; both groundedness and answer_relevance when none is configured.
        ``assessments`` may be a :class:`~pytest_ragmetrics.judges.answers.JudgedAnswers`
        (its judge cost and noise are then recorded too, and its questions, claims_of and
        pipeline join the judge in the evaluation's identity). ``cost`` maps a part ("generator",
        "judge") to its :class:`~pytest_ragmetrics.transport.Cost`: shown in the notes and the
        JSON report. ``noise`` (a :class:`~pytest_ragmetrics.judges.noise.JudgeNoise`) is
        shown too, and a baseline drop within it is not a regression.
        """
        from pytest_ragmetrics.judges.answers import JudgedAnswers
        from pytest_ragmetrics.metrics.answer import evaluate_answers

        parts = dict(cost or {})
        judged: JudgedAnswers | None = None
        if isinstance(assessments, JudgedAnswers):
            judged = assessments
            parts.setdefault("judge", judged.cost)
            noise = noise if noise is not None else judged.noise
            assessments = judged.assessments
        items = self._own_answers(list(assessments))
        names = self._metrics_for("answer", metrics, default=DEFAULT_ANSWER_METRICS)
        evaluation = evaluate_answers(items, names)
        fields = _cost_and_noise(evaluation, parts, noise)
        identity = _judge_identity(items)
        if judged is not None:
            # The questions behind answer_relevance, answer_correctness and context_relevance,
            # what groundedness judged of each answer, and the pipeline that answered: a change
            # to any of them shows as a configuration change, and each question has its own
            # kappa gate.
            identity.update(judged.identity(evaluation.metrics))
        recorded = self._new_record(
            self._name(name, "answers"), evaluation, identity, dataset=None, report_fields=fields
        )
        self._texts[recorded.name] = {
            str(item.query_id): item.query for item in items if getattr(item, "query", "")
        }
        self._record(recorded, assessments=items)
        return evaluation

    def _own_answers(self, items: list[Any]) -> list[Any]:
        """In a ``rag_query`` test, the assessments of its query alone (as :meth:`retrieval`
        evaluates its query alone): its thresholds bound that query's values, not the mean."""
        if self._query is None:
            return items
        own = [item for item in items if str(getattr(item, "query_id", "")) == self._query]
        if not own:
            raise ConfigError(
                f"{self.test}: rag_eval.answers: none of the {len(items)} assessments is of "
                f"this test's query {self._query!r}; give its answer, or keep the test to the "
                "queries that have one with @pytest.mark.rag_queries(...)"
            )
        return own

    def query_texts(self, name: str, query_ids: Iterable[str]) -> dict[str, str]:
        """The text of each of ``query_ids`` of evaluation ``name`` that is known: from what
        the evaluation was made of, else from the test's dataset (if it has one)."""
        found: dict[str, str] = {}
        sources: list[Mapping[str, str] | Queries] = [self._texts.get(name) or {}]
        with contextlib.suppress(RagMetricsError):  # no dataset (or a broken one): ids alone
            sources.append(self._dataset().queries)
        for query_id in query_ids:
            for source in sources:
                try:
                    found[query_id] = source[query_id]
                    break
                except KeyError:
                    continue
        return found


def _cost_and_noise(evaluation: Evaluation, parts: Mapping[str, Any], noise: Any) -> dict[str, Any]:
    """The report fields of an answer evaluation's cost (per part) and judge noise; each is
    also a note of the evaluation."""
    fields: dict[str, Any] = {}
    if parts:
        fields["cost"] = {part: c.to_dict() for part, c in parts.items()}
        evaluation.notes.append(
            "cost: " + "; ".join(f"{part} {c.describe()}" for part, c in parts.items())
        )
    if noise is not None:
        fields["judge_noise"] = noise.to_dict()
        evaluation.notes.append(noise.describe())
    return fields


def _judge_identity(items: Iterable[Any]) -> dict[str, Any]:
    """``{"judge": identity}`` when one judge assessed every answer, ``{"judges": [...]}``
    when several did, ``{}`` when none says who it is."""
    judges: dict[str, Any] = {}
    for item in items:
        judge = getattr(item, "judge", None)
        if judge:
            judges.setdefault(stable_json(judge), judge)
    if len(judges) == 1:
        return {"judge": next(iter(judges.values()))}
    return {"judges": list(judges.values())} if judges else {}


def _run_notes(
    run: Any, evaluation: Evaluation, identity: Mapping[str, Any], dataset: Dataset | None
) -> list[str]:
    """The dataset's notes (stale labels), and how the run's rankings fell short of the k it
    was asked for (known for ``rag_run``'s), over the evaluated queries it holds."""
    from pytest_ragmetrics.retrievers.base import rankings_note

    notes = list(dataset.notes) if dataset is not None else []
    if isinstance(run, Run) and isinstance(run.k, int):
        note = rankings_note(
            run,
            evaluation.query_ids.tolist(),
            run.k,
            identity=identity.get("retriever") or {},
            corpus_size=None if dataset is None else len(dataset.corpus),
        )
        if note is not None:
            notes.append(note)
        notes += _depth_notes(evaluation.metrics, run.k)
    return notes


def _depth_notes(metrics: Iterable[str], k: int) -> list[str]:
    """A note naming the metrics whose cutoff lies below the ``k`` documents the retriever was
    asked for: computed over those k, so recall_at_1000 of a k = 3 run is recall at 3."""
    from pytest_ragmetrics.metrics.names import parse_metric

    deeper = [m for m in metrics if (parse_metric(m).k or 0) > k]
    if not deeper:
        return []
    return [
        f"{', '.join(deeper)}: the retriever was asked for k = {k} documents per query, so "
        f"{'these are' if len(deeper) > 1 else 'this is'} computed over those {k}; raise "
        f"ragmetrics_k to {max(parse_metric(m).k or 0 for m in deeper)} to measure "
        f"{'them' if len(deeper) > 1 else 'it'} at depth"
    ]


def _source_of(run: Any, retriever: Any) -> tuple[dict[str, Any], int | None]:
    """Retriever identity and k: from ``retriever`` if given, else from the run's own record
    of where it came from; k falls back to the run's depth (its deepest query)."""
    identity: dict[str, Any] = {}
    recorded_by = getattr(run, "retriever", None) if isinstance(run, Run) else None
    if retriever is not None:
        identity = {"retriever": identity_of(retriever)}
    elif recorded_by:
        identity = {"retriever": dict(recorded_by)}
    k = run.k if isinstance(run, Run) else None
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
