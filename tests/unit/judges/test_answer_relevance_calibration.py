"""Calibrating the answer-relevance question ("does this answer address the question?", what
decides answer_relevance): the labels file, the figures against judges whose verdicts the test
controls, the identity the result is keyed by (the one an evaluation records), and
`ragmetrics calibrate --question answer-relevance`."""

from __future__ import annotations

import gzip
import io
import json
import zlib
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.answers import GeneratedAnswer
from pytest_ragmetrics.data.assessments import Verdict
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges import (
    EmbeddingJudge,
    HttpJudge,
    LabelledResponse,
    RecordedJudge,
    calibrate_answer_relevance,
    load_kappa,
    read_answer_relevance_labels,
    save_calibration,
)
from pytest_ragmetrics.judges.answers import judge_answers, question_identities
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.jsonl import assert_error_at, write_jsonl

ITEM = {"id": "a1", "question": "Do cats purr?", "answer": "Cats purr.", "label": "RELEVANT"}


# -- the labels file -------------------------------------------------------------------------


def test_labels_are_read_in_every_form(tmp_path: Path) -> None:
    path = tmp_path / "relevance.jsonl.gz"
    rows = [
        ITEM,
        {**ITEM, "id": 2, "label": "not_relevant"},
        {"question": "q", "answer": "a", "label": "Not relevant"},  # no id: the line number
        {"question": "q", "answer": "a", "label": "not-relevant"},
        {"question": "q", "answer": "a", "label": True},
        {"question": "q", "answer": "a", "label": False},
    ]
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    items = read_answer_relevance_labels(path)
    assert [i.id for i in items] == ["a1", "2", "line-3", "line-4", "line-5", "line-6"]
    assert [i.addresses for i in items] == [True, False, False, False, True, False]
    assert {i.label for i in items} == {"RELEVANT", "NOT_RELEVANT"}
    assert items[0] == LabelledResponse("a1", "Do cats purr?", "Cats purr.", True, "RELEVANT", 1)


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        ([{**ITEM, "label": "SUPPORT"}], 1, "'label' must be RELEVANT or NOT_RELEVANT (or "
         "true/false), got 'SUPPORT'"),
        ([ITEM, {k: v for k, v in ITEM.items() if k != "label"} | {"id": "b"}], 2,
         "'label' must be RELEVANT or NOT_RELEVANT (or true/false), missing"),
        ([{**ITEM, "label": 1}], 1, "got 1"),
        ([{k: v for k, v in ITEM.items() if k != "question"}], 1, "'question' is missing"),
        ([{**ITEM, "question": " "}], 1, "'question' is not a non-empty string"),
        ([ITEM, {**ITEM, "id": "b", "answer": ""}], 2, "'answer' is not a non-empty string"),
        ([{**ITEM, "answer": ["x"]}], 1, "'answer' is not a non-empty string"),
        ([ITEM, ITEM], 2, "item id 'a1' already appears on line 1"),
        ([{**ITEM, "id": None}], 1, "'id' is not a non-empty string or integer: None"),
        ([ITEM, "[1]"], 2, "expected a JSON object"),
        ([ITEM, "{oops"], 2, "not valid JSON"),
    ],
)  # fmt: skip
def test_label_errors_name_file_and_line(
    tmp_path: Path, rows: list[Any], line: int, message: str
) -> None:
    path = write_jsonl(tmp_path / "relevance.jsonl", rows)
    assert_error_at(read_answer_relevance_labels, path, line, message)


def test_an_empty_labels_file_is_an_error(tmp_path: Path) -> None:
    empty = write_jsonl(tmp_path / "empty.jsonl", [""])
    assert_error_at(read_answer_relevance_labels, empty, None, "no labelled items")


# -- the figures -----------------------------------------------------------------------------

# Ten items, five addressed. The judge agrees on all but one of each: tp 4, fn 1, fp 1, tn 4,
# so accuracy 0.8 and kappa (p_o - p_e) / (1 - p_e) with p_o = 0.8 and p_e = 0.5 * 0.5 +
# 0.5 * 0.5 = 0.5: kappa = 0.3 / 0.5 = 0.6.
HUMAN = [True] * 5 + [False] * 5
SAYS = [True, True, True, True, False, True, False, False, False, False]


def labelled(human: Sequence[bool] = HUMAN) -> list[LabelledResponse]:
    return [
        LabelledResponse(
            f"i{k}", f"question {k}", f"answer {k}", h, "RELEVANT" if h else "NOT_RELEVANT", k + 1
        )
        for k, h in enumerate(human)
    ]


