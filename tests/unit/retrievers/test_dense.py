"""DenseRetriever on the offline all-MiniLM-L6-v2: search, caches and their keys, indexes,
progress, multi-process encoding; SciFact acceptance (slow)."""

from __future__ import annotations

import os

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

import json
import multiprocessing
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics import Corpus, Queries, evaluate, load_dataset
from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.encoders import default_model_path
from pytest_ragmetrics.errors import ConfigError, ReadOnlyOptionError, RetrieverError
from pytest_ragmetrics.progress import use_reporter
from pytest_ragmetrics.retrievers import DenseRetriever, build_retriever
from tests.helpers.scifact_data import SCIFACT

pytest.importorskip("sentence_transformers")
pytest.importorskip("faiss")

DOCS = {
    "cat": {"title": "Cats", "text": "Domestic cats purr when they are content and sleep a lot."},
    "dog": {"title": "Dogs", "text": "Dogs bark at strangers and love to play fetch."},
    "fish": {"title": "Aquarium fish", "text": "Goldfish swim in a tank of fresh water."},
    "bread": {"title": "Baking", "text": "Knead the dough, let it rise, then bake the bread."},
    "rain": {"title": "Weather", "text": "Heavy rain and thunderstorms are expected tonight."},
    "code": {"title": "Python", "text": "A list comprehension builds a list in one line."},
    "moon": {"title": "The Moon", "text": "The Moon orbits the Earth every 27 days."},
    "tea": {"title": "", "text": "Green tea is steeped in water just below boiling."},
}
QUERIES = {
    "q_cat": "why does my cat purr",
    "q_bake": "how to bake bread at home",
    "q_moon": "how long does the moon take to orbit earth",
}


@pytest.fixture(scope="session")
def minilm() -> Any:
    """One shared retriever per session keeps the loaded model alive for the other tests."""
    retriever = DenseRetriever(Corpus.from_dict(DOCS))
    retriever.model  # noqa: B018 - load once
    return retriever


@pytest.fixture
def corpus() -> Corpus:
    return Corpus.from_dict(DOCS)


@pytest.fixture
def queries() -> Queries:
    return Queries.from_dict(QUERIES)


def test_finds_the_obvious_document(minilm: Any, corpus: Corpus, queries: Queries) -> None:
    run = DenseRetriever(corpus).search(queries, 3)
    assert run.ranking("q_cat")[0][0] == "cat"
    assert run.ranking("q_bake")[0][0] == "bread"
    assert run.ranking("q_moon")[0][0] == "moon"
    assert run.depths().tolist() == [3, 3, 3]


def test_scores_are_cosine_similarities(minilm: Any, corpus: Corpus, queries: Queries) -> None:
    retriever = DenseRetriever(corpus)
    embeddings = retriever.corpus_embeddings()
    assert embeddings.shape == (len(DOCS), 384) and embeddings.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(embeddings, axis=1), 1.0, atol=1e-5)
    raw = minilm.model.encode(corpus.passages(" "), normalize_embeddings=True)
    np.testing.assert_allclose(embeddings, raw, atol=1e-5)
    q = retriever.encode_queries([QUERIES["q_cat"]])
    run = retriever.search(queries.subset(["q_cat"]), len(DOCS))
    expected = dict(zip(corpus.doc_ids.tolist(), (embeddings @ q[0]).tolist(), strict=True))
    for doc, score in run.ranking("q_cat"):
        assert score == pytest.approx(expected[doc], abs=1e-5)


def test_identity_is_json_and_has_no_local_paths(minilm: Any, corpus: Corpus) -> None:
    identity = DenseRetriever(corpus, max_seq_length=128, query_prefix="query: ").identity()
    text = json.dumps(identity)
    assert str(default_model_path()) not in text
    assert identity["model"] == "all-MiniLM-L6-v2"
    assert len(identity["model_digest"]) == 64
    assert identity["max_seq_length"] == 128
    assert identity["query_prefix"] == "query: "
    assert identity["index"] == {"type": "flat"}
    assert DenseRetriever(corpus).name == "dense:all-MiniLM-L6-v2"


