"""Calibration: how well a judge agrees with human labels, and where that is recorded (loaded on
first use).

One module per question: ``support`` (is this claim supported by this context?),
``answer_relevance`` (does this answer address the question?), ``references`` (does the answer
agree with the reference?) and ``relevance`` (is this passage relevant to the question?);
``answer_questions`` (what calibrating the two yes/no questions about an answer shares);
``figures`` (agreement, Cohen's kappa, the threshold tuned on one seeded part of the labels and
scored on the other, :class:`CalibrationResult`) and ``store`` (the calibration file, per judge
identity, that a gate reads to refuse a judge whose kappa is too low).
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.judges.calibration.answer_relevance import (
        ANSWER_RELEVANCE_LABELS,
        LabelledResponse,
        calibrate_answer_relevance,
        read_answer_relevance_labels,
    )
    from pytest_ragmetrics.judges.calibration.figures import (
        Agreement,
        CalibrationResult,
        agreement,
        cohen_kappa,
    )
    from pytest_ragmetrics.judges.calibration.references import (
        AgreementLabels,
        LabelledAnswer,
        calibrate_agreement,
        read_agreement_labels,
    )
    from pytest_ragmetrics.judges.calibration.relevance import (
        RELEVANCE_LABELS,
        LabelledPair,
        calibrate_relevance,
        relevance_labels,
        retrieved_relevance_labels,
    )
    from pytest_ragmetrics.judges.calibration.store import (
        CALIBRATION_SCHEMA,
        load_calibration,
        load_kappa,
        save_calibration,
    )
    from pytest_ragmetrics.judges.calibration.support import (
        LabelledClaim,
        calibrate,
        read_claim_labels,
    )

_ANSWER_RELEVANCE = "pytest_ragmetrics.judges.calibration.answer_relevance"
_FIGURES = "pytest_ragmetrics.judges.calibration.figures"
_REFERENCES = "pytest_ragmetrics.judges.calibration.references"
_RELEVANCE = "pytest_ragmetrics.judges.calibration.relevance"
_STORE = "pytest_ragmetrics.judges.calibration.store"
_SUPPORT = "pytest_ragmetrics.judges.calibration.support"
_EXPORTS = {
    "ANSWER_RELEVANCE_LABELS": _ANSWER_RELEVANCE,
    "LabelledResponse": _ANSWER_RELEVANCE,
    "calibrate_answer_relevance": _ANSWER_RELEVANCE,
    "read_answer_relevance_labels": _ANSWER_RELEVANCE,
    "Agreement": _FIGURES,
    "CalibrationResult": _FIGURES,
    "agreement": _FIGURES,
    "cohen_kappa": _FIGURES,
    "AgreementLabels": _REFERENCES,
    "LabelledAnswer": _REFERENCES,
    "calibrate_agreement": _REFERENCES,
    "read_agreement_labels": _REFERENCES,
    "RELEVANCE_LABELS": _RELEVANCE,
    "LabelledPair": _RELEVANCE,
    "calibrate_relevance": _RELEVANCE,
    "relevance_labels": _RELEVANCE,
    "retrieved_relevance_labels": _RELEVANCE,
    "CALIBRATION_SCHEMA": _STORE,
    "load_calibration": _STORE,
    "load_kappa": _STORE,
    "save_calibration": _STORE,
    "LabelledClaim": _SUPPORT,
    "calibrate": _SUPPORT,
    "read_claim_labels": _SUPPORT,
}
__all__ = [
    "ANSWER_RELEVANCE_LABELS",
    "CALIBRATION_SCHEMA",
    "RELEVANCE_LABELS",
    "Agreement",
    "AgreementLabels",
    "CalibrationResult",
    "LabelledAnswer",
    "LabelledClaim",
    "LabelledPair",
    "LabelledResponse",
    "agreement",
    "calibrate",
    "calibrate_agreement",
    "calibrate_answer_relevance",
    "calibrate_relevance",
    "cohen_kappa",
    "load_calibration",
    "load_kappa",
    "read_agreement_labels",
    "read_answer_relevance_labels",
    "read_claim_labels",
    "relevance_labels",
    "retrieved_relevance_labels",
    "save_calibration",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
