"""HttpJudge against a scripted OpenAI-compatible server on 127.0.0.1: questions asked, fault
paths (timeout, 429, 5xx, malformed replies, garbage verdicts, redirects), the verdict cache,
and that the API key never leaks."""

from __future__ import annotations

import json
import math
import socket
import threading
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.errors import CacheWarning, JudgeError
from pytest_ragmetrics.judges import HttpJudge, calibrate, save_calibration
from pytest_ragmetrics.judges.calibration import LabelledClaim
from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL, parse_yes_no
from pytest_ragmetrics.metrics.answer import evaluate_answers
from pytest_ragmetrics.transport import Endpoint, Sampling
from tests.helpers.fake_openai import Reply, completion, serve

SECRET = "sk-test-9f8e7d6c5b4a-SECRET"
CONTEXTS = ["The Eiffel Tower is in Paris.", "It was finished in 1889."]
ANSWER = "The tower is in Paris SUPPORTED. It is made of cheese."


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY, "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


def judge(url: str, *, sleep: Callable[[float], None] | None = None, **options: Any) -> HttpJudge:
    """An HttpJudge of model test-model at ``url`` (no backoff): ``options`` are its endpoint's
    and its sampling's settings and its own arguments; ``sleep`` is how its client waits."""
    given = {"url": url, "model": "test-model", "backoff": 0.0, **options}
    endpoint, sampling = Endpoint.take(given), Sampling.take(given)
    made = HttpJudge(endpoint, sampling=sampling, **given)
    if sleep is not None:
        made.client.sleep = sleep
    return made


def test_one_narrow_question_per_claim_plus_relevance() -> None:
    with serve() as server:
        assessment = judge(server.url).assess(
            "Where is the tower RELEVANT?", ANSWER, CONTEXTS, query_id="q1"
        )
    assert [c.supported for c in assessment.claims] == [True, False]
    assert [c.verdict for c in assessment.claims] == ["Yes.", "No."]
    assert assessment.groundedness == 0.5
    assert assessment.addresses_question is False  # the answer line has no RELEVANT marker
    assert assessment.raw["relevance"] == "No."
    assert server.count == 3
    first = server.requests[0]
    assert first["path"] == "/v1/chat/completions"
    body = first["body"]
    assert body["model"] == "test-model"
    assert body["temperature"] == 0 and body["seed"] == 0 and body["stream"] is False
    prompt = body["messages"][-1]["content"]
    assert "Claim: The tower is in Paris SUPPORTED." in prompt
    assert "[0] The Eiffel Tower is in Paris.\n[1] It was finished in 1889." in prompt
    assert prompt.endswith("Is this claim supported by this context? Answer yes or no.")
    relevance = server.requests[2]["body"]["messages"][-1]["content"]
    assert "Does this answer address the question? Answer yes or no." in relevance
    assert "Authorization" not in first["headers"]  # no key configured: none sent
    identity = assessment.judge
    assert identity["name"] == "http" and identity["model"] == "test-model"
    assert "Is this claim supported by this context?" in identity["rubric"]


@pytest.mark.parametrize(
    ("base", "path"),
    [
        ("{url}", "/v1/chat/completions"),
        ("{url}/", "/v1/chat/completions"),
        ("{url}/v1", "/v1/chat/completions"),
        ("{url}/api/v1/", "/api/v1/chat/completions"),
        ("{url}/v1/chat/completions", "/v1/chat/completions"),
    ],
)
def test_base_url_forms(base: str, path: str) -> None:
    with serve() as server:
        judge(base.format(url=server.url)).judge_claims(["x"], ["y"])
    assert server.requests[0]["path"] == path


def test_url_model_and_key_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve() as server:
        monkeypatch.setenv(ENV_URL, server.url)
        monkeypatch.setenv(ENV_MODEL, "env-model")
        monkeypatch.setenv(ENV_API_KEY, SECRET)
        HttpJudge(Endpoint(backoff=0)).judge_claims(["x"], ["y"])
    assert server.requests[0]["body"]["model"] == "env-model"
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"


def test_key_env_var_name_is_configurable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MY_JUDGE_KEY", SECRET)
    with serve() as server:
        judge(server.url, api_key_env="MY_JUDGE_KEY").judge_claims(["x"], ["y"])
    assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"


