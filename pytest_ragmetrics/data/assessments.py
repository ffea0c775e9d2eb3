"""What a judge says about an answer: a judged Claim and the AnswerAssessment of one answer,
JSON round-trippable, and the recorded-verdicts files that hold them (one per line).

Judges write them and answer metrics read them, as retrievers write runs and retrieval metrics
read them; so they live with the data, below both.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pytest_ragmetrics.data.textfile import PathLike, read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.values import finite_number, real_number

SCHEMA = 1


@dataclass(frozen=True)
class Claim:
    """One factual claim of an answer and the judge's verdict on it.

    ``supported`` is None when the claim was not judged (it then counts in neither the
    numerator nor the denominator of groundedness). ``evidence`` names the contexts that
    support it, when the judge can tell. ``score`` (e.g. a cosine similarity) and ``verdict``
    (e.g. the judge model's reply) are the raw material a reviewer reads to see why.
    """

    text: str
    supported: bool | None = None
    evidence: tuple[str, ...] = ()
    score: float | None = None
    verdict: str | None = None

    def __post_init__(self) -> None:
        if not isinstance(self.text, str):
            raise JudgeError(f"claim text must be a string, got {type(self.text).__name__}")
        if self.supported is not None and not isinstance(self.supported, bool):
            raise JudgeError(
                f"claim {self.text[:60]!r}: supported must be true, false or null, got "
                f"{self.supported!r}"
            )
        if self.score is not None and finite_number(self.score) is None:
            raise JudgeError(
                f"claim {self.text[:60]!r}: score must be a finite number, got {self.score!r}"
            )
        object.__setattr__(self, "evidence", tuple(str(e) for e in self.evidence))

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "text": self.text,
            "supported": self.supported,
            "evidence": list(self.evidence),
            "score": self.score,
            "verdict": self.verdict,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Claim:
        """Rebuild from :meth:`to_dict` output; a bare string is an unjudged claim."""
        if isinstance(data, str):
            return cls(data)
        if not isinstance(data, Mapping):
            raise JudgeError(
                f"a claim must be an object or a string, got {type(data).__name__}: {data!r:.80}"
            )
        text = data.get("text")
        if not isinstance(text, str):
            raise JudgeError(f"claim needs a 'text' string, got {data!r:.80}")
        evidence = data.get("evidence") or ()
        if isinstance(evidence, str) or not isinstance(evidence, Sequence):
            raise JudgeError(f"claim {text[:60]!r}: 'evidence' must be a list of context ids")
        verdict = data.get("verdict")
        if verdict is not None and not isinstance(verdict, str):
            raise JudgeError(f"claim {text[:60]!r}: 'verdict' must be a string or null")
        score = data.get("score")
        return cls(
            text,
            data.get("supported"),
            tuple(str(e) for e in evidence),
            None if score is None else score,
            verdict,
        )


@dataclass(frozen=True)
class Verdict:
    """One yes/no verdict on something other than a claim: a context's relevance to the
    question (``subject`` = the context id), the answer's relevance to the question
    (``subject`` = ``"relevance"``) or its agreement with its reference (``subject`` =
    ``"reference"`` or ``"label"``). ``value`` None: not judged. ``score`` and
    ``reply`` are the raw material (a similarity, the model's words, the label compared)."""

    subject: str
    value: bool | None
    score: float | None = None
    reply: str | None = None

    def __post_init__(self) -> None:
        if self.value is not None and not isinstance(self.value, bool):
            raise JudgeError(
                f"verdict on {self.subject!r}: value must be true, false or null, got "
                f"{self.value!r}"
            )

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return {
            "subject": self.subject,
            "value": self.value,
            "score": self.score,
            "reply": self.reply,
        }

    @classmethod
    def from_dict(cls, data: Any) -> Verdict:
        """Rebuild from :meth:`to_dict` output."""
        if not isinstance(data, Mapping) or not isinstance(data.get("subject"), str):
            raise JudgeError(f"a verdict must be an object with a 'subject', got {data!r:.80}")
        score = data.get("score")
        if score is not None and real_number(score) is None:
            raise JudgeError(f"verdict on {data['subject']!r}: 'score' must be a number")
        reply = data.get("reply")
        if reply is not None and not isinstance(reply, str):
            raise JudgeError(f"verdict on {data['subject']!r}: 'reply' must be a string")
        return cls(data["subject"], data.get("value"), score, reply)


Relevance = bool | int | None


@dataclass(frozen=True)
class AnswerAssessment:
    """A judge's assessment of one answer: its claims, whether it addresses the question, and
    who judged it.

    ``addresses_question`` is a bool, or an ordinal score on the rubric's scale
    ``relevance_scale = (lowest, highest)`` (the rubric text says what each step means), or
    None when not judged. ``judge`` is the judge's identity (name, model, rubric and its
    hash, parameters); ``raw`` keeps the judge's raw replies that are not tied to one claim.
    """

    query_id: str
    answer: str
    claims: tuple[Claim, ...] = ()
    addresses_question: Relevance = None
    relevance_scale: tuple[int, int] | None = None
    judge: Mapping[str, Any] = field(default_factory=dict)
    raw: Mapping[str, Any] = field(default_factory=dict)
    query: str = ""
    # Agreement with the reference answer (None: no reference or not judged).
    correctness: Verdict | None = None
    # One verdict per context the generator was given: relevant to the question?
    context_verdicts: tuple[Verdict, ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "context_verdicts", tuple(self.context_verdicts))
        for verdict in (self.correctness, *self.context_verdicts):
            if verdict is not None and not isinstance(verdict, Verdict):
                raise JudgeError(
                    f"query {self.query_id!r}: correctness and context_verdicts must be "
                    f"Verdict objects, got {type(verdict).__name__}"
                )
        if not isinstance(self.query_id, str) or not self.query_id:
            raise JudgeError(f"query_id must be a non-empty string, got {self.query_id!r}")
        if not isinstance(self.answer, str):
            raise JudgeError(
                f"query {self.query_id!r}: answer must be a string, got "
                f"{type(self.answer).__name__}"
            )
        claims = tuple(self.claims)
        for claim in claims:
            if not isinstance(claim, Claim):
                raise JudgeError(
                    f"query {self.query_id!r}: claims must be Claim objects, got "
                    f"{type(claim).__name__}"
                )
        object.__setattr__(self, "claims", claims)
        scale = self.relevance_scale
        if scale is not None:
            if (
                not isinstance(scale, Sequence)
                or len(scale) != 2
                or not all(isinstance(s, int) and not isinstance(s, bool) for s in scale)
                or scale[0] >= scale[1]
            ):
                raise JudgeError(
                    f"query {self.query_id!r}: relevance_scale must be two integers "
                    f"(lowest, highest) with lowest < highest, got {scale!r}"
                )
            object.__setattr__(self, "relevance_scale", (scale[0], scale[1]))
        value = self.addresses_question
        if value is None or isinstance(value, bool):
            return
        if not isinstance(value, int):
            raise JudgeError(
                f"query {self.query_id!r}: addresses_question must be true/false, an integer "
                f"score or null, got {value!r}"
            )
        if self.relevance_scale is None:
            raise JudgeError(
                f"query {self.query_id!r}: addresses_question is the ordinal score {value} but no "
                "relevance_scale (lowest, highest) says what it is out of; give the rubric's scale"
            )
        lo, hi = self.relevance_scale
        if not lo <= value <= hi:
            raise JudgeError(
                f"query {self.query_id!r}: addresses_question {value} is outside the rubric's "
                f"scale {lo}..{hi}"
            )

    @property
    def judged_claims(self) -> int:
        """Claims with a verdict (supported or not)."""
        return sum(c.supported is not None for c in self.claims)

    @property
    def supported_claims(self) -> int:
        """Claims judged supported."""
        return sum(c.supported is True for c in self.claims)

    @property
    def groundedness(self) -> float:
        """Supported / judged claims; NaN when no claim was judged ("no claims")."""
        judged = self.judged_claims
        return self.supported_claims / judged if judged else math.nan

    @property
    def answer_relevance(self) -> float:
        """1/0 for a yes/no verdict, the ordinal score scaled to [0, 1], NaN when unjudged."""
        value = self.addresses_question
        if value is None:
            return math.nan
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        assert self.relevance_scale is not None  # checked in __post_init__
        lo, hi = self.relevance_scale
        return (value - lo) / (hi - lo)

    @property
    def answer_correctness(self) -> float:
        """1/0 for agreeing or not with the reference; NaN when not judged."""
        verdict = self.correctness
        if verdict is None or verdict.value is None:
            return math.nan
        return 1.0 if verdict.value else 0.0

    @property
    def context_relevance(self) -> float:
        """Relevant contexts / judged contexts; NaN when no context was judged."""
        judged = [v.value for v in self.context_verdicts if v.value is not None]
        return sum(judged) / len(judged) if judged else math.nan

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (the format recorded-verdict files use, one per line)."""
        return {
            "schema": SCHEMA,
            "query_id": self.query_id,
            "query": self.query,
            "answer": self.answer,
            "claims": [c.to_dict() for c in self.claims],
            "addresses_question": self.addresses_question,
            "relevance_scale": None if self.relevance_scale is None else list(self.relevance_scale),
            "judge": dict(self.judge),
            "raw": dict(self.raw),
            "correctness": None if self.correctness is None else self.correctness.to_dict(),
            "context_verdicts": [v.to_dict() for v in self.context_verdicts],
        }

    @classmethod
    def from_dict(cls, data: Any) -> AnswerAssessment:
        """Rebuild from :meth:`to_dict` output; raises JudgeError saying what is wrong."""
        if not isinstance(data, Mapping):
            raise JudgeError(f"an assessment must be a JSON object, got {type(data).__name__}")
        schema = data.get("schema", SCHEMA)
        if schema != SCHEMA:
            raise JudgeError(
                f"assessment schema {schema!r} is not supported (this version reads {SCHEMA}); "
                "upgrade pytest-ragmetrics or re-judge"
            )
        query_id = data.get("query_id")
        if isinstance(query_id, int) and not isinstance(query_id, bool):
            query_id = str(query_id)
        if not isinstance(query_id, str) or not query_id:
            raise JudgeError("assessment needs a non-empty 'query_id' string")
        claims = data.get("claims", [])
        if not isinstance(claims, list):
            raise JudgeError(f"query {query_id!r}: 'claims' must be a list")
        for key in ("judge", "raw"):
            if not isinstance(data.get(key) or {}, Mapping):
                raise JudgeError(f"query {query_id!r}: {key!r} must be an object")
        query = data.get("query") or ""
        if not isinstance(query, str):
            raise JudgeError(f"query {query_id!r}: 'query' must be a string")
        scale = data.get("relevance_scale")
        if scale is not None and (not isinstance(scale, list) or len(scale) != 2):
            raise JudgeError(
                f"query {query_id!r}: 'relevance_scale' must be [lowest, highest], got {scale!r}"
            )
        return cls(
            query_id=query_id,
            answer=data.get("answer", ""),
            claims=tuple(Claim.from_dict(c) for c in claims),
            addresses_question=data.get("addresses_question"),
            relevance_scale=None
            if scale is None
            else (scale[0], scale[1])
            if len(scale) == 2
            else tuple(scale),
            judge=dict(data.get("judge") or {}),
            raw=dict(data.get("raw") or {}),
            query=query,
            correctness=None
            if data.get("correctness") is None
            else Verdict.from_dict(data["correctness"]),
            context_verdicts=tuple(
                Verdict.from_dict(v) for v in data.get("context_verdicts") or []
            ),
        )

    def with_query_id(self, query_id: str) -> AnswerAssessment:
        """The same assessment filed under another query id."""
        return AnswerAssessment(
            query_id,
            self.answer,
            self.claims,
            self.addresses_question,
            self.relevance_scale,
            self.judge,
            self.raw,
            self.query,
            self.correctness,
            self.context_verdicts,
        )


def read_assessments(path: PathLike) -> dict[str, tuple[int, AnswerAssessment]]:
    """query id -> (line, assessment) from a JSONL file, one :meth:`AnswerAssessment.to_dict`
    object per line; every error names the file and line."""
    found: dict[str, tuple[int, AnswerAssessment]] = {}
    for line, record in read_jsonl(path):
        try:
            assessment = AnswerAssessment.from_dict(record)
        except JudgeError as exc:
            raise DataFormatError(str(exc), resolve(path), line) from None
        if assessment.query_id in found:
            first = found[assessment.query_id][0]
            raise DataFormatError(
                f"query id {assessment.query_id!r} was already assessed on line {first}; keep "
                "one assessment per answer",
                resolve(path),
                line,
            )
        found[assessment.query_id] = (line, assessment)
    return found
