"""Every session resource that depends on the dataset is scoped to its (dataset, split) pair
(issue 24 class 2): the default rag_pipeline and its retriever, the answers, their recording
and replay, the cache, test ids and report rows; and pair keys never collide."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_ragmetrics.data.selection import DatasetSelection, pair_key
from tests.helpers.plugin_project import OVERLAP_RETRIEVER, SERIAL_AND_N2, write_beir

pytest.importorskip("xdist")

CONFTEST = (
    """
import pytest
from pytest_ragmetrics import Run
from pytest_ragmetrics.generation import FunctionGenerator


"""
    + OVERLAP_RETRIEVER
    + """

@pytest.fixture(scope="session")
def rag_generator():
    return FunctionGenerator(lambda query, contexts: contexts[0], name="echo")
"""
)

TESTS = """
import json, os


def test_answers(rag_answers, rag_dataset):
    with open(os.environ["SEEN"], "a") as f:
        for a in rag_answers:
            f.write(json.dumps([rag_dataset.name, a.query_id, [c for c, _ in a.contexts]]) + "\\n")
    for a in rag_answers:
        assert a.query_id in rag_dataset.queries, a
        assert all(c in rag_dataset.corpus for c, _ in a.contexts), (rag_dataset.name, a)
"""

# The same query words in both datasets: answered from the wrong corpus, a query still gets
# contexts, only they are the other dataset's documents.
ALPHA = (
    {"a1": "cats purr softly", "a2": "dogs bark loudly", "a3": "birds sing"},
    {"qa1": "which animal purrs", "qa2": "which animal barks"},
)
BETA = (
    {"b1": "mars is red", "b2": "venus is hot", "b3": "birds sing on mars"},
    {"qb1": "the red planet", "qb2": "the hot planet", "qb3": "where birds sing"},
)


def project(
    pytester: pytest.Pytester, ini: str = "", conftest: str = CONFTEST, tests: str = TESTS
) -> None:
    write_beir(pytester.path / "data" / "alpha", *ALPHA)
    write_beir(pytester.path / "data" / "beta", *BETA)
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_dataset = "alpha=data/alpha beta=data/beta"\n'
        'ragmetrics_top_n = "1"\n' + textwrap.dedent(ini)
    )
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_rag=textwrap.dedent(tests))


def seen(pytester: pytest.Pytester) -> dict[str, tuple[str, list[str]]]:
    lines = (pytester.path / "seen.jsonl").read_text().splitlines()
    return {qid: (name, contexts) for name, qid, contexts in map(json.loads, lines)}


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    pytester.path.joinpath("seen.jsonl").unlink(missing_ok=True)
    return pytester.runpytest("-p", "no:randomly", *args)


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_each_pair_is_answered_from_its_own_corpus(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    project(pytester)
    monkeypatch.setenv("SEEN", str(pytester.path / "seen.jsonl"))
    run(pytester, *xdist).assert_outcomes(passed=2)
    answered = seen(pytester)
    assert answered["qa1"] == ("alpha", ["a1"])
    assert answered["qb1"] == ("beta", ["b1"])
    assert answered["qb3"] == ("beta", ["b3"])


def test_recording_keeps_each_pairs_answers_and_replays_each(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    ini = 'ragmetrics_answers = "recorded/answers.jsonl"\n'
    project(pytester, ini)
    monkeypatch.setenv("SEEN", str(pytester.path / "seen.jsonl"))
    run(pytester, "--ragmetrics-record-answers").assert_outcomes(passed=2)
    recorded = seen(pytester)
    lines = (pytester.path / "recorded" / "answers.jsonl").read_text().splitlines()
    assert sorted((json.loads(x)["dataset"]["name"], json.loads(x)["query_id"]) for x in lines) == [
        ("alpha", "qa1"), ("alpha", "qa2"), ("beta", "qb1"), ("beta", "qb2"), ("beta", "qb3")
    ]  # fmt: skip
    # Without a generator the recording is replayed: each pair gets its own answers, serially
    # and with two workers.
    project(pytester, ini, conftest=CONFTEST.split("@pytest.fixture")[0])
    for xdist in ([], ["-n", "2"]):
        run(pytester, *xdist).assert_outcomes(passed=2)
        assert seen(pytester) == recorded
    # Recording one pair again (-k) leaves the other's lines as they were.
    project(pytester, ini)
    run(pytester, "--ragmetrics-record-answers", "-k", "beta").assert_outcomes(
        passed=1, deselected=1
    )
    again = (pytester.path / "recorded" / "answers.jsonl").read_text().splitlines()
    assert [x for x in again if '"alpha"' in x] == [x for x in lines if '"alpha"' in x]


def test_a_one_dataset_recording_is_not_replayed_for_several(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project(pytester, 'ragmetrics_answers = "answers.jsonl"\n', conftest="")
    (pytester.path / "answers.jsonl").write_text(
        json.dumps({"query_id": "qa1", "query": "which animal purrs", "answer": "x"}) + "\n"
    )
    monkeypatch.setenv("SEEN", str(pytester.path / "seen.jsonl"))
    result = run(pytester)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines(
        ["*answers.jsonl: the recording does not say which dataset it answers*"]
    )


@pytest.mark.parametrize(
    ("one", "two"),
    [(("a-b", "c"), ("a", "b-c")), (("a-", "b"), ("a", "-b")), (("x--y", "t"), ("x-", "y-t"))],
)
def test_pair_keys_never_collide(one: tuple[str, str], two: tuple[str, str]) -> None:
    assert pair_key(*one) != pair_key(*two)
    assert DatasetSelection("scifact", Path("."), "test").key == "scifact-test"


def test_pair_keys_are_injective_over_names_with_dashes() -> None:
    parts = ["a", "b", "a-", "a-b", "b-a", "a--b", "a-b-", "a---b"]
    keys = {}
    for name in parts:
        for split in (p for p in parts if not p.startswith("-")):
            key = pair_key(name, split)
            assert keys.setdefault(key, (name, split)) == (name, split), key


def test_datasets_whose_keys_collide_run_apart(pytester: pytest.Pytester) -> None:
    """``a-b``/``c`` and ``a``/``b-c`` were both ``a-b-c``: one test id for two instances."""
    write_beir(pytester.path / "data" / "one", *ALPHA)
    write_beir(pytester.path / "data" / "two", *BETA)
    (pytester.path / "data" / "two" / "qrels" / "test.tsv").rename(
        pytester.path / "data" / "two" / "qrels" / "b-c.tsv"
    )
    (pytester.path / "data" / "one" / "qrels" / "test.tsv").rename(
        pytester.path / "data" / "one" / "qrels" / "c.tsv"
    )
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_dataset = "a-b=data/one a=data/two"\n'
        'ragmetrics_split = "a-b=c a=b-c"\n'
    )
    pytester.makepyfile(
        test_rag="def test_x(rag_dataset):\n    assert rag_dataset.name in ('a', 'a-b')\n"
    )
    result = pytester.runpytest("-v", "-p", "no:randomly")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*test_x[[]a--b-c[]] PASSED*", "*test_x[[]a-b-c[]] PASSED*"])


def test_a_dataset_named_like_another_pair_is_refused(pytester: pytest.Pytester) -> None:
    write_beir(pytester.path / "data" / "one", *ALPHA)
    write_beir(pytester.path / "data" / "two", *BETA)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nragmetrics_dataset = "x=data/one x-test=data/two"\n'
    )
    pytester.makepyfile(test_rag="def test_x(rag_dataset):\n    pass\n")
    result = pytester.runpytest()
    assert result.ret != 0
    result.stderr.fnmatch_lines(
        ["*the dataset name 'x-test' is also the id of dataset 'x', split 'test'*"]
    )


# A user's pipeline built once from one corpus file, requesting no dataset fixture: with two
# pairs it would answer beta's queries from alpha's documents (issue 24 class 2).
SHARED_PIPELINE = """
import json
from pathlib import Path

