"""The offline generator: queries made from the documents themselves, no model, deterministic.

Three styles, taken in turn over the documents of a seeded order (a style a document cannot
give is skipped for the next one):

- ``sentence``: one sentence of the document's text (inverse cloze, Lee et al. 2019), the
  document its relevant answer. The sentence stays in the document, so the query's words are
  all in it: lexical overlap favours BM25 (docs/testsets.md measures how much).
- ``title``: the document's title, where it has one of at least three words.
- ``keyphrase``: the document's ``keyphrase_terms`` words of highest tf-idf, in text order.

No reference answers: nothing here knows what answers a query.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from typing import Any

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.testsets.model import OFFLINE_STYLES, Candidate, words
from pytest_ragmetrics.testsets.sampling import (
    CorpusText,
    cycle_styles,
    document_order,
    sentences_between,
)

VERSION = "1"


def check_styles(styles: Sequence[str], allowed: Sequence[str], who: str) -> tuple[str, ...]:
    """``styles`` as a tuple, or a ConfigError naming the unknown one and the allowed ones."""
    chosen = tuple(dict.fromkeys(styles))
    if not chosen:
        raise ConfigError(f"{who}: give at least one style ({', '.join(allowed)})")
    for style in chosen:
        if style not in allowed:
            raise ConfigError(
                f"{who}: unknown style {style!r}; the styles are {', '.join(allowed)}"
            )
    return chosen


class OfflineGenerator:
    """Queries from the documents' own sentences, titles and keyphrases (see the module)."""

    name = "offline"

    def __init__(
        self,
        styles: Sequence[str] = OFFLINE_STYLES,
        *,
        seed: int = 0,
        min_words: int = 6,
        max_words: int = 40,
        keyphrase_terms: int = 4,
    ) -> None:
        self.styles = check_styles(styles, OFFLINE_STYLES, "offline generator")
        for label, value in (
            ("min_words", min_words),
            ("max_words", max_words),
            ("keyphrase_terms", keyphrase_terms),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"offline generator: {label} must be a positive integer")
        if min_words > max_words:
            raise ConfigError("offline generator: min_words is above max_words")
        self.seed = int(seed)
        self.min_words = min_words
        self.max_words = max_words
        self.keyphrase_terms = keyphrase_terms

    def __repr__(self) -> str:
        return f"OfflineGenerator(styles={self.styles}, seed={self.seed})"

    def identity(self) -> dict[str, Any]:
        """Everything that decides the queries (with the corpus and the count)."""
        return {
            "generator": self.name,
            "version": VERSION,
            "styles": list(self.styles),
            "seed": self.seed,
            "min_words": self.min_words,
            "max_words": self.max_words,
            "keyphrase_terms": self.keyphrase_terms,
        }

    def generate(
        self, corpus: Corpus, count: int, *, advance: Callable[[int], None] | None = None
    ) -> list[Candidate]:
        """Up to ``count`` candidates (fewer when the corpus runs out of usable documents)."""
        stats = CorpusText(corpus)
        rng = random.Random(self.seed)
        found: list[Candidate] = []
        for row in document_order(corpus, self.seed):
            if len(found) >= count:
                break
            for style in cycle_styles(self.styles, len(found)):
                text = self._query(style, row, corpus, stats, rng)
                if text:
                    doc_id = str(corpus.doc_ids[row])
                    found.append(Candidate(f"gen-{len(found) + 1}", text, ((doc_id, 1),), style))
                    if advance is not None:
                        advance(1)
                    break
        return found

    def _query(
        self, style: str, row: int, corpus: Corpus, stats: CorpusText, rng: random.Random
    ) -> str | None:
        if style == "title":
            title = corpus.titles[row].strip()
            return title if len(words(title)) >= 3 and title != corpus.texts[row].strip() else None
        if style == "sentence":
            sentences = sentences_between(corpus.texts[row], self.min_words, self.max_words)
            return rng.choice(sentences) if sentences else None
        terms = stats.keyphrase_terms(row, self.keyphrase_terms)
        return " ".join(terms) if len(terms) >= min(2, self.keyphrase_terms) else None
