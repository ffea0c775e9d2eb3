"""What an output of ``ragmetrics`` may replace: nothing but a file of its own kind that
ragmetrics wrote (or an empty one).

A command's output replaces an existing file only when that file is, by its content, what
the command writes: an HTML report over an HTML report, a TREC run over a TREC run, a pool
file over a pool file, supplementary qrels over supplementary qrels, a calibration file
updated. Anything else — a baseline file, a JSON report, an evaluate output, qrels a person
wrote, any file we do not recognise — is refused before any work, naming what it is. A new
file, an empty file, a stream (``/dev/stdout``, a pipe) and a folder (refused by the write
itself) are not checked here.

How a file is recognised (the first 64 KiB, or the whole file for JSON):

- HTML report: the marker comment every page carries (``PAGE_MARKER``), or the opening
  comment of its inlined style sheet (pages of earlier versions);
- TREC run: every complete line is ``qid Q0 docno rank score tag`` (an integer rank, a
  number for the score);
- pool file: its first row is a JSON object with ``query_id``, ``doc_id`` and ``relevant``;
- supplementary qrels: the header line naming the judge;
- calibration file, baseline file, JSON report, evaluate output: their schema markers.
"""

from __future__ import annotations

import gzip
import json
import math
from pathlib import Path
from typing import Literal

from pytest_ragmetrics.errors import ConfigError

OutputKind = Literal["html", "run", "pool", "supplementary", "calibration"]
_WHAT: dict[str, str] = {
    "html": "an HTML report",
    "run": "a TREC run",
    "pool": "a pool file",
    "supplementary": "supplementary qrels (ragmetrics judge-pool)",
    "calibration": "a calibration file",
    "baseline": "a baseline file",
    "report": "a JSON report",
    "evaluation": "a 'ragmetrics evaluate --format json' output",
}
_HEAD_BYTES = 65536
# The opening of the style sheet every page inlines, before pages carried PAGE_MARKER.
_EARLIER_PAGE = "/* The HTML report's style sheet (pytest_ragmetrics/"


def refuse_replacing(output: str, flag: str, kind: OutputKind) -> None:
    """A ConfigError when ``output`` is an existing file that is not ``kind`` (see the
    module): writing would destroy a file ragmetrics did not write for this purpose."""
    from pytest_ragmetrics.fileio import is_stream

    path = Path(output)
    if is_stream(path) or not path.is_file():
        return
    try:
        found = file_kind(path)
    except OSError as exc:
        raise ConfigError(f"{flag} {output}: cannot read the file there ({exc.strerror})") from None
    if found == kind or found == "empty":
        return
    wanted = _WHAT[kind]
    what = f"is {_WHAT[found]}, not {wanted}" if found else f"is not {wanted} ragmetrics wrote"
    raise ConfigError(
        f"{flag} {output}: that file {what}; writing would overwrite it. Give another path, or "
        "move the file away first"
    )


def file_kind(path: Path) -> str | None:
    """What the file at ``path`` is by its content: an output kind, "baseline", "report",
    "evaluation", "empty", or None (none of ours)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:
        head = handle.read(_HEAD_BYTES)
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if not text:
        return "empty"
    if text.startswith("{"):
        return _json_kind(path, text, len(head) == _HEAD_BYTES)
    if _html_kind(text):
        return "html"
    from pytest_ragmetrics.pooling import HEADER_PREFIX

    if text.startswith(HEADER_PREFIX):
        return "supplementary"
    complete = text if len(head) < _HEAD_BYTES else text.rsplit("\n", 1)[0]
    return "run" if all(_run_line(line) for line in complete.splitlines() if line.strip()) else None


def _html_kind(text: str) -> bool:
    from pytest_ragmetrics.report.html.render import PAGE_MARKER

    return text.startswith("<!DOCTYPE html>") and (PAGE_MARKER in text or _EARLIER_PAGE in text)


def _json_kind(path: Path, text: str, more: bool) -> str | None:
    """A JSON document's kind by its markers; a pool file's by its first row."""
    first = text.split("\n", 1)[0]
    try:
        row = json.loads(first)
    except ValueError:
        row = None
    if isinstance(row, dict) and {"query_id", "doc_id", "relevant"} <= set(row):
        return "pool"
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig") if more else text)
    except (ValueError, RecursionError):
        return None
    from pytest_ragmetrics.judges.calibration.store import CALIBRATION_SCHEMA
    from pytest_ragmetrics.schema import document_kind

    if isinstance(data, dict) and data.get("schema") == CALIBRATION_SCHEMA:
        return "calibration"

    return document_kind(data)


def _run_line(line: str) -> bool:
    """Whether ``line`` is a TREC run line as ragmetrics writes them."""
    fields = line.split()
    if len(fields) != 6:
        return False
    try:
        int(fields[3])
        return math.isfinite(float(fields[4]))
    except ValueError:
        return False
