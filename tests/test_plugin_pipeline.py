"""The pipeline under test in the plugin (issue 13 items 1, 5 and 8): rag_pipeline over the
configured retriever and a generator, rag_answers computed once and cached, recorded answers
replayed (the same JSON report serially and under xdist -n 2), the dry run, recording, the
budget option, rag_references, and cost in the report."""

from __future__ import annotations

import json
from typing import Any

import pytest
from fake_openai import Reply, completion, serve
from plugin_project import make_project

pytest.importorskip("xdist")

GENERATOR = """
import pytest
from pytest_ragmetrics.generation import FunctionGenerator

CALLS = []

def generate(query, contexts):
    CALLS.append(query)
    return "SUPPORT. " + contexts[0]

@pytest.fixture(scope="session")
def rag_generator():
    return FunctionGenerator(generate, name="first-context")
"""

TESTS = """
    import json, os
    from pytest_ragmetrics.judges.answers import judge_answers

    def test_pipeline(rag_eval, rag_answers, rag_judge, rag_references):
        judged = judge_answers(rag_judge, rag_answers, references=rag_references,
                               metrics=["answer_correctness", "groundedness", "context_relevance"])
        e = rag_eval.answers(judged, name="pipeline", cost={"generator": rag_answers.cost},
                             metrics=["answer_correctness", "groundedness", "context_relevance"])
        out = os.environ.get("ANSWERS_OUT")
        if out:
            with open(out, "a") as f:
                f.write(json.dumps([a.to_dict() for a in rag_answers]) + "\\n")
"""

INI = """
ragmetrics_top_n = "2"
ragmetrics_judge = "embedding"
ragmetrics_answers = "recorded/answers.jsonl"
"""

REFERENCES = [
    {"query_id": "q1", "label": "SUPPORT"},
    {"query_id": "q2", "label": "CONTRADICT"},
    {"query_id": "q3", "answer": "Birds sing in the morning."},
]


def words_judge_conftest() -> str:
    """An embedding judge with a bag-of-words encoder: offline, instant."""
    return """
import hashlib
import numpy as np
import pytest
from pytest_ragmetrics.judges import EmbeddingJudge

def encode(texts):
    out = np.zeros((len(texts), 32))
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, int(hashlib.sha256(word.strip(".").encode()).hexdigest(), 16) % 32] += 1
    return out

@pytest.fixture(scope="session")
def rag_judge(rag_cache):
    return EmbeddingJudge(encoder=encode, model_name="words", cache=rag_cache,
                          context_threshold=0.2, agreement_threshold=0.5)
"""


def project(pytester: pytest.Pytester, conftest_extra: str = GENERATOR, ini: str = INI) -> None:
    from plugin_project import CONFTEST

    make_project(
        pytester, ini=ini, tests=TESTS, conftest=CONFTEST + conftest_extra + words_judge_conftest()
    )
    (pytester.path / "data" / "answers.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in REFERENCES)
    )


def report(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    path = pytester.path / "report.json"
    result = pytester.runpytest(f"--ragmetrics-json={path}", "-p", "no:randomly", *args)
    result.assert_outcomes(passed=1)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_answers_are_generated_once_cached_and_costed(pytester: pytest.Pytester) -> None:
    project(pytester)
    first = report(pytester)["evaluations"][0]
    assert first["cost"]["generator"]["calls"] == 4
    assert first["cost"]["generator"]["cache_hits"] == 0
    assert "cost: generator 4 calls (0 cached)" in "\n".join(first["notes"])
    assert first["metrics"]["answer_correctness"] == pytest.approx(2 / 3)  # q2 says SUPPORT
    again = report(pytester)["evaluations"][0]
    assert first["cost"]["generator"]["unmetered"] == 4  # a function reports no usage
    assert again["cost"]["generator"] == {
        **first["cost"]["generator"], "calls": 0, "cache_hits": 4, "unmetered": 0
    }  # fmt: skip
    assert again["metrics"] == first["metrics"]


def test_recorded_answers_replay_alike_serially_and_under_xdist(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    result = pytester.runpytest("--ragmetrics-record-answers", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    recorded = pytester.path / "recorded" / "answers.jsonl"
    assert len(recorded.read_text().splitlines()) == 4
    # Without the generator (no conftest override: rag_generator is unconfigured), the
    # recording is replayed; serially and with two workers the report is the same.
    project(pytester, conftest_extra="")
    serial = report(pytester)
    parallel = report(pytester, "-n", "2")
    for data in (serial, parallel):
        data.pop("created")
    assert parallel["evaluations"] == serial["evaluations"]
    assert serial["evaluations"][0]["cost"]["generator"]["cache_hits"] == 4
    assert serial["evaluations"][0]["identity"]["judge"]["model"] == "words"


def test_dry_run_counts_the_calls_and_generates_nothing(pytester: pytest.Pytester) -> None:
    project(pytester, ini=INI.replace('ragmetrics_answers = "recorded/answers.jsonl"', ""))
    result = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*dry run: 4 generator calls to make, 0 answers in the cache*"])
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    again = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly")
    again.stdout.fnmatch_lines(["*dry run: 0 generator calls to make, 4 answers in the cache*"])


def test_an_unconfigured_generator_says_how(pytester: pytest.Pytester) -> None:
    project(pytester, conftest_extra="", ini='ragmetrics_judge = "embedding"\n')
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*rag_generator is not configured*ragmetrics_generator_url*"])


def test_http_generator_from_ini_with_a_budget(pytester: pytest.Pytester) -> None:
    def reply(prompt: str) -> str:
        return "SUPPORT. fine"

    with serve(answer=reply) as server:
        body = completion("SUPPORT. fine")
        body["usage"] = {"prompt_tokens": 80, "completion_tokens": 5}
        server.answer = reply
        server.script.extend(Reply(body=body) for _ in range(10))
        ini = (
            f'ragmetrics_generator_url = "{server.url}"\n'
            'ragmetrics_generator_model = "tiny"\n'
            'ragmetrics_judge = "embedding"\n'
            'ragmetrics_judge_budget = "400"\n'
        )
        project(pytester, conftest_extra="", ini=ini)
        result = pytester.runpytest("-p", "no:randomly")
        sent = server.count
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        ["*answering query 'q*': generator (*): stopped before exceeding the token budget "
         "(ragmetrics_judge_budget = 400): 255 tokens used by 3 calls*"]
    )  # fmt: skip
    assert sent == 3  # a 4th call (about 224 tokens with max_tokens 128) would pass 400
    assert "Traceback" not in result.stdout.str()


def test_references_missing_is_a_clear_failure(pytester: pytest.Pytester) -> None:
    project(pytester)
    (pytester.path / "data" / "answers.jsonl").unlink()
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*rag_references: *data has no answers.jsonl*"])


def test_options_are_declared() -> None:
    from pytest_ragmetrics.options import FLAGS, OPTION

    for name in (
        "ragmetrics_judge_budget",
        "ragmetrics_generator_url",
        "ragmetrics_generator_model",
        "ragmetrics_generator_concurrency",
        "ragmetrics_top_n",
        "ragmetrics_answers",
    ):
        assert name in OPTION
    assert {"ragmetrics_dry_run", "ragmetrics_record_answers"} <= {f.name for f in FLAGS}
