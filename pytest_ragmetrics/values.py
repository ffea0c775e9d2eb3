"""Parsing option values (ini keys, command-line flags, CLI arguments): strict ASCII numbers,
lists and booleans, each error naming the option; and numbers given in code or JSON (markers,
scores, constructor arguments): any real number but a bool, never an OverflowError."""

from __future__ import annotations

import math
import numbers
import re
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from pytest_ragmetrics.errors import ConfigError

MAX_CUTOFF = 2**31 - 1  # ranks and cutoffs are C ints in trec_eval; larger values are typos

# Plain ASCII numbers only: int() and float() also take '²', Arabic-Indic digits and '1_000'.
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?([0-9]+\.?[0-9]*|\.[0-9]+)([eE][+-]?[0-9]+)?")


def python_only(token: str) -> bool:
    """Whether ``int``/``float`` would read ``token`` where C's ``atoi``/``strtod`` (trec_eval's
    readers) read it differently or not at all: ``1_0`` (10 to Python, 1 to C), digits or
    spaces outside ASCII (``٣``). A file token like that is refused, not guessed at."""
    return "_" in token or not token.isascii()


def parse_int(text: str, option: str, example: int) -> int:
    """An ASCII integer (surrounding spaces allowed), or a ConfigError naming the option."""
    if not _INTEGER.fullmatch(text.strip()) or len(text.strip()) > 18:
        raise ConfigError(f"{option}: {text!r} must be an integer, e.g. {example}")
    return int(text)


def parse_positive_int(text: str, option: str, example: int) -> int:
    """A cutoff-sized positive integer written as text (an ini value, a flag)."""
    try:
        value = parse_int(text, option, example)
    except ConfigError:
        value = 0
    if not 0 < value <= MAX_CUTOFF:
        raise ConfigError(
            f"{option}: {text!r} must be a positive integer up to {MAX_CUTOFF}, e.g. {example}"
        )
    return value


def parse_float(text: str, option: str) -> float:
    """An ASCII decimal number such as 0.5, 1e-3 or 2, or a ConfigError naming the option."""
    if not _DECIMAL.fullmatch(text.strip()):
        raise ConfigError(f"{option}: {text!r} is not a number")
    return float(text)


def float_in(text: str, option: str, low: float, high: float) -> float:
    value = parse_float(text, option)
    if not (low <= value <= high):
        raise ConfigError(f"{option}: {text!r} must be between {low:g} and {high:g}")
    return value


def split_list(items: Sequence[str] | str) -> list[str]:
    """Items of a space- or comma-separated list (or of several such strings)."""
    if isinstance(items, str):
        items = [items]
    out: list[str] = []
    for item in items:
        out.extend(part for part in re.split(r"[\s,]+", item) if part)
    return out


def as_bool(value: Any, option: str) -> bool:
    if isinstance(value, bool):
        return value
    if value is None:
        return False
    text = str(value).strip().lower()
    if text in ("1", "true", "yes", "on"):
        return True
    if text in ("0", "false", "no", "off", ""):
        return False
    raise ConfigError(f"{option}: {value!r} must be true or false")


def real_number(value: object) -> float | None:
    """``value`` as a float if it is a real number given in code or JSON (an int, a float, a
    numpy scalar such as ``np.float32(0.5)``, a Fraction; never a bool), else None.

    An int too large for a float (``10**400``, a 400-digit JSON integer) is +-inf, so a range
    or finiteness check refuses it by name instead of raising OverflowError."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return None
    try:
        return float(value)
    except OverflowError:  # an int (or a Fraction) beyond the float range
        if isinstance(value, (int, Fraction)) and value < 0:
            return -math.inf
        return math.inf


def shown(value: object, width: int = 40) -> str:
    """``repr(value)`` for a message, cut to ``width`` characters (``10**400`` is 401 digits;
    Python refuses to print an int of over 4,300)."""
    try:
        text = repr(value)
    except ValueError:
        return "an integer too long to print"
    return text if len(text) <= width else text[: width - 3] + "..."


def finite_number(value: object) -> float | None:
    """:func:`real_number`, and None for NaN and +-inf too."""
    number = real_number(value)
    return number if number is not None and math.isfinite(number) else None


def positive_int(value: object, what: str, error: type[Exception] = ConfigError) -> int:
    """``value`` if it is a positive int (not a bool), else ``error`` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"{what} must be a positive integer, got {value!r}")
    return value


def non_negative(value: object, what: str, error: type[Exception] = ConfigError) -> float:
    """``value`` as a float if it is a finite number >= 0, else ``error`` naming ``what``."""
    number = finite_number(value)
    if number is None or not number >= 0:
        raise error(f"{what} must be a finite number >= 0, got {shown(value)}")
    return number
