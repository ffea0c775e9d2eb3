"""End-of-test checks of every evaluation a test recorded: its thresholds, the judge-κ gate and
the baseline comparison. Each gives an :class:`EvaluationOutcome` and, when the test must fail,
a message that says what to do."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.store import UPDATE_HINT
from pytest_ragmetrics.baseline.verdicts import failure_message
from pytest_ragmetrics.metrics.names import parse_metric
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.report.outcome import Checked, EvaluationOutcome, ThresholdResult

if TYPE_CHECKING:
    from pytest_ragmetrics.plugin.session import RagSession


def _layer_name(layer: str) -> str:
    return "answer-layer" if layer == "answer" else "retrieval"


def check_test(
    recorded: Sequence[EvaluationRecord],
    thresholds: Mapping[str, float],
    session: RagSession,
) -> tuple[list[Checked], list[str]]:
    """Check every evaluation a test recorded; their outcomes, and the failure texts.

    ``thresholds`` are the test's markers as they are now: a threshold added while the test
    ran applies to the evaluations recorded before it (or fails saying it could not).
    """
    failures = _thresholds_without_evaluation(recorded, thresholds)
    checked: list[Checked] = []
    for record in recorded:
        record, late = _with_late_thresholds(record, thresholds)
        failures += late
        outcome, messages = check_evaluation(record, session)
        checked.append(Checked(record, outcome))
        failures += messages
    return checked, failures


def check_evaluation(
    record: EvaluationRecord, session: RagSession
) -> tuple[EvaluationOutcome, list[str]]:
    """One evaluation's outcome and the failure messages it gives its test."""
    settings = session.settings
    gate = _judge_gate(record, session)
    results = tuple(
        ThresholdResult.check(metric, record.evaluation.mean.get(metric, float("nan")), bound)
        for metric, bound in record.thresholds.items()
    )
    failures = [] if gate else [_threshold_message(record, r) for r in results if not r.passed]
    entry = session.baseline().get(record.test, record.name)
    change = session.explain_dataset_change(record, entry) if entry else {}
    verdict = compare_to_baseline(
        record,
        entry,
        settings.tolerances,
        alpha=settings.alpha,
        dataset_change=change,
        unjudged_drops=settings.unjudged_drops,
    )
    outcome = EvaluationOutcome(results, verdict, gate)
    if settings.update_baseline or gate:
        return outcome, failures
    baseline_path = settings.display(settings.baseline)
    if verdict.status in ("regressed", "not comparable"):
        failures.append(failure_message(record, verdict, baseline_path))
    elif verdict.status == "new" and settings.strict:
        failures.append(
            f"ragmetrics: '{record.name}' ({record.test}) has no baseline entry in "
            f"{baseline_path} and --ragmetrics-strict is on. What to "
            f"do: record one with {UPDATE_HINT} and commit the baseline file."
        )
    return outcome, failures


def _threshold_message(record: EvaluationRecord, result: ThresholdResult) -> str:
    shown = "n/a (no query had a value)" if result.value is None else f"{result.value:.4f}"
    return (
        f"rag_threshold: {_layer_name(record.layer)} evaluation '{record.name}' of "
        f"{record.test}: {result.metric} = {shown} < threshold {result.threshold:g}. Improve "
        "the pipeline, or lower the threshold in @pytest.mark.rag_threshold(...) if the bar "
        "was wrong."
    )


def _thresholds_without_evaluation(
    recorded: Sequence[EvaluationRecord], thresholds: Mapping[str, float]
) -> list[str]:
    """A threshold of a layer the test recorded nothing of can never be checked: say so."""
    layers = {r.layer for r in recorded}
    failures = []
    for metric, bound in thresholds.items():
        layer = parse_metric(metric).layer
        if layer not in layers:
            call = "rag_eval.answers(...)" if layer == "answer" else "rag_eval.retrieval(...)"
            failures.append(
                f"rag_threshold({metric}={bound:g}) is set but the test recorded no "
                f"{_layer_name(layer)} evaluation; call {call} in the test"
            )
    return failures


def _with_late_thresholds(
    record: EvaluationRecord, thresholds: Mapping[str, float]
) -> tuple[EvaluationRecord, list[str]]:
    """The record with the thresholds of its layer that were set after it was recorded.

    A marker added while the test ran (``request.node.add_marker``) counts; if it names a
    metric the evaluation did not compute, that is a failure saying so, never a silent pass.
    """
    added = dict(record.thresholds)
    failures = []
    for metric, bound in thresholds.items():
        if parse_metric(metric).layer != record.layer or metric in record.thresholds:
            continue
        if metric in record.evaluation.metrics:
            added[metric] = bound
        else:
            failures.append(
                f"rag_threshold({metric}={bound:g}) was added after "
                f"{_layer_name(record.layer)} evaluation '{record.name}' of {record.test} was "
                f"recorded, and that evaluation did not compute {metric}. Add the marker "
                "before the evaluation (as a decorator, or request.node.add_marker(...) before "
                f"rag_eval), or pass metrics=[{metric!r}] to it."
            )
    if added == dict(record.thresholds):
        return record, failures
    return record.with_thresholds(added), failures


def _judge_gate(record: EvaluationRecord, session: RagSession) -> str:
    """Why this answer evaluation may not fail the test ('' when it may)."""
    settings = session.settings
    bound = settings.min_judge_kappa
    if record.layer != "answer" or bound is None:
        return ""
    judge = record.identity.get("judge")
    if not judge:
        return (
            f"no single judge identity is known, and ragmetrics_min_judge_kappa = {bound:g} "
            "requires a calibrated judge: thresholds and baseline are not enforced"
        )
    kappa = session.judge_kappa(judge)
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
