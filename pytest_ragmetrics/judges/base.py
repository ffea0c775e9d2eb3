"""What the built-in judges share: :class:`JudgeBase`, judge identities, claim splitting and
the verdict cache (the protocols a judge implements: :mod:`~pytest_ragmetrics.judges.protocols`).
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any, TypeVar

from pytest_ragmetrics.cache import Cache, canonical_json
from pytest_ragmetrics.data.assessments import AnswerAssessment
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.protocols import Contexts
from pytest_ragmetrics.values import positive_int

CacheLike = Cache | str | os.PathLike[str] | None
T = TypeVar("T")

VERDICT_CACHE_KIND = "judge-verdicts"


class JudgeBase:
    """What the built-in judges share: :meth:`assess` checks its inputs, settles the query id
    and hands over to the judge's :meth:`_assess`."""

    name: str

    def assess(
        self, query: str, answer: str, contexts: Contexts, *, query_id: str | None = None
    ) -> AnswerAssessment:
        """Judge ``answer`` to ``query`` against ``contexts`` (see the judge's ``_assess``);
        without ``query_id`` the query's default id is used."""
        check_text(query, "query")
        check_text(answer, "answer")
        qid = query_id if query_id is not None else default_query_id(query)
        return self._assess(qid, query, answer, contexts)

    def _assess(
        self, query_id: str, query: str, answer: str, contexts: Contexts
    ) -> AnswerAssessment:
        raise NotImplementedError


def judge_name(judge: Any) -> str:
    """How messages name a judge: its ``name``, else its class's."""
    return str(getattr(judge, "name", None) or type(judge).__name__)


def identity_label(identity: Mapping[str, Any]) -> str:
    """How output names the judge of an identity: ``embedding (all-MiniLM-L6-v2)``, or its name
    alone when it has no model (a recorded judge), "judge" when it has no name either."""
    name, model = identity.get("name") or "judge", identity.get("model")
    return f"{name} ({model})" if model else str(name)


