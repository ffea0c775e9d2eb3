"""Score direction is declared, never assumed: distances through ``from_function`` (LangChain's
``similarity_search_with_score``) are an error with the default ``scores="similarity"``, and
with ``scores="distance"`` give the metrics of the hand-sorted run. The same rule holds for
runs built from rankings and arrays; dicts, whose order means nothing, are refused only when
their direction is undeclared and their order rises too regularly to be chance (the
LangChain-distance trap); TREC files keep trec_eval's rule, with a warning when their rank
column says the opposite."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics import Corpus, Queries, RetrieverError, evaluate, read_run
from pytest_ragmetrics.data.model import Run
from pytest_ragmetrics.errors import ConfigError, DataFormatError, ScoreOrderWarning
from pytest_ragmetrics.retrievers import from_function
from tests.helpers.plugin_project import make_project

RNG = np.random.default_rng(7)
DOCS = [f"d{i:02d}" for i in range(60)]
DOC_VECTORS = RNG.normal(size=(60, 8))
QUERY_VECTORS = DOC_VECTORS[RNG.choice(60, 20, replace=False)] + RNG.normal(0, 0.6, (20, 8))
QUERY_IDS = [f"q{i:02d}" for i in range(20)]
QUERIES = Queries.from_dict({q: q for q in QUERY_IDS})  # the text is the id
CORPUS = Corpus.from_dict({d: {"text": d} for d in DOCS})


def _distances(text: str) -> np.ndarray:
    vector = QUERY_VECTORS[QUERY_IDS.index(text)]
    distances: np.ndarray = np.linalg.norm(DOC_VECTORS - vector, axis=1)
    return distances


def similarity_search_with_score(text: str) -> list[tuple[str, float]]:
    """LangChain's FAISS.similarity_search_with_score: the 10 nearest, L2 distance ascending."""
    distances = _distances(text)
    nearest = np.argsort(distances, kind="stable")[:10]
    return [(DOCS[i], float(distances[i])) for i in nearest]


def _qrels() -> dict[str, dict[str, int]]:
    """The 3 nearest documents are relevant (grade 2, 1, 1)."""
    qrels = {}
    for qid in QUERY_IDS:
        nearest = np.argsort(_distances(qid), kind="stable")[:3]
        qrels[qid] = {DOCS[int(i)]: grade for i, grade in zip(nearest, (2, 1, 1), strict=True)}
    return qrels


HAND_SORTED = Run.from_rankings(
    {q: [doc for doc, _ in similarity_search_with_score(q)] for q in QUERY_IDS}
)


def test_distances_with_the_default_are_an_error_naming_the_function_and_the_fix() -> None:
    retriever = from_function(similarity_search_with_score, corpus=CORPUS)
    with pytest.raises(RetrieverError) as caught:
        retriever.search(QUERIES, 10)
    message = str(caught.value)
    assert "similarity_search_with_score" in message
    assert "ascending (lowest first) order for 20 of 20 queries" in message
    assert "scores='similarity' means higher is better" in message
    assert "from_function(..., scores='distance')" in message


def test_distances_declared_give_the_metrics_of_the_hand_sorted_run() -> None:
    retriever = from_function(similarity_search_with_score, corpus=CORPUS, scores="distance")
    run = retriever.search(QUERIES, 10)
    qrels = _qrels()
    declared = evaluate(qrels, run, ["ndcg_at_10", "mrr"]).mean
    hand = evaluate(qrels, HAND_SORTED, ["ndcg_at_10", "mrr"]).mean
    assert declared == pytest.approx(hand)
    assert declared["mrr"] == 1.0  # the nearest document is first, as it should be
    # What the silent re-sort gave: the same lists upside down score far lower.
    reversed_run = Run.from_rankings(
        {q: [d for d, _ in reversed(similarity_search_with_score(q))] for q in QUERY_IDS}
    )
    assert evaluate(qrels, reversed_run, ["ndcg_at_10"]).mean["ndcg_at_10"] < 0.6
    assert [d for d, _ in run.ranking("q00")] == [d for d, _ in HAND_SORTED.ranking("q00")]


