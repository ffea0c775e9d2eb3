"""The Retriever protocol, an adapter for plain functions, checks of what retrievers return."""

from __future__ import annotations

import inspect
import os
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, TypedDict, TypeVar, Unpack, runtime_checkable

import numpy as np

from pytest_ragmetrics.cache import Cache, default_cache
from pytest_ragmetrics.code_identity import (
    current_digest,
    function_identity,
    jsonable,
    refuse_uncacheable,
    settle,
)
from pytest_ragmetrics.data.model import Corpus, Entries, Queries, Run, as_str_array
from pytest_ragmetrics.data.scores import (
    ScoreKind,
    check_score_kind,
    order_contradiction,
    oriented,
    undeclared_error,
    unordered_contradiction,
)
from pytest_ragmetrics.errors import (
    ConfigError,
    DataFormatError,
    RetrieverError,
    how_to_silence,
)
from pytest_ragmetrics.errors import (  # defined with the other warnings; importable from here
    ShortRankingWarning as ShortRankingWarning,
)
from pytest_ragmetrics.retrievers.named import Named as Named

#: What a plain retrieval function may return for one query: ids best first, (id, score) pairs,
#: or a ``{doc_id: score}`` mapping.
Ranking = Sequence[str] | Sequence[tuple[str, float]] | Mapping[str, float]

CacheLike = Cache | str | os.PathLike[str] | None

T = TypeVar("T")


@runtime_checkable
class Retriever(Protocol):
    """Anything that ranks documents for queries.

    ``identity()`` is JSON-able (name plus every parameter that changes the results); it goes
    into reports, baselines and cache keys, so it must not contain machine-specific paths.
    """

    @property
    def name(self) -> str: ...

    def identity(self) -> dict[str, Any]: ...

    def search(self, queries: Queries, k: int) -> Run: ...


@runtime_checkable
class StagedRetriever(Retriever, Protocol):
    """A retriever made of stages (first stage, reranked) whose runs are evaluated separately."""

    def search_stages(self, queries: Queries, k: int) -> dict[str, Run]: ...


def as_cache(cache: CacheLike) -> Cache | None:
    """A :class:`Cache` from a folder, an existing cache, or None (no caching)."""
    if cache is None or isinstance(cache, Cache):
        return cache
    return Cache(cache)


def resolve_cache(cache: CacheLike | bool) -> Cache | None:
    """:func:`as_cache`, with True meaning the default cache (the session's under pytest)."""
    if cache is True:
        return default_cache()
    if cache is False:
        return None
    return as_cache(cache)


def guarded_call(
    function: Callable[[], T],
    retriever: str,
    where: str,
    *,
    passing: tuple[type[Exception], ...] = (),
) -> T:
    """``function()``; its exception becomes a RetrieverError naming ``retriever`` and ``where``
    (a query, a batch), except those of the ``passing`` types, which go through as they are."""
    try:
        return function()
    except passing:
        raise
    except Exception as exc:
        raise RetrieverError(
            f"retriever {retriever!r} raised {type(exc).__name__} for {where}: {exc}"
        ) from exc


def check_k(k: object, retriever: str) -> int:
    """``k`` as a positive int, or a ConfigError naming the retriever."""
    if isinstance(k, bool) or not isinstance(k, (int, np.integer)) or int(k) < 1:
        raise ConfigError(f"retriever {retriever!r}: k must be a positive integer, got {k!r}")
    return int(k)


def check_run(
    run: Run,
    queries: Queries,
    k: int,
    *,
    retriever: str,
    corpus: Corpus | None = None,
) -> Run:
    """Validate a retriever's run: the asked queries only, known documents.

    Unknown documents (when the corpus is known) and queries that were not asked for are a
    :class:`RetrieverError`. Rankings shorter than ``k`` are normal (a keyword retriever returns
    only the documents that match) and are reported as a note by whoever evaluates the run
    (:func:`short_rankings`); nothing at all for most of the queries is probably a broken
    retriever: a :class:`ShortRankingWarning`.
    """
    asked = queries.position
    extra = [q for q in run.query_ids.tolist() if q not in asked]
    if extra:
        raise RetrieverError(
            f"retriever {retriever!r} returned results for {len(extra)} queries it was not "
            f"asked (e.g. {extra[0]!r}); return results for the given query ids only"
        )
    if corpus is not None and run.num_entries:
        check_known_documents(run, corpus, repr(retriever))
    found = short_rankings(
        run,
        queries.query_ids,
        k,
        retriever=retriever,
        corpus_size=None if corpus is None else len(corpus),
    )
    if found is not None and found.mostly_empty:
        warnings.warn(found.anomaly(), ShortRankingWarning, stacklevel=3)
    return run