class ScriptedJudge:
    """Says what ``says`` holds for each answer ("answer k": says[k]; None: unjudged)."""

    name = "scripted"

    def __init__(self, says: Sequence[bool | None]) -> None:
        self.says = list(says)
        self.asked: list[tuple[str, str]] = []

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "model": None, "parameters": {}}

    def question_identity(self, task: str) -> dict[str, Any]:
        return {"name": f"{self.name}-answer-relevance", "task": task}

    def judge_answer_relevance(self, items: Sequence[tuple[str, str]]) -> list[Verdict]:
        self.asked += items
        return [Verdict("relevance", self.says[int(a.split()[-1])], None, "said") for _, a in items]


def test_kappa_of_a_judge_whose_answers_are_known() -> None:
    judge = ScriptedJudge(SAYS)
    result = calibrate_answer_relevance(judge, labelled())
    assert judge.asked == [(f"question {k}", f"answer {k}") for k in range(10)]
    assert result.confusion == {"tp": 4, "fp": 1, "fn": 1, "tn": 4}
    assert result.n == 10 and result.accuracy == 0.8 and result.kappa == 0.6
    assert result.gated == 0.6 and result.unjudged == 0
    assert result.threshold is None and result.tuning is None
    assert result.judge == {"name": "scripted-answer-relevance", "task": "relevance"}
    assert result.labels["question"] == "answer-relevance"
    assert result.labels["n"] == 10 and result.labels["positives"] == 5
    assert [row["judge"] for row in result.items] == SAYS
    assert calibrate_answer_relevance(judge, labelled(), limit=4).n == 4


def test_unjudged_items_count_against_the_gate() -> None:
    # An eleventh item, addressed, left unjudged: the figures are the ten's (kappa 0.6); the
    # gate counts it as the judge saying no: tp 4, fn 2, fp 1, tn 4 of 11, p_o = 8/11,
    # p_e = (6/11)(5/11) + (5/11)(6/11) = 60/121, kappa = (88 - 60) / (121 - 60) = 28/61.
    judge = ScriptedJudge([*SAYS, None])
    result = calibrate_answer_relevance(judge, labelled([*HUMAN, True]))
    assert result.n == 10 and result.unjudged == 1 and result.kappa == 0.6
    assert result.gated == pytest.approx(28 / 61)


def test_a_judge_that_cannot_answer_the_question_is_refused() -> None:
    with pytest.raises(JudgeError, match="cannot answer the answer-relevance question"):
        calibrate_answer_relevance(object(), labelled())
    with pytest.raises(JudgeError, match="no labelled answer-relevance items"):
        calibrate_answer_relevance(ScriptedJudge(SAYS), [])
    with pytest.raises(JudgeError, match="limit must be at least 1"):
        calibrate_answer_relevance(ScriptedJudge(SAYS), labelled(), limit=0)


def _recorded(path: Path, items: Sequence[LabelledResponse], says: Sequence[Any]) -> Path:
    return write_jsonl(
        path,
        [
            {"query_id": i.id, "answer": i.answer, "claims": [], "addresses_question": s}
            for i, s in zip(items, says, strict=True)
        ],
    )


def test_recorded_verdicts_are_scored_as_recorded(tmp_path: Path) -> None:
    items = labelled()
    judge = RecordedJudge(_recorded(tmp_path / "v.jsonl", items, SAYS))
    result = calibrate_answer_relevance(judge, items)
    assert result.kappa == 0.6 and result.confusion == {"tp": 4, "fp": 1, "fn": 1, "tn": 4}
    # Its own question, not the recorded claim support's (a support kappa says nothing of it).
    assert result.judge["name"] == "recorded-answer-relevance"
    assert result.judge["judge"] == judge.identity()
    answers = [GeneratedAnswer(i.id, i.question, i.answer, ()) for i in items]
    recorded = question_identities(judge, answers, metrics=["answer_relevance"])
    assert recorded["answer_relevance"] == result.judge
    scale = {"query_id": "i0", "answer": "answer 0", "addresses_question": 2}
    ordinal = RecordedJudge(
        write_jsonl(tmp_path / "s.jsonl", [{**scale, "relevance_scale": [1, 3]}])
    )
    with pytest.raises(JudgeError, match=r"item 'i0': .*ordinal score 2.*yes/no"):
        calibrate_answer_relevance(ordinal, labelled()[:1])


# -- the built-in judges: asked as in evaluation, keyed as an evaluation records ---------------


def toy_encoder(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 32))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.encode()) % 32] += 1.0
    return out


