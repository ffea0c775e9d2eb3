"""``ragmetrics compare``: plugin verdicts outside pytest."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main


def report(per_query: dict[str, float], metric: str = "ndcg_at_10") -> dict:
    values = list(per_query.values())
    return {
        "schema": "pytest-ragmetrics/report",
        "version": 1,
        "evaluations": [
            {
                "test": "tests/test_x.py::test_dense",
                "name": "dense",
                "layer": "retrieval",
                "identity": {"retriever": {"name": "dense"}},
                "dataset": {"fingerprints": {"corpus": "c", "queries": "q", "qrels": "r"}},
                "k": 10,
                "semantics": {"relevance_level": 1, "gain": "linear", "query_set": "qrels"},
                "metrics": {metric: sum(values) / len(values)},
                "num_queries": len(values),
                "per_query": {q: {metric: v} for q, v in per_query.items()},
                "details": {
                    "first_relevant_rank": {q: 1 if v else 0 for q, v in per_query.items()}
                },
            }
        ],
    }


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    before = report({f"q{i}": 1.0 for i in range(30)})
    after = report({f"q{i}": (0.0 if i < 10 else 1.0) for i in range(30)})
    paths = tmp_path / "before.json", tmp_path / "after.json"
    paths[0].write_text(json.dumps(before))
    paths[1].write_text(json.dumps(after))
    return paths


def test_regression_exits_one_with_the_plugin_message(files: tuple[Path, Path]) -> None:
    code, text = run("compare", str(files[0]), str(files[1]))
    assert code == 1
    row = next(line for line in text.splitlines() if "[dense]" in line)
    assert row.split()[-5:] == ["ndcg_at_10", "1.0000", "0.6667", "-0.3333", "regressed"]
    assert "regressed against the baseline in" in text
    assert "queries: 10 worse, 0 better, 20 unchanged" in text
    assert "most regressed: q0: rank 1 → not retrieved (Δ -1.000)" in text
    assert text.rstrip().endswith("1 evaluations, 1 failed")


def test_same_numbers_exit_zero_and_json_format(files: tuple[Path, Path]) -> None:
    code, text = run("compare", str(files[0]), str(files[0]), "--format", "json")
    assert code == 0
    data = json.loads(text)
    assert data["failed"] == 0
    assert data["evaluations"][0]["status"] == "ok"
    assert data["evaluations"][0]["metrics"][0]["delta"] == 0.0


def test_tolerance_and_markdown(files: tuple[Path, Path]) -> None:
    code, text = run(
        "compare", str(files[0]), str(files[1]), "--tolerance", "50%", "--format", "markdown"
    )
    assert code == 0
    assert "| tests/test_x.py::test_dense [dense] | ndcg_at_10 |" in text


def test_baseline_file_as_before(tmp_path: Path, files: tuple[Path, Path]) -> None:
    entry = copy.deepcopy(report({f"q{i}": 1.0 for i in range(30)})["evaluations"][0])
    test, name = entry.pop("test"), entry.pop("name")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"schema_version": 1, "entries": {test: {name: entry}}}))
    code, _ = run("compare", str(baseline), str(files[1]))
    assert code == 1


def test_not_comparable_exits_one(tmp_path: Path, files: tuple[Path, Path]) -> None:
    other = json.loads(files[1].read_text())
    other["evaluations"][0]["dataset"]["fingerprints"]["qrels"] = "changed"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    code, text = run("compare", str(files[0]), str(path))
    assert code == 1
    assert "is not comparable" in text
    assert "qrels: contents differ" in text


def test_bad_input_exits_two(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"evaluations": [')
    assert run("compare", str(broken), str(files[1]))[0] == 2
    assert "broken.json:1: not valid JSON" in capsys.readouterr().err
    assert run("compare", str(tmp_path / "missing.json"), str(files[1]))[0] == 2
    assert "missing.json: file not found" in capsys.readouterr().err
    assert run("compare", str(files[0]), str(files[1]), "--tolerance", "x")[0] == 2
    assert "--tolerance: 'x' is not a tolerance" in capsys.readouterr().err
