"""The calibration file: results recorded per judge identity (atomically, under a lock), read
back by the kappa gate."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.fileio import atomic_write_text, exclusive_lock, lock_beside, read_json_file
from pytest_ragmetrics.judges.base import identity_hash
from pytest_ragmetrics.judges.calibration.figures import (
    MIN_ITEMS,
    TRUST_RULE,
    CalibrationResult,
    agreement_of_counts,
)

PathLike = str | os.PathLike[str]
CALIBRATION_SCHEMA = 1
#: The fewest labelled items a kappa the gate trusts is measured on (figures.MIN_ITEMS; with
#: figures.MIN_PER_CLASS of each class: figures.TRUST_RULE).
MIN_GATE_ITEMS = MIN_ITEMS


def _read_store(path: Path) -> dict[str, Any]:
    try:
        data = read_json_file(
            path,
            what="calibration file",
            error=JudgeError,
            hint="delete it and run `ragmetrics calibrate --save` again",
        )
    except FileNotFoundError:
        return {"schema": CALIBRATION_SCHEMA, "judges": {}}
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("judges"), dict)
        or data.get("schema") != CALIBRATION_SCHEMA
    ):
        raise JudgeError(
            f"{path}: not a calibration file of schema {CALIBRATION_SCHEMA}; delete it and run "
            "`ragmetrics calibrate --save` again"
        )
    return data


def save_calibration(path: PathLike, result: CalibrationResult, *, hint: str = "") -> None:
    """Record ``result`` in the calibration file at ``path`` under its judge identity's hash.

    Other judges' records are kept; the write is atomic and locked against concurrent saves.
    A refused write is an OutputError naming the file, with ``hint`` (how to save elsewhere).
    """
    target = Path(path)
    what = "calibration file"
    with exclusive_lock(lock_beside(target), what=what, hint=hint):
        store = _read_store(target)
        store["judges"][result.judge_key] = result.to_dict()
        text = json.dumps(store, indent=2, sort_keys=True) + "\n"
        atomic_write_text(target, text, what=what, hint=hint)


def load_calibration(path: PathLike, judge_identity: Mapping[str, Any]) -> CalibrationResult | None:
    """The recorded calibration of the judge with this identity, or None."""
    store = _read_store(Path(path))
    key = identity_hash(judge_identity)
    entry = store["judges"].get(key)
    if entry is None:
        return None
    name = judge_identity.get("name")
    try:
        result = CalibrationResult.from_dict(entry)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JudgeError(
            f"{path}: the calibration record of judge {name!r} is malformed ({exc!r}); run "
            "`ragmetrics calibrate --save` again"
        ) from None
    problem = _inconsistency(result, key)
    if problem:
        raise JudgeError(
            f"{path}: the calibration record of judge {name!r} {problem}: it was edited or "
            "merged by hand, and the gate does not trust it; run `ragmetrics calibrate --save` "
            "again"
        )
    return result


def _inconsistency(result: CalibrationResult, key: str) -> str:
    """What in a record read back does not follow from the rest ('' when nothing): it is
    filed under another judge's key, or its n, accuracy or kappa are not those of its
    confusion counts (a kappa edited by hand, or one side of a merge conflict)."""
    if result.judge_key != key:
        return f"is filed under key {key[:12]} but is about judge {result.judge_key[:12]}"
    counts = result.confusion
    if set(counts) != {"tp", "fp", "fn", "tn"} or min(counts.values()) < 0:
        return f"has confusion counts {counts}, not tp, fp, fn and tn at least 0"
    found = agreement_of_counts(counts)
    if found.n != result.n:
        return f"says n {result.n}, but its confusion counts {counts} add up to {found.n}"
    for what, said, follows in (
        ("accuracy", result.accuracy, found.accuracy),
        ("kappa", result.kappa, found.kappa),
    ):
        both_nan = math.isnan(said) and math.isnan(follows)
        if not both_nan and not math.isclose(said, follows, rel_tol=0.0, abs_tol=1e-9):
            return f"says {what} {said:g}, but its confusion counts {counts} give {follows:g}"
    gated = result.gate_kappa
    if result.unjudged < 0 or (gated is not None and not -1.0 <= gated <= 1.0):
        return f"has unjudged {result.unjudged} and gate_kappa {gated}, out of range"
    if result.unjudged and gated is not None and not _gate_kappa_follows(result, gated):
        return (
            f"says gate_kappa {gated:g}, which no split of its {result.unjudged} unjudged "
            f"items (each counted as a disagreement) beside its confusion counts {counts} gives"
        )
    return ""


def _gate_kappa_follows(result: CalibrationResult, gated: float) -> bool:
    """Whether ``gated`` is the kappa of the confusion counts with the unjudged items added
    as disagreements: ``k`` of them labelled yes (a false negative each) and the rest no (a
    false positive each), for some ``k`` (which labels the unjudged items had is not kept)."""
    counts, unjudged = result.confusion, result.unjudged
    for k in range(unjudged + 1):
        with_unjudged = {
            **counts, "fn": counts["fn"] + k, "fp": counts["fp"] + unjudged - k
        }  # fmt: skip
        kappa = agreement_of_counts(with_unjudged).kappa
        if math.isclose(kappa, gated, rel_tol=0.0, abs_tol=1e-9):
            return True
    return False


def load_kappa(path: PathLike, judge_identity: Mapping[str, Any]) -> float | None:
    """The kappa the gate reads for this judge (unjudged items counted as disagreements, see
    :attr:`CalibrationResult.gated`); None if it was never calibrated or that kappa is
    undefined (a gate must then refuse it: NaN would compare as "not below" any bound)."""
    result = load_calibration(path, judge_identity)
    if result is None or math.isnan(result.gated):
        return None
    return result.gated


def trusted_kappa(path: PathLike, judge_identity: Mapping[str, Any]) -> float | None:
    """:func:`load_kappa`, and None too when that kappa is measured on too few labels
    (:data:`~pytest_ragmetrics.judges.calibration.figures.TRUST_RULE`) or at a threshold
    "tuned" on labels of one class (what a gate may compare with its bound)."""
    result = load_calibration(path, judge_identity)
    if result is None or result.too_few() or result.untuned():
        return None
    return None if math.isnan(result.gated) else result.gated


def kappa_gate(path: PathLike, judge_identity: Mapping[str, Any], bound: float) -> str:
    """Why the gate at ``bound`` refuses this judge's verdicts, as a clause after its name
    ("has no calibration in ...", "has Cohen's kappa 0.2996 (n 28) < ..."); '' when it may
    fail tests. What to do is the caller's to add (:func:`gate_advice`)."""
    result = load_calibration(path, judge_identity)
    if result is None:
        return f"has no calibration in {path}"
    untuned = result.untuned()
    if untuned:
        return (
            f"has a calibration in {path} whose {untuned}; calibrate it on labels of both classes"
        )
    kappa = result.gated
    if math.isnan(kappa):
        if result.unjudged and not math.isnan(result.kappa):
            return (
                f"has a calibration in {path} saved before unjudged items counted against "
                "the gate; calibrate it again"
            )
        return (
            f"has a calibration in {path} whose kappa is undefined (the labels or the "
            "judge's verdicts are all one class); calibrate it on labels of both classes"
        )
    if kappa < bound:
        unjudged = (
            f", {result.unjudged} unjudged counted as disagreements" if result.unjudged else ""
        )
        return under_bound(kappa, bound, f" (n {result.n + result.unjudged}{unjudged})")
    # A kappa at or above the bound passes only when enough labels of each class back it.
    too_few = result.too_few()
    if too_few:
        return (
            f"has a calibration in {path} {too_few} ({TRUST_RULE}; a threshold judge is measured "
            "on the part of its labels it was not tuned on); calibrate it on more labels of both "
            "classes"
        )
    return ""


