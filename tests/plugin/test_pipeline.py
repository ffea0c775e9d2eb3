"""The pipeline under test in the plugin (issue 13 items 1, 5 and 8): rag_pipeline over the
configured retriever and a generator, rag_answers computed once and cached, recorded answers
replayed (the same JSON report serially and under xdist -n 2), the dry run, recording, the
budget option, rag_references, and cost in the report."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.helpers.calibration import result_at_kappa
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.plugin_project import SERIAL_AND_N2, make_project

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


# A bag-of-words encoder: offline, instant. Its code is part of the judge's identity, so the
# tests that compute the identity outside the project build it from this same text.
WORDS_ENCODER = """
import hashlib
import numpy as np

def encode(texts):
    out = np.zeros((len(texts), 32))
    for row, text in enumerate(texts):
        for word in text.lower().split():
            out[row, int(hashlib.sha256(word.strip(".").encode()).hexdigest(), 16) % 32] += 1
    return out
"""


def words_judge_conftest() -> str:
    """An embedding judge with the bag-of-words encoder."""
    fixture = """
import pytest
from pytest_ragmetrics.judges import EmbeddingJudge

@pytest.fixture(scope="session")
def rag_judge(rag_cache):
    return EmbeddingJudge(encoder=encode, model_name="words", cache=rag_cache,
                          context_threshold=0.2, agreement_threshold=0.5)
"""
    return WORDS_ENCODER + fixture


def project(
    pytester: pytest.Pytester,
    conftest_extra: str = GENERATOR,
    ini: str = INI,
    *,
    judge: bool = True,
    tests: str = TESTS,
) -> None:
    from tests.helpers.plugin_project import CONFTEST

    conftest = CONFTEST + conftest_extra + (words_judge_conftest() if judge else "")
    make_project(pytester, ini=ini, tests=tests, conftest=conftest)
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
    # A function generator reports no usage: no "0 tokens" (it was "0 tokens (0 prompt + 0
    # completion); 4 calls reported no usage").
    notes = "\n".join(first["notes"])
    assert "cost: generator 4 calls (0 cached), usage not reported" in notes
    assert "0 tokens" not in notes
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
    # Replayed from the file, not taken from the generator's cache: said so ("0 calls (4
    # cached)" read as if the generator's own answers had been reused).
    generator = serial["evaluations"][0]["cost"]["generator"]
    assert (generator["replayed"], generator["cache_hits"], generator["calls"]) == (4, 0, 0)
    notes = "\n".join(serial["evaluations"][0]["notes"])
    assert "cost: generator 0 calls (0 cached, 4 replayed from a recording)" in notes
    assert serial["evaluations"][0]["identity"]["judge"]["model"] == "words"
    # On another corpus (same ids, a document rewritten) the recorded contexts are not its
    # documents: replaying them was silent (groundedness judged on the old texts).
    corpus = pytester.path / "data" / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("Cats purr", "Cats hiss"))
    moved = pytester.runpytest("-p", "no:randomly")
    moved.assert_outcomes(errors=1)
    moved.stdout.fnmatch_lines(
        ["*answers.jsonl:1: query 'q1' was answered on another corpus (fingerprint *, the "
         "dataset's is *): its contexts are not this corpus's documents; record the answers "
         "again with --ragmetrics-record-answers*"]
    )  # fmt: skip


def test_dry_run_counts_the_calls_and_generates_nothing(pytester: pytest.Pytester) -> None:
    project(pytester, ini=INI.replace('ragmetrics_answers = "recorded/answers.jsonl"', ""))
    result = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly")
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*dry run: 4 generator calls to make, 0 answers in the cache*"])
    assert not (pytester.path / ".ragmetrics" / "baseline.json").exists()
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    # Every answer cached and an offline judge: nothing would be spent, so the test runs.
    again = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly")
    again.assert_outcomes(passed=1)


HTTP_JUDGE_INI = """
ragmetrics_top_n = "2"
ragmetrics_judge = "http"
ragmetrics_judge_model = "tiny"
ragmetrics_judge_url = "{url}"
"""


@pytest.mark.parametrize("workers", SERIAL_AND_N2)
def test_dry_run_counts_the_judge_requests_and_sends_none(
    pytester: pytest.Pytester, workers: list[str]
) -> None:
    with serve(answer=lambda prompt: "yes") as server:
        project(pytester, ini=HTTP_JUDGE_INI.format(url=server.url), judge=False)
        first = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly", *workers)
        first.assert_outcomes(skipped=1)
        first.stdout.fnmatch_lines(["*dry run: 4 generator calls to make, 0 answers*"])
        # Generate (the function generator) but do not judge: a test that only generates.
        answer_only = TESTS.replace("judged = judge_answers", "return\n        judged = x")
        project(pytester, ini=HTTP_JUDGE_INI.format(url=server.url), judge=False, tests=answer_only)
        pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
        assert server.count == 0
        project(pytester, ini=HTTP_JUDGE_INI.format(url=server.url), judge=False)
        # The answers are cached now: the test runs up to judging, which counts its questions.
        planned = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly", *workers)
        planned.assert_outcomes(skipped=1)
        text = planned.stdout.str()
        assert server.count == 0
        assert "judge 'http': " in text and "requests to send, 0 questions in its cache" in text
        count = int(text.split("judge 'http': ")[1].split(" requests")[0])
        real = pytester.runpytest("-p", "no:randomly")
        real.assert_outcomes(passed=1)
        assert server.count == count > 0  # the dry run counted what the real run sent
        # Everything in the judge's cache: a dry run sends nothing and runs the test.
        pytester.runpytest("--ragmetrics-dry-run", "-p", "no:randomly").assert_outcomes(passed=1)
        assert server.count == count


def test_dry_run_stops_any_request_a_test_makes(pytester: pytest.Pytester) -> None:
    direct = """
    def test_direct(rag_judge):
        rag_judge.assess("what do cats do", "Cats purr.", ["cats purr"])
    """
    with serve(answer=lambda prompt: "yes") as server:
        project(pytester, ini=HTTP_JUDGE_INI.format(url=server.url), judge=False, tests=direct)
        result = pytester.runpytest("--ragmetrics-dry-run", "-rs", "-p", "no:randomly")
        assert server.count == 0
        result.assert_outcomes(skipped=1)
        result.stdout.fnmatch_lines(
            ["*dry run: the HTTP judge would send a request to *(model 'tiny'); nothing was sent*"]
        )
        pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
        assert server.count == 2  # the claim and the answer's relevance


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


# -- what decided each answer metric: recorded, compared, and gated metric by metric ---------

GATED_TESTS = """
    import pytest
    from pytest_ragmetrics.judges.answers import judge_answers

    def rationale(answer):
        return answer.split(". ", 1)[-1]

    @pytest.mark.rag_threshold(answer_correctness=0.9, context_relevance=0.99)
    def test_pipeline(rag_eval, rag_answers, rag_judge, rag_references):
        metrics = ["answer_correctness", "groundedness", "context_relevance"]
        judged = judge_answers(rag_judge, rag_answers, references=rag_references,
                               metrics=metrics, claims_of=rationale)
        rag_eval.answers(judged, name="pipeline", metrics=metrics)
