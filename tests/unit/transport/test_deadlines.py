"""A deadline is a deadline (RELIABILITY.md), for every user of the one Endpoint: the HTTP judge,
the HTTP relevance judge, the chat generator and the test-set generator each give up an attempt
after ``attempt_timeout`` and retry within their ``timeout``, whether the settings come from
Python, the ini keys and pytest flags, or the ``ragmetrics`` command. The server on 127.0.0.1
stalls its first reply far longer than the attempt timeout: a user that honours it asks again
(two requests) and gets its answer; one that does not waits for the stalled reply (one
request)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.errors import ConfigError, GeneratorError, JudgeError
from pytest_ragmetrics.generation import ChatGenerator
from pytest_ragmetrics.judges import HttpJudge, HttpRelevanceJudge, RelevancePair
from pytest_ragmetrics.plugin.fixtures import configured_generator, configured_judge
from pytest_ragmetrics.plugin.settings import build_settings
from pytest_ragmetrics.testsets.http import HttpTestsetGenerator
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.testset_data import corpus, write_corpus

STALL = 5.0  # seconds the first reply takes: far beyond the attempt timeout, within the deadline
ATTEMPT = 0.3


def stalled() -> list[Reply]:
    """A first reply that would do, were it waited for."""
    return [Reply(body=completion("Yes. What does the passage say?"), delay=STALL)]


def endpoint(url: str, **options: Any) -> Endpoint:
    return Endpoint(url, "m", timeout=STALL * 4, attempt_timeout=ATTEMPT, backoff=0, **options)


def ask_judge(judge: HttpJudge) -> object:
    return judge.judge_claims(["a SUPPORTED claim"], ["context"])[0].supported


def ask_relevance(judge: HttpRelevanceJudge) -> object:
    return judge.judge_relevance([RelevancePair("question", "passage")])[0].verdict


def ask_generator(generator: ChatGenerator) -> object:
    return generator.generate("question", ["context"]).text


def ask_testset(generator: HttpTestsetGenerator) -> object:
    return generator.generate(corpus(), 1).candidates[0].text


USERS: dict[str, tuple[Callable[[Endpoint], Any], Callable[[Any], object]]] = {
    "http judge": (HttpJudge, ask_judge),
    "http relevance judge": (HttpRelevanceJudge, ask_relevance),
    "chat generator": (ChatGenerator, ask_generator),
    "test-set generator": (
        lambda e: HttpTestsetGenerator(e, answers=False, styles=["fact"]),
        ask_testset,
    ),
}


def question(prompt: str) -> str:
    return "Yes. What does this passage say about the topic?"


@pytest.mark.parametrize("user", list(USERS))
def test_every_http_user_abandons_a_stalled_attempt_and_retries(user: str) -> None:
    build, ask = USERS[user]
    with serve(stalled(), answer=question) as server:
        assert ask(build(endpoint(server.url, max_retries=1)))
        assert server.count == 2  # the stalled attempt was given up after ATTEMPT seconds


@pytest.mark.parametrize("user", list(USERS))
def test_the_attempt_timeout_is_named_when_no_retry_is_left(user: str) -> None:
    build, ask = USERS[user]
    error = GeneratorError if "generator" in user else JudgeError
    with serve(stalled(), answer=question) as server:
        with pytest.raises(error, match=rf"no reply from {server.url}\S* within 0.3 s"):
            ask(build(endpoint(server.url, max_retries=0)))
        assert server.count == 1


def settings(**ini: str) -> Any:
    return build_settings(
        lambda name: (ini.get(name), False), rootdir=Path("."), invocation_dir=Path("."), flags={}
    )


def test_the_ini_keys_set_the_deadline_and_the_attempt_timeout() -> None:
    timeouts = {"timeout": str(STALL * 4), "attempt_timeout": str(ATTEMPT)}
    with serve(stalled(), answer=question) as judge_server:
        judge = configured_judge(
            settings(
                ragmetrics_judge="http",
                ragmetrics_judge_url=judge_server.url,
                ragmetrics_judge_model="m",
                **{f"ragmetrics_judge_{name}": value for name, value in timeouts.items()},
            )
        )
        assert judge.client.endpoint.attempt_timeout == ATTEMPT
        assert ask_judge(judge) and judge_server.count == 2
    with serve(stalled(), answer=question) as generator_server:
        generator = configured_generator(
            settings(
                ragmetrics_generator_url=generator_server.url,
                ragmetrics_generator_model="m",
                **{f"ragmetrics_generator_{name}": value for name, value in timeouts.items()},
            )
        )
        assert generator.client.endpoint.timeout == STALL * 4
        assert ask_generator(generator) and generator_server.count == 2


@pytest.mark.parametrize(
    ("ini", "message"),
    [
        ({"ragmetrics_judge_attempt_timeout": "0"}, "must be seconds > 0"),
        ({"ragmetrics_generator_timeout": "soon"}, "is not a number"),
        (
            {"ragmetrics_judge": "embedding", "ragmetrics_judge_timeout": "5"},
            "ragmetrics_judge_timeout is only used by the http judge, not embedding",
        ),
    ],
)
def test_bad_timeout_settings_are_refused_naming_the_key(ini: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        settings(**ini)


def test_the_pytest_flags_reach_the_fixtures_judge_and_generator(
    pytester: pytest.Pytester,
) -> None:
    pytester.makepyfile(
        test_stall="""
        def test_stalled_replies(rag_judge, rag_generator):
            assert rag_judge.judge_claims(["a SUPPORTED claim"], ["context"])[0].supported
            assert rag_generator.generate("question", ["context"]).text
        """
    )
    with (
        serve(stalled(), answer=question) as judge_server,
        serve(stalled(), answer=question) as generator_server,
    ):
        pytester.makeini(
            f"""
                [pytest]
                ragmetrics_judge = http
                ragmetrics_judge_url = {judge_server.url}
                ragmetrics_judge_model = m
                ragmetrics_generator_url = {generator_server.url}
                ragmetrics_generator_model = m
                """
        )
        result = pytester.runpytest_subprocess(
                "-p", "no:randomly", "-p", "no:xdist", "-p", "no:cacheprovider",
                f"--ragmetrics-judge-attempt-timeout={ATTEMPT}",
                f"--ragmetrics-generator-attempt-timeout={ATTEMPT}",
            )  # fmt: skip
        result.assert_outcomes(passed=1)
        assert (judge_server.count, generator_server.count) == (2, 2)


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def test_ragmetrics_calibrate_and_judge_pool_take_the_attempt_timeout(tmp_path: Path) -> None:
    labels = tmp_path / "labels.jsonl"
    row = {"id": "a", "claim": "a SUPPORTED claim", "context_sentences": ["s"], "label": "SUPPORT"}
    labels.write_text(json.dumps(row) + "\n")
    timeouts = ["--timeout", str(STALL * 4), "--attempt-timeout", str(ATTEMPT), "--no-cache"]
    with serve(stalled(), answer=question) as server:
        code, out = run_cli(
            "calibrate", "--judge", "http", "--url", server.url, "--model", "m",
            "--labels", str(labels), "--format", "json", *timeouts,
        )  # fmt: skip
        assert code == 0, out
        assert json.loads(out)["n"] == 1 and server.count == 2
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "q", "doc_id": "d", "query": "a", "text": "b"}) + "\n")
    with serve(stalled(), answer=question) as server:
        code, out = run_cli(
            "judge-pool", "--pool", str(pool), "--judge", "http", "--url", server.url,
            "--model", "m", "--qrels-out", str(tmp_path / "supp.qrels"), "--format", "json",
            *timeouts,
        )  # fmt: skip
        assert code == 0, out
        assert json.loads(out)["asked"] == 1 and server.count == 2


def test_ragmetrics_generate_takes_the_attempt_timeout(tmp_path: Path) -> None:
    source = write_corpus(tmp_path / "corpus")
    with serve(stalled(), answer=question) as server:
        code, out = run_cli(
            "generate", "--corpus", str(source), "--out", str(tmp_path / "set"),
            "--queries", "1", "--generator", "http", "--url", server.url, "--model", "m",
            "--styles", "fact", "--no-answers", "--no-cache", "--leak-words", "0",
            "--timeout", str(STALL * 4), "--attempt-timeout", str(ATTEMPT),
        )  # fmt: skip
        assert code == 0, out
        assert server.count == 2
