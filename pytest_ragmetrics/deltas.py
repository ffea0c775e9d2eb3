"""The one rule for a change Δ = now - before: how it is computed, when it is better, worse or
tied, and how it is written.

Every comparison (the plugin's baseline verdict, ``ragmetrics compare`` in both forms) and every
renderer (terminal, Markdown, JSON, HTML) uses these functions, so the counts of better and worse
queries agree with the Δ shown next to them:

- both values are taken at the precision reports and baselines store (:data:`DIGITS` digits),
  and so is their difference: a value that only lost its rounding digits is unchanged;
- a Δ that is 0 at that precision is *tied* (never better or worse), and is written ``0.0000``
  with no sign, never ``-0.0000``;
- any other Δ is written with its sign, with more digits when four would make it look like 0
  (``-0.00003``), so a query counted as worse never shows a Δ of zero.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt

DIGITS = 6  # stored values are rounded so baseline diffs in code review stay readable
SHOWN = 4  # digits a Δ is written with (more when these would hide a change)
# Marks a Δ taken over other queries than the means shown beside it (see over_other_queries).
OTHER_QUERIES = "†"

Change = Literal["better", "worse", "tied"]


def delta(before: float, now: float) -> float:
    """``now - before`` at the stored precision (NaN when either is NaN); never ``-0.0``."""
    return round(round(float(now), DIGITS) - round(float(before), DIGITS), DIGITS) + 0.0


def deltas(
    before: npt.ArrayLike, now: npt.ArrayLike
) -> np.ndarray[tuple[int], np.dtype[np.float64]]:
    """:func:`delta` element by element."""
    import numpy as np

    b = np.round(np.asarray(before, dtype=np.float64), DIGITS)
    c = np.round(np.asarray(now, dtype=np.float64), DIGITS)
    return np.round(c - b, DIGITS) + 0.0


def change(value: float) -> Change:
    """Whether a Δ (higher is better, as for every metric here) is better, worse or tied."""
    rounded = round(float(value), DIGITS)
    if rounded > 0:
        return "better"
    if rounded < 0:
        return "worse"
    return "tied"  # 0 at the stored precision (NaN has no direction either)


def tally(values: npt.ArrayLike) -> tuple[int, int, int]:
    """(worse, tied, better) among the Δ of ``values`` (NaN ignored), by :func:`change`."""
    import numpy as np

    d = np.round(np.asarray(values, dtype=np.float64), DIGITS)
    d = d[~np.isnan(d)]
    worse, better = int((d < 0).sum()), int((d > 0).sum())
    return worse, len(d) - worse - better, better


def delta_text(value: float | None, digits: int = SHOWN) -> str:
    """A Δ as written everywhere: ``+0.0123``, ``-0.0500``, ``0.0000`` when tied (no sign),
    ``-0.00003`` when four digits would hide a change; ``n/a`` when there is none."""
    if value is None or math.isnan(value):
        return "n/a"
    rounded = round(float(value), DIGITS)
    if change(rounded) == "tied":
        return f"{0.0:.{digits}f}"
    text = f"{rounded:+.{digits}f}"
    if float(text) == 0:
        text = f"{rounded:+.{DIGITS}f}".rstrip("0")
    return text


def same_shown(value: float, mean: float | None) -> bool:
    """Whether two means are equal as far as a report shows (stored to :data:`DIGITS`)."""
    return mean is not None and abs(value - mean) <= 10.0**-DIGITS


def over_other_queries(paired: float, shown: float | None) -> bool:
    """Whether a Δ whose mean over the queries both sides hold is ``paired`` is not the change
    of the mean ``shown`` beside it: the sides hold other queries, so a report marks the Δ
    :data:`OTHER_QUERIES` and gives the paired means (a lost value, NaN, is marked otherwise)."""
    return not math.isnan(paired) and not same_shown(paired, shown)