@dataclass(frozen=True)
class ShortRankings:
    """How a run fell short of ``expected`` documents per query (see :func:`short_rankings`)."""

    retriever: str
    expected: int  # documents a query could get: k, or the corpus size when smaller
    queries: int  # the queries counted
    short: int  # queries with some documents, but fewer than expected
    empty: int  # queries with no document at all
    shortest: int  # the fewest documents a non-empty query got (0 when all are empty)
    empty_examples: tuple[str, ...] = ()
    deepest: int = 0  # the most documents a query got
    asked: bool = True  # False: a function without a k parameter, never told k

    @property
    def mostly_empty(self) -> bool:
        """Nothing at all for more than half of the queries: probably a broken retriever."""
        return self.empty * 2 > self.queries

    def note(self) -> str:
        """The report's note: what happened, and that it is normal for matching-only search."""
        parts = []
        if self.short:
            parts.append(
                f"fewer than {self.expected} documents for {self.short} of {self.queries} "
                f"queries (shortest {self.shortest})"
            )
        if self.empty:
            parts.append(f"nothing for {self.empty} of {self.queries} queries")
        if self.mostly_empty:
            why = "most got nothing: check that it searches this corpus"
        elif not self.asked:
            why = (
                f"it takes no k parameter, so it was never told k (it returned at most "
                f"{self.deepest} per query): normal for a function that returns its own number "
                "of documents or only those that match; add a k parameter to be told k"
            )
        else:
            why = "normal for a retriever that returns only the documents that match"
        return (
            f"retriever {self.retriever!r} returned {' and '.join(parts)}; {why}, and the "
            "missing documents count as not retrieved"
        )

    def anomaly(self) -> str:
        """The warning when most queries got nothing."""
        examples = ", ".join(map(repr, self.empty_examples))
        return (
            f"retriever {self.retriever!r} returned nothing for {self.empty} of {self.queries} "
            f"queries (e.g. {examples}): check that it searches this corpus and that its ids "
            f"are the corpus's; {how_to_silence(ShortRankingWarning)}"
        )


def short_rankings(
    run: Run,
    query_ids: Sequence[str] | np.ndarray[Any, Any],
    k: int,
    *,
    retriever: str,
    corpus_size: int | None = None,
    asked: bool = True,
) -> ShortRankings | None:
    """How the rankings of ``query_ids`` fall short of ``k`` documents (or of the corpus, when it
    is smaller); None when none does. Queries missing from the run count as empty. ``asked``
    False: the retriever was never told k (a function without a k parameter)."""
    expected = k if corpus_size is None else min(k, corpus_size)
    wanted = [str(q) for q in query_ids]
    if not wanted or expected < 1:
        return None
    depth_of = dict(zip(run.query_ids.tolist(), run.depths().tolist(), strict=True))
    depth = np.array([depth_of.get(q, 0) for q in wanted], dtype=np.int64)
    empty = depth == 0
    short = (depth > 0) & (depth < expected)
    if not empty.any() and not short.any():
        return None
    return ShortRankings(
        retriever=retriever,
        expected=expected,
        queries=len(wanted),
        short=int(short.sum()),
        empty=int(empty.sum()),
        shortest=int(depth[~empty].min()) if (~empty).any() else 0,
        empty_examples=tuple(q for q, e in zip(wanted, empty.tolist(), strict=True) if e)[:3],
        deepest=int(depth.max()),
        asked=asked,
    )


def rankings_note(
    run: Run,
    query_ids: Sequence[str] | np.ndarray[Any, Any],
    k: int,
    *,
    identity: Mapping[str, Any],
    corpus_size: int | None = None,
) -> str | None:
    """The report's note on rankings shorter than ``k`` for the retriever of ``identity``
    (:func:`short_rankings` over the ``query_ids`` the run holds); None when none is short.
    A ``from_function`` function without a ``k`` parameter (``takes_k`` False) was never asked
    for k: its note says so instead of "fewer than k"."""
    name = str(identity.get("name") or identity.get("kind") or "the retriever")
    held = set(run.query_ids.tolist())
    found = short_rankings(
        run,
        [str(q) for q in query_ids if str(q) in held],
        k,
        retriever=name,
        corpus_size=corpus_size,
        asked=identity.get("takes_k") is not False,
    )
    return None if found is None else found.note()


