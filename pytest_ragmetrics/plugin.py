"""pytest-ragmetrics plugin: options, marker, fixtures and hooks. Wiring only.

The logic lives in the library (settings, recorder, checks, baseline, report, session); this
module imports nothing heavy, so having the plugin installed costs pytest nothing at start-up.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Generator, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from pytest_ragmetrics.errors import RagMetricsError, RetrieverError
from pytest_ragmetrics.options import (
    FLAG_CLEAR_CACHE,
    FLAG_NO_CACHE,
    FLAG_UPDATE_BASELINE,
    INI_OPTIONS,
    configured,
)
from pytest_ragmetrics.session import RagSession

if TYPE_CHECKING:
    from pytest_ragmetrics.data.judged import JudgedRankings
    from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries, Run
    from pytest_ragmetrics.per_query import RagQuery
    from pytest_ragmetrics.recorder import RagEval

T = TypeVar("T")
SESSION_KEY = pytest.StashKey[RagSession]()
# Under xdist each worker reports the tests it collected, deselected ones included.
WORKER_COLLECTION_KEY = "ragmetrics_collected"
RAG_EVAL_KEY = pytest.StashKey["RagEval"]()
RESULTS_KEY = pytest.StashKey["tuple[list[dict[str, Any]], bool]"]()
REPORT_ATTRIBUTE = "ragmetrics"

OVERRIDE_HINT = """rag_retriever is not configured. Override it in your conftest.py:

    @pytest.fixture(scope="session")
    def rag_retriever(rag_corpus):
        from pytest_ragmetrics.retrievers import from_function
        return from_function(my_search, corpus=rag_corpus)  # my_search(text) -> [doc_id, ...]

