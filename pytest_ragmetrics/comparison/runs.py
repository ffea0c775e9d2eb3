"""TREC run files outside pytest: which (dataset, split) pair a run is for, scoring runs
against their judgments (with supplementary judge labels), and retrieving runs over pairs.

What ``ragmetrics evaluate`` and ``ragmetrics retrieve`` do, as functions: the commands only
read their flags and print what these return.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Dataset, Qrels, Run
    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.metrics.semantics import MetricSemantics


@dataclass(frozen=True)
class PairEvaluation:
    """One system's evaluation on one (dataset, split) pair: a row label (the system), the
    pair's key, the evaluation, and notes already prefixed with both."""

    label: str
    pair: str
    evaluation: Evaluation
    notes: tuple[str, ...] = field(default=())


# -- PAIR=RUN -------------------------------------------------------------------------------------


def run_path(text: str) -> str:
    """The file of a ``[PAIR=]RUN`` value (a path that holds '=' and exists is taken whole)."""
    key, sep, path = text.partition("=")
    return path if sep and key and not Path(text).exists() else text


def run_pair(
    text: str, keys: Sequence[str], names: Mapping[str, str] | None = None, flag: str = "--run"
) -> str:
    """The pair key a ``[PAIR=]RUN`` value is for: its ``PAIR=`` prefix (a pair's key, or a
    dataset's name when it has one pair), or the only pair. ``names`` maps each key to its
    dataset's name; ``flag`` is how an error names where the value was given."""
    where = f"{flag} {text}" if flag else text
    key, sep, _ = text.partition("=")
    if sep and key and not Path(text).exists():
        matches = [k for k in keys if key in (k, (names or {}).get(k))]
        if len(matches) == 1:
            return matches[0]
        raise ConfigError(
            f"{where}: {key!r} "
            + ("names several pairs; write NAME-SPLIT" if matches else "is no --dataset pair")
            + f" (the pairs are {', '.join(keys)})"
        )
    if len(keys) == 1:
        return keys[0]
    raise ConfigError(
        f"{where}: with several datasets say which pair it is for: "
        f"PAIR={text} with PAIR one of {', '.join(keys)}"
    )


def run_label(path: str) -> str:
    """A run's row label: its tag (the system's name), else its file name."""
    from pytest_ragmetrics.data.trec import run_tag

    return run_tag(path) or Path(path).name


# -- scoring --------------------------------------------------------------------------------------


def score(qrels: Qrels, run: Run, metrics: Sequence[str], semantics: MetricSemantics) -> Evaluation:
    """``run`` against ``qrels`` under the scoring rules ``semantics``."""
    from pytest_ragmetrics.metrics.retrieval import evaluate

    return evaluate(
        qrels,
        run,
        list(metrics),
        relevance_level=semantics.relevance_level,
        gain=semantics.gain,
        query_set=semantics.query_set,
        ignore_identical_ids=semantics.ignore_identical_ids,
    )


def score_pairs(
    runs: Sequence[str],
    qrels_of: Mapping[str, Qrels],
    metrics: Sequence[str],
    semantics: MetricSemantics,
    names: Mapping[str, str] | None = None,
) -> list[PairEvaluation]:
    """Each ``[PAIR=]RUN`` of ``runs`` scored against its pair's qrels (``qrels_of``: key to
    qrels), labelled by the run's tag."""
    from pytest_ragmetrics.data.trec import read_run

    out = []
    seen: dict[tuple[str, str], str] = {}
    for text in runs:
        key = run_pair(text, list(qrels_of), names)
        path = run_path(text)
        label = run_label(path)
        if (label, key) in seen:  # one row each: the second would hide the first
            raise ConfigError(
                f"{path}: the run {label!r} on {key} is already given ({seen[label, key]}); "
                "rows are named by the runs' tags (the sixth column): give each run its own tag"
            )
        seen[label, key] = path
        evaluation = score(qrels_of[key], read_run(path), metrics, semantics)
        notes = tuple(f"{label} on {key}: {note}" for note in evaluation.notes)
        out.append(PairEvaluation(label, key, evaluation, notes))
    return out


