"""The pipeline under test (issue 13 items 1 and 5): generators, the retrieve-then-generate
adapter, answer_all through the cache, recorded answers, the generator endpoint's faults
against the fake server, token counting, the budget and the dry run."""

from __future__ import annotations

import importlib.util
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.data.answers import GeneratedAnswer, read_answers
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import BudgetError, DataFormatError, GeneratorError
from pytest_ragmetrics.generation import (
    ANSWER_CACHE_KIND,
    AnswerSet,
    ChatGenerator,
    FunctionGenerator,
    FunctionPipeline,
    RecordedAnswers,
    RetrieveThenGenerate,
    answer_all,
    plan_answers,
)
from pytest_ragmetrics.retrievers import from_function
from pytest_ragmetrics.transport import Budget, Cost, Endpoint, Sampling
from tests.helpers.fake_openai import Reply, completion, serve

QUERIES = {"q1": "what is alpha", "q2": "what is beta", "q3": "what is gamma"}
CORPUS = Corpus(
    ["d1", "d2", "d3", "d4"],
    ["Alpha", "Beta", "Gamma", "Delta"],
    ["alpha is first.", "beta is second.", "gamma is third.", "delta is fourth."],
)


def search(text: str) -> list[str]:
    """Puts the document named in the query first, then the others in id order."""
    word = text.split()[-1]
    named = [d for d in ("d1", "d2", "d3", "d4") if CORPUS[d].title.lower() == word]
    return named + [d for d in ("d1", "d2", "d3", "d4") if d not in named]


def retriever() -> Any:
    return from_function(search, corpus=CORPUS, name="by-name")


class Counting:
    """A generator function that counts its calls (thread-safe) and echoes its first context."""

    def __init__(self) -> None:
        self.calls = 0
        self._lock = threading.Lock()

    def __call__(self, query: str, contexts: list[str]) -> str:
        with self._lock:
            self.calls += 1
        return f"{query}: {contexts[0]}"


def with_usage(content: str, prompt: int = 100, completion_tokens: int = 7) -> dict[str, Any]:
    body = completion(content)
    body["usage"] = {"prompt_tokens": prompt, "completion_tokens": completion_tokens}
    return body


def test_top_n_contexts_reach_the_generator_in_rank_order() -> None:
    fn = Counting()
    pipeline = RetrieveThenGenerate(retriever(), CORPUS, fn, top_n=2)
    answers = answer_all(pipeline, QUERIES)
    first = answers["q2"]
    assert [cid for cid, _ in first.contexts] == ["d2", "d1"]
    assert first.contexts[0][1] == "Beta beta is second."
    assert first.answer == "what is beta: Beta beta is second."
    assert [a.query_id for a in answers] == ["q1", "q2", "q3"]
    assert answers.cost == Cost(calls=3, unmetered=3)


