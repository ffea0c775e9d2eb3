"""The chat transport on its own (what a judge and a generator share), against the scripted
server on 127.0.0.1: usage counts, retries and Retry-After, the reply size limit, redirects and
proxies, the key kept secret, concurrency with results in input order. The HTTP judge's tests
(tests/unit/judges/test_http_judge.py) cover the same paths through the judge."""

from __future__ import annotations

import email.utils
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.errors import ConfigError, RagMetricsError
from pytest_ragmetrics.transport import ChatClient, ChatReply, Cost, Endpoint, Naming, Secret, Usage
from pytest_ragmetrics.transport.client import completion_prompt, parse_usage, retry_after_seconds
from pytest_ragmetrics.transport.endpoint import request_url
from tests.helpers.fake_openai import Reply, completion, serve, text_completion

SECRET = "sk-transport-0123456789-SECRET"
NAMING = Naming("test client", ConfigError, "TEST_CHAT_URL", "TEST_CHAT_MODEL", "TEST_CHAT_KEY")
HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TEST_CHAT_URL", "TEST_CHAT_MODEL", "TEST_CHAT_KEY", "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


def client(url: str, *, sleep: Callable[[float], None] | None = None, **options: Any) -> ChatClient:
    options.setdefault("backoff", 0.0)
    chat = ChatClient(Endpoint(url, "m", **options), NAMING)
    if sleep is not None:
        chat.sleep = sleep
    return chat


def with_usage(content: str, usage: object) -> dict[str, object]:
    return {**completion(content), "usage": usage}


def test_reply_text_and_usage() -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 3, "total_tokens": 15}
    with serve([Reply(200, with_usage("Hi.", usage))]) as server:
        reply = client(server.url).complete(HELLO, temperature=0.0, max_tokens=5)
    assert reply == ChatReply("Hi.", Usage(12, 3))
    assert reply.usage is not None and reply.usage.total_tokens == 15
    body = server.requests[0]["body"]
    assert body == {
        "model": "m",
        "messages": HELLO,
        "stream": False,
        "temperature": 0.0,
        "max_tokens": 5,
    }


@pytest.mark.parametrize(
    ("data", "usage"),
    [
        (completion("x"), None),
        ({"usage": None}, None),
        ({"usage": "lots"}, None),
        ({"usage": {}}, None),
        ({"usage": {"prompt_tokens": 7}}, Usage(7, None)),
        ({"usage": {"prompt_tokens": True, "completion_tokens": -1}}, None),
        ({"usage": {"prompt_tokens": 1.5, "completion_tokens": 2}}, Usage(None, 2)),
    ],
)
def test_usage_is_read_when_the_server_sends_it(data: object, usage: Usage | None) -> None:
    assert parse_usage(data) == usage


