"""Calibration records for tests that need a judge calibrated at a given kappa: figures that
follow from their confusion counts, as the gate requires of a record it reads."""

from __future__ import annotations

from typing import Any

from pytest_ragmetrics.judges.calibration import CalibrationResult
from pytest_ragmetrics.judges.calibration.figures import agreement_of_counts

# Balanced labels: kappa = 2 * accuracy - 1, so tp = tn = (1 + kappa) * N / 4 is whole for any
# kappa written with up to four decimals.
_N = 40_000


def result_at_kappa(
    judge: dict[str, Any], kappa: float, labels: dict[str, Any] | None = None
) -> CalibrationResult:
    """A calibration of ``judge`` whose kappa is ``kappa`` (balanced labels, n 40,000)."""
    agree = round((1 + kappa) * _N / 4)
    found = agreement_of_counts(
        {"tp": agree, "tn": agree, "fp": _N // 2 - agree, "fn": _N // 2 - agree}
    )
    assert abs(found.kappa - kappa) < 1e-12, (kappa, found.kappa)
    return CalibrationResult(
        judge=judge,
        labels=labels or {"n": _N},
        n=found.n,
        accuracy=found.accuracy,
        kappa=found.kappa,
        confusion=found.confusion,
    )
