"""Supplementary qrels say which dataset they were made for (issue 24 class 8): judge-pool
writes the corpus fingerprint of the pool's dataset, labels made for another corpus are
refused naming the file and both fingerprints, a file without it (the old format) is read
with a note that it cannot be checked, and labels of unknown documents get the note human
qrels get."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.pooling import HEADER_PREFIX, read_supplementary_qrels
from pytest_ragmetrics.provenance import DATASET_PREFIX
from tests.helpers.plugin_project import make_project, write_dataset
from tests.unit.test_pooling import CONFTEST, JUDGE, TESTS, dataset, files, run


def judged_labels(tmp_path: Path, data: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    """pool --dataset, then judge-pool with recorded verdicts: the supplementary qrels."""
    f = files(tmp_path)
    pool = tmp_path / "pool.jsonl"
    code, _, err = run(
        ["pool", "--dataset", str(data), "--run", str(f["a"]), "--depth", "3",
         "--out", str(pool)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"query_id": r["query_id"], "doc_id": r["doc_id"], "relevant": True}) + "\n"
            for r in map(json.loads, pool.read_text().splitlines())
        )
    )
    labels = tmp_path / "supp.qrels"
    code, _, err = run(
        ["judge-pool", "--pool", str(pool), "--judge", "recorded", "--verdicts", str(verdicts),
         "--qrels-out", str(labels), "--no-cache"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    return labels


def test_judge_pool_records_the_corpus_and_evaluate_refuses_another(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(tmp_path)
    labels = judged_labels(tmp_path, data, capsys)
    fingerprint = load_dataset(data).corpus.fingerprint
    assert labels.read_text().splitlines()[1] == DATASET_PREFIX + json.dumps(
        {"corpus": fingerprint}
    )
    assert read_supplementary_qrels(labels).dataset == {"corpus": fingerprint}
    f = files(tmp_path)
    args = ["--run", str(f["a"]), "--supplementary-qrels", str(labels), "--format", "json"]
    code, out, err = run(["evaluate", "--dataset", str(data), *args], capsys)
    assert code == 0, err
    assert json.loads(out)["supplemented"]["labels_used"] == 3  # q1 d3, d4; q2 d9 (-1)
    # Another collection: the same query ids, other documents.
    other = tmp_path / "other"
    other.mkdir()
    moved = dataset(other)
    corpus = moved / "corpus.jsonl"
    corpus.write_text(corpus.read_text().replace("fish swim", "fish swim fast"))
    code, out, err = run(["evaluate", "--dataset", str(moved), *args], capsys)
    assert code != 0
    assert str(labels) in err
    assert fingerprint[:16] in err
    assert load_dataset(moved).corpus.fingerprint[:16] in err
    assert "made for a dataset whose corpus fingerprint is" in err


def test_the_old_format_is_still_read(tmp_path: Path) -> None:
    path = tmp_path / "old.qrels"
    path.write_text(HEADER_PREFIX + json.dumps(JUDGE) + "\nq1 0 d4 1\n")
    read = read_supplementary_qrels(path)
    assert read.dataset is None and read.qrels.to_dict() == {"q1": {"d4": 1}}


def test_a_pool_mixing_datasets_cannot_be_written_as_one_file(tmp_path: Path) -> None:
    from pytest_ragmetrics.errors import DataFormatError
    from pytest_ragmetrics.pooling import PoolEntry, write_supplementary_qrels

    rows = [
        PoolEntry("q1", "d1", relevant=True, dataset={"corpus": "a" * 64}),
        PoolEntry("q1", "d2", relevant=True, dataset={"corpus": "b" * 64}),
    ]
    with pytest.raises(DataFormatError, match="2 different datasets"):
        write_supplementary_qrels(tmp_path / "s.qrels", rows)


# -- the plugin ------------------------------------------------------------------------------

INI = 'ragmetrics_supplementary_qrels = "supp.qrels"\n'


def plugin_project(pytester: pytest.Pytester, labels: str) -> None:
    make_project(pytester, tests=TESTS, conftest=textwrap.dedent(CONFTEST), ini=INI)
    (pytester.path / "supp.qrels").write_text(labels)


def test_labels_of_another_collection_get_notes_not_silence(pytester: pytest.Pytester) -> None:
    """The issue's case: the same query ids, documents x1..x3 this corpus does not have."""
    body = "".join(f"q{q} 0 x{d} 1\n" for q in range(1, 5) for d in range(1, 4))
    plugin_project(pytester, HEADER_PREFIX + json.dumps(JUDGE) + "\n" + body)
    result = pytester.runpytest("--ragmetrics-json=report.json")
    result.assert_outcomes(passed=1)
    (evaluation,) = json.loads((pytester.path / "report.json").read_text())["evaluations"]
    notes = "\n".join(evaluation["notes"])
    assert "supp.qrels: the file does not say which dataset its labels were made for" in notes
    assert (
        "supp.qrels: 12 judged documents are not in the corpus (stale labels); they count as "
        "relevant but can never be retrieved"
    ) in notes


def test_labels_made_for_another_corpus_are_refused(pytester: pytest.Pytester) -> None:
    other = "0123456789abcdef" * 4
    header = HEADER_PREFIX + json.dumps(JUDGE) + "\n"
    header += DATASET_PREFIX + json.dumps({"corpus": other}) + "\n"
    plugin_project(pytester, header + "q1 0 d4 1\n")
    mine = load_dataset(write_dataset(pytester.path)).corpus.fingerprint
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*ragmetrics_supplementary_qrels: *supp.qrels: the labels were made for a dataset "
            f"whose corpus fingerprint is {other[:16]}, but this dataset's corpus is "
            f"{mine[:16]}*"
        ]
    )


def test_labels_made_for_this_corpus_are_used_without_a_note(
    pytester: pytest.Pytester,
) -> None:
    mine = load_dataset(write_dataset(pytester.path)).corpus.fingerprint
    header = HEADER_PREFIX + json.dumps(JUDGE) + "\n"
    header += DATASET_PREFIX + json.dumps({"corpus": mine}) + "\n"
    plugin_project(pytester, header + "q1 0 d4 1\nq2 0 d5 1\n")
    result = pytester.runpytest("--ragmetrics-json=report.json")
    result.assert_outcomes(passed=1)
    (evaluation,) = json.loads((pytester.path / "report.json").read_text())["evaluations"]
    assert evaluation["supplemented"]["labels_used"] == 2
    assert not [n for n in evaluation["notes"] if n.startswith("supp.qrels")]
