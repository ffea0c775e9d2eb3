"""Relevance judges (is this passage relevant to this question?): embedding with a toy encoder,
HTTP against a scripted server on 127.0.0.1, recorded verdicts from JSONL."""

from __future__ import annotations

import json
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges import (
    EmbeddingRelevanceJudge,
    HttpRelevanceJudge,
    RecordedRelevanceJudge,
    RelevanceJudge,
    RelevancePair,
    build_relevance_judge,
)
from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL
from pytest_ragmetrics.judges.relevance import (
    ThresholdRelevanceJudge,
    judge_pairs,
    token_totals,
)
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import Reply, completion, serve


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY, "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


class Words:
    """Hashed word counts; counts the texts it encodes."""

    def __init__(self) -> None:
        self.texts: list[str] = []

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.texts.extend(texts)
        out = np.zeros((len(texts), 64))
        for i, text in enumerate(texts):
            for word in text.lower().replace(".", " ").replace("?", " ").split():
                out[i, zlib.crc32(word.encode()) % 64] += 1.0
        return out


PAIRS = [
    RelevancePair("where is the eiffel tower", "the eiffel tower is in paris", "q1", "d1"),
    RelevancePair("where is the eiffel tower", "bananas ripen yellow", "q1", "d2"),
]


def toy(threshold: float = 0.5, **options: object) -> EmbeddingRelevanceJudge:
    options.setdefault("encoder", Words())
    return EmbeddingRelevanceJudge(threshold=threshold, model_name="words", **options)  # type: ignore[arg-type]


def test_embedding_judge_thresholds_the_cosine_of_question_and_passage() -> None:
    judge = toy()
    assert isinstance(judge, RelevanceJudge) and isinstance(judge, ThresholdRelevanceJudge)
    near, far = judge.judge_relevance(PAIRS)
    assert (near.query_id, near.doc_id, near.relevant) == ("q1", "d1", True)
    assert (far.doc_id, far.relevant) == ("d2", False)
    assert near.score is not None and far.score is not None and near.score > 0.5 > far.score
    assert near.verdict.startswith("cosine(question, passage)") and ">= 0.5" in near.verdict
    assert near.prompt_tokens is None and not near.cached
    strict = judge.with_threshold(0.99)
    assert [v.relevant for v in strict.judge_relevance(PAIRS)] == [False, False]
    assert strict.identity() != judge.identity()
    assert strict.identity()["parameters"]["threshold"] == 0.99


def test_embedding_judge_embeds_each_text_once_and_caches_similarities(tmp_path: Path) -> None:
    words = Words()
    judge = toy(encoder=words, cache=tmp_path)
    first = judge.judge_relevance(PAIRS)
    assert sorted(words.texts) == sorted({p.query for p in PAIRS} | {p.passage for p in PAIRS})
    again = Words()
    rerun = toy(0.0, encoder=again, cache=tmp_path).judge_relevance(PAIRS)
    assert again.texts == []  # similarities came from the cache; a new threshold re-uses them
    assert all(v.cached for v in rerun)
    assert [v.score for v in rerun] == [v.score for v in first]
    assert [v.relevant for v in rerun] == [True, True]


def test_pairs_can_be_plain_tuples_and_bad_ones_are_named() -> None:
    verdicts = judge_pairs(toy(), [("eiffel tower", "eiffel tower paris")])
    assert verdicts[0].query_id is None and verdicts[0].relevant is True
    with pytest.raises(JudgeError, match="relevance pair 1 is str"):
        judge_pairs(toy(), [("a", "b"), "c"])  # type: ignore[list-item]
    with pytest.raises(JudgeError, match="passage of relevance pair 0 must be a string"):
        judge_pairs(toy(), [("a", 3)])  # type: ignore[list-item]
    with pytest.raises(JudgeError, match="threshold must be a cosine"):
        toy(1.5)