"""


def words_judge(**thresholds: float) -> Any:
    from pytest_ragmetrics.judges import EmbeddingJudge

    # The project's conftest encoder: the same code in a module of the same name.
    namespace: dict[str, Any] = {"__name__": "conftest"}
    exec(compile(WORDS_ENCODER, "conftest.py", "exec", dont_inherit=True), namespace)
    return EmbeddingJudge(encoder=namespace["encode"], model_name="words", **thresholds)


def save_kappa(path: Any, identity: dict[str, Any], kappa: float) -> None:
    from pytest_ragmetrics.judges.calibration import save_calibration

    save_calibration(path, result_at_kappa(identity, kappa))


def test_the_questions_behind_each_metric_are_recorded(pytester: pytest.Pytester) -> None:
    from pytest_ragmetrics.judges.answers import LABEL_MATCH

    project(pytester, tests=GATED_TESTS)
    path = pytester.path / "report.json"
    pytester.runpytest(f"--ragmetrics-json={path}", "-p", "no:randomly")
    identity = json.loads(path.read_text())["evaluations"][0]["identity"]
    judge = words_judge(context_threshold=0.2, agreement_threshold=0.5)
    assert identity["judge"] == judge.identity()
    # q3's reference is free text: the agreement question decides answer_correctness.
    assert identity["questions"]["answer_correctness"] == judge.question_identity("agreement")
    assert identity["questions"]["context_relevance"] == judge.context_judge.identity()
    assert identity["questions"]["context_relevance"]["parameters"]["threshold"] == 0.2
    assert identity["claims_of"].startswith("test_rag.rationale@")  # name and code digest
    assert identity["pipeline"]["generator"]["name"] == "first-context"
    assert identity["pipeline"]["top_n"] == 2
    # Label references only: an exact rule, no judge.
    (pytester.path / "data" / "answers.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in REFERENCES[:2])
    )
    pytester.runpytest(f"--ragmetrics-json={path}", "-p", "no:randomly")
    identity = json.loads(path.read_text())["evaluations"][0]["identity"]
    assert identity["questions"]["answer_correctness"] == LABEL_MATCH


def test_a_changed_context_threshold_is_a_configuration_change(
    pytester: pytest.Pytester,
) -> None:
    project(pytester)
    pytester.runpytest("--ragmetrics-update-baseline", "-p", "no:randomly").assert_outcomes(
        passed=1
    )
    conftest = pytester.path / "conftest.py"
    conftest.write_text(
        conftest.read_text().replace("context_threshold=0.2", "context_threshold=0.3")
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.stdout.fnmatch_lines(
        ["*configuration changed since the baseline: "
         "questions.context_relevance.parameters.threshold: 0.2 → 0.3*"]
    )  # fmt: skip
    # Another judge is another instrument: its numbers are not compared with the baseline's
    # (a lenient judge read a worse pipeline as "improved"), whichever way they moved.
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*is not comparable with its baseline*",
         "*the judge changed (questions.context_relevance.parameters.threshold: 0.2 → 0.3)*"]
    )  # fmt: skip
    blessed = pytester.runpytest("--ragmetrics-update-baseline", "-p", "no:randomly")
    blessed.assert_outcomes(passed=1)
    pytester.runpytest("-p", "no:randomly").assert_outcomes(passed=1)
    # The pipeline is what is tested: changing it is compared, never refused.
    ini = pytester.path / "pyproject.toml"
    ini.write_text(ini.read_text().replace('ragmetrics_top_n = "2"', 'ragmetrics_top_n = "1"'))
    changed = pytester.runpytest("-p", "no:randomly")
    assert "not comparable" not in changed.stdout.str()
    changed.stdout.fnmatch_lines(["*configuration changed since the baseline: pipeline.top_n*"])


def test_each_answer_metric_has_its_own_kappa_gate(pytester: pytest.Pytester) -> None:
    project(pytester, tests=GATED_TESTS, ini=INI + 'ragmetrics_min_judge_kappa = "0.5"\n')
    calibration = pytester.path / ".ragmetrics" / "calibration.json"
    judge = words_judge(context_threshold=0.2, agreement_threshold=0.5)
    save_kappa(calibration, judge.identity(), 0.8)
    save_kappa(calibration, judge.question_identity("agreement"), 0.7)
    # The context question is not calibrated: context_relevance (0.375 < 0.99) may not fail;
    # answer_correctness (0.667 < 0.9) is calibrated and fails.
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    text = result.stdout.str()
    assert "answer_correctness = 0.6667 < threshold 0.9" in text
    assert "context_relevance = 0.3750 < threshold" not in text
    result.stdout.fnmatch_lines(
        ["*context_relevance not enforced: judge 'embedding-relevance' has no calibration in "
         "*calibration.json (run `ragmetrics calibrate --question relevance --judge embedding "
         "--threshold 0.2 --dataset DIR --save .ragmetrics/calibration.json`)*"]
    )  # fmt: skip
    # With the agreement question below the bound too, nothing of answer_correctness is
    # enforced either; groundedness still is (no threshold: the test passes).
    save_kappa(calibration, judge.question_identity("agreement"), 0.1)
    again = pytester.runpytest("-p", "no:randomly")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines(
        ["*answer_correctness not enforced: judge 'embedding-agreement' has Cohen's kappa "
         "0.100 (n *) < ragmetrics_min_judge_kappa 0.5*"]
    )  # fmt: skip


RELEVANCE_TESTS = """
    import pytest
    from pytest_ragmetrics.judges.answers import judge_answers

    @pytest.mark.rag_threshold(answer_relevance=0.99)
    def test_pipeline(rag_eval, rag_answers, rag_judge):
        judge = rag_judge.with_relevance_threshold(0.9)
        judged = judge_answers(judge, rag_answers, metrics=["groundedness", "answer_relevance"])
        rag_eval.answers(judged, name="pipeline", metrics=["groundedness", "answer_relevance"])
