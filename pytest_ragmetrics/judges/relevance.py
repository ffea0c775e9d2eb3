"""Relevance judges: is this passage relevant to this question? (yes / no / not judged)

One narrow question per (question, passage) pair, asked in batches: what pooling needs to label
documents no person judged, and what a context-relevance metric needs to grade what a retriever
handed the generator. Three judges, each built on the machinery of the answer judges:

- :class:`EmbeddingRelevanceJudge`: cosine similarity of the question and the passage (the
  :class:`~pytest_ragmetrics.judges.embedding.EmbeddingJudge`'s model and encoder) against a
  threshold that calibration can tune; similarities are cached, so a new threshold re-uses them.
- :class:`HttpRelevanceJudge`: a yes/no question to an OpenAI-compatible endpoint through
  :class:`~pytest_ragmetrics.transport.ChatClient` (no redirects, the key scrubbed, retries,
  ``concurrency`` in flight), verdicts cached per prompt, token usage kept when reported.
- :class:`RecordedRelevanceJudge`: verdicts replayed from JSONL (a filled-in pool file, or an
  earlier judge's output), looked up by (query id, document id).
"""

from __future__ import annotations

import copy as copy_module
import hashlib
import math
import os
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pytest_ragmetrics.data.textfile import read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.base import (
    CacheLike,
    VerdictCache,
    check_text,
    make_identity,
    naming,
)
from pytest_ragmetrics.prompts import (
    JUDGE_CONTEXT,
    JUDGE_ROLES,
    RELEVANCE_KEYWORDS,
    prompt_keywords,
)

if TYPE_CHECKING:
    from pytest_ragmetrics.transport import ChatClient, Cost, Meter

PathLike = str | os.PathLike[str]


@dataclass(frozen=True)
class RelevancePair:
    """One question to a relevance judge: is ``passage`` relevant to ``query``?

    ``query_id`` and ``doc_id`` name the pair in verdicts and errors (a recorded judge looks
    verdicts up by them); without them the pair is known by its texts.
    """

    query: str
    passage: str
    query_id: str | None = None
    doc_id: str | None = None

    @property
    def label(self) -> str:
        """How errors name the pair."""
        if self.query_id is None and self.doc_id is None:
            return f"question {self.query[:60]!r}, passage {self.passage[:60]!r}"
        return f"query {self.query_id!r}, document {self.doc_id!r}"


@dataclass(frozen=True)
class RelevanceVerdict:
    """A relevance judge's answer for one pair.

    ``relevant`` is True/False, or None when the judge gave no usable verdict. ``verdict`` is
    the raw verdict text (the model's reply, the similarity and threshold, the recorded note).
    ``score`` is the similarity for a threshold judge. Token counts are those the endpoint
    reported for the request that produced the verdict; ``cached`` says it came from the
    verdict cache (no request was sent this time).
    """

    query_id: str | None
    doc_id: str | None
    relevant: bool | None
    verdict: str
    score: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached: bool = False

    @property
    def total_tokens(self) -> int | None:
        if self.prompt_tokens is None or self.completion_tokens is None:
            return None
        return self.prompt_tokens + self.completion_tokens

    def to_dict(self) -> dict[str, Any]:
        return {
            "query_id": self.query_id,
            "doc_id": self.doc_id,
            "relevant": self.relevant,
            "verdict": self.verdict,
            "score": self.score,
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "cached": self.cached,
        }


@runtime_checkable
class RelevanceJudge(Protocol):
    """Anything that says whether passages are relevant to questions."""

    def identity(self) -> dict[str, Any]:
        """What determines the verdicts: name, model, rubric, rubric_sha256, parameters."""
        ...

    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        """One verdict per pair, in order."""
        ...


@runtime_checkable
class ThresholdRelevanceJudge(RelevanceJudge, Protocol):
    """A relevance judge whose verdict is ``score >= threshold``; calibration can tune it."""

    @property
    def threshold(self) -> float: ...

    def with_threshold(self, threshold: float) -> ThresholdRelevanceJudge: ...


