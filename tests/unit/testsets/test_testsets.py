"""The test-set generator's library: the offline generator, the filters and their κ gate, the
folder it writes (read back by load_dataset), the review file."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.data.answers import load_references
from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.errors import ConfigError, DataFormatError
from pytest_ragmetrics.judges import RecordedRelevanceJudge
from pytest_ragmetrics.judges.calibration import save_calibration
from pytest_ragmetrics.testsets import filters
from pytest_ragmetrics.testsets.build import FilterSettings, build_testset
from pytest_ragmetrics.testsets.folder import write_testset
from pytest_ragmetrics.testsets.model import Candidate
from pytest_ragmetrics.testsets.offline import OfflineGenerator
from pytest_ragmetrics.testsets.review import apply_review, read_review
from tests.helpers.calibration import result_at_kappa
from tests.helpers.testset_data import corpus


def _c(qid: str, text: str, doc: str = "d0-0", answer: str | None = None) -> Candidate:
    return Candidate(qid, text, ((doc, 1),), "fact", answer)


# -- the offline generator ---------------------------------------------------------------------


def test_offline_is_deterministic_under_a_seed() -> None:
    docs = corpus()
    first = OfflineGenerator(seed=7).generate(docs, 12)
    again = OfflineGenerator(seed=7).generate(docs, 12)
    other = OfflineGenerator(seed=8).generate(docs, 12)
    assert first == again
    assert [c.text for c in first] != [c.text for c in other]
    assert len(first) == 12
    assert {c.style for c in first} == {"sentence", "title", "keyphrase"}


def test_offline_styles_make_what_they_say() -> None:
    docs = corpus()
    for c in OfflineGenerator(seed=1).generate(docs, 12):
        doc = docs[c.source]
        if c.style == "title":
            assert c.text == doc.title
        elif c.style == "sentence":
            assert c.text in doc.text and len(c.text.split()) >= 6
        else:
            assert len(c.text.split()) == 4
            assert all(w in f"{doc.title} {doc.text}".lower() for w in c.text.split())
        assert c.relevant == ((c.source, 1),) and c.answer is None


def test_offline_stops_when_the_corpus_runs_out() -> None:
    docs = corpus()
    found = OfflineGenerator(styles=["title"]).generate(docs, 100)
    assert len(found) == len(docs)  # one query per document at most


def test_offline_refuses_an_unknown_style() -> None:
    with pytest.raises(ConfigError, match=r"unknown style 'fact'.*sentence, title, keyphrase"):
        OfflineGenerator(styles=["fact"])


# -- filters ----------------------------------------------------------------------------------


def test_exact_duplicates_ignore_case_punctuation_and_spacing() -> None:
    cands = [_c("a", "What is lava?"), _c("b", "what  is LAVA"), _c("c", "What is ice?")]
    kept, report = filters.exact_duplicates(cands)
    assert [c.query_id for c in kept] == ["a", "c"]
    assert report.removed == ("b",) and report.details["duplicate_of"] == {"b": "a"}


def test_exact_duplicates_of_non_latin_text_are_not_all_one() -> None:
    # A normaliser that keeps only a-z would make every Greek query the empty string.
    cands = [
        _c("a", "\u03c4\u03b9 \u03bb\u03ac\u03b2\u03b1;"),
        _c("b", "\u03c4\u03b9 \u03c0\u03ac\u03b3\u03bf\u03c2;"),
    ]
    kept, _ = filters.exact_duplicates(cands)
    assert len(kept) == 2


def test_near_duplicates_by_cosine_keep_the_first_of_a_group() -> None:
    vectors = {"x": [1.0, 0.0], "x2": [0.99, 0.141], "y": [0.0, 1.0], "x3": [0.96, 0.28]}
    cands = [_c(k, k) for k in vectors]

    def embed(texts: list[str]) -> np.ndarray:
        return np.asarray([vectors[t] for t in texts])

    kept, report = filters.near_duplicates(cands, embed, 0.98, model="toy")
    assert [c.query_id for c in kept] == ["x", "y", "x3"]  # x3 is 0.96 from x: kept
    assert report.details["duplicate_of"]["x2"]["of"] == "x"
    kept, report = filters.near_duplicates(cands, embed, 0.95, model="toy")
    assert [c.query_id for c in kept] == ["x", "y"] and report.removed == ("x2", "x3")


def test_answer_leaks() -> None:
    cands = [
        _c("whole", "Was the tower finished in 1889?", answer="1889"),
        _c(
            "run",
            "the tower was completed in the year 1889 in paris?",
            answer="The tower was completed in the year 1889.",
        ),
        _c("fine", "When was the tower finished?", answer="It was finished in 1889."),
        _c("partial", "Is 18 a number?", answer="1889"),  # "18" is not the word "1889"
        _c("none", "When was it finished?"),
    ]
    kept, report = filters.answer_leaks(cands, 5)
    assert report.removed == ("whole", "run")
    assert report.checked == 4  # the query without a reference is not checked
    assert [c.query_id for c in kept] == ["fine", "partial", "none"]


def _verdicts(tmp_path: Path, cands: list[Candidate], no: set[str]) -> RecordedRelevanceJudge:
    path = tmp_path / "verdicts.jsonl"
    rows = [{"query_id": c.query_id, "doc_id": c.source, "relevant": c.query_id not in no}
            for c in cands]  # fmt: skip
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return RecordedRelevanceJudge(path)


def _calibrate(path: Path, judge: RecordedRelevanceJudge, kappa: float) -> None:
    save_calibration(path, result_at_kappa(judge.identity(), kappa))


def test_answerability_applies_only_for_a_calibrated_judge(tmp_path: Path) -> None:
    docs = corpus()
    cands = OfflineGenerator(seed=2).generate(docs, 10)
    judge = _verdicts(tmp_path, cands, {"gen-2", "gen-5"})
    # Uncalibrated: reported, not applied.
    kept, report = filters.answerability(cands, docs, judge, kappa=None, min_kappa=0.4)
    assert kept == cands and not report.applied
    assert report.removed == ("gen-2", "gen-5") and "no calibration" in report.reason
    assert report.to_dict()["would_remove"] == 2 and "removed" not in report.to_dict()
    # Calibrated below the bound: reported, not applied.
    kept, report = filters.answerability(cands, docs, judge, kappa=0.3, min_kappa=0.4)
    assert kept == cands and "kappa 0.300 < --min-kappa 0.4" in report.reason
    # Calibrated at the bound: applied.
    kept, report = filters.answerability(cands, docs, judge, kappa=0.4, min_kappa=0.4)
    assert report.applied and [c.query_id for c in kept if c.query_id in ("gen-2", "gen-5")] == []
    assert len(kept) == 8 and report.to_dict()["removed"] == 2


def test_build_counts_every_filter_and_keeps_the_first_count(tmp_path: Path) -> None:
    docs = corpus()
    cands = [*OfflineGenerator(seed=3).generate(docs, 9)]
    cands.append(cands[0].with_id("gen-dup"))
    judge = _verdicts(tmp_path, cands, {"gen-4"})
    settings = FilterSettings(judge=judge, kappa=0.9)
    testset = build_testset(
        cands, 6, docs, settings, generator={"generator": "offline", "seed": 3},
        corpus_source="toy",
    )  # fmt: skip
    p = testset.provenance
    assert [f["name"] for f in p["filters"]] == [
        "exact_duplicates",
        "answer_leaks",
        "answerability",
    ]
    assert p["filters"][0]["removed"] == 1 and p["filters"][0]["query_ids"] == ["gen-dup"]
    assert p["filters"][2]["removed"] == 1
    assert (p["candidates"], p["after_filters"], p["queries"]) == (10, 8, 6)
    assert [c.query_id for c in testset] == ["gen-1", "gen-2", "gen-3", "gen-5", "gen-6", "gen-7"]
    assert p["corpus"]["fingerprint"] == docs.fingerprint and p["seed"] == 3


def test_a_document_identical_to_a_relevant_one_is_judged_alike() -> None:
    # Twins b and c: each query judged one of them, so a system that could not tell them
    # apart (a tie, broken by id) lost half its MRR on the query that judged b.
    from pytest_ragmetrics.data.model import Corpus

    docs = Corpus.from_dict(
        {
            "a": {"title": "", "text": "Something else entirely here."},
            "b": {"title": "T", "text": "Twin text about cats."},
            "c": {"title": "T", "text": "Twin text about cats."},
        }
    )
    cands = [_c("gen-1", "first query", "c"), _c("gen-2", "second query", "b")]
    testset = build_testset(
        cands, 2, docs, FilterSettings(leak_words=None), generator={"generator": "t"},
        corpus_source="toy",
    )  # fmt: skip
    assert [dict(c.relevant) for c in testset] == [{"c": 1, "b": 1}, {"b": 1, "c": 1}]
    assert testset.provenance["twins_judged"] == 2
    assert [c.source for c in testset] == ["c", "b"]  # the document it was made from stays first


# -- the folder -------------------------------------------------------------------------------


def _written(tmp_path: Path, cands: list[Candidate]) -> Path:
    docs = corpus()
    testset = build_testset(
        cands, len(cands), docs, FilterSettings(), generator={"generator": "t"},
        corpus_source="toy",
    )  # fmt: skip
    out = tmp_path / "set"
    write_testset(out, docs, testset)
    return out


def test_the_folder_is_a_dataset_with_references_and_provenance(tmp_path: Path) -> None:
    cands = [
        Candidate("q 1", "What erupts?", (("d0-0", 1),), "fact", "Lava."),
        Candidate("q2", "Which two reports?", (("d1-0", 1), ("d1-1", 1)), "multi"),
    ]
    out = _written(tmp_path, cands)
    dataset = load_dataset(out)
    assert dict(dataset.queries.items()) == {"q 1": "What erupts?", "q2": "Which two reports?"}
    assert dataset.qrels.to_dict() == {"q 1": {"d0-0": 1}, "q2": {"d1-0": 1, "d1-1": 1}}
    assert dataset.corpus.text_fingerprint == corpus().text_fingerprint
    references = load_references(out)
    assert references is not None and references["q 1"].text == "Lava." and len(references) == 1
    manifest = json.loads((out / "dataset.json").read_text())
    assert manifest["format"] == "beir" and manifest["provenance"]["queries"] == 2


def test_a_second_write_without_references_removes_the_old_ones(tmp_path: Path) -> None:
    out = _written(tmp_path, [_c("a", "What erupts?", answer="Lava.")])
    assert (out / "answers.jsonl").exists()
    _written(tmp_path, [_c("b", "What melts?")])
    assert not (out / "answers.jsonl").exists()
    assert load_references(out) is None


def test_beir_manifest_refuses_the_classic_keys(tmp_path: Path) -> None:
    out = _written(tmp_path, [_c("a", "What erupts?")])
    manifest = json.loads((out / "dataset.json").read_text())
    manifest["grades"] = {"1": 1}
    (out / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(DataFormatError, match="'grades': applies to the smart and trec formats"):
        load_dataset(out)
    manifest.pop("grades")
    manifest["provenance"] = [1]
    (out / "dataset.json").write_text(json.dumps(manifest))
    with pytest.raises(DataFormatError, match="'provenance': must be an object"):
        load_dataset(out)


# -- review -----------------------------------------------------------------------------------


def test_review_accepts_rejects_and_edits(tmp_path: Path) -> None:
    out = _written(tmp_path, [_c("a", "What erupts?"), _c("b", "What melts?"), _c("c", "Why?")])
    rows = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    assert rows[0]["decision"] is None and rows[0]["documents"][0]["id"] == "d0-0"
    rows[0].update(decision="accept")
    rows[1].update(decision="edit", query="What melts in spring?", relevant={"d1-0": 2})
    rows[2].update(decision="reject")
    review = tmp_path / "review.jsonl"
    review.write_text("".join(json.dumps(r) + "\n" for r in rows))
    kept, summary = apply_review(read_review(review, corpus()), review)
    assert [(c.query_id, c.text, c.relevant) for c in kept] == [
        ("a", "What erupts?", (("d0-0", 1),)),
        ("b", "What melts in spring?", (("d1-0", 2),)),
    ]
    assert (summary["accept"], summary["edit"], summary["reject"], summary["kept"]) == (1, 1, 1, 2)


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"decision": "maybe"}, "review.jsonl:1: 'decision' must be accept, reject, edit or null"),
        ({"relevant": {"nope": 1}}, "review.jsonl:1: query 'a': document 'nope' is not in"),
        ({"relevant": {"d0-0": -1}}, "review.jsonl:1: the grade of document 'd0-0' must be"),
        ({"query": ""}, "review.jsonl:1: 'query' must be a non-empty string"),
    ],
)
def test_review_errors_name_the_line(tmp_path: Path, change: dict, message: str) -> None:
    row = {"query_id": "a", "query": "What?", "relevant": {"d0-0": 1}, "decision": None}
    row.update(change)
    review = tmp_path / "review.jsonl"
    review.write_text(json.dumps(row) + "\n")
    with pytest.raises(DataFormatError) as info:
        read_review(review, corpus())
    assert message in str(info.value)


# -- prose sentences, picks, the corpus copy without the query's sentence ---------------------

WRAPPED = (
    "flow past a flat plate .\nin the study of high-speed viscous flow past a body it\n"
    "is usually necessary to consider a curved shock wave .  consequently, there exists an\n"
    "inviscid rotational flow region between the shock wave and the boundary layer ."
)


def test_prose_sentences_join_wrapped_lines_and_split_at_free_stops() -> None:
    from pytest_ragmetrics.testsets.sampling import prose_sentences, sentences_between

    assert prose_sentences(WRAPPED) == [
        "flow past a flat plate",
        "in the study of high-speed viscous flow past a body it is usually necessary to "
        "consider a curved shock wave",
        "consequently, there exists an inviscid rotational flow region between the shock wave "
        "and the boundary layer",
    ]
    assert prose_sentences("First one here. Second one there.\n\nA new paragraph.") == [
        "First one here.",
        "Second one there.",
        "A new paragraph.",
    ]
    # The title repeated as the text's first sentence (Cranfield's habit) is no query.
    assert sentences_between(WRAPPED, 1, 40, title="Flow past a flat plate.")[0].startswith(
        "in the study"
    )


def test_without_sentence_cuts_it_whatever_the_line_breaks() -> None:
    from pytest_ragmetrics.testsets.sampling import prose_sentences, without_sentence

    middle = prose_sentences(WRAPPED)[1]
    rest = without_sentence(WRAPPED, middle)
    assert rest == (
        "flow past a flat plate .\nconsequently, there exists an\n"
        "inviscid rotational flow region between the shock wave and the boundary layer ."
    )
    assert without_sentence("One. Two three four. Five.", "Two three four.") == "One. Five."
    assert without_sentence("One. Two.", "Absent words.") is None


def test_sentence_picks() -> None:
    import random

    from pytest_ragmetrics.testsets.sampling import pick_sentence

    found = ["We studied mice.", "These results suggest a role for X.", "Funding was public."]
    rng = random.Random(0)
    assert pick_sentence(found, "first", rng) == "We studied mice."
    assert pick_sentence(found, "last", rng) == "Funding was public."
    assert pick_sentence(found, "conclusion", rng) == "These results suggest a role for X."
    assert pick_sentence(found[:1], "conclusion", rng) == "We studied mice."  # none: the last


def test_hard_pick_takes_the_sentence_its_document_repeats_least() -> None:
    import random

    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.testsets.offline import OfflineGenerator
    from pytest_ragmetrics.testsets.sampling import CorpusText, pick_sentence

    text = (
        "Shock waves bend around the wing root. The wing root shock waves were measured. "
        "Funding came from a grant of the navy. Shock measurements near the wing root agree."
    )
    corpus = Corpus(["d1", "d2"], ["Wing root shocks", ""], [text, "Unrelated grant text here."])
    stats = CorpusText(corpus)
    # Every content word of the funding sentence is absent from the rest of its document.
    funding = "Funding came from a grant of the navy."
    assert stats.overlap(funding, text.replace(funding, "")) == 0.0
    assert stats.overlap("The wing root shock waves were measured.", text) == 1.0
    assert stats.overlap("of the and", text) == 1.0  # no content word: never the hardest
    generated = OfflineGenerator(["sentence"], sentence_pick="hard", min_words=3)
    (query,) = [c for c in generated.generate(corpus, 2) if c.relevant[0][0] == "d1"]
    assert query.text == funding
    found = ["a b c", "d e f"]
    harder = {"a b c": 0.5, "d e f": 0.1}
    assert pick_sentence(found, "hard", random.Random(0), overlap=harder.__getitem__) == "d e f"
    with pytest.raises(ValueError, match="overlap"):
        pick_sentence(found, "hard", random.Random(0))  # never a silent random pick


def test_offline_sentence_picks_take_the_first_last_or_finding() -> None:
    from pytest_ragmetrics.data.model import Corpus

    text = (
        "Background sentence number {i} about topic {i} here. These results suggest that "
        "topic {i} matters a great deal. Funding for topic {i} came from a public grant."
    )
    docs = Corpus.from_dict({f"d{i}": text.format(i=i) for i in range(5)})

    def picked(how: str) -> set[str]:
        made = OfflineGenerator(styles=["sentence"], sentence_pick=how, min_words=3)
        return {c.text.split()[0] for c in made.generate(docs, 5)}

    assert picked("first") == {"Background"}
    assert picked("conclusion") == {"These"}
    assert picked("last") == {"Funding"}
    assert len(picked("random")) > 1


def test_removed_sentences_are_seeded_and_leave_the_same_picks() -> None:
    docs = corpus()
    kept = OfflineGenerator(styles=["sentence"], seed=4).generate(docs, 20)
    every = OfflineGenerator(styles=["sentence"], seed=4, remove_query=1.0).generate(docs, 20)
    half = OfflineGenerator(styles=["sentence"], seed=4, remove_query=0.5).generate(docs, 20)
    again = OfflineGenerator(styles=["sentence"], seed=4, remove_query=0.5).generate(docs, 20)
    assert [c.text for c in kept] == [c.text for c in every] == [c.text for c in half]
    assert all(c.removed is None for c in kept) and all(c.removed == c.text for c in every)
    assert half == again and 0 < sum(c.removed is not None for c in half) < 20


def test_the_folder_carries_a_corpus_copy_without_the_removed_sentences(tmp_path: Path) -> None:
    from pytest_ragmetrics.testsets.model import normalised

    docs = corpus()
    cands = OfflineGenerator(styles=["sentence"], seed=1, remove_query=1.0).generate(docs, 5)
    testset = build_testset(
        cands, 5, docs, FilterSettings(), generator={"generator": "offline"}, corpus_source="toy"
    )
    out = tmp_path / "set"
    write_testset(out, docs, testset)
    dataset = load_dataset(out)
    assert dataset.corpus.text_fingerprint != docs.text_fingerprint
    for c in cands:
        assert normalised(c.text) in normalised(docs[c.source].text)
        assert normalised(c.text) not in normalised(dataset.corpus[c.source].text)
    sources = {c.source for c in cands}
    untouched = [d for d in docs.doc_ids.tolist() if d not in sources]
    assert all(dataset.corpus[d].text == docs[d].text for d in untouched)
    recorded = json.loads((out / "dataset.json").read_text())["provenance"]["corpus"]
    assert recorded["text_fingerprint"] == docs.text_fingerprint  # the source's
    assert recorded["copy"]["text_fingerprint"] == dataset.corpus.text_fingerprint
    assert recorded["copy"]["documents_changed"] == 5
    rows = [json.loads(line) for line in (out / "review.jsonl").read_text().splitlines()]
    assert rows[0]["removed_from_source"] == cands[0].text
    assert normalised(cands[0].text) not in normalised(rows[0]["documents"][0]["text"])


def test_only_kept_queries_cut_their_sentence(tmp_path: Path) -> None:
    docs = corpus()
    cands = OfflineGenerator(styles=["sentence"], seed=1, remove_query=1.0).generate(docs, 4)
    cands.append(cands[0].with_id("gen-dup"))  # removed by the duplicate filter
    testset = build_testset(
        cands, 2, docs, FilterSettings(), generator={"generator": "offline"}, corpus_source="toy"
    )
    assert testset.corpus is not None
    changed = [d for d in docs.doc_ids.tolist() if testset.corpus[d].text != docs[d].text]
    assert sorted(changed) == sorted(c.source for c in testset.queries)


def test_keyphrase_common_uses_no_word_of_one_document_alone() -> None:
    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.testsets.sampling import CorpusText

    # Each document: words of its topic (three documents share them) and a name of its own.
    names = ["zircon", "quartz", "basalt", "gneiss", "schist", "marble"]
    docs = Corpus.from_dict(
        {
            f"d{i}": f"{name} {name} lava crater ash {'plume' if i < 3 else 'ridge'} flow"
            for i, name in enumerate(names)
        }
    )
    stats = CorpusText(docs)
    for row in range(len(docs)):
        common = stats.keyphrase_terms(row, 4, "common")
        assert common and all(len(stats.postings[t]) >= 2 for t in common)
    rare = [stats.keyphrase_terms(row, 4) for row in range(len(docs))]
    assert any(len(stats.postings[t]) == 1 for terms in rare for t in terms)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"remove_query": 1.5}, "remove_query is a share in"),
        ({"sentence_pick": "middle"}, "sentence_pick must be one of random, first, last"),
        ({"keyphrase_pick": "odd"}, "keyphrase_pick must be one of rare, common"),
        ({"cut_echo": -0.1, "remove_query": 1.0}, "cut_echo is a share in"),
        ({"cut_echo": 0.5}, "cut_echo cuts more of a cut query's document; give remove_query"),
        ({"echo_overlap": 0.5, "remove_query": 1.0}, "echo_overlap says which echoes cut_echo"),
        ({"echo_overlap": 2, "cut_echo": 1, "remove_query": 1}, "echo_overlap is a share in"),
    ],
)
def test_offline_refuses_bad_options(options: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        OfflineGenerator(**options)


def test_a_removed_title_leaves_the_title_field_and_the_text_start() -> None:
    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.testsets.sampling import corpus_without_removed

    title = "flow past a flat plate at small viscosity"
    docs = Corpus.from_dict(
        {
            "wrapped": {"title": title, "text": f"{title} .\n" + WRAPPED.split(".\n", 1)[1]},
            "plain": {"title": "Lava flows downhill fast", "text": "Lava is hot. It flows."},
        }
    )
    cands = OfflineGenerator(styles=["title"], remove_query=1.0).generate(docs, 2)
    assert {c.removed for c in cands} == {title, "Lava flows downhill fast"}
    copy = corpus_without_removed(docs, cands)
    assert copy is not None and copy.titles == ["", ""]
    assert copy["wrapped"].text.startswith("in the study of high-speed")
    assert copy["plain"].text == "Lava is hot. It flows."  # the text does not hold the title


def test_a_cut_title_counts_as_a_changed_document(tmp_path: Path) -> None:
    # SciFact's texts do not repeat their titles: cutting the title changes the title field
    # only, and dataset.json must still count the document as changed.
    from pytest_ragmetrics.data.model import Corpus

    docs = Corpus.from_dict(
        {
            "a": {"title": "Lava flows downhill fast", "text": "Lava is hot. It flows."},
            "b": {"title": "Ice sheets melt from below", "text": "Ice is cold. It melts."},
            "c": {"title": "Sand dunes move with the wind", "text": "Sand is dry. It moves."},
        }
    )
    cands = OfflineGenerator(styles=["title"], remove_query=1.0).generate(docs, 2)
    testset = build_testset(
        cands, 2, docs, FilterSettings(), generator={"generator": "offline"}, corpus_source="toy"
    )
    write_testset(tmp_path / "set", docs, testset)
    manifest = json.loads((tmp_path / "set" / "dataset.json").read_text())
    assert manifest["provenance"]["corpus"]["copy"]["documents_changed"] == 2


class _PassageRecorder:
    """A relevance judge that only records the passages it is shown (and judges none)."""

    def __init__(self) -> None:
        self.passages: list[str] = []

    def identity(self) -> dict[str, str]:
        return {"name": "recorder"}

    def judge_relevance(self, pairs: list[Any]) -> list[Any]:
        self.passages += [p.passage for p in pairs]
        return []


def test_cut_echo_also_cuts_the_sentence_restating_a_cut_title(tmp_path: Path) -> None:
    """--cut-echo: each drawn cut title's document also loses the text sentence that shares the
    most of the title's words (idf-weighted); the queries are those without it; the copy, the
    review rows and the answerability judge's passage all lack it."""
    from pytest_ragmetrics.data.model import Corpus
    from pytest_ragmetrics.testsets.sampling import CorpusText, prose_sentences

    docs = corpus()
    plain = OfflineGenerator(styles=["title"], seed=3, remove_query=1.0).generate(docs, 8)
    every = OfflineGenerator(styles=["title"], seed=3, remove_query=1.0, cut_echo=1.0)
    echoed = every.generate(docs, 8)
    assert [c.text for c in echoed] == [c.text for c in plain]
    assert every.identity()["cut_echo"] == 1.0 and "cut_echo" not in OfflineGenerator().identity()
    stats = CorpusText(docs)
    for c in echoed:
        sentences = prose_sentences(docs[c.source].text)
        assert c.echoes == (max(sentences, key=lambda s: stats.overlap(c.text, s)),)
        assert c.echoes[0].startswith("The ")  # "The volcano study ... lava levels": its words
    half = OfflineGenerator(styles=["title"], seed=3, remove_query=1.0, cut_echo=0.5)
    drawn = half.generate(docs, 8)
    assert drawn == half.generate(docs, 8) and 0 < sum(bool(c.echoes) for c in drawn) < 8
    testset = build_testset(
        echoed, 8, docs, FilterSettings(), generator=every.identity(), corpus_source="toy"
    )
    write_testset(tmp_path / "set", docs, testset)
    copy = load_dataset(tmp_path / "set").corpus
    for c in echoed:
        assert copy[c.source].title == "" and c.echoes[0] not in copy[c.source].text
        assert copy[c.source].text in docs[c.source].text.replace(c.echoes[0] + " ", "")
    rows = [json.loads(x) for x in (tmp_path / "set" / "review.jsonl").read_text().splitlines()]
    assert rows[0]["echoes_removed_from_source"] == list(echoed[0].echoes)
    judge = _PassageRecorder()
    filters.answerability(echoed[:2], docs, judge, kappa=None, min_kappa=0.4)
    assert judge.passages == [copy[c.source].text for c in echoed[:2]]  # no title, no echo
    # --echo-overlap: only an echo holding that share of the title's words (by idf) is cut;
    # here every echo holds two thirds of its title (0.664).
    shares = {round(stats.overlap(c.text, c.echoes[0]), 3) for c in echoed}
    assert shares == {0.664}
    for least, cut in ((0.6, 8), (0.7, 0)):
        strict = OfflineGenerator(
            styles=["title"], seed=3, remove_query=1.0, cut_echo=1.0, echo_overlap=least
        ).generate(docs, 8)
        assert sum(bool(c.echoes) for c in strict) == cut
        assert [c.text for c in strict] == [c.text for c in plain]
    # A document of one sentence has no echo to cut: its query keeps its text whole.
    lone = Corpus.from_dict({"a": {"title": "Lava flows downhill fast", "text": "Lava is hot."}})
    (only,) = OfflineGenerator(styles=["title"], remove_query=1.0, cut_echo=1.0).generate(lone, 1)
    assert only.echoes == ()
