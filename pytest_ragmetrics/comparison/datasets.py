"""Systems over several (dataset, split) pairs: ``ragmetrics compare --dataset A=DIR
--dataset B=DIR SYSTEM ...``.

A system is a folder of runs named by pair (``NAME-SPLIT.trec``, what ``ragmetrics retrieve``
writes for several pairs) or the ``PAIR=RUN`` values of one run tag. On each pair, every
system that has a run there is compared with the reference (the first system) by
:func:`~pytest_ragmetrics.comparison.systems.compare_systems`, on that pair's judgments; the
renderers put the means side by side, systems x pairs per metric. A system without a run on
some pair is shown there as missing, never averaged over fewer pairs.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.comparison.runs import run_label, run_pair, run_path
from pytest_ragmetrics.comparison.systems import System, SystemsComparison, Versus
from pytest_ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.tolerances import Tolerances
    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.metrics.semantics import MetricSemantics

DATASETS_SCHEMA = "pytest-ragmetrics/comparison-by-dataset"  # compare --format json, several
DATASETS_VERSION = 1
RUN_SUFFIXES = (".trec", ".trec.gz", ".run", ".run.gz", ".txt")


@dataclass(frozen=True)
class PairComparison:
    """One pair: its systems (the reference first when it has a run there) and, when the
    reference and another system have runs on it, their comparison."""

    pair: str
    systems: tuple[System, ...]
    comparison: SystemsComparison | None = None


@dataclass(frozen=True)
class DatasetsComparison:
    """Every system against the reference, pair by pair."""

    labels: tuple[str, ...]  # the systems, the reference first
    pairs: tuple[PairComparison, ...]
    metrics: tuple[str, ...]
    tolerance: tuple[str, ...]
    alpha: float | None = None
    notes: tuple[str, ...] = field(default=())

    @property
    def reference(self) -> str:
        return self.labels[0]

    @property
    def failed(self) -> list[tuple[str, Versus]]:
        """(pair, versus) of each system that regressed or is not comparable on a pair."""
        return [
            (p.pair, versus)
            for p in self.pairs
            if p.comparison is not None
            for versus in p.comparison.failed
        ]

    def status(self, label: str, pair: str) -> str:
        """A system's verdict on a pair: "reference", its status, "not compared" or "-" (no
        run there)."""
        found = next(p for p in self.pairs if p.pair == pair)
        if not any(s.label == label for s in found.systems):
            return "-"
        if label == self.reference:
            return "reference"
        versus = _versus(found, label)
        return "not compared" if versus is None else versus.verdict.status

    def to_dict(self) -> dict[str, Any]:
        """``compare --format json`` over several pairs (the renderer adds ``by_dataset``)::

        {"schema": "pytest-ragmetrics/comparison-by-dataset", "version": 1,
         "reference": label, "systems": [label], "pairs": [key], "metrics": [metric],
         "tolerance": [str], "alpha": number | null,
         "comparisons": {key: <the one-pair comparison document> | null},
         "status": {label: {key: status}}, "failed": N, ["notes"]}
        """
        out: dict[str, Any] = {
            "schema": DATASETS_SCHEMA,
            "version": DATASETS_VERSION,
            "reference": self.reference,
            "systems": list(self.labels),
            "pairs": [p.pair for p in self.pairs],
            "metrics": list(self.metrics),
            "tolerance": list(self.tolerance),
            "alpha": self.alpha,
            "comparisons": {
                p.pair: None if p.comparison is None else p.comparison.to_dict() for p in self.pairs
            },
            "status": {
                label: {p.pair: self.status(label, p.pair) for p in self.pairs}
                for label in self.labels
            },
            "failed": len(self.failed),
        }
        if self.notes:
            out["notes"] = list(self.notes)
        return out


def _versus(pair: PairComparison, label: str) -> Versus | None:
    if pair.comparison is None:
        return None
    return next((v for v in pair.comparison.versus if v.system.label == label), None)


# -- which run is whose ---------------------------------------------------------------------------


def system_runs(
    inputs: Sequence[str], pairs: Sequence[DatasetSelection]
) -> dict[str, dict[str, str]]:
    """Each system's run per pair: {label: {pair key: run file}}, systems in the order given.

    An input that is a folder is a system named by its path, its runs the files named by pair
    key in it; any other is a ``[PAIR=]RUN`` value, its system named by the run's tag.
    """
    keys = [p.key for p in pairs]
    names = {p.key: p.name for p in pairs}
    systems: dict[str, dict[str, str]] = {}
    for text in inputs:
        if Path(text).is_dir():
            found = {text: _folder_runs(Path(text), keys)}
        else:
            path = run_path(text)
            found = {run_label(path): {run_pair(text, keys, names, flag=""): path}}
        for label, runs in found.items():
            mine = systems.setdefault(label, {})
            for key, path in runs.items():
                if key in mine:
                    raise ConfigError(
                        f"{path}: system {label!r} already has a run on {key} ({mine[key]}); "
                        "give one run per system and pair (runs are named by their tag)"
                    )
                mine[key] = path
    return systems


def _folder_runs(folder: Path, keys: Sequence[str]) -> dict[str, str]:
    """The runs of a folder by pair key: ``KEY.trec`` (or .trec.gz, .run, .run.gz, .txt). A
    run file named after no pair while a pair has no run is an error (a misnamed run would
    leave the system silently unscored there); so are two files for one pair."""
    runs = {}
    for key in keys:
        found = [
            f"{key}{suffix}" for suffix in RUN_SUFFIXES if (folder / f"{key}{suffix}").is_file()
        ]
        if len(found) > 1:
            raise ConfigError(f"{folder}: {' and '.join(found)} are both runs of {key}; keep one")
        if found:
            runs[key] = str(folder / found[0])
    stray = unmatched_runs(folder, keys)
    missing = [key for key in keys if key not in runs]
    if stray and missing:
        verb = "matches" if len(stray) == 1 else "match"
        raise ConfigError(
            f"{folder}: {', '.join(stray)} {verb} no --dataset pair and there is no run for "
            f"{', '.join(missing)}: a misnamed file? A run is named after its pair, e.g. "
            f"{missing[0]}.trec (the pairs are {', '.join(keys)})"
        )
    if not runs:
        raise ConfigError(
            f"{folder}: a folder of runs holds one file per pair named by its key; found none "
            f"of {', '.join(k + '.trec' for k in keys)}"
        )
    return runs


def unmatched_runs(folder: Path, keys: Sequence[str]) -> list[str]:
    """The files of ``folder`` that are named as runs (by suffix) after no pair of ``keys``."""
    named = {f"{key}{suffix}" for key in keys for suffix in RUN_SUFFIXES}
    return sorted(
        path.name
        for path in folder.iterdir()
        if path.name.endswith(RUN_SUFFIXES) and path.name not in named and path.is_file()
    )


def folder_notes(inputs: Sequence[str], pairs: Sequence[DatasetSelection]) -> list[str]:
    """A note per system folder holding run files named after no pair: they are not read
    (a folder may hold runs of more pairs than are compared)."""
    keys = [p.key for p in pairs]
    notes = []
    for text in inputs:
        stray = unmatched_runs(Path(text), keys) if Path(text).is_dir() else []
        if stray:
            notes.append(
                f"{text}: {', '.join(stray)} not read: named after no --dataset pair (the pairs "
                f"are {', '.join(keys)})"
            )
    return notes


# -- the comparison -------------------------------------------------------------------------------


def compare_datasets(
    systems: Mapping[str, Mapping[str, str]],
    pairs: Sequence[DatasetSelection],
    metrics: Sequence[str],
    semantics: MetricSemantics,
    tolerances: Tolerances,
    *,
    tolerance: Sequence[str] = ("0.01",),
    alpha: float | None = None,
    unjudged_drops: str = "fail",
    most_changed: int = 5,
    notes: Sequence[str] = (),
) -> DatasetsComparison:
    """Every system against the first on each pair they share (``systems``: label to pair
    key to run file, from :func:`system_runs`); ``notes`` go first in the comparison's
    (:func:`folder_notes`)."""
    from pytest_ragmetrics.comparison.systems import compare_systems

    if len(systems) < 2:
        raise ConfigError(
            "compare needs at least two systems; the runs given are all one system's "
            "(runs are named by their tag, folders by their path)"
        )
    labels = tuple(systems)
    found, notes = [], list(notes)
    for pair in pairs:
        on_pair = _pair_systems(systems, pair, metrics, semantics)
        comparison = None
        if len(on_pair) > 1 and on_pair[0].label == labels[0]:
            comparison = compare_systems(
                on_pair,
                tolerances,
                tolerance=tolerance,
                alpha=alpha,
                most_changed=most_changed,
                unjudged_drops=unjudged_drops,
            )
        elif on_pair and on_pair[0].label != labels[0]:
            notes.append(
                f"{pair.key}: the reference {labels[0]} has no run here; the systems that do "
                "are shown, not compared"
            )
        found.append(PairComparison(pair.key, tuple(on_pair), comparison))
    return DatasetsComparison(
        labels, tuple(found), tuple(metrics), tuple(tolerance), alpha, tuple(notes)
    )


def _pair_systems(
    systems: Mapping[str, Mapping[str, str]],
    pair: DatasetSelection,
    metrics: Sequence[str],
    semantics: MetricSemantics,
) -> list[System]:
    """The systems with a run on ``pair``, each scored against its judgments."""
    from pytest_ragmetrics.comparison.inputs import pair_judgments
    from pytest_ragmetrics.comparison.systems import evaluate_run
    from pytest_ragmetrics.data.trec import read_run

    wanted = {label: runs[pair.key] for label, runs in systems.items() if pair.key in runs}
    if not wanted:
        return []
    judgments = pair_judgments(pair)
    out = []
    for label, path in wanted.items():
        run = read_run(path)
        record = evaluate_run(path, run, judgments, metrics, semantics)
        out.append(System(label, "run", path, record, run))
    return out
