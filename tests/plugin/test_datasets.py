"""Several datasets and splits in one session: test ids, markers, baselines, the per-dataset
summary, ignore_identical_ids, and the errors of a wrong configuration."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from tests.helpers.plugin_project import OVERLAP_RETRIEVER, SERIAL_AND_N2

CONFTEST = (
    """
import pytest
from pytest_ragmetrics import Run


"""
    + OVERLAP_RETRIEVER
)

TESTS = """
import pytest


def test_retrieval(rag_eval, rag_run, rag_dataset):
    rag_eval.retrieval(rag_run, name="overlap")


def test_per_query(rag_query):
    assert rag_query.ranking


@pytest.mark.rag_dataset("animals")
def test_only_animals(rag_dataset):
    assert rag_dataset.name == "animals"


def test_no_dataset(rag_eval):
    rag_eval.retrieval({"x": {"a": 1.0}}, qrels={"x": {"a": 1}}, name="custom")
"""


def write_beir(folder: Path, docs: dict[str, str], queries: dict[str, str], qrels: dict) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": q, "text": t}) + "\n" for q, t in queries.items())
    )
    for split, judged in qrels.items():
        (folder / "qrels" / f"{split}.tsv").write_text(
            "query-id\tcorpus-id\tscore\n"
            + "".join(f"{q}\t{d}\t{g}\n" for q, docs in judged.items() for d, g in docs.items())
        )


def project(pytester: pytest.Pytester, ini: str, tests: str = TESTS) -> None:
    write_beir(
        pytester.path / "data" / "animals",
        {"d1": "cats purr", "d2": "dogs bark", "d3": "birds sing"},
        {"q1": "which animal purrs", "q2": "which animal barks", "q3": "who sings"},
        {"test": {"q1": {"d1": 1}, "q2": {"d2": 1}}, "dev": {"q3": {"d3": 1}}},
    )
    write_beir(
        pytester.path / "data" / "planets",
        {"p1": "mars is red", "p2": "venus is hot", "p3": "mars has two moons"},
        {"m1": "red planet", "m2": "hot planet", "m3": "moons of mars"},
        {"test": {"m1": {"p1": 1}, "m2": {"p2": 1}, "m3": {"p3": 1}}},
    )
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_metrics = "ndcg_at_10 recall_at_1"\n' + textwrap.dedent(ini)
    )
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_rag=tests)


TWO = 'ragmetrics_dataset = "animals=data/animals planets=data/planets"\n'


def test_tests_that_use_a_dataset_run_once_per_pair(pytester: pytest.Pytester) -> None:
    project(pytester, TWO)
    collected = pytester.runpytest("--collect-only", "-q")
    ids = {line for line in collected.stdout.lines if line.startswith("test_rag.py")}
    assert ids == {
        "test_rag.py::test_retrieval[animals-test]",
        "test_rag.py::test_retrieval[planets-test]",
        "test_rag.py::test_per_query[animals-test-q1]",
        "test_rag.py::test_per_query[animals-test-q2]",
        "test_rag.py::test_per_query[planets-test-m1]",
        "test_rag.py::test_per_query[planets-test-m2]",
        "test_rag.py::test_per_query[planets-test-m3]",
        "test_rag.py::test_only_animals[animals-test]",
        "test_rag.py::test_no_dataset",
    }
    result = pytester.runpytest("-k", "planets")
    result.assert_outcomes(passed=4, deselected=5)


def test_splits_per_dataset_and_the_summary(pytester: pytest.Pytester) -> None:
    project(pytester, TWO + 'ragmetrics_split = "animals=test,dev planets=test"\n')
    result = pytester.runpytest("--ragmetrics-json=report.json")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(
        [
            "*- ragmetrics: per dataset (mean over datasets; Δ to baseline) -*",
            "ndcg_at_10*animals-test*animals-dev*planets-test*mean",
            "test_rag.py::test_retrieval [[]overlap[]]*0.5655*1.0000*1.0000*0.8552",
        ]
    )
    document = json.loads((pytester.path / "report.json").read_text())
    table = document["summary"]["by_dataset"]["recall_at_1"]
    assert table["columns"] == ["animals-test", "animals-dev", "planets-test"]
    [row] = table["rows"]
    assert row["evaluation"] == "test_rag.py::test_retrieval [overlap]"
    assert row["mean"] == pytest.approx(sum(row["values"].values()) / 3)
    names = {(e["test"], (e["dataset"] or {}).get("split")) for e in document["evaluations"]}
    assert ("test_rag.py::test_retrieval[animals-dev]", "dev") in names
    assert [d["name"] for d in document["settings"]["datasets"]] == [
        "animals",
        "animals",
        "planets",
    ]


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_baseline_is_keyed_per_pair_and_compares_per_pair(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    project(pytester, TWO)
    pytester.runpytest("--ragmetrics-update-baseline", *xdist).assert_outcomes(passed=9)
    baseline = json.loads((pytester.path / ".ragmetrics" / "baseline.json").read_text())
    assert {
        "test_rag.py::test_retrieval[animals-test]",
        "test_rag.py::test_retrieval[planets-test]",
    } <= set(baseline["entries"])
    digests = sorted(
        p.name.split("-")[0] for p in (pytester.path / ".ragmetrics" / "datasets").iterdir()
    )
    assert digests == ["corpus", "corpus", "qrels", "qrels", "queries", "queries"]
    # A changed document of one dataset makes only its evaluation not comparable.
    corpus = pytester.path / "data" / "planets" / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("venus is hot", "venus is very hot"))
    result = pytester.runpytest(*xdist)
    result.assert_outcomes(passed=8, failed=1)
    result.stdout.fnmatch_lines(
        [
            "*'overlap' (test_rag.py::test_retrieval[[]planets-test[]]) is not comparable*",
            "*corpus: 1 doc changed (e.g. p2)*",
        ],
        consecutive=False,
    )


def test_one_dataset_keeps_todays_ids(pytester: pytest.Pytester) -> None:
    project(pytester, 'ragmetrics_dataset = "data/animals"\n')
    collected = pytester.runpytest("--collect-only", "-q")
    ids = {line for line in collected.stdout.lines if line.startswith("test_rag.py")}
    assert {"test_rag.py::test_retrieval", "test_rag.py::test_per_query[q1]"} <= ids
    assert "animals-test" not in collected.stdout.str()


def test_ignore_identical_ids_is_recorded_and_searches_one_more(
    pytester: pytest.Pytester,
) -> None:
    # A corpus that holds its own queries (ArguAna's shape): each query finds itself first.
    write_beir(
        pytester.path / "data" / "args",
        {"a1": "cats purr loudly", "a2": "dogs bark loudly", "a3": "cats purr softly"},
        {"a1": "cats purr loudly", "a2": "dogs bark loudly"},
        {"test": {"a1": {"a3": 1}, "a2": {"a3": 0}}},
    )
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_metrics = "recall_at_1"\nragmetrics_k = "1"\n'
        'ragmetrics_dataset = "data/args"\n'
    )
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(
        test_rag="def test_r(rag_eval, rag_run):\n"
        "    assert max(rag_run.depths()) == (2 if rag_eval._semantics.ignore_identical_ids "
        "else 1)\n"
        "    rag_eval.retrieval(rag_run, name='r')\n"
    )
    plain = pytester.runpytest("--ragmetrics-update-baseline", "--ragmetrics-json=plain.json")
    plain.assert_outcomes(passed=1)
    [entry] = json.loads((pytester.path / "plain.json").read_text())["evaluations"]
    assert entry["per_query"]["a1"]["recall_at_1"] == 0.0  # a1 found itself at rank 1
    ruled = pytester.runpytest(
        "--ragmetrics-ignore-identical-ids=true", "--ragmetrics-json=ruled.json"
    )
    ruled.assert_outcomes(failed=1)  # not comparable with the baseline made without the rule
    ruled.stdout.fnmatch_lines(["*not comparable*metric semantics*ignore_identical_ids*"])
    [entry] = json.loads((pytester.path / "ruled.json").read_text())["evaluations"]
    assert entry["semantics"]["ignore_identical_ids"] is True
    assert entry["per_query"]["a1"]["recall_at_1"] == 1.0  # a3 moved up to rank 1


@pytest.mark.parametrize(
    ("ini", "args", "message"),
    [
        (TWO, [], "test_no_default: 2 datasets are configured (animals-test, planets-test)"),
        (
            'ragmetrics_dataset = "a=data/animals a=data/planets"\n',
            [],
            "two datasets are named 'a'",
        ),
        (TWO + 'ragmetrics_split = "moons=test"\n', [], "'moons=test' names no configured dataset"),
        (TWO + 'ragmetrics_ignore_identical_ids = "arguana"\n', [], "arguana is not a configured"),
        ('ragmetrics_dataset = "bad/name=data/animals"\n', [], "dataset name 'bad/name'"),
        (
            # A copied name=path left unedited: the mean across datasets counted it twice.
            'ragmetrics_dataset = "animals=data/animals planets=data/./animals/"\n',
            [],
            "datasets 'animals' and 'planets' are the same folder",
        ),
    ],
)
def test_wrong_dataset_configurations_say_what_to_do(
    pytester: pytest.Pytester, ini: str, args: list[str], message: str
) -> None:
    project(
        pytester,
        ini,
        tests="def test_no_default(rag_eval):\n"
        "    rag_eval.retrieval({'q1': {'d1': 1.0}}, name='x')\n",
    )
    result = pytester.runpytest(*args)
    assert message in result.stdout.str() + result.stderr.str()
    assert "Traceback" not in result.stdout.str() + result.stderr.str()


def test_a_marker_naming_an_unknown_dataset_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    project(
        pytester,
        TWO,
        tests="import pytest\n\n@pytest.mark.rag_dataset('moons')\n"
        "def test_x(rag_dataset):\n    pass\n",
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*test_x: @pytest.mark.rag_dataset('moons'): no such dataset; the configured ones "
            "are animals, planets*"
        ]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


PER_DATASET_THRESHOLDS = """
import pytest


