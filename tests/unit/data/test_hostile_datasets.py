"""Hand-made dataset folders that once gave a wrong number or a misleading message: split
names, manifests, ids that differ by case, white space or Unicode normalisation, and qrels
that belong to another corpus."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics import DataFormatError, load_dataset


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
