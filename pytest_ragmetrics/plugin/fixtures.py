"""The fixtures: the dataset and its parts, the cache, the retriever and judge under test, the
run, ``rag_eval``, ``rag_query`` and ``judged_rankings``."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, TypeVar

import pytest

from pytest_ragmetrics.errors import RagMetricsError, RetrieverError
from pytest_ragmetrics.plugin.state import RAG_EVAL_KEY, rag_session, thresholds_of
from pytest_ragmetrics.report.escaping import for_junit, for_terminal

if TYPE_CHECKING:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.data.answers import References
    from pytest_ragmetrics.data.judged import JudgedRankings
    from pytest_ragmetrics.data.model import Corpus, Dataset, Qrels, Queries, Run
    from pytest_ragmetrics.generation.answering import AnswerSet
    from pytest_ragmetrics.generation.generators import Generator
    from pytest_ragmetrics.generation.pipelines import Pipeline
    from pytest_ragmetrics.judges.protocols import Judge
    from pytest_ragmetrics.plugin.per_query import RagQuery
    from pytest_ragmetrics.plugin.recording import RagEval
    from pytest_ragmetrics.plugin.settings import Settings
    from pytest_ragmetrics.retrievers.base import Retriever

T = TypeVar("T")

RETRIEVER_HINT = """rag_retriever is not configured. Override it in your conftest.py:

    @pytest.fixture(scope="session")
    def rag_retriever(rag_corpus):
        from pytest_ragmetrics import from_function
        return from_function(my_search, corpus=rag_corpus)  # my_search(text) -> [doc_id, ...]

or use a built-in one: ragmetrics_retriever = dense (or bm25) in your pytest configuration."""

JUDGE_HINT = """rag_judge is not configured. Set ragmetrics_judge = embedding (offline MiniLM),
http (with ragmetrics_judge_url and ragmetrics_judge_model, or RAGMETRICS_JUDGE_URL and
RAGMETRICS_JUDGE_MODEL) or recorded (with ragmetrics_judge_verdicts) in your pytest
configuration, or override it in your conftest.py:

    @pytest.fixture(scope="session")
    def rag_judge(rag_cache):
        return MyJudge(...)  # assess(query, answer, contexts, *, query_id=None)"""


def without_traceback(fn: Callable[[], T]) -> T:
    """Run ``fn``; our errors fail the test showing just their message, no traceback."""
    try:
        return fn()
    except RagMetricsError as exc:
        message = for_terminal(exc, newlines=True)
    # Failed outside the except block, so the report does not chain our error's message twice.
    pytest.fail(message, pytrace=False)


def dataset_key(request: pytest.FixtureRequest) -> str | None:
    """The (dataset, split) pair this test instance runs on (None: the only one, if any)."""
    callspec = getattr(request.node, "callspec", None)
    if callspec is not None and "rag_dataset" in callspec.params:
        return str(callspec.params["rag_dataset"])
    marked = list(request.node.iter_markers("rag_dataset"))
    session = rag_session(request.config)
    if marked and session.settings.several_datasets:
        from pytest_ragmetrics.plugin.parametrize import chosen_datasets

        pairs = chosen_datasets(session, marked, request.node.nodeid)
        return pairs[0].key if len(pairs) == 1 else None
    return None


@pytest.fixture(scope="session")
def rag_dataset(request: pytest.FixtureRequest) -> Dataset:
    """The configured dataset (ragmetrics_dataset, ragmetrics_split); with several, the one
    this test instance runs on (tests that use it run once per (dataset, split) pair)."""
    key = getattr(request, "param", None)
    return without_traceback(lambda: rag_session(request.config).dataset(key))


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
def rag_cache(request: pytest.FixtureRequest) -> Cache:
    """The cache (ragmetrics_cache_dir) for your own retrievers and judges."""
    return rag_session(request.config).cache()


@pytest.fixture(scope="session")
def rag_retriever(request: pytest.FixtureRequest, rag_corpus: Corpus) -> Retriever:
    """The retriever under test: override it in conftest.py, or set ragmetrics_retriever."""
    session = rag_session(request.config)
    kind = session.settings.retriever
    if kind is None:
        pytest.fail(RETRIEVER_HINT, pytrace=False)

    def build() -> Retriever:
        from pytest_ragmetrics.retrievers import build_retriever

        options: dict[str, Any] = {"cache": session.cache()}
        if session.settings.model:
            options["model"] = session.settings.model
        if session.settings.executor:
            options["executor"] = session.settings.executor
        return build_retriever(kind, rag_corpus, **options)

    return without_traceback(build)


