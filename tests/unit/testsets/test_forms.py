"""Other word forms for a query's words (``--reinflect``): the swap, its share, its seed, and
the document as the test set's corpus copy holds it."""

from __future__ import annotations

import random
import sys

import pytest

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.testsets.forms import WordForms
from pytest_ragmetrics.testsets.offline import OfflineGenerator
from pytest_ragmetrics.testsets.sampling import CorpusText, cut_document

pytest.importorskip("Stemmer")

CORPUS = Corpus(
    ["d1", "d2", "d3"],
    ["Mutations of the gene in mice", "", ""],
    [
        "Mutations of the gene were found in mice.",
        "A mutation changes the gene. The mutation is rare. Mutated genes differ.",
        "One mutation was seen in rats.",
    ],
)


def test_the_corpus_most_frequent_form_the_document_lacks() -> None:
    forms = WordForms.english(CorpusText(CORPUS))
    # "mutation" 3 times, "mutated" once; d1 holds only "mutations"
    assert forms.other_form("mutations", {"mutations", "gene", "mice"}) == "mutation"
    assert forms.other_form("mutations", {"mutation", "mutations"}) == "mutated"
    assert forms.other_form("mutations", {"mutation", "mutations", "mutated"}) is None
    assert forms.other_form("unknown", set()) is None


def test_reinflect_swaps_the_drawn_share_and_keeps_the_rest() -> None:
    forms = WordForms.english(CorpusText(CORPUS))
    text = "Mutations of the gene in mice."
    assert forms.reinflect(text, {"mutations"}, 0.0, random.Random(0)) == text
    every = forms.reinflect(text, {"mutations", "genes"}, 1.0, random.Random(0))
    # "gene" has "genes" only, which the document holds; "mice" has no other form
    assert every == "Mutation of the gene in mice."
    seeded = [forms.reinflect(text, set(), 0.5, random.Random(3)) for _ in range(2)]
    assert seeded[0] == seeded[1]


def test_the_generator_reinflects_against_the_cut_document() -> None:
    generated = OfflineGenerator(["title"], remove_query=1.0, reinflect=1.0)
    (query,) = [c for c in generated.generate(CORPUS, 3) if c.relevant[0][0] == "d1"]
    # d1's copy keeps "mutations" and "gene" in its text (the title is cut): the most frequent
    # other forms it lacks are "mutation" and "genes"
    assert query.text == "Mutation of the genes in mice"
    assert query.removed == "Mutations of the gene in mice"
    assert generated.identity()["reinflect"] == 1.0
    kept = OfflineGenerator(["title"], remove_query=1.0).generate(CORPUS, 3)
    assert [c.text for c in kept if c.relevant[0][0] == "d1"] == ["Mutations of the gene in mice"]


def test_cut_document_blanks_a_title_or_cuts_a_sentence() -> None:
    title, text = "Mutations of the gene", "Mutations of the gene. They were found."
    assert cut_document(title, text, title) == ("", "They were found.")
    assert cut_document(title, text, "They were found.") == (title, "Mutations of the gene.")
    assert cut_document(title, text, "Absent sentence here.") is None


@pytest.mark.parametrize("share", [-0.1, 1.5, True])
def test_a_share_outside_zero_to_one_is_refused(share: float) -> None:
    with pytest.raises(ConfigError, match="reinflect is a share in"):
        OfflineGenerator(reinflect=share)


def test_without_pystemmer_reinflect_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setitem(sys.modules, "Stemmer", None)
    with pytest.raises(ConfigError, match=r"pytest-ragmetrics\[bm25\]"):
        OfflineGenerator(["title"], reinflect=0.5).generate(CORPUS, 1)
    assert OfflineGenerator(["title"]).generate(CORPUS, 1)  # reinflect 0 needs no stemmer
