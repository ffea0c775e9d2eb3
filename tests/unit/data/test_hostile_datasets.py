"""Hand-made dataset folders that once gave a wrong number or a misleading message: split
names, manifests, ids that differ by case, white space or Unicode normalisation, and qrels
that belong to another corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics import ConfigError, DataFormatError, load_dataset
from pytest_ragmetrics.data.selection import select_datasets


def jsonl(*records: dict[str, Any]) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


CORPUS = jsonl({"_id": "d1", "text": "cats purr"}, {"_id": "d2", "text": "dogs bark"})
QUERIES = jsonl({"_id": "q1", "text": "why purr"}, {"_id": "q2", "text": "why bark"})
HEADER = "query-id\tcorpus-id\tscore\n"


def beir(
    root: Path, qrels: dict[str, str], *, corpus: str = CORPUS, queries: str = QUERIES
) -> Path:
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(corpus, encoding="utf-8")
    (root / "queries.jsonl").write_text(queries, encoding="utf-8")
    for name, text in qrels.items():
        (root / "qrels" / name).write_text(text, encoding="utf-8")
    return root


def error_of(folder: Path, split: str = "test") -> str:
    with pytest.raises(DataFormatError) as info:
        load_dataset(folder, split)
    return str(info.value)


# --- available splits ----------------------------------------------------------------------


def test_the_available_splits_are_those_load_dataset_reads(tmp_path: Path) -> None:
    folder = beir(
        tmp_path / "beir",
        {"test.v2.tsv": HEADER + "q1\td1\t1\n", "dev.tsv.bak": HEADER + "q1\td1\t1\n"},
    )
    # A dotted split was listed as "test", which load_dataset then refused; a backup as "dev".
    assert error_of(folder, "dev").endswith("available splits: test.v2")
    assert load_dataset(folder, "test.v2").qrels.to_dict() == {"q1": {"d1": 1}}
    flag = tmp_path / "flag"
    flag.mkdir()
    (flag / "corpus.jsonl").write_text(CORPUS, encoding="utf-8")
    for name in ("test.v2_queries.jsonl", "dev_queries.jsonl"):
        (flag / name).write_text(QUERIES, encoding="utf-8")
    record = jsonl({"qid": "q1", "docid": "d1", "relevance": 1})
    (flag / "test.v2_qrels.jsonl").write_text(record, encoding="utf-8")
    (flag / "dev_qrels.jsonl.orig").write_text(record, encoding="utf-8")
    assert error_of(flag, "dev").endswith("available splits: test.v2")


# --- ids the dataset lacks -----------------------------------------------------------------


@pytest.mark.parametrize(
    ("corpus_id", "judged"),
    [("D1", "d1"), ("d1 ", "d1"), ("caf\u00e9", "cafe\u0301"), ("\ufeffd1", "d1"), ("51", "051")],
    ids=["case", "white-space", "nfc-nfd", "bom", "leading-zeros"],
)
def test_qrels_whose_ids_differ_from_the_corpus_are_refused_with_the_twins(
    tmp_path: Path, corpus_id: str, judged: str
) -> None:
    corpus = jsonl({"_id": corpus_id, "text": "cats"}, {"_id": "d2", "text": "dogs"})
    folder = beir(tmp_path, {"test.tsv": HEADER + f"q1\t{judged}\t1\nq2\td2\t0\n"}, corpus=corpus)
    # Every document judged relevant was a stale label: a warning, and every metric 0.
    message = error_of(folder)
    assert message.startswith(f"{folder / 'qrels' / 'test.tsv'}: the corpus holds none of the 1 ")
    # Escaped, as NFC and NFD would look alike.
    assert f"the corpus has {corpus_id!a} for {judged!a}, which differ only" in message
    assert "every metric would be 0" in message


def test_qrels_of_another_corpus_are_refused(tmp_path: Path) -> None:
    folder = beir(tmp_path, {"test.tsv": HEADER + "q1\tx7\t1\nq2\tx8\t2\nq2\td2\t0\n"})
    message = error_of(folder)
    assert "none of the 2 documents judged relevant (e.g. 'x7', 'x8'; its ids are like " in message
    assert "differ only" not in message


def test_stale_labels_name_some_and_their_twins(tmp_path: Path) -> None:
    corpus = jsonl({"_id": "D1", "text": "cats"}, {"_id": "d2", "text": "dogs"})
    qrels = HEADER + "q1\td1\t1\nq2\td2\t1\nq2\tgone\t0\n"
    folder = beir(tmp_path, {"test.tsv": qrels}, corpus=corpus)
    with pytest.warns(UserWarning) as got:
        dataset = load_dataset(folder)
    assert dataset.notes == [
        f"{folder / 'qrels' / 'test.tsv'}: 2 judged documents are not in the corpus (stale "
        "labels); they count as relevant but can never be retrieved (e.g. 'd1', 'gone'); the "
        "corpus has 'D1' for 'd1', which differ only in case, white space, leading zeros or "
        "Unicode normalisation: ids are compared exactly as written"
    ]
    assert str(got[0].message).startswith(dataset.notes[0])


def test_judged_queries_without_text_name_their_twins(tmp_path: Path) -> None:
    queries = jsonl({"_id": "Q1", "text": "why purr"}, {"_id": "q2 ", "text": "why bark"})
    folder = beir(tmp_path, {"test.tsv": HEADER + "q1\td1\t1\nq2\td2\t1\n"}, queries=queries)
    assert error_of(folder).endswith(
        "2 judged queries have no text in queries.jsonl (e.g. 'q1', 'q2'); queries.jsonl has "
        "'Q1' for 'q1', 'q2 ' for 'q2', which differ only in case, white space, leading zeros or "
        "Unicode normalisation: ids are compared exactly as written"
    )


# --- dataset.json --------------------------------------------------------------------------

SMART_DOCS = ".I 1\n.W\ncats purr\n.I 2\n.W\ndogs bark\n"
SMART_QUERIES = ".I 1\n.W\nwhy purr\n"
MANIFEST = {
    "format": "smart",
    "documents": "docs",
    "queries": "qry",
    "qrels": {"test": "rel"},
}


def smart(root: Path, manifest: bytes) -> Path:
    root.mkdir()
    (root / "docs").write_text(SMART_DOCS, encoding="utf-8")
    (root / "qry").write_text(SMART_QUERIES, encoding="utf-8")
    (root / "rel").write_text("1 1 1\n", encoding="utf-8")
    (root / "dataset.json").write_bytes(manifest)
    return root


def test_a_manifest_with_a_byte_order_mark_is_read(tmp_path: Path) -> None:
    # Every other file of a dataset drops it; Windows editors write it.
    folder = smart(tmp_path / "bom", b"\xef\xbb\xbf" + json.dumps(MANIFEST).encode())
    assert load_dataset(folder).qrels.to_dict() == {"1": {"1": 1}}


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "bom"])
def test_a_manifest_that_is_not_utf8_names_line_and_byte(tmp_path: Path, bom: bytes) -> None:
    text = json.dumps(MANIFEST, indent=1).replace('"smart"', '"sm\xe9art"').encode("latin-1")
    folder = smart(tmp_path / "latin", bom + text)
    line = text[: text.index(b"\xe9")].count(b"\n") + 1
    column = len(text.splitlines()[line - 1].split(b"\xe9")[0]) + 1
    assert error_of(folder) == (
        f"{folder / 'dataset.json'}:{line}: not valid UTF-8 (byte 0xe9 at column {column})"
    )


def test_a_manifest_naming_a_folder_says_so(tmp_path: Path) -> None:
    folder = smart(tmp_path / "dir", json.dumps({**MANIFEST, "queries": "topics"}).encode())
    (folder / "topics").mkdir()
    assert error_of(folder) == (
        f"{folder / 'dataset.json'}: 'queries': topics is a folder, not a file (name its files, "
        "or a glob)"
    )


# --- several datasets ----------------------------------------------------------------------


def test_one_folder_and_split_under_two_names_is_refused(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "data")
    same = [("a", tmp_path / "data"), ("b", tmp_path / "link")]
    with pytest.raises(ConfigError, match=r"datasets 'a' and 'b' are the same folder .*'test'"):
        select_datasets(same, {"a": ("test",), "b": ("dev", "test")})
    # Other splits of one folder are other queries: each counts once.
    pairs = select_datasets(same, {"a": ("test",), "b": ("dev",)})
    assert [pair.key for pair in pairs] == ["a-test", "b-dev"]


@pytest.mark.parametrize("text", ["", "  \t", None], ids=["empty", "blank", "null"])
def test_a_judged_query_without_words_is_refused(tmp_path: Path, text: str | None) -> None:
    # The SMART and TREC readers refused it; a BEIR query ranked the corpus by nothing.
    queries = jsonl({"_id": "q1", "text": text}, {"_id": "q2", "text": "why bark"})
    folder = beir(
        tmp_path / "judged", {"test.tsv": HEADER + "q1\td1\t1\nq2\td2\t1\n"}, queries=queries
    )
    assert error_of(folder) == (
        f"{folder / 'queries.jsonl'}: 1 judged queries have an empty text (e.g. 'q1'); write "
        "their text, or remove their judgments from the qrels"
    )
    # One that is not judged is not evaluated: no harm.
    folder = beir(tmp_path / "unjudged", {"test.tsv": HEADER + "q2\td2\t1\n"}, queries=queries)
    assert load_dataset(folder).queries.query_ids.tolist() == ["q2"]


# --- BEIR qrels ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("qrels", "line"),
    [(HEADER + "q1 d1 1\n", 2), (HEADER + "q1\td1\t1\nq2 d2 1\n", 3), ("q1\td1\t1\nq2 d2 1\n", 2)],
    ids=["header-with-tabs", "rows-with-tabs", "no-header"],
)
def test_a_line_without_tabs_in_a_tabbed_qrels_file_says_so(
    tmp_path: Path, qrels: str, line: int
) -> None:
    # It was "expected 3 columns, got 1": fields split on tabs only, this line has none.
    folder = beir(tmp_path, {"test.tsv": qrels})
    assert error_of(folder) == (
        f"{folder / 'qrels' / 'test.tsv'}:{line}: no tab on this line: in a BEIR qrels file with "
        "tabs, as its first lines have, fields are separated by tabs only (ids may hold spaces)"
    )


def test_near_misses_look_through_a_bounded_number_of_ids(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from pytest_ragmetrics.data import stale

    known = ["a", "b", "D1"]
    assert stale.near_misses(["d1"], known) == [("d1", "D1")]
    monkeypatch.setattr(stale, "_SCANNED", 2)  # a corpus of millions loads no slower
    assert stale.near_misses(["d1"], known) == []
