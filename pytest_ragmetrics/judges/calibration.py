"""Calibration: how well a judge agrees with human support labels, and where that is recorded.

Agreement is measured on (claim, context sentences, human label) triples; supported ⇔ the
label is SUPPORT. For a threshold judge the threshold is chosen on one half of the labels (a
seeded random split) and the figures are reported on the other half, so they are not flattered
by the tuning. Results are stored per judge identity so that a gate can refuse a judge whose
recorded Cohen's kappa is too low.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import numpy as np

from pytest_ragmetrics.data.assessments import Claim, Verdict
from pytest_ragmetrics.data.textfile import read_jsonl
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.fileio import atomic_write_text, exclusive_lock, read_json_file
from pytest_ragmetrics.judges.base import (
    BatchClaimJudge,
    ClaimJudge,
    Judge,
    ThresholdJudge,
    identity_hash,
    naming,
)
from pytest_ragmetrics.progress import progress

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Corpus, Qrels, Queries, Run
    from pytest_ragmetrics.judges.relevance import RelevanceJudge

PathLike = str | os.PathLike[str]
CALIBRATION_SCHEMA = 1
LABELS = {"SUPPORT": True, "CONTRADICT": False, "NOINFO": False}
# Candidate thresholds for threshold judges: cosine similarities 0.00, 0.01, ..., 1.00.
BATCH = 64  # labelled items per call to a batch judge (progress granularity)
THRESHOLD_GRID: tuple[float, ...] = tuple(round(i / 100, 2) for i in range(101))


@dataclass(frozen=True)
class LabelledClaim:
    """One human-labelled (claim, context) pair; ``supported`` ⇔ label SUPPORT."""

    id: str
    claim: str
    contexts: tuple[str, ...]
    supported: bool
    label: str
    line: int = 0


def read_claim_labels(path: PathLike) -> list[LabelledClaim]:
    """Read a labels JSONL file (fields ``claim``, ``context_sentences``, ``label``).

    ``label`` is SUPPORT, CONTRADICT or NOINFO (or a JSON boolean). The item id is ``id``, or
    ``claim_id:doc_id`` (SciFact), or the line number.
    """
    items: list[LabelledClaim] = []
    seen: dict[str, int] = {}
    for line, record in read_jsonl(path):
        claim = record.get("claim")
        if not isinstance(claim, str) or not claim.strip():
            raise DataFormatError("missing or empty 'claim' string", path, line)
        contexts = record.get("context_sentences")
        if not isinstance(contexts, list) or not all(isinstance(c, str) for c in contexts):
            raise DataFormatError("'context_sentences' must be a list of strings", path, line)
        label = record.get("label")
        if isinstance(label, bool):
            supported, name = label, "SUPPORT" if label else "NOT_SUPPORTED"
        elif isinstance(label, str) and label.upper() in LABELS:
            supported, name = LABELS[label.upper()], label.upper()
        else:
            raise DataFormatError(
                f"'label' must be SUPPORT, CONTRADICT or NOINFO (or true/false), got {label!r}",
                path,
                line,
            )
        if "id" in record:
            item_id = str(record["id"])
        elif "claim_id" in record:
            item_id = str(record["claim_id"])
            if "doc_id" in record:
                item_id += f":{record['doc_id']}"
        else:
            item_id = f"line-{line}"
        if item_id in seen:
            raise DataFormatError(
                f"item id {item_id!r} already appears on line {seen[item_id]}", path, line
            )
        seen[item_id] = line
        items.append(LabelledClaim(item_id, claim, tuple(contexts), supported, name, line))
    if not items:
        raise DataFormatError("no labelled claims in the file", path)
    return items


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
    n = len(h)
    tp = int(np.sum(h & j))
    fp = int(np.sum(~h & j))
    fn = int(np.sum(h & ~j))
    tn = int(np.sum(~h & ~j))
    confusion = {"tp": tp, "fp": fp, "fn": fn, "tn": tn}
    if n == 0:
        return Agreement(0, math.nan, math.nan, confusion)
    observed = (tp + tn) / n
    # Chance agreement: both say yes by chance + both say no by chance.
    expected = ((tp + fn) / n) * ((tp + fp) / n) + ((fp + tn) / n) * ((fn + tn) / n)
    kappa = math.nan if expected == 1.0 else (observed - expected) / (1.0 - expected)
    return Agreement(n, observed, kappa, confusion)


def cohen_kappa(human: Sequence[bool], judge: Sequence[bool]) -> float:
    """Cohen's kappa of two binary raters (NaN when undefined)."""
    return agreement(human, judge).kappa


