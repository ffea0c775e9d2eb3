"""What --remove-query cuts and what a generated query is judged against: the documents that
hold the query's own text (a twin, a shared title, a dropped duplicate's source) are judged and
cut alike, and a query that stays in its document is counted, not hidden."""

from __future__ import annotations

import pytest

from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import RagMetricsWarning
from pytest_ragmetrics.testsets.build import FilterSettings, build_testset
from pytest_ragmetrics.testsets.model import Candidate, TestSet
from pytest_ragmetrics.testsets.offline import OfflineGenerator
from pytest_ragmetrics.testsets.sampling import prose_sentences

TITLE = "Note on creep buckling of columns"


def _docs(docs: dict[str, tuple[str, str]]) -> Corpus:
    return Corpus.from_dict({k: {"title": t, "text": x} for k, (t, x) in docs.items()})


def _build(docs: Corpus, candidates: list[Candidate]) -> TestSet:
    return build_testset(
        candidates, len(candidates), docs, FilterSettings(leak_words=None),
        generator={"generator": "offline"}, corpus_source="toy",
    )  # fmt: skip


def _generated(docs: Corpus, count: int, *styles: str) -> TestSet:
    candidates = OfflineGenerator(styles, seed=0, remove_query=1.0).generate(docs, count)
    return _build(docs, candidates)


def test_a_dropped_duplicate_title_judges_and_cuts_its_document() -> None:
    docs = _docs(
        {
            "d1": (TITLE, "The theory for metals at high temperature is modified. Curves follow."),
            "d2": (TITLE, "An analysis of imperfections in columns is given. Times are derived."),
            "d3": ("Boundary layer transition on plates", "The layer turns turbulent. It does."),
        }
    )
    testset = _generated(docs, 3, "title")
    (query,) = [c for c in testset if c.text == TITLE]
    assert dict(query.relevant) == {query.source: 1, ({"d1", "d2"} - {query.source}).pop(): 1}
    assert testset.provenance["duplicates_judged"] == 1
    assert testset.corpus is not None
    assert testset.corpus["d1"].title == testset.corpus["d2"].title == ""


def test_a_title_another_document_holds_is_judged_and_cut_there() -> None:
    docs = _docs(
        {
            "d1": (TITLE, "The theory for metals at high temperature is modified."),
            "d2": (TITLE.upper() + ".", "An analysis of imperfections in columns is given."),
            "d3": ("Other", f"{TITLE}. A text that repeats the title as its first sentence."),
            "d4": ("Unrelated", "Nothing of the kind here at all."),
        }
    )
    query = Candidate("gen-1", TITLE, (("d1", 1),), "title", removed=TITLE)
    testset = _build(docs, [query])
    assert dict(testset.queries[0].relevant) == {"d1": 1, "d2": 1, "d3": 1}
    assert testset.provenance["verbatim_judged"] == 2
    assert testset.corpus is not None
    assert testset.corpus["d2"].title == ""
    assert testset.corpus["d3"].text == "A text that repeats the title as its first sentence."
    assert testset.corpus["d4"].text == docs["d4"].text


def test_a_twin_loses_the_cut_sentence_too() -> None:
    text = (
        "Supersonic flow over wedges produces oblique shock waves. The shock angle depends on "
        "the Mach number of the stream. Experiments confirm the theory within two percent."
    )
    docs = _docs({"d1": ("Wedges", text), "d4": ("Wedges", text)})
    testset = _generated(docs, 1, "sentence")
    (query,) = testset.queries
    assert {d for d, _ in query.relevant} == {"d1", "d4"}
    assert testset.corpus is not None
    for doc in ("d1", "d4"):
        assert query.text not in testset.corpus[doc].text
        assert testset.corpus[doc].text != ""


def test_sentence_ends_before_any_capital_or_digit() -> None:
    assert prose_sentences("Сверхзвуковое обтекание клина. Угол скачка зависит от числа.") == [
        "Сверхзвуковое обтекание клина.",
        "Угол скачка зависит от числа.",
    ]
    assert prose_sentences(
        "Les chats dorment. Élevés ici. Voir J. Élie et Dr. Émile. ٣ chats."
    ) == [
        "Les chats dorment.",
        "Élevés ici.",
        "Voir J. Élie et Dr. Émile.",
        "٣ chats.",
    ]


