"""Judge noise: the same answers judged ``repeats`` times (an HTTP judge with another seed each
time, at its temperature), how often each verdict agrees with itself, and how far the metric
means move between repeats.

An **item** is one verdict of one answer: a claim's support, the answer's relevance, its
agreement with the reference, one context's relevance. Its **agreement** is the share of the
repeats that gave the majority verdict (1.0: always the same). An item is **unstable** when its
agreement is below 1. A metric's **noise** is the spread (max - min) of its mean over the
repeats: a baseline drop no larger than that is "within judge noise", not a regression.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ragmetrics.data.assessments import AnswerAssessment
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.base import check_repeats
from pytest_ragmetrics.judges.protocols import Judge

SHOWN_UNSTABLE = 5


def configured_repeats(judge: Any, repeats: int | None) -> int:
    """``repeats`` if given, else the judge's own ``repeats`` (ragmetrics_judge_repeats for
    the rag_judge fixture's), else 1; checked to be a positive integer."""
    if repeats is None:
        repeats = getattr(judge, "repeats", 1)
    return check_repeats(repeats)


def repeat_judges(judge: Judge, repeats: int) -> tuple[list[Judge], list[int]]:
    """The judges of ``repeats`` judgings: ``judge`` and, when it has ``with_seed``, copies
    with the next seeds (else the same deterministic judge again); and their seeds."""
    check_repeats(repeats)
    with_seed = getattr(judge, "with_seed", None)
    seed = getattr(judge, "seed", 0)
    if not callable(with_seed) or not isinstance(seed, int):
        return [judge] * repeats, []
    seeds = [seed + i for i in range(repeats)]
    return [judge, *(with_seed(s) for s in seeds[1:])], seeds


def repeat_context_judges(context_judge: Any, repeats: int) -> tuple[list[Any], list[int]]:
    """The separate context judge of each repeat (None: the judge asks the context question
    itself), re-seeded as :func:`repeat_judges` re-seeds the judge."""
    if context_judge is None:
        return [None] * repeats, []
    return repeat_judges(context_judge, repeats)


@dataclass(frozen=True)
class JudgeNoise:
    """What ``repeats`` judgings of the same answers showed (see the module docstring)."""

    repeats: int
    items: int
    agreement: Mapping[str, float]  # item key -> share of repeats giving the majority verdict
    metric_means: Mapping[str, tuple[float, ...]]  # metric -> its mean in each repeat
    seeds: tuple[int, ...] = ()
    unstable: tuple[str, ...] = field(default=())

    @property
    def noise(self) -> dict[str, float]:
        """Per metric: max - min of its mean over the repeats (NaN means skipped)."""
        out: dict[str, float] = {}
        for metric, means in self.metric_means.items():
            finite = [m for m in means if not math.isnan(m)]
            out[metric] = (max(finite) - min(finite)) if finite else 0.0
        return out

    @property
    def mean_agreement(self) -> float:
        """The items' agreement, averaged (1.0 when there are no items)."""
        return sum(self.agreement.values()) / len(self.agreement) if self.agreement else 1.0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready: repeats, seeds, item counts, per-metric noise and means, unstable items."""
        return {
            "repeats": self.repeats,
            "seeds": list(self.seeds),
            "items": self.items,
            "unstable_items": len(self.unstable),
            "mean_agreement": round(self.mean_agreement, 6),
            "noise": {m: round(v, 6) for m, v in self.noise.items()},
            "metric_means": {m: [round(v, 6) for v in vs] for m, vs in self.metric_means.items()},
            "unstable": list(self.unstable),
        }

    def describe(self) -> str:
        """One line for the terminal notes."""
        shown = ", ".join(self.unstable[:SHOWN_UNSTABLE])
        more = ", ..." if len(self.unstable) > SHOWN_UNSTABLE else ""
        spread = ", ".join(f"{m} ±{v:.4f}" for m, v in self.noise.items())
        text = (
            f"judge noise over {self.repeats} repeats: {len(self.unstable)} of {self.items} "
            f"verdicts unstable (mean agreement {self.mean_agreement:.3f})"
        )
        if shown:
            text += f" [{shown}{more}]"
        return text + (f"; metric spread {spread}" if spread else "")


def verdict_items(assessment: AnswerAssessment) -> dict[str, bool | int | None]:
    """Every verdict of one assessment, keyed ``query_id/kind[/which]``."""
    qid = assessment.query_id
    items: dict[str, bool | int | None] = {}
    for i, claim in enumerate(assessment.claims):
        items[f"{qid}/claim/{i}"] = claim.supported
    if assessment.addresses_question is not None:
        items[f"{qid}/relevance"] = assessment.addresses_question
    if assessment.correctness is not None:
        items[f"{qid}/correctness"] = assessment.correctness.value
    for verdict in assessment.context_verdicts:
        items[f"{qid}/context/{verdict.subject}"] = verdict.value
    return items


def measure_noise(
    repeats: Sequence[Sequence[AnswerAssessment]],
    metrics: Sequence[str],
    seeds: Sequence[int] = (),
) -> JudgeNoise:
    """Agreement per item and spread per metric over ``repeats`` judgings of the same answers
    (each a list of assessments with the same query ids)."""
    from pytest_ragmetrics.metrics.answer import evaluate_answers

    if len(repeats) < 2:
        raise JudgeError(f"judge noise needs at least 2 repeats, got {len(repeats)}")
    per_repeat = [
        {k: v for a in assessments for k, v in verdict_items(a).items()} for assessments in repeats
    ]
    keys = list(dict.fromkeys(k for found in per_repeat for k in found))
    agreement: dict[str, float] = {}
    for key in keys:
        votes = Counter(found.get(key) for found in per_repeat)
        agreement[key] = votes.most_common(1)[0][1] / len(repeats)
    means: dict[str, list[float]] = {m: [] for m in metrics}
    for assessments in repeats:
        evaluation = evaluate_answers(list(assessments), list(metrics))
        for metric in metrics:
            means[metric].append(float(evaluation.mean[metric]))
    unstable = tuple(k for k in keys if agreement[k] < 1.0)
    return JudgeNoise(
        len(repeats),
        len(keys),
        agreement,
        {m: tuple(v) for m, v in means.items()},
        tuple(seeds),
        unstable,
    )