@dataclass(frozen=True)
class CalibrationResult:
    """A judge's measured agreement with human labels.

    ``judge`` is the identity of the judge the figures apply to (for a threshold judge: with
    the tuned threshold). ``n``/``accuracy``/``kappa``/``confusion`` are measured on the
    evaluation half for a threshold judge (``tuning`` holds the tuning half's figures), on
    all labelled items otherwise. ``unjudged`` items (no verdict) are left out of the figures.
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
        )


def _num(x: float) -> float | None:
    return None if math.isnan(x) else x


def _float(x: Any) -> float:
    return math.nan if x is None else float(x)


def _labels_meta(labels: Sequence[LabelledClaim], path: PathLike | None) -> dict[str, Any]:
    digest = hashlib.sha256()
    for item in labels:
        digest.update(json.dumps([item.id, item.claim, item.contexts, item.supported]).encode())
    meta: dict[str, Any] = {"n": len(labels), "sha256": digest.hexdigest()}
    if path is not None:
        meta["file"] = Path(path).name
    return meta


def _named_verdict(judge: Judge, item: LabelledClaim, path: PathLike | None) -> Claim:
    """:func:`_verdict`, a JudgeError naming the labels file, line and item id."""
    where = f"claim {item.id!r}"
    if path is not None:
        where = f"{os.fspath(path)}:{item.line}: {where}"
    with naming(where):
        return _verdict(judge, item)


def _verdict(judge: Judge, item: LabelledClaim) -> Claim:
    if isinstance(judge, ClaimJudge):
        return judge.judge_claims([item.claim], list(item.contexts))[0]
    assessment = judge.assess(item.claim, item.claim, list(item.contexts), query_id=item.id)
    judged = [c for c in assessment.claims if c.supported is not None]
    if not judged:
        return Claim(item.claim, None)
    return Claim(
        item.claim,
        all(c.supported for c in judged),
        verdict="; ".join(c.verdict or "" for c in judged),
    )


def _best_threshold(scores: np.ndarray[Any, Any], human: np.ndarray[Any, Any]) -> float:
    kappas = np.array(
        [agreement(human.tolist(), (scores >= t).tolist()).kappa for t in THRESHOLD_GRID]
    )
    kappas = np.where(np.isnan(kappas), -np.inf, kappas)
    best = np.flatnonzero(kappas == kappas.max())
    # Among equally good thresholds take the middle one: it is the least tied to the sample.
    return THRESHOLD_GRID[int(best[len(best) // 2])]


def calibrate(
    judge: Judge,
    labels: Sequence[LabelledClaim] | PathLike,
    *,
    seed: int = 0,
    tune_fraction: float = 0.5,
    limit: int | None = None,
    tune: bool = True,
) -> CalibrationResult:
    """Measure ``judge`` against human labels (a labels file or :func:`read_claim_labels` items).

    A :class:`ThresholdJudge` is scored once per item; the threshold with the best kappa on a
    seeded random ``tune_fraction`` of the items is chosen and the figures are reported on the
    rest. Any other judge (or any judge with ``tune=False``) is scored on all items with its
    own verdicts. ``limit`` keeps the first N items (file order).
    """
    started = time.perf_counter()
    path, items = _labelled_items(labels, limit)
    threshold_judge = judge if tune and isinstance(judge, ThresholdJudge) else None
    # Checked before judging anything: judging can take a long time.
    n_tune = 0 if threshold_judge is None else _tuning_size(len(items), tune_fraction)
    meta = _labels_meta(items, path)
    verdicts = _judge_items(judge, items, path)
    rows = [
        {
            "id": item.id,
            "label": item.label,
            "human": item.supported,
            "judge": v.supported,
            "score": v.score,
            "verdict": v.verdict,
        }
        for item, v in zip(items, verdicts, strict=True)
    ]
    measured = _Measured.of(rows, meta, started)
    if threshold_judge is not None:
        return measured.tuned(lambda t: threshold_judge.with_threshold(t).identity(), n_tune, seed)
    return measured.as_judged(judge.identity())


def _labelled_items(
    labels: Sequence[LabelledClaim] | PathLike, limit: int | None
) -> tuple[PathLike | None, list[LabelledClaim]]:
    """(the labels file or None, the first ``limit`` items)."""
    if isinstance(labels, (str, os.PathLike)):
        path: PathLike | None = labels
        items = read_claim_labels(labels)
    else:
        path, items = None, list(labels)
    if limit is not None:
        if limit < 1:
            raise JudgeError(f"calibration limit must be at least 1, got {limit}")
        items = items[:limit]
    return path, items


def _tuning_size(n: int, tune_fraction: float) -> int:
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


def _judge_items(judge: Judge, items: list[LabelledClaim], path: PathLike | None) -> list[Claim]:
    """One verdict per item, in order, with progress; batched for a batch judge."""
    verdicts: list[Claim] = []
    name = judge.identity().get("name", "judge")
    note = (
        f"calibrating the {name} judge on {len(items):,} labelled claims: those not in its "
        "cache are judged now; a rerun reads the cache"
    )
    with progress(f"calibrating {name}", len(items), note=note) as advance:
        if not isinstance(judge, BatchClaimJudge):
            for item in items:
                verdicts.append(_named_verdict(judge, item, path))
                advance(1)
            return verdicts
        size = max(1, int(getattr(judge, "batch_size", BATCH)))
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            try:
                answers = judge.judge_claims_many([([i.claim], list(i.contexts)) for i in chunk])
                verdicts.extend(a[0] for a in answers)
            except JudgeError:
                # Again one by one (answers already given come from the cache), so the
                # error names the item it is about.
                verdicts.extend(_named_verdict(judge, item, path) for item in chunk)
            advance(len(chunk))
    return verdicts


class _Identified(Protocol):
    def identity(self) -> dict[str, Any]: ...


class _Tunable(Protocol):
    """A judge with a threshold calibration can tune (passage relevance)."""

    def with_threshold(self, threshold: float) -> _Identified: ...


@dataclass
class _Measured:
    """A judge's verdicts on labelled items, before they are turned into figures: per item the
    human label, the judge's verdict (None: unjudged) and its score (None: none)."""

    human: list[bool]
    judged: list[bool | None]
    scores: list[float | None]
    rows: list[dict[str, Any]]
    labels: dict[str, Any]
    started: float

    @classmethod
    def of(cls, rows: list[dict[str, Any]], labels: dict[str, Any], started: float) -> _Measured:
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
        threshold = _best_threshold(scores[tuning_part], human[tuning_part])
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
        return self._result(
            identity, result, threshold=None, unjudged=len(self.human) - len(judged)
        )


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
    with exclusive_lock(target.with_name(f".{target.name}.lock"), what=what, hint=hint):
        store = _read_store(target)
        store["judges"][result.judge_key] = result.to_dict()
        text = json.dumps(store, indent=2, sort_keys=True) + "\n"
        atomic_write_text(target, text, what=what, hint=hint)