@pytest.mark.parametrize("shape", ["dict", "batched", "with_k"])
def test_every_shape_of_result_follows_the_rule(shape: str) -> None:
    if shape == "dict":

        def search(text: str) -> dict[str, float]:
            return dict(similarity_search_with_score(text))

        batched = False
    elif shape == "batched":

        def search(texts: list[str]) -> list[list[tuple[str, float]]]:  # type: ignore[misc]
            return [similarity_search_with_score(t) for t in texts]

        batched = True
    else:

        def search(text: str, k: int) -> list[tuple[str, float]]:  # type: ignore[misc]
            return similarity_search_with_score(text)[:k]

        batched = False
    with pytest.raises(RetrieverError, match=r"scores='distance'"):
        from_function(search, batched=batched).search(QUERIES, 10)
    run = from_function(search, batched=batched, scores="distance").search(QUERIES, 10)
    assert run.to_dict().keys() == HAND_SORTED.to_dict().keys()
    for qid in QUERY_IDS:
        assert [d for d, _ in run.ranking(qid)] == [d for d, _ in HAND_SORTED.ranking(qid)]


def test_ranks_are_lower_is_better_too() -> None:
    def ranked(text: str) -> list[tuple[str, float]]:
        return [
            (doc, float(rank))
            for rank, (doc, _) in enumerate(similarity_search_with_score(text), 1)
        ]

    with pytest.raises(
        RetrieverError, match=r"if ranks \(1 = best\), from_function\(\.\.\., scores='rank'\)"
    ):
        from_function(ranked).search(QUERIES, 10)
    run = from_function(ranked, scores="rank").search(QUERIES, 10)
    assert [d for d, _ in run.ranking("q03")] == [d for d, _ in HAND_SORTED.ranking("q03")]


def test_similarities_declared_as_distances_are_an_error_too() -> None:
    def similarities(text: str) -> list[tuple[str, float]]:
        return [(doc, -distance) for doc, distance in similarity_search_with_score(text)]

    assert from_function(similarities).search(QUERIES, 10).ranking("q01")  # agrees: fine
    with pytest.raises(
        RetrieverError,
        match=r"descending order .* set from_function\(\.\.\., scores='similarity'\)",
    ):
        from_function(similarities, scores="distance").search(QUERIES, 10)


def test_unordered_results_and_a_minority_of_ascending_queries_are_ranked_by_score() -> None:
    def mostly_right(text: str) -> list[tuple[str, float]]:
        pairs = [(doc, -distance) for doc, distance in similarity_search_with_score(text)]
        if text in ("q00", "q01"):
            return pairs[::-1]  # 2 of 20 ascending: not "most queries"
        if text == "q02":
            return sorted(pairs)  # by doc id: no order to contradict
        return pairs

    run = from_function(mostly_right).search(QUERIES, 10)
    for qid in ("q00", "q02", "q05"):
        assert [d for d, _ in run.ranking(qid)] == [d for d, _ in HAND_SORTED.ranking(qid)]


def test_an_unknown_score_kind_is_a_config_error() -> None:
    with pytest.raises(
        ConfigError, match=r"scores='cosine' is not one of 'similarity', 'distance', 'rank'"
    ):
        from_function(similarity_search_with_score, scores="cosine")


def test_a_distance_dict_undeclared_is_refused_with_the_parameter_to_set() -> None:
    """LangChain's distances copied into {query: {doc: score}} in the order they came rise for
    every query: no arbitrary order does that, so each entry point refuses it, naming itself."""
    as_dict = {q: dict(similarity_search_with_score(q)) for q in QUERY_IDS}
    with pytest.raises(DataFormatError) as caught:
        Run.from_dict(as_dict)
    message = str(caught.value)
    assert "ascending (lowest first) order for 20 of 20 queries (e.g. 'q00': " in message
    assert "no direction was declared" in message
    assert "set Run.from_dict(results, scores='distance')" in message
    assert "Run.from_dict(results, scores='rank')" in message
    assert "say so: Run.from_dict(results, scores='similarity')" in message
    with pytest.raises(DataFormatError, match=r"evaluate\(qrels, run, scores='distance'\)"):
        evaluate(_qrels(), as_dict, ["ndcg_at_10"])
    # One query is enough when it holds 10 distinct scores (an arbitrary order: 1 in 10!).
    with pytest.raises(DataFormatError, match="for 1 of 1 queries"):
        Run.from_dict({"q00": as_dict["q00"]})


