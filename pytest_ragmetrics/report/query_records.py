"""Per-query records for the HTML report: which queries to show in detail, and what to show.

An evaluation of the JSON report may carry these optional fields (see
``pytest_ragmetrics.report.html`` for their shape); the functions here fill them:

- :func:`baseline_per_query` — the baseline entry's per-query values, for the per-query Δ
  chart and the baseline histogram; :func:`baseline_details` — its per-query details (the
  first relevant document's rank, documents retrieved), for what a query's card and its
  first-relevant-rank move say about the baseline when its ranking is not recorded;
- :func:`retrieval_query_records` — for chosen queries: text, the ranking now (and in the
  baseline run, when it is at hand) with grades, relevant documents and titles;
- :func:`answer_query_records` — for chosen queries: the question, the answer now and in the
  baseline, the claims with their verdicts and evidence;
- :func:`add_query_details` — all of the above for one evaluation document, in place (what the
  plugin and other callers use);
- :func:`detail_query_ids` — the queries the page shows in detail (also used by the page);
  :class:`PerQueryValues` — per-query values as arrays, for it and for the page's charts.

Nothing here needs pytest; numpy is imported when first needed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pytest_ragmetrics.data.assessments import AnswerAssessment
    from pytest_ragmetrics.data.model import (
        Corpus,
        Dataset,
        FloatArray,
        IntArray,
        Qrels,
        Queries,
        Run,
    )
    from pytest_ragmetrics.records import EvaluationRecord

# A query's ranking is recorded this deep by default (the page shows it whole).
DEFAULT_DEPTH = 10
# Up to this many queries, every query gets a record (so that comparing two reports can show
# the baseline's ranking of any query); above it, only the queries the page shows in detail.
RECORD_ALL_UP_TO = 1000
TITLE_CHARS = 120
# The baseline's per-query details a page shows (where the first relevant document was, 0 if
# none; how many documents were retrieved): kept as the evaluation's baseline_details.
BASELINE_DETAILS = ("first_relevant_rank", "num_retrieved")


class PerQueryValues:
    """An evaluation's per-query values, and its baseline's, as float arrays (NaN where a
    value is missing, null, not a number or not finite), one metric at a time."""

    def __init__(self, entry: Mapping[str, Any]) -> None:
        per_query = entry.get("per_query")
        per_query = per_query if isinstance(per_query, Mapping) else {}
        self._setup([str(q) for q in per_query], entry.get("baseline_per_query"))
        self._rows["now"] = _rows(per_query.values())

    @classmethod
    def of_record(cls, record: EvaluationRecord) -> PerQueryValues:
        """The values of a typed record: its evaluation's (no copy) and, from its report
        fields, its baseline's."""
        evaluation = record.evaluation
        values = cls.__new__(cls)
        values._setup(evaluation.query_ids.tolist(), record.report_fields.get("baseline_per_query"))
        values._rows["now"] = [{}] * len(values.ids)  # a metric it lacks: all NaN
        for metric in evaluation.metrics:
            values._cache[("now", metric)] = evaluation.column(metric)
        return values

    def _setup(self, ids: list[str], base: Any) -> None:
        self.ids = ids
        self.has_baseline = isinstance(base, Mapping)
        base = base if isinstance(base, Mapping) else {}
        self._rows: dict[str, list[Mapping[str, Any]]] = {
            "baseline": _rows(base.values()),
            "before": _rows(base.get(q) for q in ids),
        }
        self._cache: dict[tuple[str, str], FloatArray] = {}
        self._deltas: dict[str, tuple[IntArray, FloatArray]] = {}

    def _column(self, which: str, metric: str) -> FloatArray:
        key = (which, metric)
        found = self._cache.get(key)
        if found is None:
            found = _floats(row.get(metric) for row in self._rows[which])
            self._cache[key] = found
        return found

    def now(self, metric: str) -> FloatArray:
        """This run's values, aligned with ``ids``."""
        return self._column("now", metric)

    def before(self, metric: str) -> FloatArray:
        """The baseline's values of the same queries, aligned with ``ids``."""
        return self._column("before", metric)

    def baseline(self, metric: str) -> FloatArray:
        """Every value of the baseline (its queries, not only the ones of this run)."""
        return self._column("baseline", metric)

    def deltas(self, metric: str) -> tuple[IntArray, FloatArray]:
        """Positions (into ``ids``) of the queries with a value in both runs, sorted by Δ then
        by id, and their Δ; empty without baseline values."""
        found = self._deltas.get(metric)
        if found is None:
            found = self._deltas[metric] = self._sorted_deltas(metric)
        return found

    def _sorted_deltas(self, metric: str) -> tuple[IntArray, FloatArray]:
        import numpy as np

        if not self.has_baseline:
            return np.empty(0, dtype=np.int64), np.empty(0)
        from pytest_ragmetrics.deltas import deltas

        # As the baseline verdict counts them (the one rule of deltas.py): values at the stored
        # precision, so a query whose value only lost its rounding digits is unchanged.
        delta = deltas(self.before(metric), self.now(metric))
        keep = np.flatnonzero(~np.isnan(delta))
        ids = np.asarray(self.ids, dtype=object)[keep] if len(keep) else np.empty(0, dtype=object)
        order = np.lexsort((ids.astype(str), delta[keep])) if len(keep) else keep
        return keep[order], delta[keep][order]

    def lowest(self, metric: str, count: int) -> IntArray:
        """Positions of the ``count`` lowest-valued queries (by value, then id)."""
        import numpy as np

        values = self.now(metric)
        keep = np.flatnonzero(~np.isnan(values))
        if not len(keep):
            return keep
        ids = np.asarray(self.ids, dtype=object)[keep].astype(str)
        return keep[np.lexsort((ids, values[keep]))][:count]


