"""Answering every query once: :func:`answer_all` goes through the content-addressed cache
(keyed by the pipeline's identity, the query and the contexts: a rerun generates nothing),
several at a time for HTTP generators, with progress, here or on a Ray cluster;
:func:`plan_answers` counts what it would call (a dry run)."""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ragmetrics import dryrun
from pytest_ragmetrics.cache import Cache, canonical_json
from pytest_ragmetrics.code_identity import settle
from pytest_ragmetrics.data.answers import GeneratedAnswer, write_answers
from pytest_ragmetrics.data.textfile import repaired_text
from pytest_ragmetrics.errors import ConfigError, DryRun, GeneratorError, RagMetricsError
from pytest_ragmetrics.executors import Executor, LocalExecutor, resolve_executor
from pytest_ragmetrics.generation.generators import NamedFunction
from pytest_ragmetrics.generation.pipelines import (
    GenerationStage,
    RecordedAnswers,
    RetrieveThenGenerate,
    pipeline_identity,
)
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.transport.costs import Cost
from pytest_ragmetrics.twins import same_class

ANSWER_CACHE_KIND = "generated-answers"


def _sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class AnswerSet:
    """Every query's generated answer (in query order), what producing them cost, and the
    identity of the pipeline that produced them."""

    answers: tuple[GeneratedAnswer, ...]
    cost: Cost = field(default_factory=Cost)
    identity: Mapping[str, Any] = field(default_factory=dict)

    def __iter__(self) -> Iterator[GeneratedAnswer]:
        return iter(self.answers)

    def __len__(self) -> int:
        return len(self.answers)

    def __getitem__(self, query_id: str) -> GeneratedAnswer:
        for answer in self.answers:
            if answer.query_id == query_id:
                return answer
        raise KeyError(query_id)

    def write(
        self,
        path: str | os.PathLike[str],
        *,
        dataset: tuple[str, str] | None = None,
        hint: str = "",
        corpus: str | None = None,
    ) -> None:
        """Record the answers as JSONL (atomically), to replay with :class:`RecordedAnswers`;
        with ``dataset=(name, split)``, as that pair's lines, keeping the other pairs'. A
        refused write is an OutputError naming the file, with ``hint``. ``corpus`` (the
        fingerprint of the corpus the contexts came from) is kept on each line, so that a
        replay on another corpus is refused."""
        from pytest_ragmetrics.data.recordings import CORPUS, write_recording

        extra = {} if corpus is None else {CORPUS: corpus}
        if dataset is None:
            write_answers(path, self.answers, hint=hint, extra=extra)
        else:
            write_recording(path, self.answers, dataset, hint=hint, extra=extra)


@dataclass(frozen=True)
class AnswerPlan:
    """What :func:`answer_all` would do: ``calls`` to make, ``cached`` answers to reuse."""

    calls: int
    cached: int

    def describe(self) -> str:
        return (
            f"{self.calls} generator calls to make, {self.cached} answers in the cache "
            f"({self.calls + self.cached} queries)"
        )


def _is_stored(value: Any) -> bool:
    """The shape of a cached answer. A blank answer (an endpoint's empty content) is no
    answer: used for this run, never stored, and asked for again next time."""
    return (
        isinstance(value, dict)
        and isinstance(value.get("answer"), str)
        and value["answer"].strip() != ""
        and isinstance(value.get("contexts"), list)
    )


def _as_contexts(value: Any, query_id: str) -> tuple[tuple[str, str], ...]:
    if isinstance(value, Mapping):
        pairs = [(str(k), v) for k, v in value.items()]
    elif isinstance(value, Sequence) and not isinstance(value, (str, bytes)):
        pairs = [(str(i), v) for i, v in enumerate(value)]
    else:
        raise GeneratorError(
            f"pipeline: the contexts of query {query_id!r} are {type(value).__name__}; return "
            "a list of passages"
        )
    for cid, text in pairs:
        if not isinstance(text, str):
            raise GeneratorError(f"pipeline: context {cid!r} of query {query_id!r} is not text")
    return tuple(pairs)


def _staged(pipeline: Any) -> bool:
    return all(callable(getattr(pipeline, m, None)) for m in ("contexts_for", "generate"))


def _keys(
    pipeline: Any, queries: Mapping[str, str], corpus: Any = None
) -> tuple[dict[str, dict[str, Any] | None], dict[str, tuple[tuple[str, str], ...]]]:
    """Per query its cache key (None: not cacheable) and, for a staged pipeline, contexts.

    A staged pipeline's key holds the contexts the generator is given; any other pipeline's
    holds the fingerprint of ``corpus`` (the dataset it answers from, when known), so that
    two datasets asking the same question never share an answer."""
    staged = _staged(pipeline)
    pipeline_sha = _sha256(pipeline_identity(pipeline))
    contexts = pipeline.contexts_for(queries) if staged else {}
    keys: dict[str, dict[str, Any] | None] = {}
    for qid, text in queries.items():
        key: dict[str, Any] = {"pipeline_sha256": pipeline_sha, "query": text}
        if staged:
            key["contexts_sha256"] = _sha256([list(p) for p in contexts[qid]])
        elif corpus is not None:
            key["corpus"] = corpus.fingerprint
        keys[qid] = key
    return keys, contexts