def relevance_pairs(pairs: Sequence[RelevancePair | tuple[str, str]]) -> list[RelevancePair]:
    """``pairs`` as checked :class:`RelevancePair` objects (tuples are (question, passage))."""
    out: list[RelevancePair] = []
    for position, pair in enumerate(pairs):
        if isinstance(pair, RelevancePair):
            item = pair
        elif isinstance(pair, tuple) and len(pair) == 2:
            item = RelevancePair(pair[0], pair[1])
        else:
            raise JudgeError(
                f"relevance pair {position} is {type(pair).__name__}; give a RelevancePair or "
                "(question, passage)"
            )
        check_text(item.query, f"the question of relevance pair {position}")
        check_text(item.passage, f"the passage of relevance pair {position}")
        out.append(item)
    return out


def judge_pairs(
    judge: RelevanceJudge, pairs: Sequence[RelevancePair | tuple[str, str]]
) -> list[RelevanceVerdict]:
    """``judge.judge_relevance`` on pairs given as RelevancePair or (question, passage)."""
    return judge.judge_relevance(relevance_pairs(pairs))


# -- embedding ------------------------------------------------------------------------------

# `ragmetrics calibrate --question relevance --judge embedding` on SciFact test (339 relevant pairs
# against 339 random corpus documents, seed 0) chooses 0.31 with kappa 0.93 on the held-out half:
# random documents are easy to reject. On a pool of dense and BM25 top-10 documents 0.31 calls 80%
# relevant (people found about one per query), so the default stays at a stricter 0.5 (28%).
DEFAULT_RELEVANCE_THRESHOLD = 0.5
EMBEDDING_RUBRIC = (
    "Embed the question and the whole passage with the model (mean pooling, L2-normalised; "
    "the model truncates long passages). The passage is relevant when the cosine similarity "
    "is at least the threshold."
)


class EmbeddingRelevanceJudge:
    """Relevant ⇔ cosine(question, passage) ≥ ``threshold``, with the embedding judge's model.

    ``model``, ``encoder``, ``model_name``, ``device`` and ``batch_size`` are those of
    :class:`~pytest_ragmetrics.judges.embedding.EmbeddingJudge` (or pass ``embedder=`` an
    existing one to share its loaded model). Similarities are cached in ``cache`` keyed by
    the model, so :meth:`with_threshold` copies and calibration re-use them.
    """

    name = "embedding-relevance"

    def __init__(
        self,
        model: str | None = None,
        *,
        threshold: float = DEFAULT_RELEVANCE_THRESHOLD,
        cache: CacheLike = None,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Callable[[list[str]], Any] | None = None,
        model_name: str | None = None,
        embedder: Any = None,
    ) -> None:
        from pytest_ragmetrics.judges.embedding import EmbeddingJudge

        _check_cosine(threshold)
        self._threshold = float(threshold)
        self._embedder: EmbeddingJudge = embedder or EmbeddingJudge(
            model, device=device, batch_size=batch_size, encoder=encoder, model_name=model_name
        )
        self.model_name = self._embedder.model_name
        self._base = {"model_digest": self._embedder.model_parameters["model_digest"]}
        self._similarities = VerdictCache(
            cache, make_identity(self.name, self.model_name, EMBEDDING_RUBRIC, self._base)
        )

    def __repr__(self) -> str:
        return f"EmbeddingRelevanceJudge(model={self.model_name!r}, threshold={self._threshold})"

    @property
    def threshold(self) -> float:
        return self._threshold

    def with_threshold(self, threshold: float) -> EmbeddingRelevanceJudge:
        """The same model and cache with another threshold (and so another identity)."""
        _check_cosine(threshold)
        copy = copy_module.copy(self)
        copy._threshold = float(threshold)
        return copy

    def identity(self) -> dict[str, Any]:
        return make_identity(
            self.name,
            self.model_name,
            EMBEDDING_RUBRIC,
            {**self._base, "threshold": self._threshold},
        )

    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        """Similarities from the cache, the missing ones embedded in one batch (each distinct
        text once)."""
        checked = relevance_pairs(pairs)
        scores: list[float | None] = []
        missing: list[int] = []
        cached = [False] * len(checked)
        for i, pair in enumerate(checked):
            found = self._similarities.peek(_embedding_inputs(pair), valid=_is_cosine)
            scores.append(found)
            if found is None:
                missing.append(i)
            else:
                cached[i] = True
        if missing:
            texts = list(
                dict.fromkeys(t for i in missing for t in (checked[i].query, checked[i].passage))
            )
            vectors = self._embedder.embed(texts)
            row = {t: k for k, t in enumerate(texts)}
            for i in missing:
                pair = checked[i]
                score = round(float(vectors[row[pair.query]] @ vectors[row[pair.passage]]), 6)
                scores[i] = score
                self._similarities.put(_embedding_inputs(pair), score)
        verdicts: list[RelevanceVerdict] = []
        for i, (pair, found_score) in enumerate(zip(checked, scores, strict=True)):
            assert found_score is not None
            score = found_score
            relevant = score >= self._threshold
            verdicts.append(
                RelevanceVerdict(
                    pair.query_id,
                    pair.doc_id,
                    relevant,
                    f"cosine(question, passage) {score:.4f} "
                    f"{'>=' if relevant else '<'} {self._threshold}",
                    score,
                    cached=cached[i],
                )
            )
        return verdicts