def test_rerun_generates_nothing_and_counts_cache_hits(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    fn = Counting()
    pipeline = RetrieveThenGenerate(retriever(), CORPUS, FunctionGenerator(fn, name="echo"))
    first = answer_all(pipeline, QUERIES, cache=cache)
    again = answer_all(pipeline, QUERIES, cache=cache)
    assert fn.calls == 3
    assert first.cost.calls == 3 and first.cost.cache_hits == 0
    assert again.cost.calls == 0 and again.cost.cache_hits == 3
    assert [a.to_dict() for a in again] == [a.to_dict() for a in first]
    assert plan_answers(pipeline, QUERIES, cache).calls == 0


def test_cache_key_holds_identity_query_and_contexts(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    fn = Counting()
    answer_all(RetrieveThenGenerate(retriever(), CORPUS, fn, top_n=1), QUERIES, cache=cache)
    # Other contexts (top 2), another generator version: each a miss.
    answer_all(RetrieveThenGenerate(retriever(), CORPUS, fn, top_n=2), QUERIES, cache=cache)
    answer_all(
        RetrieveThenGenerate(retriever(), CORPUS, FunctionGenerator(fn, version="2"), top_n=2),
        QUERIES,
        cache=cache,
    )
    assert fn.calls == 9
    plan = plan_answers(RetrieveThenGenerate(retriever(), CORPUS, fn, top_n=3), {**QUERIES}, cache)
    assert (plan.calls, plan.cached) == (3, 0)
    assert "3 generator calls to make" in plan.describe()


class CountingInFiles:
    """A generator function that leaves a file per call: its own values do not change as it
    runs (a counter it kept would be read as another function by a concurrent identity)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        folder.mkdir()

    def __call__(self, query: str, contexts: list[str]) -> str:
        (self.folder / f"{threading.get_ident()}-{time.monotonic_ns()}").touch()
        return f"{query}: {contexts[0]}"


def test_parallel_processes_share_one_generation(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "cache")
    fn = CountingInFiles(tmp_path / "calls")
    pipeline = RetrieveThenGenerate(retriever(), CORPUS, FunctionGenerator(fn, name="echo"))
    threads = [
        threading.Thread(target=answer_all, args=(pipeline, QUERIES), kwargs={"cache": cache})
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(list(fn.folder.iterdir())) == 3
    assert len(list((tmp_path / "cache" / ANSWER_CACHE_KIND).glob("*/manifest.json"))) == 3


class Calls:
    """A call counter: an object, so its count is not part of the function's identity."""

    def __init__(self) -> None:
        self.queries: list[str] = []


def test_a_function_pipeline_is_cached_under_its_code(tmp_path: Path) -> None:
    calls = Calls()

    def pipeline(query: str) -> tuple[str, list[str]]:
        calls.queries.append(query)
        return "answer to " + query, ["a context"]

    def edited(query: str) -> tuple[str, list[str]]:
        calls.queries.append(query)
        return "another answer to " + query, ["a context"]

    cache = Cache(tmp_path)
    answer_all(pipeline, QUERIES, cache=cache)
    answers = answer_all(pipeline, QUERIES, cache=cache)
    assert len(calls.queries) == 3  # the second run read the cache
    assert answers["q1"].contexts == (("0", "a context"),)
    assert answers.identity["code"] and answers.identity["pipeline"] == "function"
    fresh = answer_all(edited, QUERIES, cache=cache)  # another body: generated anew
    assert len(calls.queries) == 6
    assert fresh["q1"].answer == "another answer to what is alpha"
    versioned = FunctionPipeline(pipeline, name="mine", version="2")
    answer_all(versioned, QUERIES, cache=cache)
    assert len(calls.queries) == 9
    assert versioned.identity()["version"] == "2"


def test_a_function_generator_is_identified_by_its_code() -> None:
    def first(query: str, contexts: list[str]) -> str:
        return contexts[0]

    def second(query: str, contexts: list[str]) -> str:
        return contexts[-1]

    one = FunctionGenerator(first, name="g").identity()
    assert one == FunctionGenerator(first, name="g").identity()
    assert one["code"] != FunctionGenerator(second, name="g").identity()["code"]
    assert "version" not in one
    assert FunctionGenerator(first, name="g", version=2).identity()["version"] == "2"


def test_a_pipeline_returning_the_wrong_shape_names_the_query() -> None:
    with pytest.raises(GeneratorError, match=r"answering query 'q1'.*return \(answer, contexts\)"):
        answer_all(lambda q: "just text", {"q1": "x"})
    with pytest.raises(GeneratorError, match=r"returned int.*return the answer text"):
        answer_all(RetrieveThenGenerate(retriever(), CORPUS, lambda q, c: 3), {"q1": "x"})


def test_recorded_answers_replay_without_any_model(tmp_path: Path) -> None:
    fn = Counting()
    made = answer_all(RetrieveThenGenerate(retriever(), CORPUS, fn), QUERIES)
    path = tmp_path / "answers.jsonl"
    made.write(path)
    replayed = answer_all(RecordedAnswers(path), QUERIES)
    assert [a.to_dict() for a in replayed] == [a.to_dict() for a in made]
    assert replayed.cost == Cost(replayed=3)
    assert replayed.cost.describe() == "0 calls (0 cached, 3 replayed from a recording)"
    assert replayed.identity["file"] == "answers.jsonl"
    with pytest.raises(GeneratorError, match=r"answers\.jsonl: no recorded answer for 1 of 4"):
        answer_all(RecordedAnswers(path), {**QUERIES, "q9": "unknown"})


def test_recorded_answers_from_another_import_of_the_module_are_replayed(
    tmp_path: Path,
) -> None:
    # pytester and module reloaders import pipelines.py again: its RecordedAnswers is then
    # another class object, and must still be replayed, not called query by query.
    path = tmp_path / "answers.jsonl"
    answer_all(RetrieveThenGenerate(retriever(), CORPUS, Counting()), QUERIES).write(path)
    spec = importlib.util.find_spec("pytest_ragmetrics.generation.pipelines")
    assert spec is not None and spec.loader is not None
    again = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(again)
    assert again.RecordedAnswers is not RecordedAnswers
    replayed = answer_all(again.RecordedAnswers(path), QUERIES)
    assert replayed.cost == Cost(replayed=3)
    assert plan_answers(again.RecordedAnswers(path), QUERIES, None).calls == 0
    with pytest.raises(GeneratorError, match=r"no recorded answer for 1 of 4"):
        answer_all(again.RecordedAnswers(path), {**QUERIES, "q9": "unknown"})


def test_answers_file_errors_name_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(
        json.dumps({"query_id": "1", "answer": "a"}) + "\n"
        + json.dumps({"query_id": "1", "answer": "b"}) + "\n"
    )  # fmt: skip
    with pytest.raises(DataFormatError, match=r"answers.jsonl:2: query id '1' already answered"):
        read_answers(path)
    path.write_text(json.dumps({"query_id": "1", "answer": 5}) + "\n")
    with pytest.raises(DataFormatError, match=r"answers.jsonl:1: query '1': 'answer' must be"):
        read_answers(path)


def test_generated_answer_round_trips() -> None:
    answer = GeneratedAnswer("q", "what", "it", (("d1", "text"),), 10, 2)
    assert GeneratedAnswer.from_dict(answer.to_dict()) == answer


# -- the chat generator against the fake server -------------------------------------------------


def test_chat_generator_sends_prompt_and_counts_usage(tmp_path: Path) -> None:
    with serve(answer=lambda prompt: "SUPPORT. because") as server:
        server.script.extend(Reply(body=with_usage("SUPPORT. because", 120, 9)) for _ in range(3))
        generator = ChatGenerator(
            Endpoint(server.url, "tiny"), sampling=Sampling(temperature=0.0, seed=3, max_tokens=32)
        )
        pipeline = RetrieveThenGenerate(retriever(), CORPUS, generator, top_n=2)
        answers = answer_all(pipeline, QUERIES, cache=Cache(tmp_path))
        again = answer_all(pipeline, QUERIES, cache=Cache(tmp_path))
    assert server.count == 3
    body = server.requests[0]["body"]
    assert body["model"] == "tiny" and body["seed"] == 3 and body["max_tokens"] == 32
    prompt = body["messages"][-1]["content"]
    assert "[1] Alpha alpha is first.\n\n[2] Beta beta is second." in prompt
    assert prompt.endswith("Question: what is alpha\n\nAnswer:")
    assert answers.cost == Cost(calls=3, prompt_tokens=360, completion_tokens=27)
    assert again.cost == Cost(cache_hits=3)
    assert answers["q1"].prompt_tokens == 120
    assert generator.identity()["seed"] == 3 and "url" not in json.dumps(generator.identity())


def test_chat_generator_concurrency_keeps_order() -> None:
    with serve(answer=lambda prompt: prompt.split("Question: ")[1].split("\n")[0]) as server:
        generator = ChatGenerator(Endpoint(server.url, "tiny", concurrency=3))
        answers = answer_all(RetrieveThenGenerate(retriever(), CORPUS, generator), QUERIES)
    assert [a.answer for a in answers] == list(QUERIES.values())


@pytest.mark.parametrize(
    ("replies", "message"),
    [
        (
            [Reply(500, "boom")] * 2,
            r"answering query 'q1': generator: .* answered HTTP 500 2 times",
        ),
        ([Reply(401, "no")], r"HTTP 401 .*RAGMETRICS_GENERATOR_API_KEY"),
        ([Reply(200, "not json")], r"malformed reply .*not JSON"),
        ([Reply(200, {"choices": []})], r"no choices\[0\]\.message\.content"),
    ],
)
def test_generator_endpoint_faults_are_readable(replies: list[Reply], message: str) -> None:
    with serve(list(replies)) as server:
        generator = ChatGenerator(Endpoint(server.url, "tiny", max_retries=1, backoff=0))
        with pytest.raises(GeneratorError, match=message):
            answer_all(RetrieveThenGenerate(retriever(), CORPUS, generator), {"q1": "x alpha"})


def test_generator_retries_a_5xx_then_answers() -> None:
    with serve([Reply(503, "busy")], answer=lambda p: "ok") as server:
        generator = ChatGenerator(Endpoint(server.url, "tiny", max_retries=2, backoff=0))
        answers = answer_all(RetrieveThenGenerate(retriever(), CORPUS, generator), {"q1": "x"})
    assert answers["q1"].answer == "ok" and server.count == 2


def test_generator_needs_an_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("RAGMETRICS_GENERATOR_URL", raising=False)
    with pytest.raises(GeneratorError, match=r"no endpoint.*RAGMETRICS_GENERATOR_URL"):
        ChatGenerator(Endpoint(None, "m"))
    with pytest.raises(GeneratorError, match=r"template lacks \{contexts\}"):
        ChatGenerator(Endpoint("http://127.0.0.1:1", "m"), prompts={"user": "{query}"})


# -- the budget ------------------------------------------------------------------------------------


def test_budget_stops_before_it_is_exceeded(tmp_path: Path) -> None:
    # Each reply reports 150 tokens; the estimate of the next call is about 60 + 32 tokens.
    with serve(answer=lambda p: "x") as server:
        server.script.extend(Reply(body=with_usage("fine", 140, 10)) for _ in range(10))
        budget = Budget(400)
        generator = ChatGenerator(
            Endpoint(server.url, "tiny"), sampling=Sampling(max_tokens=32), budget=budget
        )
        pipeline = RetrieveThenGenerate(retriever(), CORPUS, generator, top_n=1)
        with pytest.raises(BudgetError) as caught:
            answer_all(pipeline, {f"q{i}": f"what is alpha {i}" for i in range(5)})
        sent = server.count
    assert sent == 2  # 300 spent; a third call could take it past 400, so it is not sent
    assert budget.spent == 300 <= budget.tokens
    text = str(caught.value)
    assert "answering query 'q2'" in text
    assert "token budget (ragmetrics_judge_budget = 400): 300 tokens used by 2 calls" in text


def test_budget_is_a_positive_number() -> None:
    with pytest.raises(
        BudgetError, match=r"budget \(a number of tokens\) must be a positive integer"
    ):
        Budget(0)


def test_answer_set_write_is_atomic_jsonl(tmp_path: Path) -> None:
    answers = AnswerSet((GeneratedAnswer("q", "what", "it", (("d", "t"),)),))
    path = tmp_path / "sub" / "answers.jsonl"
    answers.write(path)
    assert read_answers(path) == list(answers)
    assert not list(path.parent.glob("*.tmp*"))


class InProcessExecutor:
    """An executor that is not the local one: items go through ``map`` as they would to a
    cluster (the Ray one is tested in test_ray.py)."""

    kind = "elsewhere"

    def __init__(self) -> None:
        self.items: list[Any] = []

    def map(self, function: Any, items: Any, *, concurrency: int | None = None) -> list[Any]:
        self.items += list(items)
        return [function(item) for item in items]


def test_answers_generated_elsewhere_land_in_the_cache_the_local_path_reads(
    tmp_path: Path,
) -> None:
    fn = Counting()
    pipeline = RetrieveThenGenerate(retriever(), CORPUS, fn, top_n=1)
    local = answer_all(RetrieveThenGenerate(retriever(), CORPUS, Counting(), top_n=1), QUERIES)
    cache = Cache(tmp_path)
    executor = InProcessExecutor()
    remote = answer_all(pipeline, dict(list(QUERIES.items())[:2]), cache=cache, executor=executor)
    assert len(executor.items) == 2 and fn.calls == 2
    assert remote.cost.calls == 2 and remote.cost.cache_hits == 0
    # The third query is the only one the cluster still has to answer; then a local rerun
    # answers everything from the cache.
    again = answer_all(pipeline, QUERIES, cache=cache, executor=executor)
    assert len(executor.items) == 3 and fn.calls == 3
    assert again.cost.calls == 1 and again.cost.cache_hits == 2
    rerun = answer_all(pipeline, QUERIES, cache=cache)
    assert fn.calls == 3 and rerun.cost.cache_hits == 3
    assert [(a.query_id, a.answer, a.contexts) for a in rerun.answers] == [
        (a.query_id, a.answer, a.contexts) for a in local.answers
    ]


def test_generating_elsewhere_needs_a_cache_to_bring_the_answers_back() -> None:
    pipeline = RetrieveThenGenerate(retriever(), CORPUS, Counting(), top_n=1)
    with pytest.raises(Exception, match="come back through the cache"):
        answer_all(pipeline, QUERIES, executor=InProcessExecutor())


TEMPERATURE = 0.0


def _answer_at_temperature(query: str, contexts: list[str]) -> str:
    return f"{query} at {TEMPERATURE}"


def test_a_setting_rebound_since_changes_a_function_generators_identity(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its identity was kept from the first call and its values read once per process: a
    temperature monkeypatched per test was served the answers cached under the old one."""
    import sys

    generator = FunctionGenerator(_answer_at_temperature)
    before = generator.identity()
    monkeypatch.setattr(sys.modules[__name__], "TEMPERATURE", 0.7)
    assert generator.identity() != before
    monkeypatch.setattr(sys.modules[__name__], "TEMPERATURE", 0.0)
    assert generator.identity() == before