def plan_answers(
    pipeline: Any, queries: Mapping[str, str], cache: Cache | None, *, corpus: Any = None
) -> AnswerPlan:
    """How many generator calls :func:`answer_all` would make (a dry run: retrieval runs,
    nothing is generated)."""
    if _replays(pipeline):
        pipeline.answers_for(queries)
        return AnswerPlan(0, len(queries))
    keys, _ = _keys(pipeline, queries, corpus)
    return _plan(keys, cache)


def _plan(keys: Mapping[str, dict[str, Any] | None], cache: Cache | None) -> AnswerPlan:
    cached = 0
    if cache is not None and cache.enabled:
        for key in keys.values():
            if key is not None and cache.get_json(ANSWER_CACHE_KIND, key, valid=_is_stored):
                cached += 1
    return AnswerPlan(len(keys) - cached, cached)


def _answer_of(qid: str, query: str, stored: Mapping[str, Any]) -> GeneratedAnswer:
    """A generated answer from its cache entry."""
    return GeneratedAnswer(
        qid,
        query,
        stored["answer"],
        tuple((str(c), str(t)) for c, t in stored["contexts"]),
        stored.get("prompt_tokens"),
        stored.get("completion_tokens"),
    )


def answer_all(
    pipeline: Any,
    queries: Mapping[str, str],
    *,
    cache: Cache | None = None,
    concurrency: int | None = None,
    description: str = "generating answers",
    executor: str | Executor | None = None,
    corpus: Any = None,
) -> AnswerSet:
    """Every query's answer, once: from the cache when it holds it, else from the pipeline
    (``concurrency`` at a time, default the pipeline's), stored for the next run.

    Each answer is computed under its cache entry's lock, so parallel processes (xdist
    workers) asking for the same answer pay for one generation. The error of the first
    failing query (in query order) is raised, naming the query.

    ``executor="ray"`` (or a :class:`~pytest_ragmetrics.executors.RayExecutor`) generates the
    answers the cache lacks on a Ray cluster's actors, each holding a copy of the pipeline,
    ``concurrency`` at a time; the answers are stored in the same cache entries here, so a
    rerun, with or without Ray, generates nothing.

    ``corpus`` (the dataset's, as ``rag_answers`` gives) joins the cache key of a pipeline
    whose contexts cannot be seen (not a :class:`RetrieveThenGenerate`).
    """
    if _replays(pipeline):
        answers = pipeline.answers_for(queries)
        return AnswerSet(tuple(answers), Cost(replayed=len(answers)), pipeline.identity())
    _check_pipeline(pipeline, queries)
    keys, contexts = _keys(pipeline, queries, corpus)
    if dryrun.active():
        plan = _plan(keys, cache)
        if plan.calls:
            raise DryRun(f"dry run: {plan.describe()}")
    limit = concurrency or int(getattr(pipeline, "concurrency", 1) or 1)
    answering = _Answering(pipeline, queries, keys, contexts, cache)
    resolved = resolve_executor(executor, "answer_all")
    if not isinstance(resolved, LocalExecutor):
        answering.generated = _generate_elsewhere(resolved, answering, limit)
        for stored in answering.generated.values():
            answering.count(_cost_of(stored))
    with progress(description, len(queries)) as advance:
        answering.advance = advance
        answers = LocalExecutor(limit).map(answering.one, list(queries))
    _settle(pipeline)
    return AnswerSet(tuple(answers), answering.cost, pipeline_identity(pipeline))


def _settle(pipeline: Any) -> None:
    """After answering: the functions whose code identifies the pipeline keep their identity
    for what they changed themselves (a counter, a memo), not for what others changed."""
    for part in (pipeline, getattr(pipeline, "generator", None)):
        if isinstance(part, NamedFunction):
            part.settle()
    if not callable(getattr(pipeline, "identity", None)) and callable(pipeline):
        settle(pipeline)  # a plain function, identified as a FunctionPipeline


def _replays(pipeline: Any) -> bool:
    """Whether the pipeline is a :class:`RecordedAnswers` (replayed: nothing is generated or
    cached). Tested by the class's module and name too, so an instance made from another
    import of the module (pytester and reloaders re-import it) is still replayed rather than
    called query by query."""
    return same_class(pipeline, RecordedAnswers)


def _check_pipeline(pipeline: Any, queries: Mapping[str, str]) -> None:
    """A GeneratorError for what is no pipeline, or a query that is not Unicode text."""
    if not callable(pipeline) and not _staged(pipeline):
        raise GeneratorError(
            f"rag_pipeline {pipeline!r} is not a pipeline: give a function query -> (answer, "
            "contexts), a RetrieveThenGenerate or RecordedAnswers"
        )
    for qid, text in queries.items():
        if not isinstance(text, str) or repaired_text(text) != text:
            raise GeneratorError(
                f"query {qid!r} is not text"
                if not isinstance(text, str)
                else f"query {qid!r} holds a lone surrogate (not Unicode text): {text[:60]!r}"
            )


