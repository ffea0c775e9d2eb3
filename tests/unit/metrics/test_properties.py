"""Property tests of the metric engine (hypothesis), with pytrec_eval as the reference.

Random instances have few distinct scores (so ties are everywhere), graded judgments from -1
to 3, holes (retrieved documents without a judgment), and queries that only the run or only
the qrels know. Example counts are modest so the
file runs in seconds; raise them with ``--hypothesis-profile`` settings if you need more.

The order of a run dict's entries means nothing, as in pytrec_eval's contract, with one
exception (data/scores.py): a dict whose direction is not declared and whose entries rise for
most queries, too regularly for an arbitrary order (chance below 1e-6), is refused as
distances given as similarities. Random instances and shuffles never come near that bound; a
test that builds its scores rising with the position (``float(i)``) declares
``scores="similarity"``, under which every order is accepted.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from pytest_ragmetrics import (
    AnswerAssessment,
    Claim,
    Evaluation,
    Qrels,
    Run,
    evaluate,
    evaluate_answers,
    read_run,
)
from pytest_ragmetrics.errors import DataFormatError

pytrec_eval = pytest.importorskip("pytrec_eval")

Gain = Literal["linear", "exponential"]
CUTOFFS = (1, 3, 5, 10)
# Our uncut ndcg is compared with pytrec_eval's ndcg_cut_1000, the same number whenever 1000
# exceeds every ranking and judgment list (it does here). pytrec_eval 0.5.11's own "ndcg"
# measure can spin forever in a process that evaluated earlier qrels with negative grades
# (seen with hypothesis seed 1; it re-installs that measure's gain parameters on every call);
# trec_eval's expected outputs cover "ndcg" itself in test_trec_parity.py.
# our metric -> pytrec_eval's output key
REFERENCE_NAMES = {
    "ndcg": "ndcg_cut_1000",
    "map": "map",
    "mrr": "recip_rank",
    "r_precision": "Rprec",
    **{f"ndcg_at_{k}": f"ndcg_cut_{k}" for k in CUTOFFS},
    **{f"map_at_{k}": f"map_cut_{k}" for k in CUTOFFS},
    **{f"precision_at_{k}": f"P_{k}" for k in CUTOFFS},
    **{f"recall_at_{k}": f"recall_{k}" for k in CUTOFFS},
    **{f"hit_rate_at_{k}": f"success_{k}" for k in CUTOFFS},
}
REFERENCE_MEASURES = {
    "map",
    "recip_rank",
    "Rprec",
    f"ndcg_cut.{','.join(map(str, CUTOFFS))},1000",
} | {f"{family}.{','.join(map(str, CUTOFFS))}" for family in ("map_cut", "P", "recall", "success")}
# The metrics that tolerate holes, compared in tests of their own: see _nonempty_rankings.
HOLE_NAMES = {"bpref": "bpref", "infap": "infAP"}
OURS_ONLY = [f"{f}_at_{k}" for f in ("recall_cap", "judged", "mrr") for k in CUTOFFS]
# Judged-only forms (trec_eval -J) of every metric that has one.
JUDGED = [
    f"{m}_judged"
    for m in [*REFERENCE_NAMES, *HOLE_NAMES, *OURS_ONLY]
    if not m.startswith("judged_")
]
ALL_METRICS = [*REFERENCE_NAMES, *HOLE_NAMES, *OURS_ONLY, *JUDGED]

# Doc ids whose byte order differs from naive expectations: d10 < d9, "Z" < "a" < "é".
DOC_IDS = ["d1", "d2", "d9", "d10", "d11", "a", "Z", "é", "a#1", "b-2", "D3", "x", "xx"]
QUERY_IDS = ["q1", "q2", "q3", "q4", "q5"]
# Few distinct values make ties common; negative and zero scores included. Some differ only
# beyond float32 precision (0.5 vs 0.5 + 1e-12, 1e8 vs 1e8 + 1) or lie beyond float32's range:
# trec_eval compares scores as float32, so those are ties too.
SCORES = (
    st.sampled_from([-1.0, 0.0, 0.25, 0.5, 0.5 + 1e-12, 0.5 - 1e-10, 1.0, 2.0])
    | st.sampled_from([1e8, 1e8 + 1, 1e8 + 4, 1e39, 2e39, -1e39])
    | st.floats(-5, 5)
)

EXAMPLES = settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Instance:
    qrels: dict[str, dict[str, int]]
    run: dict[str, dict[str, float]]


@st.composite
def instances(draw: st.DrawFn, min_queries: int = 1) -> Instance:
    """Qrels and a run over overlapping (not equal) query sets; ties and grades -1..3."""
    judged = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=min_queries, unique=True))
    ranked = draw(st.lists(st.sampled_from(QUERY_IDS), min_size=1, unique=True))
    qrels = {
        q: draw(
            st.dictionaries(
                st.sampled_from(DOC_IDS), st.integers(-1, 3), min_size=1, max_size=len(DOC_IDS)
            )
        )
        for q in judged
    }
    run = {
        q: draw(st.dictionaries(st.sampled_from(DOC_IDS), SCORES, max_size=len(DOC_IDS)))
        for q in ranked
    }
    return Instance(qrels, run)


def shared(instance: Instance) -> bool:
    return bool(set(instance.qrels) & set(instance.run))


def as_arrays(run: Mapping[str, Mapping[str, float]], seed: int = 0) -> Run:
    """The run in faiss's shape: a shuffled corpus-like id list, shuffled columns, -1 padding."""
    rng = np.random.default_rng(seed)
    vocabulary = [DOC_IDS[i] for i in rng.permutation(len(DOC_IDS))]
    position = {doc: i for i, doc in enumerate(vocabulary)}
    depth = max([len(docs) for docs in run.values()] + [1])
    indices = np.full((len(run), depth), -1, dtype=np.int64)
    scores = np.full((len(run), depth), np.nan)
    for row, docs in enumerate(run.values()):
        columns = rng.permutation(depth)[: len(docs)]
        for column, (doc, score) in zip(columns, docs.items(), strict=True):
            indices[row, column] = position[doc]
            scores[row, column] = score
    return Run.from_arrays(list(run), indices, scores, vocabulary)


