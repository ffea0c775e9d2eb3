"""From candidates to a test set: the filters in order, the first ``count`` kept, provenance."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics._version import __version__
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.testsets import filters
from pytest_ragmetrics.testsets.folder import CREATED_BY
from pytest_ragmetrics.testsets.model import Candidate, FilterReport, TestSet
from pytest_ragmetrics.testsets.sampling import corpus_without_removed

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.relevance import RelevanceJudge

DEFAULT_LEAK_WORDS = 5
DEFAULT_MIN_KAPPA = 0.4


@dataclass(frozen=True)
class FilterSettings:
    """Which filters run: exact duplicates; near duplicates at ``near_cosine`` with ``embed``;
    answer leaks with ``leak_words`` (None: off); answerability by ``judge`` (None: off),
    applied when its ``kappa`` reaches ``min_kappa``."""

    exact: bool = True
    near_cosine: float | None = None
    embed: filters.Embed | None = None
    embed_model: str = ""
    leak_words: int | None = DEFAULT_LEAK_WORDS
    judge: RelevanceJudge | None = None
    kappa: float | None = None
    min_kappa: float = DEFAULT_MIN_KAPPA


def apply_filters(
    candidates: Sequence[Candidate],
    corpus: Corpus,
    settings: FilterSettings,
    *,
    advance: Callable[[int], None] | None = None,
) -> tuple[list[Candidate], list[FilterReport]]:
    """The candidates every applied filter keeps, and each filter's report, in order."""
    kept = list(candidates)
    reports: list[FilterReport] = []
    if settings.exact:
        kept, report = filters.exact_duplicates(kept)
        reports.append(report)
    if settings.near_cosine is not None:
        if settings.embed is None:
            raise ValueError("near-duplicate filtering needs an embed function")
        kept, report = filters.near_duplicates(
            kept, settings.embed, settings.near_cosine, model=settings.embed_model
        )
        reports.append(report)
    if settings.leak_words is not None:
        kept, report = filters.answer_leaks(kept, settings.leak_words)
        reports.append(report)
    if settings.judge is not None:
        kept, report = filters.answerability(
            kept,
            corpus,
            settings.judge,
            kappa=settings.kappa,
            min_kappa=settings.min_kappa,
            advance=advance,
        )
        reports.append(report)
    return kept, reports


def build_testset(
    candidates: Sequence[Candidate],
    count: int,
    corpus: Corpus,
    settings: FilterSettings,
    *,
    generator: Mapping[str, Any],
    corpus_source: str,
    dropped: Mapping[str, str] | None = None,
    cost: Mapping[str, int] | None = None,
    name: str | None = None,
    advance: Callable[[int], None] | None = None,
) -> TestSet:
    """Filter ``candidates``, keep the first ``count`` survivors, and record how."""
    kept, reports = apply_filters(candidates, corpus, settings, advance=advance)
    final, twins = judged_twins(kept[:count], corpus)
    copy = corpus_without_removed(corpus, final)
    styles: dict[str, int] = {}
    for c in final:
        styles[c.style] = styles.get(c.style, 0) + 1
    provenance: dict[str, Any] = {
        "created_by": CREATED_BY,
        "version": __version__,
        "name": name,
        "generator": dict(generator),
        "seed": generator.get("seed"),
        "corpus": _corpus_provenance(corpus, corpus_source, copy),
        "requested": count,
        "candidates": len(candidates),
        "dropped_by_generator": dict(dropped or {}),
        "filters": [r.to_dict() for r in reports],
        "after_filters": len(kept),
        "queries": len(final),
        "styles": styles,
        "references": sum(1 for c in final if c.answer),
        "twins_judged": twins,
        "cost": dict(cost or {}),
        "review": None,
    }
    return TestSet(final, provenance, copy)


def judged_twins(
    candidates: Sequence[Candidate], corpus: Corpus
) -> tuple[tuple[Candidate, ...], int]:
    """Each candidate with the documents identical to a relevant one (the same title and
    text) judged as that one is, and how many such judgments were added: a twin left unjudged
    counts as non-relevant, so a system that cannot tell the two apart lost half its score."""
    by_text: dict[tuple[str, str], list[str]] = {}
    for doc in corpus:
        by_text.setdefault((doc.title, doc.text), []).append(doc.id)
    out: list[Candidate] = []
    added = 0
    for candidate in candidates:
        relevant = dict(candidate.relevant)
        for doc_id, grade in candidate.relevant:
            if doc_id not in corpus:
                continue
            doc = corpus[doc_id]
            for twin in by_text[(doc.title, doc.text)]:
                if twin not in relevant:
                    relevant[twin] = grade
                    added += 1
        if len(relevant) == len(candidate.relevant):
            out.append(candidate)
        else:
            out.append(replace(candidate, relevant=tuple(relevant.items())))
    return tuple(out), added


def _corpus_provenance(corpus: Corpus, source: str, copy: Corpus | None) -> dict[str, Any]:
    """The source corpus's fingerprints and, when the folder carries a copy without the
    queries' removed sentences, the copy's: the systems are evaluated on the copy."""
    found: dict[str, Any] = {
        "source": source,
        "documents": len(corpus),
        "fingerprint": corpus.fingerprint,
        "text_fingerprint": corpus.text_fingerprint,
    }
    if copy is not None:
        before, after = corpus.doc_digests, copy.doc_digests  # a cut title is a change too
        changed = sum(1 for d, digest in after.items() if before[d] != digest)
        found["copy"] = {
            "about": "corpus.jsonl is the source corpus with each removed query (a sentence "
            "or a title) cut from its source document (inverse cloze, Lee et al. 2019); "
            "evaluate systems on it, not on the source corpus",
            "documents_changed": changed,
            "fingerprint": copy.fingerprint,
            "text_fingerprint": copy.text_fingerprint,
        }
    return found