@pytest.mark.parametrize(
    ("endpoint", "kwargs", "message"),
    [
        (Endpoint(model="m"), {}, ENV_URL),
        (Endpoint("http://127.0.0.1:9"), {}, ENV_MODEL),
        (Endpoint("ftp://host", "m"), {}, "must look like http"),
        (Endpoint("http://user:pw@host", "m"), {}, "credentials"),
        (Endpoint("http://h", "m", timeout=0), {}, "timeout must be > 0"),
        (Endpoint("http://h", "m", attempt_timeout=-1), {}, "attempt_timeout must be > 0"),
        (Endpoint("http://h", "m"), {"unparseable": "skip"}, "unparseable"),
        (Endpoint("http://h", "m"), {"prompts": {"support": "Claim?"}}, "{claim}"),
        (Endpoint("http://h", "m"), {"prompts": {"user": "x"}}, r"prompts\['user'\] is not a role"),
    ],
)
def test_configuration_errors(endpoint: Endpoint, kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(JudgeError, match=message.replace("{", r"\{").replace("}", r"\}")):
        HttpJudge(endpoint, **kwargs)


def test_timeout_is_retried_then_reported() -> None:
    with serve([Reply(delay=1.5), Reply(delay=1.5)]) as server:
        j = judge(server.url, timeout=5, attempt_timeout=0.2, max_retries=1)
        with pytest.raises(JudgeError, match=r"no reply .* within 0.2 s \(2 attempts\)") as e:
            j.judge_claims(["x"], ["y"])
        assert server.count == 2
    # It names where each timeout is set: in Python, in pytest, on the command line.
    assert (
        "raise the attempt timeout (attempt_timeout= / ragmetrics_judge_attempt_timeout / "
        "--attempt-timeout) or the deadline (timeout= / ragmetrics_judge_timeout / --timeout)"
    ) in str(e.value)


def test_timeout_then_success() -> None:
    with serve([Reply(delay=1.5)]) as server:
        j = judge(server.url, timeout=5, attempt_timeout=0.2, max_retries=2)
        claims = j.judge_claims(["SUPPORTED"], ["y"])
    assert claims[0].supported is False or claims[0].supported is True
    assert server.count == 2


def test_429_is_retried_after_the_servers_retry_after() -> None:
    waits: list[float] = []
    script = [Reply(429, {"error": "slow down"}, {"Retry-After": "2"})]
    with serve(script) as server:
        j = judge(server.url, sleep=waits.append)
        claims = j.judge_claims(["The tower is in Paris SUPPORTED."], CONTEXTS)
    assert claims[0].supported is True
    assert server.count == 2
    assert waits == [2.0]


def test_retry_after_longer_than_max_backoff_is_an_error() -> None:
    script = [Reply(429, "busy", {"Retry-After": "3600"})]
    with serve(script) as server:
        j = judge(server.url, max_backoff=30, sleep=lambda s: None)
        with pytest.raises(JudgeError, match=r"asks to wait 3600 s .*max_backoff=30"):
            j.judge_claims(["x"], ["y"])
        assert server.count == 1


def test_5xx_backs_off_exponentially_then_fails() -> None:
    waits: list[float] = []
    with serve([Reply(503, "overloaded")] * 3) as server:
        j = judge(server.url, max_retries=2, backoff=0.5, sleep=waits.append)
        with pytest.raises(JudgeError, match=r"HTTP 503 3 times \(overloaded\)") as e:
            j.judge_claims(["x"], ["y"])
        assert "lower the concurrency (concurrency= / ragmetrics_judge_concurrency" in str(e.value)
        assert "raise max_retries= and backoff= (arguments of the Endpoint in Python)" in str(
            e.value
        )
        assert server.count == 3
    assert len(waits) == 2
    assert 0.5 <= waits[0] <= 0.55 and 1.0 <= waits[1] <= 1.1


def test_500_then_success() -> None:
    with serve([Reply(500, "oops"), Reply(502, ""), Reply(529, "overloaded")]) as server:
        claims = judge(server.url).judge_claims(["a SUPPORTED claim"], ["ctx"])
    assert claims[0].supported is True
    assert server.count == 4


@pytest.mark.parametrize(
    ("status", "hint"),
    [
        (400, "model name"),
        (401, ENV_API_KEY),
        (403, ENV_API_KEY),
        (404, ENV_URL),
        (501, "check the server"),
    ],
)
def test_client_errors_are_not_retried(status: int, hint: str) -> None:
    with serve([Reply(status, {"error": {"message": "nope"}})]) as server:
        with pytest.raises(JudgeError, match=f"HTTP {status}") as info:
            judge(server.url).judge_claims(["x"], ["y"])
        assert server.count == 1
    assert hint in str(info.value)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("this is not json", "not JSON"),
        ({"choices": []}, r"no choices\[0\].message.content"),
        ({"error": {"message": "model not loaded"}}, "model not loaded"),
        (completion(None), "content is NoneType"),
        ([1, 2, 3], r"no choices\[0\]"),
    ],
)
def test_malformed_replies(body: object, message: str) -> None:
    with serve([Reply(200, body)]) as server, pytest.raises(JudgeError, match=message):
        judge(server.url).judge_claims(["x"], ["y"])


