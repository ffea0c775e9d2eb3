"""Parity with trec_eval's own expected outputs (tests/data/trec_eval, see its README.md).

Every per-query row and every ``all`` row of each measure that has a counterpart here is
compared, within 5e-5 (trec_eval prints four decimals). Each file is evaluated through the
three ways a run reaches the engine: a Run read from the file, a plain dict, and
``Run.from_arrays`` (the faiss shape, with -1 padding where queries are shorter).
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable
from typing import Any, Literal, NamedTuple

import numpy as np
import pytest

from pytest_ragmetrics import Evaluation, Qrels, Run, evaluate, parse_metric, read_qrels, read_run
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "trec_eval"
TOLERANCE = 5e-5

# trec_eval measure family -> our family (the measure's cutoff becomes _at_k).
_CUT_FAMILIES = {
    "P": "precision",
    "recall": "recall",
    "ndcg_cut": "ndcg",
    "map_cut": "map",
    "success": "hit_rate",
}
_UNCUT = {
    "ndcg": "ndcg",
    "map": "map",
    "recip_rank": "mrr",
    "Rprec": "r_precision",
    "bpref": "bpref",
    "infAP": "infap",
}


def our_name(measure: str) -> str | None:
    """Our metric name for a trec_eval measure, or None when we have no counterpart."""
    if measure in _UNCUT:
        return _UNCUT[measure]
    match = re.fullmatch(r"(P|recall|ndcg_cut|map_cut|success)_(\d+)", measure)
    if match is None:
        return None
    return f"{_CUT_FAMILIES[match.group(1)]}_at_{match.group(2)}"


def expected_rows(name: str) -> dict[str, dict[str, float]]:
    """measure -> query id (or 'all') -> value, for the measures we have."""
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (DATA / name).read_text().splitlines():
        measure, query, value = line.split()
        if our_name(measure) is not None:
            rows[measure][query] = float(value)
    return dict(rows)


def run_as_file_dict(name: str) -> dict[str, dict[str, float]]:
    """The run as a plain dict in file order (the rank column and extra columns ignored)."""
    run: dict[str, dict[str, float]] = {}
    for line in (DATA / name).read_text().splitlines():
        fields = line.split()
        run.setdefault(fields[0], {})[fields[2]] = float(fields[4])
    return run


def run_as_arrays(name: str) -> Run:
    """The run as a faiss-shaped result: positions into a corpus-like id list, -1 padded.

    Columns are shuffled (fixed seed) so that from_arrays has to sort and break ties itself.
    """
    run = read_run(DATA / name)
    qrels_docs = set(read_qrels(DATA / "qrels.test").doc_ids.tolist())
    corpus = sorted(qrels_docs | set(run.doc_ids.tolist()))
    position = {doc: i for i, doc in enumerate(corpus)}
    depth = int(run.depths().max())
    indices = np.full((len(run), depth), -1, dtype=np.int64)
    scores = np.full((len(run), depth), -np.inf)
    rng = np.random.default_rng(7)
    for i, qid in enumerate(run):
        ranking = run.ranking(qid)
        columns = rng.permutation(len(ranking))
        for column, (doc, score) in zip(columns, ranking, strict=True):
            indices[i, column] = position[doc]
            scores[i, column] = score
    return Run.from_arrays(list(run), indices, scores, corpus)


RunFactory = Callable[[str], Any]
RUN_FORMS: dict[str, RunFactory] = {
    "read_run": lambda name: read_run(DATA / name),
    "to_dict": lambda name: read_run(DATA / name).to_dict(),
    "file_dict": run_as_file_dict,
    "from_arrays": run_as_arrays,
}


class Case(NamedTuple):
    """One trec_eval output file and how to reproduce it."""

    qrels: str
    run: str
    query_set: Literal["qrels", "intersection"]
    relevance_level: int
    rows: int  # rows of mapped measures in the file, so a parse slip cannot compare nothing

    def evaluate(self, run: Any, metrics: list[str]) -> Evaluation:
        return evaluate(
            read_qrels(DATA / self.qrels),
            run,
            metrics,
            query_set=self.query_set,
            relevance_level=self.relevance_level,
        )


CASES = {
    "out.test": Case("qrels.test", "results.test", "intersection", 1, 13),
    "out.test.aq": Case("qrels.test", "results.test", "intersection", 1, 180),
    # qrels.rel_level has 304 grade -1 ("pooled but unjudged") entries, which bpref skips and
    # infAP counts as judged documents of unknown relevance.
    "out.test.aql": Case("qrels.rel_level", "results.test", "intersection", 2, 180),
    # trec_eval -c: every qrels query counts, a query missing from the run scores 0; that is
    # our default query_set="qrels".
    "out.test.aqc": Case("qrels.test", "results.trunc", "qrels", 1, 180),
    "out.test.meas_params": Case("qrels.test", "results.test", "intersection", 1, 44),
}


def _evaluate_case(output: str, form: str) -> tuple[dict[str, dict[str, float]], Evaluation]:
    case = CASES[output]
    expected = expected_rows(output)
    names = sorted({name for name in map(our_name, expected) if name is not None})
    return expected, case.evaluate(RUN_FORMS[form](case.run), names)


@pytest.mark.parametrize("form", sorted(RUN_FORMS))
@pytest.mark.parametrize("output", sorted(CASES))
def test_every_row_matches_trec_eval(output: str, form: str) -> None:
    expected, evaluation = _evaluate_case(output, form)
    mismatches = []
    compared = 0
    for measure, by_query in expected.items():
        name = our_name(measure)
        assert name is not None
        for query, value in by_query.items():
            got = evaluation.mean[name] if query == "all" else evaluation.per_query[query][name]
            compared += 1
            if abs(got - value) > TOLERANCE:
                mismatches.append(f"{measure} {query}: trec_eval {value:.4f}, ours {got:.6f}")
    assert not mismatches, "\n".join(mismatches)
    assert compared == CASES[output].rows


def test_every_mapped_family_is_covered() -> None:
    """The files exercise every measure family the issue lists, so parity means something."""
    measures = set()
    for output in CASES:
        measures |= set(expected_rows(output))
    families = {re.sub(r"_\d+$", "", m) for m in measures}
    assert families == {
        "P",
        "recall",
        "ndcg",
        "ndcg_cut",
        "map",
        "map_cut",
        "recip_rank",
        "success",
        "Rprec",
        "bpref",
        "infAP",
    }
    # meas_params brings cutoffs that all_trec does not print.
    assert {"P_3", "P_7", "recall_2000", "ndcg_cut_23", "success_2", "success_20"} <= measures


def test_graded_file_has_grades_relevance_level_changes() -> None:
    """out.test.aql is only a real test of relevance_level if level 2 changes the numbers."""
    qrels = read_qrels(DATA / "qrels.rel_level")
    assert set(qrels.grades.tolist()) == {-1, 0, 1, 2, 3, 4}
    run = read_run(DATA / "results.test")
    at_1 = evaluate(qrels, run, ["map", "ndcg_at_10"], relevance_level=1).mean
    at_2 = evaluate(qrels, run, ["map", "ndcg_at_10"], relevance_level=2).mean
    assert at_1["map"] != at_2["map"]
    assert at_1["ndcg_at_10"] == at_2["ndcg_at_10"]  # nDCG ignores the level, like trec_eval


# pytrec_eval measure -> our metric, for the exact comparison below.
_PYTREC = {
    "P_5": "precision_at_5",
    "P_100": "precision_at_100",
    "recall_10": "recall_at_10",
    "recall_1000": "recall_at_1000",
    # = trec_eval's ndcg, as 10000 exceeds every ranking and judgment list; pytrec_eval's own
    # "ndcg" can hang after earlier calls (see test_metrics_properties.py).
    "ndcg_cut_10000": "ndcg",
    "ndcg_cut_10": "ndcg_at_10",
    "ndcg_cut_1000": "ndcg_at_1000",
    "map": "map",
    "map_cut_100": "map_at_100",
    "recip_rank": "mrr",
    "success_10": "hit_rate_at_10",
    "Rprec": "r_precision",
    "bpref": "bpref",
    "infAP": "infap",
}


@pytest.mark.parametrize("judged_only", [False, True], ids=["all", "judged_only"])
@pytest.mark.parametrize(("qrels_file", "level"), [("qrels.test", 1), ("qrels.rel_level", 2)])
def test_matches_pytrec_eval_to_full_precision(
    qrels_file: str, level: int, judged_only: bool
) -> None:
    """Four printed decimals cannot see every tie: in results.test the only tie that mixes a
    relevant and a non-relevant document (topic 301, ranks 67-68) moves AP by ~1e-5. The same
    files through pytrec_eval (trec_eval's code) must agree to 1e-12, also judged-only
    (``judged_docs_only_flag``, trec_eval -J) against our ``<metric>_judged``."""
    pytrec_eval = pytest.importorskip("pytrec_eval")
    qrels = read_qrels(DATA / qrels_file)
    run = read_run(DATA / "results.test")
    measures = {".".join(m.rsplit("_", 1)) if m[-1].isdigit() else m for m in _PYTREC}
    reference = pytrec_eval.RelevanceEvaluator(
        qrels.to_dict(), measures, relevance_level=level, judged_docs_only_flag=judged_only
    ).evaluate(run_as_file_dict("results.test"))
    suffix = "_judged" if judged_only else ""
    ours = evaluate(
        qrels,
        run,
        [name + suffix for name in _PYTREC.values()],
        relevance_level=level,
        query_set="intersection",
    ).per_query
    assert set(reference) == set(ours)
    for qid, values in reference.items():
        for measure, name in _PYTREC.items():
            got = ours[qid][name + suffix]
            assert got == pytest.approx(values[measure], abs=1e-12), (qid, measure)


def test_judged_only_changes_the_numbers_on_these_files() -> None:
    """The judged-only comparison above means something: results.test has unjudged documents
    (and qrels.rel_level grade -1 ones) above relevant ones, so -J moves map and P@100."""
    qrels = read_qrels(DATA / "qrels.rel_level")
    metrics = ["map", "precision_at_100", "infap", "bpref"]
    evaluation = evaluate(
        qrels, read_run(DATA / "results.test"), metrics + [f"{m}_judged" for m in metrics]
    )
    mean = evaluation.mean
    assert mean["map_judged"] > mean["map"]
    assert mean["precision_at_100_judged"] > mean["precision_at_100"]
    assert mean["infap_judged"] != pytest.approx(mean["infap"], abs=1e-4)
    # bpref skips unjudged and grade -1 documents anyway, so removing them changes nothing.
    assert mean["bpref_judged"] == mean["bpref"]


def test_judged_at_k_is_one_minus_trec_eval_unj() -> None:
    """judged_at_k = 1 - trec_eval's unj_k when every query retrieved at least k docs and no
    grade is negative (trec_eval counts a -1 grade as unjudged; we count any qrels entry as a
    judgment, like ir_measures' Judged@k; see METRICS.md)."""
    output = "out.test.aq"
    case = CASES[output]
    rows: dict[str, dict[str, float]] = defaultdict(dict)
    for line in (DATA / output).read_text().splitlines():
        measure, query, text = line.split()
        if measure.startswith("unj_"):
            rows[measure][query] = float(text)
    assert set(rows) == {"unj_5", "unj_10", "unj_20"}
    evaluation = case.evaluate(
        read_run(DATA / case.run), [f"judged_at_{m.split('_')[1]}" for m in rows]
    )
    for measure, by_query in rows.items():
        name = f"judged_at_{measure.split('_')[1]}"
        for query, value in by_query.items():
            got = evaluation.mean[name] if query == "all" else evaluation.per_query[query][name]
            assert abs(got - (1 - value)) <= TOLERANCE, (measure, query)


@pytest.mark.parametrize("output", ["out.test.aq", "out.test.aqc"])
def test_relevant_and_retrieved_counts_match_trec_eval(output: str) -> None:
    """details num_relevant / num_retrieved are trec_eval's num_rel / num_ret per query."""
    case = CASES[output]
    rows: dict[str, dict[str, int]] = defaultdict(dict)
    for line in (DATA / output).read_text().splitlines():
        measure, query, text = line.split()
        if measure in {"num_rel", "num_ret"} and query != "all":
            rows[measure][query] = int(text)
    evaluation = case.evaluate(read_run(DATA / case.run), ["map"])
    ids = evaluation.query_ids.tolist()
    assert (
        dict(zip(ids, evaluation.details["num_relevant"].tolist(), strict=True)) == rows["num_rel"]
    )
    assert (
        dict(zip(ids, evaluation.details["num_retrieved"].tolist(), strict=True)) == rows["num_ret"]
    )


def test_truncated_run_file_is_read_like_trec_eval() -> None:
    """results.trunc: topic 302 absent, junk columns after the tag, ranks not in order."""
    run = read_run(DATA / "results.trunc")
    assert list(run) == ["301", "303"]
    assert run.depths().tolist() == [500, 84]
    qrels = read_qrels(DATA / "qrels.test")
    default = evaluate(qrels, run, ["map"])
    intersection = evaluate(qrels, run, ["map"], query_set="intersection")
    assert default.query_ids.tolist() == ["301", "302", "303"]
    assert default.per_query["302"]["map"] == 0.0
    assert intersection.query_ids.tolist() == ["301", "303"]
    assert default.mean["map"] == pytest.approx(intersection.mean["map"] * 2 / 3)
    assert any("302" in note for note in default.notes)


@pytest.mark.parametrize(
    ("trec", "ours"),
    [
        ("P_5", "precision_at_5"),
        ("P.5", "precision_at_5"),
        ("recall_1000", "recall_at_1000"),
        ("ndcg_cut_10", "ndcg_at_10"),
        ("ndcg_cut.10", "ndcg_at_10"),
        ("map_cut_100", "map_at_100"),
        ("recip_rank", "mrr"),
        ("success_1", "hit_rate_at_1"),
        ("Rprec", "r_precision"),
        ("ndcg", "ndcg"),
        ("map", "map"),
        ("bpref", "bpref"),
        ("infAP", "infap"),
    ],
)
def test_trec_eval_spellings_are_accepted(trec: str, ours: str) -> None:
    assert parse_metric(trec).name == ours
    assert our_name(trec.replace(".", "_")) == ours


def test_qrels_test_has_no_duplicate_or_empty_queries() -> None:
    """Guards the fixture itself: three topics, each with judged and relevant documents."""
    qrels = read_qrels(DATA / "qrels.test")
    assert isinstance(qrels, Qrels)
    assert list(qrels) == ["301", "302", "303"]
    assert qrels.num_relevant().tolist() == [474, 77, 10]