@pytest.mark.rag_threshold(ndcg_at_10=0.5, dataset="animals")
@pytest.mark.rag_threshold(recall_at_1=0.9, dataset="planets-test")
def test_retrieval(rag_eval, rag_run, rag_dataset):
    rag_eval.retrieval(rag_run, name="overlap")


@pytest.mark.rag_threshold(recall_at_1=0.9)
def test_everywhere(rag_eval, rag_run, rag_dataset):
    rag_eval.retrieval(rag_run, name="overlap")
"""


def test_thresholds_can_be_given_per_dataset(pytester: pytest.Pytester) -> None:
    """A rag_threshold marker with dataset= binds only the instances on that dataset (by name
    or name-split); one without binds all. The overlap retriever has recall@1 1.0 on planets
    and 0.0 on animals (nDCG@10 0.5655), so recall_at_1=0.9 fails exactly where it applies."""
    project(pytester, TWO, tests=PER_DATASET_THRESHOLDS)
    result = pytester.runpytest("-rA", "-p", "no:randomly")
    outcomes = {
        line.split()[1]: line.split()[0]
        for line in result.stdout.lines
        if line.startswith(("PASSED ", "FAILED "))
    }
    assert outcomes == {
        "test_rag.py::test_retrieval[animals-test]": "PASSED",
        "test_rag.py::test_retrieval[planets-test]": "PASSED",
        "test_rag.py::test_everywhere[animals-test]": "FAILED",
        "test_rag.py::test_everywhere[planets-test]": "PASSED",
    }


def test_a_threshold_for_an_unknown_dataset_is_a_collection_error(
    pytester: pytest.Pytester,
) -> None:
    project(
        pytester,
        TWO,
        tests="import pytest\n\n@pytest.mark.rag_threshold(recall_at_1=0.5, dataset='moons')\n"
        "def test_x(rag_eval, rag_run, rag_dataset):\n    rag_eval.retrieval(rag_run)\n",
    )
    result = pytester.runpytest()
    result.stdout.fnmatch_lines(
        [
            "*rag_threshold(dataset='moons'): no such dataset is configured "
            "(configured: animals, planets)*"
        ]
    )
    assert result.ret == pytest.ExitCode.INTERRUPTED


PARTIAL_TESTS = """
import pytest


