"""Reading back the JSON documents we write: baseline files, JSON reports, ``ragmetrics
evaluate --format json`` outputs.

A hand edit, a file written by another version, a hook or a fuzzer can put any JSON value
anywhere. :func:`read_document` (or :func:`check_document`, for a value already read) is the
one place that checks such a document, once, so that it fails with the file, the entry and
the field named instead of a TypeError or OverflowError deep in the comparison or a report:
a broken baseline is a BaselineError, a broken report or evaluate output a ReportError. Keys
this version does not know are ignored (a newer version may add some); known keys must hold
what this version expects, so the typed records built from a checked document
(``EvaluationRecord.from_dict``, ``Checked.from_dict``) never meet a value of the wrong type.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pytest_ragmetrics.errors import BaselineError, RagMetricsError, ReportError
from pytest_ragmetrics.schema.evaluation import evaluation_problem
from pytest_ragmetrics.schema.fields import is_int, is_number, version_problem
from pytest_ragmetrics.schema.report import REPORT_SCHEMA, REPORT_VERSION, report_problem

__all__ = [
    "BASELINE_VERSION",
    "EVALUATION_SCHEMA",
    "EVALUATION_VERSION",
    "REPORT_SCHEMA",
    "REPORT_VERSION",
    "Document",
    "DocumentKind",
    "check_document",
    "document_kind",
    "evaluation_problem",
    "is_int",
    "is_number",
    "read_document",
    "recognise",
]

BASELINE_VERSION = 1  # a baseline file's "schema_version"
EVALUATION_SCHEMA = "pytest-ragmetrics/evaluation"  # ragmetrics evaluate --format json
EVALUATION_VERSION = 1

DocumentKind = Literal["report", "baseline", "evaluation"]
_NAMES: dict[str, str] = {
    "report": "a pytest-ragmetrics JSON report (--ragmetrics-json)",
    "baseline": "a baseline file",
    "evaluation": "a 'ragmetrics evaluate --format json' output",
}
_WHAT = {"report": "JSON report", "baseline": "baseline file", "evaluation": "evaluate output"}
_ERRORS: dict[str, type[RagMetricsError]] = {
    "report": ReportError,
    "baseline": BaselineError,
    "evaluation": ReportError,
}


@dataclass(frozen=True)
class Document:
    """A checked document: what it is and its JSON value."""

    path: Path
    kind: DocumentKind
    data: dict[str, Any]


def document_kind(data: Any) -> DocumentKind | None:
    """What a JSON value claims to be (None: none of ours). Only the marker keys are looked
    at; :func:`check_document` says whether it is one."""
    if not isinstance(data, dict):
        return None
    if "schema_version" in data:
        return "baseline"
    if data.get("schema") == EVALUATION_SCHEMA:
        return "evaluation"
    if "evaluations" in data or "schema" in data:
        return "report"
    if {"metrics", "num_queries"} <= set(data):
        return "evaluation"  # an earlier version's evaluate output: refused with advice
    return None


def read_document(
    path: str | Path, kind: DocumentKind | Sequence[DocumentKind], *, hint: str = ""
) -> Document:
    """Read, recognise and check the JSON document at ``path``: one of ``kind`` (a kind or
    several). A file that is missing, not JSON, not one of them or malformed is the error of
    the (first) kind, naming the file (and line, or the entry and field) and ending with
    ``hint`` (what to do)."""
    from pytest_ragmetrics.fileio import read_json_file

    path = Path(path)
    kinds: tuple[DocumentKind, ...] = (kind,) if isinstance(kind, str) else tuple(kind)
    error = _ERRORS[kinds[0]]
    what = _WHAT[kinds[0]] if len(kinds) == 1 else ""
    tail = f"; {hint}" if hint else ""
    try:
        data = read_json_file(path, what=what, error=error, hint=hint)
    except FileNotFoundError:
        raise error(f"{path}: file not found{tail}") from None
    return recognise(data, kinds, path, hint=hint)


def recognise(
    data: Any, kind: DocumentKind | Sequence[DocumentKind], path: str | Path, *, hint: str = ""
) -> Document:
    """:func:`read_document` of a file already read: ``data`` is its JSON value."""
    kinds: tuple[DocumentKind, ...] = (kind,) if isinstance(kind, str) else tuple(kind)
    found = document_kind(data)
    if len(kinds) == 1:
        found = kinds[0]  # its own check says what is wrong, if anything
    elif found is None or found not in kinds:
        tail = f"; {hint}" if hint else ""
        raise _ERRORS[kinds[0]](f"{path}: {_not_one_of(kinds)}{tail}")
    check_document(data, found, path, hint=hint)
    return Document(Path(path), found, data)


def _not_one_of(kinds: Sequence[DocumentKind]) -> str:
    names = [_NAMES[k] for k in kinds]
    if len(names) == 2:
        return f"neither {names[0]} nor {names[1]}"
    return f"not {', '.join(names[:-1])} or {names[-1]}"


def check_document(data: Any, kind: DocumentKind, path: str | Path, *, hint: str = "") -> None:
    """Raise the error of ``kind`` (BaselineError for a baseline, ReportError otherwise)
    naming ``path`` and what is wrong, unless ``data`` is a sound document of that kind."""
    problem = {"report": report_problem, "baseline": _baseline_problem}.get(
        kind, _evaluation_output_problem
    )(data)
    if problem:
        raise _ERRORS[kind](f"{path}: {problem}" + (f"; {hint}" if hint else ""))


def _baseline_problem(data: Any) -> str | None:
    if not isinstance(data, dict) or "schema_version" not in data:
        return "not a pytest-ragmetrics baseline (no schema_version)"
    problem = version_problem(data, "schema_version", BASELINE_VERSION, "baseline schema")
    if problem:
        return problem
    entries = data.get("entries")
    if not isinstance(entries, dict):
        return "'entries' must be an object"
    for test, named in entries.items():
        if not isinstance(named, dict):
            return f"entry {test!r} must be an object"
        for name, entry in named.items():
            problem = evaluation_problem(entry) or _judgments_problem(entry)
            if problem:
                return f"entry {test!r} [{name}]: {problem}"
    return None


def _judgments_problem(entry: dict[str, Any]) -> str | None:
    """A baseline's retrieval entry without the fingerprint of the qrels it was scored on:
    the plugin always records it, and without it every comparison would call the datasets
    different."""
    if entry.get("layer") != "retrieval":
        return None  # an answer evaluation records no dataset
    dataset = entry.get("dataset")
    if dataset is None:
        field = "dataset"
    elif not dataset.get("fingerprints"):
        field = "dataset.fingerprints"
    elif "qrels" not in dataset["fingerprints"]:
        field = "dataset.fingerprints.qrels"
    else:
        return None
    return (
        f"{field!r} is missing: a retrieval entry records the fingerprints of the dataset it "
        "was scored on (an edit?); restore it, or delete the entry and record it again with "
        "--ragmetrics-update-baseline"
    )


def _evaluation_output_problem(data: Any) -> str | None:
    if not isinstance(data, dict) or data.get("schema") != EVALUATION_SCHEMA:
        return (
            "written by an earlier 'ragmetrics evaluate --format json', which did not record "
            "the judgments and scoring rules (nor always per-query values); evaluate the run "
            "again with this version, or compare the run file itself with --qrels"
        )
    if "version" not in data:
        return "evaluate output version None is not an integer"
    return version_problem(data, "version", EVALUATION_VERSION, "evaluate output version") or (
        evaluation_problem(data)
    )