def test_queries_left_in_their_document_are_counted_and_said() -> None:
    docs = _docs(
        {
            "en1": ("Wedge flow", "Supersonic flow over wedges produces oblique shock waves."),
            "ru1": ("Клинья", "Сверхзвуковое обтекание клина создаёт косые скачки уплотнения. "
                    "Угол скачка зависит от скорости потока."),
            "fr1": ("Écoulement", "Les chats ronronnent quand ils sont tout à fait contents. "
                    "Élevés en appartement ils dorment beaucoup plus longtemps."),
        }
    )  # fmt: skip
    with pytest.warns(RagMetricsWarning, match="1 of 3 queries drawn to be cut"):
        testset = _generated(docs, 3, "sentence")
    assert testset.corpus is not None
    uncut = [c.query_id for c in testset if c.text in testset.corpus[c.source].text]
    assert uncut == [c.query_id for c in testset if c.source == "en1"]
    assert testset.provenance["not_cut"] == {"count": 1, "query_ids": uncut}


def test_a_relevant_document_that_cannot_lose_the_query_is_counted() -> None:
    sentence = "Supersonic flow over wedges produces oblique shock waves."
    docs = _docs({"d1": ("Wedges", f"{sentence} The angle depends on Mach."), "d2": ("", sentence)})
    query = Candidate("gen-1", sentence, (("d1", 1),), "sentence", removed=sentence)
    with pytest.warns(RagMetricsWarning, match="gen-1"):
        testset = _build(docs, [query])
    assert dict(testset.queries[0].relevant) == {"d1": 1, "d2": 1}
    assert testset.provenance["not_cut"] == {"count": 1, "query_ids": ["gen-1"]}
    assert testset.corpus is not None and testset.corpus["d2"].text == sentence


def test_a_sentence_other_documents_hold_is_not_picked() -> None:
    shared = "Further work on the subject is planned for the next decade."
    docs = _docs(
        {
            f"d{i}": (f"Report {i}", f"{shared} Study {i} measured the ice levels of {i} lakes.")
            for i in range(3)
        }
    )
    generator = OfflineGenerator(("sentence",), seed=0, sentence_pick="first")
    assert {c.text for c in generator.generate(docs, 3)} == {
        f"Study {i} measured the ice levels of {i} lakes." for i in range(3)
    }


def _holds(text: str, query: str) -> bool:
    from pytest_ragmetrics.testsets.model import normalised

    return f" {normalised(query)} " in f" {normalised(text)} "


def _claimed_cut_but_held(testset: TestSet) -> list[str]:
    """Queries claimed cut (and not counted under not_cut) that their source still holds."""
    assert testset.corpus is not None
    counted = set(testset.provenance["not_cut"]["query_ids"])
    return [
        c.query_id
        for c in testset
        if c.removed is not None
        and c.query_id not in counted
        and (
            _holds(testset.corpus[c.source].title, c.text)
            or _holds(testset.corpus[c.source].text, c.text)
        )
    ]


def test_a_title_its_text_repeats_with_a_full_stop_is_not_a_cut_title_query() -> None:
    title = "Heat transfer to cylinders in crossflow at low Reynolds numbers"
    docs = _docs(
        {
            "b": (title, f"{title}."),
            "c": ("Vibration of thin shells", "The natural frequencies of shells were measured."),
        }
    )
    testset = _generated(docs, 5, "title")
    assert [c.source for c in testset] == ["c"]
    assert _claimed_cut_but_held(testset) == []
    # Given one anyway, it is counted, not claimed cut.
    query = Candidate("gen-1", title, (("b", 1),), "title", removed=title)
    with pytest.warns(RagMetricsWarning, match="gen-1"):
        built = _build(docs, [query])
    assert built.provenance["not_cut"] == {"count": 1, "query_ids": ["gen-1"]}


def test_a_sentence_the_title_holds_is_cut_from_the_title_too() -> None:
    first = "A study of the thermal fatigue behaviour of metals."
    second = "The effect of test conditions on alloys."
    rest = "An attempt has been made to identify the significant factors governing fatigue."
    docs = _docs({"t1": (f"{first} {second}", f"{first} {second} {rest}")})
    query = Candidate("gen-1", second, (("t1", 1),), "sentence", removed=second)
    built = _build(docs, [query])
    assert built.corpus is not None
    assert built.corpus["t1"].title == first and built.corpus["t1"].text == f"{first} {rest}"
    assert built.provenance["not_cut"]["count"] == 0
    whole = Candidate("gen-1", first, (("t1", 1),), "sentence", removed=first)
    docs = _docs({"t1": (first.upper(), f"{first} {rest}")})
    built = _build(docs, [whole])
    assert built.corpus is not None and built.corpus["t1"].title == ""
    heat = "Heat transfer to cylinders"
    docs = _docs(
        {"t1": (f"{first} {second}", f"{first} {second} {rest}"), "t2": (heat, f"{heat}.")}
    )
    for seed in range(4):  # generated: no query claimed cut stays in its document
        candidates = OfflineGenerator(("title", "sentence"), seed=seed, remove_query=1.0)
        assert _claimed_cut_but_held(_build(docs, list(candidates.generate(docs, 4)))) == []