def test_retrieval(rag_eval, rag_run, rag_dataset):
    rag_eval.retrieval(rag_run, name="overlap")


@pytest.mark.rag_dataset("animals")
def test_animals_only(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="overlap")
"""


def test_a_row_missing_a_pair_shows_a_dash_and_no_mean(pytester: pytest.Pytester) -> None:
    """The issue's case: an evaluation on one of two datasets. Its mean over the one it has
    (here 0.5655) would sit beside the two-dataset mean as if it compared with it."""
    project(pytester, TWO, PARTIAL_TESTS)
    result = pytester.runpytest(
        "--ragmetrics-json=report.json", "--ragmetrics-markdown=r.md", "--ragmetrics-html=r.html"
    )
    result.assert_outcomes(passed=3)
    result.stdout.fnmatch_lines(
        [
            "ndcg_at_10*animals-test*planets-test*mean",
            "*",
            "test_rag.py::test_animals_only [[]overlap[]] *0.5655 *- *-",
            "test_rag.py::test_retrieval [[]overlap[]] *0.5655 *1.0000 *0.7827",
            "",
            "- means no value on that pair; a row with one has no mean*",
        ]
    )
    table = json.loads((pytester.path / "report.json").read_text())["summary"]["by_dataset"]
    rows = {row["evaluation"]: row for row in table["ndcg_at_10"]["rows"]}
    partial = rows["test_rag.py::test_animals_only [overlap]"]
    assert partial["mean"] is None and partial["missing"] == ["planets-test"]
    assert rows["test_rag.py::test_retrieval [overlap]"]["mean"] == pytest.approx(0.78277, 1e-4)
    markdown = (pytester.path / "r.md").read_text()
    assert "| test_rag.py::test_animals_only [overlap] | **0.5655** | - | - |" in markdown
    assert "| test_rag.py::test_retrieval [overlap] | **0.5655** | 1.0000 | 0.7827 |" in markdown
    assert "Best value per column in bold; - means no value on that pair;" in markdown
    # The HTML report has the same table (and so does a page drawn from the JSON report).
    from pytest_ragmetrics.report.html import html_report, read_report_page
    from tests.helpers.html_documents import ParsedPage, cell_texts

    for page in (
        (pytester.path / "r.html").read_text(encoding="utf-8"),
        html_report(read_report_page(pytester.path / "report.json")),
    ):
        rows = cell_texts(ParsedPage(page), "grid")
        assert ["test_rag.py::test_animals_only [overlap]", "0.5655", "-", "-"] in rows
        assert ["test_rag.py::test_retrieval [overlap]", "0.5655", "1.0000", "0.7827"] in rows
        assert "<b><bdi>0.5655</bdi></b>" in page
        assert '<a href="#tables1">Per dataset</a>' in page
        assert "Best value per column in bold; - means no value on that pair;" in page


ONE = {"test_rag.py::test_per_query[q1]", "test_rag.py::test_per_query[q2]"}
PETS_AND_PLANETS = {
    "test_rag.py::test_per_query[pets-test-q1]",
    "test_rag.py::test_per_query[pets-test-q2]",
    *(f"test_rag.py::test_per_query[planets-test-m{i}]" for i in (1, 2, 3)),
}


@pytest.mark.parametrize(
    ("config", "args", "ids"),
    [
        ("pyproject.toml", ["--ragmetrics-dataset", "data/my animals"], ONE),
        (
            "pyproject.toml",
            ["--ragmetrics-dataset=pets=data/my animals", "--ragmetrics-dataset=data/planets"],
            PETS_AND_PLANETS,
        ),
        ("pyproject.toml", ["-o", 'ragmetrics_dataset="data/my animals"'], ONE),
        ("[tool.pytest.ini_options]\nragmetrics_dataset = \"'data/my animals'\"\n", [], ONE),
        (
            "[tool.pytest.ini_options]\n"
            'ragmetrics_dataset = ["pets=data/my animals", "data/planets"]\n',
            [],
            PETS_AND_PLANETS,
        ),
        ('[tool.pytest]\nragmetrics_dataset = ["data/my animals"]\n', [], ONE),
        ('[pytest]\nragmetrics_dataset = "data/my animals"\n', [], ONE),
    ],
    ids=["flag", "flags", "override", "ini-quoted", "ini-list", "native-list", "pytest.ini"],
)
def test_a_dataset_folder_may_have_spaces(
    pytester: pytest.Pytester, config: str, args: list[str], ids: set[str]
) -> None:
    """A folder with a space was split in two ('.../my: dataset folder not found') however it
    was given: one flag value, an ini list item, a quoted ini value."""
    project(pytester, 'ragmetrics_dataset = "nope"\n', tests=PER_QUERY)
    (pytester.path / "data" / "animals").rename(pytester.path / "data" / "my animals")
    if config.startswith("[pytest]"):
        pytester.makefile(".ini", pytest=config)  # makeini writes tox.ini, after pyproject
    elif config != "pyproject.toml":
        pytester.makepyprojecttoml(config)
    collected = pytester.runpytest("--collect-only", "-q", *args)
    assert collected.ret == pytest.ExitCode.OK, collected.stdout.str() + collected.stderr.str()
    assert {line for line in collected.stdout.lines if line.startswith("test_rag.py")} == ids
    pytester.runpytest(*args).assert_outcomes(passed=len(ids))


def test_one_flag_value_is_one_folder(pytester: pytest.Pytester) -> None:
    """Several datasets in one --ragmetrics-dataset value: the error says to repeat the flag."""
    project(pytester, "", tests=PER_QUERY)
    result = pytester.runpytest("--ragmetrics-dataset=a=data/animals b=data/planets")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        [
            "*--ragmetrics-dataset: no folder 'data/animals b=data/planets'; each value names "
            "one folder*several --ragmetrics-dataset flags"
        ]
    )


def test_the_native_table_asks_for_a_list(pytester: pytest.Pytester) -> None:
    """pytest 9's [tool.pytest] table keeps TOML types: a shell-split key takes a list there,
    and the error says so (not the "write true or false" of an on/off key)."""
    project(pytester, "", tests=PER_QUERY)
    pytester.makepyprojecttoml('[tool.pytest]\nragmetrics_dataset = "data/animals"\n')
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "'ragmetrics_dataset' expects a list for type 'args'" in result.stderr.str()
    assert "true or false" not in result.stderr.str()


PER_QUERY = """
def test_per_query(rag_query):
    assert rag_query.ranking
"""
