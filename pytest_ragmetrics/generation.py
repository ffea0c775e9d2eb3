"""The pipeline under test: a query in, an answer and the contexts it was generated from out.

- a **generator** turns (query, contexts) into an answer: :class:`FunctionGenerator` (your
  function) or :class:`ChatGenerator` (any OpenAI-compatible chat endpoint, through
  :class:`~pytest_ragmetrics.transport.ChatClient`);
- :class:`RetrieveThenGenerate` composes a retriever's top-n documents with a generator;
- :class:`RecordedAnswers` replays answers recorded earlier (JSONL), without any model;
- :func:`answer_all` answers every query once, through the content-addressed cache (keyed by
  the pipeline's identity, the query and the contexts: a rerun generates nothing), several at a
  time for HTTP generators, with progress; :func:`plan_answers` counts what it would call.

Any callable ``pipeline(query) -> (answer, contexts)`` is a pipeline too. Its answers are
cached under its identity: its ``identity()`` when it has one, else (a plain function) the
digest of its code (:mod:`pytest_ragmetrics.code_identity`), so that an edit of the function
generates anew; :class:`FunctionPipeline` adds a name and a ``version`` to bump when what the
digest cannot see changes (data files, a model behind an endpoint).
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_ragmetrics import dryrun
from pytest_ragmetrics.cache import Cache, canonical_json, identity_of
from pytest_ragmetrics.code_identity import function_identity
from pytest_ragmetrics.data.answers import GeneratedAnswer, write_answers
from pytest_ragmetrics.data.textfile import repaired_text
from pytest_ragmetrics.errors import ConfigError, DryRun, GeneratorError, RagMetricsError
from pytest_ragmetrics.executors import Executor, LocalExecutor, resolve_executor
from pytest_ragmetrics.progress import progress
from pytest_ragmetrics.prompts import GENERATOR_USER
from pytest_ragmetrics.transport import Budget, ChatClient, ChatReply, Cost, Meter, Naming

ENV_URL = "RAGMETRICS_GENERATOR_URL"
ENV_MODEL = "RAGMETRICS_GENERATOR_MODEL"
ENV_API_KEY = "RAGMETRICS_GENERATOR_API_KEY"
NAMING = Naming("generator", GeneratorError, ENV_URL, ENV_MODEL, ENV_API_KEY)
ANSWER_CACHE_KIND = "generated-answers"

SYSTEM_PROMPT = "You answer questions using only the numbered contexts you are given."
TEMPLATE = "Contexts:\n{contexts}\n\nQuestion: {query}\n\nAnswer:"

Contexts = Sequence[tuple[str, str]]


def _sha256(value: Any) -> str:
    return hashlib.sha256(canonical_json(value).encode("utf-8")).hexdigest()


def number_contexts(contexts: Sequence[str]) -> str:
    """Contexts as the prompt shows them: ``[1] first`` ``[2] second``, a blank line apart."""
    return "\n\n".join(f"[{i}] {text}" for i, text in enumerate(contexts, 1))


@runtime_checkable
class Generator(Protocol):
    """Turns a query and its contexts into an answer."""

    def generate(self, query: str, contexts: Sequence[str]) -> ChatReply:
        """The answer text (and the endpoint's token usage, when it reports one)."""
        ...

    def identity(self) -> dict[str, Any]:
        """What determines the answers (model, prompt, sampling parameters); no URL, no key."""
        ...


class FunctionGenerator:
    """Your function ``fn(query, contexts) -> answer`` as a generator. Its identity (the cache
    key of its answers) holds ``name``, the digest of its code (an edit of its body, or of a
    function of its module it calls, generates anew) and ``version`` when given: bump it when
    what the digest cannot see changes (see :mod:`pytest_ragmetrics.code_identity`)."""

    def __init__(
        self,
        fn: Callable[[str, list[str]], str],
        *,
        name: str | None = None,
        version: str | int | None = None,
    ) -> None:
        if not callable(fn):
            raise GeneratorError(f"generator: {fn!r} is not callable")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self.version = version
        self._identity: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"FunctionGenerator({self.name!r})"

    def identity(self) -> dict[str, Any]:
        """The name, the function and its code digest, the version when given."""
        if self._identity is None:
            self._identity = {
                "generator": "function",
                "name": self.name,
                **function_identity(self.fn, self.version),
            }
        return dict(self._identity)

    def generate(self, query: str, contexts: Sequence[str]) -> ChatReply:
        """``fn(query, contexts)``; anything but a string is a GeneratorError."""
        answer = self.fn(query, list(contexts))
        if not isinstance(answer, str):
            raise GeneratorError(
                f"generator {self.name!r} returned {type(answer).__name__} for query "
                f"{query[:60]!r}; return the answer text"
            )
        return ChatReply(answer)


class FunctionPipeline:
    """Your function ``pipeline(query) -> (answer, contexts)`` with a name and a ``version``;
    identified like :class:`FunctionGenerator` (code digest plus version)."""

    def __init__(
        self,
        fn: Callable[[str], Any],
        *,
        name: str | None = None,
        version: str | int | None = None,
    ) -> None:
        if not callable(fn):
            raise GeneratorError(f"pipeline: {fn!r} is not callable")
        self.fn = fn
        self.name = name or getattr(fn, "__qualname__", type(fn).__name__)
        self.version = version
        self._identity: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"FunctionPipeline({self.name!r})"

    def identity(self) -> dict[str, Any]:
        """The name, the function and its code digest, the version when given."""
        if self._identity is None:
            self._identity = {
                "pipeline": "function",
                "name": self.name,
                **function_identity(self.fn, self.version),
            }
        return dict(self._identity)

    def __call__(self, query: str) -> Any:
        return self.fn(query)


def pipeline_identity(pipeline: Any) -> dict[str, Any]:
    """A pipeline's ``identity()``; a plain function's is its :class:`FunctionPipeline` one."""
    if callable(getattr(pipeline, "identity", None)):
        return identity_of(pipeline)
    return FunctionPipeline(pipeline).identity()


class ChatGenerator:
    """An OpenAI-compatible chat endpoint as the generator.

    The user message is ``template`` with ``{query}`` and ``{contexts}`` (numbered, see
    :func:`number_contexts`) filled in, after ``system_prompt`` (sent as written). A template
    that ``.format()`` could not fill with exactly those fields is a GeneratorError here
    (:func:`~pytest_ragmetrics.prompts.check_template`), not at the first request.
    ``model``, the prompts, ``temperature``, ``seed`` and ``max_tokens`` are its identity (the
    cache key); the URL is not. The transport's guarantees hold (only the URL given, key from
    ``api_key_env``, retries, timeouts); ``concurrency`` requests are in flight at once;
    ``budget`` is a token budget shared with the judges.
    """

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        template: str = TEMPLATE,
        system_prompt: str = SYSTEM_PROMPT,
        temperature: float = 0.0,
        seed: int = 0,
        max_tokens: int = 128,
        api_key_env: str = ENV_API_KEY,
        timeout: float = 120.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        concurrency: int = 1,
        budget: Budget | None = None,
        sleep: Callable[[float], None] | None = None,
    ) -> None:
        GENERATOR_USER.check(template, "generator: template", GeneratorError)
        options: dict[str, Any] = {} if sleep is None else {"sleep": sleep}
        self.client = ChatClient(
            base_url,
            model,
            naming=NAMING,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            concurrency=concurrency,
            meter=Meter(budget),
            **options,
        )
        self.template = template
        self.system_prompt = system_prompt
        self.parameters = {
            "temperature": float(temperature),
            "seed": int(seed),
            "max_tokens": int(max_tokens),
        }

    def __repr__(self) -> str:
        return f"ChatGenerator(url={self.client.url!r}, model={self.client.model!r})"

    @property
    def concurrency(self) -> int:
        """Requests in flight at once."""
        return self.client.concurrency

    def identity(self) -> dict[str, Any]:
        """Model, prompts and sampling parameters."""
        return {
            "generator": "chat",
            "model": self.client.model,
            "system_prompt": self.system_prompt,
            "template": self.template,
            **self.parameters,
        }

    def messages(self, query: str, contexts: Sequence[str]) -> list[dict[str, str]]:
        """The conversation sent for one query."""
        prompt = self.template.format(query=query, contexts=number_contexts(contexts))
        return [
            {"role": "system", "content": self.system_prompt},
            {"role": "user", "content": prompt},
        ]

    def generate(self, query: str, contexts: Sequence[str]) -> ChatReply:
        """One completion: the answer and its usage."""
        return self.client.complete(self.messages(query, contexts), **self.parameters)