def supplemented(
    evaluation: Evaluation,
    path: str,
    qrels: Qrels,
    run: Run,
    dataset: Dataset | None,
    semantics: MetricSemantics,
) -> list[str]:
    """Also score ``run`` on ``qrels`` plus the supplementary labels of ``path`` (human
    judgments win), into ``evaluation.supplemented``; the labels are checked against the
    dataset's corpus when there is one. Returns what could not be checked without it."""
    from pytest_ragmetrics.pooling import load_supplement
    from pytest_ragmetrics.provenance import query_notes

    corpus = None if dataset is None else dataset.corpus
    supplement = load_supplement(path, calibration=None, min_kappa=None, corpus=corpus)
    rules = {**semantics.as_dict(), "ignore_identical_ids": semantics.ignore_identical_ids}
    metrics = list(evaluation.metrics)
    evaluation.supplemented = supplement.evaluate(qrels, run, metrics, **rules)
    evaluation.notes.extend(supplement.notes)
    labels = supplement.labels
    evaluation.notes.extend(query_notes(path, labels.qrels, qrels))
    if corpus is not None:
        return []
    return [
        f"--supplementary-qrels {path}: "
        + (
            "the file does not say which corpus its labels were made for"
            if labels.dataset is None
            else f"made for the corpus {labels.dataset['corpus'][:16]}"
        )
        + "; --qrels names no corpus, so whether the labels are for the documents this run "
        "searched cannot be checked (give --dataset DIR instead of --qrels to check it)"
    ]


# -- retrieving over pairs ------------------------------------------------------------------------


@dataclass(frozen=True)
class Retrieved:
    """A run retrieved for one pair and written: where, how long it took, and the note on
    rankings shorter than k (normal for some retrievers; "" when none)."""

    pair: str
    run: Run
    dataset: Dataset
    name: str  # the retriever's
    target: Path
    seconds: float
    short: str = ""

    def summary(self, k: int) -> str:
        return (
            f"{len(self.run)} queries x top {k} of {len(self.dataset.corpus)} documents -> "
            f"{self.target} ({self.seconds:.1f} s)"
        )


def retrieve_pairs(
    kind: str,
    pairs: Sequence[DatasetSelection],
    targets: Mapping[str, Path],
    k: int,
    options: Mapping[str, Any],
    *,
    tag: str | None = None,
    done: Callable[[Retrieved], None] = lambda retrieved: None,
) -> list[Retrieved]:
    """Search each pair's queries with retriever ``kind`` built over its corpus (``options``:
    build_retriever's keywords) and write its run to ``targets[pair.key]`` (tagged ``tag``,
    else the retriever's name); ``done`` hears of each as it is written."""
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.data.trec import write_run
    from pytest_ragmetrics.progress import stream_reporter, use_reporter
    from pytest_ragmetrics.retrievers import build_retriever
    from pytest_ragmetrics.retrievers.base import short_rankings

    out = []
    for pair in pairs:
        dataset = load_dataset(pair.path, pair.split, name=pair.name)
        started = time.perf_counter()
        with use_reporter(stream_reporter()):
            retriever = build_retriever(kind, dataset.corpus, **options)
            run = retriever.search(dataset.queries, k)
        target = targets[pair.key]
        write_run(run, target, tag=tag or retriever.name)
        found = short_rankings(
            run,
            dataset.queries.query_ids,
            k,
            retriever=retriever.name,
            corpus_size=len(dataset.corpus),
        )
        seconds = time.perf_counter() - started
        retrieved = Retrieved(
            pair.key,
            run,
            dataset,
            retriever.name,
            target,
            seconds,
            "" if found is None else found.note(),
        )
        done(retrieved)
        out.append(retrieved)
    return out


def run_targets(out: str, pairs: Sequence[DatasetSelection]) -> dict[str, Path]:
    """Where each pair's run goes: ``out`` itself for one pair, NAME-SPLIT.trec in the folder
    ``out`` for more."""
    if len(pairs) == 1:
        return {pairs[0].key: Path(out)}
    folder = Path(out)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"--out {out}: with several datasets --out is a folder; this is a file")
    return {p.key: folder / f"{p.key}.trec" for p in pairs}
