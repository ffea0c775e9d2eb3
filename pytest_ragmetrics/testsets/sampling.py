"""Which documents a test set is made from, in a seeded order, and what generators read of a
document: its sentences, its keyphrases (tf-idf), a related document (for two-document
questions). No model: plain word statistics over the corpus."""

from __future__ import annotations

import math
import random
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.judges.base import split_sentences
from pytest_ragmetrics.testsets.model import words

# Common English function words: never a keyphrase term.
_STOPWORD_TEXT = """a about above after again against all also am an and any are as at be
    because been
    before being below between both but by can could did do does doing down during each few
    for from further had has have having he her here hers herself him himself his how i if in
    into is it its itself just may me might more most must my myself no nor not now of off on
    once only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too under
    until up upon very was we were what when where which while who whom why will with within
    without would you your yours yourself yourselves et al via using used use however thus
    therefore whether among one two three four five"""
STOPWORDS = frozenset(_STOPWORD_TEXT.split())


def document_order(corpus: Corpus, seed: int) -> list[int]:
    """Every document's row, shuffled by ``seed`` (the same seed, the same order)."""
    rows = list(range(len(corpus)))
    random.Random(seed).shuffle(rows)
    return rows


def sentences_between(text: str, min_words: int, max_words: int) -> list[str]:
    """The sentences of ``text`` with ``min_words`` to ``max_words`` words."""
    return [s for s in split_sentences(text) if min_words <= len(words(s)) <= max_words]


def _content(term: str) -> bool:
    return len(term) > 2 and term not in STOPWORDS and not term.isdigit()


@dataclass
class CorpusText:
    """Word statistics of a corpus, computed once on first use."""

    corpus: Corpus

    @cached_property
    def terms(self) -> list[list[str]]:
        """Each document's content words (title and text), in order."""
        return [
            [t for t in words(f"{title} {text}") if _content(t)]
            for title, text in zip(self.corpus.titles, self.corpus.texts, strict=True)
        ]

    @cached_property
    def idf(self) -> dict[str, float]:
        df: Counter[str] = Counter()
        for terms in self.terms:
            df.update(set(terms))
        n = len(self.terms)
        return {t: math.log((n + 1) / (c + 0.5)) for t, c in df.items()}

    @cached_property
    def postings(self) -> dict[str, list[int]]:
        found: dict[str, list[int]] = {}
        for row, terms in enumerate(self.terms):
            for t in dict.fromkeys(terms):
                found.setdefault(t, []).append(row)
        return found

    def keyphrase_terms(self, row: int, count: int) -> list[str]:
        """The ``count`` terms of the document with the highest tf-idf, in text order."""
        terms = self.terms[row]
        tf = Counter(terms)
        idf = self.idf
        best = sorted(tf, key=lambda t: (-tf[t] * idf[t], t))[:count]
        chosen = set(best)
        return [t for t in dict.fromkeys(terms) if t in chosen]

    def related(self, row: int, *, terms: int = 10, max_postings: int = 500) -> int | None:
        """The other document sharing the most weight of this one's top ``terms`` terms (each
        shared term counts its idf); None when none shares any. Terms found in more than
        ``max_postings`` documents are too common to relate two documents and are skipped."""
        idf = self.idf
        scores: dict[int, float] = {}
        for term in self.keyphrase_terms(row, terms):
            rows = self.postings.get(term, [])
            if len(rows) > max_postings:
                continue
            for other in rows:
                if other != row:
                    scores[other] = scores.get(other, 0.0) + idf[term]
        if not scores:
            return None
        return min(scores, key=lambda other: (-scores[other], other))


def cycle_styles(styles: Sequence[str], start: int) -> Iterator[str]:
    """The styles from position ``start`` on, each once (what to try for one document)."""
    for offset in range(len(styles)):
        yield styles[(start + offset) % len(styles)]