def test_settings_from_the_environment_and_errors_in_the_callers_words(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    with pytest.raises(ConfigError, match=r"^test client: no endpoint; .* set TEST_CHAT_URL"):
        ChatClient(Endpoint(None, "m"), NAMING)
    with pytest.raises(ConfigError, match=r"^test client: no model; .* set TEST_CHAT_MODEL"):
        ChatClient(Endpoint("http://h", None), NAMING)
    with pytest.raises(ConfigError, match=r"\(TEST_CHAT_KEY by default\)"):
        ChatClient(Endpoint("http://k:pw@h", "m"), NAMING)
    with pytest.raises(ConfigError, match="concurrency must be a positive integer"):
        ChatClient(Endpoint("http://h", "m", concurrency=0), NAMING)
    monkeypatch.setenv("TEST_CHAT_URL", "http://example.invalid:8000/v1")
    monkeypatch.setenv("TEST_CHAT_MODEL", "env-model")
    from_env = ChatClient(Endpoint(), NAMING)
    assert (from_env.url, from_env.model) == (
        "http://example.invalid:8000/v1/chat/completions",
        "env-model",
    )


@pytest.mark.parametrize(
    ("base", "api", "path"),
    [
        ("http://h:8000", "chat", "/v1/chat/completions"),
        ("http://h:8000/v1/", "completions", "/v1/completions"),
        ("http://h:8000/v1/chat/completions", "completions", "/v1/completions"),
        ("http://h:8000/v1/completions", "chat", "/v1/chat/completions"),
        ("http://h:8000/api/chat/completions", "chat", "/api/chat/completions"),
        ("http://h:8000/api", "completions", "/api/v1/completions"),
    ],
)
def test_the_request_url_names_the_api_route(base: str, api: str, path: str) -> None:
    assert request_url(base, NAMING, api)[0] == "http://h:8000" + path


def test_the_completions_api_sends_one_prompt_and_reads_the_text() -> None:
    messages = [
        {"role": "system", "content": "Examples."},
        {"role": "user", "content": ""},
        {"role": "user", "content": "Abstract: x\nClaim:"},
    ]
    assert completion_prompt(messages) == "Examples.\n\nAbstract: x\nClaim:"
    with serve(answer=lambda prompt: f" {len(prompt)} chars") as server:
        reply = client(server.url, api="completions").complete(messages, max_tokens=8)
    request = server.requests[0]
    assert request["path"] == "/v1/completions"
    assert request["body"] == {
        "model": "m",
        "prompt": "Examples.\n\nAbstract: x\nClaim:",
        "stream": False,
        "max_tokens": 8,
    }
    assert reply.text == " 29 chars"  # as sent: the prompt was 29 characters


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (completion("chat shaped"), r"no choices\[0\]\.text \(got"),
        (text_completion(["a", "list"]), "text is list, not text"),
        ("<html>", "not JSON .* OpenAI-compatible /v1/completions endpoint"),
    ],
)
def test_a_completions_reply_of_another_shape_is_a_clear_error(body: object, message: str) -> None:
    with serve([Reply(200, body)]) as server, pytest.raises(ConfigError, match=message):
        client(server.url, api="completions").complete(HELLO)


def test_an_unknown_api_is_refused_before_any_request() -> None:
    with pytest.raises(ConfigError, match="api must be one of chat, completions, got 'legacy'"):
        ChatClient(Endpoint("http://h", "m", api="legacy"), NAMING)


def test_5xx_and_429_are_retried_with_backoff_and_retry_after() -> None:
    waits: list[float] = []
    script = [Reply(503, "busy"), Reply(429, "slow down", {"Retry-After": "1.5"}), Reply(502, "")]
    with serve(script) as server:
        reply = client(server.url, backoff=0.5, sleep=waits.append).complete(HELLO)
        assert server.count == 4
    assert reply.text == "No."
    assert 0.5 <= waits[0] <= 0.55  # exponential backoff from 0.5 s, a little jitter
    assert waits[1] == 1.5  # what the server asked
    assert 2.0 <= waits[2] <= 2.2


def test_retry_after_as_an_http_date() -> None:
    when = email.utils.formatdate(time.time() + 30, usegmt=True)
    assert 25 <= (retry_after_seconds(when) or 0) <= 30
    assert retry_after_seconds(email.utils.formatdate(time.time() - 60, usegmt=True)) == 0.0
    assert retry_after_seconds("soon") is None
    assert retry_after_seconds("nan") is None
    waits: list[float] = []
    with serve([Reply(429, "", {"Retry-After": when})]) as server:
        client(server.url, sleep=waits.append).complete(HELLO)
    assert len(waits) == 1 and 25 <= waits[0] <= 30


def test_retries_exhausted_name_the_attempts() -> None:
    with serve([Reply(500, "down")] * 3) as server:
        with pytest.raises(
            ConfigError, match=r"^test client: .* answered HTTP 500 3 times \(down\)"
        ):
            client(server.url, max_retries=2, sleep=lambda s: None).complete(HELLO)
        assert server.count == 3


def test_client_errors_and_501_are_not_retried() -> None:
    for status in (400, 404, 501):
        with serve([Reply(status, "no")]) as server:
            with pytest.raises(ConfigError, match=f"HTTP {status}"):
                client(server.url).complete(HELLO)
            assert server.count == 1


