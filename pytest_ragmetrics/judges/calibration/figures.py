"""Calibration's figures: agreement of a judge's verdicts with human labels (accuracy, Cohen's
kappa, the confusion matrix), the threshold tuned on one seeded part of the labels and scored on
the other, and :class:`CalibrationResult`, what a calibration records."""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import identity_hash

BATCH = 64  # labelled items per call to a batch judge (progress granularity)
# Candidate thresholds for threshold judges: cosine similarities 0.00, 0.01, ..., 1.00.
THRESHOLD_GRID: tuple[float, ...] = tuple(round(i / 100, 2) for i in range(101))
#: What a kappa is trusted from, by ``ragmetrics calibrate``'s output and the κ gate alike: at
#: least MIN_ITEMS labelled items (a threshold judge's held-out part; unjudged items count),
#: at least MIN_PER_CLASS of them of each class (human yes, human no; judged). Cohen's kappa of
#: 20 items agreeing 90 % at 50 % chance agreement has a standard error near 0.13; of 2 items
#: it says nothing. Of 18 yes and 2 no all agreed on (kappa 1.0), one verdict on a "no" moves
#: it to 0.64; of 15 and 5, to 0.86.
MIN_ITEMS = 20
MIN_PER_CLASS = 5
TRUST_RULE = f"at least {MIN_ITEMS} labelled items, {MIN_PER_CLASS} of each class"


