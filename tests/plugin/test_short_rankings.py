"""Short rankings are normal: a note in every report, never a warning that fails a project with
``filterwarnings = ["error"]``; a retriever that finds nothing for most queries is a clear
warning that says how to silence it."""

from __future__ import annotations

import json

import pytest

from tests.helpers.plugin_project import SERIAL_AND_N2, make_project

# Matches query words (a plural "s" stripped) against title and text: each toy query finds one
# document ("purrs" finds "Cats purr ..."), fewer than the k of 10 (or the 5 documents).
KEYWORD_CONFTEST = """
import pytest

from pytest_ragmetrics.retrievers import from_function

STOP = {"which", "animal"}


@pytest.fixture(scope="session")
def rag_retriever(rag_corpus):
    documents = [(doc.id, set((doc.title + " " + doc.text).lower().split())) for doc in rag_corpus]

    def keyword_search(text):
        words = {word.rstrip("s") for word in text.lower().split()} - STOP
        scored = [(doc_id, len(words & terms)) for doc_id, terms in documents]
        return [(doc_id, float(score)) for doc_id, score in scored if score > 0]

    return from_function(keyword_search, corpus=rag_corpus, name="keywords")
"""
TESTS = """
def test_search(rag_eval, rag_run):
    rag_eval.retrieval(rag_run)
"""
INI = 'filterwarnings = ["error"]\nragmetrics_k = 10\n'
# keyword_search takes no k: the note does not pretend it was asked for 5 (issue 25).
NOTE = (
    "retriever 'keywords' returned fewer than 5 documents for 4 of 4 queries (shortest 1); "
    "it takes no k parameter, so it was never told k (it returned at most 1 per query): "
    "normal for a function that returns its own number of documents or only those that "
    "match; add a k parameter to be told k, and the missing documents count as not retrieved"
)


def _project(pytester: pytest.Pytester, conftest: str = KEYWORD_CONFTEST) -> None:
    make_project(pytester, ini=INI, tests=TESTS, conftest=conftest)
    # A stale label too: judged documents missing from the corpus are a note as well.
    qrels = pytester.path / "data" / "qrels" / "test.tsv"
    qrels.write_text(qrels.read_text() + "q1\tgone\t1\n")


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_short_rankings_pass_under_filterwarnings_error_and_are_one_note(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    _project(pytester)
    result = pytester.runpytest_subprocess(
        "--ragmetrics-json=report.json", "--ragmetrics-markdown=summary.md", *xdist
    )
    result.assert_outcomes(passed=1)
    text = result.stdout.str() + result.stderr.str()
    assert "warnings summary" not in text and "Warning" not in text, text
    (evaluation,) = json.loads((pytester.path / "report.json").read_text())["evaluations"]
    assert NOTE in evaluation["notes"]
    stale = "data/qrels/test.tsv: 1 judged documents are not in the corpus (stale labels)"
    assert any(n.startswith(stale) for n in evaluation["notes"]), evaluation["notes"]
    # Once in the terminal, prefixed with the evaluation, and in the Markdown notes.
    assert text.count(NOTE) == 1, text
    assert f"note: test_rag.py::test_search [retrieval]: {NOTE}" in text
    assert NOTE in (pytester.path / "summary.md").read_text()


def test_nothing_for_most_queries_is_a_warning_saying_how_to_silence_it(
    pytester: pytest.Pytester,
) -> None:
    # A retriever that ignores most words: only "barks" finds a document.
    broken = KEYWORD_CONFTEST.replace(
        'STOP = {"which", "animal"}', 'STOP = {"which", "animal", "purr", "sing", "gallop"}'
    )
    _project(pytester, broken)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert "ShortRankingWarning: retriever 'keywords' returned nothing for 3 of 4 queries" in text
    silence = 'filterwarnings = ["ignore::pytest_ragmetrics.errors.ShortRankingWarning"]'
    assert silence in text
    # Silenced as it says: the run passes, and the report still has the note.
    pyproject = pytester.path / "pyproject.toml"
    pyproject.write_text(
        pyproject.read_text().replace(
            'filterwarnings = ["error"]',
            'filterwarnings = ["error", "ignore::pytest_ragmetrics.errors.ShortRankingWarning"]',
        )
    )
    silenced = pytester.runpytest_subprocess()
    silenced.assert_outcomes(passed=1)
    assert (
        "(shortest 1) and nothing for 3 of 4 queries; most got nothing: check that it searches"
        in silenced.stdout.str()
    )