def _int_value(value: int) -> float:
    try:
        return float(value)
    except OverflowError:
        return math.nan


def _rows(rows: Iterable[Any]) -> list[Mapping[str, Any]]:
    # type() first: isinstance against the Mapping ABC is slow, and nearly all rows are dicts.
    return [r if type(r) is dict or isinstance(r, Mapping) else {} for r in rows]


def _floats(values: Iterable[Any]) -> FloatArray:
    import numpy as np

    nan = math.nan
    # bool is not a number here (type(True) is bool, not int); an int too large for a float
    # is not one either.
    out = np.array(
        [v if (t := type(v)) is float else _int_value(v) if t is int else nan for v in values],
        dtype=np.float64,
    )
    out[~np.isfinite(out)] = nan
    return out


def most_regressed(entry: Mapping[str, Any], metric: str) -> list[Mapping[str, Any]]:
    """The comparison's ``most_regressed`` list of ``metric`` (up to 5 queries), or []."""
    outcome = entry.get("outcome")
    verdict = outcome.get("baseline") if isinstance(outcome, Mapping) else None
    metrics = verdict.get("metrics") if isinstance(verdict, Mapping) else None
    for item in metrics if isinstance(metrics, list) else []:
        if isinstance(item, Mapping) and item.get("metric") == metric:
            found = item.get("most_regressed")
            if isinstance(found, list):
                return [
                    m for m in found if isinstance(m, Mapping) and isinstance(m.get("query"), str)
                ]
    return []


def detail_query_ids(
    entry: Mapping[str, Any], *, worst: int, values: PerQueryValues | None = None
) -> list[str]:
    """The queries shown in detail (:func:`choose_detail_ids`) of an evaluation document."""
    metrics = entry.get("metrics")
    return choose_detail_ids(
        values or PerQueryValues(entry),
        list(metrics) if isinstance(metrics, Mapping) else [],
        worst=worst,
        listed=lambda metric: [m["query"] for m in most_regressed(entry, metric)],
        verdict=_has_verdict(entry),
    )


def choose_detail_ids(
    values: PerQueryValues,
    metrics: Sequence[str],
    *,
    worst: int,
    listed: Callable[[str], list[str]],
    verdict: bool,
) -> list[str]:
    """The queries shown in detail: for each metric, the ``worst`` most regressed ones.

    Most regressed means the most negative per-query Δ when the baseline's per-query values
    are there; otherwise the comparison's most regressed queries (``listed(metric)``);
    otherwise, without a ``verdict`` (no baseline, or new), the ``worst`` lowest-scoring
    queries. In order of first appearance, metric by metric.
    """
    chosen: dict[str, None] = {}
    for metric in metrics:
        if values.has_baseline:
            positions, delta = values.deltas(metric)
            ids = [values.ids[i] for i in positions[delta < 0][:worst]]
        else:
            ids = listed(metric)[:worst]
            if not ids and not verdict:
                ids = [values.ids[i] for i in values.lowest(metric, worst)]
        chosen.update(dict.fromkeys(ids))
    return list(chosen)


def _has_verdict(entry: Mapping[str, Any]) -> bool:
    outcome = entry.get("outcome")
    verdict = outcome.get("baseline") if isinstance(outcome, Mapping) else None
    return isinstance(verdict, Mapping) and verdict.get("status") not in (None, "new")