import pytest

ALPHA = Path("data/alpha/corpus.jsonl")


@pytest.fixture(scope="session")
def rag_pipeline():
    docs = [json.loads(line) for line in ALPHA.read_text().splitlines()]

    def pipeline(query):
        return docs[0]["text"], {docs[0]["_id"]: docs[0]["text"]}

    return pipeline
"""

PER_PAIR_PIPELINE = SHARED_PIPELINE.replace(
    "def rag_pipeline():\n    docs = [json.loads(line) for line in ALPHA.read_text().splitlines()]",
    'def rag_pipeline(rag_corpus):\n    docs = [{"_id": d.id, "text": d.text} for d in rag_corpus]',
)


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_a_pipeline_that_requests_no_dataset_fixture_is_refused_with_two_pairs(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    project(pytester, conftest=SHARED_PIPELINE)
    monkeypatch.setenv("SEEN", str(pytester.path / "seen.jsonl"))
    result = run(pytester, *xdist)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(
        [
            "*test_rag.py::test_answers: the fixture rag_pipeline (conftest.py:*) does not "
            "depend on the dataset: with 2 (dataset, split) pairs configured (alpha-test, "
            "beta-test) it is one object for all of them*Give it the parameter rag_dataset*"
        ]
    )
    assert not (pytester.path / "seen.jsonl").exists()  # nothing was answered
    # Requesting the corpus builds it per pair: each pair's contexts are its own.
    project(pytester, conftest=PER_PAIR_PIPELINE)
    run(pytester, *xdist).assert_outcomes(passed=2)
    answered = seen(pytester)
    assert answered["qa1"] == ("alpha", ["a1"]) and answered["qb1"] == ("beta", ["b1"])


def test_an_override_is_traced_through_the_fixtures_it_requests(pytester: pytest.Pytester) -> None:
    """A retriever built from another fixture of the user's that requests rag_corpus is per
    pair; one whose chain never reaches the dataset is refused, naming it."""
    tests = "def test_run(rag_run, rag_dataset):\n    assert len(rag_run.query_ids)\n"
    chained = (
        "import pytest\nfrom pytest_ragmetrics import Run\n"
        + OVERLAP_RETRIEVER.replace(
            "def rag_retriever(rag_corpus):\n    return OverlapRetriever(rag_corpus)",
            "def rag_retriever(index):\n    return OverlapRetriever(index)",
        )
        + "\n\n@pytest.fixture(scope='session')\ndef index(rag_corpus):\n    return rag_corpus\n"
    )
    assert "def rag_retriever(index)" in chained
    project(pytester, conftest=chained, tests=tests)
    run(pytester).assert_outcomes(passed=2)
    unbound = chained.replace(
        "def index(rag_corpus):\n    return rag_corpus", "def index():\n    return []"
    )
    project(pytester, conftest=unbound, tests=tests)
    result = run(pytester)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*the fixture rag_retriever (conftest.py:*) does not depend*"])


def test_one_dataset_keeps_any_pipeline(pytester: pytest.Pytester) -> None:
    write_beir(pytester.path / "data" / "alpha", *ALPHA)
    pytester.makepyprojecttoml(
        '[tool.pytest.ini_options]\nragmetrics_dataset = "data/alpha"\nragmetrics_top_n = "1"\n'
    )
    pytester.makeconftest(SHARED_PIPELINE)
    pytester.makepyfile(test_rag="def test_answers(rag_answers):\n    assert len(rag_answers)\n")
    pytester.runpytest().assert_outcomes(passed=1)
