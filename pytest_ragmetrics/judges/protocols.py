"""What a judge can do, as protocols: assess an answer (:class:`Judge`), give verdicts on given
claims (:class:`ClaimJudge`, :class:`BatchClaimJudge`, :class:`ThresholdJudge`), judge answers
against the question (:class:`AnswerRelevanceJudge`) and against references
(:class:`AgreementJudge`), and contexts against the question (:class:`ContextJudge`). The
relevance judges' protocols are with their pair and verdict types in
:mod:`~pytest_ragmetrics.judges.relevance`."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict

Contexts = Sequence[str] | Mapping[str, str]


@runtime_checkable
class Judge(Protocol):
    """Anything that assesses an answer against the contexts the generator was given."""

    def assess(
        self, query: str, answer: str, contexts: Contexts, *, query_id: str | None = None
    ) -> AnswerAssessment:
        """Split ``answer`` into claims, judge each against ``contexts``, and judge relevance."""
        ...

    def identity(self) -> dict[str, Any]:
        """What determines the verdicts: name, model, rubric, rubric_sha256, parameters."""
        ...


@runtime_checkable
class ClaimJudge(Judge, Protocol):
    """A judge that can also give verdicts on given claims (what calibration needs)."""

    def judge_claims(self, claims: Sequence[str], contexts: Contexts) -> list[Claim]:
        """One verdict per claim, in order."""
        ...


@runtime_checkable
class BatchClaimJudge(ClaimJudge, Protocol):
    """A claim judge that is cheaper asked many questions at once (an embedding model)."""

    def judge_claims_many(
        self, requests: Sequence[tuple[Sequence[str], Contexts]]
    ) -> list[list[Claim]]:
        """``judge_claims(claims, contexts)`` for every (claims, contexts) pair."""
        ...


@runtime_checkable
class ThresholdJudge(ClaimJudge, Protocol):
    """A claim judge whose verdict is ``score >= threshold``; calibration can tune it."""

    @property
    def threshold(self) -> float:
        """The score at or above which a claim is supported."""
        ...

    def with_threshold(self, threshold: float) -> ThresholdJudge:
        """The same judge with another threshold (and so another identity)."""
        ...


@runtime_checkable
class AgreementJudge(Protocol):
    """Judges whether answers agree with reference answers."""

    def judge_agreement(self, items: Sequence[tuple[str, str, str]]) -> list[Verdict]:
        """One verdict per (question, answer, reference)."""
        ...


@runtime_checkable
class AnswerRelevanceJudge(Protocol):
    """Judges whether answers address their questions, as its ``assess`` does (what
    calibration asks of it)."""

    def judge_answer_relevance(self, items: Sequence[tuple[str, str]]) -> list[Verdict]:
        """One verdict per (question, answer)."""
        ...


@runtime_checkable
class ContextJudge(Protocol):
    """Judges whether each context is relevant to the question."""

    def judge_contexts(self, items: Sequence[tuple[str, Contexts]]) -> list[list[Verdict]]:
        """Per (question, contexts), one verdict per context."""
        ...


__all__ = [
    "AgreementJudge",
    "AnswerRelevanceJudge",
    "BatchClaimJudge",
    "ClaimJudge",
    "ContextJudge",
    "Contexts",
    "Judge",
    "ThresholdJudge",
]
