"""What pytest-ragmetrics keeps for one pytest session in one process: the settings and the
resources built from them on first use (dataset, cache, baseline, calibrations), and which
tests exist. Both roles (controller and xdist worker) have one."""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.metrics.semantics import MetricSemantics

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.store import BaselineStore
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.model import Dataset, Run
    from pytest_ragmetrics.data.selection import DatasetSelection
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.plugin.settings import Settings
    from pytest_ragmetrics.pooling import Supplement
    from pytest_ragmetrics.records import EvaluationRecord


# Why stale entries are kept, as the summary says it ("stale entries kept: collection errors").
COLLECTION_ERRORS = "collection errors"
COLLECTION_INTERRUPTED = "collection interrupted"
RUN_STOPPED = "run stopped early"


class RagSession:
    """Settings, lazily loaded resources and the collection of one pytest session."""

    def __init__(self, settings: Settings | Callable[[], Settings]) -> None:
        self._settings_factory = settings if callable(settings) else None
        self._settings: Settings | None = None if callable(settings) else settings
        self._datasets: dict[str, Dataset] = {}
        self._dataset_errors: dict[str, Exception] = {}
        self._baseline: BaselineStore | None = None
        self._cache: Cache | None = None
        self._budget: Any = None
        # The file the token budget is kept in when several processes share it (xdist).
        self.budget_ledger: str | None = None
        self._run_evaluations: dict[str, Evaluation] = {}
        # Which tests exist (for stale baseline entries): every test pytest collected, and
        # whether the collection covered whole files and the whole suite.
        self.collected: set[str] = set()
        self.collection_complete = True
        # Why this session's collection cannot say which tests are gone (a collection error,
        # an interrupted or stopped run): then no entry is stale (RELIABILITY.md).
        self.collection_faults: list[str] = []
        self.collection_finished = False
        self.whole_suite = False
        self.rootpath: Path | None = None  # where node ids are relative to (pytest's rootdir)
        self._supplement: Supplement | None = None

    @property
    def settings(self) -> Settings:
        """The validated settings, built on first use."""
        if self._settings is None:
            assert self._settings_factory is not None
            self._settings = self._settings_factory()
        return self._settings

    @property
    def in_use(self) -> bool:
        """Whether anything in this session needed pytest-ragmetrics (settings were built)."""
        return self._settings is not None

    def selection(self, key: str | None = None) -> DatasetSelection:
        """The (dataset, split) pair called ``key`` (``scifact-test``); without a key, the only
        one (several configured ones need the test's: use a dataset fixture or mark the test
        with ``@pytest.mark.rag_dataset(name)``)."""
        pairs = self.settings.datasets
        if not pairs:
            raise ConfigError(
                "no dataset configured: set ragmetrics_dataset = path/to/beir_folder in "
                "[tool.pytest.ini_options] (or pytest.ini), or pass "
                "--ragmetrics-dataset=DIR"
            )
        if key is None:
            if len(pairs) > 1:
                raise ConfigError(
                    f"{len(pairs)} datasets are configured ({', '.join(p.key for p in pairs)}) "
                    "and this test does not say which it is about: use a dataset fixture "
                    "(rag_dataset, rag_run, rag_queries, ...), which runs the test once per "
                    "dataset, or mark it @pytest.mark.rag_dataset('name')"
                )
            return pairs[0]
        for pair in pairs:
            if pair.key == key:
                return pair
        raise ConfigError(f"no configured dataset is called {key!r}")

    def dataset(self, key: str | None = None) -> Dataset:
        """A configured dataset (see :meth:`selection`), loaded once per process."""
        pair = self.selection(key)
        found = self._datasets.get(pair.key)
        if found is None:
            if pair.key in self._dataset_errors:
                raise self._dataset_errors[pair.key]
            from pytest_ragmetrics.data.layouts import load_dataset

            name = pair.name if self.settings.several_datasets else None
            try:
                # Stale labels are a note on each evaluation of the dataset, not a warning.
                found = load_dataset(pair.path, pair.split, name=name, warn=False)
            except Exception as exc:
                self._dataset_errors[pair.key] = exc
                raise
            # The notes name files under the rootdir: relative, like the rest of the report.
            root = f"{Path(self.settings.rootdir).resolve()}{os.sep}"
            found.notes[:] = [note.replace(root, "") for note in found.notes]
            self._datasets[pair.key] = found
        return found

    def loaded_dataset(self, fingerprints: Mapping[str, str] | None) -> Dataset | None:
        """The dataset this process loaded with these fingerprints, if any (none is loaded)."""
        for dataset in self._datasets.values():
            if fingerprints and dataset.fingerprints == dict(fingerprints):
                return dataset
        return None

    def selection_of(self, dataset: Dataset) -> DatasetSelection | None:
        """The configured pair ``dataset`` was loaded for (None: not from the configuration,
        e.g. an overridden rag_dataset fixture)."""
        for key, loaded in self._datasets.items():
            if loaded is dataset:
                return self.selection(key)
        return None

    def semantics(self, key: str | None = None) -> MetricSemantics:
        """The scoring rules of a (dataset, split) pair: the configured ones, with BEIR's
        identical-ids rule where ragmetrics_ignore_identical_ids applies it."""
        rules = self.settings.semantics
        if self.settings.datasets and self.selection(key).ignore_identical_ids:
            rules = dataclasses.replace(rules, ignore_identical_ids=True)
        return rules

    def baseline(self) -> BaselineStore:
        """The baseline as it was when first read in this process."""
        if self._baseline is None:
            from pytest_ragmetrics.baseline.store import BaselineStore

            self._baseline = BaselineStore.load(self.settings.baseline)
        return self._baseline

    def budget(self) -> Any:
        """The token budget (ragmetrics_judge_budget) shared by the generator and the judge,
        or None: for the whole session, every xdist worker spending from the ledger file the
        controller named (:attr:`budget_ledger`)."""
        tokens = self.settings.judge_budget
        if tokens is not None and self._budget is None:
            from pytest_ragmetrics.transport.budget import Budget

            self._budget = Budget(tokens, ledger=self.budget_ledger)
        return self._budget

    def cache(self) -> Cache:
        if self._cache is None:
            from pytest_ragmetrics.cache import Cache

            self._cache = Cache(self.settings.cache_dir, enabled=self.settings.use_cache)
        return self._cache

    def supplement(self) -> Supplement | None:
        """The supplementary qrels (ragmetrics_supplementary_qrels), read once and checked
        against the dataset's corpus (labels made for another are refused); None if unset."""
        path = self.settings.supplementary_qrels
        if path is None:
            return None
        if self._supplement is None:
            from pytest_ragmetrics.errors import RagMetricsError
            from pytest_ragmetrics.pooling import load_supplement

            corpus = self.dataset().corpus  # its own errors say what they are about
            try:
                self._supplement = load_supplement(
                    path,
                    calibration=self.settings.calibration,
                    min_kappa=self.settings.min_judge_kappa,
                    corpus=corpus,
                )
            except RagMetricsError as exc:
                raise ConfigError(f"ragmetrics_supplementary_qrels: {exc}") from None
            # Its notes name the file under the rootdir: relative, like the dataset's.
            root = f"{Path(self.settings.rootdir).resolve()}{os.sep}"
            notes = tuple(note.replace(root, "") for note in self._supplement.notes)
            self._supplement = dataclasses.replace(self._supplement, notes=notes)
        return self._supplement

    def judge_gate(self, judge: Mapping[str, Any], bound: float) -> str:
        """Why the kappa gate at ``bound`` refuses a judge identity (a clause after its name,
        from the calibration file), or '' when its verdicts may fail tests."""
        from pytest_ragmetrics.judges.calibration.store import kappa_gate

        return kappa_gate(self.settings.calibration, dict(judge), bound)

    def explain_dataset_change(
        self, record: EvaluationRecord, entry: Mapping[str, Any]
    ) -> dict[str, str]:
        """How the dataset changed since ``entry`` was blessed, part by part."""
        from pytest_ragmetrics.baseline.changes import explain_dataset_change

        loaded = self.loaded_dataset((record.dataset or {}).get("fingerprints"))
        return explain_dataset_change(
            self.settings.baseline, entry.get("dataset"), record.dataset, loaded
        )

    def run_evaluation(self, run: Run, key: str | None = None) -> Evaluation:
        """The per-query evaluation of ``run`` against a dataset (for rag_query), once.

        Keyed by the run's content (its fingerprint), not by the object: a run made anew for
        each test (a function-scoped ``rag_run``) can never get the numbers of another one
        that happened to live at the same address.
        """
        cache_key = f"{self.selection(key).key}:{run.fingerprint}"
        found = self._run_evaluations.get(cache_key)
        if found is None:
            from pytest_ragmetrics.metrics.names import parse_metric
            from pytest_ragmetrics.metrics.retrieval import evaluate

            semantics = self.semantics(key)
            metrics = [m for m in self.settings.metrics if parse_metric(m).layer == "retrieval"]
            found = evaluate(
                self.dataset(key).qrels,
                run,
                metrics,
                relevance_level=semantics.relevance_level,
                gain=semantics.gain,
                query_set=semantics.query_set,
                ignore_identical_ids=semantics.ignore_identical_ids,
            )
            self._run_evaluations[cache_key] = found
        return found

    # -- which tests exist -----------------------------------------------------------------------

    def collection_summary(self) -> dict[str, Any]:
        """What this process collected, deselected tests included (an xdist worker sends it)."""
        faults = list(self.collection_faults)
        if not self.collection_finished:
            faults.append(COLLECTION_INTERRUPTED)
        return {
            "tests": sorted(self.collected),
            "complete": self.collection_complete,
            "faults": faults,
        }

    def collection_fault(self, reason: str) -> None:
        """Note why the collection is incomplete: no baseline entry may be called stale."""
        if reason not in self.collection_faults:
            self.collection_faults.append(reason)

    def merge_worker_collection(self, summary: Any) -> None:
        """Add a worker's :meth:`collection_summary` (None if the worker died).

        Without every worker's full list, nothing can be called stale: a deselected test's
        entry must never be listed or removed because the controller did not hear of it.
        """
        if not isinstance(summary, dict) or not isinstance(summary.get("tests"), list):
            self.collection_complete = False
            return
        self.collected.update(str(test) for test in summary["tests"])
        self.collection_complete &= bool(summary.get("complete"))
        faults = summary.get("faults")
        if not isinstance(faults, list):  # a worker that did not say: nothing is stale
            faults = [COLLECTION_INTERRUPTED]
        for reason in faults:
            self.collection_fault(str(reason))

    def stale_entries(self, store: BaselineStore) -> list[tuple[str, str]]:
        """The entries of ``store`` whose test no longer exists (see ``stale_entries``); none
        when the collection had a fault (:attr:`collection_faults`): a test that failed to
        collect still exists."""
        from pytest_ragmetrics.baseline.store import stale_entries

        if self.collection_faults:
            return []
        return stale_entries(
            store.entry_keys(),
            self.collected,
            complete=self.collection_complete,
            whole_suite=self.whole_suite,
            rootpath=self.rootpath,
        )

    def report_settings(self) -> dict[str, Any]:
        """The settings as the JSON report records them."""
        s = self.settings

        def rel(path: Path | None) -> str | None:
            if path is None:
                return None
            try:
                return path.relative_to(s.rootdir).as_posix()
            except ValueError:
                return path.as_posix()

        several = {}
        if s.several_datasets:
            several["datasets"] = [
                {
                    "name": d.name,
                    "path": rel(d.path),
                    "split": d.split,
                    "ignore_identical_ids": d.ignore_identical_ids,
                }
                for d in s.datasets
            ]
        return {
            **several,
            "dataset": rel(s.dataset),
            "split": s.split,
            "k": s.k,
            "metrics": list(s.metrics),
            "semantics": s.semantics.as_dict(),
            "baseline": rel(s.baseline),
            "tolerance": {
                "default": str(s.tolerances.default),
                **{m: str(t) for m, t in s.tolerances.per_metric.items()},
            },
            "alpha": s.alpha,
            "strict": s.strict,
            "update_baseline": s.update_baseline,
        }
