"""End-of-test checks of every evaluation a test recorded: its thresholds, the judge-κ gate and
the baseline comparison. Each gives an :class:`EvaluationOutcome` and, when the test must fail,
a message that says what to do."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.messages import compact_message
from pytest_ragmetrics.baseline.store import UPDATE_HINT
from pytest_ragmetrics.baseline.verdicts import failure_message
from pytest_ragmetrics.metrics.names import parse_metric
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.report.escaping import for_terminal as one_line
from pytest_ragmetrics.report.outcome import Checked, EvaluationOutcome, ThresholdResult

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.verdicts import BaselineVerdict
    from pytest_ragmetrics.plugin.session import RagSession


def _layer_name(layer: str) -> str:
    return "answer-layer" if layer == "answer" else "retrieval"


# Given an evaluation's name and query ids, the texts of those queries the test knows.
QueryTexts = Callable[[str, Iterable[str]], Mapping[str, str]]


def check_test(
    recorded: Sequence[EvaluationRecord],
    thresholds: Mapping[str, float],
    session: RagSession,
    *,
    texts: QueryTexts | None = None,
    verbose: bool = False,
) -> tuple[list[Checked], list[str]]:
    """Check every evaluation a test recorded; their outcomes, and the failure texts.

    ``thresholds`` are the test's markers as they are now: a threshold added while the test
    ran applies to the evaluations recorded before it (or fails saying it could not). A
    regression's text is the short one unless ``verbose`` (pytest -v); the outcome keeps the
    full one. ``texts`` gives the queries' texts shown beside the most regressed ones.
    """
    failures: list[str] = []
    checked: list[Checked] = []
    for record in recorded:
        record, late = _with_late_thresholds(record, thresholds)
        failures += late
        outcome, messages = check_evaluation(record, session, texts=texts, verbose=verbose)
        checked.append(Checked(record, outcome))
        failures += messages
    return checked, failures


def unrecorded_entries(
    test: str, recorded: Sequence[EvaluationRecord], session: RagSession
) -> list[str]:
    """The names of the baseline entries of ``test`` that it ran without recording: their
    values are lost (a layer or an evaluation the test no longer makes)."""
    from pytest_ragmetrics.errors import BaselineError

    try:
        named = session.baseline().entries.get(test) or {}
    except BaselineError:
        return []  # a broken baseline fails the tests that compare with it, saying so
    names = {r.name for r in recorded}
    return [name for name in named if name not in names]


def unrecorded_message(test: str, names: Sequence[str], session: RagSession) -> str:
    """The failure text of a test that no longer records evaluations its baseline holds."""
    baseline = session.baseline()
    settings = session.settings
    lines = [
        f"ragmetrics: {one_line(test)} no longer records {len(names)} evaluation"
        f"{'s' if len(names) != 1 else ''} that the baseline in "
        f"{settings.display(settings.baseline)} holds: their values are lost, not skipped:"
    ]
    for name in names:
        entry = baseline.get(test, name) or {}
        metrics = [m for m, v in (entry.get("metrics") or {}).items() if v is not None]
        layer = entry.get("layer", "retrieval")
        call = "rag_eval.answers" if layer == "answer" else "rag_eval.retrieval"
        queries = len(entry.get("per_query") or {})
        lines.append(
            f"  '{one_line(name)}' ({_layer_name(layer)}, {queries} queries): "
            f"{', '.join(metrics) or 'no metric with a value'} (recorded by {call}(..., "
            f"name={one_line(repr(name))}))"
        )
    lines.append(
        "What to do: if the test should still make it, find why it did not (a branch that "
        "skipped the call, a renamed evaluation); if dropping it is intended, bless with "
        f"{UPDATE_HINT}, which removes the entry, and commit the baseline."
    )
    return "\n".join(lines)


def check_evaluation(
    record: EvaluationRecord,
    session: RagSession,
    *,
    texts: QueryTexts | None = None,
    verbose: bool = False,
) -> tuple[EvaluationOutcome, list[str]]:
    """One evaluation's outcome and the failure messages it gives its test."""
    settings = session.settings
    gated = gated_metrics(record, session)
    gate = ""
    if gated and set(gated) >= set(record.evaluation.metrics):
        # Nothing of this evaluation may fail its test: one gate for all of it.
        reasons = list(dict.fromkeys(gated.values()))
        gate = reasons[0] if len(reasons) == 1 else "; ".join(f"{m}: {r}" for m, r in gated.items())
        gated = {}
    results = tuple(
        ThresholdResult.check(metric, record.evaluation.mean.get(metric, float("nan")), bound)
        for metric, bound in record.thresholds.items()
    )
    failures = (
        []
        if gate
        else [
            _threshold_message(record, r)
            for r in results
            # A metric not computed failed its late marker, with its own message.
            if not r.passed and r.metric not in gated and r.metric in record.evaluation.metrics
        ]
    )
    entry = session.baseline().get(record.test, record.name)
    change = session.explain_dataset_change(record, entry) if entry else {}
    verdict = compare_to_baseline(
        record,
        entry,
        settings.tolerances,
        alpha=settings.alpha,
        dataset_change=change,
        unjudged_drops=settings.unjudged_drops,
        not_enforced=gated,
    )
    outcome = EvaluationOutcome(results, verdict, gate, not_enforced=gated)
    if settings.update_baseline or gate:
        return outcome, failures
    baseline_path = settings.display(settings.baseline)
    if verdict.status in ("regressed", "not comparable"):
        named = [q for m in verdict.failed_metrics for q, *_ in m.worst]
        shown = texts(record.name, named) if texts is not None and named else {}
        full = failure_message(record, verdict, baseline_path, texts=shown)
        outcome = dataclasses.replace(outcome, message=full)
        failures.append(
            full if verbose else compact_message(record, verdict, baseline_path, texts=shown)
        )
    if settings.strict:
        failures += _strict_failures(record, verdict, baseline_path)
    return outcome, failures


