"""End-of-test checks: thresholds, the judge-kappa gate and the baseline comparison."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ragmetrics.baseline import UPDATE_HINT, BaselineStore
from pytest_ragmetrics.metrics.names import parse_metric
from pytest_ragmetrics.recorder import RecordedEvaluation
from pytest_ragmetrics.regression import compare_to_baseline, failure_message
from pytest_ragmetrics.settings import Settings


@dataclass(frozen=True)
class CheckContext:
    """What the checks need from the session."""

    settings: Settings
    baseline: BaselineStore
    describe_dataset_change: Callable[[RecordedEvaluation, Mapping[str, Any]], dict[str, str]]
    judge_kappa: Callable[[Mapping[str, Any]], float | None]


def _layer_name(layer: str) -> str:
    return "answer-layer" if layer == "answer" else "retrieval"


def apply_late_thresholds(
    recorded: Sequence[RecordedEvaluation], thresholds: Mapping[str, float]
) -> list[str]:
    """Give each evaluation the thresholds of its layer that were set after it was recorded.

    A marker added while the test ran (``request.node.add_marker``) counts; if it names a
    metric the evaluation did not compute, that is a failure saying so, never a silent pass.
    """
    failures: list[str] = []
    for item in recorded:
        for metric, bound in thresholds.items():
            if parse_metric(metric).layer != item.layer or metric in item.thresholds:
                continue
            if metric in item.evaluation.metrics:
                item.thresholds[metric] = bound
            else:
                failures.append(
                    f"rag_threshold({metric}={bound:g}) was added after {_layer_name(item.layer)} "
                    f"evaluation '{item.name}' of {item.test} was recorded, and that evaluation "
                    f"did not compute {metric}. Add the marker before the evaluation (as a "
                    "decorator, or request.node.add_marker(...) before rag_eval), or pass "
                    f"metrics=[{metric!r}] to it."
                )
    return failures


def check_test(
    recorded: Sequence[RecordedEvaluation],
    thresholds: Mapping[str, float],
    context: CheckContext,
) -> list[str]:
    """Check every evaluation a test recorded; fill their ``outcome``; return failure texts."""
    settings = context.settings
    failures: list[str] = []
    layers = {r.layer for r in recorded}
    for metric in thresholds:
        layer = parse_metric(metric).layer
        if layer not in layers:
            failures.append(
                f"rag_threshold({metric}={thresholds[metric]:g}) is set but the test recorded no "
                f"{_layer_name(layer)} evaluation; call "
                f"{'rag_eval.answers(...)' if layer == 'answer' else 'rag_eval.retrieval(...)'} "
                "in the test"
            )
    for item in recorded:
        gate = _judge_gate(item, settings, context.judge_kappa)
        if gate:
            item.outcome["gate"] = gate
        results = []
        for metric, bound in item.thresholds.items():
            value = item.evaluation.mean.get(metric, math.nan)
            passed = not math.isnan(value) and value >= bound
            results.append(
                {
                    "metric": metric,
                    "value": None if math.isnan(value) else value,
                    "threshold": bound,
                    "passed": passed,
                }
            )
            if not passed and not gate:
                shown = "n/a (no query had a value)" if math.isnan(value) else f"{value:.4f}"
                failures.append(
                    f"rag_threshold: {_layer_name(item.layer)} evaluation '{item.name}' of "
                    f"{item.test}: {metric} = {shown} < threshold {bound:g}. Improve the "
                    "pipeline, or lower the threshold in @pytest.mark.rag_threshold(...) if "
                    "the bar was wrong."
                )
        if results:
            item.outcome["thresholds"] = results
        entry = context.baseline.get(item.test, item.name)
        change = context.describe_dataset_change(item, entry) if entry else {}
        verdict = compare_to_baseline(
            item, entry, settings.tolerances, alpha=settings.alpha, dataset_change=change
        )
        item.outcome["baseline"] = verdict.to_dict()
        if settings.update_baseline or gate:
            continue
        if verdict.status in ("regressed", "not comparable"):
            failures.append(failure_message(item, verdict, settings.display(settings.baseline)))
        elif verdict.status == "new" and settings.strict:
            failures.append(
                f"ragmetrics: '{item.name}' ({item.test}) has no baseline entry in "
                f"{settings.display(settings.baseline)} and --ragmetrics-strict is on. What to "
                f"do: record one with {UPDATE_HINT} and commit the baseline file."
            )
    return failures


def _judge_gate(
    item: RecordedEvaluation,
    settings: Settings,
    judge_kappa: Callable[[Mapping[str, Any]], float | None],
) -> str:
    """Why this answer evaluation may not fail the test ('' when it may)."""
    bound = settings.min_judge_kappa
    if item.layer != "answer" or bound is None:
        return ""
    judge = item.identity.get("judge")
    if not judge:
        return (
            f"no single judge identity is known, and ragmetrics_min_judge_kappa = {bound:g} "
            "requires a calibrated judge: thresholds and baseline are not enforced"
        )
    kappa = judge_kappa(judge)
    name = judge.get("name", "judge") if isinstance(judge, Mapping) else "judge"
    if kappa is None:
        return (
            f"judge {name!r} has no calibration in {settings.calibration} (run `ragmetrics "
            "calibrate --save`); thresholds and baseline are not enforced"
        )
    if kappa < bound:
        return (
            f"judge {name!r} has Cohen's kappa {kappa:.3f} < ragmetrics_min_judge_kappa "
            f"{bound:g}; thresholds and baseline are not enforced"
        )
    return ""
