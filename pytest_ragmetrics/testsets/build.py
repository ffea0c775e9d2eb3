"""From candidates to a test set: the filters in order, the first ``count`` kept, provenance."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics._version import __version__
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import RagMetricsWarning, how_to_silence
from pytest_ragmetrics.testsets import filters
from pytest_ragmetrics.testsets.folder import CREATED_BY
from pytest_ragmetrics.testsets.model import Candidate, FilterReport, TestSet, normalised
from pytest_ragmetrics.testsets.sampling import cut_corpus, prose_sentences

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
    final, judged = judged_twins(kept[:count], corpus, duplicates=_duplicates(candidates, reports))
    copy, not_cut = cut_corpus(corpus, final)
    not_cut_ids = [c.query_id for c in final if c.uncut or c.query_id in not_cut]
    if not_cut_ids:
        _warn_not_cut(not_cut_ids, len(final))
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
        "twins_judged": judged["twins"],
        "duplicates_judged": judged["duplicates"],
        "verbatim_judged": judged["verbatim"],
        "not_cut": {"count": len(not_cut_ids), "query_ids": not_cut_ids[:_SHOWN]},
        "cost": dict(cost or {}),
        "review": None,
    }
    return TestSet(final, provenance, copy)


def judged_twins(
    candidates: Sequence[Candidate],
    corpus: Corpus,
    *,
    duplicates: Mapping[str, Sequence[Candidate]] | None = None,
) -> tuple[tuple[Candidate, ...], dict[str, int]]:
    """Each candidate with more documents judged as its source is, and how many such
    judgments were added of each kind: ``twins``, the documents identical to a relevant one (the
    same title and text); ``duplicates``, the relevant documents of the candidates dropped as
    exact duplicates of it (``duplicates``: by kept query id); ``verbatim``, the documents
    holding a title or sentence query's source text as their title or a sentence. A document
    left unjudged counts as non-relevant, so a system ranking the exact match first would lose
    half its score."""
    by_text: dict[tuple[str, str], list[str]] = {}
    for doc in corpus:
        by_text.setdefault((doc.title, doc.text), []).append(doc.id)
    holders = _verbatim_holders(candidates, corpus)
    out: list[Candidate] = []
    added = dict.fromkeys(("twins", "duplicates", "verbatim"), 0)

    def judge(relevant: dict[str, int], doc_id: str, grade: int, kind: str) -> None:
        if doc_id in corpus and doc_id not in relevant:
            relevant[doc_id] = grade
            added[kind] += 1

    def twins(relevant: dict[str, int]) -> None:
        for doc_id, grade in list(relevant.items()):
            if doc_id in corpus:
                doc = corpus[doc_id]
                for twin in by_text[(doc.title, doc.text)]:
                    judge(relevant, twin, grade, "twins")

    for candidate in candidates:
        relevant = dict(candidate.relevant)
        twins(relevant)
        for dropped in (duplicates or {}).get(candidate.query_id, ()):
            for doc_id, grade in dropped.relevant:
                judge(relevant, doc_id, grade, "duplicates")
        for doc_id in holders.get(_source_key(candidate, corpus) or "", ()):
            judge(relevant, doc_id, candidate.relevant[0][1], "verbatim")
        twins(relevant)  # of the documents just judged
        if len(relevant) == len(candidate.relevant):
            out.append(candidate)
        else:
            out.append(replace(candidate, relevant=tuple(relevant.items())))
    return tuple(out), added


_SOURCE_STYLES = ("title", "sentence")  # queries that are their document's own words
_SHOWN = 20  # not-cut query ids listed in the provenance


def _source_key(candidate: Candidate, corpus: Corpus) -> str | None:
    """The words of the title or sentence a title or sentence query was taken from."""
    if candidate.style not in _SOURCE_STYLES:
        return None
    text = candidate.removed
    if text is None and candidate.style == "title" and candidate.source in corpus:
        text = corpus[candidate.source].title
    return normalised(text if text is not None else candidate.text) or None


def _verbatim_holders(candidates: Sequence[Candidate], corpus: Corpus) -> dict[str, list[str]]:
    """For each source text of the candidates (:func:`_source_key`), the documents holding it
    as their title or as a sentence of their text."""
    wanted = {key for c in candidates if (key := _source_key(c, corpus))}
    found: dict[str, list[str]] = {}
    if not wanted:
        return found
    for doc in corpus:
        keys = [normalised(doc.title), *(normalised(s) for s in prose_sentences(doc.text))]
        for key in dict.fromkeys(keys):
            if key in wanted:
                found.setdefault(key, []).append(doc.id)
    return found


def _duplicates(
    candidates: Sequence[Candidate], reports: Sequence[FilterReport]
) -> dict[str, list[Candidate]]:
    """The candidates the exact-duplicate filter dropped, by the id of the query they repeat."""
    by_id = {c.query_id: c for c in candidates}
    found: dict[str, list[Candidate]] = {}
    for report in reports:
        if report.name == "exact_duplicates" and report.applied:
            for dropped, kept in dict(report.details.get("duplicate_of") or {}).items():
                found.setdefault(str(kept), []).append(by_id[dropped])
    return found


def _warn_not_cut(query_ids: Sequence[str], total: int) -> None:
    shown = ", ".join(query_ids[:5]) + (", ..." if len(query_ids) > 5 else "")
    warnings.warn(
        f"{len(query_ids)} of {total} queries drawn to be cut (remove_query) stay verbatim in "
        f"a document judged relevant to them ({shown}): cut, nothing of its text would be "
        "left; provenance 'not_cut' lists them. " + how_to_silence(RagMetricsWarning),
        RagMetricsWarning,
        stacklevel=3,
    )


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
