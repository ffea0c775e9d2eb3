"""A small pytest project for pytester tests: a BEIR dataset and a toy retriever."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

CORPUS = [
    {"_id": "d1", "title": "Cats", "text": "Cats purr and sleep all day."},
    {"_id": "d2", "title": "Dogs", "text": "Dogs bark at the postman."},
    {"_id": "d3", "title": "Birds", "text": "Birds sing in the morning."},
    {"_id": "d4", "title": "Fish", "text": "Fish swim in water."},
    {"_id": "d5", "title": "Horses", "text": "Horses gallop across fields."},
]
QUERIES = [
    {"_id": "q1", "text": "which animal purrs"},
    {"_id": "q2", "text": "which animal barks"},
    {"_id": "q3", "text": "which animal sings"},
    {"_id": "q4", "text": "which animal gallops"},
]
QRELS = [("q1", "d1", 1), ("q2", "d2", 2), ("q3", "d3", 1), ("q3", "d4", 0), ("q4", "d5", 1)]

# The toy retriever ranks each query's relevant document first; RAG_WORSE=1 pushes it down.

# A retriever for conftests of several datasets: ranks by the words a document shares with the
# query, so it works on any corpus; rag_retriever is it, built per (dataset, split) pair.
OVERLAP_RETRIEVER = """
class OverlapRetriever:
    \"\"\"Ranks documents by the words they share with the query (works on any corpus).\"\"\"

    def __init__(self, corpus):
        self.corpus = corpus

    def identity(self):
        return {"name": "overlap"}

    def search(self, queries, k):
        out = {}
        for qid, text in queries.items():
            words = set(text.lower().split())
            scored = {
                doc.id: len(words & set((doc.title + " " + doc.text).lower().split())) + 0.0
                for doc in self.corpus
            }
            ranked = sorted(scored.items(), key=lambda kv: (-kv[1], kv[0]))[:k]
            out[qid] = dict(ranked)
        return Run.from_dict(out)


@pytest.fixture(scope="session")
def rag_retriever(rag_corpus):
    return OverlapRetriever(rag_corpus)
"""

CONFTEST = """
import os

import pytest

from pytest_ragmetrics import Run

GOOD = {
    "q1": ["d1", "d2", "d3"],
    "q2": ["d2", "d1", "d3"],
    "q3": ["d3", "d4", "d1"],
    "q4": ["d5", "d1", "d2"],
}
WORSE = {
    "q1": ["d2", "d3", "d1"],
    "q2": ["d1", "d3", "d2"],
    "q3": ["d4", "d1", "d3"],
    "q4": ["d1", "d2", "d5"],
}


class ToyRetriever:
    name = "toy"

    def __init__(self, worse):
        self.worse = worse

    def identity(self):
        return {"name": "toy", "worse": self.worse}

    def search(self, queries, k):
        table = WORSE if self.worse else GOOD
        return Run.from_rankings({q: table[q][:k] for q in queries})


@pytest.fixture(scope="session")
def rag_retriever():
    return ToyRetriever(bool(os.environ.get("RAG_WORSE")))
"""


def write_dataset(root: Path, *, corpus: list[dict[str, str]] | None = None) -> Path:
    """Write the BEIR folder ``root/data`` and return it."""
    data = root / "data"
    (data / "qrels").mkdir(parents=True, exist_ok=True)
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps(d) + "\n" for d in (corpus or CORPUS)), encoding="utf-8"
    )
    (data / "queries.jsonl").write_text(
        "".join(json.dumps(q) + "\n" for q in QUERIES), encoding="utf-8"
    )
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS),
        encoding="utf-8",
    )
    return data


def write_beir(folder: Path, docs: dict[str, str], queries: dict[str, str]) -> None:
    """A BEIR folder of ``docs`` and ``queries`` (every query judges the first document)."""
    (folder / "qrels").mkdir(parents=True, exist_ok=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    first = next(iter(docs))
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{first}\t1\n" for q in queries)
    )


def make_project(
    pytester: pytest.Pytester, *, ini: str = "", tests: str = "", conftest: str = CONFTEST
) -> None:
    """Dataset, pyproject with ``ini`` lines, conftest with the toy retriever, ``tests``."""
    write_dataset(pytester.path)
    lines = ["[tool.pytest.ini_options]", 'ragmetrics_dataset = "data"']
    if "ragmetrics_metrics" not in ini:
        lines.append('ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr"')
    pytester.makepyprojecttoml("\n".join(lines) + "\n" + textwrap.dedent(ini))
    pytester.makeconftest(conftest)
    if tests:
        pytester.makepyfile(test_rag=textwrap.dedent(tests))


def marked_test_error(pytester: pytest.Pytester, marker: str, test: str, message: str) -> None:
    """A project whose one test is ``@pytest.mark.<marker>`` over ``test`` (its ``def`` and
    body); its collection must fail with ``message`` after the test's name, no traceback."""
    body = f"import pytest\n\n@pytest.mark.{marker}\n{textwrap.dedent(test)}"
    make_project(pytester, tests=body)
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*ERROR collecting test_rag.py*", f"*::test_*: *{message}*"])
    assert "Traceback" not in result.stdout.str()


# A serial run and one under two xdist workers. ``-n 0`` is not a third mode: xdist is loaded in a
# serial run too, and the plugin tells a worker from the controller only by ``workerinput``, which
# neither has, so it ran the serial code path again (about 30 s of the quick tier per test).
# The ``-n 2`` twin of a test (SERIAL_AND_N2, XDIST_MODES) runs in the slow tier: it starts two
# worker processes (about 3 s of CPU a test; 80 s for the 28 twins, a sixth of the quick tier).
# The quick tier keeps its own xdist tests (XDIST_QUICK: the baseline update, the JSON report and
# the threshold under ``-n 2``), and the tests named for xdist.
N2 = pytest.param(["-n", "2"], id="n2", marks=pytest.mark.slow)
XDIST_QUICK = [pytest.param([], id="no-xdist"), pytest.param(["-n", "2"], id="n2")]
XDIST_MODES = [pytest.param([], id="no-xdist"), N2]
SERIAL_AND_N2 = [pytest.param([], id="serial"), N2]

# Third-party pytest plugins this venv holds for other reasons (hypothesis for our own property
# tests, langsmith installed with langchain-core, anyio), left out of the pytest runs a test
# starts: importing them costs a child process about 2.2 s (an empty run takes 4.4 s with them,
# 0.6 s without), paid again by each xdist worker. tests/conftest.py sets them for pytester.
UNRELATED_PLUGINS = ("-p", "no:hypothesispytest", "-p", "no:langsmith_plugin", "-p", "no:anyio")