def toy_items(n: int = 40) -> list[LabelledResponse]:
    """Addressed answers repeat the question's words; the others share none of them."""
    items = []
    for k in range(n):
        question = " ".join(f"w{k}x{j}" for j in range(6))
        addresses = k % 2 == 0
        answer = question if addresses else " ".join(f"v{k}y{j}" for j in range(6))
        label = "RELEVANT" if addresses else "NOT_RELEVANT"
        items.append(LabelledResponse(f"i{k}", question, answer, addresses, label, k + 1))
    return items


def test_the_embedding_judge_is_tuned_and_keyed_by_its_answer_relevance_question(
    tmp_path: Path,
) -> None:
    judge = EmbeddingJudge(encoder=toy_encoder, model_name="toy", cache=tmp_path / "c")
    assert judge.relevance_threshold is None  # answer relevance is not judged: tuned here
    items = toy_items()
    result = calibrate_answer_relevance(judge, items, seed=3)
    assert result.tuning is not None and result.n == 20 and result.tuning.n == 20
    assert result.threshold is not None and result.kappa == 1.0
    tuned = judge.with_relevance_threshold(result.threshold)
    assert result.judge == tuned.question_identity("relevance")
    assert result.judge["name"] == "embedding-answer-relevance"
    assert result.judge["parameters"]["threshold"] == result.threshold
    # What an evaluation judged by the tuned judge records for answer_relevance.
    answers = [GeneratedAnswer(i.id, i.question, i.answer, (("d", "ctx"),)) for i in items]
    recorded = question_identities(tuned, answers, metrics=["answer_relevance"])
    assert recorded == {"answer_relevance": result.judge}
    store = tmp_path / "calibration.json"
    save_calibration(store, result)
    assert load_kappa(store, tuned.question_identity("relevance")) == 1.0
    assert load_kappa(store, tuned.identity()) is None  # claim support is another question
    # Its verdicts are assess_batch's: the same cosine, the same threshold.
    judged = judge_answers(tuned, answers, metrics=["answer_relevance"])
    assert [a.addresses_question for a in judged.assessments] == [i.addresses for i in items]
    fixed = calibrate_answer_relevance(tuned, items, tune=False)
    assert fixed.tuning is None and fixed.kappa == 1.0 and fixed.judge == result.judge
    with pytest.raises(JudgeError, match="has no relevance_threshold"):
        calibrate_answer_relevance(judge, items, tune=False)


def _yes_if_same(prompt: str) -> str:
    """Yes when the answer repeats the question, 'perhaps' when it says 'unsure', else no."""
    lines = prompt.splitlines()
    question = next(line for line in lines if line.startswith("Question:"))[len("Question:") :]
    answer = next(line for line in lines if line.startswith("Answer:"))[len("Answer:") :]
    if "unsure" in answer:
        return "perhaps"
    return "Yes." if answer.strip() == question.strip() else "No."


def test_the_http_judge_asks_its_relevance_prompt_through_its_cache(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import serve

    items = [
        LabelledResponse("a", "why?", "why?", True, "RELEVANT", 1),
        LabelledResponse("b", "how?", "how?", False, "NOT_RELEVANT", 2),
        LabelledResponse("c", "who?", "nobody", False, "NOT_RELEVANT", 3),
        LabelledResponse("d", "when?", "unsure", True, "RELEVANT", 4),
    ]
    with serve(answer=_yes_if_same) as server:
        judge = HttpJudge(Endpoint(server.url, "m"), unparseable="unjudged", cache=tmp_path / "c")
        result = calibrate_answer_relevance(judge, items)
        assert server.count == 4
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
        assert prompts[0] == judge.prompts["relevance"].format(query="why?", answer="why?")
        # Judging the same answers in an evaluation asks nothing new: the same prompts, cache.
        judge.assess("why?", "why?", [], query_id="a")
        judge.assess("who?", "nobody", [], query_id="c")
        assert server.count == 4
    assert result.confusion == {"tp": 1, "fp": 1, "fn": 0, "tn": 1}
    # p_o = 2/3, p_e = (1/3)(2/3) + (2/3)(1/3) = 4/9: kappa (2/9) / (5/9) = 0.4. For the gate,
    # 'd' (human RELEVANT, no verdict) counts as a no: tp 1 fp 1 fn 1 tn 1, kappa 0.
    assert result.unjudged == 1 and result.kappa == pytest.approx(0.4) and result.gated == 0.0
    assert result.judge == judge.question_identity("relevance")
    assert result.judge["name"] == "http-answer-relevance"
    assert "relevance question: Question: {query}" in result.judge["rubric"]
    assert judge.question_identity("relevance") != judge.question_identity("agreement")
    other = HttpJudge(Endpoint(server.url, "m"), prompts={"relevance": "{query}? {answer}"})
    assert other.question_identity("relevance") != judge.question_identity("relevance")
    off = HttpJudge(Endpoint(server.url, "m"), judge_relevance=False)
    with pytest.raises(JudgeError, match="judge_relevance=False"):
        calibrate_answer_relevance(off, items)


# -- ragmetrics calibrate --question answer-relevance -----------------------------------------


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["calibrate", *argv], out=out)
    return code, out.getvalue()


