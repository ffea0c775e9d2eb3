"""The vectorised retrieval-metric engine (trec_eval semantics by default).

Every run entry becomes one row of flat arrays (query index, rank, grade); every metric is a
masked ``bincount`` over those rows. No Python loop runs per entry or per query. Judged-only
metrics (``map_judged``, trec_eval ``-J``) run the same code on the condensed rows
(:attr:`RankedJudgments.condensed`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import chain

import numpy as np

from pytest_ragmetrics.data.model import (
    FloatArray,
    IntArray,
    Qrels,
    Run,
    StrArray,
    as_str_array,
    ranking_key,
)
from pytest_ragmetrics.data.run import run_from_dict, score_array
from pytest_ragmetrics.data.scores import check_score_kind, mapping_contradiction, undeclared_error
from pytest_ragmetrics.errors import ConfigError, DataFormatError, MetricError
from pytest_ragmetrics.metrics.evaluation import Evaluation
from pytest_ragmetrics.metrics.names import MetricSpec, families, parse_metrics
from pytest_ragmetrics.metrics.ranked import (
    BoolArray,
    RankedJudgments,
    _bincount,
    _divide,
    _positions,
)
from pytest_ragmetrics.metrics.semantics import Gain, MetricSemantics, QuerySet
from pytest_ragmetrics.twins import same_class
from pytest_ragmetrics.vocabulary import DEFAULT_METRICS

# trec_eval's INFAP_EPSILON: keeps infAP's estimated precision defined with no judged doc above.
INFAP_EPSILON = 0.00001


def bpref(rj: RankedJudgments) -> FloatArray:
    """Binary preference (Buckley & Voorhees 2004), as trec_eval 8+ computes it.

    bpref = (1/R) Σ_{r relevant, retrieved} (1 - min(n_r, R) / min(N, R)), where n_r is the
    number of judged non-relevant documents ranked above r and N the number of judged
    non-relevant documents of the query; a term with n_r = 0 is 1. Unjudged and negatively
    graded documents are skipped. 0 when R = 0.
    """
    rel = rj.relevant
    num_relevant = rj.num_relevant[rj.query]
    above = np.minimum(rj.cumulative_count(rj.nonrelevant), num_relevant)
    share = _divide(
        above.astype(np.float64), np.minimum(rj.num_nonrelevant[rj.query], num_relevant)
    )
    return _divide(rj.per_query_sum(1.0 - share, rel), rj.num_relevant)


def infap(rj: RankedJudgments) -> FloatArray:
    """Inferred AP (Yilmaz & Aslam 2006), trec_eval's ``infAP`` estimate.

    infAP = (1/R) Σ_{r relevant, retrieved} E[P@rank(r)], with, for r at rank j + 1,
    E = 1 when j = 0, else 1/(j+1) + (j/(j+1)) · (p/j) · (h + ε) / (h + n + 2ε):
    p judged documents (any grade, -1 included) above r, h relevant and n judged non-relevant
    ones above r, ε = 1e-5. Unjudged documents count in j only. 0 when R = 0.
    """
    rel = rj.relevant
    j = (rj.rank[rel] - 1).astype(np.float64)
    pooled = rj.position[rel].astype(np.float64)
    hits = (rj.cumulative_hits[rel] - 1).astype(np.float64)
    misses = rj.cumulative_count(rj.nonrelevant)[rel].astype(np.float64)
    safe_j = np.maximum(j, 1.0)
    # The same operations in the same order as trec_eval, so the sums agree to the last bit.
    estimate = 1.0 / (j + 1.0) + (j / (j + 1.0)) * (pooled / safe_j) * (
        (hits + INFAP_EPSILON) / (hits + misses + 2 * INFAP_EPSILON)
    )
    estimate[j == 0] = 1.0
    return _divide(_bincount(rj.query[rel], estimate, rj.n_queries), rj.num_relevant)


def _metric_values(spec: MetricSpec, rj: RankedJudgments) -> FloatArray:
    """One metric's values per query; ``rj`` is already the condensed view for judged-only."""
    k = spec.k
    family = spec.family
    if family == "precision":
        assert k is not None
        return rj.hits(k) / k
    if family == "recall":
        return _divide(rj.hits(k), rj.num_relevant)
    if family == "recall_cap":
        assert k is not None
        return _divide(rj.hits(k), np.minimum(rj.num_relevant, k))
    if family == "hit_rate":
        return (rj.hits(k) > 0).astype(np.float64)
    if family == "judged":
        assert k is not None
        return _divide(rj.count(rj.rank <= k), np.minimum(rj.num_retrieved, k))
    if family == "ndcg":
        return _divide(rj.dcg(k), rj.ideal_dcg(k))
    if family == "map":
        mask = rj.relevant if k is None else rj.relevant & (rj.rank <= k)
        precisions = rj.cumulative_hits / rj.rank
        return _divide(rj.per_query_sum(precisions, mask), rj.num_relevant)
    if family == "mrr":
        first = rj.first_relevant_rank
        if k is not None:
            first = np.where(first <= k, first, 0)
        return _divide(np.ones(rj.n_queries), first)
    if family == "r_precision":
        cutoff = rj.num_relevant[rj.query]
        return _divide(rj.count(rj.relevant & (rj.rank <= cutoff)), rj.num_relevant)
    if family == "bpref":
        return bpref(rj)
    if family == "infap":
        return infap(rj)
    return _registered_values(spec, rj)