def ours(instance: Instance, metrics: list[str], **options: Any) -> Evaluation:
    return evaluate(instance.qrels, instance.run, metrics, **options)


@given(instances(), st.sampled_from([1, 2]))
@EXAMPLES
def test_agrees_with_pytrec_eval(instance: Instance, level: int) -> None:
    assume(shared(instance))
    reference = pytrec_eval.RelevanceEvaluator(
        instance.qrels, REFERENCE_MEASURES, relevance_level=level
    ).evaluate(instance.run)
    evaluation = ours(
        instance, list(REFERENCE_NAMES), relevance_level=level, query_set="intersection"
    )
    assert set(evaluation.per_query) == set(reference)
    for qid, values in evaluation.per_query.items():
        for name, value in values.items():
            assert value == pytest.approx(reference[qid][REFERENCE_NAMES[name]], abs=1e-9), (
                qid,
                name,
            )


def _nonempty_rankings(instance: Instance) -> Instance:
    """The instance without empty rankings (``{"q": {}}``), for pytrec_eval's bpref.

    pytrec_eval 0.5.11 can crash (segfault) evaluating bpref after another measure on a query
    whose ranking is empty: trec_eval's te_form_res_rels records the query id in its cache
    before it fails on an empty list, so the next measure reads uninitialised cached
    judgments. trec_eval itself never sees an empty ranking (a query without lines is absent
    from a run file). Our values for empty rankings are covered by test_metrics.py.
    """
    return Instance(instance.qrels, {q: docs for q, docs in instance.run.items() if docs})