def _embedding_inputs(pair: RelevancePair) -> dict[str, Any]:
    return {"task": "passage-relevance", "query": pair.query, "passage": pair.passage}


def _is_cosine(value: Any) -> bool:
    return (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and -1.000001 <= value <= 1.000001
    )


def _check_cosine(value: object) -> None:
    if not _is_cosine(value) or not -1.0 <= float(value) <= 1.0:  # type: ignore[arg-type]
        raise JudgeError(f"relevance judge: threshold must be a cosine in [-1, 1], got {value!r}")


# -- HTTP -----------------------------------------------------------------------------------

SYSTEM_PROMPT = (
    "You are a careful search-quality assessor. Judge only from the text you are given, not "
    "from your own knowledge. Reply with one word: yes or no."
)
RELEVANCE_TEMPLATE = (
    "Question: {query}\n\nPassage: {passage}\n\n"
    "Is this passage relevant to the question, that is, does it contain information that "
    "helps answer it? Answer yes or no."
)
DEFAULT_MAX_PASSAGE_CHARS = 4000


def _is_reply(value: Any) -> bool:
    """The shape of a cached reply: {"reply", "verdict", "usage"}, the verdict true or false
    (a reply that did not parse into yes or no is never stored, nor read back)."""
    if not (
        isinstance(value, dict)
        and isinstance(value.get("reply"), str)
        and isinstance(value.get("verdict"), bool)
    ):
        return False
    usage = value.get("usage")
    return usage is None or (
        isinstance(usage, dict) and all(v is None or isinstance(v, int) for v in usage.values())
    )


