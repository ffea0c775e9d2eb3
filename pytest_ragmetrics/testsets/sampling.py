"""Which documents a test set is made from, in a seeded order, and what generators read of a
document: its sentences (prose sentences, whatever the line breaks), its keyphrases (tf-idf), a
related document (for two-document questions). No model: plain word statistics over the
corpus."""

from __future__ import annotations

import math
import random
import re
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from functools import cached_property

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.judges.base import ends_in_abbreviation, split_sentences
from pytest_ragmetrics.testsets.model import Candidate, normalised, words

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


# A full stop standing alone between spaces (tokenised text, as Cranfield's "slab . the") ends
# a sentence even before a lower-case word, which the judges' splitter waits for.
_FREE_STOP = re.compile(r"\s[.!?]+(?=\s|$)")
_PARAGRAPH = re.compile(r"\n\s*\n")
# A sentence end before any character: the judges' splitter (kept as it is: it decides the
# claims of the groundedness metric) only ends one before an ASCII capital or digit, so a
# Cyrillic or "É"-initial text is one sentence to it. :func:`_split_unicode` ends one before
# any capital (``str.isupper``) or digit too.
_ANY_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?(\S))")
# Words that mark a sentence stating a finding (an abstract's conclusion).
_CONCLUSION = re.compile(
    r"\b(?:conclu\w*|suggest\w*|indicat\w*|demonstrat\w*|reveal\w*|implicat\w*|"
    r"we (?:found|find|show\w*|report\w*)|(?:these|our) (?:results|findings|data))\b",
    re.I,
)
SENTENCE_PICKS = ("random", "first", "last", "conclusion", "hard")
KEYPHRASE_PICKS = ("rare", "common")


def prose_paragraphs(text: str) -> list[str]:
    """The paragraphs of ``text`` (a blank line ends one), each on one line: a line break inside
    a paragraph is a space, as in abstracts wrapped at a fixed width (Cranfield's)."""
    return [" ".join(p.split()) for p in _PARAGRAPH.split(text) if p.strip()]


def prose_sentences(text: str) -> list[str]:
    """The sentences of ``text`` as prose (:func:`prose_paragraphs`: wrapped lines are not split
    into line fragments), a free-standing full stop ending a sentence too."""
    found: list[str] = []
    for flat in prose_paragraphs(text):
        for piece in _FREE_STOP.split(flat):
            if piece.strip():
                for sentence in split_sentences(piece.strip()):
                    found += _split_unicode(sentence)
    return found


def _split_unicode(sentence: str) -> list[str]:
    """``sentence`` (one of the judges' splitter's) split where a sentence end is followed by a
    capital or digit outside ASCII (the splitter has seen the ASCII ones), an initial or a
    known abbreviation ("Dr.") aside, as the splitter does."""
    found: list[str] = []
    start = 0
    for match in _ANY_BOUNDARY.finditer(sentence):
        following = match.group(1)
        if following.isascii() or not (following.isupper() or following.isdigit()):
            continue
        if ends_in_abbreviation(sentence[start : match.start() + 1]):
            continue
        found.append(sentence[start : match.end()].strip())
        start = match.end()
    found.append(sentence[start:].strip())
    return [s for s in found if any(ch.isalnum() for ch in s)]


def sentences_between(text: str, min_words: int, max_words: int, *, title: str = "") -> list[str]:
    """The prose sentences of ``text`` with ``min_words`` to ``max_words`` words, without the
    title repeated as the text's first sentence (Cranfield's texts open with it)."""
    heading = normalised(title)
    return [
        s
        for s in prose_sentences(text)
        if min_words <= len(words(s)) <= max_words and normalised(s) != heading
    ]