def http(url: str, **options: Any) -> HttpRelevanceJudge:
    """An HttpRelevanceJudge of model test-model at ``url`` (no backoff): ``options`` are its
    endpoint's settings and its own arguments."""
    given = {"url": url, "model": "test-model", "backoff": 0.0, **options}
    return HttpRelevanceJudge(Endpoint.take(given), **given)


def relevant_when_paris(prompt: str) -> str:
    passage = next(line for line in prompt.splitlines() if line.startswith("Passage:"))
    return "Yes." if "paris" in passage else "No, it is not."


def test_http_judge_asks_one_narrow_question_per_pair_and_keeps_usage() -> None:
    usage = {"prompt_tokens": 40, "completion_tokens": 1, "total_tokens": 41}
    script = [
        Reply(body={**completion("Yes."), "usage": usage}),
        Reply(body={**completion("No."), "usage": usage}),
    ]
    with serve(script) as server:
        verdicts = http(server.url).judge_relevance(PAIRS)
    assert [v.relevant for v in verdicts] == [True, False]
    assert [v.verdict for v in verdicts] == ["Yes.", "No."]
    assert verdicts[0].prompt_tokens == 40 and verdicts[0].completion_tokens == 1
    assert verdicts[0].total_tokens == 41
    assert token_totals(verdicts) == {"prompt_tokens": 80, "completion_tokens": 2, "asked": 2}
    prompt = server.requests[0]["body"]["messages"][-1]["content"]
    assert prompt.startswith("Question: where is the eiffel tower\n\nPassage: the eiffel tower")
    assert prompt.endswith("Answer yes or no.")
    assert server.requests[0]["body"]["temperature"] == 0


def test_http_judge_caches_replies_with_their_usage(tmp_path: Path) -> None:
    usage = {"prompt_tokens": 12, "completion_tokens": 1}
    with serve([Reply(body={**completion("yes"), "usage": usage})]) as server:
        first = http(server.url, cache=tmp_path).judge_relevance(PAIRS[:1])
        rerun = http(server.url, cache=tmp_path).judge_relevance(PAIRS[:1])
        assert server.count == 1
    assert not first[0].cached and rerun[0].cached
    assert rerun[0].prompt_tokens == 12 and rerun[0].relevant is True
    assert token_totals(rerun)["asked"] == 0
    other = http("http://127.0.0.1:9", cache=tmp_path, prompts={"context": "Q {query} P {passage}"})
    assert other.identity() != http("http://127.0.0.1:9").identity()


def test_http_judge_concurrency_changes_no_verdict() -> None:
    pairs = [
        RelevancePair("q", f"passage {i} {'paris' if i % 3 == 0 else 'rome'}", "q", f"d{i}")
        for i in range(12)
    ]
    with serve(answer=relevant_when_paris) as server:
        one = http(server.url).judge_relevance(pairs)
        four = http(server.url, concurrency=4).judge_relevance(pairs)
    assert [v.relevant for v in one] == [i % 3 == 0 for i in range(12)]
    assert [v.to_dict() for v in four] == [v.to_dict() for v in one]


def test_http_garbage_verdict_names_the_pair_or_is_left_unjudged() -> None:
    with serve(answer=lambda prompt: "Perhaps.") as server:
        with pytest.raises(JudgeError, match=r"query 'q1', document 'd1'.*'Perhaps\.'"):
            http(server.url).judge_relevance(PAIRS[:1])
        verdict = http(server.url, unparseable="unjudged").judge_relevance(PAIRS[:1])[0]
    assert verdict.relevant is None and verdict.verdict == "Perhaps."