class _Answering:
    """One :func:`answer_all` call: each query's answer from the cache or the pipeline, and
    what that cost (thread-safe: ``concurrency`` queries are answered at once)."""

    def __init__(
        self,
        pipeline: Any,
        queries: Mapping[str, str],
        keys: Mapping[str, dict[str, Any] | None],
        contexts: Mapping[str, tuple[tuple[str, str], ...]],
        cache: Cache | None,
    ) -> None:
        self.pipeline = pipeline
        self.staged = _staged(pipeline)
        self.queries = queries
        self.keys = keys
        self.contexts = contexts
        self.cache = cache
        # Generated elsewhere (on a cluster), by query id: stored in the cache already, but
        # for the answers that cannot be stored (a blank answer).
        self.generated: dict[str, Any] = {}
        self.cost = Cost()
        self.advance: Callable[[int], None] = lambda n: None
        self._lock = threading.Lock()

    def count(self, extra: Cost) -> None:
        with self._lock:
            self.cost = self.cost + extra

    def item(self, qid: str) -> tuple[Any, bool, str, str, Any]:
        """What :func:`_generate_one` takes to answer ``qid``."""
        return (self.pipeline, self.staged, qid, self.queries[qid], self.contexts.get(qid))

    def one(self, qid: str) -> GeneratedAnswer:
        """The answer of ``qid``: cached, generated elsewhere, or generated now."""
        key = self.keys[qid]
        computed: list[bool] = []

        def fresh() -> dict[str, Any]:
            if qid in self.generated:  # generated elsewhere but not storable (a blank answer)
                return dict(self.generated[qid])
            computed.append(True)
            stored = _generate_one(self.item(qid))
            self.count(_cost_of(stored))
            return stored

        if key is None or self.cache is None or not self.cache.enabled:
            stored = fresh()
        else:
            stored = self.cache.json(ANSWER_CACHE_KIND, key, fresh, valid=_is_stored)
        if not computed and qid not in self.generated:
            self.count(Cost(cache_hits=1))
        with self._lock:
            self.advance(1)
        return _answer_of(qid, self.queries[qid], stored)


def _generate_one(item: tuple[Any, bool, str, str, Any]) -> dict[str, Any]:
    """One answer as the cache stores it: what an executor sends to its workers (picklable
    when the pipeline is)."""
    pipeline, staged, qid, query, contexts = item
    try:
        if staged:
            reply = pipeline.generate(query, contexts)
            answer, pairs, usage = reply.text, contexts, reply.usage
        else:
            result = pipeline(query)
            if not (isinstance(result, tuple) and len(result) == 2):
                raise GeneratorError(
                    f"rag_pipeline returned {type(result).__name__}; return (answer, contexts)"
                )
            answer, pairs, usage = result[0], _as_contexts(result[1], qid), None
    except RagMetricsError as exc:
        raise type(exc)(f"answering query {qid!r}: {exc}") from None
    if not isinstance(answer, str):
        raise GeneratorError(f"answering query {qid!r}: the answer is not text")
    return {
        "answer": repaired_text(answer),
        "contexts": [[cid, repaired_text(text)] for cid, text in pairs],
        "prompt_tokens": usage.prompt_tokens if usage else None,
        "completion_tokens": usage.completion_tokens if usage else None,
        "metered": usage is not None,
    }


def _constant(value: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: value


def _cost_of(stored: Mapping[str, Any]) -> Cost:
    return Cost(
        calls=1,
        prompt_tokens=stored.get("prompt_tokens") or 0,
        completion_tokens=stored.get("completion_tokens") or 0,
        unmetered=0 if stored.get("metered", True) else 1,
    )


def _generate_elsewhere(executor: Executor, answering: _Answering, limit: int) -> dict[str, Any]:
    """Generate on ``executor`` the answers the cache lacks and store them in it, so that the
    local pass that follows finds every answer there; what was generated, by query id."""
    cache, keys = answering.cache, answering.keys
    if cache is None or not cache.enabled:
        raise ConfigError(
            "answer_all(executor=...): answers generated on a cluster come back through the "
            "cache; give a cache (or drop executor= to generate here)"
        )
    missing = {
        qid: key
        for qid, key in keys.items()
        if key is not None and cache.get_json(ANSWER_CACHE_KIND, key, valid=_is_stored) is None
    }
    # A retriever (its index, its model) stays here: the workers get only the generation stage.
    pipeline = answering.pipeline
    shipped = (
        GenerationStage(pipeline.generator)
        if isinstance(pipeline, RetrieveThenGenerate)
        else pipeline
    )
    items = [(shipped, *answering.item(qid)[1:]) for qid in missing]
    results = executor.map(_generate_one, items, concurrency=limit)
    generated = dict(zip(missing, results, strict=True))
    for qid, stored in generated.items():
        cache.json(ANSWER_CACHE_KIND, missing[qid], _constant(stored), valid=_is_stored)
    return generated


__all__ = ["ANSWER_CACHE_KIND", "AnswerPlan", "AnswerSet", "answer_all", "plan_answers"]
