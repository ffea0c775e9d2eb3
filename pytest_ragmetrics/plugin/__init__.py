"""pytest-ragmetrics plugin: options, markers, fixtures and the hooks of every test. Wiring only.

The controller and the xdist worker each register their role's plugin at configure time
(``controller.py``, ``worker.py``); the logic lives in the library. This module imports nothing
heavy, so having the plugin installed costs pytest nothing at start-up.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import pytest

from pytest_ragmetrics.errors import DryRun, RagMetricsError
from pytest_ragmetrics.options import FLAGS, OPTIONS, configured
from pytest_ragmetrics.plugin.fixtures import (
    judged_rankings,
    rag_answers,
    rag_cache,
    rag_corpus,
    rag_dataset,
    rag_eval,
    rag_generator,
    rag_judge,
    rag_pipeline,
    rag_qrels,
    rag_queries,
    rag_query,
    rag_references,
    rag_retriever,
    rag_run,
)
from pytest_ragmetrics.plugin.state import (
    CHECKED_KEY,
    RAG_EVAL_KEY,
    SESSION_KEY,
    CheckedTest,
    rag_session,
    thresholds_of,
)
from pytest_ragmetrics.plugin.worker import REPORT_ATTRIBUTE
from pytest_ragmetrics.report.escaping import for_terminal

__all__ = [
    "judged_rankings",
    "rag_answers",
    "rag_cache",
    "rag_corpus",
    "rag_dataset",
    "rag_eval",
    "rag_generator",
    "rag_judge",
    "rag_pipeline",
    "rag_qrels",
    "rag_queries",
    "rag_query",
    "rag_references",
    "rag_retriever",
    "rag_run",
]
PROGRESS_TOKEN = pytest.StashKey[Any]()


if TYPE_CHECKING:
    from _pytest.outcomes import Failed as _Failed
else:
    _Failed = pytest.fail.Exception  # pytest's public name of its Failed


class CheckFailed(_Failed, AssertionError):
    """A test failed its end-of-test checks (a threshold, the baseline, a lost entry).

    pytest's own ``Failed`` (shown without our traceback) and an ``AssertionError``, like a
    failed ``assert``: ``xfail(raises=AssertionError)`` catches it."""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the pytest_ragmetrics_* hook specifications (always, so conftests may use them)."""
    from pytest_ragmetrics.plugin import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Ini keys, each with a --ragmetrics-... override, and the command-line-only flags."""
    group = parser.getgroup("ragmetrics", "RAG metrics and baselines (pytest-ragmetrics)")
    for option in OPTIONS:
        parser.addini(
            option.name,
            option.help,
            type=option.ini_type,  # type: ignore[arg-type]
            default=False if option.ini_type == "bool" else option.ini_default,
        )
        help_text = option.help.replace("%", "%%")  # argparse formats help with %
        if option.ini_type == "bool":
            group.addoption(
                option.flag, action="store_true", default=None, dest=option.name, help=help_text
            )
        else:
            group.addoption(
                option.flag,
                action="append" if option.repeat else "store",
                default=None,
                dest=option.name,
                metavar=option.metavar,
                help=help_text,
            )
    for flag in FLAGS:
        group.addoption(
            flag.flag, action="store_true", default=False, dest=flag.name, help=flag.help
        )


def pytest_configure(config: pytest.Config) -> None:
    """Validate settings (a UsageError says what is allowed), register markers, metrics and
    this process's role."""
    from pytest_ragmetrics.plugin.session import RagSession

    config.addinivalue_line(
        "markers",
        "rag_threshold(**bounds): fail the test when a recorded evaluation's metric is below "
        "its bound, e.g. rag_threshold(recall_at_5=0.7, groundedness=0.8)",
    )
    config.addinivalue_line(
        "markers",
        "rag_queries(*query_ids): run a rag_query test only for these query ids",
    )
    config.addinivalue_line(
        "markers",
        "rag_dataset(*names, split=None): run a test that uses a dataset only on these of the "
        "configured datasets (and split)",
    )
    session = RagSession(lambda: _settings(config))
    session.collection_complete = not any("::" in str(a) for a in config.args)
    session.whole_suite = config.args_source != pytest.Config.ArgsSource.ARGS
    session.rootpath = config.rootpath
    config.stash[SESSION_KEY] = session
    from pytest_ragmetrics.default_cache import use_default_cache

    # from_function(..., cache=True) caches in this session's cache (cache_dir, --no-cache).
    config.add_cleanup(use_default_cache(session.cache))
    is_worker = hasattr(config, "workerinput")
    if is_worker:
        from pytest_ragmetrics.plugin.worker import WorkerPlugin

        plugin = WorkerPlugin(session, config.workerinput)  # type: ignore[attr-defined]
        config.pluginmanager.register(plugin, "ragmetrics-worker")
    else:
        from pytest_ragmetrics.plugin.controller import ControllerPlugin, XdistControllerHooks

        controller = ControllerPlugin(session)
        config.pluginmanager.register(controller, "ragmetrics-controller")
        if config.pluginmanager.hasplugin("xdist"):
            config.pluginmanager.register(XdistControllerHooks(session), "ragmetrics-xdist")
    # A project that neither configures nor extends pytest-ragmetrics pays nothing more here:
    # settings (and the metric registry) are then built on first use, with the defaults.
    if _register_extra_metrics(config) or configured(config.getoption, config.getini):
        settings = session.settings  # validates now: a bad value is a UsageError at start-up
        if settings.clear_cache and not is_worker:
            controller.clear_cache()
        if settings.dry_run:
            # Generation, judging and every request through our transport count instead of
            # running, in this process (each xdist worker configures its own).
            from pytest_ragmetrics import dryrun

            dryrun.start()
            config.add_cleanup(dryrun.stop)