class HttpRelevanceJudge:
    """Asks an OpenAI-compatible chat endpoint, per pair, "is this passage relevant to the
    question? answer yes or no".

    Endpoint, model, key, timeouts, retries and ``concurrency`` work as for
    :class:`~pytest_ragmetrics.judges.http.HttpJudge` (same environment variables); passages
    longer than ``max_passage_chars`` are cut (the cut is part of the identity). A reply that is
    neither yes nor no raises JudgeError naming the pair, or with ``unparseable="unjudged"``
    leaves the pair unjudged. Replies are cached per prompt, with the token usage reported
    when they were asked; one that is neither yes nor no (an empty one) is never cached.
    """

    name = "http-relevance"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        *,
        api_key_env: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        backoff: float = 1.0,
        max_backoff: float = 60.0,
        seed: int = 0,
        max_tokens: int = 5,
        unparseable: Literal["error", "unjudged"] = "error",
        system_prompt: str = SYSTEM_PROMPT,
        template: str = RELEVANCE_TEMPLATE,
        max_passage_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
        cache: CacheLike = None,
        use_env_proxy: bool = False,
        concurrency: int = 1,
        sleep: Callable[[float], None] = time.sleep,
        temperature: float = 0.0,
        client: ChatClient | None = None,
    ) -> None:
        from pytest_ragmetrics.judges.http import ENV_API_KEY, NAMING
        from pytest_ragmetrics.transport import ChatClient

        JUDGE_CONTEXT.check(template, "HTTP relevance judge: template", JudgeError)
        # ``client``: an HTTP judge's own, so that its context-relevance questions share its
        # endpoint, concurrency, cost meter and budget (the endpoint arguments are then unused).
        self._client = client or ChatClient(
            base_url,
            model,
            naming=NAMING,
            api_key_env=api_key_env or ENV_API_KEY,
            timeout=timeout,
            max_retries=max_retries,
            backoff=backoff,
            max_backoff=max_backoff,
            concurrency=concurrency,
            use_env_proxy=use_env_proxy,
            sleep=sleep,
        )
        if unparseable not in ("error", "unjudged"):
            raise JudgeError(
                f"HTTP relevance judge: unparseable must be 'error' or 'unjudged', got "
                f"{unparseable!r}"
            )
        if not isinstance(max_passage_chars, int) or max_passage_chars < 1:
            raise JudgeError(
                "HTTP relevance judge: max_passage_chars must be a positive integer, got "
                f"{max_passage_chars!r}"
            )
        self._system = system_prompt
        self._template = template
        self._unparseable = unparseable
        self._max_chars = max_passage_chars
        self._params = {
            "temperature": float(temperature),
            "seed": int(seed),
            "max_tokens": int(max_tokens),
        }
        rubric = "\n\n".join(
            [
                f"system: {system_prompt}",
                f"relevance question: {template}",
                f"Passages are cut at {max_passage_chars} characters. Relevant when the reply "
                "starts with yes, not relevant when it starts with no.",
            ]
        )
        self._rubric = rubric
        self._cache = cache
        self._set_identity()

    def _set_identity(self) -> None:
        self._identity = make_identity(
            self.name,
            self.model,
            self._rubric,
            {**self._params, "max_passage_chars": self._max_chars},
        )
        self._replies = VerdictCache(self._cache, self._identity)

    def __repr__(self) -> str:
        return f"HttpRelevanceJudge(url={self.url!r}, model={self.model!r})"

    @property
    def url(self) -> str:
        return self._client.url

    @property
    def model(self) -> str:
        return self._client.model

    @property
    def concurrency(self) -> int:
        return self._client.concurrency

    @property
    def requests_sent(self) -> int:
        """Requests sent so far (retries included; cached replies send none)."""
        return self._client.requests_sent

    @property
    def batch_size(self) -> int:
        """Pairs worth handing over at once: enough to keep every slot busy."""
        return self.concurrency

    def identity(self) -> dict[str, Any]:
        """Name, model, rubric (prompts), rubric hash and sampling parameters; no URL, no key."""
        return dict(self._identity)

    @property
    def seed(self) -> int:
        return int(self._params["seed"])

    @property
    def meter(self) -> Meter:
        """Requests, cache hits and tokens so far (its client's: shared with an HTTP judge
        whose context question it asks, and with :meth:`with_seed` copies)."""
        return self._client.meter

    @property
    def cost(self) -> Cost:
        """:attr:`meter`'s counts."""
        return self._client.meter.cost

    def with_seed(self, seed: int) -> HttpRelevanceJudge:
        """The same judge asking with another seed (another identity, its own cache entries;
        same endpoint, cost meter and budget): what ``repeats`` uses to measure how much its
        verdicts vary."""
        copy = copy_module.copy(self)
        copy._params = {**self._params, "seed": int(seed)}
        copy._set_identity()
        return copy

    def prompt(self, pair: RelevancePair) -> str:
        """The user message asked for ``pair``."""
        return self._template.format(query=pair.query, passage=pair.passage[: self._max_chars])

    def _ask(self, prompt: str) -> dict[str, Any]:
        reply = self._client.complete(
            [
                {"role": "system", "content": self._system},
                {"role": "user", "content": prompt},
            ],
            **self._params,
        )
        from pytest_ragmetrics.judges.http import parse_yes_no

        usage = None
        if reply.usage is not None:
            usage = {
                "prompt_tokens": reply.usage.prompt_tokens,
                "completion_tokens": reply.usage.completion_tokens,
            }
        return {"reply": reply.text, "verdict": parse_yes_no(reply.text), "usage": usage}

    def _one(self, pair: RelevancePair) -> RelevanceVerdict:
        prompt = self.prompt(pair)
        asked: list[bool] = []

        def compute() -> dict[str, Any]:
            asked.append(True)
            return self._ask(prompt)

        with naming(f"judging the relevance of {pair.label}"):
            raw: dict[str, Any] = self._replies.get(_http_inputs(prompt), compute, valid=_is_reply)
            if not asked:
                self._client.meter.hit()
            if raw["verdict"] is None and self._unparseable == "error":
                raise JudgeError(
                    f"HTTP relevance judge: model {self.model!r} replied "
                    f"{self._client.scrub(raw['reply'])[:120]!r} "
                    "instead of yes or no; use a stronger model, or unparseable='unjudged' to "
                    "leave such pairs unjudged"
                )
        usage = raw.get("usage") or {}
        return RelevanceVerdict(
            pair.query_id,
            pair.doc_id,
            raw["verdict"],
            raw["reply"],
            None,
            usage.get("prompt_tokens"),
            usage.get("completion_tokens"),
            cached=not asked,
        )

    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        """One question per pair, ``concurrency`` in flight, under a progress bar; verdicts in
        pair order and the error raised is the first failing pair's."""
        from pytest_ragmetrics.progress import counted, progress

        items = relevance_pairs(pairs)
        with progress(
            f"judging {len(items)} passages for relevance ({self.model})",
            len(items),
            note=f"asking {len(items):,} relevance questions of {self.model}: passages not in its "
            "cache are sent now; reruns read the cache",
        ) as advance:
            return self._client.map(counted(self._one, advance), items)

    def is_prompt_cached(self, prompt: str) -> bool:
        """Whether the reply to ``prompt`` (:meth:`prompt` of a pair) is in the cache:
        judging that pair would send nothing."""
        return self._replies.peek(_http_inputs(prompt), valid=_is_reply) is not None


