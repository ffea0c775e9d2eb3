"""A failed reply is never a cached one (issue 24, class 7): an empty content or a reply that
is neither yes nor no is used (or reported) this time, but is not stored as a verdict or an
answer, so the next run asks again instead of replaying the failure, even from a dead URL."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.generation import ChatGenerator, RetrieveThenGenerate, answer_all
from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL, HttpJudge
from pytest_ragmetrics.retrievers import from_function
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import serve

CORPUS = Corpus(["d1", "d2"], ["Alpha", "Beta"], ["alpha is first.", "beta is second."])
QUERIES = {"q1": "what is alpha", "q2": "what is beta"}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY, "RAGMETRICS_GENERATOR_API_KEY"):
        monkeypatch.delenv(name, raising=False)


def _pool(tmp_path: Path) -> Path:
    pool = tmp_path / "pool.jsonl"
    rows = [
        {"query_id": "q1", "doc_id": "d2", "query": "which animal purrs", "text": "Dogs bark."},
        {"query_id": "q2", "doc_id": "d1", "query": "which animal barks", "text": "Cats purr."},
    ]
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return pool


def _judge_pool(pool: Path, url: str, cache: Path, *extra: str) -> tuple[int, dict[str, object]]:
    out = io.StringIO()
    argv = ["judge-pool", "--pool", str(pool), "--judge", "http", "--url", url, "--model", "m",
            "--cache-dir", str(cache), "--format", "json", *extra]  # fmt: skip
    code = main(argv, out=out)
    return code, (json.loads(out.getvalue()) if code == 0 else {})


def test_judge_pool_does_not_cache_empty_replies(tmp_path: Path) -> None:
    pool, cache = _pool(tmp_path), tmp_path / "cache"
    with serve(answer=lambda prompt: "") as server:
        code, summary = _judge_pool(pool, server.url, cache, "--qrels-out", str(tmp_path / "a"))
        assert code == 0 and server.count == 2
        assert summary["asked"] == 2
        server.answer = lambda prompt: "yes"
        code, summary = _judge_pool(pool, server.url, cache, "--qrels-out", str(tmp_path / "b"))
        assert code == 0
        assert server.count == 4  # asked again: the empty replies were not verdicts
    assert summary["asked"] == 2
    rows = [json.loads(line) for line in pool.read_text().splitlines()]
    assert [r["relevant"] for r in rows] == [True, True]


def test_an_unparseable_reply_is_not_replayed_from_the_cache(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with serve(answer=lambda prompt: "") as server:
        for mode in ("unjudged", "error"):
            judge = HttpJudge(Endpoint(server.url, "m", backoff=0.0), cache=cache, unparseable=mode)
            if mode == "error":
                with pytest.raises(JudgeError, match="replied ''"):
                    judge.judge_claims(["a claim"], ["ctx"])
            else:
                assert judge.judge_claims(["a claim"], ["ctx"])[0].supported is None
        assert server.count == 2
        server.answer = lambda prompt: "Yes."
        judge = HttpJudge(Endpoint(server.url, "m", backoff=0.0), cache=cache)
        assert judge.judge_claims(["a claim"], ["ctx"])[0].supported is True
        assert server.count == 3
        again = HttpJudge(Endpoint("http://127.0.0.1:9", "m", max_retries=0), cache=cache)
        assert again.judge_claims(["a claim"], ["ctx"])[0].supported is True  # a real verdict


def test_an_empty_generated_answer_is_used_but_not_cached(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    retriever = from_function(lambda text: ["d1", "d2"], corpus=CORPUS, name="fixed")
    with serve(answer=lambda prompt: "") as server:
        pipeline = RetrieveThenGenerate(retriever, CORPUS, ChatGenerator(Endpoint(server.url, "m")))
        first = answer_all(pipeline, QUERIES, cache=cache)
        assert [a.answer for a in first] == ["", ""]
        server.answer = lambda prompt: "Alpha is first."
        again = answer_all(pipeline, QUERIES, cache=cache)
        assert server.count == 4
        assert [a.answer for a in again] == ["Alpha is first."] * 2
        answer_all(pipeline, QUERIES, cache=cache)
        assert server.count == 4  # a real answer is cached as before