def load_calibration(path: PathLike, judge_identity: Mapping[str, Any]) -> CalibrationResult | None:
    """The recorded calibration of the judge with this identity, or None."""
    store = _read_store(Path(path))
    entry = store["judges"].get(identity_hash(judge_identity))
    if entry is None:
        return None
    try:
        return CalibrationResult.from_dict(entry)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JudgeError(
            f"{path}: the calibration record of judge {judge_identity.get('name')!r} is "
            f"malformed ({exc!r}); run `ragmetrics calibrate --save` again"
        ) from None


def load_kappa(path: PathLike, judge_identity: Mapping[str, Any]) -> float | None:
    """The recorded kappa of this judge; None if it was never calibrated or its kappa was
    undefined (a gate must then refuse it: NaN would compare as "not below" any bound)."""
    result = load_calibration(path, judge_identity)
    if result is None or math.isnan(result.kappa):
        return None
    return result.kappa


# -- the relevance question ------------------------------------------------------------------

RELEVANCE_LABELS = ("RELEVANT", "JUDGED_NOT_RELEVANT", "SAMPLED_NEGATIVE", "UNJUDGED")


@dataclass(frozen=True)
class LabelledPair:
    """One (question, passage) pair with a human relevance label, or a sampled negative."""

    query_id: str
    doc_id: str
    query: str
    passage: str
    relevant: bool
    label: str  # one of RELEVANCE_LABELS

    @property
    def id(self) -> str:
        return f"{self.query_id}:{self.doc_id}"