def test_garbage_verdict_is_an_error() -> None:
    garbage = "Well, it depends on many things"
    message = r"replied 'Well, it depends.*instead of yes or no"
    with serve(answer=lambda p: garbage) as server, pytest.raises(JudgeError, match=message):
        judge(server.url).judge_claims(["x"], ["y"])


def test_garbage_verdict_can_be_left_unjudged(tmp_path: Path) -> None:
    with serve(answer=lambda prompt: "Perhaps.") as server:
        j = judge(server.url, unparseable="unjudged", cache=tmp_path)
        assessment = j.assess("q?", "One claim.", ["ctx"], query_id="q")
        assert assessment.claims[0].supported is None
        assert assessment.claims[0].verdict == "Perhaps."
        assert math.isnan(assessment.groundedness)
        assert assessment.addresses_question is None
        evaluation = evaluate_answers([assessment])
        assert evaluation.details["no_claims"].tolist() == [1]
        # An unparseable reply is no verdict: not cached, so a judge that wants yes/no asks
        # again (and raises on the same reply).
        strict = judge(server.url, cache=tmp_path)
        before = server.count
        with pytest.raises(JudgeError, match="instead of yes or no"):
            strict.judge_claims(["One claim."], ["ctx"])
        assert server.count == before + 1


@pytest.mark.parametrize(
    ("reply", "verdict"),
    [
        ("Yes", True),
        ("yes.", True),
        ("**Yes**, it is.", True),
        ("Answer: no", False),
        ("NO - the context says otherwise", False),
        ("  no\n", False),
        ("Yesterday", None),
        ("I think yes", None),
        ("", None),
        # The instruction echoed back: both words, no verdict (a "yes" by the first word).
        ("Answer yes or no: no", None),
        ("Yes or no? Not supported.", None),
        ("yes/no", None),
        ("No. The passage does say yes to the dose.", None),
        ("Yes, yes.", True),
        ("No, no support.", False),
    ],
)
def test_parse_yes_no(reply: str, verdict: bool | None) -> None:
    assert parse_yes_no(reply) is verdict


def test_connection_refused_is_retried_then_reported() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    waits: list[float] = []
    j = judge(f"http://127.0.0.1:{port}", max_retries=2, sleep=waits.append)
    with pytest.raises(JudgeError, match=r"cannot connect .* after 3 attempts"):
        j.judge_claims(["x"], ["y"])
    assert len(waits) == 2