def _registered_values(spec: MetricSpec, rj: RankedJudgments) -> FloatArray:
    """A registered metric's values per query, checked: numbers, one per query, none below
    the metric's declared worst value; what its function raised is named."""
    family, k = spec.family, spec.k
    fam = families().get(family)
    if fam is None or fam.function is None:
        raise MetricError(f"metric {spec.name!r} is not a retrieval metric")
    try:
        returned = fam.function(rj, k)
    except Exception as exc:  # the user's code: named, with what it raised
        raise MetricError(
            f"registered metric {spec.name!r} raised {type(exc).__name__}: {exc}"
        ) from exc
    try:
        values = np.asarray(returned, dtype=np.float64)
    except (TypeError, ValueError, OverflowError) as exc:
        raise MetricError(
            f"registered metric {spec.name!r} did not return numbers ({exc}); return one float "
            "per query"
        ) from None
    if values.shape != (rj.n_queries,):
        raise MetricError(
            f"registered metric {family!r} returned shape {values.shape}, expected "
            f"({rj.n_queries},)"
        )
    below = np.flatnonzero(values < fam.worst) if fam.worst is not None else np.empty(0, int)
    if len(below):
        raise MetricError(
            f"registered metric {spec.name!r} returned {float(values[below[0]])!r}, below its "
            f"declared worst value {fam.worst!r}: a registered metric is higher-is-better, so "
            "worst is the least value it can take (if lower is better, register its negation)"
        )
    return values


def _as_qrels(qrels: Qrels | Mapping[str, Mapping[str, int]]) -> Qrels:
    return qrels if isinstance(qrels, Qrels) else Qrels.from_dict(qrels)


def _vocabulary_map(names: StrArray, qrels: Qrels) -> IntArray:
    """For each name, its code in ``qrels.doc_ids`` or -1 (vectorised binary search)."""
    if len(qrels.doc_ids) == 0 or len(names) == 0:
        return np.full(len(names), -1, dtype=np.int64)
    order = np.argsort(qrels.doc_ids, kind="stable")
    sorted_ids = qrels.doc_ids[order]
    pos = np.minimum(np.searchsorted(sorted_ids, names), len(sorted_ids) - 1)
    return np.where(sorted_ids[pos] == names, order[pos], -1)