@pytest.fixture(scope="session")
def rag_judge(request: pytest.FixtureRequest) -> Judge:
    """The answer-layer judge: override it in conftest.py, or set ragmetrics_judge."""
    session = rag_session(request.config)
    if session.settings.judge is None:
        pytest.fail(JUDGE_HINT, pytrace=False)
    return without_traceback(
        lambda: configured_judge(session.settings, session.cache(), session.budget())
    )


def configured_judge(settings: Settings, cache: Any = None, budget: Any = None) -> Judge:
    """The judge the ragmetrics_judge* settings describe (the rag_judge fixture's default):
    for http its prompts, temperature and seed too; for embedding and http its repeats."""
    from pytest_ragmetrics.judges.factory import build_judge

    assert settings.judge is not None
    options: dict[str, Any] = {}
    if settings.judge == "http":
        options.update(
            concurrency=settings.judge_concurrency,
            timeout=settings.judge_timeout,
            attempt_timeout=settings.judge_attempt_timeout,
            temperature=settings.judge_temperature,
            seed=settings.judge_seed,
            budget=budget,
        )
        if settings.judge_prompt_texts:
            options["prompts"] = dict(settings.judge_prompt_texts)
    if settings.judge_repeats is not None:
        options["repeats"] = settings.judge_repeats
    return build_judge(
        settings.judge,
        cache=cache,
        model=settings.judge_model,
        url=settings.judge_url,
        verdicts=settings.judge_verdicts,
        **options,
    )


GENERATOR_HINT = """rag_generator is not configured. Set ragmetrics_generator_url and
ragmetrics_generator_model (or RAGMETRICS_GENERATOR_URL and RAGMETRICS_GENERATOR_MODEL) for an
OpenAI-compatible chat endpoint, or override it (or rag_pipeline) in your conftest.py:

    @pytest.fixture(scope="session")
    def rag_generator():
        from pytest_ragmetrics import FunctionGenerator
        return FunctionGenerator(my_generate, name="my-llm", version="1")  # (query, contexts)"""


@pytest.fixture(scope="session")
def rag_generator(request: pytest.FixtureRequest) -> Generator:
    """The generator of the default rag_pipeline: an OpenAI-compatible chat endpoint
    (ragmetrics_generator_url/_model, with ragmetrics_generator_prompts, _temperature, _seed
    and _max_tokens), or your override."""
    session = rag_session(request.config)
    settings = session.settings
    if not (settings.generator_url or os.environ.get("RAGMETRICS_GENERATOR_URL")):
        pytest.fail(GENERATOR_HINT, pytrace=False)

    return without_traceback(lambda: configured_generator(settings, session.budget()))


def configured_generator(settings: Settings, budget: Any = None) -> Generator:
    """The chat generator the ragmetrics_generator_* settings describe (the rag_generator
    fixture's default)."""
    from pytest_ragmetrics.generation import ChatGenerator
    from pytest_ragmetrics.transport import Endpoint, Sampling

    endpoint = {
        "url": settings.generator_url,
        "model": settings.generator_model,
        "concurrency": settings.generator_concurrency,
        "timeout": settings.generator_timeout,
        "attempt_timeout": settings.generator_attempt_timeout,
    }
    sampling = {
        "temperature": settings.generator_temperature,
        "seed": settings.generator_seed,
        "max_tokens": settings.generator_max_tokens,
    }
    return ChatGenerator(
        Endpoint.take(endpoint),
        prompts=settings.generator_prompt_texts,
        sampling=Sampling.take(sampling),
        budget=budget,
    )


def recorded_pair(request: pytest.FixtureRequest, dataset: Dataset) -> tuple[str, str] | None:
    """The (name, split) a recording of ``dataset``'s answers is kept under (None: one
    dataset is configured, the recording is the whole file)."""
    session = rag_session(request.config)
    pair = session.selection_of(dataset) if session.settings.several_datasets else None
    return None if pair is None else (pair.name, pair.split)


