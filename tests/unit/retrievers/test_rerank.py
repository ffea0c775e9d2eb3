"""RerankRetriever plumbing with a tiny, randomly initialised local cross-encoder.

No cross-encoder weights exist offline, so these tests check the mechanics only (which pairs
are scored, how the stages are assembled, caching); they make no claim about quality.
"""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics import Corpus, Queries
from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.encoders import default_model_path
from pytest_ragmetrics.errors import ConfigError, ReadOnlyOptionError, RetrieverError
from pytest_ragmetrics.progress import use_reporter
from pytest_ragmetrics.retrievers import (
    FIRST_STAGE,
    RERANKED,
    BM25Retriever,
    RerankRetriever,
    StagedRetriever,
    build_retriever,
    from_function,
)

pytest.importorskip("sentence_transformers")
pytest.importorskip("bm25s")

DOCS = {
    f"d{i}": {"title": f"Topic {i}", "text": f"Document {i} talks about bread, ovens and {w}."}
    for i, w in enumerate(["rye", "wheat", "yeast", "salt", "flour", "butter", "sugar", "water"])
}
QUERIES = {"q1": "bread with rye flour", "q2": "salt and butter in the oven"}
TOKENIZER_FILES = (
    "vocab.txt",
    "tokenizer.json",
    "tokenizer_config.json",
    "special_tokens_map.json",
)


def _tiny_cross_encoder(folder: Path, num_labels: int = 1) -> Path:
    import torch
    from transformers import BertConfig, BertForSequenceClassification

    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=30522,
        hidden_size=32,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=64,
        max_position_embeddings=512,
        num_labels=num_labels,
    )
    BertForSequenceClassification(config).save_pretrained(folder)
    for name in TOKENIZER_FILES:
        source = default_model_path() / name
        if source.exists():
            shutil.copy(source, folder / name)
    return folder


@pytest.fixture(scope="session")
def cross_encoder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return _tiny_cross_encoder(tmp_path_factory.mktemp("tiny-cross-encoder"))


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_dict(DOCS)


@pytest.fixture
def queries() -> Queries:
    return Queries.from_dict(QUERIES)


def _expected_logits(model_dir: Path, pairs: list[tuple[str, str]]) -> np.ndarray[Any, Any]:
    import torch
    from sentence_transformers import CrossEncoder

    model = CrossEncoder(str(model_dir), local_files_only=True)
    return np.asarray(model.predict(pairs, activation_fn=torch.nn.Identity()), dtype=np.float64)


def test_both_stages_are_returned_and_reranked_by_the_cross_encoder(
    cross_encoder: Path, corpus: Corpus, queries: Queries
) -> None:
    first_stage = BM25Retriever(corpus)
    reranker = RerankRetriever(first_stage, cross_encoder, rerank_k=5)
    assert isinstance(reranker, StagedRetriever)
    stages = reranker.search_stages(queries, 3)
    assert set(stages) == {FIRST_STAGE, RERANKED}
    first5 = first_stage.search(queries, 5)
    assert stages[FIRST_STAGE].fingerprint == first5.truncate(3).fingerprint
    passages = corpus.passages(" ")
    position = corpus.position
    for qid, text in QUERIES.items():
        candidates = [doc for doc, _ in first5.ranking(qid)]
        logits = _expected_logits(
            cross_encoder, [(text, passages[position[doc]]) for doc in candidates]
        )
        expected = sorted(zip(candidates, logits.tolist(), strict=True), key=lambda p: -p[1])[:3]
        got = stages[RERANKED].ranking(qid)
        assert [d for d, _ in got] == [d for d, _ in expected]
        np.testing.assert_allclose([s for _, s in got], [s for _, s in expected], atol=1e-5)
    assert reranker.pairs_scored == 10
    assert reranker.search(queries, 3).fingerprint == stages[RERANKED].fingerprint


def test_documents_below_rerank_k_follow_in_first_stage_order(
    cross_encoder: Path, corpus: Corpus, queries: Queries
) -> None:
    first_stage = BM25Retriever(corpus)
    stages = RerankRetriever(first_stage, cross_encoder, rerank_k=2).search_stages(queries, 6)
    first6 = first_stage.search(queries, 6)
    for qid in QUERIES:
        first_docs = [d for d, _ in first6.ranking(qid)]
        reranked = stages[RERANKED].ranking(qid)
        assert len(reranked) == 6
        assert {d for d, _ in reranked[:2]} == set(first_docs[:2])
        assert [d for d, _ in reranked[2:]] == first_docs[2:]
        assert reranked[1][1] > reranked[2][1]


