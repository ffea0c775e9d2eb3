"""compare_systems without the CLI: runs read, evaluated on the same judgments, each against the
first, with Δ over the queries both hold and the queries that moved most."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_ragmetrics.baseline.tolerances import parse_tolerances
from pytest_ragmetrics.comparison import (
    compare_systems,
    load_judgments,
    load_systems,
    rank_move,
    read_input,
)
from pytest_ragmetrics.errors import ConfigError

QRELS = "q1 0 d1 1\nq2 0 d2 1\nq3 0 d3 1\nq4 0 d4 1\n"
GOOD = "".join(f"q{i} Q0 d{i} 1 2.0 good\nq{i} Q0 x{i} 2 1.0 good\n" for i in range(1, 5))
# q1 and q2 lose their relevant document to rank 2; q3 and q4 are as GOOD has them
WORSE = "".join(
    f"q{i} Q0 x{i} 1 2.0 worse\nq{i} Q0 d{i} 2 1.0 worse\n" for i in range(1, 3)
) + "".join(f"q{i} Q0 d{i} 1 2.0 worse\n" for i in range(3, 5))


def _files(tmp_path: Path) -> tuple[str, str, str]:
    qrels, good, worse = tmp_path / "qrels.txt", tmp_path / "good.run", tmp_path / "worse.run"
    qrels.write_text(QRELS)
    good.write_text(GOOD)
    worse.write_text(WORSE)
    return str(qrels), str(good), str(worse)


def test_each_run_is_compared_with_the_first(tmp_path: Path) -> None:
    qrels, good, worse = _files(tmp_path)
    judgments = load_judgments(qrels, None, None)
    systems = load_systems(
        [read_input(good), read_input(worse)], judgments=judgments, metrics=["mrr", "recall_at_1"]
    )
    assert [s.kind for s in systems] == ["run", "run"]
    assert [s.record.evaluation.mean["mrr"] for s in systems] == [1.0, 0.75]
    comparison = compare_systems(systems, parse_tolerances(["0.01"]), judgments=judgments)
    (versus,) = comparison.versus
    assert comparison.reference is systems[0] and versus.system is systems[1]
    by_metric = {m.metric: m for m in versus.verdict.metrics}
    assert by_metric["mrr"].delta == -0.25 and by_metric["recall_at_1"].delta == -0.5
    assert by_metric["mrr"].comparison is not None
    assert (by_metric["mrr"].comparison.worse, by_metric["mrr"].comparison.same) == (2, 2)
    assert versus.failed and comparison.failed == [versus]
    moved = [c.query for c in versus.most_changed["mrr"]]
    assert moved[:2] == ["q1", "q2"] and all(c.delta == -0.5 for c in versus.most_changed["mrr"])


def test_one_run_is_not_a_comparison(tmp_path: Path) -> None:
    qrels, good, _ = _files(tmp_path)
    judgments = load_judgments(qrels, None, None)
    systems = load_systems([read_input(good)], judgments=judgments, metrics=["mrr"])
    with pytest.raises(ConfigError, match="at least two runs"):
        compare_systems(systems, parse_tolerances(["0.01"]))


def test_runs_need_judgments(tmp_path: Path) -> None:
    _, good, worse = _files(tmp_path)
    with pytest.raises(ConfigError):
        load_systems([read_input(good), read_input(worse)], judgments=None, metrics=["mrr"])


@pytest.mark.parametrize(
    ("before", "after", "text"),
    [(7, 1, "7 → 1"), (1, 0, "1 → none"), (0, 3, "none → 3"), (None, 2, ""), (4, None, "")],
)
def test_rank_move(before: int | None, after: int | None, text: str) -> None:
    assert rank_move(before, after) == text
