"""Judges for the answer layer (loaded on first use).

What a judge can do: ``protocols`` (assess answers, judge claims, answer relevance, agreement,
contexts) and
``relevance`` (is this passage relevant to this question? its pair and verdict types and
protocols); what the built-in judges share: ``base`` (identities, claim splitting, the verdict
cache). The judges, by backend: ``embedding`` and ``embedding_relevance`` (over ``embedder``,
the model), ``http`` and ``http_relevance`` (over ``yes_no``, the questions to an endpoint),
``recorded`` (verdicts replayed from files); ``factory`` builds one by kind. Judging answers:
``answers`` (every answer-layer question), ``many`` (fanned out), ``planning`` (a dry run),
``noise`` (repeats); ``calibration`` (agreement with human labels). What judges say (Claim,
AnswerAssessment) is data: :mod:`pytest_ragmetrics.data.assessments`, re-exported here.
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, read_assessments
    from pytest_ragmetrics.judges.base import VerdictCache, identity_hash, split_sentences
    from pytest_ragmetrics.judges.calibration import (
        Agreement,
        AgreementLabels,
        CalibrationResult,
        LabelledAnswer,
        LabelledClaim,
        LabelledResponse,
        agreement,
        calibrate,
        calibrate_agreement,
        calibrate_answer_relevance,
        cohen_kappa,
        load_calibration,
        load_kappa,
        read_agreement_labels,
        read_answer_relevance_labels,
        read_claim_labels,
        save_calibration,
    )
    from pytest_ragmetrics.judges.embedding import EmbeddingJudge
    from pytest_ragmetrics.judges.embedding_relevance import EmbeddingRelevanceJudge
    from pytest_ragmetrics.judges.factory import build_judge, build_relevance_judge
    from pytest_ragmetrics.judges.http import HttpJudge
    from pytest_ragmetrics.judges.http_relevance import HttpRelevanceJudge
    from pytest_ragmetrics.judges.many import assess_many
    from pytest_ragmetrics.judges.protocols import (
        AgreementJudge,
        AnswerRelevanceJudge,
        BatchClaimJudge,
        ClaimJudge,
        ContextJudge,
        Judge,
        ThresholdJudge,
    )
    from pytest_ragmetrics.judges.recorded import RecordedJudge, RecordedRelevanceJudge
    from pytest_ragmetrics.judges.relevance import RelevanceJudge, RelevancePair, RelevanceVerdict
    from pytest_ragmetrics.vocabulary import JUDGE_KINDS

_EXPORTS = {
    "Agreement": "pytest_ragmetrics.judges.calibration",
    "AgreementLabels": "pytest_ragmetrics.judges.calibration",
    "AnswerAssessment": "pytest_ragmetrics.data.assessments",
    "AgreementJudge": "pytest_ragmetrics.judges.protocols",
    "AnswerRelevanceJudge": "pytest_ragmetrics.judges.protocols",
    "BatchClaimJudge": "pytest_ragmetrics.judges.protocols",
    "CalibrationResult": "pytest_ragmetrics.judges.calibration",
    "Claim": "pytest_ragmetrics.data.assessments",
    "ClaimJudge": "pytest_ragmetrics.judges.protocols",
    "ContextJudge": "pytest_ragmetrics.judges.protocols",
    "EmbeddingJudge": "pytest_ragmetrics.judges.embedding",
    "EmbeddingRelevanceJudge": "pytest_ragmetrics.judges.embedding_relevance",
    "HttpRelevanceJudge": "pytest_ragmetrics.judges.http_relevance",
    "RecordedRelevanceJudge": "pytest_ragmetrics.judges.recorded",
    "RelevanceJudge": "pytest_ragmetrics.judges.relevance",
    "RelevancePair": "pytest_ragmetrics.judges.relevance",
    "RelevanceVerdict": "pytest_ragmetrics.judges.relevance",
    "build_relevance_judge": "pytest_ragmetrics.judges.factory",
    "HttpJudge": "pytest_ragmetrics.judges.http",
    "JUDGE_KINDS": "pytest_ragmetrics.vocabulary",
    "Judge": "pytest_ragmetrics.judges.protocols",
    "LabelledAnswer": "pytest_ragmetrics.judges.calibration",
    "LabelledClaim": "pytest_ragmetrics.judges.calibration",
    "LabelledResponse": "pytest_ragmetrics.judges.calibration",
    "RecordedJudge": "pytest_ragmetrics.judges.recorded",
    "ThresholdJudge": "pytest_ragmetrics.judges.protocols",
    "VerdictCache": "pytest_ragmetrics.judges.base",
    "agreement": "pytest_ragmetrics.judges.calibration",
    "assess_many": "pytest_ragmetrics.judges.many",
    "build_judge": "pytest_ragmetrics.judges.factory",
    "calibrate": "pytest_ragmetrics.judges.calibration",
    "calibrate_agreement": "pytest_ragmetrics.judges.calibration",
    "calibrate_answer_relevance": "pytest_ragmetrics.judges.calibration",
    "cohen_kappa": "pytest_ragmetrics.judges.calibration",
    "identity_hash": "pytest_ragmetrics.judges.base",
    "load_calibration": "pytest_ragmetrics.judges.calibration",
    "load_kappa": "pytest_ragmetrics.judges.calibration",
    "read_assessments": "pytest_ragmetrics.data.assessments",
    "read_agreement_labels": "pytest_ragmetrics.judges.calibration",
    "read_answer_relevance_labels": "pytest_ragmetrics.judges.calibration",
    "read_claim_labels": "pytest_ragmetrics.judges.calibration",
    "save_calibration": "pytest_ragmetrics.judges.calibration",
    "split_sentences": "pytest_ragmetrics.judges.base",
}
__all__ = [
    "JUDGE_KINDS",
    "Agreement",
    "AgreementJudge",
    "AgreementLabels",
    "AnswerAssessment",
    "AnswerRelevanceJudge",
    "BatchClaimJudge",
    "CalibrationResult",
    "Claim",
    "ClaimJudge",
    "ContextJudge",
    "EmbeddingJudge",
    "EmbeddingRelevanceJudge",
    "HttpJudge",
    "HttpRelevanceJudge",
    "Judge",
    "LabelledAnswer",
    "LabelledClaim",
    "LabelledResponse",
    "RecordedJudge",
    "RecordedRelevanceJudge",
    "RelevanceJudge",
    "RelevancePair",
    "RelevanceVerdict",
    "ThresholdJudge",
    "VerdictCache",
    "agreement",
    "assess_many",
    "build_judge",
    "build_relevance_judge",
    "calibrate",
    "calibrate_agreement",
    "calibrate_answer_relevance",
    "cohen_kappa",
    "identity_hash",
    "load_calibration",
    "load_kappa",
    "read_agreement_labels",
    "read_answer_relevance_labels",
    "read_assessments",
    "read_claim_labels",
    "save_calibration",
    "split_sentences",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