def pick_sentence(
    sentences: Sequence[str],
    how: str,
    rng: random.Random,
    overlap: Callable[[str], float] | None = None,
) -> str:
    """One of ``sentences`` (not empty): ``random`` (seeded), ``first``, ``last``,
    ``conclusion`` (the last sentence with a finding's words — "suggest", "conclude", "these
    results" —, else the last one) or ``hard`` (the first of least ``overlap``: the sentence
    whose words the rest of its document repeats least)."""
    if how == "hard":
        if overlap is None:
            raise ValueError("pick_sentence: 'hard' needs the overlap of each sentence")
        return min(sentences, key=overlap)
    if how == "first":
        return sentences[0]
    if how == "last":
        return sentences[-1]
    if how == "conclusion":
        stated = [s for s in sentences if _CONCLUSION.search(s)]
        return (stated or list(sentences))[-1]
    return rng.choice(list(sentences))


def without_sentence(text: str, sentence: str) -> str | None:
    """``text`` with ``sentence`` (as :func:`prose_sentences` gave it: spacing may differ) and
    its full stop cut out; None when it is not found."""
    chars = [re.escape(ch) for ch in sentence if not ch.isspace()]
    if not chars:
        return None
    match = re.search(r"\s*".join(chars) + r"(?:\s*[.!?]+)?", text)
    if match is None:
        return None
    left, right = text[: match.start()].rstrip(" \t"), text[match.end() :].lstrip(" \t")
    joint = "" if not left or not right or left.endswith("\n") or right.startswith("\n") else " "
    return (left + joint + right).strip()


def is_content(term: str) -> bool:
    """Whether a (case-folded) word can carry a query's meaning: not a stopword, a number or a
    word of two letters or fewer."""
    return len(term) > 2 and term not in STOPWORDS and not term.isdigit()


def corpus_without_removed(corpus: Corpus, queries: Sequence[Candidate]) -> Corpus | None:
    """:func:`cut_corpus`'s copy of ``corpus`` (None when no query removed anything)."""
    return cut_corpus(corpus, queries)[0]


def cut_corpus(corpus: Corpus, queries: Sequence[Candidate]) -> tuple[Corpus | None, list[str]]:
    """A copy of ``corpus`` in which each query's source document lacks the text the query
    removed from it: its title (blanked, and cut from the text's start where the text repeats
    it) or a sentence of its text, and its ``echoes``; so does every other document judged
    relevant that holds the same text (as its title or a sentence: a twin, the source of a
    dropped duplicate). Also the ids of the cut queries that some such document keeps (cut,
    nothing of its text would be left). The copy is None when no query removed anything."""
    cut = [c for c in queries if c.removed is not None]
    if not cut:
        return None, []
    titles, texts = list(corpus.titles), list(corpus.texts)
    for query in cut:  # the sources first: each holds its query's text as the generator saw it
        row = corpus.position[query.source]
        kept = cut_document(titles[row], texts[row], query.removed or "", query.echoes)
        if kept is None:
            raise ValueError(f"document {query.source!r} does not hold its query's removed text")
        titles[row], texts[row] = kept
    # A query its source still holds (a title the text repeats with nothing else, a sentence
    # the title holds in other words) is counted, never claimed cut.
    not_cut = [
        q.query_id
        for q in cut
        if holds(titles[corpus.position[q.source]], q.removed or "")
        or holds(texts[corpus.position[q.source]], q.removed or "")
    ]
    for query in cut:
        for doc_id, _ in query.relevant[1:]:
            at = corpus.position.get(doc_id)
            if at is None:
                continue
            own = _same_text(titles[at], texts[at], query.removed or "")
            if own is None:
                continue  # relevant, but not because it holds the query's text
            kept = cut_document(titles[at], texts[at], own, query.echoes)
            kept = kept or cut_document(titles[at], texts[at], own)
            if kept is None or not words(kept[1]):
                if query.query_id not in not_cut:
                    not_cut.append(query.query_id)
                continue
            titles[at], texts[at] = kept
    return Corpus(corpus.doc_ids, titles, texts), not_cut