def check_known_documents(
    run: Run, corpus: Corpus, retriever: str, *, dataset: str | None = None
) -> None:
    """A RetrieverError naming the first document of ``run`` that ``corpus`` (of ``dataset``,
    when named) does not hold, and its query: its metrics would read 0 for the id alone."""
    used = np.unique(run.doc_codes)
    names = run.doc_ids[used]
    known = np.isin(names, corpus.doc_ids)
    if known.all():
        return
    bad_code = int(used[np.flatnonzero(~known)[0]])
    entry = int(np.flatnonzero(run.doc_codes == bad_code)[0])
    query = run.query_ids[int(np.searchsorted(run.offsets, entry, side="right") - 1)]
    whose = "the corpus" if dataset is None else f"the corpus of dataset {dataset!r}"
    raise RetrieverError(
        f"retriever {retriever} returned document {str(names[~known][0])!r} for query "
        f"{str(query)!r}, but {whose} has no such document ({int((~known).sum())} unknown ids "
        "in all); return ids from the corpus (not a framework's generated ids: give "
        "from_langchain or from_llama_index the metadata key of the corpus id, id_key=)"
    )


def _ranking_entries(
    result: object, query_id: str, retriever: str
) -> tuple[list[str], list[float], str]:
    """Doc ids and scores of one query's result, and its form: ``"ids"`` (they get scores n,
    n-1, ..., 1, which already point the right way), ``"pairs"`` or ``"mapping"``."""
    pairs, form = _result_pairs(result, query_id, retriever)
    ids: list[str] = []
    scores: list[float] = []
    seen: set[str] = set()
    for doc, score in pairs:
        if not isinstance(doc, str) or not doc.strip():
            raise RetrieverError(
                f"retriever {retriever!r} returned doc id {doc!r} ({type(doc).__name__}) for "
                f"query {query_id!r}; doc ids must be non-empty strings"
            )
        if doc in seen:
            raise RetrieverError(
                f"retriever {retriever!r} returned document {doc!r} twice for query {query_id!r}; "
                "each document may appear once per query"
            )
        seen.add(doc)
        ids.append(doc)
        scores.append(_score_value(score, doc, query_id, retriever))
    return ids, scores, form


def _result_pairs(result: object, query_id: str, retriever: str) -> tuple[list[Any], str]:
    """One query's result as (doc, score) pairs, unchecked, and its form (see
    :func:`_ranking_entries`); a result of no known form is a RetrieverError."""
    if isinstance(result, Mapping):
        return list(result.items()), "mapping"
    if isinstance(result, (str, bytes)) or not isinstance(result, Sequence):
        raise RetrieverError(
            f"retriever {retriever!r} returned {type(result).__name__} for query {query_id!r}; "
            "return a list of doc ids, a list of (doc_id, score) pairs or a {doc_id: score} dict"
        )
    pairs: list[Any] = []
    n = len(result)
    scored = bool(n) and not isinstance(result[0], str)
    for position, item in enumerate(result):
        if isinstance(item, str) and not scored:
            pairs.append((item, float(n - position)))
        elif (
            scored
            and isinstance(item, Sequence)
            and not isinstance(item, (str, bytes))
            and len(item) == 2
        ):
            pairs.append((item[0], item[1]))
        else:
            raise RetrieverError(
                f"retriever {retriever!r} returned {item!r} at position {position} for query "
                f"{query_id!r}; each item must be a doc id or a (doc_id, score) pair (one "
                "kind per ranking)"
            )
    return pairs, "pairs" if scored else "ids"


def _score_value(score: object, doc: str, query_id: str, retriever: str) -> float:
    """A returned score as a finite float, or a RetrieverError naming document and query. A
    string ("0.9") or a bool is no score, as in a data file: float() would take them."""
    if isinstance(score, (str, bytes, bool)):
        raise RetrieverError(
            f"retriever {retriever!r} returned score {score!r} ({type(score).__name__}) for "
            f"document {doc!r}, query {query_id!r}; scores must be numbers"
        )
    try:
        value = float(score)  # type: ignore[arg-type]
    except OverflowError:  # an int beyond a float's range (10**400); its repr may be refused
        raise RetrieverError(
            f"retriever {retriever!r} returned an integer score too large for a float for "
            f"document {doc!r}, query {query_id!r}; scores must be finite"
        ) from None
    except (TypeError, ValueError):
        raise RetrieverError(
            f"retriever {retriever!r} returned score {score!r} for document {doc!r}, query "
            f"{query_id!r}; scores must be numbers"
        ) from None
    if not np.isfinite(value):
        raise RetrieverError(
            f"retriever {retriever!r} returned score {score!r} for document {doc!r}, query "
            f"{query_id!r}; scores must be finite"
        )
    return value