def relevance_labels(
    qrels: Qrels,
    queries: Queries,
    corpus: Corpus,
    *,
    relevance_level: int = 1,
    negatives: int | None = None,
    seed: int = 0,
) -> tuple[list[LabelledPair], str]:
    """Labelled pairs for the relevance question, and how the negatives were chosen.

    Positives are the judged documents with a grade >= ``relevance_level``; negatives are the
    judged ones below it (not -1). Qrels that judge only relevant documents (SciFact, most
    BEIR sets) have no negatives: then ``negatives`` per positive (default 1) are sampled per
    query, seeded, uniformly from the corpus documents not judged for that query -- presumed
    non-relevant, and easier than real near-misses, so kappa is optimistic. ``negatives``
    with judged negatives present is an error (they are used as they are).
    """
    import random

    rng = random.Random(seed)
    passages = dict(zip(corpus.doc_ids.tolist(), corpus.passages(), strict=True))
    pairs: list[LabelledPair] = []
    judged_negatives = 0
    for qid in qrels.query_ids.tolist():
        grades = qrels.judgments(qid)
        if not grades:
            continue
        try:
            question = queries[qid]
        except (KeyError, DataFormatError):
            raise JudgeError(f"qrels query {qid!r} is not among the queries") from None
        for doc, grade in grades.items():
            if grade < 0:
                continue
            if doc not in passages:
                raise JudgeError(f"qrels document {doc!r} (query {qid!r}) is not in the corpus")
            relevant = grade >= relevance_level
            judged_negatives += not relevant
            pairs.append(
                LabelledPair(
                    qid,
                    doc,
                    question,
                    passages[doc],
                    relevant,
                    "RELEVANT" if relevant else "JUDGED_NOT_RELEVANT",
                )
            )
    if not any(p.relevant for p in pairs):
        raise JudgeError(f"no relevant judgment at relevance level {relevance_level}")
    if judged_negatives:
        if negatives is not None:
            raise JudgeError(
                f"the qrels judge {judged_negatives} pairs non-relevant: those are the "
                "negatives; --negatives is only for qrels that judge relevant documents only"
            )
        return pairs, (
            f"negatives: the {judged_negatives} judged non-relevant pairs (grade below "
            f"{relevance_level}; -1 left out)"
        )
    per_positive = 1 if negatives is None else negatives
    if per_positive < 1:
        raise JudgeError(f"negatives per positive must be at least 1, got {per_positive}")
    doc_ids = list(passages)
    sampled: list[LabelledPair] = []
    for qid in dict.fromkeys(p.query_id for p in pairs):
        judged = set(qrels.judgments(qid))
        wanted = per_positive * sum(1 for p in pairs if p.query_id == qid and p.relevant)
        chosen: list[str] = []
        while len(chosen) < wanted and len(chosen) + len(judged) < len(doc_ids):
            doc = doc_ids[rng.randrange(len(doc_ids))]
            if doc not in judged and doc not in chosen:
                chosen.append(doc)
        question = queries[qid]
        sampled += [
            LabelledPair(qid, d, question, passages[d], False, "SAMPLED_NEGATIVE") for d in chosen
        ]
    return pairs + sampled, (
        f"negatives: the qrels judge only relevant documents, so {len(sampled)} negatives were "
        f"sampled ({per_positive} per positive, uniformly from the corpus documents not judged "
        f"for the query, seed {seed}); presumed non-relevant, and easier than real near-misses, "
        "so kappa is optimistic"
    )