@given(instances(), st.sampled_from([1, 2, 3]))
@EXAMPLES
def test_bpref_and_infap_agree_with_pytrec_eval(instance: Instance, level: int) -> None:
    """bpref and infAP as trec_eval computes them: grade -1 is pooled but unjudged, grades
    below the level are judged non-relevant, retrieved documents without a judgment are holes."""
    instance = _nonempty_rankings(instance)
    assume(shared(instance))
    reference = pytrec_eval.RelevanceEvaluator(
        instance.qrels, set(HOLE_NAMES.values()), relevance_level=level
    ).evaluate(instance.run)
    evaluation = ours(instance, list(HOLE_NAMES), relevance_level=level, query_set="intersection")
    assert set(evaluation.per_query) == set(reference)
    for qid, values in evaluation.per_query.items():
        for name, value in values.items():
            assert value == pytest.approx(reference[qid][HOLE_NAMES[name]], abs=1e-9), (qid, name)


@given(instances(), st.sampled_from([1, 2]))
@EXAMPLES
def test_judged_only_agrees_with_pytrec_eval_judged_docs_only(
    instance: Instance, level: int
) -> None:
    """``<metric>_judged`` is pytrec_eval with ``judged_docs_only_flag=True`` (trec_eval -J):
    unjudged and grade -1 documents removed, ranks recomputed, ties kept in trec_eval's order."""
    instance = _nonempty_rankings(instance)
    assume(shared(instance))
    names = {**REFERENCE_NAMES, **HOLE_NAMES}
    reference = pytrec_eval.RelevanceEvaluator(
        instance.qrels,
        REFERENCE_MEASURES | set(HOLE_NAMES.values()),
        relevance_level=level,
        judged_docs_only_flag=True,
    ).evaluate(instance.run)
    evaluation = ours(
        instance,
        [f"{name}_judged" for name in names],
        relevance_level=level,
        query_set="intersection",
    )
    assert set(evaluation.per_query) == set(reference)
    for qid, values in evaluation.per_query.items():
        for name, value in values.items():
            expected = reference[qid][names[name.removesuffix("_judged")]]
            assert value == pytest.approx(expected, abs=1e-9), (qid, name)


def _without_unjudged(instance: Instance) -> dict[str, dict[str, float]]:
    """The run with every document lacking a non-negative grade for its query removed."""
    return {
        qid: {d: s for d, s in docs.items() if instance.qrels.get(qid, {}).get(d, -1) >= 0}
        for qid, docs in instance.run.items()
    }


@given(
    instances(),
    st.sampled_from([0, 1, 2]),
    st.sampled_from(["linear", "exponential"]),
    st.sampled_from(["qrels", "intersection"]),
)
@EXAMPLES
def test_judged_only_is_the_metric_on_the_run_without_unjudged_docs(
    instance: Instance, level: int, gain: Gain, query_set: str
) -> None:
    """The condensed list is the run filtered to judged documents (grade >= 0): every
    ``<metric>_judged`` equals ``<metric>`` evaluated on that filtered run, exactly, for the
    metrics pytrec_eval lacks too."""
    assume(shared(instance))
    options: dict[str, Any] = {"relevance_level": level, "gain": gain, "query_set": query_set}
    judged = ours(instance, JUDGED, **options)
    plain = evaluate(
        instance.qrels,
        _without_unjudged(instance),
        [m.removesuffix("_judged") for m in JUDGED],
        **options,
    )
    assert judged.query_ids.tolist() == plain.query_ids.tolist()
    np.testing.assert_array_equal(judged.values, plain.values)


@given(instances())
@EXAMPLES
def test_bpref_ignores_unjudged_documents(instance: Instance) -> None:
    """bpref reads judged documents only, so removing the unjudged ones changes nothing."""
    assume(shared(instance))
    with_holes = ours(instance, ["bpref", "bpref_judged"], query_set="intersection")
    without = evaluate(
        instance.qrels, _without_unjudged(instance), ["bpref"], query_set="intersection"
    )
    np.testing.assert_array_equal(with_holes.column("bpref"), without.column("bpref"))
    np.testing.assert_array_equal(with_holes.column("bpref"), with_holes.column("bpref_judged"))


