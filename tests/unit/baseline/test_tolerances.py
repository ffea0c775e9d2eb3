"""Tolerances that would switch the gate off are refused; a registered metric's scale is its own."""

from __future__ import annotations

import pytest

from pytest_ragmetrics.baseline.tolerances import Tolerance, parse_tolerances
from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.metrics import register_metric, unregister_metric


@pytest.mark.parametrize("text", ["1", "5", "1.0", "ndcg_at_10=2", "mrr=1e308"])
def test_an_absolute_tolerance_of_one_or_more_is_refused(text: str) -> None:
    with pytest.raises(ConfigError, match=r"lets a metric in \[0, 1\] fall to 0 unchecked"):
        parse_tolerances([text])


def test_below_one_and_relative_tolerances_are_kept() -> None:
    parsed = parse_tolerances(["0.999", "recall_at_100=100%"])
    assert parsed.default == Tolerance(0.999)
    assert parsed.for_metric("recall_at_100") == Tolerance(1.0, relative=True)


def test_a_registered_metric_may_have_a_larger_absolute_tolerance() -> None:
    register_metric("hits_count", lambda ranked, k: [0.0 for _ in ranked], cutoff="none")
    try:
        assert parse_tolerances(["hits_count=3"]).for_metric("hits_count") == Tolerance(3.0)
        with pytest.raises(ConfigError, match="lets a metric in"):
            parse_tolerances(["3"])  # the default applies to the built-in metrics too
    finally:
        unregister_metric("hits_count")


def test_a_percent_sign_apart_from_its_number_is_named_as_such() -> None:
    """The ini's ``ragmetrics_tolerance = "2 %"`` too: "an absolute tolerance of '2'" named a
    value nobody wrote."""
    with pytest.raises(ConfigError, match=r"'2 %': a % goes right after its number.*write 2%"):
        parse_tolerances(["2 %"])
    with pytest.raises(ConfigError, match=r"'%5': a % goes right after .*write 5%\)"):
        parse_tolerances(["%5"])


def test_check_used_names_the_tolerances_for_metrics_not_compared() -> None:
    parsed = parse_tolerances(["0.02 map_at_100=0.5 mrr=2%"])
    parsed.check_used(["map_at_100", "mrr", "map"], "--tolerance")
    with pytest.raises(ConfigError) as error:
        parsed.check_used(["map"], "--tolerance")
    assert str(error.value) == (
        "--tolerance: map_at_100=0.5, mrr=2% names a metric that is not compared here (the "
        "metrics compared: map); drop it, or compare that metric"
    )