_BELOW = "has Cohen's kappa "


def under_bound(kappa: float, bound: float, detail: str = "") -> str:
    """The gate's reason for a kappa below ``bound``, after the judge's name, every gate
    alike: "has Cohen's kappa 0.2996 (n 28) < ragmetrics_min_judge_kappa 0.3"."""
    return f"{_BELOW}{below(kappa, bound)}{detail} < ragmetrics_min_judge_kappa {bound:g}"


# Per question (by the suffix of its judge's name): the ``--question`` that calibrates it, the
# labels it is calibrated on, the embedding judge's threshold that decides it and the HTTP
# judge's prompt file that asks it.
_LABELS = "--labels LABELS.jsonl"
_QUESTIONS = {
    "-answer-relevance": ("answer-relevance", _LABELS, "relevance_threshold", "relevance.txt"),
    "-relevance": ("relevance", "--dataset DIR", "context_threshold", "context.txt"),
    "-agreement": ("agreement", _LABELS, "agreement_threshold", "agreement.txt"),
}
_SUPPORT = ("support", _LABELS, "threshold", "support.txt")
_BACKENDS = ("embedding", "http", "recorded")


def _question(name: str) -> tuple[str, str, str, str]:
    return next((q for end, q in _QUESTIONS.items() if name.endswith(end)), _SUPPORT)


