"""The tau study script (benchmarks/testset_tau.py) on a small fixture: lexical systems over the
small test-set corpus, its human-like qrels and a generated set."""

from __future__ import annotations

import importlib.util
import io
import json
import math
import sys
from contextlib import redirect_stdout
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from pytest_ragmetrics.cli import main as ragmetrics
from tests.helpers.paths import REPO
from tests.helpers.testset_data import documents, write_corpus

SCRIPT = REPO / "benchmarks" / "testset_tau.py"


@pytest.fixture(scope="module")
def tau() -> ModuleType:
    spec = importlib.util.spec_from_file_location("testset_tau", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["testset_tau"] = module
    spec.loader.exec_module(module)
    return module


def _human(tmp_path: Path) -> Path:
    """Human-like queries: a topic word and a measurement, each judged against its document."""
    human = write_corpus(tmp_path / "human")
    (human / "qrels").mkdir()
    queries = {f"h{i}": d["text"].split(".")[1] for i, d in enumerate(documents())}
    (human / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    (human / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n"
        + "".join(f"h{i}\t{d['_id']}\t1\n" for i, d in enumerate(documents()))
    )
    return human


@pytest.mark.parametrize(
    ("a", "b", "expected"),
    [
        ([1, 2, 3, 4], [10, 20, 30, 40], 1.0),
        ([1, 2, 3, 4], [4, 3, 2, 1], -1.0),
        ([1, 2, 3], [1, 3, 2], 1 / 3),
        ([1, 1, 2], [1, 2, 3], 2 / 6**0.5),  # tau-b: a tie in one list only
    ],
)
def test_kendall_tau(tau: ModuleType, a: list[float], b: list[float], expected: float) -> None:
    assert tau.kendall_tau(a, b) == pytest.approx(expected)


def test_rrf_sums_reciprocal_ranks(tau: ModuleType) -> None:
    from pytest_ragmetrics.data.model import Run

    one = Run.from_dict({"q": {"a": 3.0, "b": 2.0}})
    two = Run.from_dict({"q": {"b": 9.0, "c": 1.0}})
    fused = tau.rrf([one, two], k=60)
    assert [d for d, _ in fused.ranking("q")] == ["b", "a", "c"]
    assert fused.ranking("q")[0][1] == pytest.approx(1 / 62 + 1 / 61)


def test_the_study_on_a_small_fixture(tau: ModuleType, tmp_path: Path) -> None:
    human = _human(tmp_path)
    generated = tmp_path / "offline"
    out = io.StringIO()
    code = ragmetrics(
        ["generate", "--corpus", str(human), "--out", str(generated), "--queries", "12"], out=out
    )
    assert code == 0, out.getvalue()
    figures = tmp_path / "tau.json"
    printed = io.StringIO()
    with redirect_stdout(printed):
        tau.main(
            ["--human", str(human), "--generated", f"offline={generated}", "--systems",
             "bm25,bm25-k0.9-b0.4,bm25-nostem,bm25-title", "--json", str(figures)]
        )  # fmt: skip
    result = json.loads(figures.read_text())
    assert result["systems"] == ["bm25", "bm25-k0.9-b0.4", "bm25-nostem", "bm25-title"]
    kept = json.loads((generated / "dataset.json").read_text())["provenance"]["queries"]
    assert result["queries"] == {"human": 24, "offline": kept} and kept >= 10
    for label in ("human", "offline"):
        for system in result["systems"]:
            assert set(result["scores"][label][system]) == {"ndcg_at_10", "recall_at_100"}
    tau_value = result["tau"]["offline"]["ndcg_at_10"]
    assert math.isnan(tau_value) or -1.0 <= tau_value <= 1.0  # NaN: every system tied
    assert f"ndcg_at_10 {tau_value:.3f}" in printed.getvalue()
    assert "| bm25-title |" in printed.getvalue()


def test_a_set_from_another_corpus_is_refused(tau: ModuleType, tmp_path: Path) -> None:
    from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries

    def dataset(text: str) -> Dataset:
        return Dataset(
            Corpus(["d"], [""], [text]), Queries(["q"], ["x"]), Qrels.from_dict({"q": {"d": 1}})
        )

    with pytest.raises(SystemExit, match="generated from another corpus"):
        tau.study(dataset("a"), {"gen": dataset("b")}, ["bm25", "bm25-title"], None)


def test_a_set_with_its_own_corpus_copy_is_evaluated_on_the_copy(
    tau: ModuleType, tmp_path: Path
) -> None:
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.metrics.retrieval import evaluate
    from pytest_ragmetrics.retrievers.bm25 import BM25Retriever

    human = _human(tmp_path)
    cut = tmp_path / "cut"
    code = ragmetrics(
        ["generate", "--corpus", str(human), "--out", str(cut), "--queries", "10", "--styles",
         "sentence", "--remove-query", "1"], out=io.StringIO(),
    )  # fmt: skip
    assert code == 0
    figures = tmp_path / "tau.json"
    with redirect_stdout(io.StringIO()):
        tau.main(
            ["--human", str(human), "--generated", f"cut={cut}", "--systems", "bm25,bm25-title",
             "--json", str(figures)]
        )  # fmt: skip
    result = json.loads(figures.read_text())
    data = load_dataset(cut)

    def ndcg(corpus: object) -> float:
        run = BM25Retriever(corpus).search(data.queries, 100)
        return round(float(evaluate(data.qrels, run, ["ndcg_at_10"]).mean["ndcg_at_10"]), 4)

    human_corpus = load_dataset(human).corpus
    assert result["scores"]["cut"]["bm25"]["ndcg_at_10"] == ndcg(data.corpus)
    assert ndcg(data.corpus) < ndcg(human_corpus)  # the words left with the sentence
    # The copy must be the one dataset.json describes.
    lines = (cut / "corpus.jsonl").read_text().splitlines()
    (cut / "corpus.jsonl").write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(SystemExit, match=r"not the copy its dataset\.json describes"):
        tau.main(
            ["--human", str(human), "--generated", f"cut={cut}", "--systems", "bm25,bm25-title"]
        )


def test_bootstrap_taus_are_seeded_and_spread_with_noise(tau: ModuleType) -> None:
    import numpy as np

    steady = np.tile([0.9, 0.6, 0.3], (50, 1))  # every query orders the systems alike
    assert set(tau.bootstrap_taus(steady, [3, 2, 1], rounds=20)) == {1.0}
    noisy = np.random.default_rng(1).random((12, 3)) + np.array([0.1, 0.05, 0.0])
    first = tau.bootstrap_taus(noisy, [3, 2, 1], rounds=200)
    assert first == tau.bootstrap_taus(noisy, [3, 2, 1], rounds=200)
    found = tau.spread(first)
    assert found["p05"] < found["mean"] < found["p95"] and found["p05"] < 1.0


def test_dense_over_a_copy_reuses_the_unchanged_embeddings(tau: ModuleType) -> None:
    pytest.importorskip("sentence_transformers")
    import numpy as np

    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.retrievers.dense import DenseRetriever

    base = Corpus.from_dict({d["_id"]: d["text"] for d in documents()[:6]})
    texts = list(base.texts)
    texts[2] = "A different text about glaciers melting."
    copy = Corpus(base.doc_ids, base.titles, texts)
    patched = tau.dense_retriever(copy, base, None, None, "dense")
    fresh = DenseRetriever(copy).corpus_embeddings()
    assert np.allclose(patched.corpus_embeddings(), fresh, atol=1e-5)
    assert not np.allclose(
        patched.corpus_embeddings()[2], DenseRetriever(base).corpus_embeddings()[2]
    )


def test_tau_over_a_subset_and_per_style_over_seeds(tau: ModuleType) -> None:
    import numpy as np

    names = ["bm25", "bm25-k0.9-b0.4", "bm25-title", "dense"]
    human = {"bm25": 0.4, "bm25-k0.9-b0.4": 0.3, "bm25-title": 0.1, "dense": 0.5}
    # seed 0 swaps bm25 and dense; seed 1 agrees everywhere but on the titles-only system
    seeds = [
        {"bm25": 0.5, "bm25-k0.9-b0.4": 0.3, "bm25-title": 0.0, "dense": 0.4},
        {"bm25": 0.4, "bm25-k0.9-b0.4": 0.3, "bm25-title": 0.35, "dense": 0.5},
    ]
    table = {"human": {s: dict.fromkeys(tau.METRICS, human[s]) for s in names}}
    for i, scores in enumerate(seeds):
        table[f"title-cut-{i}"] = {s: dict.fromkeys(tau.METRICS, scores[s]) for s in names}
    values = {
        label: {m: np.array([[by[s][m] for s in names]] * 3) for m in tau.METRICS}
        for label, by in table.items()
    }
    found, spreads = tau.taus_over(names, ["bm25", "bm25-k0.9-b0.4", "dense"], table, values)
    # two pairs agree, one is swapped
    assert found["title-cut-0"]["ndcg_at_10"] == pytest.approx(1 / 3, abs=1e-4)
    assert found["title-cut-1"]["ndcg_at_10"] == 1.0
    assert spreads["human"]["ndcg_at_10"]["mean"] == 1.0  # identical rows: no noise
    every, _ = tau.taus_over(names, names, table, values)
    # five of six pairs agree
    assert every["title-cut-1"]["recall_at_100"] == pytest.approx(2 / 3, abs=1e-4)
    styles = tau.by_style(every)
    assert list(styles) == ["title-cut"]
    ndcg = styles["title-cut"]["ndcg_at_10"]
    assert ndcg["seeds"] == 2 and ndcg["least"] == every["title-cut-0"]["ndcg_at_10"]
    assert ndcg["mean"] == pytest.approx(
        (every["title-cut-0"]["ndcg_at_10"] + every["title-cut-1"]["ndcg_at_10"]) / 2, abs=1e-4
    )
    assert tau.by_style({"one-0": {"ndcg_at_10": 1.0, "recall_at_100": 1.0}}) == {}


def test_pooled_tau_orders_the_scores_averaged_over_seeds(tau: ModuleType) -> None:
    names = ["bm25", "dense", "bm25-title"]
    human = {"bm25": 0.5, "dense": 0.4, "bm25-title": 0.1}
    # each seed swaps one pair by noise; averaged, only the bias (dense over bm25) is left
    seeds = [
        {"bm25": 0.45, "dense": 0.50, "bm25-title": 0.0},
        {"bm25": 0.44, "dense": 0.46, "bm25-title": 0.5},
        {"bm25": 0.45, "dense": 0.47, "bm25-title": 0.0},
    ]
    table = {"human": {s: dict.fromkeys(tau.METRICS, human[s]) for s in names}}
    for i, scores in enumerate(seeds):
        table[f"title-{i}"] = {s: dict.fromkeys(tau.METRICS, scores[s]) for s in names}
    table["single-0"] = table["human"]
    pooled = tau.pooled_by_style(table, names)
    assert list(pooled) == ["title"]  # one seed is not pooled
    # means: bm25 0.4467, dense 0.4767, titles 0.1667: one pair of three swapped
    assert pooled["title"]["ndcg_at_10"] == pytest.approx(1 / 3, abs=1e-4)
    # over bm25 and titles only, the averaged scores agree with the human order
    assert tau.pooled_by_style(table, ["bm25", "bm25-title"])["title"]["recall_at_100"] == 1.0


def test_wording_measures_overlap_and_other_forms(tau: ModuleType) -> None:
    pytest.importorskip("Stemmer")
    from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries

    corpus = Corpus(
        ["d1", "d2"],
        ["", ""],
        ["Mutations of genes were found in mice.", "Rats were tested for anemia."],
    )
    queries = Queries.from_dict({"same": "mutations in mice", "other": "a mutation in rats"})
    qrels = Qrels.from_dict({"same": {"d1": 1, "d2": 0}, "other": {"d1": 1}})
    found = tau.wording(Dataset(corpus, queries, qrels))
    # "same": both words held as written (overlap 1, other forms 0); "other": d1 holds
    # "mutation" only as "mutations" (1 of 1 stem match in another form) and "rats" not at all
    # (overlap 0); d2 is judged 0 and does not count
    assert found["other_forms"] == pytest.approx((0 + 1) / 2)
    assert found["overlap"] == pytest.approx((1 + 0) / 2)


def test_merge_reports_several_runs_as_one(tau: ModuleType, tmp_path: Path) -> None:
    names = ["bm25", "dense", "bm25-title"]
    human = {"bm25": 0.5, "dense": 0.4, "bm25-title": 0.1}

    def run(seeds: dict[str, dict[str, float]], by_human: dict[str, float]) -> dict[str, Any]:
        table = {"human": {s: dict.fromkeys(tau.METRICS, by_human[s]) for s in names}}
        table |= {
            label: {s: dict.fromkeys(tau.METRICS, v[s]) for s in names}
            for label, v in seeds.items()
        }
        tau_of = {
            label: {
                m: tau.kendall_tau([by_human[s] for s in names], [v[s] for s in names])
                for m in tau.METRICS
            }
            for label, v in seeds.items()
        }
        return {
            "systems": names,
            "scores": table,
            "tau": tau_of,
            "queries": dict.fromkeys(table, 10),
            "wording": {},
            "bootstrap": {},
            "subsets": {},
        }

    first = run({"title-0": {"bm25": 0.45, "dense": 0.50, "bm25-title": 0.0}}, human)
    second = run({"title-1": {"bm25": 0.44, "dense": 0.42, "bm25-title": 0.0}}, human)
    merged = tau.merge([first, second])
    assert set(merged["tau"]) == {"title-0", "title-1"}
    # one run alone has one seed of the style: nothing pooled; merged, the means put dense
    # (0.46) above bm25 (0.445): one of three pairs swapped
    assert first["tau"] and tau.pooled_by_style(first["scores"], names) == {}
    assert merged["pooled"]["title"]["ndcg_at_10"] == pytest.approx(1 / 3, abs=1e-4)
    with pytest.raises(SystemExit, match="title-0 in two runs"):
        tau.merge([first, first])
    other = run({"title-2": {"bm25": 0.4, "dense": 0.5, "bm25-title": 0.0}}, human | {"bm25": 0.6})
    with pytest.raises(SystemExit, match="differ in their systems or human scores"):
        tau.merge([first, other])
    paths = []
    for i, result in enumerate((first, second)):
        paths += ["--merge", str(tmp_path / f"{i}.json")]
        (tmp_path / f"{i}.json").write_text(json.dumps(result))
    assert tau.main([*paths, "--json", str(tmp_path / "all.json")]) == 0
    assert json.loads((tmp_path / "all.json").read_text())["pooled"] == merged["pooled"]
    with pytest.raises(SystemExit, match="give no --human"):
        tau.main([*paths, "--human", "x"])