def retrieved_relevance_labels(
    run: Run,
    qrels: Qrels,
    queries: Queries,
    corpus: Corpus,
    *,
    top: int = 3,
    max_chars: int | None = None,
    relevance_level: int = 1,
    run_name: str = "the run",
) -> tuple[list[LabelledPair], str]:
    """Labelled pairs for the relevance question from what a retriever actually handed over:
    each query's top ``top`` documents of ``run``, as passages ``title + " " + text`` cut after
    ``max_chars`` characters (what a pipeline gives its generator, and so what
    context_relevance judges); and how the labels were given.

    A pair is relevant when the qrels grade it >= ``relevance_level``; otherwise it is a
    negative: judged non-relevant, or unjudged (grade -1 too) and presumed non-relevant, as
    trec_eval presumes. These are the hard negatives (near misses the retriever ranked high),
    and an unjudged document that is in fact relevant counts against a judge that calls it
    relevant, so kappa is a lower bound. Queries of the run the qrels do not judge at all are
    left out (nothing says what is relevant to them).
    """
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise JudgeError(f"top must be a positive integer, got {top!r}")
    if max_chars is not None and (
        isinstance(max_chars, bool) or not isinstance(max_chars, int) or max_chars < 1
    ):
        raise JudgeError(f"max_chars must be a positive integer, got {max_chars!r}")
    passages = dict(zip(corpus.doc_ids.tolist(), corpus.passages(), strict=True))
    pairs: list[LabelledPair] = []
    unjudged_queries = 0
    counts = dict.fromkeys(("RELEVANT", "JUDGED_NOT_RELEVANT", "UNJUDGED"), 0)
    for qid in run.query_ids.tolist():
        grades = qrels.judgments(qid)
        if not grades:
            unjudged_queries += 1
            continue
        try:
            question = queries[qid]
        except (KeyError, DataFormatError):
            raise JudgeError(f"{run_name}: query {qid!r} is not among the queries") from None
        for doc, _ in run.ranking(qid)[:top]:
            if doc not in passages:
                raise JudgeError(
                    f"{run_name}: document {doc!r} (query {qid!r}) is not in the corpus"
                )
            grade = grades.get(doc)
            if grade is not None and grade >= relevance_level:
                label = "RELEVANT"
            elif grade is not None and grade >= 0:
                label = "JUDGED_NOT_RELEVANT"
            else:
                label = "UNJUDGED"
            counts[label] += 1
            text = passages[doc] if max_chars is None else passages[doc][:max_chars]
            pairs.append(LabelledPair(qid, doc, question, text, label == "RELEVANT", label))
    if not pairs:
        raise JudgeError(f"{run_name}: no query of the run is judged by the qrels")
    if not counts["RELEVANT"]:
        raise JudgeError(
            f"{run_name}: none of the top {top} documents is relevant at relevance level "
            f"{relevance_level}: nothing to calibrate the judge's yes on"
        )
    judged_queries = len({p.query_id for p in pairs})
    cut = "whole passages" if max_chars is None else f"passages cut after {max_chars} characters"
    skipped = (
        f"; left out: {unjudged_queries} of the run's queries, which the qrels do not judge"
        if unjudged_queries
        else ""
    )
    return pairs, (
        f"pairs: the top {top} documents of {run_name} for {judged_queries} queries "
        f"({cut}{skipped}); positives: the {counts['RELEVANT']} the qrels judge relevant "
        f"(grade >= {relevance_level}); negatives: the other {len(pairs) - counts['RELEVANT']}, "
        f"retrieved but not relevant ({counts['JUDGED_NOT_RELEVANT']} judged non-relevant, "
        f"{counts['UNJUDGED']} unjudged and presumed non-relevant): hard negatives, and an "
        "unjudged relevant document counts against a judge that calls it relevant, so kappa "
        "is a lower bound"
    )


def calibrate_relevance(
    judge: RelevanceJudge,
    pairs: Sequence[LabelledPair],
    *,
    negatives: str = "",
    seed: int = 0,
    tune_fraction: float = 0.5,
    limit: int | None = None,
    tune: bool = True,
    source: str | None = None,
) -> CalibrationResult:
    """Measure a relevance judge against labelled pairs (:func:`relevance_labels`).

    A threshold judge (``with_threshold``) gets its threshold tuned on a seeded
    ``tune_fraction`` and is scored on the rest; any other judge is scored on every pair it
    gave a verdict. ``negatives`` (how negatives were chosen) is kept in the result's labels.
    """
    from pytest_ragmetrics.judges.relevance import RelevancePair

    started = time.perf_counter()
    items = list(pairs)
    if limit is not None:
        if limit < 1:
            raise JudgeError(f"calibration limit must be at least 1, got {limit}")
        # Keep positives and negatives alike: a seeded sample, not the first N (all positives).
        order = np.random.default_rng(seed).permutation(len(items))[:limit]
        items = [items[i] for i in sorted(order.tolist())]
    tunable = tune and callable(getattr(judge, "with_threshold", None))
    n_tune = _tuning_size(len(items), tune_fraction) if tunable else 0
    verdicts: list[Claim] = []
    with progress(f"calibrating {judge.identity().get('name', 'judge')}", len(items)) as advance:
        for start in range(0, len(items), BATCH):
            chunk = items[start : start + BATCH]
            found = judge.judge_relevance(
                [RelevancePair(p.query, p.passage, p.query_id, p.doc_id) for p in chunk]
            )
            verdicts += [
                Claim(p.query, v.relevant, score=v.score, verdict=v.verdict)
                for p, v in zip(chunk, found, strict=True)
            ]
            advance(len(chunk))
    digest = hashlib.sha256()
    for p in items:
        digest.update(json.dumps([p.id, p.relevant, p.label]).encode())
    meta: dict[str, Any] = {
        "n": len(items),
        "sha256": digest.hexdigest(),
        "question": "relevance",
        "negatives": negatives,
        "positives": sum(1 for p in items if p.relevant),
    }
    if source is not None:
        meta["source"] = source
    rows = [
        {
            "id": p.id,
            "label": p.label,
            "human": p.relevant,
            "judge": v.supported,
            "score": v.score,
            "verdict": v.verdict,
        }
        for p, v in zip(items, verdicts, strict=True)
    ]
    measured = _Measured.of(rows, meta, started)
    if tunable:
        tunable_judge = cast("_Tunable", judge)
        return measured.tuned(lambda t: tunable_judge.with_threshold(t).identity(), n_tune, seed)
    return measured.as_judged(judge.identity())


