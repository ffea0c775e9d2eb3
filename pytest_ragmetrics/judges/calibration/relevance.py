"""Calibrating the relevance question: how well a relevance judge's "is this passage relevant
to the question?" agrees with a dataset's qrels, on (question, passage) pairs: the judged ones
with sampled negatives (:func:`relevance_labels`), or what a retriever handed over
(:func:`retrieved_relevance_labels`)."""

from __future__ import annotations

import random
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.calibration.figures import (
    BATCH,
    CalibrationResult,
    Measured,
    Tunable,
    check_limit,
    item_row,
    labels_digest,
    tuning_size,
)
from pytest_ragmetrics.judges.relevance import RelevanceJudge, RelevancePair, RelevanceVerdict
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.values import positive_int

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Corpus, Qrels, Queries, Run


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


def _question(queries: Queries, qid: str, where: str) -> str:
    try:
        return queries[qid]
    except (KeyError, DataFormatError):
        raise JudgeError(f"{where}query {qid!r} is not among the queries") from None


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
    passages = dict(zip(corpus.doc_ids.tolist(), corpus.passages(), strict=True))
    pairs = _judged_pairs(qrels, queries, passages, relevance_level)
    if not any(p.relevant for p in pairs):
        raise JudgeError(f"no relevant judgment at relevance level {relevance_level}")
    judged_negatives = sum(not p.relevant for p in pairs)
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
    sampled = _sampled_negatives(pairs, qrels, queries, passages, per_positive, seed)
    return pairs + sampled, (
        f"negatives: the qrels judge only relevant documents, so {len(sampled)} negatives were "
        f"sampled ({per_positive} per positive, uniformly from the corpus documents not judged "
        f"for the query, seed {seed}); presumed non-relevant, and easier than real near-misses, "
        "so kappa is optimistic"
    )


def _judged_pairs(
    qrels: Qrels, queries: Queries, passages: dict[str, str], relevance_level: int
) -> list[LabelledPair]:
    """Every pair the qrels judge (grade -1 left out), relevant at ``relevance_level``."""
    pairs: list[LabelledPair] = []
    for qid in qrels.query_ids.tolist():
        grades = qrels.judgments(qid)
        if not grades:
            continue
        question = _question(queries, qid, "qrels ")
        for doc, grade in grades.items():
            if grade < 0:
                continue
            if doc not in passages:
                raise JudgeError(f"qrels document {doc!r} (query {qid!r}) is not in the corpus")
            relevant = grade >= relevance_level
            label = "RELEVANT" if relevant else "JUDGED_NOT_RELEVANT"
            pairs.append(LabelledPair(qid, doc, question, passages[doc], relevant, label))
    return pairs


def _sampled_negatives(
    pairs: list[LabelledPair],
    qrels: Qrels,
    queries: Queries,
    passages: dict[str, str],
    per_positive: int,
    seed: int,
) -> list[LabelledPair]:
    """Per query, ``per_positive`` corpus documents per positive that the qrels do not judge
    for it, drawn uniformly (seeded)."""
    rng = random.Random(seed)
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
    return sampled


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
    for name, value, allowed in (("top", top, False), ("max_chars", max_chars, True)):
        if value is not None or not allowed:
            positive_int(value, name, JudgeError)
    passages = dict(zip(corpus.doc_ids.tolist(), corpus.passages(), strict=True))
    pairs, unjudged_queries = _retrieved_pairs(
        run, qrels, queries, passages, top, max_chars, relevance_level, run_name
    )
    if not pairs:
        raise JudgeError(f"{run_name}: no query of the run is judged by the qrels")
    counts = {label: sum(p.label == label for p in pairs) for label in RELEVANCE_LABELS}
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


def _retrieved_pairs(
    run: Run,
    qrels: Qrels,
    queries: Queries,
    passages: dict[str, str],
    top: int,
    max_chars: int | None,
    relevance_level: int,
    run_name: str,
) -> tuple[list[LabelledPair], int]:
    """The labelled top ``top`` pairs of each query of ``run`` the qrels judge, and how many
    queries of the run they do not judge."""
    pairs: list[LabelledPair] = []
    unjudged_queries = 0
    for qid in run.query_ids.tolist():
        grades = qrels.judgments(qid)
        if not grades:
            unjudged_queries += 1
            continue
        question = _question(queries, qid, f"{run_name}: ")
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
            text = passages[doc] if max_chars is None else passages[doc][:max_chars]
            pairs.append(LabelledPair(qid, doc, question, text, label == "RELEVANT", label))
    return pairs, unjudged_queries


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
    started = time.perf_counter()
    items = list(pairs)
    check_limit(limit)
    if limit is not None:
        # Keep positives and negatives alike: a seeded sample, not the first N (all positives).
        order = np.random.default_rng(seed).permutation(len(items))[:limit]
        items = [items[i] for i in sorted(order.tolist())]
    tunable = tune and callable(getattr(judge, "with_threshold", None))
    n_tune = tuning_size(len(items), tune_fraction) if tunable else 0
    verdicts = _relevance_verdicts(judge, items)
    meta: dict[str, Any] = {
        "n": len(items),
        "sha256": labels_digest([p.id, p.relevant, p.label] for p in items),
        "question": "relevance",
        "negatives": negatives,
        "positives": sum(1 for p in items if p.relevant),
    }
    if source is not None:
        meta["source"] = source
    rows = [
        item_row(p.id, p.label, p.relevant, v.relevant, v.score, v.verdict)
        for p, v in zip(items, verdicts, strict=True)
    ]
    measured = Measured.of(rows, meta, started)
    if tunable:
        tunable_judge = cast("Tunable", judge)
        return measured.tuned(lambda t: tunable_judge.with_threshold(t).identity(), n_tune, seed)
    return measured.as_judged(judge.identity())


def _relevance_verdicts(judge: RelevanceJudge, items: list[LabelledPair]) -> list[RelevanceVerdict]:
    """One verdict per labelled pair, in order, :data:`BATCH` pairs at a time, with progress."""
    verdicts: list[RelevanceVerdict] = []
    with progress(f"calibrating {judge.identity().get('name', 'judge')}", len(items)) as advance:
        for start in range(0, len(items), BATCH):
            chunk = items[start : start + BATCH]
            verdicts += judge.judge_relevance(
                [RelevancePair(p.query, p.passage, p.query_id, p.doc_id) for p in chunk]
            )
            advance(len(chunk))
    return verdicts


__all__ = [
    "RELEVANCE_LABELS",
    "LabelledPair",
    "calibrate_relevance",
    "relevance_labels",
    "retrieved_relevance_labels",
]