def _http_inputs(prompt: str) -> dict[str, Any]:
    return {"task": "passage-relevance", "prompt": prompt}


# -- recorded -------------------------------------------------------------------------------

RECORDED_RUBRIC = (
    "Relevance verdicts recorded in a JSONL file (by people filling in a pool file, or an "
    "earlier judge run): query_id, doc_id and relevant true/false/null per line."
)


@dataclass(frozen=True)
class _Recorded:
    line: int
    relevant: bool | None
    verdict: str


def read_relevance_verdicts(path: PathLike) -> dict[tuple[str, str], _Recorded]:
    """(query id, document id) → recorded verdict, from JSONL lines with ``query_id``,
    ``doc_id`` and ``relevant`` (true, false or null; 1/0 are read as true/false).

    A malformed line or a pair given twice is a DataFormatError naming the file and line.
    """
    p = resolve(path)
    found: dict[tuple[str, str], _Recorded] = {}
    for line, record in read_jsonl(p):
        ids: list[str] = []
        for field_name in ("query_id", "doc_id"):
            value = record.get(field_name)
            if not isinstance(value, (str, int)) or isinstance(value, bool) or value == "":
                raise DataFormatError(f"missing or empty {field_name!r} (a string)", p, line)
            ids.append(str(value))
        if "relevant" not in record:
            raise DataFormatError("no 'relevant' field (true, false or null)", p, line)
        relevant = _read_relevant(record["relevant"], p, line)
        verdict = record.get("verdict")
        if verdict is not None and not isinstance(verdict, str):
            raise DataFormatError("'verdict' must be a string when given", p, line)
        key: tuple[str, str] = (ids[0], ids[1])
        if key in found:
            raise DataFormatError(
                f"query {key[0]!r}, document {key[1]!r} already appears on line {found[key].line}",
                p,
                line,
            )
        found[key] = _Recorded(line, relevant, verdict or "")
    return found


def _read_relevant(value: Any, path: Path, line: int) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise DataFormatError(f"'relevant' must be true, false or null, got {value!r}", path, line)


