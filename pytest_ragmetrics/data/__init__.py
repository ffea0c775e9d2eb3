"""Corpus, queries, qrels, runs and answer assessments: the data model and its file formats
(loaded on first use)."""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.data.arrays import Entries
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, read_assessments
    from pytest_ragmetrics.data.corpus import Corpus, Dataset, Document, Queries
    from pytest_ragmetrics.data.documents import read_documents
    from pytest_ragmetrics.data.judged import JudgedRankings, read_judged_rankings
    from pytest_ragmetrics.data.layouts import (
        load_dataset,
        read_corpus,
        read_qrels_jsonl,
        read_queries,
    )
    from pytest_ragmetrics.data.manifest import Manifest, read_manifest
    from pytest_ragmetrics.data.qrels import Qrels
    from pytest_ragmetrics.data.run import Run
    from pytest_ragmetrics.data.sgml import read_trec_topics
    from pytest_ragmetrics.data.smart import read_smart_queries
    from pytest_ragmetrics.data.trec import read_qrels, read_run, write_qrels, write_run

_EXPORTS = {
    "AnswerAssessment": "pytest_ragmetrics.data.assessments",
    "Claim": "pytest_ragmetrics.data.assessments",
    "read_assessments": "pytest_ragmetrics.data.assessments",
    "JudgedRankings": "pytest_ragmetrics.data.judged",
    "read_judged_rankings": "pytest_ragmetrics.data.judged",
    "load_dataset": "pytest_ragmetrics.data.layouts",
    "read_corpus": "pytest_ragmetrics.data.layouts",
    "read_qrels_jsonl": "pytest_ragmetrics.data.layouts",
    "read_queries": "pytest_ragmetrics.data.layouts",
    "Manifest": "pytest_ragmetrics.data.manifest",
    "read_manifest": "pytest_ragmetrics.data.manifest",
    "read_documents": "pytest_ragmetrics.data.documents",
    "read_smart_queries": "pytest_ragmetrics.data.smart",
    "read_trec_topics": "pytest_ragmetrics.data.sgml",
    "Corpus": "pytest_ragmetrics.data.corpus",
    "Dataset": "pytest_ragmetrics.data.corpus",
    "Document": "pytest_ragmetrics.data.corpus",
    "Entries": "pytest_ragmetrics.data.arrays",
    "Qrels": "pytest_ragmetrics.data.qrels",
    "Queries": "pytest_ragmetrics.data.corpus",
    "Run": "pytest_ragmetrics.data.run",
    "read_qrels": "pytest_ragmetrics.data.trec",
    "read_run": "pytest_ragmetrics.data.trec",
    "write_qrels": "pytest_ragmetrics.data.trec",
    "write_run": "pytest_ragmetrics.data.trec",
}
__all__ = [
    "AnswerAssessment",
    "Claim",
    "Corpus",
    "Dataset",
    "Document",
    "Entries",
    "JudgedRankings",
    "Manifest",
    "Qrels",
    "Queries",
    "Run",
    "load_dataset",
    "read_assessments",
    "read_corpus",
    "read_documents",
    "read_judged_rankings",
    "read_manifest",
    "read_qrels",
    "read_qrels_jsonl",
    "read_queries",
    "read_run",
    "read_smart_queries",
    "read_trec_topics",
    "write_qrels",
    "write_run",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