class RetrieveThenGenerate:
    """The configured retriever's top ``top_n`` documents (``title + " " + text``, cut after
    ``max_context_chars`` characters when set) as the contexts of ``generator`` (a
    :class:`Generator` or a function ``fn(query, contexts)``).

    Calling it answers one query; :func:`answer_all` retrieves for every query at once first
    and caches each answer under (pipeline identity, query, contexts)."""

    def __init__(
        self,
        retriever: Any,
        corpus: Any,
        generator: Any,
        *,
        top_n: int = 3,
        max_context_chars: int | None = None,
    ) -> None:
        for label, value in (("top_n", top_n), ("max_context_chars", max_context_chars or 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise GeneratorError(f"pipeline: {label} must be a positive integer, got {value!r}")
        self.max_context_chars = max_context_chars
        self.retriever = retriever
        self.corpus = corpus
        self.generator = (
            generator if isinstance(generator, Generator) else FunctionGenerator(generator)
        )
        self.top_n = top_n

    def __repr__(self) -> str:
        return f"RetrieveThenGenerate(top_n={self.top_n}, generator={self.generator!r})"

    @property
    def concurrency(self) -> int:
        """The generator's concurrency (1 for a function)."""
        return int(getattr(self.generator, "concurrency", 1))

    def identity(self) -> dict[str, Any]:
        """Retriever identity, top_n and generator identity."""
        return {
            "pipeline": "retrieve-then-generate",
            "retriever": identity_of(self.retriever),
            "top_n": self.top_n,
            "max_context_chars": self.max_context_chars,
            "generator": self.generator.identity(),
        }

    def contexts_for(self, queries: Mapping[str, str]) -> dict[str, tuple[tuple[str, str], ...]]:
        """The top ``top_n`` (doc id, passage) per query, one search for all of them. A
        retriever with ``passages_for(queries, n)`` (a chunked one) gives its own passages, so
        the generator sees its chunks rather than whole documents."""
        from pytest_ragmetrics.data.model import Queries, Run

        own = getattr(self.retriever, "passages_for", None)
        if callable(own):
            given = own(Queries.from_dict(queries), self.top_n)
            cut = self.max_context_chars
            return {
                qid: tuple((cid, text[:cut] if cut else text) for cid, text in given[qid])
                for qid in queries
            }
        result = self.retriever.search(Queries.from_dict(queries), self.top_n)
        run = Run.from_dict(result)
        found: dict[str, tuple[tuple[str, str], ...]] = {}
        for qid in queries:
            ranked = run.ranking(qid)[: self.top_n] if qid in run else []
            pairs = []
            for doc_id, _ in ranked:
                doc = self.corpus[doc_id]
                text = (doc.title + " " + doc.text).strip()
                if self.max_context_chars is not None:
                    text = text[: self.max_context_chars]
                pairs.append((doc_id, text))
            found[qid] = tuple(pairs)
        return found

    def generate(self, query: str, contexts: Contexts) -> ChatReply:
        """The generator's answer from these contexts."""
        return _GenerationStage(self.generator).generate(query, contexts)

    def __call__(self, query: str) -> tuple[str, list[str]]:
        """Answer one query: (answer, context texts)."""
        contexts = self.contexts_for({"q": query})["q"]
        return self.generate(query, contexts).text, [text for _, text in contexts]


class RecordedAnswers:
    """Answers recorded earlier (a JSONL answers file), replayed by query id: no model, no
    retriever. Its identity is the file's content hash.

    ``dataset=(name, split)`` replays the answers recorded for that pair of a file holding
    several (see :mod:`~pytest_ragmetrics.data.recordings`); its identity is then the hash of
    that pair's lines, so recording another pair changes nothing of this one."""

    def __init__(
        self, path: str | os.PathLike[str], *, dataset: tuple[str, str] | None = None
    ) -> None:
        self.path = Path(path)
        from pytest_ragmetrics.data.recordings import read_recording

        answers, digest = read_recording(self.path, dataset)
        self._identity: dict[str, Any] = {"pipeline": "recorded", "file": self.path.name}
        if dataset is None:
            self._identity["file_sha256"] = hashlib.sha256(self.path.read_bytes()).hexdigest()
        else:
            self._identity.update(dataset=dataset[0], split=dataset[1], answers_sha256=digest)
        self._by_id = {a.query_id: a for a in answers}

    def __repr__(self) -> str:
        return f"RecordedAnswers({os.fspath(self.path)!r}, {len(self._by_id)} answers)"

    def __len__(self) -> int:
        return len(self._by_id)

    def identity(self) -> dict[str, Any]:
        """The file's name and sha256."""
        return dict(self._identity)

    def answers_for(self, queries: Mapping[str, str]) -> list[GeneratedAnswer]:
        """The recorded answers of ``queries``; a query without one is a GeneratorError
        naming the file and the missing query ids."""
        missing = [q for q in queries if q not in self._by_id]
        if missing:
            shown = ", ".join(map(repr, missing[:5])) + (", ..." if len(missing) > 5 else "")
            raise GeneratorError(
                f"{os.fspath(self.path)}: no recorded answer for {len(missing)} of "
                f"{len(queries)} queries ({shown}); regenerate the recording"
            )
        # An answer recorded for another wording of the question answers another question.
        changed = [q for q, text in queries.items() if self._by_id[q].query not in ("", text)]
        if changed:
            first = changed[0]
            raise GeneratorError(
                f"{os.fspath(self.path)}: {len(changed)} of {len(queries)} recorded answers "
                f"were given to another question than the dataset's (first: query {first!r} "
                f"recorded {self._by_id[first].query[:80]!r}, now {queries[first][:80]!r}); "
                "regenerate the recording"
            )
        return [self._by_id[q] for q in queries]

    def __call__(self, query: str) -> tuple[str, list[str]]:
        for answer in self._by_id.values():
            if answer.query == query:
                return answer.answer, answer.context_texts
        raise GeneratorError(f"{os.fspath(self.path)}: no recorded answer for {query[:80]!r}")


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
    ) -> None:
        """Record the answers as JSONL (atomically), to replay with :class:`RecordedAnswers`;
        with ``dataset=(name, split)``, as that pair's lines, keeping the other pairs'. A
        refused write is an OutputError naming the file, with ``hint``."""
        if dataset is None:
            write_answers(path, self.answers, hint=hint)
        else:
            from pytest_ragmetrics.data.recordings import write_recording

            write_recording(path, self.answers, dataset, hint=hint)


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
    if isinstance(pipeline, RecordedAnswers):
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
    if isinstance(pipeline, RecordedAnswers):
        answers = pipeline.answers_for(queries)
        return AnswerSet(tuple(answers), Cost(cache_hits=len(answers)), pipeline.identity())
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
    staged = _staged(pipeline)
    keys, contexts = _keys(pipeline, queries, corpus)
    if dryrun.active():
        plan = _plan(keys, cache)
        if plan.calls:
            raise DryRun(f"dry run: {plan.describe()}")
    limit = concurrency or int(getattr(pipeline, "concurrency", 1) or 1)
    lock = threading.Lock()
    cost = [Cost()]

    def count(extra: Cost) -> None:
        with lock:
            cost[0] = cost[0] + extra

    def compute(qid: str) -> dict[str, Any]:
        stored = _generate_one((pipeline, staged, qid, queries[qid], contexts.get(qid)))
        count(_cost_of(stored))
        return stored

    def one(qid: str) -> GeneratedAnswer:
        key = keys[qid]
        computed = [False]

        def fresh() -> dict[str, Any]:
            if qid in generated:  # generated elsewhere but not storable (a blank answer)
                return dict(generated[qid])
            computed[0] = True
            return compute(qid)

        if key is None or cache is None or not cache.enabled:
            stored = fresh()
        else:
            stored = cache.json(ANSWER_CACHE_KIND, key, fresh, valid=_is_stored)
        if not computed[0] and qid not in generated:
            count(Cost(cache_hits=1))
        with lock:
            advance(1)
        return _answer_of(qid, queries[qid], stored)

    resolved = resolve_executor(executor, "answer_all")
    generated: dict[str, Any] = {}
    if not isinstance(resolved, LocalExecutor):
        generated = _generate_elsewhere(
            resolved, pipeline, staged, queries, keys, contexts, cache, limit
        )
        for stored in generated.values():
            count(_cost_of(stored))
    with progress(description, len(queries)) as advance:
        answers = LocalExecutor(limit).map(one, list(queries))
    return AnswerSet(tuple(answers), cost[0], pipeline_identity(pipeline))


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


class _GenerationStage:
    """The generation half of a :class:`RetrieveThenGenerate`: what Ray workers receive."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator

    def generate(self, query: str, contexts: Contexts) -> ChatReply:
        reply: ChatReply = self.generator.generate(query, [text for _, text in contexts])
        return reply


def _constant(value: dict[str, Any]) -> Callable[[], dict[str, Any]]:
    return lambda: value


def _cost_of(stored: Mapping[str, Any]) -> Cost:
    return Cost(
        calls=1,
        prompt_tokens=stored.get("prompt_tokens") or 0,
        completion_tokens=stored.get("completion_tokens") or 0,
        unmetered=0 if stored.get("metered", True) else 1,
    )


def _generate_elsewhere(
    executor: Executor,
    pipeline: Any,
    staged: bool,
    queries: Mapping[str, str],
    keys: Mapping[str, Any],
    contexts: Mapping[str, Any],
    cache: Cache | None,
    limit: int,
) -> dict[str, Any]:
    """Generate on ``executor`` the answers the cache lacks and store them in it, so that the
    local pass that follows finds every answer there; what was generated, by query id."""
    if cache is None or not cache.enabled:
        raise ConfigError(
            "answer_all(executor=...): answers generated on a cluster come back through the "
            "cache; give a cache (or drop executor= to generate here)"
        )
    missing = [
        qid
        for qid in queries
        if keys[qid] is not None
        and cache.get_json(ANSWER_CACHE_KIND, keys[qid], valid=_is_stored) is None
    ]
    # A retriever (its index, its model) stays here: the workers get only the generation stage.
    shipped = (
        _GenerationStage(pipeline.generator)
        if isinstance(pipeline, RetrieveThenGenerate)
        else pipeline
    )
    items = [(shipped, staged, qid, queries[qid], contexts.get(qid)) for qid in missing]
    results = executor.map(_generate_one, items, concurrency=limit)
    generated = dict(zip(missing, results, strict=True))
    for qid, stored in generated.items():
        cache.json(ANSWER_CACHE_KIND, keys[qid], _constant(stored), valid=_is_stored)
    return generated