def test_http_judge_cuts_long_passages_and_checks_its_settings() -> None:
    with serve() as server:
        http(server.url, max_passage_chars=10).judge_relevance(
            [RelevancePair("q", "0123456789ABCDEF")]
        )
        prompt = server.requests[0]["body"]["messages"][-1]["content"]
    assert "0123456789\n" in prompt and "A" not in prompt.split("Passage:")[1].split("\n")[0]
    with pytest.raises(JudgeError, match=r"template lacks \{passage\}"):
        http("http://127.0.0.1:9", prompts={"context": "{query}"})
    with pytest.raises(JudgeError, match="unparseable must be"):
        http("http://127.0.0.1:9", unparseable="maybe")
    with pytest.raises(JudgeError, match="no endpoint"):
        HttpRelevanceJudge(Endpoint(None, "m"))
    with pytest.raises(JudgeError, match="max_passage_chars must be a positive integer, got 0"):
        http("http://127.0.0.1:9", max_passage_chars=0)


def write_lines(path: Path, *lines: object) -> Path:
    path.write_text(
        "".join((x if isinstance(x, str) else json.dumps(x)) + "\n" for x in lines),
        encoding="utf-8",
    )
    return path


def test_recorded_judge_replays_by_query_and_document(tmp_path: Path) -> None:
    path = write_lines(
        tmp_path / "verdicts.jsonl",
        {"query_id": "q1", "doc_id": "d1", "relevant": True, "verdict": "on topic"},
        {"query_id": "q1", "doc_id": "d2", "relevant": 0},
        {"query_id": "q2", "doc_id": "d1", "relevant": None},
    )
    judge = RecordedRelevanceJudge(path)
    assert len(judge) == 3
    verdicts = judge.judge_relevance([*PAIRS, RelevancePair("x", "y", "q2", "d1")])
    assert [v.relevant for v in verdicts] == [True, False, None]
    assert verdicts[0].verdict == "on topic" and verdicts[1].verdict == "recorded on line 2"
    assert judge.identity()["parameters"]["file"] == "verdicts.jsonl"
    with pytest.raises(JudgeError, match=r"verdicts\.jsonl: no recorded verdict for query 'q9'"):
        judge.judge_relevance([RelevancePair("x", "y", "q9", "d1")])
    with pytest.raises(JudgeError, match="has none"):
        judge.judge_relevance([RelevancePair("x", "y")])


POOLED = {"query_id": "q1", "doc_id": "d1", "query": "Do cats purr?", "title": "Cats",
          "text": "Cats purr when content.", "relevant": True}  # fmt: skip


@pytest.mark.parametrize(
    ("query", "passage", "other"),
    [
        ("Do dogs bark?", "Cats Cats purr when content.", "another question ('Do cats purr?'"),
        ("Do cats purr?", "Cats purr when angry.", "another passage ('Cats Cats purr when"),
        ("Do cats purr?", "Dogs bark.", "another passage"),
    ],
)
def test_recorded_verdicts_about_other_texts_are_refused(
    tmp_path: Path, query: str, passage: str, other: str
) -> None:
    """A filled-in pool line holds the question and passage it was judged on: replayed for a
    reworded query or an edited document, its verdict was about other texts."""
    judge = RecordedRelevanceJudge(write_lines(tmp_path / "pool.jsonl", POOLED))
    with pytest.raises(JudgeError, match=rf"pool\.jsonl:1: .* is about {re.escape(other)}"):
        judge.judge_relevance([RelevancePair(query, passage, "q1", "d1")])
    # The same texts, whitespace aside, with or without the title, or cut short: replayed.
    for same in ("Cats  Cats purr\nwhen content.", "Cats purr when content.", "Cats purr wh"):
        (verdict,) = judge.judge_relevance([RelevancePair(" Do cats purr? ", same, "q1", "d1")])
        assert verdict.relevant is True


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ('{"doc_id": "d1", "relevant": true}', "missing or empty 'query_id'"),
        ('{"query_id": "q1", "doc_id": "", "relevant": true}', "missing or empty 'doc_id'"),
        ('{"query_id": "q1", "doc_id": "d1"}', "no 'relevant' field"),
        ('{"query_id": "q1", "doc_id": "d1", "relevant": "yes"}', "must be true, false or null"),
        ('{"query_id": "q1", "doc_id": "d1", "relevant": 2}', "must be true, false or null"),
        ('{"query_id": "q1", "doc_id": "d1", "relevant": true, "verdict": 3}', "'verdict' must"),
        ('{"query_id": "q0", "doc_id": "d0", "relevant": true}', "already appears on line 1"),
        ("[1, 2]", "expected a JSON object"),
        ("{nope", "not valid JSON"),
    ],
)
def test_recorded_verdicts_bad_lines_name_file_and_line(
    tmp_path: Path, line: str, message: str
) -> None:
    path = write_lines(
        tmp_path / "v.jsonl", {"query_id": "q0", "doc_id": "d0", "relevant": 1}, line
    )
    with pytest.raises(DataFormatError, match=message) as info:
        RecordedRelevanceJudge(path)
    assert str(info.value).startswith(f"{path}:2: ")


