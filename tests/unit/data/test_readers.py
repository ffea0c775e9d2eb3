"""Readers, writers and the data model: BEIR and FlagEmbedding folders, TREC files, gzip,
Run construction (dicts, rankings, faiss arrays), fingerprints, stale labels, judged rankings,
and a clear file:line error for every malformed input."""

from __future__ import annotations

import gzip
import json
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics import (
    Corpus,
    DataFormatError,
    Qrels,
    Queries,
    Run,
    evaluate,
    load_dataset,
    read_judged_rankings,
    read_qrels,
    read_run,
    write_qrels,
    write_run,
)
from pytest_ragmetrics.data import Entries, read_corpus, read_qrels_jsonl, read_queries
from pytest_ragmetrics.errors import ScoreOrderWarning, StaleLabelsWarning
from tests.helpers.paths import TEST_DATA

TREC_DATA = TEST_DATA / "trec_eval"


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def write(path: Path, content: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = content.encode() if isinstance(content, str) else content
    if path.name.endswith(".gz"):
        data = gzip.compress(data)
    path.write_bytes(data)
    return path


CORPUS = jsonl(
    {"_id": "d1", "title": "Alpha", "text": "first document"},
    {"_id": "d2", "title": "", "text": "second document"},
    {"_id": "d3", "text": "third document"},
)
QUERIES = jsonl(
    {"_id": "q1", "text": "what is alpha"},
    {"_id": "q2", "text": "second?"},
    {"_id": "q3", "text": "never judged"},
)
QRELS_TSV = "query-id\tcorpus-id\tscore\nq2\td2\t1\nq1\td1\t2\nq1\td3\t0\n"


def beir_folder(root: Path, *, gz: bool = False) -> Path:
    suffix = ".gz" if gz else ""
    write(root / f"corpus.jsonl{suffix}", CORPUS)
    write(root / f"queries.jsonl{suffix}", QUERIES)
    write(root / "qrels" / f"test.tsv{suffix}", QRELS_TSV)
    write(root / "qrels" / f"dev.tsv{suffix}", "query-id\tcorpus-id\tscore\nq3\td1\t1\n")
    return root


def flag_folder(root: Path) -> Path:
    write(
        root / "corpus.jsonl",
        jsonl({"id": 1, "title": "One", "text": "doc one"}, {"id": 2, "text": "doc two"}),
    )
    write(
        root / "test_queries.jsonl", jsonl({"id": "a", "text": "query a"}, {"id": 7, "text": "b"})
    )
    write(
        root / "test_qrels.jsonl",
        jsonl(
            {"qid": "a", "docid": 2, "relevance": 1},
            {"qid": 7, "docid": "1", "relevance": 0},
            {"qid": "a", "docid": "1", "relevance": 2.0},
        ),
    )
    return root


# --- BEIR and FlagEmbedding folders --------------------------------------------------------------


def test_beir_folder(tmp_path: Path) -> None:
    dataset = load_dataset(beir_folder(tmp_path / "mini"))
    assert (dataset.name, dataset.split, dataset.source) == ("mini", "test", str(tmp_path / "mini"))
    assert dataset.corpus.doc_ids.tolist() == ["d1", "d2", "d3"]
    assert dataset.corpus["d1"].title == "Alpha"
    assert dataset.corpus["d3"].title == ""
    assert dataset.corpus.passages() == [
        "Alpha first document",
        "second document",
        "third document",
    ]
    # Queries are restricted to those judged in the split, in qrels order.
    assert dataset.queries.query_ids.tolist() == ["q2", "q1"]
    assert dataset.queries["q1"] == "what is alpha"
    assert dataset.qrels.to_dict() == {"q2": {"d2": 1}, "q1": {"d1": 2, "d3": 0}}
    assert dataset.notes == []
    assert dataset.describe()["judgments"] == 3


def test_beir_folder_other_split(tmp_path: Path) -> None:
    dataset = load_dataset(beir_folder(tmp_path), split="dev", name="custom")
    assert dataset.name == "custom"
    assert dataset.queries.query_ids.tolist() == ["q3"]


def test_beir_folder_gzipped(tmp_path: Path) -> None:
    plain = load_dataset(beir_folder(tmp_path / "plain"))
    zipped = load_dataset(beir_folder(tmp_path / "zipped", gz=True))
    assert zipped.fingerprints == plain.fingerprints
    assert (tmp_path / "zipped" / "corpus.jsonl.gz").exists()
    assert not (tmp_path / "zipped" / "corpus.jsonl").exists()


def test_flagembedding_folder(tmp_path: Path) -> None:
    dataset = load_dataset(flag_folder(tmp_path))
    assert dataset.corpus.doc_ids.tolist() == ["1", "2"]
    assert dataset.corpus["1"].title == "One"
    assert dataset.queries.query_ids.tolist() == ["a", "7"]
    assert dataset.qrels.to_dict() == {"a": {"2": 1, "1": 2}, "7": {"1": 0}}


@pytest.mark.parametrize("layout", [beir_folder, flag_folder])
def test_folder_without_the_split_lists_the_available_ones(
    tmp_path: Path, layout: Callable[[Path], Path]
) -> None:
    folder = layout(tmp_path)
    with pytest.raises(DataFormatError) as info:
        load_dataset(folder, split="train")
    message = str(info.value)
    assert message.startswith(f"{folder}: split 'train' not found")
    assert message.endswith("available splits: dev, test" if layout is beir_folder else "test")


def test_not_a_dataset_folder(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match="dataset folder not found"):
        load_dataset(tmp_path / "missing")
    write(tmp_path / "empty" / "readme.txt", "hello")
    with pytest.raises(DataFormatError, match="not a dataset folder: expected BEIR files"):
        load_dataset(tmp_path / "empty")


def test_judged_query_without_text_is_an_error(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path)
    write(folder / "qrels" / "test.tsv", QRELS_TSV + "q9\td1\t1\n")
    with pytest.raises(DataFormatError, match=r"1 judged queries have no text in queries.jsonl"):
        load_dataset(folder)


def test_stale_labels_warn_with_their_count(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path)
    write(folder / "qrels" / "test.tsv", QRELS_TSV + "q1\tgone1\t1\nq2\tgone2\t0\n")
    with pytest.warns(StaleLabelsWarning, match="2 judged documents are not in the corpus") as got:
        dataset = load_dataset(folder)
    assert 'filterwarnings = ["ignore::pytest_ragmetrics.errors.StaleLabelsWarning"]' in str(
        got[0].message
    )
    assert len(dataset.notes) == 1 and "stale labels" in dataset.notes[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the pytest plugin reports the note instead
        assert load_dataset(folder, warn=False).notes == dataset.notes
    assert dataset.qrels.num_judgments == 5  # still judged: they count as relevant


def test_no_warning_without_stale_labels(tmp_path: Path) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        load_dataset(beir_folder(tmp_path))


# --- TREC files --------------------------------------------------------------------------------


def test_trec_run_ignores_ranks_and_extra_columns_and_keeps_hashes(tmp_path: Path) -> None:
    path = write(
        tmp_path / "run.txt",
        "q1 Q0 doc#1 5 0.5 tag\n"
        "\n"
        "q1\tQ0\tdoc#2\t1\t0.25\ttag extra junk\n"
        "q2 Q0 x 1 1e-3 tag\n"
        "q1 Q0 doc#3 9 0.75 tag\n",
    )
    with pytest.warns(ScoreOrderWarning, match=r"the scores rise in 1 of 1 queries"):
        run = read_run(path)
    assert run.ranking("q1") == [("doc#3", 0.75), ("doc#1", 0.5), ("doc#2", 0.25)]
    assert run.ranking("q2") == [("x", 0.001)]
    assert list(run) == ["q1", "q2"]


def test_a_rank_column_that_is_no_number_is_ignored_as_trec_eval_does(tmp_path: Path) -> None:
    """trec_eval skips the rank field whatever it holds (documented: docs/guide/datasets.md)."""
    path = write(tmp_path / "run.txt", "q1 Q0 a x 0.5 t\nq1 Q0 b - 0.9 t\n")
    assert read_run(path).ranking("q1") == [("b", 0.9), ("a", 0.5)]


def test_a_tag_with_whitespace_is_written_as_one_column(tmp_path: Path) -> None:
    run = Run.from_dict({"q1": {"a": 1.0}})
    write_run(run, tmp_path / "run.txt", tag="my\tsystem\n")
    assert (tmp_path / "run.txt").read_text() == "q1 Q0 a 1 1.0 my_system_\n"
    assert read_run(tmp_path / "run.txt").to_dict() == run.to_dict()


def test_trec_eval_results_trunc_is_read(tmp_path: Path) -> None:
    run = read_run(TREC_DATA / "results.trunc")
    assert run.depths().tolist() == [500, 84]


def test_trec_qrels_and_beir_tsv(tmp_path: Path) -> None:
    trec = write(tmp_path / "qrels.txt", "q1 0 d#1 1\nq1 0 d2 0\nq2 0 d1 -1\n")
    beir = write(tmp_path / "qrels.tsv", "query-id\tcorpus-id\tscore\nq1\td#1\t1\n")
    headerless = write(tmp_path / "bare.tsv", "q1\td1\t3\n")
    blank_first = write(tmp_path / "blank.tsv", "\nquery-id\tcorpus-id\tscore\nq1\td1\t2\n")
    assert read_qrels(trec).to_dict() == {"q1": {"d#1": 1, "d2": 0}, "q2": {"d1": -1}}
    assert read_qrels(beir).to_dict() == {"q1": {"d#1": 1}}
    assert read_qrels(headerless).to_dict() == {"q1": {"d1": 3}}
    assert read_qrels(blank_first).to_dict() == {"q1": {"d1": 2}}


@pytest.mark.parametrize("layout", ["auto", "beir"])
def test_a_header_written_with_spaces_leaves_the_split_to_the_rows(
    tmp_path: Path, layout: str
) -> None:
    # "query-id corpus-id score" (as the docs show it) turned tab-only splitting off: the row
    # "q1<TAB>doc 1<TAB>1" split on spaces into four fields, read as TREC: document "1".
    rows = "q1\tdoc 1\t1\nq2\tdoc 2\t2\n"
    spaced = write(tmp_path / "qrels.tsv", "query-id corpus-id score\n" + rows)
    assert read_qrels(spaced, layout=layout).to_dict() == {"q1": {"doc 1": 1}, "q2": {"doc 2": 2}}
    # Rows that change their separator after the first are refused, never re-read.
    mixed = write(tmp_path / "mixed.tsv", "query-id corpus-id score\n" + rows + "q3 d3 1\n")
    with pytest.raises(DataFormatError, match=r"mixed.tsv:4: no tab on this line: in a BEIR"):
        read_qrels(mixed, layout=layout)
    plain = write(tmp_path / "plain.tsv", "query-id corpus-id score\nq1 d1 1\n")
    assert read_qrels(plain, layout=layout).to_dict() == {"q1": {"d1": 1}}


@pytest.mark.parametrize(
    "header",
    ["Query-ID\tCorpus-ID\tScore", "QUERY_ID\tDOC_ID\tRELEVANCE", "query\tdoc\tlabel"],
)
def test_a_header_is_known_in_any_case(tmp_path: Path, header: str) -> None:
    # "Query-ID" was read as a judgment: "grade 'Score' is not an integer".
    qrels = write(tmp_path / "qrels.tsv", header + "\nq1\td1\t1\n")
    assert read_qrels(qrels).to_dict() == {"q1": {"d1": 1}}


@pytest.mark.parametrize("first", ["qid\td1\t1", "query-id d1 2", "QID\td1\t0"])
def test_a_query_named_like_a_header_is_judged_not_skipped(tmp_path: Path, first: str) -> None:
    # A first line "qid d1 1" was taken for a header and its judgment dropped without a word.
    qrels = write(tmp_path / "qrels.tsv", first + "\nq2\td2\t1\n")
    query, doc, grade = first.split()
    assert read_qrels(qrels).to_dict() == {query: {doc: int(grade)}, "q2": {"d2": 1}}


def test_float_written_integral_grades_are_read(tmp_path: Path) -> None:
    assert read_qrels(write(tmp_path / "q.txt", "q 0 d 1.0\n")).to_dict() == {"q": {"d": 1}}


def test_run_round_trip(tmp_path: Path) -> None:
    run = Run.from_dict(
        {"q1": {"a": 0.1 + 0.2, "b": 1 / 3, "c": 1e-300}, "q2": {"z#1": -2.5, "y": -2.5}}
    )
    write_run(run, tmp_path / "out" / "run.txt", tag="my system")
    text = (tmp_path / "out" / "run.txt").read_text()
    assert text.splitlines()[0] == "q1 Q0 b 1 0.3333333333333333 my_system"
    back = read_run(tmp_path / "out" / "run.txt")
    assert back.to_dict() == run.to_dict()
    assert back.fingerprint == run.fingerprint


def test_qrels_round_trip(tmp_path: Path) -> None:
    qrels = Qrels.from_dict({"q1": {"a": 2, "b": 0}, "q2": {"c#x": -1}})
    write_qrels(qrels, tmp_path / "qrels.txt")
    assert (tmp_path / "qrels.txt").read_text().splitlines()[0] == "q1 0 a 2"
    assert read_qrels(tmp_path / "qrels.txt") == qrels


@pytest.mark.parametrize("bad_id", ["has space", "", "tab\there"])
def test_ids_trec_cannot_hold_are_refused_on_write(tmp_path: Path, bad_id: str) -> None:
    with pytest.raises(DataFormatError, match="empty or contains whitespace"):
        write_run(Run.from_dict({"q": {bad_id: 1.0}}), tmp_path / "run.txt")
    with pytest.raises(DataFormatError, match="empty or contains whitespace"):
        write_qrels(Qrels.from_dict({bad_id: {"d": 1}}), tmp_path / "qrels.txt")
    assert not (tmp_path / "run.txt").exists()


def test_gzip_is_read_transparently(tmp_path: Path) -> None:
    run_text = "q1 Q0 a 1 2.0 t\nq1 Q0 b 2 1.0 t\n"
    write(tmp_path / "run.txt.gz", run_text)
    write(tmp_path / "qrels.tsv.gz", QRELS_TSV)
    write(tmp_path / "queries.jsonl.gz", QUERIES)
    write(tmp_path / "qrels.jsonl.gz", jsonl({"qid": "q", "docid": "d", "relevance": 1}))
    # By full name, or by the name without .gz when only the gzipped file exists.
    assert read_run(tmp_path / "run.txt.gz").to_dict() == {"q1": {"a": 2.0, "b": 1.0}}
    assert read_run(tmp_path / "run.txt").to_dict() == {"q1": {"a": 2.0, "b": 1.0}}
    assert read_qrels(tmp_path / "qrels.tsv").num_judgments == 3
    assert len(read_queries(tmp_path / "queries.jsonl")) == 3
    assert read_qrels_jsonl(tmp_path / "qrels.jsonl").to_dict() == {"q": {"d": 1}}


# --- Run construction --------------------------------------------------------------------------


def test_run_from_dict_orders_by_score_then_doc_id_descending() -> None:
    run = Run.from_dict({"q": {"a": 1.0, "c": 2.0, "b": 1.0, "d9": 1.0, "d10": 1.0}})
    assert [d for d, _ in run.ranking("q")] == ["c", "d9", "d10", "b", "a"]
    assert run.depths().tolist() == [5]
    assert run.num_entries == 5
    assert "q" in run and "x" not in run
    assert run.ranking("x") == []


def test_run_from_rankings() -> None:
    run = Run.from_rankings({"q1": ["c", "a", "b"], "q2": [("x", 0.5), ("y", 0.9), ("z", 0.7)]})
    assert [d for d, _ in run.ranking("q1")] == ["c", "a", "b"]
    assert run.ranking("q1")[0][1] == 3.0
    assert run.ranking("q2") == [("y", 0.9), ("z", 0.7), ("x", 0.5)]
    with pytest.raises(DataFormatError, match="must hold document ids or"):
        Run.from_rankings({"q": [1, 2]})  # type: ignore[dict-item]
    with pytest.raises(DataFormatError, match="score 'high' of document 'x' for query 'q'"):
        Run.from_rankings({"q": [("x", "high")]})  # type: ignore[dict-item]
    with pytest.raises(DataFormatError, match="rankings must be a dict"):
        Run.from_rankings([["a"]])  # type: ignore[arg-type]


def test_run_and_qrels_are_built_from_entries_and_give_them_back() -> None:
    ids = np.asarray(["a", "b", "c"])
    entries = Entries(np.asarray(["q1", "q2"]), np.array([0, 2, 3]), ids, np.array([0, 1, 2]))
    run = Run(entries, np.array([0.1, 0.5, 0.3]))
    assert run.to_dict() == {"q1": {"b": 0.5, "a": 0.1}, "q2": {"c": 0.3}}
    assert run.entries.doc_codes.tolist() == [1, 0, 2]  # in canonical order
    assert Run(run.entries, run.scores, canonical=True).fingerprint == run.fingerprint
    qrels = Qrels(entries, np.array([1, 0, 2]))
    assert qrels.to_dict() == {"q1": {"a": 1, "b": 0}, "q2": {"c": 2}}
    twice = entries._replace(doc_codes=np.array([0, 0, 2]))
    for build in (lambda: Run(twice, np.zeros(3)), lambda: Qrels(twice, np.ones(3, np.int64))):
        with pytest.raises(DataFormatError, match="document 'a' appears twice for query 'q1'"):
            build()


def test_run_from_arrays_matches_from_dict() -> None:
    corpus = np.asarray(["d0", "d1", "d2", "d3", "d4"])
    indices = np.array([[3, 0, 4], [1, 2, 0]])
    scores = np.array([[0.9, 0.5, 0.1], [0.7, 0.7, 0.2]])  # row 2 has a tie (d1, d2)
    run = Run.from_arrays(["qa", "qb"], indices, scores, corpus)
    expected = Run.from_dict(
        {"qa": {"d3": 0.9, "d0": 0.5, "d4": 0.1}, "qb": {"d1": 0.7, "d2": 0.7, "d0": 0.2}}
    )
    assert run.to_dict() == expected.to_dict()
    assert run.ranking("qb")[:2] == [("d2", 0.7), ("d1", 0.7)]
    assert run.fingerprint == expected.fingerprint


def test_run_from_arrays_skips_faiss_padding() -> None:
    corpus = ["a", "b", "c"]
    indices = np.array([[2, 0, -1], [-1, -1, -1], [1, -1, 0]])
    # faiss pads with -1 and an infinite distance; padded scores are never read.
    scores = np.array([[0.9, 0.8, -np.inf], [np.inf, np.inf, np.nan], [0.5, -np.inf, 0.7]])
    run = Run.from_arrays(["q1", "q2", "q3"], indices, scores, corpus)
    assert run.depths().tolist() == [2, 0, 2]
    assert run.to_dict() == {"q1": {"c": 0.9, "a": 0.8}, "q2": {}, "q3": {"a": 0.7, "b": 0.5}}
    evaluation = evaluate({"q2": {"a": 1}, "q3": {"b": 1}}, run, ["mrr"])
    assert evaluation.per_query == {"q2": {"mrr": 0.0}, "q3": {"mrr": 0.5}}


def test_run_from_arrays_with_no_columns_is_a_run_of_empty_lists() -> None:
    # A search to depth 0 (nothing matched anywhere) raised ZeroDivisionError.
    empty = Run.from_arrays(["a", "b"], np.zeros((2, 0), np.int64), np.zeros((2, 0)), ["d1"])
    assert empty.to_dict() == {"a": {}, "b": {}}
    assert Run.from_arrays([], np.zeros((0, 3), np.int64), np.zeros((0, 3)), ["d1"]).to_dict() == {}


def test_run_from_arrays_unsorted_rows_are_sorted() -> None:
    run = Run.from_arrays(
        ["q"], np.array([[0, 1, 2]]), np.array([[0.1, 0.3, 0.2]]), ["a", "b", "c"]
    )
    assert [d for d, _ in run.ranking("q")] == ["b", "c", "a"]


@pytest.mark.parametrize(
    ("indices", "scores", "message"),
    [
        (np.array([0, 1]), np.array([0.5, 0.4]), r"must both be \(n_queries=1, k\)"),
        (np.array([[0, 1]]), np.array([[0.5]]), r"must both be \(n_queries=1, k\)"),
        (np.array([[0.0, 1.0]]), np.array([[0.5, 0.4]]), "indices must be integers"),
        (np.array([[0, 5]]), np.array([[0.5, 0.4]]), "index 5 is out of range for 2 documents"),
    ],
)
def test_run_from_arrays_bad_shapes(indices: Any, scores: Any, message: str) -> None:
    with pytest.raises(DataFormatError, match=message):
        Run.from_arrays(["q"], indices, scores, ["a", "b"])


def test_truncate_and_restrict() -> None:
    run = Run.from_rankings({"q1": ["a", "b", "c"], "q2": ["x"], "q3": ["y", "z"]})
    top2 = run.truncate(2)
    assert top2.to_dict() == {
        "q1": {"a": 3.0, "b": 2.0},
        "q2": {"x": 1.0},
        "q3": {"y": 2.0, "z": 1.0},
    }
    assert run.num_entries == 6  # the original is untouched
    picked = run.restrict(["q3", "unknown", "q1"])
    assert list(picked) == ["q3", "q1"]
    assert picked.ranking("q1") == run.ranking("q1")
    assert len(run.restrict([])) == 0
    qrels = Qrels.from_dict({"q1": {"a": 1}, "q2": {"b": 2}})
    assert list(qrels.restrict(["q2", "zz"])) == ["q2"]


def test_qrels_accessors() -> None:
    qrels = Qrels.from_dict({"q1": {"a": 2, "b": 0, "c": -1}, "q2": {"a": 1}})
    assert qrels.judgments("q1") == {"a": 2, "b": 0, "c": -1}
    assert qrels.judgments("nope") == {}
    assert qrels.num_relevant().tolist() == [1, 1]
    assert qrels.num_relevant(2).tolist() == [1, 0]
    assert qrels.num_relevant(0).tolist() == [2, 1]
    assert (len(qrels), qrels.num_judgments, "q2" in qrels) == (2, 4, True)


# --- fingerprints ------------------------------------------------------------------------------


def test_qrels_and_run_fingerprints_ignore_input_order() -> None:
    a = Qrels.from_dict({"q1": {"a": 1, "b": 0}, "q2": {"c": 2}})
    b = Qrels.from_dict({"q2": {"c": 2}, "q1": {"b": 0, "a": 1}})
    assert a.fingerprint == b.fingerprint and a == b
    assert Qrels.from_dict({"q1": {"a": 1, "b": 1}, "q2": {"c": 2}}).fingerprint != a.fingerprint
    r1 = Run.from_dict({"q1": {"a": 0.5, "b": 0.1}, "q2": {"c": 1.0}})
    r2 = Run.from_dict({"q2": {"c": 1.0}, "q1": {"b": 0.1, "a": 0.5}})
    assert r1.fingerprint == r2.fingerprint
    r3 = Run.from_dict({"q1": {"a": 0.5, "b": 0.2}, "q2": {"c": 1.0}})
    assert r3.fingerprint != r1.fingerprint


def test_trec_run_fingerprint_ignores_line_order(tmp_path: Path) -> None:
    lines = (TREC_DATA / "results.test").read_text().splitlines(keepends=True)
    shuffled = [lines[i] for i in np.random.default_rng(3).permutation(len(lines))]
    write(tmp_path / "shuffled.txt", "".join(shuffled))
    assert (
        read_run(tmp_path / "shuffled.txt").fingerprint
        == read_run(TREC_DATA / "results.test").fingerprint
    )


def test_corpus_and_queries_fingerprints() -> None:
    corpus = Corpus.from_dict({"d1": {"title": "T", "text": "x"}, "d2": "y"})
    reordered = Corpus.from_dict({"d2": "y", "d1": {"title": "T", "text": "x"}})
    edited = Corpus.from_dict({"d1": {"title": "T", "text": "x!"}, "d2": "y"})
    assert corpus.fingerprint == reordered.fingerprint
    # The embedding matrix depends on row order, so text_fingerprint does too.
    assert corpus.text_fingerprint != reordered.text_fingerprint
    assert edited.fingerprint != corpus.fingerprint
    assert edited.doc_digests["d2"] == corpus.doc_digests["d2"]
    assert edited.doc_digests["d1"] != corpus.doc_digests["d1"]
    q1 = Queries.from_dict({"a": "one", "b": "two"})
    assert q1.fingerprint == Queries.from_dict({"b": "two", "a": "one"}).fingerprint
    assert q1.fingerprint != Queries.from_dict({"a": "one", "b": "2"}).fingerprint


def test_dataset_fingerprint_combines_the_parts(tmp_path: Path) -> None:
    dataset = load_dataset(beir_folder(tmp_path / "a"))
    same = load_dataset(beir_folder(tmp_path / "b"))
    assert dataset.fingerprint == same.fingerprint
    write(tmp_path / "b" / "qrels" / "test.tsv", QRELS_TSV.replace("q1\td1\t2", "q1\td1\t1"))
    changed = load_dataset(tmp_path / "b")
    assert changed.fingerprints["corpus"] == dataset.fingerprints["corpus"]
    assert changed.fingerprints["qrels"] != dataset.fingerprints["qrels"]
    assert changed.fingerprint != dataset.fingerprint


def test_subsets_refuse_unknown_ids() -> None:
    corpus = Corpus.from_dict({"d1": "x", "d2": "y"})
    assert corpus.subset(["d2"]).doc_ids.tolist() == ["d2"]
    with pytest.raises(DataFormatError, match="unknown document id 'd9'"):
        corpus.subset(["d9"])
    with pytest.raises(DataFormatError, match="unknown query id 'q9'"):
        Queries.from_dict({"q1": "x"}).subset(["q9"])


# --- judged rankings ---------------------------------------------------------------------------


def test_judged_rankings_jsonl(tmp_path: Path) -> None:
    path = write(
        tmp_path / "judged.jsonl",
        jsonl(
            {"query_id": "q1", "ranking": ["c7", "c3", "c9"], "grades": {"c3": 3, "c9": 1}},
            {"query_id": "q2", "ranking": ["x"], "grades": {"x": "2"}},
        ),
    )
    judged = read_judged_rankings(path)
    assert len(judged) == 2
    assert [d for d, _ in judged.run.ranking("q1")] == ["c7", "c3", "c9"]
    assert judged.qrels.to_dict() == {"q1": {"c3": 3, "c9": 1}, "q2": {"x": 2}}
    assert evaluate(judged.qrels, judged.run, ["mrr"]).per_query == {
        "q1": {"mrr": 0.5},
        "q2": {"mrr": 1.0},
    }


# --- malformed input: an error naming file and line --------------------------------------------

BAD_BYTES = b'{"_id": "d2", "text": "caf\xe9"}\n'

# (file name, content, reader, line, message)
MALFORMED: list[tuple[str, str | bytes, Callable[[Path], object], int | None, str]] = [
    (
        "corpus.jsonl",
        '{"_id": "d1", "text": "a"}\n{"_id": "d2", "te',
        read_corpus,
        2,
        "not valid JSON",
    ),
    (
        "corpus.jsonl",
        b'{"_id": "d1", "text": "a"}\n' + BAD_BYTES,
        read_corpus,
        2,
        "not valid UTF-8",
    ),
    ("corpus.jsonl", "this is not json\n", read_corpus, 1, "not valid JSON"),
    ("corpus.jsonl", '["d1", "text"]\n', read_corpus, 1, "expected a JSON object, got list"),
    ("corpus.jsonl", '{"title": "t", "text": "a"}\n', read_corpus, 1, "missing '_id' or 'id'"),
    ("corpus.jsonl", '{"_id": "", "text": "a"}\n', read_corpus, 1, "'_id' is empty"),
    ("corpus.jsonl", '{"_id": ["x"], "text": "a"}\n', read_corpus, 1, "'_id' must be a string"),
    (
        "corpus.jsonl",
        '{"_id": "d1", "title": "t"}\n',
        read_corpus,
        1,
        "document 'd1' has no 'text'",
    ),
    ("corpus.jsonl", '{"_id": "d1", "text": 5}\n', read_corpus, 1, "'text' must be a string"),
    (
        "corpus.jsonl",
        '{"_id": "d1", "text": "a"}\n\n{"_id": "d1", "text": "b"}\n',
        read_corpus,
        3,
        "document id 'd1' appears twice (first at line 1)",
    ),
    ("corpus.jsonl", "", read_corpus, None, "no documents in corpus file (it is empty)"),
    ("corpus.jsonl", "\n  \n", read_corpus, None, "it is empty"),
    ("queries.jsonl", '{"_id": "q1", "text": "a"}\n{"_id"', read_queries, 2, "not valid JSON"),
    ("queries.jsonl", b"\xff\xfe\n", read_queries, 1, "not valid UTF-8 (byte 0xff at column 1)"),
    ("queries.jsonl", '{"text": "a"}\n', read_queries, 1, "missing '_id' or 'id' (query id)"),
    (
        "queries.jsonl",
        '{"_id": "q1", "text": "a"}\n{"_id": "q1", "text": "b"}\n',
        read_queries,
        2,
        "query id 'q1' appears twice (first at line 1)",
    ),
    ("queries.jsonl", "", read_queries, None, "no queries in queries file"),
    (
        "queries.jsonl",
        '{"_id": "q\\u0000", "text": "a"}\n',
        read_queries,
        1,
        "query id 'q\\x00' holds a NUL character",
    ),
    # Python's json keeps the last of two equal keys; another reader keeps the first.
    (
        "queries.jsonl",
        '{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "b", "_id": "q9"}\n',
        read_queries,
        2,
        "the key '_id' appears twice in one object",
    ),
    (
        "qrels.tsv",
        "query-id\tcorpus-id\tscore\nq1\td1\t1.5\n",
        read_qrels,
        2,
        "grade '1.5' is not an integer",
    ),
    ("qrels.tsv", "q1\td1\thigh\n", read_qrels, 1, "grade 'high' is not an integer"),
    ("qrels.tsv", "q1\td1\n", read_qrels, 1, "expected 4 columns"),
    (
        "qrels.tsv",
        "q1 0 d1 1\nq1 0 d2\n",
        read_qrels,
        2,
        "expected 4 columns like the first line, got 3",
    ),
    (
        "qrels.tsv",
        "q1 0 d1 1\nq1 0 d1 0\n",
        read_qrels,
        2,
        "document 'd1' is judged twice for query 'q1' (first at line 1)",
    ),
    ("qrels.tsv", "", read_qrels, None, "no judgments in qrels file (it is empty)"),
    ("qrels.tsv", "query-id\tcorpus-id\tscore\n", read_qrels, None, "it is empty"),
    ("qrels.tsv", b"q1 0 d\xc3 1\n", read_qrels, 1, "not valid UTF-8"),
    (
        "qrels.jsonl",
        '{"qid": "q", "docid": "d"}\n',
        read_qrels_jsonl,
        1,
        "missing integer 'relevance'",
    ),
    (
        "qrels.jsonl",
        '{"qid": "q", "docid": "d", "relevance": 0.5}\n',
        read_qrels_jsonl,
        1,
        "grade '0.5' is not an integer",
    ),
    (
        "qrels.jsonl",
        '{"qid": "q", "docid": "d", "relevance": true}\n',
        read_qrels_jsonl,
        1,
        "missing integer 'relevance'",
    ),
    ("qrels.jsonl", '{"qid": "q", "relevance": 1}\n', read_qrels_jsonl, 1, "missing 'docid'"),
    ("run.txt", "q1 Q0 d1 1 nan tag\n", read_run, 1, "score 'nan' is not a finite number"),
    (
        "run.txt",
        "q1 Q0 d1 1 1.0 t\nq1 Q0 d2 2 -inf t\n",
        read_run,
        2,
        "score '-inf' is not a finite number",
    ),
    ("run.txt", "q1 Q0 d1 1 1e999 tag\n", read_run, 1, "score '1e999' is not a finite number"),
    ("run.txt", "q1 Q0 d1 1 high tag\n", read_run, 1, "score 'high' is not a number"),
    # Python reads these (10, 3, 2e3); trec_eval's strtod reads 1, 0, 0 or stops: refused.
    ("run.txt", "q1 Q0 d1 1 1_0 tag\n", read_run, 1, "score '1_0' is not a number in ASCII"),
    ("run.txt", "q1 Q0 d1 1 \uff13 tag\n", read_run, 1, "score '\uff13' is not a number"),
    ("run.txt", "q1 Q0 d1 1 2e0_3 tag\n", read_run, 1, "score '2e0_3' is not a number"),
    ("qrels.txt", "q1 0 d1 1_0\n", read_qrels, 1, "grade '1_0' is not an integer in ASCII"),
    ("qrels.txt", "q1 0 d1 \u0663\n", read_qrels, 1, "grade '\u0663' is not an integer"),
    ("qrels.tsv", "q1\td1\t2_0.0\n", read_qrels, 1, "grade '2_0.0' is not an integer"),
    # float() reads 10 where trec_eval's atol reads 1: refused, as every number only Python reads.
    ("qrels.txt", "q1 0 d1 1e1\n", read_qrels, 1, "grade '1e1' is not an integer (trec_eval"),
    ("qrels.tsv", "q1\td1\t1.0E1\n", read_qrels, 1, "would read its leading digits, 1)"),
    (
        "qrels.jsonl",
        '{"qid": "q", "docid": "d", "relevance": "1e2"}\n',
        read_qrels_jsonl,
        1,
        "grade '1e2' is not an integer",
    ),
    (
        "run.txt",
        "q1 Q0 d1 1 0.5 tag\nq1 Q0 d2\n",
        read_run,
        2,
        "expected 'qid Q0 docno rank score tag', got 3 columns",
    ),
    (
        "run.txt",
        "q1 Q0 d1 1 0.5 t\nq1 Q0 d1 2 0.4 t\n",
        read_run,
        2,
        "document 'd1' appears twice for query 'q1' (first at line 1)",
    ),
    # trec_eval: "Malformed line" (it needs six fields); this was read as a run without a tag.
    (
        "run.txt",
        "q1 Q0 d1 1 0.5 t\nq1 Q0 d2 2 0.4\n",
        read_run,
        2,
        "expected 'qid Q0 docno rank score tag', got 5 columns (no run tag? trec_eval refuses",
    ),
    # Two runs concatenated: trec_eval keeps the last tag unchecked; this was read as one run.
    (
        "run.txt",
        "q1 Q0 d1 1 0.5 A\nq1 Q0 d2 2 0.4 A\nq2 Q0 d1 1 0.9 B\n",
        read_run,
        3,
        "run tag 'B' where line 1 has 'A': a run file holds one system's run (two runs "
        "concatenated?); split the file, or give every line one tag",
    ),
    ("run.txt", "", read_run, None, "no results in run file (it is empty)"),
    ("run.txt", b"q1 Q0 d\x80 1 0.5 tag\n", read_run, 1, "not valid UTF-8 (byte 0x80 at column 8)"),
    (
        "judged.jsonl",
        '{"query_id": "q", "ranking": "abc"}\n',
        read_judged_rankings,
        1,
        "'ranking' must be a list",
    ),
    (
        "judged.jsonl",
        '{"query_id": "q", "ranking": ["a", "a"]}\n',
        read_judged_rankings,
        1,
        "document 'a' appears twice in the ranking of query 'q'",
    ),
    (
        "judged.jsonl",
        '{"query_id": "q", "ranking": ["a"], "grades": {"a": 1.5}}\n',
        read_judged_rankings,
        1,
        "grade '1.5' is not an integer",
    ),
    (
        "judged.jsonl",
        '{"query_id": "q", "ranking": ["a"], "grades": ["a"]}\n',
        read_judged_rankings,
        1,
        "'grades' must be an object",
    ),
    (
        "judged.jsonl",
        '{"query_id": "q", "ranking": ["a"]}\n{"query_id": "q", "ranking": ["b"]}\n',
        read_judged_rankings,
        2,
        "query 'q' appears twice",
    ),
    ("judged.jsonl", "", read_judged_rankings, None, "no judged rankings in file"),
]


@pytest.mark.parametrize(
    ("name", "content", "reader", "line", "message"),
    MALFORMED,
    ids=[f"{case[2].__name__}-{i}" for i, case in enumerate(MALFORMED)],
)
def test_malformed_input_names_file_and_line(
    tmp_path: Path,
    name: str,
    content: str | bytes,
    reader: Callable[[Path], object],
    line: int | None,
    message: str,
) -> None:
    path = write(tmp_path / name, content)
    with pytest.raises(DataFormatError) as info:
        reader(path)
    error = info.value
    assert error.path == str(path)
    assert error.line == line
    where = str(path) if line is None else f"{path}:{line}"
    assert str(error) == f"{where}: {error.reason}"
    assert message in error.reason


def test_missing_and_unreadable_files(tmp_path: Path) -> None:
    with pytest.raises(DataFormatError, match=r"run\.txt: file not found"):
        read_run(tmp_path / "run.txt")
    (tmp_path / "folder.tsv").mkdir()
    with pytest.raises(DataFormatError, match=r"folder\.tsv: cannot open"):
        read_qrels(tmp_path / "folder.tsv")


def test_corrupt_gzip_names_the_file(tmp_path: Path) -> None:
    good = gzip.compress("".join(f"q1 Q0 d{i} {i} 0.5 tag\n" for i in range(5000)).encode())
    (tmp_path / "cut.txt.gz").write_bytes(good[: len(good) // 2])
    with pytest.raises(DataFormatError, match=r"cut.txt.gz:\d+: corrupt gzip data"):
        read_run(tmp_path / "cut.txt.gz")
    (tmp_path / "fake.tsv.gz").write_bytes(b"q1 0 d1 1\n")
    with pytest.raises(DataFormatError, match=r"fake.tsv.gz:1: corrupt gzip data"):
        read_qrels(tmp_path / "fake.tsv.gz")


def test_bad_line_inside_a_dataset_folder_names_that_file(tmp_path: Path) -> None:
    folder = beir_folder(tmp_path)
    write(folder / "corpus.jsonl", CORPUS + '{"_id": "d4", "text": \n')
    with pytest.raises(DataFormatError) as info:
        load_dataset(folder)
    assert info.value.path == str(folder / "corpus.jsonl")
    assert info.value.line == 4


@pytest.mark.parametrize("once", [True, False], ids=["streams-read-once", "open"])
def test_gzipped_lines_through_a_pipe_are_known_by_their_magic_bytes(once: bool) -> None:
    """A pipe has no .gz name: its first bytes say it is gzip, looked at without being
    consumed (peeked at in a pipe's buffer, or read again from the bytes kept for it)."""
    import contextlib
    import os

    from pytest_ragmetrics.data.textfile import read_jsonl
    from pytest_ragmetrics.fileio import streams_read_once

    rows = "".join(json.dumps({"id": str(i)}) + "\n" for i in range(3))
    read, write = os.pipe()
    os.write(write, gzip.compress(rows.encode()))
    os.close(write)
    try:
        with streams_read_once() if once else contextlib.nullcontext():
            assert [r["id"] for _, r in read_jsonl(f"/dev/fd/{read}")] == ["0", "1", "2"]
    finally:
        os.close(read)
