"""When a calibration's figures cannot be trusted, and what the κ gate says then: a threshold
"tuned" on labels of one class (every threshold agrees with them alike), a kappa from too few
labels of a class, and the advice on a judge the gate refuses, which is its backend's."""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges import (
    CalibrationResult,
    EmbeddingJudge,
    HttpJudge,
    LabelledResponse,
    calibrate_answer_relevance,
    save_calibration,
)
from pytest_ragmetrics.judges.calibration.figures import agreement_of_counts
from pytest_ragmetrics.judges.calibration.store import kappa_gate, trusted_kappa
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.calibration import result_at_kappa


def _encoder(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 32))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.encode()) % 32] += 1.0
    return out


def _items(human: list[bool]) -> list[LabelledResponse]:
    """Addressed answers repeat the question; the others share no word with it."""
    items = []
    for k, addresses in enumerate(human):
        question = " ".join(f"w{k}x{j}" for j in range(6))
        answer = question if addresses else " ".join(f"v{k}y{j}" for j in range(6))
        label = "RELEVANT" if addresses else "NOT_RELEVANT"
        items.append(LabelledResponse(f"i{k}", question, answer, addresses, label, k + 1))
    return items


def test_a_threshold_is_not_tuned_on_labels_of_one_class() -> None:
    judge = EmbeddingJudge(encoder=_encoder, model_name="toy")
    with pytest.raises(JudgeError) as raised:
        calibrate_answer_relevance(judge, _items([True] * 10))
    message = str(raised.value)
    assert "could not be tuned" in message and "one class" in message
    assert "(5 positive, 0 negative)" in message and "labels of both classes" in message
    # Both classes in the file, but a seeded tuning half may still hold one: refused then,
    # and otherwise the tuning half holds both (whichever seed splits it).
    human = [True] * 5 + [False]
    refused = 0
    for seed in range(20):
        try:
            result = calibrate_answer_relevance(judge, _items(human), seed=seed)
        except JudgeError as exc:
            assert "could not be tuned" in str(exc)
            refused += 1
            continue
        assert result.tuning is not None
        counts = result.tuning.confusion
        assert min(counts["tp"] + counts["fn"], counts["fp"] + counts["tn"]) >= 1
    assert 0 < refused < 20


def _record(tuning: dict[str, int] | None, evaluation: dict[str, int]) -> CalibrationResult:
    found = agreement_of_counts(evaluation)
    return CalibrationResult(
        judge={"name": "embedding-answer-relevance", "model": "m", "parameters": {}},
        labels={"n": 80},
        n=found.n,
        accuracy=found.accuracy,
        kappa=found.kappa,
        confusion=found.confusion,
        threshold=None if tuning is None else 0.5,
        tuning=None if tuning is None else agreement_of_counts(tuning),
        seed=None if tuning is None else 0,
    )


def test_the_gate_refuses_a_record_whose_threshold_was_tuned_on_one_class(
    tmp_path: Path,
) -> None:
    """A record saved before calibration refused one-class tuning: its held-out kappa is
    high, its threshold arbitrary."""
    path = tmp_path / "calibration.json"
    one_class = _record(
        {"tp": 30, "fp": 0, "fn": 10, "tn": 0}, {"tp": 20, "fp": 0, "fn": 0, "tn": 20}
    )
    save_calibration(path, one_class)
    why = kappa_gate(path, one_class.judge, 0.5)
    assert "threshold was tuned on labels of one class" in why
    assert trusted_kappa(path, one_class.judge) is None
    both = _record({"tp": 20, "fp": 0, "fn": 0, "tn": 20}, {"tp": 20, "fp": 0, "fn": 0, "tn": 20})
    save_calibration(path, both)
    assert kappa_gate(path, both.judge, 0.5) == "" and trusted_kappa(path, both.judge) == 1.0


@pytest.mark.parametrize(
    ("counts", "trusted"),
    [
        ({"tp": 18, "fp": 0, "fn": 0, "tn": 2}, False),  # 20 items, 2 negatives: kappa 1.0
        ({"tp": 2, "fp": 0, "fn": 0, "tn": 38}, False),
        ({"tp": 15, "fp": 0, "fn": 0, "tn": 5}, True),
        ({"tp": 4, "fp": 0, "fn": 1, "tn": 15}, True),
    ],
)
def test_the_gate_needs_enough_labels_of_each_class(
    tmp_path: Path, counts: dict[str, int], trusted: bool
) -> None:
    path = tmp_path / "calibration.json"
    result = _record(None, counts)
    save_calibration(path, result)
    why = kappa_gate(path, result.judge, 0.5)
    assert (trusted_kappa(path, result.judge) is not None) is trusted
    if trusted:
        assert why == ""
    else:
        assert result.kappa == 1.0  # a perfect kappa, from two of a class: still refused
        assert "only 2 of them" in why and "5 of each class" in why


def test_the_rule_reads_the_classes_of_the_measured_items() -> None:
    result = _record(None, {"tp": 18, "fp": 0, "fn": 0, "tn": 2})
    assert result.classes == (18, 2)
    assert "only 2 of them negative" in result.too_few()
    assert _record(None, {"tp": 15, "fp": 0, "fn": 0, "tn": 5}).too_few() == ""
    assert "fewer than the 20" in _record(None, {"tp": 5, "fp": 0, "fn": 0, "tn": 5}).too_few()


@dataclass
class _Settings:
    calibration: Path
    min_judge_kappa: float = 0.5

    def display(self, path: Path) -> str:
        return str(path)


@dataclass
class _Session:
    """What the gate reads of a pytest session: the settings and the calibration file."""

    settings: _Settings
    asked: list[dict[str, Any]] = field(default_factory=list)

    def judge_gate(self, judge: dict[str, Any], bound: float) -> str:
        self.asked.append(judge)
        return kappa_gate(self.settings.calibration, judge, bound)


def _gate_text(identity: dict[str, Any], path: Path, kappa: float | None = 0.1) -> str:
    from pytest_ragmetrics.plugin.checks import _question_gate

    if kappa is not None:
        save_calibration(path, result_at_kappa(identity, kappa))
    return _question_gate(identity, 0.5, _Session(_Settings(path)))  # type: ignore[arg-type]


def test_the_advice_on_a_refused_judge_is_its_backends(tmp_path: Path) -> None:
    """An embedding judge's answer relevance is a cosine at a threshold: no prompt, no model
    reply, nothing left unjudged; its advice was the LLM judges'."""
    path = tmp_path / "calibration.json"
    embedding = EmbeddingJudge(encoder=_encoder, model_name="toy", relevance_threshold=0.9)
    question = embedding.question_identity("relevance")
    # Not calibrated: the command that records the judge as it is (its threshold fixed).
    text = _gate_text(question, path, kappa=None)
    assert "has no calibration" in text
    assert (
        "run `ragmetrics calibrate --question answer-relevance --judge embedding --threshold "
        f"0.9 --labels LABELS.jsonl --save {path}`"
    ) in text
    # Below the bound: what decides an embedding judge's verdicts, and how to tune it.
    text = _gate_text(question, path)
    assert "has Cohen's kappa 0.100" in text
    assert "prompt" not in text and "reply" not in text and "model's" not in text
    assert "cosine similarity at relevance_threshold 0.9" in text
    assert "--judge embedding --labels" in text and "--threshold" not in text
    http = HttpJudge(Endpoint("http://127.0.0.1:9/v1", "m"))
    text = _gate_text(http.question_identity("relevance"), path)
    assert "its model's yes or no to its relevance.txt prompt" in text
    assert "--judge http" in text and "_threshold" not in text and "--threshold" not in text