def _shown(text: object) -> str:
    """A message for pytest to print: its control characters shown as escapes (RELIABILITY.md,
    "Text from the data is escaped for where it is shown")."""
    return for_terminal(text, newlines=True)


def _settings(config: pytest.Config) -> Any:
    """Validated settings; a bad value stops pytest with a UsageError saying what is allowed."""
    from pytest_ragmetrics.plugin.settings import settings_from_pytest

    try:
        return settings_from_pytest(config)
    except RagMetricsError as exc:
        raise pytest.UsageError(f"pytest-ragmetrics: {_shown(exc)}") from None


def _register_extra_metrics(config: pytest.Config) -> bool:
    """Let conftests register metrics (removed again when this config ends); True if any did."""
    if not config.hook.pytest_ragmetrics_register_metrics.get_hookimpls():
        return False
    from pytest_ragmetrics.metrics.names import register_metric, unregister_metric

    names: list[str] = []

    def register(name: str, function: Any, **options: Any) -> None:
        register_metric(name, function, **options)
        names.append(name)

    def cleanup() -> None:
        for name in names:
            unregister_metric(name)

    config.add_cleanup(cleanup)
    try:
        config.hook.pytest_ragmetrics_register_metrics(register=register)
    except RagMetricsError as exc:
        raise pytest.UsageError(f"pytest-ragmetrics: {_shown(exc)}") from None
    return True