class CallableRetriever(Named):
    """A retriever around a plain function: ``query_text -> ranking`` or, with
    ``batched=True``, ``list[query_text] -> list[ranking]`` (one ranking per text, in order).

    A ranking is a list of doc ids (best first), a list of ``(doc_id, score)`` pairs, or a
    ``{doc_id: score}`` dict. ``scores`` says which way the scores point: ``"similarity"``
    (higher is better, the default), ``"distance"`` or ``"rank"`` (lower is better; they are
    negated in the run). Pairs listed in the opposite order for most queries are an error
    naming ``scores=``; so are dicts, when no direction is declared and their order rises too
    regularly to be chance (see :mod:`pytest_ragmetrics.data.scores`). A function with a ``k``
    parameter is called with ``k=k``; results longer than ``k`` are cut to the best ``k``.
    With a ``corpus``, unknown doc ids are an error. With ``cache`` (True: the session's cache,
    or ``.ragmetrics/cache`` outside pytest; or a folder, or a Cache) its runs are cached,
    keyed by its identity (the function's code digest, ``version``, ``parameters``), the
    corpus fingerprint when a corpus is given, the queries and k. What makes the identity is
    read-only once built (:class:`~pytest_ragmetrics.retrievers.named.Named`).
    """

    fixed: ClassVar[frozenset[str]] = Named.fixed | {
        "function",
        "batched",
        "corpus",
        "parameters",
        "scores",
        "declared",
        "version",
        "takes_k",
    }

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        name: str | None = None,
        batched: bool = False,
        corpus: Corpus | None = None,
        parameters: Mapping[str, Any] | None = None,
        scores: str | None = None,
        version: str | int | None = None,
        cache: CacheLike | bool = None,
    ) -> None:
        if not callable(function):
            raise ConfigError(f"from_function needs a callable, got {type(function).__name__}")
        self.function = function
        self.batched = batched
        self.corpus = corpus
        self._name = name or getattr(function, "__qualname__", None) or type(function).__name__
        where = f"from_function({self._name!r})"
        self.parameters = jsonable(dict(parameters or {}), f"{where}: parameters")
        self.scores: ScoreKind = check_score_kind("similarity" if scores is None else scores, where)
        self.declared = scores is not None
        self.version = version
        self.takes_k = accepts_k(function)
        self.cache = cache
        # A name is a label, kept when the index or model behind it changes: only parameters=
        # or version= declare what tells the runs apart.
        told_apart = bool(parameters) or version is not None
        if cache is not None and cache is not False and not told_apart:
            refuse_uncacheable(function, where)  # what it reaches must tell runs apart
        self._identity: dict[str, Any] | None = None

    def __repr__(self) -> str:
        return f"CallableRetriever({self._name!r}, batched={self.batched})"

    def identity(self) -> dict[str, Any]:
        """Name, the function (qualified name and code digest), how it is called, the score
        direction, ``version`` and ``parameters`` when given, the corpus fingerprint: as of
        the last search, or now before the first (each search reads the function again, see
        :func:`~pytest_ragmetrics.code_identity.current_digest`)."""
        if self._identity is None:
            self._identity = self._described(current_digest(self.function))
        return dict(self._identity)

    def _described(self, digest: str) -> dict[str, Any]:
        described = function_identity(self.function, self.version, digest)
        identity: dict[str, Any] = {
            "kind": "callable",
            "name": self._name,
            "function": described.pop("function"),
            **described,
            "batched": self.batched,
            "scores": self.scores,
            "takes_k": self.takes_k,
        }
        if self.parameters:
            identity["parameters"] = self.parameters
        if self.corpus is not None:
            identity["corpus"] = self.corpus.fingerprint
        return identity

    def _call(self, argument: Any, query_id: str, k: int) -> Any:
        function = self.function
        if self.takes_k:
            return guarded_call(lambda: function(argument, k=k), self._name, query_id)
        return guarded_call(lambda: function(argument), self._name, query_id)

    def search(self, queries: Queries, k: int) -> Run:
        """Call the function for every query (through the cache, when asked) as a Run."""
        k = check_k(k, self._name)
        cache = resolve_cache(self.cache)
        # Read the function again: a value changed since the last search (in place, or a
        # name rebound) must not be served that search's run.
        digest = current_digest(self.function)
        self._identity = self._described(digest)
        identity = dict(self._identity)
        run = cached_search(cache, identity, queries, k, lambda: self._search(queries, k))
        settle(self.function)
        return check_run(run, queries, k, retriever=self._name, corpus=self.corpus)

    def _search(self, queries: Queries, k: int) -> Run:
        query_ids = queries.query_ids.tolist()
        if self.batched:
            results = self._call(list(queries.texts), f"a batch of {len(queries)} queries", k)
            if isinstance(results, (str, bytes, Mapping)) or not isinstance(results, Sequence):
                raise RetrieverError(
                    f"batched retriever {self._name!r} returned {type(results).__name__}; "
                    "return one ranking per query, in the order of the queries"
                )
            if len(results) != len(queries):
                raise RetrieverError(
                    f"batched retriever {self._name!r} returned {len(results)} rankings for "
                    f"{len(queries)} queries; return one ranking per query, in order"
                )
        else:
            results = [
                self._call(text, f"query {qid!r}", k)
                for qid, text in zip(query_ids, queries.texts, strict=True)
            ]
        groups: list[list[str]] = []
        all_scores: list[float] = []
        forms: list[str] = []
        for qid, result in zip(query_ids, results, strict=True):
            ids, scores, form = _ranking_entries(result, qid, self._name)
            groups.append(ids)
            all_scores.extend(scores)
            forms.append(form)
        values = self._oriented(query_ids, groups, all_scores, forms)
        run = _run_from_groups(query_ids, groups, values, self._name)
        if int(run.depths().max(initial=0)) > k:
            run = run.truncate(k)
        return run

    def _oriented(
        self, query_ids: list[str], groups: list[list[str]], scores: list[float], forms: list[str]
    ) -> np.ndarray[Any, np.dtype[np.float64]]:
        """The scores, higher-is-better, once their order as returned is checked: lists of
        pairs (best first by contract) against ``scores=``; dicts, whose order means nothing,
        only when no direction was declared, and only against an order too regular to be
        chance (:func:`~pytest_ragmetrics.data.scores.unordered_contradiction`)."""
        values = np.asarray(scores, dtype=np.float64)
        counts = np.array([len(g) for g in groups], dtype=np.int64)
        own = np.repeat([f != "ids" for f in forms], counts).astype(bool)
        fix = "from_function(..., scores={kind!r})"
        who = f"retriever {self._name!r}"
        pairs = _subset(query_ids, counts, values, [f == "pairs" for f in forms])
        found = order_contradiction(*pairs, self.scores)
        if found is not None:
            raise RetrieverError(found.describe(who, fix))
        if not self.declared:
            found = unordered_contradiction(
                *_subset(query_ids, counts, values, [f == "mapping" for f in forms])
            )
            if found is not None:
                raise RetrieverError(undeclared_error(found, fix, who))
        if self.scores != "similarity":
            values[own] = oriented(values[own], self.scores)
        return values


