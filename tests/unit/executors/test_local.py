"""LocalExecutor: results in the order of the items, at most ``concurrency`` calls at a time, and
the first failing item's error (in item order, not the order the calls failed in)."""

from __future__ import annotations

import time

import pytest

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.executors import Executor, LocalExecutor
from tests.helpers.concurrency import InFlight


@pytest.mark.parametrize("concurrency", [1, 3, 16])
def test_results_come_back_in_item_order(concurrency: int) -> None:
    def slow_square(x: int) -> int:
        time.sleep(0.001 * (7 - x % 7))  # later items often finish first
        return x * x

    executor = LocalExecutor(concurrency)
    assert isinstance(executor, Executor)
    assert executor.map(slow_square, list(range(20))) == [x * x for x in range(20)]


def test_no_more_calls_in_flight_than_the_limit() -> None:
    limited, serial = InFlight(0.05), InFlight(0.05)
    LocalExecutor(8).map(lambda _: limited.wait(), list(range(12)), concurrency=3)
    LocalExecutor(1).map(lambda _: serial.wait(), list(range(4)))
    assert (limited.peak, serial.peak) == (3, 1)


def test_the_first_failing_item_is_the_error_raised() -> None:
    """Item 1 fails after item 4 has already failed: item 1's error is the one raised."""

    def call(x: int) -> int:
        if x == 1:
            time.sleep(0.05)
            raise ValueError("item 1")
        if x == 4:
            raise ValueError("item 4")
        return x

    with pytest.raises(ValueError, match="item 1"):
        LocalExecutor(5).map(call, list(range(6)))


@pytest.mark.parametrize("bad", [0, -1, 1.5, True, "2"])
def test_a_concurrency_that_is_no_positive_integer_is_refused(bad: object) -> None:
    with pytest.raises(ConfigError, match="concurrency"):
        LocalExecutor(bad)  # type: ignore[arg-type]
    with pytest.raises(ConfigError, match="concurrency"):
        LocalExecutor().map(abs, [1, 2], concurrency=bad)  # type: ignore[arg-type]