or use a built-in one: ragmetrics_retriever = dense (or bm25) in your pytest configuration."""

JUDGE_HINT = """rag_judge is not configured. Set ragmetrics_judge = embedding (offline MiniLM),
http (with ragmetrics_judge_url and ragmetrics_judge_model, or RAGMETRICS_JUDGE_URL and
RAGMETRICS_JUDGE_MODEL) or recorded (with ragmetrics_judge_verdicts) in your pytest
configuration, or override it in your conftest.py:

    @pytest.fixture(scope="session")
    def rag_judge(rag_cache):
        return MyJudge(...)  # assess(query, answer, contexts, *, query_id=None)"""


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    """Register the pytest_ragmetrics_* hook specifications (always, so conftests may use them)."""
    from pytest_ragmetrics import hookspecs

    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    """Ini keys, each with a --ragmetrics-... override, and the command-line-only flags."""
    group = parser.getgroup("ragmetrics", "RAG metrics and baselines (pytest-ragmetrics)")
    for option in INI_OPTIONS:
        if option.type == "bool":
            parser.addini(option.name, option.help, type="bool", default=False)
            group.addoption(
                option.flag,
                action="store_true",
                default=None,
                dest=option.name,
                help=option.help.replace("%", "%%"),  # argparse formats help with %
            )
            continue
        default: Any = option.default
        if option.type == "args":
            default = shlex.split(option.default or "")
        parser.addini(
            option.name,
            option.help,
            type=option.type,  # type: ignore[arg-type]
            default=default,
        )
        group.addoption(
            option.flag,
            action="store",
            default=None,
            dest=option.name,
            metavar=option.metavar,
            help=option.help.replace("%", "%%"),
        )
    group.addoption(
        FLAG_UPDATE_BASELINE,
        action="store_true",
        default=False,
        dest="ragmetrics_update_baseline",
        help="write the current numbers into the baseline (bless them)",
    )
    group.addoption(
        FLAG_NO_CACHE,
        action="store_true",
        default=False,
        dest="ragmetrics_no_cache",
        help="neither read nor write the cache",
    )
    group.addoption(
        FLAG_CLEAR_CACHE,
        action="store_true",
        default=False,
        dest="ragmetrics_clear_cache",
        help="empty the cache folder first",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Validate settings (a UsageError says what is allowed), register markers and metrics."""
    config.addinivalue_line(
        "markers",
        "rag_threshold(**bounds): fail the test when a recorded evaluation's metric is below "
        "its bound, e.g. rag_threshold(recall_at_5=0.7, groundedness=0.8)",
    )
    config.addinivalue_line(
        "markers",
        "rag_queries(*query_ids): run a rag_query test only for these query ids",
    )

    session = RagSession(lambda: _settings(config), is_worker=hasattr(config, "workerinput"))
    session.collection_complete = not any("::" in str(a) for a in config.args)
    session.whole_suite = config.args_source != pytest.Config.ArgsSource.ARGS
    session.rootpath = config.rootpath
    config.stash[SESSION_KEY] = session
    # A project that neither configures nor extends pytest-ragmetrics pays nothing more here:
    # settings (and the metric registry) are then built on first use, with the defaults.
    if _register_extra_metrics(config) or configured(config.getoption, config.getini):
        settings = session.settings  # validates now: a bad value is a UsageError at start-up
        if settings.clear_cache and not session.is_worker:
            session.cleared = session.cache().clear()
    config.pluginmanager.register(_ReportCollector(session), "ragmetrics-collector")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistHooks(session), "ragmetrics-xdist")


def _settings(config: pytest.Config) -> Any:
    """Validated settings; a bad value stops pytest with a UsageError saying what is allowed."""
    from pytest_ragmetrics.settings import settings_from_pytest

    try:
        return settings_from_pytest(config)
    except RagMetricsError as exc:
        raise pytest.UsageError(f"pytest-ragmetrics: {exc}") from None


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
        raise pytest.UsageError(f"pytest-ragmetrics: {exc}") from None
    return True


class _ReportCollector:
    """Collects the evaluations that arrive on call reports (from xdist workers or in-process)."""

    def __init__(self, session: RagSession) -> None:
        self.session = session

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Controller (or single process): keep the evaluations a test recorded."""
        if report.when != "call" or self.session.is_worker:
            return
        data = getattr(report, REPORT_ATTRIBUTE, None)
        if data:
            self.session.add_entries(report.nodeid, data["entries"], errored=data["errored"])
        else:
            self.session.ran_tests.add(report.nodeid)


class _XdistHooks:
    """Hooks that exist only with pytest-xdist; registered only when it is loaded."""

    def __init__(self, session: RagSession) -> None:
        self.session = session

    def pytest_configure_node(self, node: Any) -> None:
        """Tell each worker whether it may draw progress bars on the controlling terminal."""
        from pytest_ragmetrics.progress import WORKER_TTY_KEY, controller_shows_progress

        node.workerinput[WORKER_TTY_KEY] = controller_shows_progress(node.config)

    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker finished: the controller (which does not collect) learns which tests exist,
        deselected ones included."""
        output = getattr(node, "workeroutput", None) or {}
        self.session.merge_worker_collection(output.get(WORKER_COLLECTION_KEY))


def _session(config: pytest.Config) -> RagSession:
    return config.stash[SESSION_KEY]


def _clean(fn: Callable[[], T]) -> T:
    """Run ``fn``; our errors become a failure showing just their message, no traceback."""
    try:
        return fn()
    except RagMetricsError as exc:
        message = str(exc)
    # Failed outside the except block, so the report does not chain our error's message twice.
    pytest.fail(message, pytrace=False)


# -- collection --------------------------------------------------------------------------------


def _thresholds(item: pytest.Item) -> dict[str, float]:
    """Merged rag_threshold bounds, the closest marker winning (validated at collection)."""
    from pytest_ragmetrics.recorder import parse_thresholds

    merged: dict[str, float] = {}
    for marker in item.iter_markers("rag_threshold"):
        for metric, bound in parse_thresholds(marker.kwargs, marker.args).items():
            merged.setdefault(metric, bound)
    return merged


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
                _thresholds(item)
            except RagMetricsError as exc:
                raise collector.CollectError(f"{item.nodeid}: {exc}") from None
    return result


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Parametrize tests that use rag_query over the dataset's query ids."""
    if "rag_query" not in metafunc.fixturenames:
        return
    session = _session(metafunc.config)
    try:
        query_ids = session.dataset().queries.query_ids.tolist()
    except RagMetricsError as exc:
        raise pytest.Collector.CollectError(f"rag_query: {exc}") from None
    chosen = [a for m in metafunc.definition.iter_markers("rag_queries") for a in m.args]
    if chosen:
        test = metafunc.definition.nodeid
        wrong = [q for q in chosen if not isinstance(q, str)]
        if wrong:
            raise pytest.Collector.CollectError(
                f"{test}: rag_queries({wrong[0]!r}): query ids are strings; write "
                f"rag_queries({str(wrong[0])!r})"
            )
        known = set(query_ids)
        unknown = [q for q in chosen if q not in known]
        if unknown:
            raise pytest.Collector.CollectError(
                f"{test}: rag_queries: query ids not in the dataset: "
                f"{', '.join(unknown[:10])}{' ...' if len(unknown) > 10 else ''} "
                f"(it has {len(query_ids)} queries, e.g. {', '.join(map(repr, query_ids[:3]))})"
            )
        query_ids = list(dict.fromkeys(chosen))
    metafunc.parametrize("rag_query", query_ids, ids=query_ids, indirect=True)


def pytest_itemcollected(item: pytest.Item) -> None:
    """Every test pytest collects exists, even if a plugin or conftest drops it later."""
    _session(item.config).collected.add(item.nodeid)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Remember which tests exist, to spot stale baseline entries (xdist: on each worker)."""
    _session(session.config).collected.update(item.nodeid for item in session.items)


def pytest_deselected(items: list[pytest.Item]) -> None:
    """Deselected tests still exist: their baseline entries are not stale."""
    if items:
        _session(items[0].config).collected.update(item.nodeid for item in items)


# -- fixtures ----------------------------------------------------------------------------------


@pytest.fixture(scope="session")
def rag_dataset(request: pytest.FixtureRequest) -> Dataset:
    """The configured dataset (ragmetrics_dataset, ragmetrics_split)."""
    return _clean(_session(request.config).dataset)


@pytest.fixture(scope="session")
def rag_corpus(rag_dataset: Dataset) -> Corpus:
    """The dataset's corpus."""
    return rag_dataset.corpus


@pytest.fixture(scope="session")
def rag_queries(rag_dataset: Dataset) -> Queries:
    """The dataset's queries (those judged in the split)."""
    return rag_dataset.queries


@pytest.fixture(scope="session")
def rag_qrels(rag_dataset: Dataset) -> Qrels:
    """The dataset's relevance judgments."""
    return rag_dataset.qrels


@pytest.fixture(scope="session")
def rag_cache(request: pytest.FixtureRequest) -> Any:
    """The cache (ragmetrics_cache_dir) for your own retrievers and judges."""
    return _session(request.config).cache()


@pytest.fixture(scope="session")
def rag_retriever(request: pytest.FixtureRequest) -> Any:
    """The retriever under test: override it in conftest.py, or set ragmetrics_retriever."""
    session = _session(request.config)
    kind = session.settings.retriever
    if kind is None:
        pytest.fail(OVERRIDE_HINT, pytrace=False)

    def build() -> Any:
        from pytest_ragmetrics.retrievers import build_retriever

        options: dict[str, Any] = {"cache": session.cache()}
        if session.settings.model:
            options["model"] = session.settings.model
        return build_retriever(kind, session.dataset().corpus, **options)

    return _clean(build)


@pytest.fixture(scope="session")
def rag_judge(request: pytest.FixtureRequest) -> Any:
    """The answer-layer judge: override it in conftest.py, or set ragmetrics_judge."""
    session = _session(request.config)
    if session.settings.judge is None:
        pytest.fail(JUDGE_HINT, pytrace=False)

    def build() -> Any:
        from pytest_ragmetrics.judges.factory import configured_judge

        return configured_judge(session.settings, session.cache())

    return _clean(build)


@pytest.fixture(scope="session")
def rag_run(request: pytest.FixtureRequest, rag_retriever: Any, rag_queries: Queries) -> Run:
    """``rag_retriever`` searched over ``rag_queries`` at ragmetrics_k, once per session."""
    settings = _session(request.config).settings

    def search() -> Run:
        from pytest_ragmetrics.data.model import Run

        result = rag_retriever.search(rag_queries, settings.k)
        if not isinstance(result, (Run, Mapping)):
            raise RetrieverError(
                f"rag_retriever {rag_retriever!r}: search(queries, k) returned "
                f"{type(result).__name__}; return a Run (e.g. Run.from_rankings("
                "{query_id: [doc_id, ...]})) or a dict {query_id: {doc_id: score}}"
            )
        run = Run.from_dict(result)
        identity = getattr(rag_retriever, "identity", None)
        provenance = {
            "retriever": identity()
            if callable(identity)
            else {"name": type(rag_retriever).__name__},
            "k": settings.k,
        }
        setattr(run, "provenance", provenance)  # noqa: B010 - read by rag_eval
        return run

    return _clean(search)


@pytest.fixture
def rag_eval(request: pytest.FixtureRequest) -> RagEval:
    """Evaluate and record: ``rag_eval.retrieval(run)``, ``rag_eval.answers(assessments)``."""
    from pytest_ragmetrics.recorder import RagEval

    session = _session(request.config)
    settings = session.settings
    item = request.node

    def on_record(recorded: Any) -> None:
        if settings.junit_properties:
            for metric, value in recorded.evaluation.mean.items():
                item.user_properties.append((f"ragmetrics:{recorded.name}:{metric}", value))
        request.config.hook.pytest_ragmetrics_evaluation_recorded(recorded=recorded, item=item)

    recorder = RagEval(
        item.nodeid,
        metrics=settings.metrics,
        semantics=settings.semantics,
        k=settings.k,
        thresholds=lambda: _thresholds(item),
        dataset=session.dataset,
        on_record=on_record,
    )
    item.stash[RAG_EVAL_KEY] = recorder
    return recorder


@pytest.fixture(scope="session")
def judged_rankings(request: pytest.FixtureRequest) -> JudgedRankings:
    """Rankings with their own grades, from ragmetrics_judged_rankings (JSONL)."""
    path = _session(request.config).settings.judged_rankings
    if path is None:
        pytest.fail(
            "judged_rankings: set ragmetrics_judged_rankings = path/to/file.jsonl (lines "
            '{"query_id": ..., "ranking": [ids], "grades": {id: grade}}) or pass '
            "--ragmetrics-judged-rankings=FILE",
            pytrace=False,
        )
    from pytest_ragmetrics.data.judged import read_judged_rankings

    return _clean(lambda: read_judged_rankings(path))


@pytest.fixture
def rag_query(request: pytest.FixtureRequest, rag_run: Run) -> RagQuery:
    """The query this test instance is about (tests using it run once per query id)."""
    from pytest_ragmetrics.per_query import rag_query_of

    session = _session(request.config)
    return _clean(lambda: rag_query_of(session, rag_run, str(request.param)))


@pytest.hookimpl(tryfirst=True)
def pytest_sessionstart(session: pytest.Session) -> None:
    """Show library progress bars (corpus encoding) on the terminal for the whole session."""
    from pytest_ragmetrics.progress import pytest_terminal_reporter

    reporter = pytest_terminal_reporter(session.config)
    if reporter is not None:
        from pytest_ragmetrics.progress import set_reporter

        _session(session.config).progress_token = set_reporter(reporter)


# -- running tests -----------------------------------------------------------------------------


def _finish_item(item: pytest.Item, *, errored: bool) -> list[str]:
    """Run the end-of-test checks and keep the recorded results for the report."""
    recorder = item.stash.get(RAG_EVAL_KEY, None)
    failures: list[str] = []
    try:
        # Read again now: a marker added while the test ran (request.node.add_marker) counts.
        thresholds = _thresholds(item)
    except RagMetricsError as exc:
        thresholds = {}
        failures.append(f"{item.nodeid}: {exc}")
    if recorder is None and not thresholds and not failures:
        return []
    recorded = recorder.recorded if recorder is not None else []
    if not errored:
        from pytest_ragmetrics.checks import CheckContext, apply_late_thresholds, check_test

        session = _session(item.config)
        try:
            failures += apply_late_thresholds(recorded, thresholds)
            context = CheckContext(
                session.settings,
                session.baseline(),
                session.describe_dataset_change,
                session.judge_kappa,
            )
            failures += check_test(recorded, thresholds, context)
        except RagMetricsError as exc:
            failures.append(str(exc))
    item.stash[RESULTS_KEY] = ([r.to_dict() for r in recorded], errored)
    return failures


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, Any, Any]:
    """After the test body: thresholds and baseline; our errors fail without a traceback."""
    message: str | None = None
    try:
        result = yield
    except RagMetricsError as exc:
        _finish_item(item, errored=True)
        message = str(exc)
    except BaseException:
        _finish_item(item, errored=True)
        raise
    if message is not None:  # failed outside the except block: no chained messages
        pytest.fail(message, pytrace=False)
    failures = _finish_item(item, errored=False)
    if failures:
        pytest.fail("\n\n".join(failures), pytrace=False)
    return result


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """Attach the recorded evaluations to the call report (xdist carries it to the controller)."""
    report = yield
    if call.when == "call":
        stored = item.stash.get(RESULTS_KEY, None)
        if stored is not None:
            entries, errored = stored
            setattr(report, REPORT_ATTRIBUTE, {"entries": entries, "errored": errored})
    return report


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """Controller: update the baseline if asked, then write the JSON and Markdown reports."""
    state = _session(session.config)
    if state.progress_token is not None:
        from pytest_ragmetrics.progress import reset_reporter

        reset_reporter(state.progress_token)
        state.progress_token = None
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # an xdist worker: xdist sends this dict to the controller
        workeroutput[WORKER_COLLECTION_KEY] = state.collection_summary()
    if state.is_worker or not state.in_use:
        return
    try:
        state.finish()
        state.write_reports(
            lambda document: session.config.hook.pytest_ragmetrics_modify_report(
                report=document, config=session.config
            )
        )
    except RagMetricsError as exc:
        state.finish_error = str(exc)
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: pytest.Config) -> None:
    """Print the retrieval-layer and answer-layer tables (controller only)."""
    state = _session(config)
    if state.is_worker or not state.in_use:
        return
    from pytest_ragmetrics.report.terminal import summary_lines

    if state.cleared is not None:
        folder = state.settings.display(state.settings.cache_dir)
        terminalreporter.write_line(f"ragmetrics: {state.cleared.describe(folder)}")
    lines = summary_lines(
        sorted(state.entries, key=lambda e: (e["test"], e["name"])),
        state.settings.metrics,
        update_counts=state.update_counts,
        stale=state.stale,
        baseline_path=state.settings.display(state.settings.baseline),
    )
    for kind, text in lines:
        if kind == "section":
            terminalreporter.write_sep("-", text)
        else:
            terminalreporter.write_line(text)
    if state.finish_error:
        terminalreporter.write_line(f"ragmetrics: error: {state.finish_error}", red=True)
    for path in (state.settings.json_report, state.settings.markdown_report):
        if path is not None and path.exists() and state.entries:
            terminalreporter.write_line(f"ragmetrics: wrote {state.settings.display(path)}")