def _subset(
    query_ids: list[str],
    counts: np.ndarray[Any, np.dtype[np.int64]],
    values: np.ndarray[Any, np.dtype[np.float64]],
    chosen: list[bool],
) -> tuple[list[str], np.ndarray[Any, np.dtype[np.int64]], np.ndarray[Any, np.dtype[np.float64]]]:
    """The ``chosen`` queries of CSR ``values`` (``counts`` entries each): ids, offsets, values."""
    mask = np.asarray(chosen, dtype=bool)
    offsets = np.concatenate(([0], np.cumsum(counts[mask]))).astype(np.int64)
    names = [q for q, c in zip(query_ids, chosen, strict=True) if c]
    return names, offsets, values[np.repeat(mask, counts)]


def accepts_k(function: Callable[..., Any]) -> bool:
    """Whether ``function`` has a parameter named ``k`` (it is then called with ``k=k``)."""
    try:
        parameters = inspect.signature(function).parameters
    except (TypeError, ValueError):  # some built-ins have no signature
        return False
    found = parameters.get("k")
    return found is not None and found.kind in (
        inspect.Parameter.POSITIONAL_OR_KEYWORD,
        inspect.Parameter.KEYWORD_ONLY,
    )


def _run_from_groups(
    query_ids: list[str],
    groups: list[list[str]],
    scores: Sequence[float] | np.ndarray[Any, Any],
    retriever: str,
) -> Run:
    from pytest_ragmetrics.data.model import encode_ids

    vocab, codes, offsets = encode_ids(groups)
    try:
        return Run(
            Entries(as_str_array(query_ids), offsets, vocab, codes),
            np.asarray(scores, dtype=np.float64),
            check_duplicates=False,
            source=f"retriever {retriever!r}",
        )
    except DataFormatError as exc:
        raise RetrieverError(str(exc)) from None