def calibrate_command(
    judge_identity: Mapping[str, Any], calibration: str, *, fixed: bool = True
) -> str:
    """The ``ragmetrics calibrate`` command that records the question this identity asks,
    saved where the gate reads (``calibration``); an embedding judge's threshold fixed as it
    is (so the record is the one the gate looks up) unless not ``fixed`` (tuned)."""
    name = str(judge_identity.get("name") or "")
    question, labels, _, _ = _question(name)
    kind = name.split("-")[0]
    words = ["ragmetrics calibrate"]
    if question != "support":
        words.append(f"--question {question}")
    words.append(f"--judge {kind if kind in _BACKENDS else 'KIND'}")
    threshold = (judge_identity.get("parameters") or {}).get("threshold")
    if kind == "embedding" and fixed and threshold is not None:
        words.append(f"--threshold {threshold:g}")
    if kind == "recorded":
        words.append("--verdicts FILE")
    words += [labels, f"--save {calibration}"]
    return " ".join(words)


def gate_advice(judge_identity: Mapping[str, Any], why: str, calibration: str) -> str:
    """What to do about a judge the gate refuses for ``why`` (:func:`kappa_gate`'s clause):
    calibrate the question as the judge asks it; for a kappa below the bound, change what
    decides the verdicts of the judge's backend (an embedding judge's threshold or model, an
    HTTP judge's prompt or model, a recorded judge's verdicts)."""
    if not why.startswith(_BELOW):
        return f"run `{calibrate_command(judge_identity, calibration)}`"
    name = str(judge_identity.get("name") or "")
    _, _, threshold, prompt = _question(name)
    kind = name.split("-")[0]
    if kind == "embedding":
        now = (judge_identity.get("parameters") or {}).get("threshold")
        at = "" if now is None else f" {now:g}"
        tune = calibrate_command(judge_identity, calibration, fixed=False)
        return (
            f"its verdict is a cosine similarity at {threshold}{at}: `{tune}` tunes the "
            f"threshold; set {threshold} to the one it prints, and if the kappa stays below "
            "the bound, the embedding model cannot tell (use another, or an HTTP judge)"
        )
    again = f"`{calibrate_command(judge_identity, calibration)}`"
    if kind == "http":
        return (
            f"its verdict is its model's yes or no to its {prompt} prompt: change the prompt "
            f"(ragmetrics_judge_prompts) or the model, then run {again}"
        )
    if kind == "recorded":
        return f"its verdicts are the ones recorded: record better ones, then run {again}"
    return f"use a judge that agrees better with the labels, then run {again}"


def below(value: float, bound: float) -> str:
    """``value`` to 3 decimals, or with as many more as it takes to read as below ``bound``
    (0.2999 is not written "0.300" beside a bound of 0.3)."""
    for digits in range(3, 18):
        text = f"{value:.{digits}f}"
        if float(text) < bound:
            return text
    return repr(value)


__all__ = [
    "CALIBRATION_SCHEMA",
    "MIN_GATE_ITEMS",
    "below",
    "calibrate_command",
    "gate_advice",
    "kappa_gate",
    "load_calibration",
    "load_kappa",
    "save_calibration",
    "trusted_kappa",
]