# -- the agreement question ------------------------------------------------------------------

AGREEMENT_LABELS = {"AGREE": True, "DISAGREE": False}
# SciFact claim_support: SUPPORT = the evidence agrees with the claim, CONTRADICT = it does not;
# NOINFO pairs have no evidence sentences, so no reference to agree with: they are left out.
SCIFACT_AGREEMENT = {"SUPPORT": True, "CONTRADICT": False}
GENERIC_LAYOUT = "generic"
SCIFACT_LAYOUT = "scifact claim_support"
_GENERIC_FIELDS = ("answer", "reference")
_SCIFACT_FIELDS = ("claim", "context_sentences", "evidence_sentences")


@dataclass(frozen=True)
class LabelledAnswer:
    """One (question, answer, reference) with a human label; ``agrees`` ⇔ the answer agrees
    with the reference."""

    id: str
    question: str
    answer: str
    reference: str
    agrees: bool
    label: str
    line: int = 0


@dataclass(frozen=True)
class AgreementLabels:
    """The labelled items of an agreement labels file (``path``), its layout, and how many
    items were left out (``left_out``) for what reason (``left_out_reason``)."""

    items: tuple[LabelledAnswer, ...]
    layout: str
    left_out: int = 0
    left_out_reason: str = ""
    path: str | None = None

    def __len__(self) -> int:
        return len(self.items)


def _layout(record: Mapping[str, Any], path: PathLike, line: int) -> str:
    """The layout of a labels file, told from its first item."""
    generic = [k for k in _GENERIC_FIELDS if k in record]
    scifact = [k for k in _SCIFACT_FIELDS if k in record]
    if generic and not scifact:
        return GENERIC_LAYOUT
    if scifact and not generic:
        return SCIFACT_LAYOUT
    found = ", ".join(repr(k) for k in [*generic, *scifact]) or "none of their fields"
    raise DataFormatError(
        f"cannot tell the layout of this agreement labels file (found {found}): a generic item "
        "has 'answer', 'reference' and 'label' (AGREE/DISAGREE), a SciFact claim_support item "
        "'claim_id', 'doc_id', 'claim', 'context_sentences', 'evidence_sentences' and 'label' "
        "(SUPPORT/CONTRADICT/NOINFO)",
        path,
        line,
    )


def _text(record: Mapping[str, Any], key: str, layout: str, path: PathLike, line: int) -> str:
    value = record.get(key)
    if not isinstance(value, str) or not value.strip():
        what = "missing" if key not in record else "not a non-empty string"
        raise DataFormatError(f"{key!r} is {what} (a {layout} item)", path, line)
    return value


def _ident(record: Mapping[str, Any], key: str, layout: str, path: PathLike, line: int) -> str:
    value = record.get(key)
    if isinstance(value, bool) or not isinstance(value, (str, int)) or str(value) == "":
        what = "missing" if key not in record else f"not a string or integer: {value!r}"
        raise DataFormatError(f"{key!r} is {what} (a {layout} item)", path, line)
    return str(value)


def _generic_item(record: Mapping[str, Any], path: PathLike, line: int) -> LabelledAnswer:
    layout = GENERIC_LAYOUT
    item_id = _ident(record, "id", layout, path, line) if "id" in record else f"line-{line}"
    question = record.get("question", "")
    if question is None:
        question = ""
    if not isinstance(question, str):
        raise DataFormatError(
            f"'question' must be a string, got {type(question).__name__}", path, line
        )
    answer = _text(record, "answer", layout, path, line)
    reference = _text(record, "reference", layout, path, line)
    label = record.get("label")
    if isinstance(label, bool):
        agrees, name = label, "AGREE" if label else "DISAGREE"
    elif isinstance(label, str) and label.strip().upper() in AGREEMENT_LABELS:
        name = label.strip().upper()
        agrees = AGREEMENT_LABELS[name]
    else:
        what = "missing" if "label" not in record else f"got {label!r}"
        raise DataFormatError(
            f"'label' must be AGREE or DISAGREE (or true/false), {what}", path, line
        )
    return LabelledAnswer(item_id, question, answer, reference, agrees, name, line)


