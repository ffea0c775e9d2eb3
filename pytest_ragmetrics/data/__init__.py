"""Corpus, queries, qrels and runs: the data model and its file formats."""

from pytest_ragmetrics.data.judged import JudgedRankings, read_judged_rankings
from pytest_ragmetrics.data.layouts import (
    load_dataset,
    read_corpus,
    read_qrels_jsonl,
    read_queries,
)
from pytest_ragmetrics.data.model import Corpus, Dataset, Document, Qrels, Queries, Run
from pytest_ragmetrics.data.trec import read_qrels, read_run, write_qrels, write_run

__all__ = [
    "Corpus",
    "Dataset",
    "Document",
    "JudgedRankings",
    "Qrels",
    "Queries",
    "Run",
    "load_dataset",
    "read_corpus",
    "read_judged_rankings",
    "read_qrels",
    "read_qrels_jsonl",
    "read_queries",
    "read_run",
    "write_qrels",
    "write_run",
]