def test_redirects_to_another_host_are_not_followed(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(ENV_API_KEY, SECRET)
    with serve() as other:
        script = [Reply(307, "", {"Location": other.url + "/v1/chat/completions"})]
        with serve(script) as server:
            with pytest.raises(JudgeError, match="only talks to the URL it is given"):
                judge(server.url).judge_claims(["x"], ["y"])
            assert server.count == 1
        assert other.count == 0


def test_environment_proxies_are_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.1:9")
    monkeypatch.setenv("http_proxy", "http://127.0.0.1:9")
    monkeypatch.delenv("NO_PROXY", raising=False)
    monkeypatch.delenv("no_proxy", raising=False)
    with serve() as server:
        judge(server.url).judge_claims(["x"], ["y"])
    assert server.count == 1


def test_verdicts_are_cached_so_a_rerun_asks_nothing(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    with serve() as server:
        first = judge(server.url, cache=cache).assess("Q RELEVANT?", ANSWER, CONTEXTS, query_id="q")
        asked = server.count
        assert asked == 3
        again = judge(server.url, cache=Cache(cache))
        second = again.assess("Q RELEVANT?", ANSWER, CONTEXTS, query_id="q")
        assert server.count == asked  # zero requests on the rerun
        assert again.requests_sent == 0
    assert second.to_dict() == first.to_dict()
    scores = [evaluate_answers([a]).to_dict() for a in (first, second)]
    assert scores[0] == scores[1]
    # Three verdicts cached, and no lock file left beside any of them.
    assert len([p for p in cache.rglob("*") if p.is_file() and p.suffix == ".json"]) >= 3
    assert not [p.name for p in cache.rglob("*.lock")]


def test_cache_key_follows_model_rubric_and_inputs(tmp_path: Path) -> None:
    with serve() as server:
        judge(server.url, cache=tmp_path).judge_claims(["x"], ["y"])
        judge(server.url, cache=tmp_path).judge_claims(["x"], ["y"])
        assert server.count == 1
        judge(server.url, cache=tmp_path).judge_claims(["x"], ["y", "z"])
        assert server.count == 2
        HttpJudge(Endpoint(server.url, "other-model"), cache=tmp_path).judge_claims(["x"], ["y"])
        assert server.count == 3
        judge(server.url, cache=tmp_path, prompts={"system": "Be strict."}).judge_claims(
            ["x"], ["y"]
        )
        assert server.count == 4
        judge(server.url, cache=tmp_path, seed=7).judge_claims(["x"], ["y"])
        assert server.count == 5


def test_a_cached_verdict_its_reply_does_not_say_is_asked_again(tmp_path: Path) -> None:
    # An older parser stored "Answer yes or no: no" as a yes; the entry is not trusted today.
    with serve() as server:
        judge(server.url, cache=tmp_path).judge_claims(["x SUPPORTED"], ["y"])
        assert server.count == 1
        [entry] = [p for p in tmp_path.rglob("*.json") if p.is_file()]
        stored = json.loads(entry.read_text())
        found = next(v for v in _dicts(stored) if "verdict" in v)
        found["reply"], found["verdict"] = "Answer yes or no: no", True
        stored.pop("value_sha256")  # as an entry written before the cache's checksums
        entry.write_text(json.dumps(stored))
        with pytest.warns(CacheWarning, match="does not have the shape"):
            claims = judge(server.url, cache=tmp_path).judge_claims(["x SUPPORTED"], ["y"])
        assert server.count == 2
    assert claims[0].supported is True and claims[0].verdict == "Yes."


def _dicts(value: Any) -> list[dict[str, Any]]:
    """Every object in a JSON value, outermost first."""
    if isinstance(value, dict):
        return [value] + [d for v in value.values() for d in _dicts(v)]
    if isinstance(value, list):
        return [d for v in value for d in _dicts(v)]
    return []


def test_failed_questions_are_not_cached(tmp_path: Path) -> None:
    with serve([Reply(200, "garbage")]) as server:
        with pytest.raises(JudgeError):
            judge(server.url, cache=tmp_path).judge_claims(["x"], ["y"])
        claims = judge(server.url, cache=tmp_path).judge_claims(["x SUPPORTED"], ["y"])
        assert claims[0].supported is True
        assert server.count == 2


def test_no_context_means_unsupported_without_asking() -> None:
    with serve() as server:
        claims = judge(server.url).judge_claims(["x"], [])
    assert claims[0].supported is False
    assert server.count == 0


def _all_text(folder: Path) -> str:
    return "\n".join(
        p.read_bytes().decode("utf-8", "replace") for p in folder.rglob("*") if p.is_file()
    )


def test_api_key_never_written_or_raised(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """A server that echoes the Authorization header back in its errors cannot get the key
    into an error; the cache, the assessment, reports and calibration files hold none of it.
    (A reply's content is data, stored as sent: see the test after this one.)"""
    monkeypatch.setenv(ENV_API_KEY, SECRET)

    def echo(handler: object) -> dict[str, object]:
        auth = handler.headers.get("Authorization", "")  # type: ignore[attr-defined]
        return completion("Yes." if auth == f"Bearer {SECRET}" else "No.")

    def echo_error(handler: object) -> str:
        return "denied for " + handler.headers.get("Authorization", "")  # type: ignore[attr-defined]

    cache = tmp_path / "cache"
    errors: list[str] = []
    with serve([Reply(200, echo)] * 3) as server:
        j = judge(server.url, cache=cache)
        assert SECRET not in repr(j) and SECRET not in repr(vars(j))
        assessment = j.assess("Q?", ANSWER, CONTEXTS, query_id="q1")
        assert server.requests[0]["headers"]["Authorization"] == f"Bearer {SECRET}"
        assert assessment.claims[0].verdict == "Yes."
        for script in (
            [Reply(401, echo_error)],
            [Reply(503, echo_error)] * 4,
            [Reply(200, echo_error)],
            [Reply(200, lambda h: completion("Maybe " + h.headers["Authorization"]))],
            [Reply(200, lambda h: {"error": h.headers["Authorization"]})],
        ):
            server.script[:] = script
            with pytest.raises(JudgeError) as info:
                judge(server.url, max_retries=3).judge_claims(["another claim"], ["ctx"])
            errors.append(str(info.value))
            errors.append("".join(traceback.format_exception(info.value)))
    labels = [LabelledClaim("x", "The tower is in Paris SUPPORTED.", tuple(CONTEXTS), "SUPPORT")]
    with serve(answer=lambda p: "yes") as server:
        result = calibrate(judge(server.url, cache=cache), labels)
    save_calibration(tmp_path / "calibration.json", result)
    report = tmp_path / "report.json"
    report.write_text(
        json.dumps(
            {
                "assessment": assessment.to_dict(),
                "evaluation": evaluate_answers([assessment]).to_dict(),
                "calibration": result.to_dict(items=True),
            }
        )
    )
    assert len(errors) == 10
    for text in errors:
        assert SECRET not in text, text
    written = _all_text(tmp_path)
    assert "Yes." in written
    assert SECRET not in written
    assert SECRET[:12] not in written


def test_replies_are_data_never_scrubbed_even_by_a_one_letter_key(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """RAGMETRICS_JUDGE_API_KEY=x once turned every x of every verdict into ***; a reply is
    stored and shown as the server sent it, and only error messages are scrubbed."""
    monkeypatch.setenv(ENV_API_KEY, "x")
    reply = "Yes, x marks the box (max 6)."
    with serve(answer=lambda p: reply) as server:
        assessment = judge(server.url, cache=tmp_path / "c").assess("Q?", ANSWER, CONTEXTS)
        server.answer = lambda p: "x"
        with pytest.raises(JudgeError) as info:
            judge(server.url).judge_claims(["another claim"], ["ctx"])
    assert {c.verdict for c in assessment.claims} == {reply}
    assert "replied '***' to the claim support question" in str(info.value)


def test_judge_garbage_through_evaluate_is_our_error() -> None:
    script = [Reply(200, b"\xff\xfe garbage")]
    with serve(script) as server, pytest.raises(JudgeError, match="malformed reply"):
        judge(server.url).assess("q", "a claim.", ["ctx"])


@pytest.mark.parametrize("concurrency", [1, 3])
def test_calibration_error_names_the_labels_file_line(tmp_path: Path, concurrency: int) -> None:
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"id": f"c{i}", "claim": claim, "context_sentences": ["Cats purr."], "label": label}
        for i, (claim, label) in enumerate(
            [("Cats purr.", "SUPPORT"), ("Cats bark.", "NOINFO"), ("Cats fly.", "SUPPORT")]
        )
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def reply(prompt: str) -> str:
        claim = prompt.split("Claim: ")[1]
        return "Who knows?" if claim.startswith("Cats fly") else "yes"

    with serve(answer=reply) as server, pytest.raises(JudgeError) as info:
        calibrate(judge(server.url, concurrency=concurrency, cache=tmp_path / "c"), labels)
    message = str(info.value)
    assert message.startswith(f"{labels}:3: claim 'c2': ")
    assert "replied 'Who knows?'" in message


def test_concurrency_overlaps_questions_and_changes_no_verdict() -> None:
    in_flight, peak = 0, 0
    lock = threading.Lock()

    def slow_answer(prompt: str) -> str:
        nonlocal in_flight, peak
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.2)  # long enough for all four to be asked before the first is answered
        with lock:
            in_flight -= 1
        return "yes" if "purr" in prompt.split("Claim: ")[1] else "no"

    answer = "Cats purr. Cats fly. Cats purr loudly. Cats bark. Cats purr softly. Cats swim."
    results = {}
    for concurrency in (1, 4):
        peak = 0
        with serve(answer=slow_answer) as server:
            j = judge(server.url, concurrency=concurrency, judge_relevance=False)
            results[concurrency] = j.assess("Do cats purr?", answer, CONTEXTS, query_id="q")
            assert j.requests_sent == 6
        assert peak == (1 if concurrency == 1 else 4), (concurrency, peak)
    assert results[1] == results[4]
    assert [c.supported for c in results[4].claims] == [True, False, True, False, True, False]


@pytest.mark.parametrize("value", [0, -2, 1.5])
def test_concurrency_must_be_a_positive_integer(value: object) -> None:
    with pytest.raises(JudgeError, match="concurrency must be a positive integer"):
        judge("http://127.0.0.1:9", concurrency=value)