def test_warm_run_is_read_without_loading_the_model(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    cold = DenseRetriever(corpus, cache=tmp_path)
    first = cold.search(queries, 5)
    assert cold.corpus_encodings == 1
    warm = DenseRetriever(corpus, cache=tmp_path)
    second = warm.search(queries, 5)
    assert second.fingerprint == first.fingerprint
    assert warm.corpus_encodings == 0 and warm.query_encodings == 0
    assert warm._model is None  # a run-cache hit needs neither torch nor the model


def _encodings_after(retriever: DenseRetriever, queries: Queries, k: int) -> int:
    retriever.search(queries, k)
    return retriever.corpus_encodings


def test_embeddings_are_reused_across_k_but_the_run_is_not(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    cache = Cache(tmp_path)
    assert _encodings_after(DenseRetriever(corpus, cache=cache), queries, 5) == 1
    other_k = DenseRetriever(corpus, cache=cache)
    run = other_k.search(queries, 2)
    assert other_k.corpus_encodings == 0  # embeddings hit
    assert other_k.query_encodings == 1  # run miss: k is part of its key
    assert run.depths().tolist() == [2, 2, 2]


@pytest.mark.parametrize(
    "change",
    ["one_document_text", "one_document_title", "max_seq_length", "passage_prefix", "normalize"],
)
def test_changes_that_alter_embeddings_are_cache_misses(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path, change: str
) -> None:
    cache = Cache(tmp_path)
    assert _encodings_after(DenseRetriever(corpus, cache=cache), queries, 3) == 1
    options: dict[str, Any] = {}
    changed_corpus = corpus
    if change == "one_document_text":
        docs = {**DOCS, "tea": {"title": "", "text": DOCS["tea"]["text"] + "!"}}
        changed_corpus = Corpus.from_dict(docs)
    elif change == "one_document_title":
        changed_corpus = Corpus.from_dict({**DOCS, "tea": {"title": "Tea", "text": "x"}})
    elif change == "max_seq_length":
        options["max_seq_length"] = 16
    elif change == "passage_prefix":
        options["passage_prefix"] = "passage: "
    else:
        options["normalize"] = False
    second = DenseRetriever(changed_corpus, cache=cache, **options)
    assert _encodings_after(second, queries, 3) == 1
    # And the unchanged configuration still hits.
    assert _encodings_after(DenseRetriever(corpus, cache=cache), queries, 3) == 0


def test_a_changed_model_is_a_cache_miss(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    cache = Cache(tmp_path / "cache")
    assert _encodings_after(DenseRetriever(corpus, cache=cache), queries, 3) == 1
    copy = tmp_path / "all-MiniLM-L6-v2-copy"
    shutil.copytree(default_model_path(), copy)
    same = DenseRetriever(corpus, copy, cache=cache)
    assert same.identity()["model_digest"] == DenseRetriever(corpus).identity()["model_digest"]
    assert _encodings_after(same, queries, 3) == 0  # same files: same model, wherever it lives
    config = copy / "config_sentence_transformers.json"
    config.write_text(config.read_text() + "\n")
    changed = DenseRetriever(corpus, copy, cache=cache)
    assert changed.identity()["model_digest"] != same.identity()["model_digest"]
    assert _encodings_after(changed, queries, 3) == 1


def test_query_prefix_changes_the_run_key_only(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    cache = Cache(tmp_path)
    plain = DenseRetriever(corpus, cache=cache).search(queries, 3)
    prefixed = DenseRetriever(corpus, cache=cache, query_prefix="search_query: ")
    run = prefixed.search(queries, 3)
    assert prefixed.corpus_encodings == 0 and prefixed.query_encodings == 1
    assert run.scores.tolist() != plain.scores.tolist()


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("passage_prefix", "passage: "),
        ("query_prefix", "query: "),
        ("normalize", False),
        ("max_seq_length", 16),
        ("index_type", "hnsw"),
        ("nprobe", 1),
        ("source", None),
        ("corpus", None),
    ],
)
def test_options_of_the_identity_are_read_only(
    corpus: Corpus, tmp_path: Path, option: str, value: Any
) -> None:
    # The corpus embeddings were encoded (and cached) with the old value: a change would store
    # them, and the runs, under an identity that says otherwise.
    retriever = DenseRetriever(corpus, cache=Cache(tmp_path))
    before = retriever.identity()
    with pytest.raises(ReadOnlyOptionError, match=rf"{option} cannot be set.*another retriever"):
        setattr(retriever, option, value)
    assert retriever.identity() == before
    retriever.corpus_encodings = 0  # counters stay writable
    retriever.batch_size = 8


def test_no_cache_always_encodes(minilm: Any, corpus: Corpus, queries: Queries) -> None:
    for _ in range(2):
        assert _encodings_after(DenseRetriever(corpus), queries, 3) == 1
    disabled = Cache(None)
    assert _encodings_after(DenseRetriever(corpus, cache=disabled), queries, 3) == 1


def test_corrupt_embedding_entry_warns_and_is_rewritten(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    from pytest_ragmetrics import RagMetricsWarning

    cache = Cache(tmp_path)
    first = DenseRetriever(corpus, cache=cache)
    expected = first.search(queries, 3)
    entry = next((tmp_path / "embeddings").glob("*/embeddings.npy"))
    entry.write_bytes(entry.read_bytes()[:100])
    for run_entry in (tmp_path / "run").iterdir():
        if run_entry.is_dir():
            shutil.rmtree(run_entry)
    second = DenseRetriever(corpus, cache=cache)
    with pytest.warns(RagMetricsWarning, match="unreadable"):
        run = second.search(queries, 3)
    assert second.corpus_encodings == 1
    assert run.fingerprint == expected.fingerprint
    assert _encodings_after(DenseRetriever(corpus, cache=cache), queries, 3) == 0


@pytest.mark.parametrize("index", ["ivf", "hnsw"])
def test_approximate_indexes_agree_with_flat_on_a_small_corpus(
    minilm: Any, corpus: Corpus, queries: Queries, index: Any
) -> None:
    flat = DenseRetriever(corpus).search(queries, 4)
    approx_retriever = DenseRetriever(corpus, index=index, nlist=2, nprobe=2)
    approx = approx_retriever.search(queries, 4)
    assert approx_retriever.identity()["index"]["type"] == index
    for qid in QUERIES:
        assert [d for d, _ in approx.ranking(qid)] == [d for d, _ in flat.ranking(qid)]


class RecordingReporter:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def start(self, description: str, total: int) -> None:
        self.events.append(("start", (description, total)))

    def advance(self, done: int) -> None:
        self.events.append(("advance", done))

    def finish(self) -> None:
        self.events.append(("finish", None))


def test_corpus_encoding_reports_progress_in_chunks(minilm: Any, corpus: Corpus) -> None:
    reporter = RecordingReporter()
    with use_reporter(reporter):
        DenseRetriever(corpus, chunk_size=3).corpus_embeddings()
    assert reporter.events[0] == ("start", ("encoding 8 passages (all-MiniLM-L6-v2)", 8))
    assert [v for e, v in reporter.events if e == "advance"] == [3, 3, 2]
    assert reporter.events[-1] == ("finish", None)


def test_encoding_moves_the_bar_per_batch_and_explains_a_cold_corpus(
    minilm: Any, corpus: Corpus, queries: Queries, tmp_path: Path
) -> None:
    class Explaining(RecordingReporter):
        def explain(self, note: str) -> None:
            self.events.append(("explain", note))

    reporter = Explaining()
    retriever = DenseRetriever(corpus, chunk_size=5, batch_size=2, cache=tmp_path)
    with use_reporter(reporter):
        retriever.corpus_embeddings()
    # One encode call per chunk of 5, the bar moved per batch of 2 inside it.
    assert [v for e, v in reporter.events if e == "advance"] == [2, 2, 1, 2, 1]
    assert reporter.events[0] == (
        "explain",
        f"encoding 8 passages with all-MiniLM-L6-v2 on this machine: they are not in the cache "
        f"yet (first run for this corpus and model); later runs read them from {tmp_path}",
    )
    reporter.events.clear()
    with use_reporter(reporter):
        DenseRetriever(corpus, batch_size=2, cache=tmp_path).encode_queries(queries.texts)
    assert reporter.events[0] == (
        "explain",
        "encoding 3 queries with all-MiniLM-L6-v2: their run is not in the cache yet (or "
        "caching is off)",
    )
    assert [v for e, v in reporter.events if e == "advance"] == [2] * (len(queries) // 2) + [1] * (
        len(queries) % 2
    )


def test_chunked_encoding_equals_one_encode_call(minilm: Any, corpus: Corpus) -> None:
    chunked = DenseRetriever(corpus, chunk_size=3, batch_size=2).corpus_embeddings()
    whole = minilm.model.encode(corpus.passages(" "), batch_size=2, normalize_embeddings=True)
    np.testing.assert_allclose(chunked, whole, atol=1e-6)


def test_multi_process_pool_gives_the_same_embeddings(minilm: Any, corpus: Corpus) -> None:
    single = DenseRetriever(corpus).corpus_embeddings()
    pooled = DenseRetriever(corpus, devices=["cpu", "cpu"], chunk_size=4).corpus_embeddings()
    np.testing.assert_allclose(pooled, single, atol=1e-5)


@pytest.mark.parametrize(
    ("options", "error", "message"),
    [
        ({"index": "annoy"}, ConfigError, "index must be 'flat', 'ivf' or 'hnsw'"),
        ({"batch_size": 0}, ConfigError, "batch_size must be a positive integer"),
        ({"max_seq_length": -5}, ConfigError, "max_seq_length must be a positive integer"),
        ({"devices": "cuda:0"}, ConfigError, "devices must be a non-empty list"),
        ({"model": "/no/such/model"}, RetrieverError, "does not exist"),
        ({"model": "nobody/not-in-the-local-cache"}, RetrieverError, "local Hugging Face cache"),
    ],
)
def test_bad_options_are_our_errors(
    corpus: Corpus, queries: Queries, options: dict[str, Any], error: type, message: str
) -> None:
    with pytest.raises(error, match=message):
        DenseRetriever(corpus, **options).search(queries, 3)


def test_empty_corpus_is_an_error() -> None:
    with pytest.raises(RetrieverError, match="corpus is empty"):
        DenseRetriever(Corpus([], [], []))


def test_factory_builds_a_dense_retriever(corpus: Corpus, tmp_path: Path) -> None:
    retriever = build_retriever("dense", corpus, cache=tmp_path, batch_size=8)
    assert isinstance(retriever, DenseRetriever)
    assert retriever.batch_size == 8


def _encode_in_child(root: str, start: Any, results: Any) -> None:
    os.environ["HF_HUB_OFFLINE"] = "1"
    retriever = DenseRetriever(Corpus.from_dict(DOCS), cache=root)
    retriever.model  # noqa: B018 - load before the race starts, so both really race
    start.wait()
    run = retriever.search(Queries.from_dict(QUERIES), 3)
    results.put((retriever.corpus_encodings, run.fingerprint))


def test_two_processes_sharing_a_cache_encode_the_corpus_once(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    start, results = ctx.Event(), ctx.Queue()
    procs = [
        ctx.Process(target=_encode_in_child, args=(str(tmp_path), start, results)) for _ in range(2)
    ]
    for proc in procs:
        proc.start()
    start.set()
    outcomes = [results.get(timeout=300) for _ in procs]
    for proc in procs:
        proc.join(timeout=60)
        assert proc.exitcode == 0
    assert sorted(encodings for encodings, _ in outcomes) == [0, 1]
    assert outcomes[0][1] == outcomes[1][1]
    key = DenseRetriever(Corpus.from_dict(DOCS)).embedding_key()
    assert Cache(tmp_path).computations("embeddings", key) == 1


# -- acceptance: MTEB's published all-MiniLM-L6-v2 numbers on SciFact ------------------------


@pytest.mark.slow
@pytest.mark.skipif(
    not SCIFACT.is_dir(), reason="needs the SciFact data (example_suite/data or ../shared/data)"
)
def test_scifact_reproduces_mteb(scifact_cache: Path) -> None:
    dataset = load_dataset(SCIFACT, "test")
    run = DenseRetriever(dataset.corpus, cache=scifact_cache).search(dataset.queries, 100)
    evaluation = evaluate(dataset.qrels, run, ["ndcg_at_10", "map_at_10", "recall_at_100"])
    mean = evaluation.mean
    assert mean["ndcg_at_10"] == pytest.approx(0.64508, abs=1e-4)
    assert mean["map_at_10"] == pytest.approx(0.59593, abs=1e-4)
    assert mean["recall_at_100"] == pytest.approx(0.925, abs=1e-3)