class FunctionOptions(TypedDict, total=False):
    """The keyword options :func:`from_function` passes on to :class:`CallableRetriever`."""

    name: str | None
    batched: bool
    corpus: Corpus | None
    parameters: Mapping[str, Any] | None
    scores: str | None
    version: str | int | None
    cache: CacheLike | bool


def from_function(
    function: Callable[..., Any], **options: Unpack[FunctionOptions]
) -> CallableRetriever:
    """Turn your search function into a :class:`Retriever` (see :class:`CallableRetriever`).

    ``function(text) -> ranking`` (or ``function(text, k) -> ranking``: a ``k`` parameter gets
    the k asked for), or with ``batched=True`` ``function(texts) -> [ranking, ...]``. A ranking
    is doc ids best first, ``(doc_id, score)`` pairs or ``{doc_id: score}``. ``scores``:
    ``"similarity"`` (higher is better, default), ``"distance"`` (lower is better: LangChain's
    ``similarity_search_with_score``, faiss ``IndexFlatL2``) or ``"rank"`` (1 = best). The
    identity holds the function's code digest (:mod:`pytest_ragmetrics.code_identity`), so an
    edit of its code invalidates cached runs; ``version`` (bump it when data the code reads
    changes) and ``parameters`` (JSON-able) join it. ``cache=True`` caches the runs.
    """
    return CallableRetriever(function, **options)


# -- the run cache shared by the built-in retrievers ------------------------------------------


def cached_search(
    cache: Cache | None,
    identity: Mapping[str, Any],
    queries: Queries,
    k: int,
    compute: Callable[[], Run],
) -> Run:
    """``compute()`` the run, or read it from ``cache`` (keyed by identity, queries and k)."""
    if cache is None or not cache.enabled:
        return compute()
    key = {
        "retriever": dict(identity),
        "queries": queries.fingerprint,
        "k": k,
    }

    def arrays() -> dict[str, np.ndarray[Any, Any]]:
        run = compute()
        return {
            "query_ids": run.query_ids,
            "offsets": run.offsets,
            "doc_ids": run.doc_ids,
            "doc_codes": run.doc_codes,
            "scores": run.scores,
        }

    found = cache.arrays("run", key, arrays, meta={"queries": len(queries), "k": k})
    stored = Entries(found["query_ids"], found["offsets"], found["doc_ids"], found["doc_codes"])
    return Run(stored, found["scores"], check_duplicates=False, canonical=True)


class CorpusRetriever(Named):
    """What BM25 and dense retrieval share: a search of their ``corpus`` through ``_search``,
    its runs cached in ``cache`` (when there is one) under their identity and the corpus's
    texts (:meth:`_run_key`). What makes the identity is read-only once built (:class:`Named`).
    """

    fixed: ClassVar[frozenset[str]] = Named.fixed | {"corpus"}
    corpus: Corpus
    cache: Cache | None

    def identity(self) -> dict[str, Any]:
        raise NotImplementedError

    def _search(self, queries: Queries, k: int) -> Run:
        raise NotImplementedError

    def _run_key(self) -> dict[str, Any]:
        """What the runs are cached under: the identity and the corpus's texts."""
        return {**self.identity(), "corpus": self.corpus.text_fingerprint}

    def search(self, queries: Queries, k: int) -> Run:
        """Top-``k`` documents per query (see the class doc), read from the cache if it has them."""
        k = check_k(k, self._name)
        key = self._run_key()
        run = cached_search(self.cache, key, queries, k, lambda: self._search(queries, k))
        return check_run(run, queries, k, retriever=self._name, corpus=self.corpus)
