"""The calibration file: results recorded per judge identity (atomically, under a lock), read
back by the kappa gate."""

from __future__ import annotations

import json
import math
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.fileio import atomic_write_text, exclusive_lock, read_json_file
from pytest_ragmetrics.judges.base import identity_hash
from pytest_ragmetrics.judges.calibration.figures import CalibrationResult

PathLike = str | os.PathLike[str]
CALIBRATION_SCHEMA = 1


def _read_store(path: Path) -> dict[str, Any]:
    try:
        data = read_json_file(
            path,
            what="calibration file",
            error=JudgeError,
            hint="delete it and run `ragmetrics calibrate --save` again",
        )
    except FileNotFoundError:
        return {"schema": CALIBRATION_SCHEMA, "judges": {}}
    if (
        not isinstance(data, dict)
        or not isinstance(data.get("judges"), dict)
        or data.get("schema") != CALIBRATION_SCHEMA
    ):
        raise JudgeError(
            f"{path}: not a calibration file of schema {CALIBRATION_SCHEMA}; delete it and run "
            "`ragmetrics calibrate --save` again"
        )
    return data


def save_calibration(path: PathLike, result: CalibrationResult, *, hint: str = "") -> None:
    """Record ``result`` in the calibration file at ``path`` under its judge identity's hash.

    Other judges' records are kept; the write is atomic and locked against concurrent saves.
    A refused write is an OutputError naming the file, with ``hint`` (how to save elsewhere).
    """
    target = Path(path)
    what = "calibration file"
    with exclusive_lock(target.with_name(f".{target.name}.lock"), what=what, hint=hint):
        store = _read_store(target)
        store["judges"][result.judge_key] = result.to_dict()
        text = json.dumps(store, indent=2, sort_keys=True) + "\n"
        atomic_write_text(target, text, what=what, hint=hint)


def load_calibration(path: PathLike, judge_identity: Mapping[str, Any]) -> CalibrationResult | None:
    """The recorded calibration of the judge with this identity, or None."""
    store = _read_store(Path(path))
    entry = store["judges"].get(identity_hash(judge_identity))
    if entry is None:
        return None
    try:
        return CalibrationResult.from_dict(entry)
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise JudgeError(
            f"{path}: the calibration record of judge {judge_identity.get('name')!r} is "
            f"malformed ({exc!r}); run `ragmetrics calibrate --save` again"
        ) from None


def load_kappa(path: PathLike, judge_identity: Mapping[str, Any]) -> float | None:
    """The recorded kappa of this judge; None if it was never calibrated or its kappa was
    undefined (a gate must then refuse it: NaN would compare as "not below" any bound)."""
    result = load_calibration(path, judge_identity)
    if result is None or math.isnan(result.kappa):
        return None
    return result.kappa


__all__ = ["CALIBRATION_SCHEMA", "load_calibration", "load_kappa", "save_calibration"]
