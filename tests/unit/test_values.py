"""Numbers given in code or JSON: numpy scalars are numbers, huge ints are out of range (not an
OverflowError), bools are not numbers."""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics import Qrels, Run, evaluate
from pytest_ragmetrics.errors import ConfigError, DataFormatError, JudgeError
from pytest_ragmetrics.judges.embedder import check_cosine
from pytest_ragmetrics.plugin.recording import parse_thresholds
from pytest_ragmetrics.values import finite_number, non_negative, real_number, shown


@pytest.mark.parametrize(
    ("value", "number"),
    [
        (0.5, 0.5),
        (2, 2.0),
        (np.float32(0.5), 0.5),
        (np.float64(0.25), 0.25),
        (np.int64(3), 3.0),
        (Fraction(1, 4), 0.25),
        (10**400, math.inf),
        (-(10**400), -math.inf),
        (Fraction(-(10**400), 3), -math.inf),
    ],
)
def test_real_numbers_in_any_numeric_type(value: Any, number: float) -> None:
    assert real_number(value) == number
    assert finite_number(value) == (number if math.isfinite(number) else None)


@pytest.mark.parametrize("value", [True, np.bool_(True), "0.5", None, [0.5], 1j])
def test_what_is_not_a_real_number(value: Any) -> None:
    assert real_number(value) is None and finite_number(value) is None


def test_thresholds_from_numpy_and_out_of_range_ints() -> None:
    assert parse_thresholds({"ndcg_at_10": np.float32(0.5), "mrr": np.int64(1)}) == {
        "ndcg_at_10": 0.5,
        "mrr": 1.0,
    }
    with pytest.raises(
        ConfigError, match=r"ndcg_at_10=1000000000000000000000000000000000000\.\.\. "
    ):
        parse_thresholds({"ndcg_at_10": 10**400})
    with pytest.raises(ConfigError, match="an integer too long to print is outside"):
        parse_thresholds({"ndcg_at_10": -(10**5000)})
    with pytest.raises(ConfigError, match=r"np.True_ is not a number"):
        parse_thresholds({"ndcg_at_10": np.bool_(True)})


def test_range_checks_refuse_huge_ints_by_name() -> None:
    with pytest.raises(JudgeError, match="threshold must be a cosine"):
        check_cosine(10**400, "threshold")
    assert check_cosine(np.float32(0.5), "threshold") == 0.5
    with pytest.raises(ConfigError, match="cpus must be a finite number >= 0, got 10000"):
        non_negative(10**400, "cpus")
    with pytest.raises(ConfigError, match="got inf"):
        non_negative(math.inf, "cpus")
    assert non_negative(np.float32(0.5), "cpus") == 0.5
    assert shown("x" * 100).endswith("...") and len(shown("x" * 100)) == 40


QRELS = {"q1": {"d1": 1, "d2": 0}}


@pytest.mark.parametrize(
    ("score", "shown_as", "why"),
    [
        (True, "True", "is not a number"),
        (np.bool_(False), "np.False_", "is not a number"),
        ("0.5", "'0.5'", "is not a number"),  # numpy alone read it as 0.5
        (None, "None", "is not a number"),  # numpy alone read it as NaN
        # Shown as it was given, or as the inf it is as a float: either names it.
        (10**400, "(1000000000000000000000000000000000000...|inf)", "is not a finite number"),
        (float("inf"), "inf", "is not a finite number"),
    ],
    ids=["True", "np.False_", "str", "None", "10**400", "inf"],
)
@pytest.mark.parametrize("form", ["dict", "Run.from_dict", "Run.from_rankings"])
def test_a_score_that_is_no_finite_number_is_refused_in_every_form(
    score: Any, shown_as: str, why: str, form: str
) -> None:
    message = f"run: score {shown_as} of document 'd1' for query 'q1' {why}"
    if not shown_as.startswith("("):
        message = re.escape(message)
    with pytest.raises(DataFormatError, match=message):
        if form == "Run.from_rankings":
            Run.from_rankings({"q1": [("d1", score), ("d2", 0.1)]})
        else:
            results = {"q1": {"d2": 0.1, "d1": score}}
            evaluate(QRELS, Run.from_dict(results) if form == "Run.from_dict" else results)


def test_numpy_scores_and_grades_are_numbers() -> None:
    results = {"q1": {"d1": np.float32(0.5), "d2": np.float16(0.25)}}
    found = evaluate({"q1": {"d1": np.int64(1), "d2": 0}}, results, ["precision_at_1"])
    assert found.mean == {"precision_at_1": 1.0}
    with pytest.raises(DataFormatError, match=r"grade an integer too long to print .* range"):
        Qrels.from_dict({"q1": {"d1": 10**5000}})