def _scifact_item(record: Mapping[str, Any], path: PathLike, line: int) -> LabelledAnswer | None:
    """The item of a SciFact claim_support line; None for a NOINFO pair (no evidence)."""
    layout = SCIFACT_LAYOUT
    item_id = (
        f"{_ident(record, 'claim_id', layout, path, line)}:"
        f"{_ident(record, 'doc_id', layout, path, line)}"
    )
    claim = _text(record, "claim", layout, path, line)
    sentences = record.get("context_sentences")
    if not isinstance(sentences, list) or not all(isinstance(s, str) for s in sentences):
        raise DataFormatError(
            "'context_sentences' must be a list of strings (the abstract's sentences)", path, line
        )
    evidence = record.get("evidence_sentences")
    if not isinstance(evidence, list) or not all(
        isinstance(i, int) and not isinstance(i, bool) for i in evidence
    ):
        raise DataFormatError(
            "'evidence_sentences' must be a list of sentence indices (integers)", path, line
        )
    for index in evidence:
        if not 0 <= index < len(sentences):
            raise DataFormatError(
                f"evidence sentence index {index} is out of range: the item has "
                f"{len(sentences)} context sentences (indices 0 to {len(sentences) - 1})",
                path,
                line,
            )
    label = record.get("label")
    name = label.strip().upper() if isinstance(label, str) else None
    if name == "NOINFO":
        return None
    if name not in SCIFACT_AGREEMENT:
        what = "missing" if "label" not in record else f"got {label!r}"
        raise DataFormatError(f"'label' must be SUPPORT, CONTRADICT or NOINFO, {what}", path, line)
    if not evidence:
        raise DataFormatError(
            f"a {name} item needs evidence sentences (the reference its claim is compared "
            "with); 'evidence_sentences' is empty",
            path,
            line,
        )
    reference = " ".join(sentences[i].strip() for i in sorted(set(evidence)))
    return LabelledAnswer(item_id, claim, claim, reference, SCIFACT_AGREEMENT[name], name, line)


def read_agreement_labels(path: PathLike) -> AgreementLabels:
    """Read human-labelled agreement items from a JSONL file (gzipped too), in either layout,
    told from the first item:

    - generic, one item a line: ``{"id"?, "question"?, "answer", "reference", "label"}`` with
      label AGREE / DISAGREE (any case) or a JSON boolean; the id defaults to the line number;
    - SciFact's claim_support: ``claim_id``, ``doc_id``, ``claim``, ``context_sentences``,
      ``evidence_sentences`` (indices), ``label`` SUPPORT / CONTRADICT / NOINFO. The question
      and the answer are the claim, the reference its evidence sentences (in order, joined by
      a space); agrees ⇔ SUPPORT. NOINFO pairs have no evidence: they are left out, counted.

    Any error (a missing field, an evidence index out of range, a repeated id, an empty file,
    a layout it cannot tell) is a DataFormatError naming the file and line.
    """
    items: list[LabelledAnswer] = []
    seen: dict[str, int] = {}
    layout: str | None = None
    left_out = 0
    for line, record in read_jsonl(path):
        if layout is None:
            layout = _layout(record, path, line)
        if layout == GENERIC_LAYOUT:
            item: LabelledAnswer | None = _generic_item(record, path, line)
            item_id = item.id if item is not None else ""
        else:
            item = _scifact_item(record, path, line)
            item_id = f"{record['claim_id']}:{record['doc_id']}"
        if item_id in seen:
            raise DataFormatError(
                f"item id {item_id!r} already appears on line {seen[item_id]}", path, line
            )
        seen[item_id] = line
        if item is None:
            left_out += 1
        else:
            items.append(item)
    if layout is None:
        raise DataFormatError("no labelled items in the file (it is empty)", path)
    if not items:
        raise DataFormatError(
            f"no SUPPORT or CONTRADICT item in the file ({left_out} NOINFO items left out)", path
        )
    reason = (
        "NOINFO pairs have no evidence sentences, so no reference to agree with"
        if layout == SCIFACT_LAYOUT
        else ""
    )
    return AgreementLabels(tuple(items), layout, left_out, reason, os.fspath(path))


