"""What pytest-ragmetrics keeps for one pytest session in one process: the settings and the
resources built from them on first use (dataset, cache, baseline, calibrations), and which
tests exist. Both roles (controller and xdist worker) have one."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import ConfigError

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.store import BaselineStore
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.model import Dataset, Run
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.plugin.settings import Settings
    from pytest_ragmetrics.records import EvaluationRecord


class RagSession:
    """Settings, lazily loaded resources and the collection of one pytest session."""

    def __init__(self, settings: Settings | Callable[[], Settings]) -> None:
        self._settings_factory = settings if callable(settings) else None
        self._settings: Settings | None = None if callable(settings) else settings
        self._dataset: Dataset | None = None
        self._dataset_error: Exception | None = None
        self._baseline: BaselineStore | None = None
        self._cache: Cache | None = None
        self._run_evaluations: dict[str, Evaluation] = {}
        # Which tests exist (for stale baseline entries): every test pytest collected, and
        # whether the collection covered whole files and the whole suite.
        self.collected: set[str] = set()
        self.collection_complete = True
        self.whole_suite = False
        self.rootpath: Path | None = None  # where node ids are relative to (pytest's rootdir)

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

    def dataset(self) -> Dataset:
        """The configured dataset, loaded once per process."""
        if self._dataset is None:
            if self._dataset_error is not None:
                raise self._dataset_error
            if self.settings.dataset is None:
                raise ConfigError(
                    "no dataset configured: set ragmetrics_dataset = path/to/beir_folder in "
                    "[tool.pytest.ini_options] (or pytest.ini), or pass "
                    "--ragmetrics-dataset=DIR"
                )
            from pytest_ragmetrics.data.layouts import load_dataset

            try:
                self._dataset = load_dataset(self.settings.dataset, self.settings.split)
            except Exception as exc:
                self._dataset_error = exc
                raise
        return self._dataset

    @property
    def loaded_dataset(self) -> Dataset | None:
        """The dataset if this process loaded it (nothing is loaded to answer)."""
        return self._dataset

    def baseline(self) -> BaselineStore:
        """The baseline as it was when first read in this process."""
        if self._baseline is None:
            from pytest_ragmetrics.baseline.store import BaselineStore

            self._baseline = BaselineStore.load(self.settings.baseline)
        return self._baseline

    def cache(self) -> Cache:
        if self._cache is None:
            from pytest_ragmetrics.cache import Cache

            self._cache = Cache(self.settings.cache_dir, enabled=self.settings.use_cache)
        return self._cache

    def judge_kappa(self, judge: Mapping[str, Any]) -> float | None:
        """The calibrated kappa of a judge identity, from the calibration file."""
        from pytest_ragmetrics.judges.calibration import load_kappa

        return load_kappa(self.settings.calibration, dict(judge))

    def explain_dataset_change(
        self, record: EvaluationRecord, entry: Mapping[str, Any]
    ) -> dict[str, str]:
        """How the dataset changed since ``entry`` was blessed, part by part."""
        from pytest_ragmetrics.baseline.changes import explain_dataset_change

        return explain_dataset_change(
            self.settings.baseline, entry.get("dataset"), record.dataset, self._dataset
        )

    def run_evaluation(self, run: Run) -> Evaluation:
        """The per-query evaluation of ``run`` against the dataset (for rag_query), once.

        Keyed by the run's content (its fingerprint), not by the object: a run made anew for
        each test (a function-scoped ``rag_run``) can never get the numbers of another one
        that happened to live at the same address.
        """
        found = self._run_evaluations.get(run.fingerprint)
        if found is None:
            from pytest_ragmetrics.metrics.names import parse_metric
            from pytest_ragmetrics.metrics.retrieval import evaluate

            semantics = self.settings.semantics
            metrics = [m for m in self.settings.metrics if parse_metric(m).layer == "retrieval"]
            found = evaluate(
                self.dataset().qrels,
                run,
                metrics,
                relevance_level=semantics.relevance_level,
                gain=semantics.gain,
                query_set=semantics.query_set,
                ignore_identical_ids=semantics.ignore_identical_ids,
            )
            self._run_evaluations[run.fingerprint] = found
        return found

    # -- which tests exist -----------------------------------------------------------------------

    def collection_summary(self) -> dict[str, Any]:
        """What this process collected, deselected tests included (an xdist worker sends it)."""
        return {"tests": sorted(self.collected), "complete": self.collection_complete}

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

    def stale_entries(self, store: BaselineStore) -> list[tuple[str, str]]:
        """The entries of ``store`` whose test no longer exists (see ``stale_entries``)."""
        from pytest_ragmetrics.baseline.store import stale_entries

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

        return {
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