@given(instances(), st.sampled_from([1, 2]))
@EXAMPLES
def test_infap_is_ap_within_epsilon_when_everything_retrieved_is_judged(
    instance: Instance, level: int
) -> None:
    """With no holes, infAP's estimated precision at each relevant document is the precision
    there, up to trec_eval's epsilon (1e-5): infAP = AP within 1e-4."""
    complete = Instance(instance.qrels, _without_unjudged(instance))
    assume(shared(complete))
    evaluation = ours(complete, ["infap", "map"], relevance_level=level)
    np.testing.assert_allclose(evaluation.column("infap"), evaluation.column("map"), atol=1e-4)


@given(
    instances(),
    st.sampled_from(["linear", "exponential"]),
    st.sampled_from(["qrels", "intersection"]),
)
@EXAMPLES
def test_dict_run_and_array_paths_agree_exactly(
    instance: Instance, gain: Gain, query_set: str
) -> None:
    assume(shared(instance))
    options: dict[str, Any] = {"gain": gain, "query_set": query_set}
    from_dict = ours(instance, ALL_METRICS, **options)
    from_run = evaluate(
        Qrels.from_dict(instance.qrels), Run.from_dict(instance.run), ALL_METRICS, **options
    )
    from_arrays = evaluate(instance.qrels, as_arrays(instance.run), ALL_METRICS, **options)
    for other in (from_run, from_arrays):
        assert other.query_ids.tolist() == from_dict.query_ids.tolist()
        np.testing.assert_array_equal(other.values, from_dict.values)
        assert other.notes == from_dict.notes


@given(instances(), st.sampled_from([0, 1, 2, 3]), st.sampled_from(["linear", "exponential"]))
@EXAMPLES
def test_every_metric_is_between_zero_and_one(instance: Instance, level: int, gain: Gain) -> None:
    assume(shared(instance))
    values = ours(instance, ALL_METRICS, relevance_level=level, gain=gain).values
    assert np.all((values >= 0) & (values <= 1))


@given(instances(), st.randoms(use_true_random=False))
@EXAMPLES
def test_invariant_to_the_order_of_run_lines(instance: Instance, rnd: Any) -> None:
    """Shuffling queries and the entries within each query changes nothing: order comes from
    scores and the tie rule only."""
    query_order = list(instance.run)
    rnd.shuffle(query_order)
    shuffled: dict[str, dict[str, float]] = {}
    for qid in query_order:
        items = list(instance.run[qid].items())
        rnd.shuffle(items)
        shuffled[qid] = dict(items)
    assume(shared(instance))
    before = ours(instance, ALL_METRICS)
    after = evaluate(instance.qrels, shuffled, ALL_METRICS)
    assert after.per_query == before.per_query
    assert Run.from_dict(shuffled).fingerprint == Run.from_dict(instance.run).fingerprint


def _rename(instance: Instance, mapping: Mapping[str, str]) -> Instance:
    return Instance(
        {q: {mapping[d]: g for d, g in docs.items()} for q, docs in instance.qrels.items()},
        {q: {mapping[d]: s for d, s in docs.items()} for q, docs in instance.run.items()},
    )


@given(instances())
@EXAMPLES
def test_invariant_to_order_preserving_renames_even_with_ties(instance: Instance) -> None:
    """Tied documents are ordered by id, so a renaming that keeps the byte order of ids keeps
    every tie's order too, and every value."""
    assume(shared(instance))
    by_bytes = sorted(DOC_IDS, key=lambda d: d.encode())
    mapping = {doc: f"n{i:03d}" for i, doc in enumerate(by_bytes)}
    renamed = _rename(instance, mapping)
    assert ours(renamed, ALL_METRICS).per_query == ours(instance, ALL_METRICS).per_query