def baseline_per_query(baseline_entry: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The per-query values of a baseline entry (or an earlier report's evaluation)."""
    return _per_query_maps(baseline_entry, "per_query")


def baseline_details(baseline_entry: Mapping[str, Any] | None) -> dict[str, dict[str, Any]]:
    """The per-query details of a baseline entry (or an earlier report's evaluation) that the
    page shows: ``{name: {query id: integer}}`` for the names of :data:`BASELINE_DETAILS`."""
    details = _per_query_maps(baseline_entry, "details")
    return {name: details[name] for name in BASELINE_DETAILS if name in details}


def _per_query_maps(entry: Mapping[str, Any] | None, key: str) -> dict[str, dict[str, Any]]:
    found = entry.get(key) if entry else None
    if not isinstance(found, Mapping):
        return {}
    return {str(k): dict(row) for k, row in found.items() if isinstance(row, Mapping)}


def _ranking(
    run: Run, qrels: Qrels, query_id: str, depth: int
) -> tuple[list[list[Any]], dict[str, int]]:
    judged = qrels.judgments(query_id)
    rows = [[doc, float(score), judged.get(doc)] for doc, score in run.ranking(query_id)[:depth]]
    return rows, judged


def _title(corpus: Corpus | None, doc_id: str) -> str | None:
    if corpus is None or doc_id not in corpus:
        return None
    document = corpus[doc_id]
    title = document.title.strip() or document.text.strip()
    if len(title) > TITLE_CHARS:
        title = title[: TITLE_CHARS - 1].rstrip() + "…"
    return title or None


def retrieval_query_records(
    run: Run | Mapping[str, Mapping[str, float]],
    qrels: Qrels,
    query_ids: Iterable[str],
    *,
    queries: Queries | Mapping[str, str] | None = None,
    corpus: Corpus | None = None,
    baseline_run: Run | Mapping[str, Mapping[str, float]] | None = None,
    depth: int = DEFAULT_DEPTH,
    relevance_level: int = 1,
    ignore_identical_ids: bool = False,
) -> dict[str, dict[str, Any]]:
    """``{query id: record}`` for the ``queries`` field of a retrieval evaluation.

    A record has ``text`` (when ``queries`` knows it), ``ranking`` (the top ``depth`` as
    ``[doc id, score, grade or None]``, None = unjudged), ``baseline_ranking`` (the same for
    ``baseline_run``, when given), ``relevant`` (every judged document with a grade at or above
    ``relevance_level``, so the page can name the ones not retrieved) and ``titles`` (doc id →
    title, or the start of its text when it has none, for the documents shown; with
    ``corpus``). The run is used as it was scored: with ``ignore_identical_ids`` the
    documents whose id is the query's are left out first.
    """
    from pytest_ragmetrics.data.model import Run

    current = Run.from_dict(run)
    before = None if baseline_run is None else Run.from_dict(baseline_run)
    if ignore_identical_ids:
        current = current.without_identical_ids()
        before = None if before is None else before.without_identical_ids()
    records: dict[str, dict[str, Any]] = {}
    for qid in query_ids:
        ranking, judged = _ranking(current, qrels, qid, depth)
        record: dict[str, Any] = {"ranking": ranking}
        if queries is not None and qid in queries:
            record["text"] = queries[qid]
        shown = [row[0] for row in ranking]
        if before is not None:
            record["baseline_ranking"] = _ranking(before, qrels, qid, depth)[0]
            shown += [row[0] for row in record["baseline_ranking"]]
        relevant = {doc: grade for doc, grade in judged.items() if grade >= relevance_level}
        record["relevant"] = relevant
        shown += list(relevant)
        if corpus is not None:
            titles = {doc: _title(corpus, doc) for doc in dict.fromkeys(shown)}
            record["titles"] = {doc: t for doc, t in titles.items() if t}
        records[qid] = record
    return records


def _claims(assessment: AnswerAssessment) -> list[dict[str, Any]]:
    return [
        {
            "text": c.text,
            "supported": c.supported,
            "evidence": list(c.evidence),
            "score": c.score,
        }
        for c in assessment.claims
    ]


def answer_query_records(
    assessments: Iterable[AnswerAssessment],
    query_ids: Iterable[str] | None = None,
    *,
    baseline_assessments: Iterable[AnswerAssessment] | None = None,
) -> dict[str, dict[str, Any]]:
    """``{query id: record}`` for the ``queries`` field of an answer evaluation.

    A record has ``text`` (the question, when the assessment has it), ``answer``, ``claims``
    (``{text, supported, evidence, score}``; supported None = unjudged) and, from
    ``baseline_assessments``, ``baseline_answer`` and ``baseline_claims``. All assessed queries
    when ``query_ids`` is None.
    """
    now = {a.query_id: a for a in assessments}
    before = {a.query_id: a for a in baseline_assessments or ()}
    records: dict[str, dict[str, Any]] = {}
    for qid in now if query_ids is None else query_ids:
        item = now.get(qid)
        old = before.get(qid)
        if item is None and old is None:
            continue
        record: dict[str, Any] = {}
        source = item if item is not None else old
        assert source is not None
        if source.query:
            record["text"] = source.query
        if item is not None:
            record["answer"] = item.answer
            record["claims"] = _claims(item)
        if old is not None:
            record["baseline_answer"] = old.answer
            record["baseline_claims"] = _claims(old)
        records[qid] = record
    return records


_BASELINE_COPIES = {
    "ranking": "baseline_ranking",
    "answer": "baseline_answer",
    "claims": "baseline_claims",
}


def baseline_records(
    records: Mapping[str, Mapping[str, Any]],
    baseline_entry: Mapping[str, Any] | None,
) -> dict[str, dict[str, Any]]:
    """``records`` with what the baseline entry's own ``queries`` records say about the same
    queries (its ranking, answer and claims as ``baseline_...``), where they do not say it
    already. Used when comparing two reports that both carry records."""
    theirs = (baseline_entry or {}).get("queries")
    out = {qid: dict(record) for qid, record in records.items()}
    if not isinstance(theirs, Mapping):
        return out
    for qid, record in out.items():
        old = theirs.get(qid)
        if not isinstance(old, Mapping):
            continue
        for key, target in _BASELINE_COPIES.items():
            if key in old and target not in record:
                record[target] = old[key]
        for key in ("text", "titles", "relevant"):
            if key in old and key not in record:
                record[key] = old[key]
            elif key in ("titles", "relevant") and isinstance(old.get(key), Mapping):
                record[key] = {**old[key], **record[key]}
    return out


def add_query_details(
    entry: dict[str, Any],
    *,
    baseline_entry: Mapping[str, Any] | None = None,
    run: Run | Mapping[str, Mapping[str, float]] | None = None,
    baseline_run: Run | Mapping[str, Mapping[str, float]] | None = None,
    dataset: Dataset | None = None,
    qrels: Qrels | None = None,
    queries: Queries | Mapping[str, str] | None = None,
    corpus: Corpus | None = None,
    assessments: Sequence[AnswerAssessment] | None = None,
    baseline_assessments: Sequence[AnswerAssessment] | None = None,
    worst: int = 10,
    depth: int = DEFAULT_DEPTH,
    record_all_up_to: int = RECORD_ALL_UP_TO,
) -> dict[str, Any]:
    """Fill the optional per-query fields of one evaluation document (in place; returned).

    ``baseline_per_query`` and ``baseline_details`` come from ``baseline_entry``. ``queries``
    gets a record for every query when there are at most ``record_all_up_to`` of them, else for
    those the page shows in detail (:func:`detail_query_ids` with ``worst``): from ``run``
    and the dataset (or ``qrels``/``queries``/``corpus``) for a retrieval evaluation, from
    ``assessments`` for an answer one; the baseline's rankings and answers come from
    ``baseline_run`` / ``baseline_assessments`` or, failing those, from ``baseline_entry``'s
    own records.
    """
    if dataset is not None:
        qrels = qrels or dataset.qrels
        queries = queries if queries is not None else dataset.queries
        corpus = corpus or dataset.corpus
    for key, found in (
        ("baseline_per_query", baseline_per_query(baseline_entry)),
        ("baseline_details", baseline_details(baseline_entry)),
    ):
        if found:
            entry[key] = found
    per_query = entry.get("per_query") or {}
    few = len(per_query) <= record_all_up_to
    ids = list(per_query) if few else detail_query_ids(entry, worst=worst)
    records: dict[str, dict[str, Any]] = {}
    if entry.get("layer") == "answer" and assessments is not None:
        records = answer_query_records(assessments, ids, baseline_assessments=baseline_assessments)
    elif entry.get("layer") == "retrieval" and run is not None and qrels is not None:
        semantics = entry.get("semantics") or {}
        records = retrieval_query_records(
            run,
            qrels,
            ids,
            queries=queries,
            corpus=corpus,
            baseline_run=baseline_run,
            depth=depth,
            relevance_level=int(semantics.get("relevance_level", 1)),
            ignore_identical_ids=bool(semantics.get("ignore_identical_ids", False)),
        )
    records = baseline_records(records, baseline_entry)
    if records:
        entry["queries"] = records
    return entry