@dataclass(frozen=True)
class Agreement:
    """Agreement of binary judge verdicts with human labels (positive = supported).

    ``confusion``: tp = both say supported, fp = judge only, fn = human only, tn = neither.
    ``kappa`` is Cohen's kappa, NaN when undefined (both raters constant and equal).
    """

    n: int
    accuracy: float
    kappa: float
    confusion: dict[str, int]

    def to_dict(self) -> dict[str, Any]:
        return {
            "n": self.n,
            "accuracy": _num(self.accuracy),
            "kappa": _num(self.kappa),
            "confusion": dict(self.confusion),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Agreement:
        return cls(
            int(data["n"]),
            _float(data["accuracy"]),
            _float(data["kappa"]),
            {k: int(v) for k, v in data["confusion"].items()},
        )


def agreement(human: Sequence[bool], judge: Sequence[bool]) -> Agreement:
    """Accuracy, Cohen's kappa and the confusion matrix of ``judge`` against ``human``."""
    if len(human) != len(judge):
        raise JudgeError(f"{len(human)} human labels but {len(judge)} judge verdicts")
    h = np.asarray(human, dtype=bool)
    j = np.asarray(judge, dtype=bool)
    return agreement_of_counts(
        {
            "tp": int(np.sum(h & j)),
            "fp": int(np.sum(~h & j)),
            "fn": int(np.sum(h & ~j)),
            "tn": int(np.sum(~h & ~j)),
        }
    )


def agreement_of_counts(confusion: Mapping[str, int]) -> Agreement:
    """Accuracy and Cohen's kappa of a confusion matrix (``tp``, ``fp``, ``fn``, ``tn``)."""
    tp, fp, fn, tn = (int(confusion[key]) for key in ("tp", "fp", "fn", "tn"))
    counts = {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    n = tp + fp + fn + tn
    if n == 0:
        return Agreement(0, math.nan, math.nan, counts)
    observed = (tp + tn) / n
    # kappa = (p_o - p_e) / (1 - p_e), p_e the chance agreement (both say yes by chance + both
    # say no by chance). Multiplied through by n * n it is a ratio of integers, divided once:
    # kappa exactly at a gate (84/280 = 0.3) is 0.3, not 0.29999999999999993.
    chance = (tp + fn) * (tp + fp) + (fp + tn) * (fn + tn)
    kappa = math.nan if chance == n * n else (n * (tp + tn) - chance) / (n * n - chance)
    return Agreement(n, observed, kappa, counts)


def cohen_kappa(human: Sequence[bool], judge: Sequence[bool]) -> float:
    """Cohen's kappa of two binary raters (NaN when undefined)."""
    return agreement(human, judge).kappa


@dataclass(frozen=True)
class CalibrationResult:
    """A judge's measured agreement with human labels.

    ``judge`` is the identity of the judge the figures apply to (for a threshold judge: with
    the tuned threshold). ``n``/``accuracy``/``kappa``/``confusion`` are measured on the
    evaluation half for a threshold judge (``tuning`` holds the tuning half's figures), on
    all labelled items otherwise. ``unjudged`` items (no verdict) are left out of the figures;
    ``gate_kappa`` counts each of them as a disagreement (what the ragmetrics_min_judge_kappa
    gate reads: a judge that leaves the hard items unjudged is not trusted on the rest).
    """

    judge: dict[str, Any]
    labels: dict[str, Any]
    n: int
    accuracy: float
    kappa: float
    confusion: dict[str, int]
    threshold: float | None = None
    unjudged: int = 0
    tuning: Agreement | None = None
    seed: int | None = None
    seconds: float = 0.0
    items: list[dict[str, Any]] = field(default_factory=list)
    gate_kappa: float | None = None

    @property
    def gated(self) -> float:
        """The kappa the gate reads: ``kappa`` when nothing is unjudged, else ``gate_kappa``
        (NaN for a record saved before unjudged items were counted)."""
        if self.unjudged == 0:
            return self.kappa
        return math.nan if self.gate_kappa is None else self.gate_kappa

    @property
    def classes(self) -> tuple[int, int]:
        """(positive, negative): the human labels of the items the figures are measured on
        (the judged ones: a record keeps no label of an unjudged item)."""
        c = self.confusion
        return c["tp"] + c["fn"], c["fp"] + c["tn"]

    def too_few(self, words: Sequence[str] = ("positive", "negative")) -> str:
        """Why the kappa is measured on too few labels to trust (:data:`TRUST_RULE`), as a
        clause ("measured on 3 labelled items, fewer than the 20 ..."); '' when it is not.
        ``words`` name the two classes."""
        measured_on = self.n + self.unjudged
        if measured_on < MIN_ITEMS:
            return (
                f"measured on {measured_on} labelled items, fewer than the {MIN_ITEMS} the gate "
                "trusts a kappa from"
            )
        fewest = min((0, 1), key=lambda i: self.classes[i])
        if self.classes[fewest] >= MIN_PER_CLASS:
            return ""
        return (
            f"measured on {measured_on} labelled items, only {self.classes[fewest]} of them "
            f"{words[fewest]}, fewer than the {MIN_PER_CLASS} of each class the gate trusts a "
            "kappa from"
        )

    def untuned(self) -> str:
        """Why the recorded threshold is not a tuned one, as a clause; '' when it is (or no
        threshold was tuned). A tuning part of one class agrees with every threshold alike
        (:meth:`Measured.tuned` refuses it; a record saved before may hold one)."""
        if self.tuning is None:
            return ""
        c = self.tuning.confusion
        if min(c["tp"] + c["fn"], c["fp"] + c["tn"]) > 0:
            return ""
        return (
            "threshold was tuned on labels of one class only (every threshold agrees with them "
            "alike, so it is arbitrary)"
        )

    @property
    def judge_key(self) -> str:
        """The sha256 of the judge identity (the key in a calibration file)."""
        return identity_hash(self.judge)

    def to_dict(self, *, items: bool = False) -> dict[str, Any]:
        """JSON-ready; ``items=True`` adds every item's id, human label and verdict."""
        out: dict[str, Any] = {
            "n": self.n,
            "accuracy": _num(self.accuracy),
            "kappa": _num(self.kappa),
            "confusion": dict(self.confusion),
            "threshold": self.threshold,
            "unjudged": self.unjudged,
            "gate_kappa": _num(self.gated),
            "tuning": None if self.tuning is None else self.tuning.to_dict(),
            "seed": self.seed,
            "seconds": round(self.seconds, 3),
            "labels": dict(self.labels),
            "judge": dict(self.judge),
            "judge_sha256": self.judge_key,
        }
        if items:
            out["items"] = list(self.items)
        return out

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationResult:
        """Rebuild from :meth:`to_dict` output."""
        tuning = data.get("tuning")
        threshold = data.get("threshold")
        return cls(
            judge=dict(data["judge"]),
            labels=dict(data.get("labels") or {}),
            n=int(data["n"]),
            accuracy=_float(data["accuracy"]),
            kappa=_float(data["kappa"]),
            confusion={k: int(v) for k, v in data["confusion"].items()},
            threshold=None if threshold is None else float(threshold),
            unjudged=int(data.get("unjudged", 0)),
            tuning=None if tuning is None else Agreement.from_dict(tuning),
            seed=data.get("seed"),
            seconds=float(data.get("seconds", 0.0)),
            items=list(data.get("items") or []),
            gate_kappa=None if data.get("gate_kappa") is None else float(data["gate_kappa"]),
        )


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _float(x: Any) -> float:
    return math.nan if x is None else float(x)


def best_threshold(scores: np.ndarray[Any, Any], human: np.ndarray[Any, Any]) -> float:
    kappas = np.array(
        [agreement(human.tolist(), (scores >= t).tolist()).kappa for t in THRESHOLD_GRID]
    )
    kappas = np.where(np.isnan(kappas), -np.inf, kappas)
    best = np.flatnonzero(kappas == kappas.max())
    # Among equally good thresholds take the middle one: it is the least tied to the sample.
    return THRESHOLD_GRID[int(best[len(best) // 2])]


def tuning_size(n: int, tune_fraction: float) -> int:
    """How many of ``n`` items tune the threshold (the others measure it)."""
    if not 0.0 < tune_fraction < 1.0:
        raise JudgeError(f"tune_fraction must be between 0 and 1, got {tune_fraction}")
    n_tune = round(n * tune_fraction)
    if n_tune < 1 or n_tune >= n:
        raise JudgeError(
            f"{n} labelled items cannot be split into a tuning and an evaluation "
            "part; give at least 2 (a few hundred for figures worth trusting)"
        )
    return n_tune


def check_limit(limit: int | None) -> None:
    """A JudgeError for a ``limit`` (how many labelled items to use) below 1."""
    if limit is not None and limit < 1:
        raise JudgeError(f"calibration limit must be at least 1, got {limit}")


def item_place(path: str | os.PathLike[str] | None, line: int, what: str) -> str:
    """How an error names a labelled item: ``file:line: what`` (just ``what`` without a file)."""
    return what if path is None else f"{os.fspath(path)}:{line}: {what}"


def labels_digest(records: Iterable[object]) -> str:
    """The sha256 of labelled items, each given as the JSON-ready list of what identifies it."""
    digest = hashlib.sha256()
    for record in records:
        digest.update(json.dumps(record).encode())
    return digest.hexdigest()


def item_row(
    item_id: str,
    label: str,
    human: bool,
    judge: bool | None,
    score: float | None,
    verdict: str | None,
) -> dict[str, Any]:
    """What a calibration reports of one labelled item."""
    return {
        "id": item_id,
        "label": label,
        "human": human,
        "judge": judge,
        "score": score,
        "verdict": verdict,
    }


class Identified(Protocol):
    def identity(self) -> dict[str, Any]: ...


class Tunable(Protocol):
    """A judge with a threshold calibration can tune (passage relevance)."""

    def with_threshold(self, threshold: float) -> Identified: ...


@dataclass
class Measured:
    """A judge's verdicts on labelled items, before they are turned into figures: per item the
    human label, the judge's verdict (None: unjudged) and its score (None: none)."""

    human: list[bool]
    judged: list[bool | None]
    scores: list[float | None]
    rows: list[dict[str, Any]]
    labels: dict[str, Any]
    started: float

    @classmethod
    def of(cls, rows: list[dict[str, Any]], labels: dict[str, Any], started: float) -> Measured:
        """From the per-item rows (``human``, ``judge``, ``score``, ...) every question
        reports."""
        return cls(
            [bool(r["human"]) for r in rows],
            [r["judge"] for r in rows],
            [r["score"] for r in rows],
            rows,
            labels,
            started,
        )

    def _result(self, identity: dict[str, Any], found: Agreement, **more: Any) -> CalibrationResult:
        return CalibrationResult(
            judge=identity,
            labels=self.labels,
            n=found.n,
            accuracy=found.accuracy,
            kappa=found.kappa,
            confusion=found.confusion,
            seconds=time.perf_counter() - self.started,
            items=self.rows,
            **more,
        )

    def tuned(
        self, identity_at: Callable[[float], dict[str, Any]], n_tune: int, seed: int
    ) -> CalibrationResult:
        """The best threshold on a seeded tuning part, scored on the rest; the result's judge
        is ``identity_at(threshold)`` (the judge's identity with the tuned threshold)."""
        human = np.array(self.human, dtype=bool)
        scores = np.array([-np.inf if s is None else s for s in self.scores], dtype=np.float64)
        order = np.random.default_rng(seed).permutation(len(human))
        tuning_part, held_out = np.sort(order[:n_tune]), np.sort(order[n_tune:])
        _check_both_classes(human[tuning_part], seed)
        threshold = best_threshold(scores[tuning_part], human[tuning_part])
        predicted = scores >= threshold
        result = agreement(human[held_out].tolist(), predicted[held_out].tolist())
        tuning = agreement(human[tuning_part].tolist(), predicted[tuning_part].tolist())
        held = set(held_out.tolist())
        for i, row in enumerate(self.rows):
            row["judge"] = bool(predicted[i])
            row["part"] = "evaluation" if i in held else "tuning"
        return self._result(
            identity_at(threshold),
            result,
            threshold=threshold,
            unjudged=0,
            tuning=tuning,
            seed=seed,
        )

    def as_judged(self, identity: dict[str, Any]) -> CalibrationResult:
        """The judge's own verdicts scored on every item it judged."""
        judged = [i for i, v in enumerate(self.judged) if v is not None]
        result = agreement([self.human[i] for i in judged], [bool(self.judged[i]) for i in judged])
        # For the gate, an unjudged item is a disagreement (the judge said the opposite).
        counted = [not h if v is None else v for h, v in zip(self.human, self.judged, strict=True)]
        return self._result(
            identity,
            result,
            threshold=None,
            unjudged=len(self.human) - len(judged),
            gate_kappa=agreement(self.human, counted).kappa,
        )


def _check_both_classes(human: np.ndarray[Any, Any], seed: int) -> None:
    """A JudgeError when the tuning part's human labels are all one class: every threshold
    then agrees with them alike (kappa undefined or 0), and the one picked would be arbitrary."""
    positive = int(np.sum(human))
    if 0 < positive < len(human):
        return
    raise JudgeError(
        f"the threshold could not be tuned: the {len(human)} labelled items of the tuning part "
        f"(seed {seed}) are all of one class ({positive} positive, {len(human) - positive} "
        "negative), and every threshold agrees with them alike; calibrate on more labels of "
        f"both classes ({TRUST_RULE} in the part scored), or score a fixed threshold "
        "(tune=False; `ragmetrics calibrate --threshold T`)"
    )


__all__ = ["Agreement", "CalibrationResult", "agreement", "cohen_kappa"]