def test_reranker_scores_are_cached(
    cross_encoder: Path, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    cache = Cache(tmp_path)
    first = RerankRetriever(BM25Retriever(corpus, cache=cache), cross_encoder, cache=cache)
    expected = first.search_stages(queries, 4)
    assert first.pairs_scored == 2 * len(DOCS)
    again = RerankRetriever(BM25Retriever(corpus, cache=cache), cross_encoder, cache=cache)
    got = again.search_stages(queries, 4)
    assert again.pairs_scored == 0 and again._model is None
    assert {s: r.fingerprint for s, r in got.items()} == {
        s: r.fingerprint for s, r in expected.items()
    }
    fewer = RerankRetriever(
        BM25Retriever(corpus, cache=cache), cross_encoder, cache=cache, rerank_k=3
    )
    fewer.search(queries, 4)
    assert fewer.pairs_scored == 6  # other candidates: a miss


def test_identity_names_both_stages(cross_encoder: Path, corpus: Corpus) -> None:
    first_stage = BM25Retriever(corpus)
    reranker = RerankRetriever(first_stage, cross_encoder, rerank_k=7, max_length=64)
    identity = reranker.identity()
    assert identity["kind"] == "rerank"
    assert identity["first_stage"] == first_stage.identity()
    assert identity["rerank_k"] == 7
    assert identity["reranker"]["max_length"] == 64
    assert len(identity["reranker"]["model_digest"]) == 64
    assert str(cross_encoder) not in str(identity)
    assert reranker.name == f"bm25+rerank:{cross_encoder.name}"
    assert reranker.stage_identity(FIRST_STAGE) == first_stage.identity()
    assert reranker.stage_identity(RERANKED) == identity
    with pytest.raises(ConfigError, match="unknown stage"):
        reranker.stage_identity("third")


def test_options_of_the_identity_are_read_only(cross_encoder: Path, corpus: Corpus) -> None:
    reranker = RerankRetriever(BM25Retriever(corpus), cross_encoder, rerank_k=7)
    before = reranker.identity()
    for option, value in (
        ("rerank_k", 3),
        ("max_length", 16),
        ("first_stage", BM25Retriever(corpus, k1=0.5)),
        ("corpus", corpus),
    ):
        with pytest.raises(ReadOnlyOptionError, match=rf"{option} cannot be set"):
            setattr(reranker, option, value)
    with pytest.raises(ReadOnlyOptionError, match="k1 cannot be set"):
        reranker.first_stage.k1 = 0.5  # type: ignore[attr-defined]
    assert reranker.identity() == before
    reranker.pairs_scored = 0


def test_callable_first_stage_needs_a_corpus(
    cross_encoder: Path, corpus: Corpus, queries: Queries
) -> None:
    production = from_function(lambda text: ["d3", "d1", "d2"], name="prod")
    with pytest.raises(ConfigError, match="'prod' has no corpus; pass corpus="):
        RerankRetriever(production, cross_encoder)
    # Asked for 100 (rerank_k) but only k=3 matters: no warning (filterwarnings=error).
    stages = RerankRetriever(production, cross_encoder, corpus=corpus).search_stages(queries, 3)
    assert {d for d, _ in stages[RERANKED].ranking("q1")} == {"d1", "d2", "d3"}
    assert [d for d, _ in stages[FIRST_STAGE].ranking("q1")] == ["d3", "d1", "d2"]


def test_first_stage_docs_missing_from_the_corpus_are_an_error(
    cross_encoder: Path, corpus: Corpus, queries: Queries
) -> None:
    production = from_function(lambda text: ["d1", "elsewhere"], name="prod")
    reranker = RerankRetriever(production, cross_encoder, corpus=corpus)
    with pytest.raises(RetrieverError, match="'prod' returned document 'elsewhere' for query 'q1'"):
        reranker.search(queries, 2)


def test_multi_label_model_is_refused(tmp_path: Path, corpus: Corpus, queries: Queries) -> None:
    model = _tiny_cross_encoder(tmp_path / "nli", num_labels=3)
    with pytest.raises(RetrieverError, match=r"3 scores per pair.*num_labels=1"):
        RerankRetriever(BM25Retriever(corpus), model).search(queries, 2)


def test_not_a_model_folder_is_an_error(tmp_path: Path, corpus: Corpus, queries: Queries) -> None:
    (tmp_path / "junk").mkdir()
    (tmp_path / "junk" / "notes.txt").write_text("hello")
    with pytest.raises(RetrieverError, match="cannot load cross-encoder"):
        RerankRetriever(BM25Retriever(corpus), tmp_path / "junk").search(queries, 2)


def test_bad_options(cross_encoder: Path, corpus: Corpus) -> None:
    with pytest.raises(ConfigError, match="rerank_k must be a positive integer"):
        RerankRetriever(BM25Retriever(corpus), cross_encoder, rerank_k=0)
    with pytest.raises(ConfigError, match="first_stage must be a retriever"):
        RerankRetriever(object(), cross_encoder)  # type: ignore[arg-type]


def test_factory_puts_a_reranker_on_top(cross_encoder: Path, corpus: Corpus) -> None:
    retriever = build_retriever("bm25", corpus, rerank_model=cross_encoder, rerank_k=4)
    assert isinstance(retriever, RerankRetriever)
    assert retriever.rerank_k == 4
    assert isinstance(retriever.first_stage, BM25Retriever)


def test_scoring_reports_progress(cross_encoder: Path, corpus: Corpus, queries: Queries) -> None:
    events: list[Any] = []

    class Reporter:
        def start(self, description: str, total: int) -> None:
            events.append((description.split()[0], total))

        def advance(self, done: int) -> None:
            events.append(done)

        def finish(self) -> None:
            events.append("finish")

    reranker = RerankRetriever(
        BM25Retriever(corpus), cross_encoder, rerank_k=4, chunk_size=3, batch_size=2
    )
    with use_reporter(Reporter()):
        reranker.search(queries, 4)
    rerank_events = events[events.index(("reranking", 8)) :]
    # Per batch of 2 within each chunk of 3 pairs.
    assert rerank_events == [("reranking", 8), 2, 1, 2, 1, 2, "finish"]
