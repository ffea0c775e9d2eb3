"""JSONL files for reader tests, and the check that a reader's error names the file and line."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.errors import DataFormatError


def write_jsonl(path: Path, rows: Sequence[Any]) -> Path:
    """One line a row: a string as it is (for broken lines), anything else as JSON."""
    path.write_text(
        "".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows),
        encoding="utf-8",
    )
    return path


def assert_error_at(
    read: Callable[[Path], object], path: Path, line: int | None, message: str
) -> DataFormatError:
    """``read(path)`` raises a DataFormatError holding ``message`` (literally) whose text starts
    with ``path:line: `` (``path: `` for ``line=None``, an error of the whole file)."""
    with pytest.raises(DataFormatError, match=re.escape(message)) as info:
        read(path)
    where = f"{path}: " if line is None else f"{path}:{line}: "
    assert str(info.value).startswith(where), str(info.value)
    assert info.value.line == line
    return info.value
