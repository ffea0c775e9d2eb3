"""Calibrating the claim-support question: how well a judge's "is this claim supported by this
context?" agrees with human support labels (supported ⇔ the label is SUPPORT), on (claim,
context sentences, label) items. A threshold judge gets its threshold tuned on one seeded part
of the labels and is scored on the rest, so the figures are not flattered by the tuning."""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.assessments import Claim
from pytest_ragmetrics.data.textfile import read_jsonl
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.base import naming
from pytest_ragmetrics.judges.calibration import figures
from pytest_ragmetrics.judges.protocols import BatchClaimJudge, ClaimJudge, Judge, ThresholdJudge
from pytest_ragmetrics.progress import progress

PathLike = str | os.PathLike[str]
LABELS = ("SUPPORT", "CONTRADICT", "NOINFO")


@dataclass(frozen=True)
class LabelledClaim:
    """One human-labelled (claim, context) pair, its label as read: SUPPORT, CONTRADICT or
    NOINFO (a JSON ``true`` reads as SUPPORT, ``false`` as NOT_SUPPORTED)."""

    id: str
    claim: str
    contexts: tuple[str, ...]
    label: str
    line: int = 0

    @property
    def supported(self) -> bool:
        """Whether the humans found the claim supported: its label is SUPPORT (the one source,
        so a record cannot say both)."""
        return self.label == "SUPPORT"


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
            name = "SUPPORT" if label else "NOT_SUPPORTED"
        elif isinstance(label, str) and label.upper() in LABELS:
            name = label.upper()
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
        items.append(LabelledClaim(item_id, claim, tuple(contexts), name, line))
    if not items:
        raise DataFormatError("no labelled claims in the file", path)
    return items


def _labels_meta(labels: Sequence[LabelledClaim], path: PathLike | None) -> dict[str, Any]:
    digest = figures.labels_digest(
        [item.id, item.claim, item.contexts, item.supported] for item in labels
    )
    meta: dict[str, Any] = {"n": len(labels), "sha256": digest}
    if path is not None:
        meta["file"] = Path(path).name
    return meta


def _named_verdict(judge: Judge, item: LabelledClaim, path: PathLike | None) -> Claim:
    """:func:`_verdict`, a JudgeError naming the labels file, line and item id."""
    with naming(figures.item_place(path, item.line, f"claim {item.id!r}")):
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


def calibrate(
    judge: Judge,
    labels: Sequence[LabelledClaim] | PathLike,
    *,
    seed: int = 0,
    tune_fraction: float = 0.5,
    limit: int | None = None,
    tune: bool = True,
) -> figures.CalibrationResult:
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
    n_tune = 0 if threshold_judge is None else figures.tuning_size(len(items), tune_fraction)
    meta = _labels_meta(items, path)
    verdicts = _judge_items(judge, items, path)
    rows = [
        figures.item_row(item.id, item.label, item.supported, v.supported, v.score, v.verdict)
        for item, v in zip(items, verdicts, strict=True)
    ]
    measured = figures.Measured.of(rows, meta, started)
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
    figures.check_limit(limit)
    if limit is not None:
        items = items[:limit]
    return path, items


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
        size = max(1, int(getattr(judge, "batch_size", figures.BATCH)))
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


__all__ = ["LabelledClaim", "calibrate", "read_claim_labels"]