def test_a_declared_direction_is_honoured_for_dicts() -> None:
    qrels = _qrels()
    hand = evaluate(qrels, HAND_SORTED, ["ndcg_at_10", "mrr"]).mean
    as_dict = {q: dict(similarity_search_with_score(q)) for q in QUERY_IDS}
    for kind in ("distance", "rank"):
        declared = Run.from_dict(as_dict, scores=kind)
        assert [d for d, _ in declared.ranking("q04")] == [d for d, _ in HAND_SORTED.ranking("q04")]
    assert evaluate(
        qrels, Run.from_dict(as_dict, scores="distance"), ["ndcg_at_10", "mrr"]
    ).mean == (pytest.approx(hand))
    assert evaluate(qrels, as_dict, ["ndcg_at_10", "mrr"], scores="distance").mean == (
        pytest.approx(hand)
    )
    # scores="similarity" says the order means nothing: trusted, ranked by score descending.
    trusted = Run.from_dict(as_dict, scores="similarity")
    assert trusted.ranking("q00")[0][0] == HAND_SORTED.ranking("q00")[-1][0]  # farthest first
    assert evaluate(qrels, as_dict, ["ndcg_at_10"], scores="similarity").mean == (
        evaluate(qrels, trusted, ["ndcg_at_10"]).mean
    )
    # Faiss-shaped arrays carry no order: their direction is declared with kind=.
    pairs = {q: similarity_search_with_score(q) for q in QUERY_IDS}
    indices = np.array([[DOCS.index(d) for d, _ in pairs[q]] for q in QUERY_IDS])
    distances = np.array([[s for _, s in pairs[q]] for q in QUERY_IDS])
    arrays = Run.from_arrays(QUERY_IDS, indices, distances, DOCS, kind="distance")
    assert arrays.to_dict() == Run.from_dict(as_dict, scores="distance").to_dict()
    with pytest.raises(ConfigError, match=r"Run.from_arrays: scores='l2' is not one of"):
        Run.from_arrays(QUERY_IDS, indices, distances, DOCS, kind="l2")
    with pytest.raises(ConfigError, match=r"evaluate: scores='l2' is not one of"):
        evaluate(qrels, as_dict, ["ndcg_at_10"], scores="l2")
    with pytest.raises(ConfigError, match=r"scores='distance' is for a dict run"):
        evaluate(qrels, HAND_SORTED, ["ndcg_at_10"], scores="distance")


def _shuffled(rng: np.random.Generator, docs: dict[str, float]) -> dict[str, float]:
    items = list(docs.items())
    return dict(items[i] for i in rng.permutation(len(items)))


def test_dicts_in_an_arbitrary_order_are_never_refused() -> None:
    """pytrec_eval-style dicts: queries shuffled, sorted by doc id, built from a set, with
    ties, or too small to say anything (3 ascending entries happen 1 time in 6) rank by score
    whatever their order, as before."""
    rng = np.random.default_rng(0)
    as_dict = {q: dict(similarity_search_with_score(q)) for q in QUERY_IDS}
    by_score = Run.from_dict(as_dict, scores="similarity")
    shapes = {
        "shuffled": {q: _shuffled(rng, docs) for q, docs in as_dict.items()},
        "by doc id": {q: dict(sorted(docs.items())) for q, docs in as_dict.items()},
        "from a set": {q: {d: docs[d] for d in set(docs)} for q, docs in as_dict.items()},
        "small": {"q00": {"a": 0.1, "b": 0.2, "c": 0.3}},
        "pairs": {q: dict(list(docs.items())[:2]) for q, docs in as_dict.items()},
    }
    for name, shape in shapes.items():
        run = Run.from_dict(shape)  # no error
        evaluate(_qrels(), shape, ["ndcg_at_10"])
        if name not in ("small", "pairs"):
            assert run.to_dict() == by_score.to_dict(), name
    # Many random orders of many shapes, ties included: not one refused (the bound is 1e-6).
    for _ in range(2000):
        n_queries, depth = int(rng.integers(1, 30)), int(rng.integers(2, 15))
        values = rng.integers(0, int(rng.integers(2, 50)), size=(n_queries, depth)) / 7
        results = {
            f"q{i}": {f"d{j}": float(v) for j, v in enumerate(row)} for i, row in enumerate(values)
        }
        Run.from_dict(results)


