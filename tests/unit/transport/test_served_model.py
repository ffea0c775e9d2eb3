"""The model a client names must be one the server serves: llama.cpp's server answers a name
it does not know with its default model and echoes the name back, so replies would be recorded
(cached, calibrated, compared) under a model that never ran. The server's own list
(``GET /v1/models``) is asked once per client, before its first request."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from pytest_ragmetrics import dryrun
from pytest_ragmetrics.errors import ConfigError, DryRun, JudgeError
from pytest_ragmetrics.judges import HttpJudge
from pytest_ragmetrics.transport import ChatClient, Endpoint, Naming
from tests.helpers.fake_openai import serve

NAMING = Naming("test client", ConfigError, "TEST_CHAT_URL", "TEST_CHAT_MODEL", "TEST_CHAT_KEY")
HELLO = [{"role": "user", "content": "hello"}]


def client(url: str, model: str, **options: Any) -> ChatClient:
    return ChatClient(Endpoint(url, model, backoff=0.0, **options), NAMING)


def test_a_model_the_server_does_not_list_is_refused_before_any_request() -> None:
    with serve(models=["smollm2"]) as server:
        chat = client(server.url, "gpt-4o-mini")
        for _ in range(2):  # refused every time, never sent
            with pytest.raises(ConfigError) as info:
                chat.complete(HELLO)
            message = str(info.value)
            assert f"{server.url} does not serve model 'gpt-4o-mini'; it lists 'smollm2'" in message
            assert "TEST_CHAT_MODEL" in message and "--model_alias" in message
        assert server.count == 0 and chat.requests_sent == 0
        assert len(server.listings) == 1  # asked once per client
        assert server.listings[0]["path"] == "/v1/models"


@pytest.mark.parametrize(
    ("model", "listed"),
    [
        ("smollm2", ["smollm2"]),
        ("gpt-4o-mini", ["gpt-4o", "gpt-4o-mini", "gpt-4o-mini-2024-07-18"]),
        ("llama3", ["llama3:latest"]),  # Ollama lists the tag it serves a bare name as
    ],
)
def test_a_listed_model_is_sent_and_the_list_asked_once(model: str, listed: list[str]) -> None:
    with serve(models=listed) as server:
        chat = client(server.url, model)
        for _ in range(3):
            chat.complete(HELLO)
        assert server.count == 3 and len(server.listings) == 1


def test_a_server_that_lists_no_models_is_not_checked() -> None:
    with serve() as server:  # GET answered 501
        client(server.url, "anything").complete(HELLO)
        assert server.count == 1 and len(server.listings) == 1
    with serve(models=[]) as server:
        client(server.url, "anything").complete(HELLO)
        assert server.count == 1


def test_the_list_is_asked_with_the_key_and_under_the_configured_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TEST_CHAT_KEY", "sk-served-model-0123456789")
    with serve(models=["m"]) as server:
        client(server.url + "/v1", "m", api_key_env="TEST_CHAT_KEY").complete(HELLO)
        listing = server.listings[0]
    assert listing["path"] == "/v1/models"
    assert listing["headers"]["Authorization"] == "Bearer sk-served-model-0123456789"


def test_concurrent_first_requests_all_refused() -> None:
    with serve(models=["smollm2"]) as server:
        chat = client(server.url, "other", concurrency=4)
        errors: list[BaseException] = []

        def ask() -> None:
            try:
                chat.complete(HELLO)
            except ConfigError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=ask) for _ in range(4)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert len(errors) == 4 and server.count == 0 and len(server.listings) == 1


def test_a_dry_run_asks_nothing() -> None:
    with serve(models=["smollm2"]) as server:
        chat = client(server.url, "other")
        dryrun.start()
        try:
            with pytest.raises(DryRun):
                chat.complete(HELLO)
        finally:
            dryrun.stop()
        assert server.listings == [] and server.count == 0


def test_the_judge_says_which_model_the_server_serves() -> None:
    with serve(models=["smollm2"]) as server:
        judge = HttpJudge(Endpoint(server.url, "gpt-4o-mini", backoff=0.0))
        with pytest.raises(JudgeError) as info:
            judge.judge_claims(["The sky is blue."], {"d1": "The sky is blue."})
        assert "does not serve model 'gpt-4o-mini'; it lists 'smollm2'" in str(info.value)
        assert server.count == 0
