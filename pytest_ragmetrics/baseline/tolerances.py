"""Tolerances: how far a metric may drop before it regresses (absolute or relative, per metric)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pytest_ragmetrics.errors import ConfigError, MetricError
from pytest_ragmetrics.metrics.names import in_unit_interval, parse_metrics
from pytest_ragmetrics.values import parse_float, split_list


@dataclass(frozen=True)
class Tolerance:
    """How far a metric may drop: absolute, or relative to the baseline value."""

    value: float
    relative: bool = False

    def allowed_drop(self, baseline: float) -> float:
        return self.value * abs(baseline) if self.relative else self.value

    def __str__(self) -> str:
        return f"{self.value * 100:g}%" if self.relative else f"{self.value:g}"


@dataclass(frozen=True)
class Tolerances:
    default: Tolerance = Tolerance(0.01)
    per_metric: Mapping[str, Tolerance] = field(default_factory=dict)

    def for_metric(self, metric: str) -> Tolerance:
        return self.per_metric.get(metric, self.default)

    def check_used(self, compared: Iterable[str], where: str) -> None:
        """A ConfigError naming the per-metric tolerances for none of the metrics ``compared``:
        ``--tolerance map_at_100=0.5`` with map compared alone would be silently unused."""
        compared = list(dict.fromkeys(compared))
        unused = [f"{m}={t}" for m, t in self.per_metric.items() if m not in compared]
        if unused:
            raise ConfigError(
                f"{where}: {', '.join(unused)} names a metric that is not compared here (the "
                f"metrics compared: {', '.join(compared) or 'none'}); drop it, or compare that "
                "metric"
            )


def _parse_one_tolerance(text: str, where: str, unit_interval: bool = True) -> Tolerance:
    """One tolerance; ``unit_interval``: the metrics it applies to lie in [0, 1], so an
    absolute one of 1 or more would let them fall to 0 unchecked (a typo for a percentage)."""
    raw = text.strip()
    relative = raw.endswith("%")
    number = raw[:-1] if relative else raw
    try:
        value = parse_float(number, where)
    except ConfigError:
        raise ConfigError(
            f"{where}: {text!r} is not a tolerance; write 0.01 (absolute) or 2% (relative)"
        ) from None
    if not math.isfinite(value) or value < 0:
        raise ConfigError(f"{where}: tolerance {text!r} must be a non-negative number")
    if relative and value > 100:  # more than the whole value may be lost: a typo, not a gate
        raise ConfigError(
            f"{where}: tolerance {text!r} lets a metric lose more than its whole value; a "
            "relative tolerance is at most 100% (100% already lets it fall to 0)"
        )
    if unit_interval and not relative and value >= 1:
        raise ConfigError(
            f"{where}: an absolute tolerance of {text!r} lets a metric in [0, 1] fall to 0 "
            "unchecked"
            + (f"; did you mean {raw}% (relative) or {value / 100:g}?" if value <= 100 else "")
        )
    return Tolerance(value / 100 if relative else value, relative)


def parse_tolerances(items: Sequence[str], where: str = "ragmetrics_tolerance") -> Tolerances:
    """Parse ``0.01 ndcg_at_10=0.005 recall_at_100=2%``."""
    default = Tolerance(0.01)
    per_metric: dict[str, Tolerance] = {}
    given_as: dict[str, str] = {}  # metric name (or "" for the default) -> the item that set it
    items = split_list(items)
    _refuse_detached_percent(items, where)
    for item in items:
        if "=" in item:
            metric, _, value = item.partition("=")
            try:
                spec = parse_metrics([metric])[0]
            except MetricError as exc:
                raise ConfigError(f"{where}: {exc}") from None
            name = spec.name
            if name in given_as:
                raise ConfigError(
                    f"{where}: {given_as[name]} and {item} set the tolerance of {name} twice; "
                    "give it once"
                )
            given_as[name] = item
            per_metric[name] = _parse_one_tolerance(
                value, f"{where} ({name})", in_unit_interval(spec)
            )
        else:
            if "" in given_as:  # the last would win: which one was meant is not known
                raise ConfigError(
                    f"{where}: {given_as['']} and {item} both set the tolerance of every "
                    "metric; give it once"
                )
            given_as[""] = item
            default = _parse_one_tolerance(item, where)
    return Tolerances(default, per_metric)


def _refuse_detached_percent(items: Sequence[str], where: str) -> None:
    """``2 %`` is two items, ``2`` (an absolute tolerance, refused as "lets a metric fall to
    0") and ``%``: name the space instead."""
    for i, item in enumerate(items):
        if item.startswith("%"):
            before = f"{items[i - 1]} {item}" if i else item
            joined = f"{items[i - 1]}{item}" if i else f"{item[1:] or 2}%"
            raise ConfigError(
                f"{where}: {before!r}: a % goes right after its number, no space between "
                f"(write {joined})"
            )
