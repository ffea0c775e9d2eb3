"""What ``ragmetrics evaluate`` and ``compare`` read and write outside pytest: the evaluate
document (``ragmetrics evaluate --format json``), the judgments runs are scored against
(``--qrels`` or ``--dataset``), and what a file given to ``compare`` is (a TREC run, an evaluate
output, a JSON report, a baseline) with the evaluation records it holds."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from pytest_ragmetrics.errors import BaselineError, ConfigError, ReportError
from pytest_ragmetrics.schema import EVALUATION_SCHEMA as EVALUATION_SCHEMA
from pytest_ragmetrics.schema import EVALUATION_VERSION as EVALUATION_VERSION

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Dataset, Qrels
    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.records import EvaluationRecord


_SNIFF_BYTES = 65536

# What a file given to compare is. "json" and "text" are files that are none of ours: the first
# is refused with its problem named; the second is read as a TREC run when runs are compared.
InputKind = Literal["run", "evaluation", "report", "baseline", "json", "text"]
KIND_WORDS: dict[str, str] = {
    "run": "TREC run",
    "evaluation": "evaluate output",
    "report": "JSON report",
    "baseline": "baseline",
}


# -- the evaluate document ------------------------------------------------------------------------


def evaluation_document(
    evaluation: Evaluation, *, run: str, dataset: Mapping[str, Any]
) -> dict[str, Any]:
    """What ``ragmetrics evaluate --format json`` writes: the means, every per-query value
    (what a paired comparison needs), the judgments' fingerprint and the scoring rules, under a
    schema name that ``compare`` recognises::

        {"schema": "pytest-ragmetrics/evaluation", "version": 1, "plugin_version",
         "run": path, "dataset": {"name", "split" | "source", "fingerprints": {"qrels"}},
         "k": null,                      # a TREC run does not record the k it was made with
         "layer": "retrieval", "metrics": {metric: mean | null}, "num_queries",
         "semantics": {"relevance_level", "gain", "query_set"[, "ignore_identical_ids"]},
         "per_query": {query_id: {metric: value | null}},
         "details": {"first_relevant_rank": {query_id: rank, 0 if none retrieved}},
         "notes": [str]}                 # only when there are some
    """
    from pytest_ragmetrics._version import __version__

    data = evaluation.to_dict(per_query=True)
    return {
        "schema": EVALUATION_SCHEMA,
        "version": EVALUATION_VERSION,
        "plugin_version": __version__,
        "metrics": data["metrics"],
        "num_queries": data["num_queries"],
        "run": run,
        "dataset": dict(dataset),
        "k": None,
        "layer": data["layer"],
        "semantics": data["semantics"],
        **{key: data[key] for key in ("notes", "per_query", "details") if key in data},
    }


# -- the judgments -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Judgments:
    """The qrels runs are evaluated against, and how a record names them."""

    qrels: Qrels
    identity: Mapping[str, Any]  # a record's "dataset": name/split or source, qrels fingerprint
    description: str
    dataset: Dataset | None = None  # with --dataset: query texts and titles for the HTML page


def load_judgments(
    qrels: str | None, dataset: str | None, split: str | None, *, name: str | None = None
) -> Judgments:
    """The judgments of ``--qrels FILE`` or ``--dataset DIR [--split S]`` (one is given;
    ``name`` overrides the dataset's own)."""
    from pytest_ragmetrics.data.trec import read_qrels

    if dataset is None:
        if split is not None:
            raise ConfigError("--split: only with --dataset")
        if qrels is None:
            raise ConfigError("give --qrels FILE or --dataset DIR")
        judged = read_qrels(qrels)
        identity = {
            "name": "qrels",
            "source": qrels,
            "fingerprints": {"qrels": judged.fingerprint},
        }
        return Judgments(judged, identity, qrels)
    from pytest_ragmetrics.data.layouts import load_dataset

    loaded = load_dataset(dataset, split or "test", name=name)
    identity = {
        "name": loaded.name,
        "split": loaded.split,
        "fingerprints": {"qrels": loaded.qrels.fingerprint},
    }
    return Judgments(loaded.qrels, identity, f"{dataset} ({loaded.name}, {loaded.split})", loaded)


def pair_judgments(pair: DatasetSelection) -> Judgments:
    """The judgments of one (dataset, split) pair of several, under the pair's name."""
    return load_judgments(None, str(pair.path), pair.split, name=pair.name)


# -- what a file is --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Input:
    """One file given to ``compare``: what it is and, for a JSON file, its value."""

    path: str
    kind: InputKind
    data: Any = None


def read_input(path: str) -> Input:
    """Sniff ``path`` (a TREC run is read later, streaming) or read its JSON value.

    A JSON file that cannot be read is a ReportError naming the file and line; what it holds
    is checked when it is used (:mod:`pytest_ragmetrics.schema`).
    """
    from pytest_ragmetrics.fileio import read_json_file
    from pytest_ragmetrics.schema import document_kind

    looks = _sniff(Path(path))
    if looks != "json":
        return Input(path, looks)
    try:
        data = read_json_file(Path(path), error=ReportError)
    except FileNotFoundError:
        raise ReportError(f"{path}: file not found") from None
    return Input(path, document_kind(data) or "json", data)


def _sniff(path: Path) -> InputKind:
    """'json' for a file named .json or opening with { or [; 'run' for a gzipped file (by its
    .gz name, or its magic bytes: a pipe has no name to go by) or one whose first line has the
    columns of a TREC run (qid Q0 doc rank score [tag]); else 'text' (a missing file included:
    its reader says so)."""
    from pytest_ragmetrics.data.textfile import split_fields
    from pytest_ragmetrics.fileio import GZIP_MAGIC, open_input

    if path.name.endswith(".json"):
        return "json"
    if path.name.endswith(".gz"):
        return "run"
    try:
        with open_input(path) as handle:
            head = handle.read(_SNIFF_BYTES)
    except OSError:
        return "text"
    if head.startswith(GZIP_MAGIC):
        return "run"
    text = head.decode("utf-8", errors="replace").lstrip("\ufeff \t\r\n")
    if text.startswith(("{", "[")):
        return "json"
    fields = split_fields(text.split("\n", 1)[0])
    if len(fields) >= 5:
        try:
            score = float(fields[4])
        except ValueError:
            return "text"
        if math.isfinite(score):
            return "run"
    return "text"


# -- the evaluations a JSON input holds ----------------------------------------------------------


def where(item: Input, record: EvaluationRecord) -> str:
    """How an error names an evaluation of ``item``: its label, for a report or baseline."""
    return f"{record.label}: " if item.kind in ("report", "baseline") else ""


def records_of(item: Input, select: Sequence[str] = ()) -> list[EvaluationRecord]:
    """The retrieval evaluations of a JSON input, as records (every field checked)."""
    from pytest_ragmetrics.records import EvaluationRecord

    path = item.path
    if item.kind == "evaluation":
        return [_evaluate_output(item)]
    if item.kind == "json":
        raise ReportError(
            f"{path}: not a TREC run, a 'ragmetrics evaluate --format json' output, a JSON "
            "report (--ragmetrics-json) or a baseline file"
        )
    from pytest_ragmetrics.baseline.compare import evaluations_in

    entries = evaluations_in(item.data, Path(path))
    records = []
    for entry in entries.values():
        record = EvaluationRecord.from_dict(entry)
        if record.layer != "retrieval":
            continue
        if select and not {record.name, record.test, record.label} & set(select):
            continue
        if not len(record.evaluation):
            raise BaselineError(
                f"{path}: {record.label} has no per-query values; a paired comparison needs them"
            )
        records.append(record)
    if not records:
        wanted = f" named {', '.join(select)}" if select else ""
        have = ", ".join(
            f"{e['name']} ({e['layer']})" for e in entries.values() if isinstance(e, Mapping)
        )
        raise BaselineError(
            f"{path}: no retrieval evaluation{wanted} (it has: {have or 'none'}); answer-layer "
            "evaluations are compared by 'ragmetrics compare BASELINE_OR_REPORT REPORT'"
        )
    return records


def _evaluate_output(item: Input) -> EvaluationRecord:
    """The record of a ``ragmetrics evaluate --format json`` output."""
    from pytest_ragmetrics.records import EvaluationRecord
    from pytest_ragmetrics.schema import check_document

    data, path = item.data, item.path
    check_document(data, "evaluation", path)
    if not data.get("per_query"):
        raise ReportError(f"{path}: no per-query values; a paired comparison needs them")
    record = EvaluationRecord.from_dict({**data, "test": path, "name": "evaluation"})
    return dataclasses.replace(record, identity={})
