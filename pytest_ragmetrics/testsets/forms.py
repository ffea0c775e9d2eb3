"""Other forms of a query's words: an offline stand-in for another writer's wording.

A query taken from a document (its title, one of its sentences) keeps the author's word forms,
so an index without stemming finds the document more easily than from a person's query, who
writes "mutation" where the abstract says "mutations". Human queries in Cranfield and SciFact use
a form their relevant document lacks for 18% and 15% of the content words whose stem it holds;
cut titles for 8% (docs/measurements/testsets-tau.md). :meth:`WordForms.reinflect` swaps a share
of a query's content words for the corpus's most frequent other form of the same stem that the
source document does not use ("supersonic" -> "supersonically" where the corpus has it). No
model: the English Snowball stemmer (PyStemmer, in the ``bm25`` extra) and corpus counts.
"""

from __future__ import annotations

import random
import re
from collections import Counter
from collections.abc import Callable, Set

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.testsets.model import WORD, words
from pytest_ragmetrics.testsets.sampling import CorpusText, is_content


class WordForms:
    """For each stem, how often the corpus uses each of its forms (content words only)."""

    def __init__(self, stats: CorpusText, stem: Callable[[str], str]) -> None:
        self.stem = stem
        self.by_stem: dict[str, Counter[str]] = {}
        for terms in stats.terms:
            for term in terms:
                self.by_stem.setdefault(stem(term), Counter())[term] += 1

    @classmethod
    def english(cls, stats: CorpusText) -> WordForms:
        """Forms grouped by the English Snowball stemmer."""
        try:
            import Stemmer
        except ImportError:
            raise ConfigError(
                "offline generator: reinflect needs PyStemmer; pip install "
                "'pytest-ragmetrics[bm25]', or leave reinflect at 0"
            ) from None
        return cls(stats, Stemmer.Stemmer("english").stemWord)

    def other_form(self, word: str, document: Set[str]) -> str | None:
        """The corpus's most frequent form of ``word``'s stem (ties: the later in byte order)
        that is neither ``word`` nor in ``document``; None when there is none."""
        forms = self.by_stem.get(self.stem(word), Counter())
        others = [(n, form) for form, n in forms.items() if form != word and form not in document]
        return max(others)[1] if others else None

    def reinflect(self, text: str, document: Set[str], share: float, rng: random.Random) -> str:
        """``text`` with each content word, drawn with probability ``share``, in another form
        (see :meth:`other_form`). One draw per content word, so the draws do not depend on which
        swaps succeed."""

        def swap(match: re.Match[str]) -> str:
            original = match.group(0)
            found = words(original)
            word = found[0] if len(found) == 1 else ""
            if not is_content(word) or rng.random() >= share:
                return original
            other = self.other_form(word, document)
            if other is None:
                return original
            return other.capitalize() if original[:1].isupper() else other

        return WORD.sub(swap, text)
