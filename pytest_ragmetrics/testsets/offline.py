"""The offline generator: queries made from the documents themselves, no model, deterministic.

Three styles, taken in turn over the documents of a seeded order (a style a document cannot
give is skipped for the next one):

- ``sentence``: one prose sentence of the document's text (inverse cloze, Lee et al. 2019), the
  document its relevant answer. ``sentence_pick`` says which: ``random`` (seeded), ``first``,
  ``last``, ``conclusion`` (the last sentence stating a finding: claim-like, as SciFact's
  queries are) or ``hard`` (the sentence whose content words, weighed by idf, the rest of its
  document repeats least: the hardest to find once cut out). A sentence another document holds
  too (boilerplate; an identical twin aside) is never picked: it names no one document.
- ``title``: the document's title, where it has one of at least three words.
- ``keyphrase``: the document's ``keyphrase_terms`` words of highest tf-idf, in text order;
  ``keyphrase_pick="common"`` takes them among words found in at least 1% of the documents
  only (no word that names this document alone).

With ``reinflect`` r > 0, each content word of a query is, with probability r (seeded, its own
stream), put in another form of its stem that the corpus uses and its document does not
(:mod:`~pytest_ragmetrics.testsets.forms`): the author's own word forms favour an index without
stemming.

With ``remove_query`` p > 0, that share (seeded) of the sentence and title queries are cut from
their source document in the test set's own corpus copy, as Lee et al. train (p = 0.9 there): a
sentence from the text, a title from the title field (and from the text's start, where the
corpus repeats it there, as Cranfield's does). The systems are evaluated on that copy. Kept in
the document, the query's words are all in it and lexical overlap favours BM25
(docs/measurements/testsets-tau.md measures how much, and what removing it changes).

With ``cut_echo`` e > 0 (and ``remove_query``), that share (seeded, its own stream) of the cut
queries also cut from their document's text the sentence sharing the most of the query's
content words (idf-weighted): the sentence restating a cut title, which keeps every full-text
system finding the document. ``echo_overlap`` t cuts it only when it holds at least that share
of the query's content words (by idf): a restatement, not a sentence on the same topic
(docs/measurements/testsets-tau.md measures both).

No reference answers: nothing here knows what answers a query.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.testsets.forms import WordForms
from pytest_ragmetrics.testsets.model import OFFLINE_STYLES, Candidate, normalised, words
from pytest_ragmetrics.testsets.sampling import (
    KEYPHRASE_PICKS,
    SENTENCE_PICKS,
    CorpusText,
    cut_document,
    cycle_styles,
    document_order,
    echo_sentence,
    pick_sentence,
    sentences_between,
    without_sentence,
)
from pytest_ragmetrics.values import positive_int

# 2: prose sentences (no line fragments, no title repeated), picks, removal; 3: a sentence ends
# before any capital (Cyrillic, "É"), no sentence that another document holds too; 4: no title
# query from a title its text only repeats, a cut sentence is cut from the title too
VERSION = "4"


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


def _check_choice(label: str, value: str, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise ConfigError(
            f"offline generator: {label} must be one of {', '.join(allowed)}, got {value!r}"
        )
    return value


@dataclass(frozen=True)
class _Query:
    text: str
    removed: str | None = None
    echoes: tuple[str, ...] = ()
    uncut: bool = False  # drawn to be cut, but cut, nothing of the text would be left


class OfflineGenerator:
    """Queries from the documents' own sentences, titles and keyphrases (see the module)."""

    name = "offline"

    # Long only because it checks and keeps its options, one line each.
    def __init__(
        self,
        styles: Sequence[str] = OFFLINE_STYLES,
        *,
        seed: int = 0,
        min_words: int = 6,
        max_words: int = 40,
        keyphrase_terms: int = 4,
        sentence_pick: str = "random",
        remove_query: float = 0.0,
        keyphrase_pick: str = "rare",
        reinflect: float = 0.0,
        cut_echo: float = 0.0,
        echo_overlap: float = 0.0,
    ) -> None:
        self.styles = check_styles(styles, OFFLINE_STYLES, "offline generator")
        for label, value in (
            ("min_words", min_words),
            ("max_words", max_words),
            ("keyphrase_terms", keyphrase_terms),
        ):
            positive_int(value, f"offline generator: {label}")
        if min_words > max_words:
            raise ConfigError("offline generator: min_words is above max_words")
        shares = (
            ("remove_query", remove_query),
            ("reinflect", reinflect),
            ("cut_echo", cut_echo),
            ("echo_overlap", echo_overlap),
        )
        for label, share in shares:
            if isinstance(share, bool) or not 0.0 <= float(share) <= 1.0:
                raise ConfigError(f"offline generator: {label} is a share in [0, 1], got {share!r}")
        if echo_overlap and not cut_echo:
            raise ConfigError("offline generator: echo_overlap says which echoes cut_echo cuts; "
                              "give cut_echo too")  # fmt: skip
        if cut_echo and not remove_query:
            raise ConfigError("offline generator: cut_echo cuts more of a cut query's document; "
                              "give remove_query too")  # fmt: skip
        self.seed = int(seed)
        self.min_words = min_words
        self.max_words = max_words
        self.keyphrase_terms = keyphrase_terms
        self.sentence_pick = _check_choice("sentence_pick", sentence_pick, SENTENCE_PICKS)
        self.remove_query = float(remove_query)
        self.keyphrase_pick = _check_choice("keyphrase_pick", keyphrase_pick, KEYPHRASE_PICKS)
        self.reinflect = float(reinflect)
        self.cut_echo = float(cut_echo)
        self.echo_overlap = float(echo_overlap)

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
            "sentence_pick": self.sentence_pick,
            "remove_query": self.remove_query,
            "keyphrase_pick": self.keyphrase_pick,
            "reinflect": self.reinflect,
            # Only when set: the identities written before the option existed hold.
            **({"cut_echo": self.cut_echo} if self.cut_echo else {}),
            **({"echo_overlap": self.echo_overlap} if self.echo_overlap else {}),
        }

    def generate(
        self, corpus: Corpus, count: int, *, advance: Callable[[int], None] | None = None
    ) -> list[Candidate]:
        """Up to ``count`` candidates (fewer when the corpus runs out of usable documents)."""
        stats = CorpusText(corpus)
        rng = random.Random(self.seed)
        # Its own stream: the same sentences are picked whatever the share removed.
        removal = random.Random(f"remove-query:{self.seed}")
        forms = WordForms.english(stats) if self.reinflect else None
        reinflection = random.Random(f"reinflect:{self.seed}")
        echo_draw = random.Random(f"cut-echo:{self.seed}")
        found: list[Candidate] = []
        for row in document_order(corpus, self.seed):
            if len(found) >= count:
                break
            for style in cycle_styles(self.styles, len(found)):
                query = self._query(style, row, corpus, stats, rng, removal)
                if query is not None and query.removed is not None and self.cut_echo:
                    query = self._with_echo(query, corpus, row, stats, echo_draw)
                if query is not None and forms is not None:
                    query = self._reinflected(query, corpus, row, forms, reinflection)
                if query is not None:
                    doc_id = str(corpus.doc_ids[row])
                    qid = f"gen-{len(found) + 1}"
                    found.append(
                        Candidate(
                            qid, query.text, ((doc_id, 1),), style, removed=query.removed,
                            echoes=query.echoes, uncut=query.uncut,
                        )
                    )  # fmt: skip
                    if advance is not None:
                        advance(1)
                    break
        return found

    def _query(
        self,
        style: str,
        row: int,
        corpus: Corpus,
        stats: CorpusText,
        rng: random.Random,
        removal: random.Random,
    ) -> _Query | None:
        title = corpus.titles[row].strip()
        if style == "title":
            if len(words(title)) < 3 or normalised(title) == normalised(corpus.texts[row]):
                return None
            return _Query(title, corpus.titles[row] if self._cut(removal) else None)
        if style == "sentence":
            return self._sentence(corpus.texts[row], title, rng, removal, stats)
        terms = stats.keyphrase_terms(row, self.keyphrase_terms, self.keyphrase_pick)
        return _Query(" ".join(terms)) if len(terms) >= min(2, self.keyphrase_terms) else None

    def _sentence(
        self, text: str, title: str, rng: random.Random, removal: random.Random, stats: CorpusText
    ) -> _Query | None:
        sentences = [
            s
            for s in sentences_between(text, self.min_words, self.max_words, title=title)
            if normalised(s) not in stats.shared_sentences  # it would name other documents too
        ]
        if not sentences:
            return None

        def overlap(sentence: str) -> float:
            return stats.overlap(sentence, f"{title} {without_sentence(text, sentence) or ''}")

        sentence = pick_sentence(sentences, self.sentence_pick, rng, overlap)
        # A document whose text is this one sentence keeps it: cut, nothing would be left. The
        # test set counts it (provenance "not_cut").
        drawn = self._cut(removal)
        rest = without_sentence(text, sentence) if drawn else None
        cut = bool(rest and words(rest))
        return _Query(sentence, sentence if cut else None, uncut=drawn and not cut)

    def _with_echo(
        self, query: _Query, corpus: Corpus, row: int, stats: CorpusText, draw: random.Random
    ) -> _Query:
        """``query`` cutting, besides itself, the sentence of its document's text that restates
        it most (drawn for every cut query, with the share ``cut_echo``), when that sentence
        holds at least ``echo_overlap`` of the query's words."""
        if draw.random() >= self.cut_echo or query.removed is None:
            return query
        kept = cut_document(corpus.titles[row], corpus.texts[row], query.removed)
        echo = echo_sentence(stats, query.text, kept[1]) if kept else None
        if echo is None or stats.overlap(query.text, echo) < self.echo_overlap:
            return query
        return replace(query, echoes=(echo,))

    def _reinflected(
        self, query: _Query, corpus: Corpus, row: int, forms: WordForms, rng: random.Random
    ) -> _Query:
        """``query`` with a share of its words in forms its document, as the test set's corpus
        copy holds it, does not use."""
        title, text = corpus.titles[row], corpus.texts[row]
        removed = query.removed
        kept = cut_document(title, text, removed, query.echoes) if removed else None
        document = set(words(" ".join(kept or (title, text))))
        return replace(query, text=forms.reinflect(query.text, document, self.reinflect, rng))

    def _cut(self, removal: random.Random) -> bool:
        """Whether this query is cut from its document (drawn for every sentence or title)."""
        return self.remove_query > 0 and removal.random() < self.remove_query
