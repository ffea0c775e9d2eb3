"""Parsing option values (ini keys, command-line flags, CLI arguments): strict ASCII numbers,
lists and booleans, each error naming the option."""

from __future__ import annotations

import re
from collections.abc import Sequence
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


def positive_int(value: object, what: str, error: type[Exception] = ConfigError) -> int:
    """``value`` if it is a positive int (not a bool), else ``error`` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise error(f"{what} must be a positive integer, got {value!r}")
    return value


def non_negative(value: object, what: str, error: type[Exception] = ConfigError) -> float:
    """``value`` as a float if it is a number >= 0, else ``error`` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise error(f"{what} must be a number >= 0, got {value!r}")
    return float(value)