def sha256_text(text: str) -> str:
    """Hex sha256 of UTF-8 text."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def make_identity(
    name: str, model: str | None, rubric: str, parameters: Mapping[str, Any]
) -> dict[str, Any]:
    """A judge identity: everything that determines its verdicts, secrets excluded."""
    return {
        "name": name,
        "model": model,
        "rubric": rubric,
        "rubric_sha256": sha256_text(rubric),
        "parameters": dict(parameters),
    }


def identity_hash(identity: Mapping[str, Any]) -> str:
    """sha256 of the canonical JSON of a judge identity (the key calibration files use)."""
    return sha256_text(canonical_json(identity))


def default_query_id(query: str) -> str:
    """A stable id for a query given without one."""
    return "q-" + sha256_text(query)[:12]


@contextlib.contextmanager
def naming(where: str) -> Iterator[None]:
    """Re-raise a JudgeError with ``where`` it happened in front of its message."""
    try:
        yield
    except JudgeError as exc:
        raise JudgeError(f"{where}: {exc}") from exc


def naming_query(query_id: str) -> contextlib.AbstractContextManager[None]:
    """Re-raise a JudgeError naming the query being judged."""
    return naming(f"judging query {query_id!r}")


def check_repeats(repeats: object) -> int:
    """``repeats`` if it is a positive integer (how many times judging is repeated to measure
    the judge's noise), else a JudgeError."""
    return positive_int(repeats, "repeats", JudgeError)


def check_text(value: object, what: str) -> str:
    """``value`` if it is a string, else a JudgeError naming ``what``."""
    if not isinstance(value, str):
        raise JudgeError(f"{what} must be a string, got {type(value).__name__}")
    return value


def normalise_contexts(contexts: Contexts) -> list[tuple[str, str]]:
    """(context id, text) pairs; a list gets ids "0", "1", ... in order."""
    if isinstance(contexts, (str, bytes)):
        raise JudgeError(
            "contexts must be a list of passages or a mapping id -> passage, not a single "
            "string; wrap it: [context]"
        )
    if isinstance(contexts, Mapping):
        pairs = [(str(k), v) for k, v in contexts.items()]
    elif isinstance(contexts, Sequence):
        pairs = [(str(i), v) for i, v in enumerate(contexts)]
    else:
        raise JudgeError(
            "contexts must be a list of passages or a mapping id -> passage, got "
            f"{type(contexts).__name__}"
        )
    for cid, text in pairs:
        if not isinstance(text, str):
            raise JudgeError(f"context {cid!r} must be a string, got {type(text).__name__}")
    return pairs


def checked_requests(
    requests: Sequence[tuple[Sequence[str], Contexts]],
) -> list[tuple[list[str], list[tuple[str, str]]]]:
    """``judge_claims_many`` requests checked: claims as strings, contexts as (id, text) pairs."""
    return [
        ([check_text(c, "claim") for c in claims], normalise_contexts(contexts))
        for claims, contexts in requests
    ]


# A sentence ends at . ! or ? (plus closing quotes/brackets) followed by white space and a
# capital letter, digit or opening quote/bracket. Abbreviations and initials do not end one.
_BOUNDARY = re.compile(r"[.!?]+[\"'\u201d\u2019)\]]*\s+(?=[\"'\u201c\u2018(\[]?[A-Z0-9])")
_LAST_WORD = re.compile(r"(\S+)$")
_BULLET = re.compile(r"^\s*(?:[-*\u2022]|\d+[.)])\s+")
_ABBREVIATIONS = frozenset(
    [
        "e.g",
        "i.e",
        "al",
        "fig",
        "figs",
        "eq",
        "eqs",
        "ref",
        "refs",
        "dr",
        "mr",
        "mrs",
        "ms",
        "prof",
        "st",
        "jr",
        "sr",
        "vs",
        "cf",
        "ca",
        "approx",
        "vol",
        "resp",
        "inc",
        "ltd",
        "co",
        "u.s",
        "u.k",
    ]
)
SPLITTER_VERSION = "sentences-v1"


def split_sentences(text: str) -> list[str]:
    """Split text into sentences: lines (bullets stripped), then sentence ends within a line.

    A rule-based splitter (no model): good for plain prose, imperfect for unusual
    abbreviations. Its behaviour is part of each judge's identity (``SPLITTER_VERSION``).
    """
    sentences: list[str] = []
    for line in text.splitlines():
        line = _BULLET.sub("", line).strip()
        if not line:
            continue
        start = 0
        for match in _BOUNDARY.finditer(line):
            if ends_in_abbreviation(line[start : match.start() + 1]):
                continue
            sentences.append(line[start : match.end()].strip())
            start = match.end()
        sentences.append(line[start:].strip())
    return [s for s in sentences if any(ch.isalnum() for ch in s)]


def ends_in_abbreviation(text: str) -> bool:
    """Whether ``text`` (a sentence so far, up to a full stop) ends in an initial ("J.") or a
    known abbreviation ("Dr.", "e.g."): a full stop that ends no sentence."""
    word = _LAST_WORD.search(text)
    token = word.group(1).lstrip("(\"'[").rstrip(".").lower() if word else ""
    return token in _ABBREVIATIONS or (len(token) == 1 and token.isalpha())


class VerdictCache:
    """Verdicts in a :class:`~pytest_ragmetrics.cache.Cache`, keyed by judge identity + rubric
    hash + inputs hash: a rerun with the same judge and inputs asks nobody and gets the same
    verdicts; any change to the judge, its rubric or the inputs is a miss.
    """

    def __init__(self, cache: CacheLike, identity: Mapping[str, Any]) -> None:
        self.cache = cache if isinstance(cache, Cache) else Cache(cache)
        self.rekey(identity)

    def rekey(self, identity: Mapping[str, Any]) -> None:
        """Key the verdicts asked from now on by ``identity`` (a judge's, as of this judging:
        an embedding judge's encoder is read again at each, see
        :meth:`~pytest_ragmetrics.judges.embedder.Embedder.judging`)."""
        self._judge = {
            "judge_sha256": identity_hash(identity),
            "rubric_sha256": identity.get("rubric_sha256"),
            "name": identity.get("name"),
            "model": identity.get("model"),
        }

    def _key(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {**self._judge, "inputs_sha256": sha256_text(canonical_json(inputs))}

    def get(
        self,
        inputs: Mapping[str, Any],
        compute: Callable[[], T],
        *,
        valid: Callable[[Any], bool] | None = None,
    ) -> T:
        """The cached verdict for ``inputs``, or ``compute()`` stored for next time.

        Computed under the entry's lock, so parallel workers asking the same question pay
        for one answer. A cached value that fails ``valid`` is unreadable: recomputed.
        """
        if not self.cache.enabled:
            return compute()
        value: T = self.cache.json(VERDICT_CACHE_KIND, self._key(inputs), compute, valid=valid)
        return value

    def peek(
        self, inputs: Mapping[str, Any], *, valid: Callable[[Any], bool] | None = None
    ) -> Any | None:
        """The cached verdict for ``inputs``, or None."""
        return self.cache.get_json(VERDICT_CACHE_KIND, self._key(inputs), valid=valid)

    def peek_all(
        self, asked: Iterable[tuple[Mapping[str, Any], Callable[[Any], bool] | None]]
    ) -> tuple[list[Any | None], list[int]]:
        """For a batch: each ``(inputs, valid)``'s cached verdict (None where there is none)
        and the positions of the missing ones, to compute together and :meth:`put`."""
        found = [self.peek(inputs, valid=valid) for inputs, valid in asked]
        return found, [i for i, value in enumerate(found) if value is None]

    def put(self, inputs: Mapping[str, Any], value: Any) -> None:
        """Store a verdict computed outside :meth:`get` (e.g. in a batch)."""
        self.cache.put_json(VERDICT_CACHE_KIND, self._key(inputs), value)