def holds(text: str, removed: str) -> bool:
    """Whether ``text`` holds the words of ``removed`` in a row (case, punctuation and spacing
    aside)."""
    key = normalised(removed)
    return bool(key) and f" {key} " in f" {normalised(text)} "


def _same_text(title: str, text: str, removed: str) -> str | None:
    """The document's own title or sentence with the words of ``removed`` (case, punctuation
    and spacing aside), or None."""
    key = normalised(removed)
    if not key:
        return None
    if normalised(title) == key:
        return title
    return next((s for s in prose_sentences(text) if normalised(s) == key), None)


def cut_document(
    title: str, text: str, removed: str, echoes: Sequence[str] = ()
) -> tuple[str, str] | None:
    """A document's title and text without ``removed`` (its title: blanked, and cut from the
    text's start where the text repeats it; or a sentence of its text, cut from the title too
    where the title holds it) and without the sentences ``echoes``; None when the text does
    not hold one of them."""
    sentences = (removed, *echoes)
    if removed == title:
        if normalised(text).startswith(normalised(removed)):
            text = without_sentence(text, removed) or text
        title, sentences = "", tuple(echoes)
    elif holds(title, removed):  # the title holds the sentence: cut it there too
        title = without_sentence(title, removed) or (
            "" if normalised(title) == normalised(removed) else title
        )
    for sentence in sentences:
        rest = without_sentence(text, sentence)
        if rest is None:
            return None
        text = rest
    return title, text


def echo_sentence(stats: CorpusText, query: str, text: str) -> str | None:
    """The sentence of ``text`` that shares the most of ``query``'s content words (weighed by
    idf; the first of equals), when cutting it leaves some text; else None."""
    sentences = prose_sentences(text)
    if len(sentences) < 2:
        return None
    return max(sentences, key=lambda s: stats.overlap(query, s))


@dataclass
class CorpusText:
    """Word statistics of a corpus, computed once on first use."""

    corpus: Corpus

    @cached_property
    def terms(self) -> list[list[str]]:
        """Each document's content words (title and text), in order."""
        return [
            [t for t in words(f"{title} {text}") if is_content(t)]
            for title, text in zip(self.corpus.titles, self.corpus.texts, strict=True)
        ]

    @cached_property
    def shared_sentences(self) -> frozenset[str]:
        """The prose sentences (their words: :func:`normalised`) that two or more documents
        hold, identical twins counting once: boilerplate ("All rights reserved.") that does not
        point at one document."""
        seen: Counter[str] = Counter()
        for _title, text in dict.fromkeys(zip(self.corpus.titles, self.corpus.texts, strict=True)):
            seen.update({normalised(s) for s in prose_sentences(text)})
        return frozenset(key for key, n in seen.items() if n > 1)

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

    @cached_property
    def common_idf(self) -> float:
        """The idf of a term found in 1% of the documents (at least two): ``common`` keyphrases
        use no rarer term."""
        n = len(self.terms)
        return math.log((n + 1) / (max(2, n // 100) + 0.5))

    def overlap(self, sentence: str, rest: str) -> float:
        """The share of ``sentence``'s content words, each weighed by its idf, that ``rest``
        (the rest of its document) holds too; 1.0 for a sentence without content words."""
        terms = {t for t in words(sentence) if is_content(t)}
        total = sum(self.idf.get(t, 0.0) for t in terms)
        if not total:
            return 1.0
        shared = terms.intersection(words(rest))
        return sum(self.idf.get(t, 0.0) for t in shared) / total

    def keyphrase_terms(self, row: int, count: int, pick: str = "rare") -> list[str]:
        """The ``count`` terms of the document with the highest tf-idf, in text order; with
        ``pick="common"`` only among terms found in at least 1% of the documents (no term that
        names this document alone)."""
        terms = self.terms[row]
        tf = Counter(terms)
        idf = self.idf
        pool = [t for t in tf if idf[t] <= self.common_idf] if pick == "common" else list(tf)
        best = sorted(pool, key=lambda t: (-tf[t] * idf[t], t))[:count]
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
