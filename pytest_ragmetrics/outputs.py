"""What an output of ragmetrics may replace: nothing but a file of its own kind that
ragmetrics wrote (or an empty one). The rule of the ``ragmetrics`` command's outputs and of the
plugin's reports (``--ragmetrics-json``, ``--ragmetrics-markdown``, ``--ragmetrics-html``) alike.

An output replaces an existing file only when that file is, by its content, what the output
writes: an HTML report over an HTML report, a JSON report over a JSON report, a TREC run over a
TREC run, a pool file over a pool file, recorded answers over recorded answers, supplementary
qrels over supplementary qrels, a calibration file updated. Anything else — a baseline file,
another kind of report, an evaluate output, qrels or labels a person wrote, any file we do not
recognise — is refused before any work, naming what it is. The Markdown report is appended (to
``$GITHUB_STEP_SUMMARY``, which other steps write too): it goes after any text but never into
data — one of our files, JSON or JSON lines, a tab-separated table, TREC qrels or runs, HTML or
XML, a binary file. A new file, an empty file, a stream (``/dev/stdout``, a pipe) and a folder
(refused by the write itself) are not checked here.

How a file is recognised (the first 64 KiB, or the whole file for JSON):

- HTML report: the marker comment every page carries (``PAGE_MARKER``), or the opening
  comment of its inlined style sheet (pages of earlier versions);
- TREC run: every complete line is ``qid Q0 docno rank score tag`` (an integer rank, a
  number for the score);
- pool file: its first row is a JSON object with ``query_id``, ``doc_id`` and ``relevant``;
- recorded answers: its first row is a JSON object with ``query_id`` and ``answer`` (and no
  ``label``: a person's labels);
- supplementary qrels: the header line naming the judge;
- calibration file, baseline file, JSON report, evaluate output: their schema markers.
"""

from __future__ import annotations

import codecs
import gzip
import json
import math
import re
from pathlib import Path
from typing import Literal

from pytest_ragmetrics.errors import ConfigError

OutputKind = Literal[
    "html", "run", "pool", "supplementary", "calibration", "report", "markdown", "answers"
]
_WHAT: dict[str, str] = {
    "html": "an HTML report",
    "run": "a TREC run",
    "pool": "a pool file",
    "supplementary": "supplementary qrels (ragmetrics judge-pool)",
    "calibration": "a calibration file",
    "baseline": "a baseline file",
    "report": "a JSON report",
    "evaluation": "a 'ragmetrics evaluate --format json' output",
    "markdown": "a Markdown report",
    "answers": "recorded answers",
}
_HEAD_BYTES = 65536
# The opening of the style sheet every page inlines, before pages carried PAGE_MARKER.
_EARLIER_PAGE = "/* The HTML report's style sheet (pytest_ragmetrics/"
# A line of TREC qrels: query, iteration (an integer), document, grade (an integer).
# The opening of a JSON array of objects, arrays or strings (not a Markdown link, "[text](").
_JSON_ARRAY = re.compile(r'\[\s*(\[|\{|"|$)')
_QRELS_LINE = re.compile(r"[ \t]*\S+[ \t]+-?\d+[ \t]+\S+[ \t]+-?\d+[ \t]*")


def refuse_replacing(output: str, flag: str, kind: OutputKind) -> None:
    """A ConfigError when ``output`` is an existing file that is not ``kind`` (see the
    module): writing would destroy a file ragmetrics did not write for this purpose."""
    problem = replacing_problem(Path(output), kind)
    if problem is not None:
        raise ConfigError(f"{flag} {output}: {problem}")


def replacing_problem(path: Path, kind: OutputKind) -> str | None:
    """Why writing ``kind`` at ``path`` would destroy what is there (e.g. "that file is a
    baseline file, not a JSON report; writing would overwrite it. ..."), or None when it may
    be written: no file, an empty one, a stream or a file of its own kind (see the module)."""
    from pytest_ragmetrics.fileio import is_stream

    if is_stream(path) or not path.is_file():
        return None
    try:
        found = file_kind(path)
        if kind == "markdown" and found is None and _plain_text(_head(path)):
            return None
    except OSError as exc:
        return f"cannot read the file there ({exc.strerror or exc})"
    if found == kind or found == "empty":
        return None
    wanted = _WHAT[kind]
    if kind == "markdown":
        what = f"is {_WHAT[found]}" if found else "holds data, not text"
        return f"that file {what}; appending {wanted} would damage it. " + _ELSEWHERE
    what = f"is {_WHAT[found]}, not {wanted}" if found else f"is not {wanted} ragmetrics wrote"
    return f"that file {what}; writing would overwrite it. " + _ELSEWHERE


_ELSEWHERE = "Give another path, or move the file away first"


def _head(path: Path) -> bytes:
    """The first bytes of the file at ``path`` (decompressed, for a ``.gz`` name)."""
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rb") as handle:
        return handle.read(_HEAD_BYTES)


def file_kind(path: Path) -> str | None:
    """What the file at ``path`` is by its content: an output kind, "baseline", "report",
    "evaluation", "empty", or None (none of ours)."""
    head = _head(path)
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


def _plain_text(head: bytes) -> bool:
    """Whether a file opening with ``head`` (none of ours) is text the Markdown report may
    follow: UTF-8 without NUL, and not JSON (an object, or an array of objects, arrays or
    strings), JSON lines, an HTML or XML document, a tab-separated table
    (a tab on every line) or TREC qrels."""
    try:
        text = codecs.getincrementaldecoder("utf-8")().decode(head, final=len(head) < _HEAD_BYTES)
    except UnicodeDecodeError:
        return False
    lines = [line for line in text.lstrip("\ufeff").splitlines() if line.strip()]
    if "\x00" in text or not lines:
        return not lines and "\x00" not in text
    first = lines[0].lstrip().lower()
    if first.startswith(("{", "<!doctype", "<html", "<?xml")) or _JSON_ARRAY.match(first):
        return False
    return not (
        all("\t" in line for line in lines) or all(_QRELS_LINE.fullmatch(line) for line in lines)
    )


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
    if isinstance(row, dict) and {"query_id", "answer"} <= set(row) and "label" not in row:
        return "answers"  # contexts may be left out of a file written by hand
    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig") if more else text)
    except (ValueError, RecursionError):
        return None
    from pytest_ragmetrics.judges.calibration.store import CALIBRATION_SCHEMA
    from pytest_ragmetrics.schema import REPORT_SCHEMA, document_kind

    if isinstance(data, dict) and data.get("schema") == CALIBRATION_SCHEMA:
        return "calibration"
    found = document_kind(data)
    if found == "report" and data.get("schema", REPORT_SCHEMA) != REPORT_SCHEMA:
        return None  # someone else's document with a "schema" key
    return found


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
