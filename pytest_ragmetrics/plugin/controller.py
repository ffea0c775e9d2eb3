"""The controller's role: the one process that gathers every evaluation (from xdist workers or
from its own tests), updates the baseline, writes the reports and prints the summary. Without
xdist the single pytest process is the controller."""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ragmetrics.errors import BaselineError, OutputError, RagMetricsError
from pytest_ragmetrics.plugin.worker import BUDGET_LEDGER_KEY, COLLECTION_KEY, REPORT_ATTRIBUTE

if TYPE_CHECKING:
    from pytest_ragmetrics.baseline.store import BaselineStore
    from pytest_ragmetrics.cache import ClearReport
    from pytest_ragmetrics.plugin.session import RagSession
    from pytest_ragmetrics.report.outcome import Checked, SessionOutcome


# How to write the baseline elsewhere, in the error for a folder that refuses it.
BASELINE_HINT = "pass --ragmetrics-baseline=FILE (or set ragmetrics_baseline) to write it elsewhere"


class ControllerPlugin:
    """Gathers the evaluations and turns them, once, into the session outcome and its reports."""

    def __init__(self, session: RagSession) -> None:
        self.session = session
        self.evaluations: list[Checked] = []
        self.ran_tests: set[str] = set()
        self.errored_tests: set[str] = set()
        # Baseline entries of tests that ran without recording them: (test, name), lost.
        self.unrecorded: list[tuple[str, str]] = []
        self.unchecked: list[tuple[str, str]] = []
        self.update_counts: dict[str, int] | None = None
        self.commit_paths: list[str] = []
        self.stale: list[tuple[str, str]] = []
        self.cleared: ClearReport | None = None
        self.errors: list[str] = []  # one line each, printed in the summary; the run fails
        self.written: list[Path] = []  # the reports this run actually wrote
        self.outcome: SessionOutcome | None = None
        # Evaluations that two workers running the same test (--dist each) computed apart.
        self.diverged: list[str] = []
        self._by_key: dict[tuple[str, str], Checked] = {}

    def clear_cache(self) -> None:
        """``--ragmetrics-clear-cache``: empty the cache once, before any test runs.

        Entries the folder refuses to let go of stop the run here (a usage error saying what
        was and was not removed): the tests would otherwise read the entries asked to go.
        """
        self.cleared = self.session.cache().clear()
        if self.cleared.failed:
            where = self.session.settings.display(self.session.settings.cache_dir)
            raise pytest.UsageError(
                f"pytest-ragmetrics: --ragmetrics-clear-cache: {self.cleared.describe(where)}"
            )

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep the evaluations a test recorded (they travel on its call report)."""
        if report.when != "call":
            return
        data = getattr(report, REPORT_ATTRIBUTE, None)
        self.ran_tests.add(report.nodeid)
        if not data:
            return
        from pytest_ragmetrics.plugin.state import CheckedTest

        self.session.settings  # noqa: B018 - evaluations arrived: this session uses the plugin
        found = CheckedTest.from_dict(data)
        if found.errored:
            self.errored_tests.add(report.nodeid)
        self._add_evaluations(found.checked)
        for name in found.unrecorded:
            if (report.nodeid, name) not in self.unrecorded:
                self.unrecorded.append((report.nodeid, name))
        for message in found.unchecked:
            if (report.nodeid, message) not in self.unchecked:
                self.unchecked.append((report.nodeid, message))

    def _add_evaluations(self, checked: list[Checked]) -> None:
        """Keep each evaluation once: under ``--dist each`` every worker runs every test and
        sends the same evaluation. The first is kept; one that differs (a retriever that is
        not deterministic) is named in the summary."""
        for one in checked:
            first = self._by_key.get(one.record.key)
            if first is None:
                self.evaluations.append(one)
                self._by_key[one.record.key] = one
            elif one.label not in self.diverged and (
                first.record.baseline_entry("") != one.record.baseline_entry("")
            ):
                self.diverged.append(one.label)

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        """A collection error (xdist forwards the workers'): no entry may be called stale."""
        if report.failed:
            from pytest_ragmetrics.plugin.session import COLLECTION_ERRORS

            self.session.collection_fault(COLLECTION_ERRORS)

    def note_run_faults(self, session: pytest.Session) -> None:
        """A collection that did not finish, or a run stopped early (-x, Ctrl-C), cannot say
        which tests are gone: stale entries are kept, and the summary says why."""
        from pytest_ragmetrics.plugin.session import COLLECTION_INTERRUPTED, RUN_STOPPED

        under_xdist = session.config.pluginmanager.get_plugin("dsession") is not None
        if not under_xdist and not self.session.collection_finished:
            self.session.collection_fault(COLLECTION_INTERRUPTED)
        stopped = session.shouldfail or session.shouldstop
        interrupted = stopped or session.exitstatus == pytest.ExitCode.INTERRUPTED
        if interrupted and not self.session.collection_faults:
            self.session.collection_fault(RUN_STOPPED)

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Update the baseline if asked, then write the JSON and Markdown reports."""
        if not self.session.in_use or session.config.option.collectonly:
            return  # --collect-only runs nothing: an empty report would replace the last one
        self.note_run_faults(session)
        # A baseline that cannot be written does not keep the reports from being written
        # (nor a report the others): each failure is one line in the summary and fails the run.
        self._attempt(self.finish_baseline)
        self._attempt(lambda: self.write_reports(session.config))
        # Entries of tests that no longer exist (a dataset, a query or a test gone) hold values
        # this run no longer computes: lost, so the run fails until an update removes them.
        lost = self.stale and not self.session.settings.update_baseline
        if self.errors or (lost and session.exitstatus == pytest.ExitCode.OK):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def _attempt(self, step: Callable[[], None]) -> None:
        try:
            step()
        except RagMetricsError as exc:
            self.errors.append(str(exc))

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
                self._check_ids(self.session.baseline())
            return
        from pytest_ragmetrics.fileio import exclusive_lock, lock_beside

        # The lock of the file written: a symlinked baseline, or another spelling of its
        # path (--ragmetrics-baseline), is guarded by the lock of the file it names.
        lock = lock_beside(settings.baseline)
        with exclusive_lock(lock, what="baseline", hint=BASELINE_HINT):
            self._update_baseline()

    def _update_baseline(self) -> None:
        from pytest_ragmetrics.baseline.changes import save_dataset_digests
        from pytest_ragmetrics.baseline.store import BaselineStore

        settings = self.session.settings
        store: BaselineStore
        try:
            store = BaselineStore.load(settings.baseline)
        except BaselineError as exc:
            # It may hold entries of tests this run did not run (a merge conflict, a cut
            # copy): writing this run's entries over it would drop them, so it stays as it is.
            raise BaselineError(f"{exc}; the baseline was not updated") from None
        self.stale = self.session.stale_entries(store)
        self._check_ids(store)
        # Tests that crashed keep their entries untouched: their numbers may be incomplete.
        usable = [c.record for c in self.evaluations if c.record.test not in self.errored_tests]
        ran = self.ran_tests - self.errored_tests
        new_store, counts, changes = store.updated(usable, ran, self.stale, _version())
        failed = [c.record.key for c in self.evaluations if c.record.test in self.errored_tests]
        if failed:  # said in the summary: a count of "unchanged" would hide them
            counts["not_updated"] = len(failed)
            changes.update(dict.fromkeys(failed, "not updated"))
        if usable or counts["removed"]:
            used = {(r.dataset.get("name"), r.dataset.get("split")) for r in usable if r.dataset}
            commit = [settings.display(settings.baseline)]
            for pair in settings.datasets:  # the datasets the blessed evaluations ran on
                if (pair.name, pair.split) in used:
                    save_dataset_digests(
                        settings.baseline, self.session.dataset(pair.key), hint=BASELINE_HINT
                    )
                    digests = settings.display(settings.baseline.parent / "datasets") + "/"
                    commit += [digests] if digests not in commit else []
            new_store.save(hint=BASELINE_HINT)
            self.commit_paths = commit
        self.update_counts = counts
        self.evaluations = [
            replace(c, outcome=replace(c.outcome, update=changes[c.record.key]))
            if c.record.key in changes
            else c
            for c in self.evaluations
        ]

    def _check_ids(self, store: BaselineStore) -> None:
        """Evaluations with no entry whose tests the baseline holds under another path (a run
        from another rootdir, test files moved): a BaselineError saying so (the run fails;
        an update is refused, as it would hold each test twice, unless the old entries are
        stale, which it removes)."""
        from pytest_ragmetrics.baseline.store import UPDATE_HINT, moved_entries

        # An update removes stale entries (a test file that moved, run whole): no conflict.
        stale = set(self.stale) if self.session.settings.update_baseline else set()
        keys = [key for key in store.entry_keys() if key not in stale]
        missing = [c.record.key for c in self.evaluations if store.get(*c.record.key) is None]
        moved = moved_entries(keys, missing, self.session.rootpath) if keys and missing else []
        if not moved:
            self._check_foreign(store)
            return
        settings = self.session.settings
        (test, _), (held, _) = moved[0]
        count = len(moved)
        rootpath = self.session.rootpath
        where = "from the project's folder, or pass --rootdir=DIR"
        if rootpath is not None and settings.rootdir != rootpath:
            where = f"e.g. --rootdir={settings.rootdir}, the folder of the configuration"
        raise BaselineError(
            f"{count} evaluation{'s' if count != 1 else ''} of this run "
            f"{'have' if count != 1 else 'has'} no entry in the baseline "
            f"{settings.display(settings.baseline)}, which holds the same test"
            f"{'s' if count != 1 else ''} under another path (this run's {test!r} is "
            f"{held!r} there): node ids are relative to pytest's rootdir, here "
            f"{rootpath}. Run pytest with the rootdir the baseline was blessed with "
            f"({where}); if the test files "
            f"moved, run the whole suite (no paths) with {UPDATE_HINT}, which removes the "
            "entries of the files that are gone"
            + ("; the baseline was not updated" if settings.update_baseline else "")
        )

    def _check_foreign(self, store: BaselineStore) -> None:
        """No entry of the baseline matches an evaluation of this run and none of the test
        files its entries name is in the project: a BaselineError saying so (the run fails,
        an update is refused), as nothing was compared. Stale entries (removed by an update,
        failing the run otherwise) are left out: they say it already."""
        from pytest_ragmetrics.baseline.store import UPDATE_HINT, foreign_files

        stale = set(self.stale)
        held = [key for key in store.entry_keys() if key not in stale]
        evaluated = [c.record.key for c in self.evaluations]
        files = foreign_files(held, evaluated, self.session.rootpath)
        if not files:
            return
        settings = self.session.settings
        count = f"{len(held)} entr{'y' if len(held) == 1 else 'ies'}"
        shown = ", ".join(files[:3]) + (f" and {len(files) - 3} more" if len(files) > 3 else "")
        raise BaselineError(
            f"the baseline {settings.display(settings.baseline)} has {count} and none matches "
            "an evaluation of this run, and the test files they name are not in the project "
            f"({self.session.rootpath}): {shown}. Nothing was compared with the baseline (every "
            "evaluation is new). If the test files were renamed or moved, bless the whole suite "
            f"(no paths) with {UPDATE_HINT}, which removes the entries of the files that are "
            "gone; if the baseline is another project's, point ragmetrics_baseline at this "
            "project's own" + ("; the baseline was not updated" if settings.update_baseline else "")
        )

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
            unrecorded=self.unrecorded,
            unchecked=self.unchecked,
            cleared=self.cleared,
            cache_path=settings.display(settings.cache_dir),
        )

    def write_reports(self, config: pytest.Config) -> None:
        """Write the JSON report (after the modify hook edits it); append the Markdown one.

        Each report is written on its own: one that cannot be written is an error line, and
        the others are still written. Only those written are listed as written.
        """
        settings = self.session.settings
        self.outcome = self.session_outcome()
        if settings.json_report is not None or settings.html_report is not None:
            from pytest_ragmetrics.report.json_report import build_report

            document = build_report(self.outcome)
            created = document["created"]
            config.hook.pytest_ragmetrics_modify_report(report=document, config=config)
        if settings.html_report is not None:
            from pytest_ragmetrics.report.html import ReportPage, html_report

            page = ReportPage.of_outcome(self.outcome, created=created)
            text = html_report(page, worst=settings.html_worst)
            self._write(settings.html_report, "--ragmetrics-html", "HTML report", text)
        if settings.json_report is not None:
            self._attempt(lambda: self._write_json(settings.json_report, document))
        if settings.markdown_report is not None:
            from pytest_ragmetrics.report.markdown import markdown_report

            text = markdown_report(self.outcome)
            self._write(settings.markdown_report, "--ragmetrics-markdown", "Markdown report", text)

    def _write_json(self, path: Path | None, document: Any) -> None:
        assert path is not None
        try:
            text = json.dumps(document, indent=2, sort_keys=True, allow_nan=False)
        except (TypeError, ValueError, RecursionError) as exc:
            raise OutputError(
                f"{self.session.settings.display(path)}: the JSON report cannot be "
                f"written: {exc} (a pytest_ragmetrics_modify_report hook may have put a "
                "value there that JSON cannot hold: use str, int, float, bool, None, lists "
                "and dicts with string keys, and finite numbers)"
            ) from None
        self._write(path, "--ragmetrics-json", "JSON report", text + "\n")

    def _write(self, path: Path, flag: str, what: str, text: str) -> None:
        """Write (the Markdown report: append) one report; a refusal is an error line."""
        from pytest_ragmetrics.fileio import atomic_append_text, atomic_write_text

        write = atomic_append_text if flag == "--ragmetrics-markdown" else atomic_write_text
        hint = f"pass {flag}=FILE to write it elsewhere"
        try:
            write(path, text, what=what, hint=hint)
        except RagMetricsError as exc:
            self.errors.append(str(exc))
            return
        self.written.append(path)

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
        from pytest_ragmetrics.plugin.ineffective import ineffective_options

        for note in ineffective_options(settings):
            terminalreporter.write_line(f"ragmetrics: note: {for_terminal(note)}", yellow=True)
        for line in self._not_in_baseline_lines():
            terminalreporter.write_line(for_terminal(line), yellow=True)
        kept = self.session.collection_faults
        if kept and settings.baseline.exists():
            verb = "kept" if settings.update_baseline else "not checked"
            terminalreporter.write_line(
                f"ragmetrics: stale entries {verb}: {', '.join(kept)} (a test that did not "
                "collect or run still exists: no baseline entry is called stale"
                + (" or removed)" if settings.update_baseline else ")"),
                yellow=True,
            )
        if self.diverged:
            terminalreporter.write_line(
                f"ragmetrics: {len(self.diverged)} evaluation(s) differ between the xdist "
                "workers that ran the same test (--dist each); the reports and the baseline "
                "keep the first worker's numbers, and a retriever or pipeline that gives other "
                "results on each run makes its baseline flaky: "
                + ", ".join(for_terminal(label) for label in self.diverged),
                yellow=True,
            )
        for error in self.errors:
            shown_error = for_terminal(error, newlines=True)
            terminalreporter.write_line(f"ragmetrics: error: {shown_error}", red=True)
        for path in (settings.json_report, settings.markdown_report, settings.html_report):
            if path in self.written and self.evaluations:
                shown = for_terminal(settings.display(path))
                terminalreporter.write_line(f"ragmetrics: wrote {shown}")

    def _not_in_baseline_lines(self) -> list[str]:
        """Metrics the run computed that their baseline entries lack: not compared, with the
        count (ragmetrics_strict failed their tests; otherwise they are not gated yet)."""
        found = [
            (c.label, c.outcome.baseline.metrics_not_in_baseline)
            for c in self.evaluations
            if c.outcome.baseline is not None and c.outcome.baseline.metrics_not_in_baseline
        ]
        count = sum(len(metrics) for _, metrics in found)
        settings = self.session.settings
        if not count or settings.update_baseline:  # the update blesses them
            return []
        why = (
            "ragmetrics_strict fails their tests"
            if settings.strict
            else "not gated until the next --ragmetrics-update-baseline"
        )
        return [
            f"ragmetrics: not compared: {count} metric{'s' if count != 1 else ''} not in the "
            f"baseline {settings.display(settings.baseline)} (added since it was blessed): {why}:"
        ] + [f"  {where}: {', '.join(metrics)}" for where, metrics in found]


class XdistControllerHooks:
    """The controller's hooks that exist only with pytest-xdist (registered only with it)."""

    def __init__(self, session: RagSession) -> None:
        self.session = session
        self._ledger_folder: str | None = None

    def pytest_configure_node(self, node: Any) -> None:
        """Tell each worker whether it may draw progress bars on the controlling terminal, and
        where the session's token budget is kept (one ledger for all workers)."""
        from pytest_ragmetrics.plugin.progress import WORKER_TTY_KEY, controller_shows_progress

        node.workerinput[WORKER_TTY_KEY] = controller_shows_progress(node.config)
        if self.session.in_use and self.session.settings.judge_budget is not None:
            node.workerinput[BUDGET_LEDGER_KEY] = self._ledger()

    def _ledger(self) -> str:
        if self._ledger_folder is None:
            import tempfile

            self._ledger_folder = tempfile.mkdtemp(prefix="ragmetrics-budget-")
        return os.path.join(self._ledger_folder, "budget.json")

    def pytest_unconfigure(self, config: Any) -> None:
        if self._ledger_folder is not None:
            import shutil

            shutil.rmtree(self._ledger_folder, ignore_errors=True)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker finished: the controller (which does not collect) learns which tests exist,
        deselected ones included."""
        output = getattr(node, "workeroutput", None) or {}
        self.session.merge_worker_collection(output.get(COLLECTION_KEY))


def _version() -> str:
    from pytest_ragmetrics._version import __version__

    return __version__