@dataclass(frozen=True)
class _Judgments:
    """The qrels side of a join: judgments of the evaluated queries, with lookup keys."""

    query: IntArray
    code: IntArray
    grade: IntArray
    width: int

    @classmethod
    def build(cls, qrels: Qrels, position: Mapping[str, int]) -> _Judgments:
        q_of_qrels = np.fromiter(
            (position.get(q, -1) for q in qrels.query_ids.tolist()),
            dtype=np.int64,
            count=len(qrels),
        )
        seg = np.repeat(q_of_qrels, np.diff(qrels.offsets))
        keep = seg >= 0
        return cls(seg[keep], qrels.doc_codes[keep], qrels.grades[keep], max(len(qrels.doc_ids), 1))

    def lookup(self, query: IntArray, code: IntArray) -> tuple[BoolArray, IntArray]:
        """(found, grade) for (query, qrels doc code) pairs."""
        if len(self.code) == 0 or len(query) == 0:
            return np.zeros(len(query), dtype=bool), np.zeros(len(query), dtype=np.int64)
        # Most documents are judged for one query only: a table indexed by document settles
        # those pairs; documents judged for several queries go through a binary search.
        owner = np.full(self.width, -1, dtype=np.int64)
        owner[self.code] = self.query
        owner_grade = np.zeros(self.width, dtype=np.int64)
        owner_grade[self.code] = self.grade
        found = owner[code] == query
        grade = owner_grade[code]
        several = np.flatnonzero(np.bincount(self.code, minlength=self.width)[code] > 1)
        if len(several):
            keys = self.query * self.width + self.code
            order = np.argsort(keys, kind="stable")
            sorted_keys = keys[order]
            wanted = query[several] * self.width + code[several]
            pos = np.minimum(np.searchsorted(sorted_keys, wanted), len(sorted_keys) - 1)
            found[several] = sorted_keys[pos] == wanted
            grade[several] = self.grade[order[pos]]
        return found, grade