def test_a_reply_over_one_mib_is_refused() -> None:
    big = completion("x" * (1 << 20))
    with serve([Reply(200, big)]) as server, pytest.raises(ConfigError, match="larger than 1 MiB"):
        client(server.url).complete(HELLO)


def test_redirects_are_not_followed_and_name_the_client() -> None:
    with serve() as other:
        with (
            serve([Reply(302, "", {"Location": other.url})]) as server,
            pytest.raises(ConfigError, match="the test client only talks to the URL"),
        ):
            client(server.url).complete(HELLO)
        assert other.count == 0


def test_environment_proxies_only_when_asked(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve() as server:
        monkeypatch.setenv("HTTP_PROXY", server.url)  # the "proxy" is the server itself
        monkeypatch.setenv("http_proxy", server.url)
        monkeypatch.delenv("NO_PROXY", raising=False)
        monkeypatch.delenv("no_proxy", raising=False)
        client(server.url).complete(HELLO)
        assert server.requests[-1]["path"] == "/v1/chat/completions"
        client("http://example.invalid:9", use_env_proxy=True).complete(HELLO)
        # Through a proxy the request line holds the absolute URL of the target.
        assert server.requests[-1]["path"] == "http://example.invalid:9/v1/chat/completions"


def test_the_key_is_sent_and_never_shown(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TEST_CHAT_KEY", SECRET)

    def echo(handler: object) -> object:
        return "refused " + handler.headers["Authorization"]  # type: ignore[attr-defined]

    texts: list[str] = []
    with serve([Reply(200, lambda h: completion(h.headers["Authorization"]))]) as server:
        chat = client(server.url)
        texts += [repr(chat), repr(vars(chat)), str(Secret(SECRET)), chat.complete(HELLO).text]
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
        for script in ([Reply(401, echo)], [Reply(503, echo)] * 2, [Reply(200, echo)]):
            server.script[:] = script
            with pytest.raises(RagMetricsError) as info:
                client(server.url, max_retries=1).complete(HELLO)
            texts += [str(info.value), "".join(traceback.format_exception(info.value))]
    # The reply is data: returned as the server sent it; only messages are scrubbed.
    assert texts[3] == f"Bearer {SECRET}"
    del texts[3]
    for text in texts:
        assert SECRET not in text, text


def test_a_short_key_leaves_replies_untouched_and_is_masked_whole_in_messages(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_CHAT_KEY", "x")
    answer = "max(x) is six; the box holds x items"
    body = {"error": {"message": "bad key x for max_tokens"}}
    with serve([Reply(200, completion(answer)), Reply(401, body)]) as server:
        assert client(server.url).complete(HELLO).text == answer
        with pytest.raises(RagMetricsError) as info:
            client(server.url).complete(HELLO)
    message = str(info.value)
    assert "bad key *** for max_tokens" in message  # whole occurrences only
    assert " x " not in message


def test_a_key_straddling_the_quoted_length_is_scrubbed_before_the_cut(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_CHAT_KEY", SECRET)
    for status in (400, 200):
        padding = "p" * (190 if status == 400 else 175)
        script = [Reply(status, f"{padding} {SECRET} tail")]
        with serve(script) as server, pytest.raises(RagMetricsError) as info:
            client(server.url).complete(HELLO)
        assert SECRET[:8] not in str(info.value), str(info.value)


@pytest.mark.parametrize(
    "url",
    [
        "htps://user:hunter2pw@127.0.0.1:8080/v1",
        "http://user:hunter2pw@",
        "http://user:hunter2pw@/v1",
        "user:hunter2pw@127.0.0.1:8080",
        "ftp://user:hunter2pw@host/v1",
    ],
)
def test_a_bad_url_with_credentials_is_never_echoed_with_its_password(
    monkeypatch: pytest.MonkeyPatch, url: str
) -> None:
    for given in (url, None):
        monkeypatch.setenv("TEST_CHAT_URL", url)
        with pytest.raises(ConfigError) as info:
            ChatClient(Endpoint(given, "m"), NAMING)
        assert "hunter2pw" not in str(info.value)
        assert "base URL" in str(info.value) or "credentials" in str(info.value)


def test_map_keeps_input_order_and_reports_the_first_failure_in_that_order() -> None:
    in_flight, peak = 0, 0
    lock = threading.Lock()

    def slow(prompt: str) -> str:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.2 + 0.05 * (5 - int(prompt)))  # all in flight; later items finish first
        with lock:
            in_flight -= 1
        return f"reply {prompt}"

    conversations = [[{"role": "user", "content": str(i)}] for i in range(5)]
    with serve(answer=slow) as server:
        chat = client(server.url, concurrency=5)
        replies = chat.complete_many(conversations)
        assert [r.text for r in replies] == [f"reply {i}" for i in range(5)]
        assert peak == 5
        assert chat.requests_sent == 5

        def fail_late(i: int) -> int:
            time.sleep(0.1 if i == 1 else 0.0)
            if i in (1, 3):
                raise ConfigError(f"item {i}")
            return i

        with pytest.raises(ConfigError, match="item 1"):
            chat.map(fail_late, [0, 1, 2, 3])
        assert client(server.url).map(str, [3, 1, 2]) == ["3", "1", "2"]


def test_the_timeout_bounds_the_whole_call_retries_included() -> None:
    # Each attempt answers 503 after 0.4 s: ten retries would take 4.4 s; the deadline is 1 s.
    with serve([Reply(503, "busy", delay=0.4)] * 11) as server:
        start = time.monotonic()
        with pytest.raises(ConfigError) as info:
            client(server.url, timeout=1.0, max_retries=10).complete(HELLO)
        elapsed = time.monotonic() - start
    assert elapsed < 2.0, elapsed
    assert server.count <= 3
    assert "the timeout of 1 s bounds the whole call, retries included" in str(info.value)


def test_a_hung_attempt_may_be_retried_within_the_deadline() -> None:
    with serve([Reply(delay=1.5)]) as server:
        reply = client(server.url, timeout=5.0, attempt_timeout=0.2, max_retries=2).complete(HELLO)
    assert reply.text and server.count == 2
    with serve([Reply(delay=1.5)]) as server, pytest.raises(ConfigError, match=r"within 0\.5 s"):
        client(server.url, timeout=0.5, max_retries=2).complete(HELLO)  # no time left to retry


def test_the_cli_never_echoes_the_password_of_a_bad_url(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ragmetrics.cli import main

    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"query_id": "q", "doc_id": "d", "query": "a", "text": "b"}\n')
    url = "htps://user:hunter2pw@127.0.0.1:8080/v1"
    argv = ["judge-pool", "--pool", str(pool), "--judge", "http", "--url", url, "--model", "m",
            "--no-cache", "--qrels-out", str(tmp_path / "s.qrels")]  # fmt: skip
    assert main(argv) != 0
    captured = capsys.readouterr()
    assert "htps://***@127.0.0.1:8080/v1" in captured.err + captured.out
    assert "hunter2pw" not in captured.err + captured.out


@pytest.mark.parametrize(
    ("cost", "text"),
    [
        # No call reported usage (a function generator, an endpoint without "usage").
        (Cost(calls=4, unmetered=4), "4 calls (0 cached), usage not reported"),
        (Cost(calls=2, cache_hits=3, unmetered=2), "2 calls (3 cached), usage not reported"),
        (Cost(cache_hits=4), "0 calls (4 cached)"),
        (Cost(cache_hits=1, replayed=4), "0 calls (1 cached, 4 replayed from a recording)"),
        (
            Cost(calls=3, prompt_tokens=30, completion_tokens=3),
            "3 calls (0 cached), 33 tokens (30 prompt + 3 completion)",
        ),
        (
            Cost(calls=3, prompt_tokens=20, completion_tokens=2, unmetered=1),
            "3 calls (0 cached), 22 tokens (20 prompt + 2 completion); 1 calls reported no usage",
        ),
    ],
)
def test_a_cost_says_when_usage_was_not_reported(cost: Cost, text: str) -> None:
    assert cost.describe() == text