@given(instances(), st.permutations(DOC_IDS))
@EXAMPLES
def test_any_consistent_rename_without_ties_changes_nothing(
    instance: Instance, shuffled_ids: list[str]
) -> None:
    """With distinct scores within each query, ids only identify documents; any consistent
    renaming gives the same values. (With ties it may not: the renamed ids can order a tie
    the other way, which is the documented tie rule at work, not a bug.)"""
    distinct = Instance(
        instance.qrels,
        {q: {d: float(i) for i, d in enumerate(docs)} for q, docs in instance.run.items()},
    )
    assume(shared(distinct))
    renamed = _rename(distinct, dict(zip(DOC_IDS, shuffled_ids, strict=True)))
    # Scores rising with the position, declared: the order of a dict means nothing.
    declared = {"scores": "similarity"}
    assert (
        ours(renamed, ALL_METRICS, **declared).per_query
        == ours(distinct, ALL_METRICS, **declared).per_query
    )


@given(instances(), st.sampled_from(["ascending", "descending"]))
@EXAMPLES
def test_a_declared_dict_may_come_in_any_order_an_undeclared_one_unless_it_rises(
    instance: Instance, order: str
) -> None:
    """Every query sorted by score, lowest or highest first: with ``scores="similarity"``
    declared, the same values as pytrec_eval's (which ignores the order); undeclared, the same
    values too, or, sorted lowest first, a DataFormatError naming ``scores=`` (the trap)."""
    assume(shared(instance))
    sign = 1 if order == "ascending" else -1
    sorted_run = {
        q: dict(sorted(docs.items(), key=lambda item: sign * item[1]))
        for q, docs in instance.run.items()
    }
    before = ours(instance, list(REFERENCE_NAMES), query_set="intersection").per_query
    declared = evaluate(
        instance.qrels,
        sorted_run,
        list(REFERENCE_NAMES),
        query_set="intersection",
        scores="similarity",
    )
    assert declared.per_query == before
    try:
        undeclared = evaluate(
            instance.qrels, sorted_run, list(REFERENCE_NAMES), query_set="intersection"
        )
    except DataFormatError as exc:
        assert order == "ascending"
        assert "evaluate(qrels, run, scores='distance')" in str(exc)
    else:
        assert undeclared.per_query == before


@given(instances(), st.sampled_from(["linear", "exponential"]), st.integers(0, 5))
@EXAMPLES
def test_perfect_ranking_has_ndcg_one(instance: Instance, gain: Gain, unjudged: int) -> None:
    """Judged docs by grade descending (then unjudged ones) give nDCG 1 at every cutoff, for
    every query with a positive grade."""
    run = {}
    for qid, docs in instance.qrels.items():
        best_first = sorted(docs, key=lambda d: -docs[d])
        extra = [d for d in DOC_IDS if d not in docs][:unjudged]
        ranking = best_first + extra
        run[qid] = {doc: float(len(ranking) - i) for i, doc in enumerate(ranking)}
    metrics = ["ndcg", *(f"ndcg_at_{k}" for k in CUTOFFS)]
    evaluation = evaluate(instance.qrels, run, metrics, gain=gain)
    for qid, values in evaluation.per_query.items():
        positive = max(instance.qrels[qid].values()) > 0
        for name, value in values.items():
            assert value == (pytest.approx(1.0) if positive else 0.0), (qid, name)