def test_rankings_of_pairs_follow_the_rule() -> None:
    pairs = {q: similarity_search_with_score(q) for q in QUERY_IDS}
    with pytest.raises(DataFormatError, match=r"Run.from_rankings\(rankings, scores='distance'\)"):
        Run.from_rankings(pairs)
    declared = Run.from_rankings(pairs, scores="distance")
    assert [d for d, _ in declared.ranking("q07")] == [d for d, _ in HAND_SORTED.ranking("q07")]
    assert declared.ranking("q07")[0][1] == -pairs["q07"][0][1]  # distances are negated
    # Plain ids need no direction: best first, whatever scores= says.
    ids = Run.from_rankings({"q": ["a", "b", "c"]}, scores="distance")
    assert [d for d, _ in ids.ranking("q")] == ["a", "b", "c"]


def test_trec_files_keep_trec_evals_rule_and_warn_when_the_rank_column_disagrees(
    tmp_path: Path,
) -> None:
    path = tmp_path / "distances.trec"
    lines = [
        f"{q} Q0 {doc} {rank} {distance!r} faiss\n"
        for q in QUERY_IDS
        for rank, (doc, distance) in enumerate(similarity_search_with_score(q), 1)
    ]
    path.write_text("".join(lines))
    with pytest.warns(ScoreOrderWarning) as caught:
        run = read_run(path)
    message = str(caught[0].message)
    assert "from rank 1 down, the scores rise in 20 of 20 queries" in message
    assert "ranked by score descending (ties by document id)" in message
    assert "scores='distance'" in message
    # Read as trec_eval reads it: by score, descending (the file's order reversed).
    assert run.ranking("q00")[0][0] == HAND_SORTED.ranking("q00")[-1][0]
    same = tmp_path / "similarities.trec"
    same.write_text(
        "".join(
            f"{q} Q0 {doc} {rank} {-distance!r} faiss\n"
            for q in QUERY_IDS
            for rank, (doc, distance) in enumerate(similarity_search_with_score(q), 1)
        )
    )
    read_run(same)  # no warning: filterwarnings = error would fail here


def test_function_dicts_follow_the_dict_rule_pairs_the_ranking_rule() -> None:
    """A function's {doc: score} dicts carry no order: a few ascending entries are not
    refused, a declared direction is trusted whatever the order; its lists of pairs are
    rankings, refused when most run against the direction."""
    one = Queries.from_dict({"q00": "q00"})

    def small(text: str) -> dict[str, float]:
        return {"d01": 0.1, "d02": 0.2, "d03": 0.3}  # ascending by chance 1 time in 6

    run = from_function(small).search(one, 10)
    assert [d for d, _ in run.ranking("q00")] == ["d03", "d02", "d01"]

    def farthest_first(text: str) -> dict[str, float]:
        return dict(similarity_search_with_score(text)[::-1])  # distances, falling

    declared = from_function(farthest_first, scores="distance").search(QUERIES, 10)
    assert [d for d, _ in declared.ranking("q05")] == [d for d, _ in HAND_SORTED.ranking("q05")]

    def pairs(text: str) -> list[tuple[str, float]]:
        return [("d01", 0.1), ("d02", 0.2), ("d03", 0.3)]

    with pytest.raises(RetrieverError, match=r"retriever 'test_.*pairs' listed its scores"):
        from_function(pairs).search(one, 10)


def test_rag_eval_retrieval_refuses_a_distance_dict_and_takes_a_declaration(
    pytester: pytest.Pytester,
) -> None:
    make_project(
        pytester,
        tests="""
        # The toy dataset's queries, each document's distance, nearest (relevant) first.
        DISTANCES = {
            "q1": {"d1": 0.1, "d2": 0.5, "d3": 0.7, "d4": 0.8, "d5": 0.9},
            "q2": {"d2": 0.2, "d1": 0.4, "d3": 0.6, "d4": 0.7, "d5": 0.8},
            "q3": {"d3": 0.1, "d4": 0.3, "d1": 0.5, "d2": 0.6, "d5": 0.9},
            "q4": {"d5": 0.3, "d1": 0.4, "d2": 0.5, "d3": 0.6, "d4": 0.7},
        }

        def test_undeclared(rag_eval):
            rag_eval.retrieval(DISTANCES)

        def test_declared(rag_eval):
            assert rag_eval.retrieval(DISTANCES, scores="distance").mean["mrr"] == 1.0
        """,
    )
    result = pytester.runpytest("-p", "no:cacheprovider")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines(
        ["*ascending (lowest first) order for 4 of 4 queries*", "*test_undeclared*"]
    )
    assert "rag_eval.retrieval(run, scores='distance')" in result.stdout.str()