def _rows_from_run(
    run: Run, judgments: _Judgments, qrels: Qrels, position: Mapping[str, int], n: int
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """(query, rank, grade) of judged retrieved rows, and num_retrieved per query."""
    q_of_run = np.fromiter(
        (position.get(q, -1) for q in run.query_ids.tolist()), dtype=np.int64, count=len(run)
    )
    num_retrieved = np.zeros(n, dtype=np.int64)
    evaluated = q_of_run >= 0
    num_retrieved[q_of_run[evaluated]] = np.diff(run.offsets)[evaluated]
    # Map the run's vocabulary once (only the codes it uses when it is larger than the run).
    if len(run.doc_ids) > len(run.doc_codes):
        used, entry_vocab = np.unique(run.doc_codes, return_inverse=True)
        vocab_code = _vocabulary_map(run.doc_ids[used], qrels)
    else:
        entry_vocab = run.doc_codes
        vocab_code = _vocabulary_map(run.doc_ids, qrels)
    _check_judged_ids_unique(vocab_code, qrels)
    # Only entries whose document is judged (for any query) can be rows; a boolean gather
    # finds them without an int64 array the size of the run.
    candidates = np.flatnonzero((vocab_code >= 0)[entry_vocab])
    entry_code = vocab_code[entry_vocab[candidates]]
    seg = np.searchsorted(run.offsets, candidates, side="right") - 1
    query = q_of_run[seg]
    keep = query >= 0
    if not keep.all():
        candidates, seg, query, entry_code = (
            candidates[keep],
            seg[keep],
            query[keep],
            entry_code[keep],
        )
    found, grade = judgments.lookup(query, entry_code)
    rank = (candidates - run.offsets[seg] + 1)[found]
    query, grade = query[found], grade[found]
    order = np.lexsort((rank, query))
    return query[order], rank[order], grade[order], num_retrieved


def _check_judged_ids_unique(vocab_code: IntArray, qrels: Qrels) -> None:
    """Refuse a run vocabulary naming one judged document twice (it would count twice).

    Only :meth:`Run.from_arrays` can build such a vocabulary (from a doc id list with repeats);
    checking the judged names is cheap, checking all of them would not be.
    """
    judged = vocab_code[vocab_code >= 0]
    if len(np.unique(judged)) < len(judged):
        repeated = int(np.bincount(judged).argmax())
        raise DataFormatError(
            f"run: document id {str(qrels.doc_ids[repeated])!r} appears more than once in the "
            "run's document id list; document ids must be unique"
        )


def _has_string_ids(run: Mapping[str, Mapping[str, float]]) -> bool:
    """Whether every query id and every doc id is a string (as qrels ids are).

    Every key is looked at, in C (``map(type, ...)``): a fused run can mix ``"d7"`` and ``7``
    anywhere, and a non-string id that slipped through would never match its judgment.
    """
    if not set(map(type, run)) <= {str}:
        return False
    try:
        return set(map(type, chain.from_iterable(run.values()))) <= {str}
    except TypeError:
        return False  # a value that is not a mapping: Run.from_dict names it


def _rows_from_mapping(
    run: Mapping[str, Mapping[str, float]],
    qrels: Qrels,
    query_ids: StrArray,
) -> tuple[IntArray, IntArray, IntArray, IntArray]:
    """Like :func:`_rows_from_run` for ``{qid: {doc: score}}``, without building a Run.

    Only judged documents are looked up; their ranks are counted with numpy against the
    query's scores (trec_eval's rule: scores compared as float32, equal ones rank by doc id
    descending).
    """
    by_id = run
    n = len(query_ids)
    num_retrieved = np.zeros(n, dtype=np.int64)
    out_query: list[int] = []
    out_rank: list[int] = []
    out_grade: list[int] = []
    for i, qid in enumerate(query_ids.tolist()):
        docs = by_id.get(qid)
        if not docs:
            continue
        if not isinstance(docs, Mapping):
            raise DataFormatError(
                f"run: results of query {qid!r} must be a dict {{doc_id: score}}, got "
                f"{type(docs).__name__}"
            )
        num_retrieved[i] = len(docs)
        judged = qrels.judgments(qid)
        hits = [(doc, docs[doc], grade) for doc, grade in judged.items() if doc in docs]
        scores = ranking_key(score_array(qid, docs))
        if not hits:
            continue
        mine = ranking_key(np.asarray([h[1] for h in hits], dtype=np.float64))
        greater = (scores[None, :] > mine[:, None]).sum(axis=1)
        equal = (scores[None, :] == mine[:, None]).sum(axis=1)
        for j, (doc, _, grade) in enumerate(hits):
            position = int(greater[j]) + 1
            if equal[j] > 1:
                tied = (scores == mine[j]).tolist()
                position += sum(1 for d, t in zip(docs, tied, strict=True) if t and str(d) > doc)
            out_query.append(i)
            out_rank.append(position)
            out_grade.append(grade)
    rows_query = np.asarray(out_query, dtype=np.int64)
    rows_rank = np.asarray(out_rank, dtype=np.int64)
    rows_grade = np.asarray(out_grade, dtype=np.int64)
    order = np.lexsort((rows_rank, rows_query))
    return rows_query[order], rows_rank[order], rows_grade[order], num_retrieved


def rank_and_judge(
    qrels: Qrels,
    run: Run | Mapping[str, Mapping[str, float]],
    query_ids: StrArray,
    semantics: MetricSemantics,
) -> RankedJudgments:
    """Join ``run`` with ``qrels`` over ``query_ids`` into ranked judgments."""
    n = len(query_ids)
    position = {q: i for i, q in enumerate(query_ids.tolist())}
    judgments = _Judgments.build(qrels, position)
    relevant_grade = judgments.grade >= semantics.relevance_level
    num_relevant = np.bincount(judgments.query[relevant_grade], minlength=n).astype(np.int64)
    ideal_order = np.lexsort((-judgments.grade, judgments.query))
    ideal_query = judgments.query[ideal_order]
    ideal_grade = judgments.grade[ideal_order]
    ideal_rank = _positions(ideal_query, n) + 1
    if isinstance(run, Run):
        query, rank, grade, num_retrieved = _rows_from_run(run, judgments, qrels, position, n)
    else:
        query, rank, grade, num_retrieved = _rows_from_mapping(run, qrels, query_ids)
    return RankedJudgments(
        n_queries=n,
        query=query,
        rank=rank,
        grade=grade,
        num_relevant=num_relevant,
        num_retrieved=num_retrieved,
        ideal_query=ideal_query,
        ideal_rank=ideal_rank,
        ideal_grade=ideal_grade,
        gain=semantics.gain,
        relevance_level=semantics.relevance_level,
    )


# 2^grade - 1 must stay finite, also summed over every judged document of a query.
MAX_EXPONENTIAL_GRADE = 512


def _check_exponential_grades(qrels: Qrels) -> None:
    if not len(qrels.grades) or int(qrels.grades.max()) <= MAX_EXPONENTIAL_GRADE:
        return
    entry = int(np.argmax(qrels.grades))
    query = str(qrels.query_ids[int(np.searchsorted(qrels.offsets, entry, side="right") - 1)])
    doc = str(qrels.doc_ids[qrels.doc_codes[entry]])
    raise MetricError(
        f"grade {int(qrels.grades[entry])} of query {query!r}, document {doc!r} is too large "
        f"for exponential gain (2^grade - 1 overflows above {MAX_EXPONENTIAL_GRADE}); use "
        "linear gain or smaller grades"
    )


def evaluate(
    qrels: Qrels | Mapping[str, Mapping[str, int]],
    run: Run | Mapping[str, Mapping[str, float]],
    metrics: Iterable[str] | str = DEFAULT_METRICS,
    *,
    relevance_level: int = 1,
    gain: Gain = "linear",
    query_set: QuerySet = "qrels",
    ignore_identical_ids: bool = False,
    scores: str | None = None,
) -> Evaluation:
    """Evaluate ``run`` against ``qrels``; trec_eval's semantics by default (see METRICS.md).

    ``query_set="qrels"`` averages over every judged query, a query missing from the run
    scoring 0 (trec_eval ``-c``); ``"intersection"`` only over queries in both.
    ``ignore_identical_ids=True`` first removes every document whose id equals its query's id
    (BEIR's rule, :meth:`Run.without_identical_ids`); the semantics record it. ``scores``
    declares which way a dict run's scores point, as for :meth:`Run.from_dict` (a Run's are
    already higher-is-better).
    """
    semantics = MetricSemantics(relevance_level, gain, query_set, ignore_identical_ids)
    _check_level(relevance_level)
    specs = _retrieval_specs(metrics)
    qrels_obj = _as_qrels(qrels)
    if gain == "exponential":
        _check_exponential_grades(qrels_obj)
    # A query with no judgment at all (``{"q": {}}``) is not judged: trec_eval cannot read
    # one and pytrec_eval leaves it out, so it is neither averaged nor scored 0.
    has_judgments = np.diff(qrels_obj.offsets) > 0
    judged_ids = qrels_obj.query_ids[has_judgments]
    if len(judged_ids) == 0:
        raise DataFormatError("qrels are empty: there is nothing to evaluate against")
    notes: list[str] = []
    run, run_query_ids = _scored_run(run, scores, ignore_identical_ids, notes)
    if len(judged_ids) < len(qrels_obj):
        notes.append(
            f"{len(qrels_obj) - len(judged_ids)} qrels queries have no judgments and are left "
            f"out (e.g. {', '.join(qrels_obj.query_ids[~has_judgments][:5].tolist())})"
        )
    query_ids = _evaluated_query_ids(judged_ids, run_query_ids, query_set, notes)
    rj = rank_and_judge(qrels_obj, run, query_ids, semantics)
    details = {
        "first_relevant_rank": rj.first_relevant_rank,
        "num_relevant": rj.num_relevant,
        "num_retrieved": rj.num_retrieved,
        **_unjudged_counts(specs, rj),
    }
    return Evaluation(
        query_ids,
        tuple(s.name for s in specs),
        _metric_matrix(specs, rj, query_ids),
        "retrieval",
        semantics,
        details,
        notes + _coverage_notes(rj, relevance_level),
        _judged_only_means(specs, rj),
    )


def _scored_run(
    run: Run | Mapping[str, Mapping[str, float]],
    scores: str | None,
    ignore_identical_ids: bool,
    notes: list[str],
) -> tuple[Run | Mapping[str, Mapping[str, float]], StrArray]:
    """The run to score, its direction declared (:func:`_declared`), without the documents
    that are their own query with ``ignore_identical_ids`` (said in ``notes``), and its query
    ids."""
    run, run_query_ids = _run_and_its_ids(_declared(run, scores))
    if ignore_identical_ids:
        run = run if isinstance(run, Run) else Run.from_dict(run, scores="similarity")
        filtered = run.without_identical_ids()
        notes.append(
            f"ignore_identical_ids: {run.num_entries - filtered.num_entries} retrieved "
            "documents whose id equals their query's id were removed before scoring"
        )
        run = filtered
    return run, run_query_ids


_FIX = "evaluate(qrels, run, scores={kind!r})"


def _declared(
    run: Run | Mapping[str, Mapping[str, float]], scores: str | None
) -> Run | Mapping[str, Mapping[str, float]]:
    """A dict run whose scores point the way ``scores`` says, as the metrics read it: similarity
    dicts as they are (the fast path), distances and ranks as a Run (negated); undeclared
    (None), a dict whose order rises too regularly is refused (:func:`mapping_contradiction`).
    A Run is already higher-is-better: declaring it lower-is-better is an error."""
    kind = None if scores is None else check_score_kind(scores, "evaluate")
    if same_class(run, Run):
        run = Run.from_dict(run)  # ours, or a copy from another import of its module
        if kind not in (None, "similarity"):
            raise ConfigError(
                f"evaluate: scores={kind!r} is for a dict run; a Run's scores are already "
                "higher-is-better (declare the direction where the Run is built: "
                "Run.from_dict(..., scores=...), Run.from_arrays(..., kind=...))"
            )
        return run
    if kind is None:
        # Anything but a dict of dicts gives None here: _run_and_its_ids names what it is.
        found = mapping_contradiction(run)
        if found is not None:
            raise DataFormatError(undeclared_error(found, _FIX))
        return run
    return run if kind == "similarity" else run_from_dict(run, kind, fix=_FIX)


# Metrics that already set unjudged documents aside: no judged-only companion, no hole count.
HOLE_TOLERANT = frozenset({"bpref", "infap", "judged"})


def unjudged_detail(k: int | None) -> str:
    """The details key of the unjudged documents in the top ``k`` (all retrieved: None)."""
    return "unjudged" if k is None else f"unjudged_at_{k}"


def _unjudged_counts(specs: Sequence[MetricSpec], rj: RankedJudgments) -> dict[str, IntArray]:
    """Per query, the unjudged documents (grade -1 included) in the top k of each cutoff the
    metrics use (all retrieved documents for metrics without one)."""
    judged = rj.grade >= 0
    out: dict[str, IntArray] = {}
    for k in {s.k for s in specs if s.family not in HOLE_TOLERANT}:
        shown = rj.num_retrieved if k is None else np.minimum(rj.num_retrieved, k)
        in_top = judged if k is None else judged & (rj.rank <= k)
        out[unjudged_detail(k)] = (shown - rj.count(in_top).astype(np.int64)).astype(np.int64)
    return out


def _judged_only_means(specs: Sequence[MetricSpec], rj: RankedJudgments) -> dict[str, float]:
    """The mean of each built-in metric's judged-only form (what ``<metric>_judged`` gives),
    kept beside the plain metric to tell drops caused by unjudged documents from real ones."""
    out: dict[str, float] = {}
    condensed: RankedJudgments | None = None
    for spec in specs:
        family = families().get(spec.family)
        if (
            spec.judged_only
            or spec.family in HOLE_TOLERANT
            or family is None
            or family.function is not None
            or family.layer != "retrieval"
        ):
            continue
        condensed = condensed or rj.condensed
        column = _metric_values(spec, condensed)
        out[spec.name] = float(column.mean()) if len(column) else math.nan
    return out


def _retrieval_specs(metrics: Iterable[str] | str) -> list[MetricSpec]:
    """The parsed metrics; answer-layer ones are an error here."""
    specs = parse_metrics([metrics] if isinstance(metrics, str) else metrics)
    answer = [s.name for s in specs if s.layer != "retrieval"]
    if answer:
        raise MetricError(
            f"{', '.join(answer)} are answer-layer metrics; evaluate them from answer "
            "assessments (pytest_ragmetrics.evaluate_answers), not from a run"
        )
    return specs


def _run_and_its_ids(
    run: Run | Mapping[str, Mapping[str, float]],
) -> tuple[Run | Mapping[str, Mapping[str, float]], StrArray]:
    """The run (a Run when its ids are not all strings) and its query ids; empty is an error."""
    if isinstance(run, Mapping) and not _has_string_ids(run):
        # Converts ids with str() and checks for collisions; the direction is settled.
        run = Run.from_dict(run, scores="similarity")
    if isinstance(run, Run):
        run_query_ids = run.query_ids
    elif isinstance(run, Mapping):
        run_query_ids = as_str_array(list(run))
    else:
        raise DataFormatError(
            f"run must be a Run or a dict {{query_id: {{doc_id: score}}}}, got {type(run).__name__}"
        )
    if len(run_query_ids) == 0:
        raise DataFormatError("run is empty: it has no queries")
    return run, run_query_ids


def _evaluated_query_ids(
    judged_ids: StrArray, run_query_ids: StrArray, query_set: QuerySet, notes: list[str]
) -> StrArray:
    """The queries averaged over (``query_set``), with notes on the ones left out or scored 0."""
    in_run = np.isin(judged_ids, run_query_ids)
    missing = judged_ids[~in_run]
    extra = run_query_ids[~np.isin(run_query_ids, judged_ids)]
    if not in_run.any():
        # Every judged query scoring 0 under query_set="qrels" is a mean of nothing: ids
        # written two ways ("001" and "1") or the qrels of another dataset, not a system.
        raise DataFormatError(
            "run and qrels share no query ids (run e.g. "
            f"{run_query_ids[:3].tolist()}, qrels e.g. {judged_ids[:3].tolist()}); check how "
            "the ids are written (leading zeros, a prefix) and that the qrels are this dataset's"
        )
    if query_set == "intersection":
        query_ids = judged_ids[in_run]
    else:
        query_ids = judged_ids
        if len(missing):
            notes.append(
                f"{len(missing)} of {len(query_ids)} judged queries are missing from the run "
                f"and score 0 (e.g. {', '.join(missing[:5].tolist())})"
            )
    if len(extra):
        notes.append(
            f"{len(extra)} run queries have no judgments and are ignored "
            f"(e.g. {', '.join(extra[:5].tolist())})"
        )
    return query_ids


def _metric_matrix(
    specs: Sequence[MetricSpec], rj: RankedJudgments, query_ids: StrArray
) -> FloatArray:
    """queries x metrics; a registered metric's non-finite value is an error."""
    values = np.empty((rj.n_queries, len(specs)), dtype=np.float64)
    for j, spec in enumerate(specs):
        column = _metric_values(spec, rj.condensed if spec.judged_only else rj)
        if not np.isfinite(column).all():  # only a registered metric can do this
            bad = int(np.flatnonzero(~np.isfinite(column))[0])
            raise MetricError(
                f"registered metric {spec.name!r} returned {float(column[bad])!r} for query "
                f"{str(query_ids[bad])!r}; return a finite number for every query"
            )
        values[:, j] = column
    return values


def _check_level(relevance_level: int) -> None:
    """A MetricError for a negative level (the options refuse it too; a record read back keeps
    whatever level it holds, so MetricSemantics does not)."""
    if relevance_level < 0:
        raise MetricError(
            f"relevance_level must be 0 or more (trec_eval's -l), got {relevance_level}; "
            "negative grades (pooled but not judged) are never relevant"
        )


def _coverage_notes(rj: RankedJudgments, relevance_level: int) -> list[str]:
    """Notes on unjudged documents in the top 10 and queries without a relevant document."""
    notes: list[str] = []
    shown = int(np.minimum(rj.num_retrieved, 10).sum())
    unjudged = shown - int((rj.rank <= 10).sum())
    if unjudged:
        notes.append(
            f"{unjudged / shown:.1%} of the documents in the top 10 have no judgment "
            "(unjudged documents count as non-relevant, except in bpref, infap and "
            "<metric>_judged)"
        )
    no_relevant = int((rj.num_relevant == 0).sum())
    if no_relevant:
        notes.append(
            f"{no_relevant} queries have no relevant judgment at relevance level "
            f"{relevance_level}; their recall-type metrics are 0"
        )
    return notes
