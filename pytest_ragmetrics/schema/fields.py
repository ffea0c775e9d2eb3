"""The building blocks of the document checks: what a JSON value must be, said in words."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from pytest_ragmetrics.vocabulary import VERDICT_STATUSES

# JSON integers are unbounded; the values we keep are counts, ranks and cutoffs.
MAX_INT = 2**63 - 1


def is_int(value: Any, *, low: int = -MAX_INT - 1, high: int = MAX_INT) -> bool:
    """An int (not a bool) within [low, high]."""
    return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high


def is_number(value: Any) -> bool:
    """A finite int or float (not a bool) that converts to a finite float."""
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return -MAX_INT - 1 <= value <= MAX_INT
    return isinstance(value, float) and math.isfinite(value)


def number_map(value: Any, field: str, *, nullable: bool) -> str | None:
    wanted = f"{field!r} must map metric names to numbers"
    if not isinstance(value, Mapping):
        return wanted
    for key, item in value.items():
        if item is None and nullable:
            continue
        if not is_number(item):
            return f"{wanted} ({field}[{key!r}] is {short(item)})"
    return None


def short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# -- the outcome and the report's own fields ----------------------------------------------------
# A field's check: (test, what it must be). ``_problem`` applies a spec to an object.
Check = tuple[Callable[[Any], bool], str]


def _is_str(value: Any) -> bool:
    return isinstance(value, str)


def _strings(value: Any) -> bool:
    return isinstance(value, list) and all(isinstance(v, str) for v in value)


def optional(check: Check) -> Check:
    test, wanted = check
    return (lambda v: v is None or test(v)), f"{wanted} or null"


STRING: Check = (_is_str, "a string")
STRINGS: Check = (_strings, "a list of strings")
NUMBER: Check = (is_number, "a number")
COUNT: Check = (lambda v: is_int(v, low=0), "a non-negative integer")
INTEGER: Check = (is_int, "an integer")
BOOLEAN: Check = (lambda v: isinstance(v, bool), "true or false")
OBJECT: Check = (lambda v: isinstance(v, Mapping), "an object")
LIST: Check = (lambda v: isinstance(v, list), "a list")
STATUS: Check = (lambda v: v in VERDICT_STATUSES, f"one of {', '.join(VERDICT_STATUSES)}")


def problem_of(
    data: Any, spec: Mapping[str, Check], where: str, required: Sequence[str] = ()
) -> str | None:
    """What is wrong with the object ``data`` (at ``where``, e.g. 'outcome.') by ``spec``."""
    if not isinstance(data, Mapping):
        return f"{where.rstrip('.') or 'the document'!r} must be an object"
    for key in required:
        if key not in data:
            return f"'{where}{key}' is missing"
    for key, (test, wanted) in spec.items():
        if key in data and not test(data[key]):
            return f"'{where}{key}' must be {wanted} (it is {short(data[key])})"
    return None


def each(values: Any, check: Callable[[Any, str], str | None], where: str) -> str | None:
    """The first problem of a list's items (``check(item, 'where[i].')``)."""
    if not isinstance(values, list):
        return f"'{where}' must be a list"
    for i, value in enumerate(values):
        problem = check(value, f"{where}[{i}].")
        if problem:
            return problem
    return None


def pairs_problem(values: Any, check: Check, where: str) -> str | None:
    """``values`` must map strings to what ``check`` accepts."""
    test, wanted = check
    if not isinstance(values, Mapping):
        return f"'{where}' must be an object"
    for key, value in values.items():
        if not test(value):
            return f"'{where}[{key!r}]' must be {wanted} (it is {short(value)})"
    return None


def version_problem(data: Mapping[str, Any], key: str, newest: int, what: str) -> str | None:
    version = data.get(key, newest)
    if not is_int(version):
        return f"{what} {version!r} is not an integer"
    if version < 1:  # versions count from 1: no pytest-ragmetrics wrote this
        return f"{what} {version} is not a version (they count from 1)"
    if version > newest:
        return (
            f"written by a newer pytest-ragmetrics ({what} {version}, this version reads up "
            f"to {newest}); upgrade pytest-ragmetrics"
        )
    return None