def test_build_relevance_judge_by_kind(tmp_path: Path) -> None:
    path = write_lines(tmp_path / "v.jsonl", {"query_id": "q", "doc_id": "d", "relevant": True})
    assert isinstance(build_relevance_judge("recorded", verdicts=path), RecordedRelevanceJudge)
    judge = build_relevance_judge("http", url="http://127.0.0.1:9", model="m", concurrency=3)
    assert isinstance(judge, HttpRelevanceJudge) and judge.concurrency == 3
    embedding = build_relevance_judge(
        "embedding", threshold=0.3, encoder=Words(), model_name="words"
    )
    assert isinstance(embedding, EmbeddingRelevanceJudge) and embedding.threshold == 0.3
    with pytest.raises(JudgeError, match="needs a verdicts file"):
        build_relevance_judge("recorded")
    with pytest.raises(JudgeError, match="unknown relevance judge 'psychic'"):
        build_relevance_judge("psychic")


def test_calibrating_a_threshold_relevance_judge_and_gating_its_labels(tmp_path: Path) -> None:
    from pytest_ragmetrics.judges.calibration import (
        LabelledPair,
        calibrate_relevance,
        load_kappa,
        save_calibration,
    )
    from pytest_ragmetrics.pooling import HEADER_PREFIX, load_supplement

    pairs = []
    for i in range(20):
        question = f"topic{i} alpha beta"
        pairs.append(LabelledPair(f"q{i}", "r", question, f"topic{i} alpha beta gamma", True, "R"))
        pairs.append(LabelledPair(f"q{i}", "n", question, f"unrelated{i} words here", False, "N"))
    judge = toy(0.99)
    result = calibrate_relevance(judge, pairs, negatives="judged", seed=1)
    assert result.kappa == 1.0 and result.threshold is not None and result.tuning is not None
    assert result.n == 20 and result.tuning.n == 20  # half tunes, half measures
    assert result.judge == judge.with_threshold(result.threshold).identity()
    assert result.labels["question"] == "relevance" and result.labels["negatives"] == "judged"
    calibration = tmp_path / "calibration.json"
    save_calibration(calibration, result)
    tuned = judge.with_threshold(result.threshold)
    assert load_kappa(calibration, tuned.identity()) == 1.0
    labels = tmp_path / "s.qrels"
    labels.write_text(HEADER_PREFIX + json.dumps(tuned.identity()) + "\nq1 0 d1 1\n")
    trusted = load_supplement(labels, calibration=calibration, min_kappa=0.8)
    assert trusted.kappa == 1.0 and trusted.used and trusted.reason == ""
    other = tmp_path / "o.qrels"
    other.write_text(HEADER_PREFIX + json.dumps(judge.identity()) + "\nq1 0 d1 1\n")
    untrusted = load_supplement(other, calibration=calibration, min_kappa=0.8)
    assert untrusted.kappa is None and not untrusted.used
    assert "has no calibration" in untrusted.reason
    assert load_supplement(other, calibration=calibration, min_kappa=None).used  # no bound
