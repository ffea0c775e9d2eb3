"""Session state: lazy dataset/baseline/cache per process; the controller's collected results.

Workers (and a run without xdist) evaluate and check; the evaluations travel on test reports to
the controller, which alone prints the summary and writes the baseline and reports.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import BaselineError, ConfigError, OutputError

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline import BaselineStore
    from pytest_ragmetrics.cache import Cache, ClearReport
    from pytest_ragmetrics.data.model import Dataset, Run
    from pytest_ragmetrics.metrics.evaluation import Evaluation
    from pytest_ragmetrics.recorder import RecordedEvaluation
    from pytest_ragmetrics.settings import Settings

PLUGIN_VERSION = "0.1.0"


def _digest(text: str) -> str:
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=8).hexdigest()


class RagSession:
    """Everything pytest-ragmetrics keeps for one pytest session in one process."""

    def __init__(self, settings: Settings | Callable[[], Settings], *, is_worker: bool) -> None:
        self._settings_factory = settings if callable(settings) else None
        self._settings: Settings | None = None if callable(settings) else settings
        self.is_worker = is_worker
        self.entries: list[dict[str, Any]] = []
        self.ran_tests: set[str] = set()
        self.errored_tests: set[str] = set()
        self.collected: set[str] = set()
        self.collection_complete = True
        self.rootpath: Path | None = None  # where node ids are relative to (pytest's rootdir)
        self.whole_suite = False  # no paths or node ids were given on the command line
        self._dataset: Dataset | None = None
        self._dataset_error: Exception | None = None
        self._baseline: BaselineStore | None = None
        self._calibration: dict[str, Any] | None = None
        self._cache: Cache | None = None
        self._run_evaluations: dict[str, Evaluation] = {}
        self.update_counts: dict[str, int] | None = None
        self.stale: list[tuple[str, str]] = []
        self.cleared: ClearReport | None = None
        self.finish_error: str | None = None
        self.plugin_version = PLUGIN_VERSION
        self.progress_token: Any = None

    # -- lazily loaded resources ---------------------------------------------------------------

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

    def baseline(self) -> BaselineStore:
        if self._baseline is None:
            from pytest_ragmetrics.baseline import BaselineStore

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

    def run_evaluation(self, run: Run) -> Evaluation:
        """The per-query evaluation of ``run`` against the dataset (for rag_query), once.

        Keyed by the run's content (its fingerprint), not by the object: a run made anew for
        each test (a function-scoped ``rag_run``) can never get the numbers of another one
        that happened to live at the same address.
        """
        found = self._run_evaluations.get(run.fingerprint)
        if found is None:
            from pytest_ragmetrics.metrics.retrieval import evaluate

            semantics = self.settings.semantics
            metrics = [m for m in self.settings.metrics if not _is_answer_metric(m)]
            found = evaluate(
                self.dataset().qrels,
                run,
                metrics,
                relevance_level=semantics.relevance_level,
                gain=semantics.gain,
                query_set=semantics.query_set,
            )
            self._run_evaluations[run.fingerprint] = found
        return found

    # -- dataset digests: say what changed when a baseline is not comparable --------------------

    def current_digests(self, part: str) -> dict[str, str] | None:
        if self.settings.dataset is None:
            return None
        dataset = self.dataset()
        if part == "corpus":
            return dict(dataset.corpus.doc_digests)
        if part == "queries":
            return {q: _digest(t) for q, t in dataset.queries.items()}
        qrels = dataset.qrels
        return {q: _digest(json.dumps(sorted(qrels.judgments(q).items()))) for q in qrels}

    def describe_dataset_change(
        self, recorded: RecordedEvaluation, entry: Mapping[str, Any]
    ) -> dict[str, str]:
        from pytest_ragmetrics.baseline import load_digests
        from pytest_ragmetrics.regression import describe_change

        before = entry.get("dataset") or {}
        after = recorded.dataset or {}
        fp_before = before.get("fingerprints") or {}
        fp_after = after.get("fingerprints") or {}
        counts = {"corpus": "documents", "queries": "queries"}
        out: dict[str, str] = {}
        for part in ("corpus", "queries", "qrels"):
            if part not in fp_before or part not in fp_after or fp_before[part] == fp_after[part]:
                continue
            old = load_digests(self.settings.baseline, part, fp_before[part])
            dataset_fp = self._dataset.fingerprints.get(part) if self._dataset is not None else None
            new = self.current_digests(part) if dataset_fp == fp_after[part] else None
            key = counts.get(part, "")
            out[part] = describe_change(part, old, new, before.get(key), after.get(key))
        return out

    def save_digests(self) -> None:
        """Write digest sidecars of the configured dataset beside the baseline."""
        from pytest_ragmetrics.baseline import save_digests

        if self.settings.dataset is None:
            return
        dataset = self.dataset()
        for part, fingerprint in dataset.fingerprints.items():
            digests = self.current_digests(part)
            if digests is not None:
                save_digests(self.settings.baseline, part, fingerprint, digests)

    # -- controller side ----------------------------------------------------------------------

    def add_entries(
        self, test: str, entries: Iterable[Mapping[str, Any]], *, errored: bool
    ) -> None:
        self.settings  # noqa: B018 - evaluations arrived: this session uses pytest-ragmetrics
        self.ran_tests.add(test)
        if errored:
            self.errored_tests.add(test)
        self.entries.extend(dict(e) for e in entries)

    def finish(self) -> None:
        """Compute stale entries and, when asked, update the baseline (controller).

        An update is a read-modify-write under the baseline's lock: the file is read again
        under the lock and only this run's changes are applied to it, so runs that update the
        same baseline at the same time (other test files, other machines' checkouts merged
        later) keep each other's entries.
        """
        if self.is_worker or not self.in_use:
            return
        if not self.settings.update_baseline:
            if self.settings.baseline.exists():
                self.stale = self._stale_entries(self.baseline())
            return
        from pytest_ragmetrics.fileio import exclusive_lock

        path = self.settings.baseline
        with exclusive_lock(path.with_name(f".{path.name}.lock"), what="baseline"):
            self._update_baseline()

    def _update_baseline(self) -> None:
        from pytest_ragmetrics.baseline import BaselineStore
        from pytest_ragmetrics.recorder import RecordedEvaluation

        try:
            store = BaselineStore.load(self.settings.baseline)
        except BaselineError:
            store = BaselineStore(self.settings.baseline)  # a broken file is replaced on update
        self.stale = self._stale_entries(store)
        # Tests that crashed keep their entries untouched: their numbers may be incomplete.
        usable = [
            RecordedEvaluation.from_dict(e)
            for e in self.entries
            if e["test"] not in self.errored_tests
        ]
        ran = self.ran_tests - self.errored_tests
        new_store, counts = store.updated(usable, ran, self.stale, PLUGIN_VERSION)
        if usable or counts["removed"]:
            if any(
                e.get("dataset") and "corpus" in (e["dataset"].get("fingerprints") or {})
                for e in self.entries
            ):
                self.save_digests()
            new_store.save()
        self._baseline = new_store
        self.update_counts = counts

    # -- what exists, across xdist workers ----------------------------------------------------

    def collection_summary(self) -> dict[str, Any]:
        """What this worker collected, deselected tests included (sent to the controller)."""
        return {"tests": sorted(self.collected), "complete": self.collection_complete}

    def merge_worker_collection(self, summary: Any) -> None:
        """Controller: add a worker's :meth:`collection_summary` (None if the worker died).

        Without every worker's full list, nothing can be called stale: a deselected test's
        entry must never be listed or removed because the controller did not hear of it.
        """
        if not isinstance(summary, dict) or not isinstance(summary.get("tests"), list):
            self.collection_complete = False
            return
        self.collected.update(str(test) for test in summary["tests"])
        self.collection_complete &= bool(summary.get("complete"))

    def _stale_entries(self, store: BaselineStore) -> list[tuple[str, str]]:
        """Entries whose test no longer exists (see RELIABILITY.md, "When a baseline entry is
        removed").

        A test exists when pytest collected it in this run, whatever happened to it afterwards
        (deselected by -k/-m, dropped by a plugin or conftest). An entry is stale when its file
        was collected whole (no node ids on the command line, every xdist worker reported) and
        the test was not among the collected items, or, in a run of the whole suite (no paths
        or node ids on the command line), when its test file no longer exists. Other files are
        never judged.
        """
        complete = self.collection_complete and bool(self.collected)
        files = {nodeid.split("::", 1)[0] for nodeid in self.collected}
        stale = []
        for test, name in store.entry_keys():
            file = test.split("::", 1)[0]
            if test in self.collected:
                continue
            if complete and (file in files or (self.whole_suite and self._file_is_gone(file))):
                stale.append((test, name))
        return sorted(stale)

    def _file_is_gone(self, file: str) -> bool:
        """Whether a test file named in a node id is missing from the project (rootdir-relative)."""
        if self.rootpath is None or not file.endswith(".py"):
            return False
        try:
            return not (self.rootpath / file).exists()
        except OSError:
            return False

    def write_reports(self, modify_report: Callable[[dict[str, Any]], None]) -> None:
        """Write the JSON report (after ``modify_report`` edits it); append the Markdown one."""
        settings = self.settings
        if settings.json_report is not None:
            from pytest_ragmetrics.fileio import atomic_write_text
            from pytest_ragmetrics.report.json_report import build_report

            document = build_report(
                self.entries,
                settings=self.report_settings(),
                plugin_version=self.plugin_version,
                update_counts=self.update_counts,
                stale=self.stale,
            )
            modify_report(document)
            try:
                text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False)
            except (TypeError, ValueError, RecursionError) as exc:
                raise OutputError(
                    f"{settings.display(settings.json_report)}: the JSON report cannot be "
                    f"written: {exc} (a pytest_ragmetrics_modify_report hook may have put a "
                    "value there that JSON cannot hold: use str, int, float, bool, None, lists "
                    "and dicts with string keys, and finite numbers)"
                ) from None
            atomic_write_text(settings.json_report, text + "\n")
        if settings.markdown_report is not None:
            from pytest_ragmetrics.fileio import atomic_append_text
            from pytest_ragmetrics.report.markdown import markdown_report

            atomic_append_text(
                settings.markdown_report, markdown_report(self.entries, settings.metrics)
            )

    def report_settings(self) -> dict[str, Any]:
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


def _is_answer_metric(name: str) -> bool:
    from pytest_ragmetrics.metrics.names import parse_metric

    return parse_metric(name).layer == "answer"
