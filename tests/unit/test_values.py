"""Numbers given in code or JSON: numpy scalars are numbers, huge ints are out of range (not an
OverflowError), bools are not numbers."""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.errors import ConfigError, JudgeError
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