@pytest.fixture(scope="session")
def rag_pipeline(request: pytest.FixtureRequest, rag_dataset: Dataset) -> Pipeline:
    """The pipeline under test, query -> (answer, contexts), one per (dataset, split) pair:
    the recorded answers of ragmetrics_answers when that file exists (unless recording),
    else rag_retriever's top ragmetrics_top_n documents (each cut after
    ragmetrics_context_chars characters, when set) given to rag_generator. Override it with
    any function ``pipeline(query) -> (answer, contexts)`` (with an ``identity()`` to cache
    its answers)."""
    settings = rag_session(request.config).settings
    path = settings.answers
    if path is not None and path.exists() and not settings.record_answers:
        from pytest_ragmetrics.generation import RecordedAnswers

        pair = recorded_pair(request, rag_dataset)
        corpus = rag_dataset.corpus.fingerprint
        return without_traceback(lambda: RecordedAnswers(path, dataset=pair, corpus=corpus))
    retriever = request.getfixturevalue("rag_retriever")
    corpus = request.getfixturevalue("rag_corpus")
    generator = request.getfixturevalue("rag_generator")

    def build() -> Pipeline:
        from pytest_ragmetrics.generation import RetrieveThenGenerate

        return RetrieveThenGenerate(
            retriever,
            corpus,
            generator,
            top_n=settings.top_n,
            max_context_chars=settings.context_chars,
        )

    return without_traceback(build)


@pytest.fixture(scope="session")
def rag_answers(
    request: pytest.FixtureRequest,
    rag_pipeline: Pipeline,
    rag_queries: Queries,
    rag_dataset: Dataset,
) -> AnswerSet:
    """Every query's answer from rag_pipeline, computed once per session (per worker under
    xdist, the answers shared through the cache), an :class:`AnswerSet` with its cost. With
    --ragmetrics-dry-run, answers still to generate skip the tests using it, saying how many
    calls that would take (with every answer cached or recorded, the tests run on until
    judging, which then says what it would send); with --ragmetrics-record-answers the
    answers are written to ragmetrics_answers."""
    session = rag_session(request.config)
    settings = session.settings
    queries = dict(rag_queries.items())
    cache = session.cache()

    recording = settings.answers if settings.record_answers else None
    hint = "pass --ragmetrics-answers=FILE to record them elsewhere"

    def run() -> AnswerSet:
        from pytest_ragmetrics.fileio import check_writable
        from pytest_ragmetrics.generation import answer_all

        if recording is not None:  # before the generator calls whose answers would be lost
            check_writable(recording, what="recorded answers", hint=hint)
        answers = answer_all(rag_pipeline, queries, cache=cache, corpus=rag_dataset.corpus)
        if recording is not None:
            pair = recorded_pair(request, rag_dataset)
            answers.write(recording, dataset=pair, hint=hint, corpus=rag_dataset.corpus.fingerprint)
        return answers

    return without_traceback(run)


@pytest.fixture(scope="session")
def rag_references(request: pytest.FixtureRequest, rag_dataset: Dataset) -> References:
    """The dataset's reference answers (``answers.jsonl``, or ``{split}_answers.jsonl`` in
    the FlagEmbedding layout), by query id."""
    session = rag_session(request.config)
    pair = session.selection_of(rag_dataset)
    if pair is None:
        pytest.fail("rag_references: no dataset is configured (ragmetrics_dataset)", pytrace=False)

    def load() -> References | None:
        from pytest_ragmetrics.data.answers import load_references

        return load_references(pair.path, pair.split)

    found = without_traceback(load)
    if found is None:
        pytest.fail(
            f"rag_references: {pair.path} has no answers.jsonl (nor {pair.split}_answers.jsonl); "
            'add one line per query: {"query_id": ..., "answer": "reference text"} and/or '
            '"label": "..."',
            pytrace=False,
        )
    return found