class RecordedRelevanceJudge:
    """Replays recorded relevance verdicts, looked up by (query id, document id).

    Pairs without ids, or not in the file, are a JudgeError naming the file and the pair.
    The identity names the file's content hash, so new verdicts make a new judge.
    """

    name = "recorded-relevance"

    def __init__(
        self, path: PathLike, *, rubric: str = RECORDED_RUBRIC, model: str | None = None
    ) -> None:
        self.path = resolve(path)
        self._records = read_relevance_verdicts(self.path)
        digest = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        self._identity = make_identity(
            self.name, model, rubric, {"file": Path(self.path).name, "file_sha256": digest}
        )

    def __repr__(self) -> str:
        return f"RecordedRelevanceJudge({os.fspath(self.path)!r}, {len(self._records)} verdicts)"

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[tuple[str, str]]:
        return iter(self._records)

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def judge_relevance(self, pairs: Sequence[RelevancePair]) -> list[RelevanceVerdict]:
        verdicts: list[RelevanceVerdict] = []
        for pair in relevance_pairs(pairs):
            if pair.query_id is None or pair.doc_id is None:
                raise JudgeError(
                    f"{os.fspath(self.path)}: recorded relevance verdicts are looked up by query "
                    f"and document id; {pair.label} has none"
                )
            recorded = self._records.get((pair.query_id, pair.doc_id))
            if recorded is None:
                raise JudgeError(
                    f"{os.fspath(self.path)}: no recorded verdict for {pair.label}; record it "
                    "(e.g. fill in the pool file) or drop the pair"
                )
            verdicts.append(
                RelevanceVerdict(
                    pair.query_id,
                    pair.doc_id,
                    recorded.relevant,
                    recorded.verdict or f"recorded on line {recorded.line}",
                )
            )
        return verdicts


# -- by kind --------------------------------------------------------------------------------


def build_relevance_judge(
    kind: str,
    *,
    cache: CacheLike = None,
    threshold: float | None = None,
    model: str | None = None,
    url: str | None = None,
    api_key_env: str | None = None,
    timeout: float | None = None,
    verdicts: PathLike | None = None,
    prompts: Mapping[str, str] | None = None,
    **options: Any,
) -> RelevanceJudge:
    """A built-in relevance judge by kind: ``embedding`` (``threshold``, ``model``), ``http``
    (``url``, ``model``, ``api_key_env``, ``timeout``, ``concurrency``, ``prompts``...), or
    ``recorded`` (``verdicts`` = JSONL file). ``options`` go to the judge's constructor.

    ``prompts`` are an HTTP judge's by role, as for
    :func:`~pytest_ragmetrics.judges.factory.build_judge` (the same folder): the relevance
    judge asks that judge's context question, so ``context`` is its template and
    ``context_system`` its system prompt, and it has the identity of
    :attr:`HttpJudge.context_judge <pytest_ragmetrics.judges.http.HttpJudge.context_judge>`
    with the same prompts, seed and temperature; the answer questions' roles do not apply."""
    if prompts and kind != "http":
        raise JudgeError(f"prompts are only used by the http relevance judge, not {kind}")
    if kind == "embedding":
        return EmbeddingRelevanceJudge(
            model,
            threshold=DEFAULT_RELEVANCE_THRESHOLD if threshold is None else threshold,
            cache=cache,
            **options,
        )
    if kind == "http":
        if timeout is not None:
            options["timeout"] = timeout
        prompt_keywords(prompts or {}, JUDGE_ROLES)  # an unknown role is an error here too
        options.update(
            {RELEVANCE_KEYWORDS[role]: text for role, text in (prompts or {}).items()
             if role in RELEVANCE_KEYWORDS}
        )  # fmt: skip
        return HttpRelevanceJudge(url, model, api_key_env=api_key_env, cache=cache, **options)
    if kind == "recorded":
        if verdicts is None:
            raise JudgeError("the recorded relevance judge needs a verdicts file (JSONL)")
        return RecordedRelevanceJudge(verdicts, **options)
    from pytest_ragmetrics.vocabulary import JUDGE_KINDS

    raise JudgeError(
        f"unknown relevance judge {kind!r}; built-in judges are {', '.join(JUDGE_KINDS)}"
    )


def token_totals(verdicts: Sequence[RelevanceVerdict]) -> dict[str, int]:
    """Tokens the endpoint reported for the verdicts asked now (cached ones excluded)."""
    fresh = [v for v in verdicts if not v.cached]
    return {
        "prompt_tokens": sum(v.prompt_tokens or 0 for v in fresh),
        "completion_tokens": sum(v.completion_tokens or 0 for v in fresh),
        "asked": len(fresh),
    }


__all__ = [
    "DEFAULT_RELEVANCE_THRESHOLD",
    "EmbeddingRelevanceJudge",
    "HttpRelevanceJudge",
    "RecordedRelevanceJudge",
    "RelevanceJudge",
    "RelevancePair",
    "RelevanceVerdict",
    "ThresholdRelevanceJudge",
    "build_relevance_judge",
    "judge_pairs",
    "read_relevance_verdicts",
    "relevance_pairs",
    "token_totals",
]