def calibrate_agreement(
    judge: Any,
    items: AgreementLabels | Sequence[LabelledAnswer] | PathLike,
    *,
    seed: int = 0,
    tune_fraction: float = 0.5,
    limit: int | None = None,
    tune: bool = True,
) -> CalibrationResult:
    """Measure a judge's agreement question ("does the answer agree with the reference?",
    its ``judge_agreement``) against human labels (a labels file, :func:`read_agreement_labels`
    output or a list of :class:`LabelledAnswer`).

    A judge with ``with_agreement_threshold`` (the embedding judge) gets its agreement
    threshold tuned on a seeded ``tune_fraction`` of the items and is scored on the rest; the
    result's judge is the agreement question's identity at the tuned threshold (what the κ
    gate looks up). Any other judge (or ``tune=False``) is scored on every item it gave a
    verdict (an HTTP judge's unparseable replies are unjudged). ``limit`` keeps the first N
    items (file order).
    """
    from pytest_ragmetrics.judges.answers import AgreementJudge, question_identity

    started = time.perf_counter()
    labels = (
        read_agreement_labels(items)
        if isinstance(items, (str, os.PathLike))
        else items
        if isinstance(items, AgreementLabels)
        else AgreementLabels(tuple(items), GENERIC_LAYOUT)
    )
    chosen = list(labels.items)
    if limit is not None:
        if limit < 1:
            raise JudgeError(f"calibration limit must be at least 1, got {limit}")
        chosen = chosen[:limit]
    if not chosen:
        raise JudgeError("no labelled agreement items to calibrate on")
    if not isinstance(judge, AgreementJudge):
        raise JudgeError(
            f"judge {type(judge).__name__!r} has no judge_agreement(items): it cannot answer the "
            "agreement question; use the embedding or http judge"
        )
    tunable = tune and callable(getattr(judge, "with_agreement_threshold", None))
    n_tune = _tuning_size(len(chosen), tune_fraction) if tunable else 0
    verdicts = _agreement_verdicts(judge, chosen, labels.path)
    digest = hashlib.sha256()
    for item in chosen:
        digest.update(
            json.dumps([item.id, item.question, item.answer, item.reference, item.agrees]).encode()
        )
    meta: dict[str, Any] = {
        "n": len(chosen),
        "sha256": digest.hexdigest(),
        "question": "agreement",
        "layout": labels.layout,
        "positives": sum(1 for item in chosen if item.agrees),
        "left_out": labels.left_out,
    }
    if labels.left_out_reason:
        meta["left_out_reason"] = labels.left_out_reason
    if labels.path is not None:
        meta["file"] = Path(labels.path).name
    rows = [
        {
            "id": item.id,
            "label": item.label,
            "human": item.agrees,
            "judge": v.value,
            "score": v.score,
            "verdict": v.reply,
        }
        for item, v in zip(chosen, verdicts, strict=True)
    ]
    measured = _Measured.of(rows, meta, started)
    if tunable:
        tunable_judge = cast("_AgreementTunable", judge)
        return measured.tuned(
            lambda t: tunable_judge.with_agreement_threshold(t).question_identity("agreement"),
            n_tune,
            seed,
        )
    return measured.as_judged(question_identity(judge, "agreement"))


class _AgreementQuestion(Protocol):
    def question_identity(self, task: str) -> dict[str, Any]: ...


class _AgreementTunable(Protocol):
    """A judge whose agreement verdict is a score at or above a threshold (the embedding
    judge)."""

    def with_agreement_threshold(self, threshold: float) -> _AgreementQuestion: ...


def _agreement_verdicts(
    judge: Any, items: list[LabelledAnswer], path: PathLike | None
) -> list[Verdict]:
    """One agreement verdict per item, in order, with progress; a JudgeError names the item."""
    name = getattr(judge, "name", None) or type(judge).__name__
    size = max(BATCH, int(getattr(judge, "batch_size", BATCH)))
    verdicts: list[Verdict] = []
    note = (
        f"calibrating the {name} judge's agreement question on {len(items):,} labelled items: "
        "those not in its cache are judged now; a rerun reads the cache"
    )
    with progress(f"calibrating {name} agreement", len(items), note=note) as advance:
        for start in range(0, len(items), size):
            chunk = items[start : start + size]
            try:
                found = judge.judge_agreement([(i.question, i.answer, i.reference) for i in chunk])
            except JudgeError:
                # Again one by one (answers already given come from the cache), so the error
                # names the item it is about.
                found = []
                for item in chunk:
                    where = f"item {item.id!r}"
                    if path is not None:
                        where = f"{os.fspath(path)}:{item.line}: {where}"
                    with naming(where):
                        found += judge.judge_agreement(
                            [(item.question, item.answer, item.reference)]
                        )
            if len(found) != len(chunk):
                raise JudgeError(
                    f"judge {name!r}: judge_agreement returned {len(found)} verdicts for "
                    f"{len(chunk)} items"
                )
            verdicts += found
            advance(len(chunk))
    return verdicts