"""


def test_answer_relevance_has_its_own_kappa_gate(pytester: pytest.Pytester) -> None:
    project(pytester, tests=RELEVANCE_TESTS, ini=INI + 'ragmetrics_min_judge_kappa = "0.5"\n')
    calibration = pytester.path / ".ragmetrics" / "calibration.json"
    judge = words_judge(context_threshold=0.2, agreement_threshold=0.5)
    judge = judge.with_relevance_threshold(0.9)
    question = judge.question_identity("relevance")
    # Claim support calibrated: groundedness is enforced; the answer-relevance question is
    # not, so answer_relevance (below 0.99) may not fail the test.
    save_kappa(calibration, judge.identity(), 0.8)
    path = pytester.path / "report.json"
    result = pytester.runpytest(f"--ragmetrics-json={path}", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["*answer_relevance not enforced: judge 'embedding-answer-relevance' has no calibration "
         "in *calibration.json (run `ragmetrics calibrate --question answer-relevance --judge "
         "embedding --threshold 0.9 --labels LABELS.jsonl --save .ragmetrics/calibration.json`); "
         "thresholds and baseline are not enforced*"]
    )  # fmt: skip
    assert "groundedness not enforced" not in result.stdout.str()
    identity = json.loads(path.read_text())["evaluations"][0]["identity"]
    assert identity["questions"]["answer_relevance"] == question
    # Calibrated above the bound: enforced, the threshold fails the test.
    save_kappa(calibration, question, 0.7)
    enforced = pytester.runpytest("-p", "no:randomly")
    enforced.assert_outcomes(failed=1)
    enforced.stdout.fnmatch_lines(["*answer_relevance = 0.[0-9][0-9][0-9][0-9] < threshold 0.99*"])
    assert "not enforced" not in enforced.stdout.str()
    # Below the bound: gated again, saying so.
    save_kappa(calibration, question, 0.1)
    low = pytester.runpytest("-p", "no:randomly")
    low.assert_outcomes(passed=1)
    low.stdout.fnmatch_lines(
        ["*answer_relevance not enforced: judge 'embedding-answer-relevance' has Cohen's kappa "
         "0.100 (n *) < ragmetrics_min_judge_kappa 0.5 (its verdict is a cosine similarity at "
         "relevance_threshold 0.9: `ragmetrics calibrate --question answer-relevance --judge "
         "embedding --labels LABELS.jsonl --save .ragmetrics/calibration.json` tunes the "
         "threshold*"]
    )  # fmt: skip
    # judge_answers asked for groundedness only, the evaluation for answer_relevance too: the
    # judge gave relevance verdicts all the same, and their question is the one gated (the
    # note said the assessments recorded no question, and to use judge_answers).
    tests = RELEVANCE_TESTS.replace(
        'judge_answers(judge, rag_answers, metrics=["groundedness", "answer_relevance"])',
        'judge_answers(judge, rag_answers, metrics=["groundedness"])',
    )
    project(pytester, tests=tests, ini=INI + 'ragmetrics_min_judge_kappa = "0.5"\n')
    narrow = pytester.runpytest("-p", "no:randomly")
    narrow.assert_outcomes(passed=1)
    narrow.stdout.fnmatch_lines(
        ["*answer_relevance not enforced: judge 'embedding-answer-relevance' has Cohen's kappa "
         "0.100 (n *) < ragmetrics_min_judge_kappa 0.5*"]
    )  # fmt: skip
    save_kappa(calibration, question, 0.7)
    narrow = pytester.runpytest("-p", "no:randomly")
    narrow.assert_outcomes(failed=1)


def test_label_references_are_enforced_without_any_calibration(
    pytester: pytest.Pytester,
) -> None:
    project(pytester, tests=GATED_TESTS, ini=INI + 'ragmetrics_min_judge_kappa = "0.5"\n')
    (pytester.path / "data" / "answers.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in REFERENCES[:2])
    )
    result = pytester.runpytest("-p", "no:randomly")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*answer_correctness = 0.5000 < threshold 0.9*"])
    result.stdout.fnmatch_lines(
        ["*groundedness not enforced: judge 'embedding' has no calibration*"]
    )


def test_an_edited_generator_body_generates_new_answers(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 25: the generator's body changed, its version= did not; the cached answers of the
    old body must not be replayed (the regression it brings must show)."""
    out = pytester.path / "answers.out"
    monkeypatch.setenv("ANSWERS_OUT", str(out))
    project(pytester)
    first = report(pytester)["evaluations"][0]
    assert first["cost"]["generator"]["calls"] == 4
    conftest = pytester.path / "conftest.py"
    conftest.write_text(conftest.read_text().replace('"SUPPORT. "', '"CONTRADICT. "'))
    edited = report(pytester)["evaluations"][0]
    assert edited["cost"]["generator"]["calls"] == 4  # new answers, none from the cache
    assert edited["cost"]["generator"]["cache_hits"] == 0
    runs = [json.loads(line) for line in out.read_text().splitlines()]
    assert runs[0][0]["answer"].startswith("SUPPORT. ")
    assert runs[1][0]["answer"].startswith("CONTRADICT. ")
    again = report(pytester)["evaluations"][0]  # the same body again: all cached
    assert again["cost"]["generator"]["cache_hits"] == 4