# -- collection --------------------------------------------------------------------------------


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(
    collector: pytest.Collector, name: str, obj: object
) -> Generator[None, Any, Any]:
    """Validate rag_threshold markers: a bad metric or bound is a collection error."""
    result = yield
    items = result if isinstance(result, list) else [result]
    for item in items:
        if isinstance(item, pytest.Function) and item.get_closest_marker("rag_threshold"):
            try:
                thresholds_of(item)
            except RagMetricsError as exc:
                raise collector.CollectError(f"{item.nodeid}: {_shown(exc)}") from None
    return result


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Run tests that use a dataset once per configured (dataset, split) pair, and tests that
    use rag_query once per query id (of each pair)."""
    from pytest_ragmetrics.plugin.parametrize import parametrize_datasets

    try:
        parametrize_datasets(metafunc, rag_session(metafunc.config))
    except RagMetricsError as exc:
        raise pytest.Collector.CollectError(_shown(exc)) from None


@pytest.hookimpl(wrapper=True, trylast=True)
def pytest_make_collect_report(
    collector: pytest.Collector,
) -> Generator[None, pytest.CollectReport, pytest.CollectReport]:
    """Every test pytest collects exists, even if a plugin or conftest drops it later: from
    this report (``--lf`` keeps only a file's failed tests), from the items, or unannounced.

    The innermost wrapper (trylast): it sees the report before the wrappers of other plugins
    filter it."""
    report = yield
    found = rag_session(collector.config).collected
    found.update(node.nodeid for node in report.result if isinstance(node, pytest.Item))
    return report


def pytest_collection_finish(session: pytest.Session) -> None:
    """Remember which tests exist, to spot stale baseline entries (xdist: on each worker); a
    collection that failed somewhere cannot say which tests are gone."""
    from pytest_ragmetrics.plugin.session import COLLECTION_ERRORS

    found = rag_session(session.config)
    found.collected.update(item.nodeid for item in session.items)
    found.collection_finished = True
    if session.testsfailed or session.shouldfail or session.shouldstop:
        found.collection_fault(COLLECTION_ERRORS)


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Deselected tests still exist: their baseline entries are not stale."""
    if items:
        rag_session(items[0].config).collected.update(item.nodeid for item in items)


# -- running tests -----------------------------------------------------------------------------


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Show library progress bars (corpus encoding) on the terminal for the whole session."""
    from pytest_ragmetrics.plugin.progress import pytest_terminal_reporter

    reporter = pytest_terminal_reporter(session.config)
    if reporter is not None:
        from pytest_ragmetrics.progress import set_reporter

        session.config.stash[PROGRESS_TOKEN] = set_reporter(reporter)


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Stop showing progress bars."""
    token = session.config.stash.get(PROGRESS_TOKEN, None)
    if token is not None:
        from pytest_ragmetrics.progress import reset_reporter

        reset_reporter(token)
        del session.config.stash[PROGRESS_TOKEN]


def _finish_item(item: pytest.Item, *, errored: bool) -> list[str]:
    """Run the end-of-test checks and keep their outcome for the call report."""
    recorder = item.stash.get(RAG_EVAL_KEY, None)
    failures: list[str] = []
    try:
        # Read again now: a marker added while the test ran (request.node.add_marker) counts.
        thresholds = thresholds_of(item)
    except RagMetricsError as exc:
        thresholds = {}
        failures.append(f"{item.nodeid}: {exc}")
    session = rag_session(item.config)
    recorded = recorder.recorded if recorder is not None else []
    from pytest_ragmetrics.plugin.checks import unrecorded_entries

    unrecorded = [] if errored else unrecorded_entries(item.nodeid, recorded, session)
    if recorder is None and not thresholds and not failures and not unrecorded:
        return []
    from pytest_ragmetrics.report.outcome import Checked

    checked = [Checked(r) for r in recorded]
    unchecked: list[str] = []
    if not errored:
        from pytest_ragmetrics.plugin.checks import (
            check_test,
            thresholds_without_evaluation,
            unrecorded_message,
        )

        try:
            checked, more = check_test(
                recorded,
                thresholds,
                session,
                texts=recorder.query_texts if recorder is not None else None,
                verbose=item.config.get_verbosity() > 0,
            )
            failures += more
            unchecked = thresholds_without_evaluation(recorded, thresholds)
            failures += unchecked
            if unrecorded and not session.settings.update_baseline:
                failures.append(unrecorded_message(item.nodeid, unrecorded, session))
        except RagMetricsError as exc:
            failures.append(str(exc))
    item.stash[CHECKED_KEY] = CheckedTest(checked, errored, tuple(unrecorded), tuple(unchecked))
    return failures


@pytest.hookimpl(wrapper=True)
def pytest_runtest_setup(item: pytest.Item) -> Generator[None, Any, Any]:
    """A dry run stopping a fixture (it would have generated or asked a judge) skips the test."""
    try:
        return (yield)
    except DryRun as exc:
        message = str(exc)
    pytest.skip(_shown(message))


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """After the test body: thresholds and baseline; our errors fail without a traceback; a
    dry run stopping the body (it would have judged or sent a request) skips the test."""
    message: str | None = None
    try:
        result = yield
    except DryRun as exc:
        skipped = str(exc)
        pytest.skip(_shown(skipped))
    except RagMetricsError as exc:
        _finish_item(item, errored=True)
        message = str(exc)
    except BaseException:
        _finish_item(item, errored=True)
        raise
    if message is not None:  # failed outside the except block: no chained messages
        pytest.fail(_shown(message), pytrace=False)
    failures = _finish_item(item, errored=False)
    if failures:
        raise CheckFailed(_shown("\n\n".join(failures)), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the checked evaluations to the call report (xdist carries it to the controller)."""
    report = yield
    if call.when == "call":
        stored = item.stash.get(CHECKED_KEY, None)
        if stored is not None:
            setattr(report, REPORT_ATTRIBUTE, stored.to_dict())
    return report