@pytest.fixture(scope="session")
def rag_run(
    request: pytest.FixtureRequest,
    rag_retriever: Retriever,
    rag_queries: Queries,
    rag_dataset: Dataset,
) -> Run:
    """``rag_retriever`` searched over ``rag_queries`` at ragmetrics_k, once per session (and
    dataset). Where identical ids are dropped, one more document is searched, as BEIR does,
    so that k remain when a query finds itself. A retriever that returns more than it was
    asked for is cut to its top k (in trec_eval's order); one that returns a document id the
    dataset's corpus does not hold (a framework's generated id) is an error."""
    session = rag_session(request.config)
    settings = session.settings
    pair = session.selection_of(rag_dataset)  # BEIR's rule where it applies to this dataset
    ignore = pair is not None and pair.ignore_identical_ids

    def search() -> Run:
        from pytest_ragmetrics.cache import identity_of
        from pytest_ragmetrics.data.model import Run
        from pytest_ragmetrics.retrievers.base import check_known_documents
        from pytest_ragmetrics.twins import same_class

        result = rag_retriever.search(rag_queries, settings.k + 1 if ignore else settings.k)
        if not (isinstance(result, Mapping) or same_class(result, Run)):
            raise RetrieverError(
                f"rag_retriever {rag_retriever!r}: search(queries, k) returned "
                f"{type(result).__name__}; return a Run (e.g. Run.from_rankings("
                "{query_id: [doc_id, ...]})) or a dict {query_id: {doc_id: score}}"
            )
        asked = settings.k + 1 if ignore else settings.k
        run = Run.from_dict(result)
        if len(run.scores) and int(run.depths().max()) > asked:
            run = run.truncate(asked)  # recall_at_5 of a k = 2 run is not its deeper list's
        if len(rag_dataset.corpus):
            check_known_documents(
                run, rag_dataset.corpus, f"{rag_retriever!r}", dataset=rag_dataset.name
            )
        return run.with_retriever(identity_of(rag_retriever), settings.k)

    return without_traceback(search)


@pytest.fixture
def rag_eval(request: pytest.FixtureRequest) -> RagEval:
    """Evaluate and record: ``rag_eval.retrieval(run)``, ``rag_eval.answers(assessments)``."""
    from pytest_ragmetrics.plugin.recording import RagEval

    session = rag_session(request.config)
    settings = session.settings
    item = request.node
    key = dataset_key(request)

    def on_record(recorded: Any) -> None:
        if settings.junit_properties:
            for metric, value in recorded.evaluation.mean.items():
                name = for_junit(f"ragmetrics:{recorded.name}:{metric}")
                item.user_properties.append((name, value))
        request.config.hook.pytest_ragmetrics_evaluation_recorded(recorded=recorded, item=item)

    report_fields = None
    # A JSON report keeps the rankings too, so a later `ragmetrics compare --format html` shows
    # this run's ranking beside the next one's, whether or not this run drew a page.
    if settings.html_report is not None or settings.json_report is not None:

        def report_fields(record: Any, **sources: Any) -> dict[str, Any]:
            from pytest_ragmetrics.records import REPORT_FIELDS
            from pytest_ragmetrics.report.query_records import add_query_details

            entry = add_query_details(
                record.to_dict(),
                baseline_entry=session.baseline().get(record.test, record.name),
                worst=settings.html_worst,
                **sources,
            )
            return {key: entry[key] for key in REPORT_FIELDS if key in entry}

    recorder = RagEval(
        item.nodeid,
        metrics=settings.metrics,
        semantics=settings.semantics
        if key is None and settings.several_datasets
        else session.semantics(key),
        k=settings.k,
        thresholds=lambda: thresholds_of(item),
        dataset=lambda: session.dataset(key),
        supplement=session.supplement,
        on_record=on_record,
        report_fields=report_fields,
        query=_query_of(item),
    )
    item.stash[RAG_EVAL_KEY] = recorder
    return recorder


def _query_of(item: pytest.Item) -> str | None:
    """The query id of a rag_query test instance (None for other tests)."""
    callspec = getattr(item, "callspec", None)
    query = callspec.params.get("rag_query") if callspec is not None else None
    return query if isinstance(query, str) else None


@pytest.fixture(scope="session")
def judged_rankings(request: pytest.FixtureRequest) -> JudgedRankings:
    """Rankings with their own grades, from ragmetrics_judged_rankings (JSONL)."""
    path = rag_session(request.config).settings.judged_rankings
    if path is None:
        pytest.fail(
            "judged_rankings: set ragmetrics_judged_rankings = path/to/file.jsonl (lines "
            '{"query_id": ..., "ranking": [ids], "grades": {id: grade}}) or pass '
            "--ragmetrics-judged-rankings=FILE",
            pytrace=False,
        )
    from pytest_ragmetrics.data.judged import read_judged_rankings

    return without_traceback(lambda: read_judged_rankings(path))


@pytest.fixture
def rag_query(request: pytest.FixtureRequest, rag_run: Run, rag_dataset: Dataset) -> RagQuery:
    """The query this test instance is about (tests using it run once per query id, and per
    dataset when there are several)."""
    from pytest_ragmetrics.plugin.per_query import rag_query_of

    session = rag_session(request.config)
    pair = session.selection_of(rag_dataset)
    key = pair.key if pair is not None else None
    return without_traceback(lambda: rag_query_of(session, rag_run, str(request.param), key))
