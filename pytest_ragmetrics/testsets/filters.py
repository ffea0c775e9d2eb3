"""Filters of generated queries, each returning the candidates it keeps and a
:class:`~pytest_ragmetrics.testsets.model.FilterReport` that ``dataset.json`` records:

- :func:`exact_duplicates`: the same words (case, punctuation and spacing aside) as an earlier
  query;
- :func:`near_duplicates`: embedding cosine with an earlier kept query at or above a threshold;
- :func:`answer_leaks`: queries that give their reference answer away verbatim;
- :func:`answerability`: queries a relevance judge finds its source passage not relevant to.
  The κ gate applies: a judge without a calibrated kappa at or above ``min_kappa`` has its
  verdicts reported (what it would remove), not applied.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.testsets.model import Candidate, FilterReport, normalised, words
from pytest_ragmetrics.testsets.sampling import cut_document

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.relevance import RelevanceJudge

Embed = Callable[[list[str]], Any]
Filtered = tuple[list[Candidate], FilterReport]


def _split(
    candidates: Sequence[Candidate], removed: set[str]
) -> tuple[list[Candidate], tuple[str, ...]]:
    kept = [c for c in candidates if c.query_id not in removed]
    return kept, tuple(c.query_id for c in candidates if c.query_id in removed)


def exact_duplicates(candidates: Sequence[Candidate]) -> Filtered:
    """Drop every query whose words equal an earlier one's; the first stays."""
    first: dict[str, str] = {}
    removed: dict[str, str] = {}
    for c in candidates:
        key = normalised(c.text)
        if key in first:
            removed[c.query_id] = first[key]
        else:
            first[key] = c.query_id
    kept, ids = _split(candidates, set(removed))
    return kept, FilterReport(
        "exact_duplicates", ids, checked=len(candidates), details={"duplicate_of": removed}
    )


def near_duplicates(
    candidates: Sequence[Candidate], embed: Embed, threshold: float, *, model: str
) -> Filtered:
    """Drop every query whose embedding cosine with an earlier kept query is at least
    ``threshold`` (in order: the first of a group stays). ``embed`` maps texts to vectors."""
    if not -1.0 <= threshold <= 1.0:
        raise ConfigError(f"near-duplicate threshold must be a cosine in [-1, 1], got {threshold}")
    if not candidates:
        return [], FilterReport("near_duplicates", (), parameters={"cosine": threshold})
    vectors = np.asarray(embed([c.text for c in candidates]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    vectors = vectors / np.where(norms == 0, 1.0, norms)
    kept_rows: list[int] = []
    removed: dict[str, dict[str, Any]] = {}
    for i, c in enumerate(candidates):
        if kept_rows:
            sims = vectors[kept_rows] @ vectors[i]
            best = int(np.argmax(sims))
            if sims[best] >= threshold:
                twin = candidates[kept_rows[best]].query_id
                removed[c.query_id] = {"of": twin, "cosine": round(float(sims[best]), 4)}
                continue
        kept_rows.append(i)
    kept, ids = _split(candidates, set(removed))
    return kept, FilterReport(
        "near_duplicates",
        ids,
        parameters={"cosine": threshold, "model": model},
        checked=len(candidates),
        details={"duplicate_of": removed},
    )


def _ngrams(tokens: Sequence[str], n: int) -> set[tuple[str, ...]]:
    return {tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)}


def leaks(query: str, answer: str, min_words: int) -> bool:
    """Whether ``query`` gives ``answer`` away: holds its words whole, in order, or shares a
    run of ``min_words`` words with it."""
    a, q = words(answer), words(query)
    if not a:
        return False
    if f" {' '.join(a)} " in f" {' '.join(q)} ":
        return True
    return len(a) >= min_words and bool(_ngrams(a, min_words) & _ngrams(q, min_words))


def answer_leaks(candidates: Sequence[Candidate], min_words: int) -> Filtered:
    """Drop queries that give their reference answer away (:func:`leaks`); queries without a
    reference answer are not checked."""
    if min_words < 1:
        raise ConfigError(f"--leak-words must be a positive integer, got {min_words}")
    checked = [c for c in candidates if c.answer]
    removed = {c.query_id for c in checked if leaks(c.text, c.answer or "", min_words)}
    kept, ids = _split(candidates, removed)
    return kept, FilterReport(
        "answer_leaks", ids, parameters={"min_words": min_words}, checked=len(checked)
    )


def gate_reason(name: str, kappa: float | None, min_kappa: float) -> str:
    """Why a judge's filter is not applied ('' when it is)."""
    if kappa is None:
        from pytest_ragmetrics.judges.calibration.figures import TRUST_RULE

        return (
            f"judge {name!r} has no calibration on {TRUST_RULE} (run "
            "`ragmetrics calibrate --question relevance --save` and pass the file with "
            "--calibration)"
        )
    if kappa < min_kappa:
        return f"judge {name!r} has Cohen's kappa {kappa:.3f} < --min-kappa {min_kappa:g}"
    return ""


def answerability(
    candidates: Sequence[Candidate],
    corpus: Corpus,
    judge: RelevanceJudge,
    *,
    kappa: float | None,
    min_kappa: float,
    advance: Callable[[int], None] | None = None,
    batch: int = 64,
) -> Filtered:
    """Ask ``judge`` whether each query's source passage is relevant to it; a "no" removes the
    query when the judge passed calibration (``kappa`` >= ``min_kappa``), else it is only
    counted. Pairs the judge leaves unjudged are kept."""
    from pytest_ragmetrics.judges.relevance import RelevancePair

    identity = judge.identity()
    verdicts = []
    for start in range(0, len(candidates), max(1, batch)):
        chunk = candidates[start : start + batch]
        pairs = []
        for c in chunk:
            doc = corpus[c.source]
            # The passage the systems will see: without what the query cut from it.
            cut = cut_document(doc.title, doc.text, c.removed, c.echoes) if c.removed else None
            title, text = cut or (doc.title, doc.text)
            passage = f"{title} {text}".strip()
            pairs.append(RelevancePair(c.text, passage, c.query_id, c.source))
        verdicts += judge.judge_relevance(pairs)
        if advance is not None:
            advance(len(chunk))
    no = {v.query_id for v in verdicts if v.relevant is False and v.query_id is not None}
    reason = gate_reason(str(identity.get("name", "judge")), kappa, min_kappa)
    applied = not reason
    kept, ids = _split(candidates, no)
    return (kept if applied else list(candidates)), FilterReport(
        "answerability",
        ids,
        applied=applied,
        reason=reason,
        parameters={"judge": identity, "kappa": kappa, "min_kappa": min_kappa},
        checked=len(candidates),
        details={"unjudged": sum(1 for v in verdicts if v.relevant is None)},
    )
