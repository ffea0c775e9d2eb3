"""The controller's role: the one process that gathers every evaluation (from xdist workers or
from its own tests), updates the baseline, writes the reports and prints the summary. Without
xdist the single pytest process is the controller."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ragmetrics.errors import BaselineError, OutputError, RagMetricsError
from pytest_ragmetrics.plugin.worker import COLLECTION_KEY, REPORT_ATTRIBUTE

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.store import BaselineStore
    from pytest_ragmetrics.cache import ClearReport
    from pytest_ragmetrics.plugin.session import RagSession
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome


class ControllerPlugin:
    """Gathers the evaluations and turns them, once, into the session outcome and its reports."""

    def __init__(self, session: RagSession) -> None:
        self.session = session
        self.evaluations: list[Checked] = []
        self.ran_tests: set[str] = set()
        self.errored_tests: set[str] = set()
        self.update_counts: dict[str, int] | None = None
        self.commit_paths: list[str] = []
        self.stale: list[tuple[str, str]] = []
        self.cleared: ClearReport | None = None
        self.error: str = ""
        self.outcome: SessionOutcome | None = None

    def clear_cache(self) -> None:
        """``--ragmetrics-clear-cache``: empty the cache once, before any test runs."""
        self.cleared = self.session.cache().clear()

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the evaluations a test recorded (they travel on its call report)."""
        if report.when != "call":
            return
        data = getattr(report, REPORT_ATTRIBUTE, None)
        self.ran_tests.add(report.nodeid)
        if not data:
            return
        from pytest_ragmetrics.report.outcome import Checked

        self.session.settings  # noqa: B018 - evaluations arrived: this session uses the plugin
        if data["errored"]:
            self.errored_tests.add(report.nodeid)
        self.evaluations.extend(Checked.from_dict(e) for e in data["evaluations"])

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Update the baseline if asked, then write the JSON and Markdown reports."""
        if not self.session.in_use:
            return
        try:
            self.finish_baseline()
            self.outcome = self.session_outcome()
            self.write_reports(session.config)
        except RagMetricsError as exc:
            self.error = str(exc)
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def finish_baseline(self) -> None:
        """List stale entries and, when asked, update the baseline.

        An update is a read-modify-write under the baseline's lock: the file is read again
        under the lock and only this run's changes are applied to it, so runs that update the
        same baseline at the same time keep each other's entries.
        """
        settings = self.session.settings
        if not settings.update_baseline:
            if settings.baseline.exists():
                self.stale = self.session.stale_entries(self.session.baseline())
            return
        from pytest_ragmetrics.fileio import exclusive_lock

        path = settings.baseline
        with exclusive_lock(path.with_name(f".{path.name}.lock"), what="baseline"):
            self._update_baseline()

    def _update_baseline(self) -> None:
        from pytest_ragmetrics.baseline.changes import save_dataset_digests
        from pytest_ragmetrics.baseline.store import BaselineStore

        settings = self.session.settings
        store: BaselineStore
        try:
            store = BaselineStore.load(settings.baseline)
        except BaselineError:
            store = BaselineStore(settings.baseline)  # a broken file is replaced on update
        self.stale = self.session.stale_entries(store)
        # Tests that crashed keep their entries untouched: their numbers may be incomplete.
        usable = [c.record for c in self.evaluations if c.record.test not in self.errored_tests]
        ran = self.ran_tests - self.errored_tests
        new_store, counts, changes = store.updated(usable, ran, self.stale, _version())
        if usable or counts["removed"]:
            used = {(r.dataset.get("name"), r.dataset.get("split")) for r in usable if r.dataset}
            commit = [settings.display(settings.baseline)]
            for pair in settings.datasets:  # the datasets the blessed evaluations ran on
                if (pair.name, pair.split) in used:
                    save_dataset_digests(settings.baseline, self.session.dataset(pair.key))
                    digests = settings.display(settings.baseline.parent / "datasets") + "/"
                    commit += [digests] if digests not in commit else []
            new_store.save()
            self.commit_paths = commit
        self.update_counts = counts
        self.evaluations = [
            replace(c, outcome=replace(c.outcome, update=changes[c.record.key]))
            if c.record.key in changes
            else c
            for c in self.evaluations
        ]

    def session_outcome(self) -> SessionOutcome:
        from pytest_ragmetrics.report.outcome import SessionOutcome

        settings = self.session.settings
        return SessionOutcome(
            self.evaluations,
            settings.metrics,
            settings=self.session.report_settings(),
            plugin_version=_version(),
            baseline_path=settings.display(settings.baseline),
            update_counts=self.update_counts,
            commit_paths=self.commit_paths,
            stale=self.stale,
            cleared=self.cleared,
            cache_path=settings.display(settings.cache_dir),
        )

    def write_reports(self, config: pytest.Config) -> None:
        """Write the JSON report (after the modify hook edits it); append the Markdown one."""
        settings = self.session.settings
        assert self.outcome is not None
        from pytest_ragmetrics.fileio import atomic_append_text, atomic_write_text

        if settings.json_report is not None or settings.html_report is not None:
            from pytest_ragmetrics.report.json_report import build_report

            document = build_report(self.outcome)
            config.hook.pytest_ragmetrics_modify_report(report=document, config=config)
        if settings.html_report is not None:
            from pytest_ragmetrics.report.html import html_report

            page = html_report(document, worst=settings.html_worst)
            atomic_write_text(settings.html_report, page)
        if settings.json_report is not None:
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
            from pytest_ragmetrics.report.markdown import markdown_report

            atomic_append_text(settings.markdown_report, markdown_report(self.outcome))

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the retrieval-layer and answer-layer tables."""
        if not self.session.in_use:
            return
        from pytest_ragmetrics.report.escaping import for_terminal
        from pytest_ragmetrics.report.terminal import summary_lines

        outcome = self.outcome or self.session_outcome()
        for kind, text in summary_lines(outcome):
            if kind == "section":
                terminalreporter.write_sep("-", text)
            else:
                terminalreporter.write_line(text)
        settings = self.session.settings
        if self.error:
            error = for_terminal(self.error, newlines=True)
            terminalreporter.write_line(f"ragmetrics: error: {error}", red=True)
        for path in (settings.json_report, settings.markdown_report, settings.html_report):
            if path is not None and path.exists() and self.evaluations:
                shown = for_terminal(settings.display(path))
                terminalreporter.write_line(f"ragmetrics: wrote {shown}")


class XdistControllerHooks:
    """The controller's hooks that exist only with pytest-xdist (registered only with it)."""

    def __init__(self, session: RagSession) -> None:
        self.session = session

    def pytest_configure_node(self, node: Any) -> None:
        """Tell each worker whether it may draw progress bars on the controlling terminal."""
        from pytest_ragmetrics.plugin.progress import WORKER_TTY_KEY, controller_shows_progress

        node.workerinput[WORKER_TTY_KEY] = controller_shows_progress(node.config)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker finished: the controller (which does not collect) learns which tests exist,
        deselected ones included."""
        output = getattr(node, "workeroutput", None) or {}
        self.session.merge_worker_collection(output.get(COLLECTION_KEY))


def _version() -> str:
    from pytest_ragmetrics import __version__

    return __version__