def _labels_file(path: Path, items: Sequence[LabelledResponse]) -> Path:
    return write_jsonl(
        path,
        [{"id": i.id, "question": i.question, "answer": i.answer, "label": i.label} for i in items],
    )


def test_cli_recorded_json_table_and_save(tmp_path: Path) -> None:
    items = labelled()
    labels = _labels_file(tmp_path / "relevance.jsonl", items)
    verdicts = _recorded(tmp_path / "v.jsonl", items, SAYS)
    store = tmp_path / "calibration.json"
    argv = ["--question", "answer-relevance", "--judge", "recorded", "--labels", str(labels)]
    argv += ["--verdicts", str(verdicts), "--no-cache"]
    code, out = run_cli(*argv, "--format", "json", "--save", str(store))
    assert code == 0
    data = json.loads(out)
    assert data["kappa"] == 0.6 and data["accuracy"] == 0.8 and data["n"] == 10
    assert data["confusion"] == {"tp": 4, "fp": 1, "fn": 1, "tn": 4}
    assert data["labels"]["question"] == "answer-relevance"
    assert data["labels"]["file"] == "relevance.jsonl"
    judge = RecordedJudge(verdicts)
    identity = question_identities(
        judge, [GeneratedAnswer("i0", "q", "a", ())], metrics=["answer_relevance"]
    )["answer_relevance"]
    assert load_kappa(store, identity) == 0.6
    assert load_kappa(store, judge.identity()) is None  # not the claim-support question's
    code, table = run_cli(*argv)
    assert code == 0
    assert "human: relevant" in table and "human: not relevant" in table
    assert "judge: relevant" in table and "judge: not relevant" in table


def test_cli_http_fixed_prompt_and_save(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import serve

    labels = _labels_file(tmp_path / "relevance.jsonl", toy_items(4))
    store = tmp_path / "calibration.json"
    with serve(answer=_yes_if_same) as server:
        argv = ["--question", "answer-relevance", "--judge", "http", "--labels", str(labels)]
        argv += ["--url", server.url, "--model", "m", "--cache-dir", str(tmp_path / "c")]
        code, _ = run_cli(*argv, "--save", str(store))
        assert code == 0 and server.count == 4
        code, out = run_cli(*argv, "--format", "json")
        assert code == 0 and server.count == 4  # from the cache
    assert json.loads(out)["kappa"] == 1.0
    judge = HttpJudge(Endpoint(server.url, "m"))
    assert load_kappa(store, judge.question_identity("relevance")) == 1.0


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--judge", "embedding", "--dataset", "d"], "--dataset: only with --question relevance"),
        (["--judge", "embedding", "--run", "r"], "--run: only with --question relevance"),
        (["--judge", "http", "--threshold", "0.5"], "--threshold: not an option of --judge http"),
        (["--judge", "embedding", "--limit", "0"], "--limit must be a positive integer"),
    ],
)
def test_cli_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    labels = write_jsonl(tmp_path / "relevance.jsonl", [ITEM])
    code, _ = run_cli("--question", "answer-relevance", *argv, "--labels", str(labels))
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("ragmetrics calibrate: error: ") and message in err, err
    code, _ = run_cli("--question", "answer-relevance", "--judge", "embedding")
    assert code == 2
    assert "--labels FILE.jsonl: required for --question answer-relevance" in (
        capsys.readouterr().err
    )


def test_cli_bad_labels_name_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = write_jsonl(tmp_path / "relevance.jsonl", [ITEM, {**ITEM, "id": "b", "label": "yes"}])
    argv = ["--question", "answer-relevance", "--judge", "recorded", "--labels", str(labels)]
    code, _ = run_cli(*argv, "--verdicts", str(_recorded(tmp_path / "v.jsonl", labelled(), SAYS)))
    assert code == 2
    assert capsys.readouterr().err == (
        f"ragmetrics calibrate: error: {labels}:2: 'label' must be RELEVANT or NOT_RELEVANT (or "
        "true/false), got 'yes'\n"
    )