def _strict_failures(
    record: EvaluationRecord, verdict: BaselineVerdict, baseline_path: str
) -> list[str]:
    """What ragmetrics_strict fails besides regressions: an evaluation with no baseline entry,
    and metrics the run computes that its entry lacks (not compared, so not gated)."""
    what = (
        f"What to do: record {{}} with {UPDATE_HINT} and commit what it lists (the baseline "
        "file and the dataset digests beside it)."
    )
    if verdict.status == "new":
        return [
            f"ragmetrics: '{record.name}' ({record.test}) has no baseline entry in "
            f"{baseline_path} and --ragmetrics-strict is on. " + what.format("one")
        ]
    new = verdict.metrics_not_in_baseline
    if not new:
        return []
    return [
        f"ragmetrics: '{record.name}' ({record.test}): {len(new)} metric"
        f"{'s' if len(new) != 1 else ''} not in its baseline entry in {baseline_path}, not "
        f"compared: {', '.join(new)}; --ragmetrics-strict is on. " + what.format("them")
    ]


def _threshold_message(record: EvaluationRecord, result: ThresholdResult) -> str:
    shown = "n/a (no query had a value)" if result.value is None else f"{result.value:.4f}"
    if result.value is not None and float(shown) >= result.threshold:
        # Four decimals would print 0.5000 < threshold 0.5000001: as many as tell them apart.
        shown = f"{result.value:.12g}"
    return (
        f"rag_threshold: {_layer_name(record.layer)} evaluation '{record.name}' of "
        f"{record.test}: {result.metric} = {shown} < threshold {result.threshold:.12g}. Improve "
        "the pipeline, or lower the threshold in @pytest.mark.rag_threshold(...) if the bar "
        "was wrong."
    )


def thresholds_without_evaluation(
    recorded: Sequence[EvaluationRecord], thresholds: Mapping[str, float]
) -> list[str]:
    """A threshold of a layer the test recorded nothing of can never be checked: say so (the
    test fails, and the reports list it: no evaluation of theirs carries it)."""
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
    metric the evaluation did not compute, that is a failure saying so, never a silent pass,
    and the threshold stays on the record (no value: failed), so the reports show it failed.
    """
    added = dict(record.thresholds)
    failures = []
    for metric, bound in thresholds.items():
        if parse_metric(metric).layer != record.layer or metric in record.thresholds:
            continue
        added[metric] = bound
        if metric not in record.evaluation.metrics:
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


def gated_metrics(record: EvaluationRecord, session: RagSession) -> dict[str, str]:
    """Per answer-layer metric of ``record`` that may not fail its test, why: the calibrated
    κ of the question that decided it is unknown or below ``ragmetrics_min_judge_kappa``.
    Each metric has its question: the judge's own claim-support question for groundedness,
    the answer-relevance question ("does this answer address the question?") for
    answer_relevance, the agreement question for answer_correctness against free-text
    references, the context question for context_relevance (the evaluation's
    ``identity["questions"]``, which judge_answers fills; ``ragmetrics calibrate --question
    support|answer-relevance|agreement|relevance --save`` calibrates each). Assessments
    recorded without the answer-relevance question's identity (not judged by judge_answers)
    leave answer_relevance unenforced: a claim-support κ says nothing of it. Label references
    are matched by an exact rule: never gated."""
    bound = session.settings.min_judge_kappa
    if record.layer != "answer" or bound is None:
        return {}
    questions = record.identity.get("questions") or {}
    judge = record.identity.get("judge")
    reasons: dict[str, str] = {}
    for metric in record.evaluation.metrics:
        identity = questions.get(metric, judge)
        if metric == "answer_relevance" and metric not in questions:
            reason = _unknown_relevance_question(identity, bound, session)
        else:
            reason = _question_gate(identity, bound, session)
        if reason:
            reasons[metric] = reason
    return reasons


def _unknown_relevance_question(identity: object, bound: float, session: RagSession) -> str:
    """Why answer-relevance verdicts recorded without their question's identity may not fail
    a test under the gate."""
    from pytest_ragmetrics.judges.calibration.store import calibrate_command

    if isinstance(identity, Mapping) and identity.get("exact"):
        return ""
    name = identity.get("name", "judge") if isinstance(identity, Mapping) else "judge"
    command = calibrate_command({"name": f"{name}-answer-relevance"}, _calibration(session))
    return (
        f"judge {name!r} asks whether an answer addresses the question, and these assessments "
        "do not record that question's identity, so no calibration vouches for it "
        f"(ragmetrics_min_judge_kappa = {bound:g}); judge the answers with judge_answers and "
        f"run `{command}`: thresholds and baseline are not enforced"
    )


def _question_gate(identity: object, bound: float, session: RagSession) -> str:
    """Why verdicts of the question with this identity may not fail a test ('' when they may)."""
    if not isinstance(identity, Mapping) or not identity:
        return (
            f"no single judge identity is known, and ragmetrics_min_judge_kappa = {bound:g} "
            "requires a calibrated judge: thresholds and baseline are not enforced"
        )
    if identity.get("exact"):
        return ""
    from pytest_ragmetrics.judges.calibration.store import gate_advice

    why = session.judge_gate(identity, bound)
    if not why:
        return ""
    name = identity.get("name", "judge")
    advice = gate_advice(identity, why, _calibration(session))
    return f"judge {name!r} {why} ({advice}); thresholds and baseline are not enforced"


def _calibration(session: RagSession) -> str:
    """The calibration file the gate reads, as messages name it."""
    return session.settings.display(session.settings.calibration)