@given(instances(), st.sampled_from(["linear", "exponential"]), st.integers(1, 2))
@EXAMPLES
def test_adding_a_relevant_doc_at_the_top_never_lowers_recall_or_ndcg(
    instance: Instance, gain: Gain, level: int
) -> None:
    """Put a judged, unretrieved document with the query's highest grade (>= the relevance
    level) above everything retrieved: recall and nDCG (cut or not) cannot go down.

    The highest grade matters: inserting a grade-1 doc above a grade-3 one can lower nDCG@1.
    """
    assume(shared(instance))
    metrics = [m for m in ALL_METRICS if m.startswith(("recall", "ndcg"))] + ["recall_at_100"]
    before = ours(instance, metrics, gain=gain, relevance_level=level)
    improved = {q: dict(docs) for q, docs in instance.run.items()}
    changed = {}
    for qid, docs in instance.qrels.items():
        top_grade = max(docs.values())
        retrieved = improved.get(qid, {})
        candidates = [d for d, g in docs.items() if g == top_grade and d not in retrieved]
        # Strictly above the best score as trec_eval compares them (float32), so the new doc
        # is really first, not tied (impossible above float32's range: those queries are out).
        with np.errstate(over="ignore"):
            best = np.float32(max(retrieved.values(), default=0.0))
        if top_grade >= level and candidates and np.isfinite(best):
            top = float(np.nextafter(best, np.float32(np.inf)))
            improved[qid] = {candidates[0]: top, **retrieved}
            changed[qid] = candidates[0]
    assume(changed)
    run = Run.from_dict(improved)
    assert all(run.ranking(qid)[0][0] == doc for qid, doc in changed.items())
    after = evaluate(instance.qrels, run, metrics, gain=gain, relevance_level=level)
    for qid in changed:
        for name in metrics:
            assert after.per_query[qid][name] >= before.per_query[qid][name] - 1e-12, (qid, name)
        # Rankings are shorter than 100, so the new relevant doc is one more hit at 100.
        relevant = sum(g >= level for g in instance.qrels[qid].values())
        assert after.per_query[qid]["recall_at_100"] == pytest.approx(
            before.per_query[qid]["recall_at_100"] + 1 / relevant
        )


# Its rank column follows the dict's arbitrary order: when that happens to contradict the scores,
# read_run says so with a ScoreOrderWarning (tested in test_score_direction), and reads on.
@pytest.mark.filterwarnings("ignore::pytest_ragmetrics.errors.ScoreOrderWarning")
@given(instances(), st.randoms(use_true_random=False))
@EXAMPLES
def test_invariant_to_the_order_of_lines_in_a_trec_run_file(instance: Instance, rnd: Any) -> None:
    """The same run written as a TREC file with its lines shuffled (ranks column included, as
    trec_eval ignores it) evaluates exactly like the run itself. A file has no line for a query
    that retrieved nothing: one judged query must have retrieved something."""
    assume(any(instance.run.get(q) for q in instance.qrels))
    lines = [
        f"{qid} Q0 {doc} {rank} {score!r} tag\n"
        for qid, docs in instance.run.items()
        for rank, (doc, score) in enumerate(docs.items(), start=1)
    ]
    assume(lines)
    rnd.shuffle(lines)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "run.txt"
        path.write_text("".join(lines), encoding="utf-8")
        from_file = evaluate(instance.qrels, read_run(path), ALL_METRICS)
    expected = ours(instance, ALL_METRICS)
    assert from_file.query_ids.tolist() == expected.query_ids.tolist()
    np.testing.assert_array_equal(from_file.values, expected.values)


@st.composite
def assessments(draw: st.DrawFn) -> list[AnswerAssessment]:
    """Answers with supported / unsupported / unjudged claims and yes/no or ordinal relevance."""
    out = []
    for i in range(draw(st.integers(1, 6))):
        verdicts = draw(st.lists(st.sampled_from([True, False, None]), max_size=8))
        claims = tuple(Claim(f"claim {j}.", v) for j, v in enumerate(verdicts))
        scale = draw(st.sampled_from([None, (0, 1), (1, 5), (-2, 2)]))
        if scale is None:
            relevance: bool | int | None = draw(st.sampled_from([True, False, None]))
        else:
            relevance = draw(st.integers(*scale) | st.none())
        out.append(AnswerAssessment(f"q{i}", "answer", claims, relevance, scale))
    return out


@given(assessments())
@EXAMPLES
def test_answer_metrics_are_between_zero_and_one(items: list[AnswerAssessment]) -> None:
    """groundedness and answer_relevance lie in [0, 1]; they are NaN (not applicable) exactly
    when no claim was judged or relevance was not judged."""
    evaluation = evaluate_answers(items)
    for item in items:
        row = evaluation.per_query[item.query_id]
        for name, applicable in (
            ("groundedness", item.judged_claims > 0),
            ("answer_relevance", item.addresses_question is not None),
        ):
            value = row[name]
            if applicable:
                assert 0.0 <= value <= 1.0, (name, value)
            else:
                assert math.isnan(value), (name, value)
