"""Replaying recorded verdicts (the ``recorded`` judges): assessments made earlier (by people or
another judge), read from JSONL and looked up by query id (:class:`RecordedJudge`), and
relevance verdicts looked up by (query id, document id) (:class:`RecordedRelevanceJudge`: a
filled-in pool file, or an earlier judge's output)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.assessments import AnswerAssessment, read_assessments
from pytest_ragmetrics.data.textfile import read_jsonl, resolve
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.base import JudgeBase, make_identity, normalise_contexts
from pytest_ragmetrics.judges.protocols import Contexts
from pytest_ragmetrics.judges.relevance import RelevancePair, RelevanceVerdict, relevance_pairs

PathLike = str | os.PathLike[str]
RUBRIC = (
    "Verdicts recorded in a file (by human annotators or an earlier judge run); each line is "
    "one answer's assessment: its claims with supported true/false/null and whether it "
    "addresses the question (true/false, or an integer on relevance_scale [lowest, highest])."
)


def _file_identity(name: str, path: PathLike, rubric: str, model: str | None) -> dict[str, Any]:
    """The identity of a judge replaying the verdicts of the file at ``path``: its name and
    content hash, so that new verdicts make a new judge."""
    try:
        digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    except OSError as exc:  # pragma: no cover - the file has just been read
        raise DataFormatError(f"cannot read: {exc}", Path(path)) from None
    return make_identity(name, model, rubric, {"file": Path(path).name, "file_sha256": digest})


class RecordedJudge(JudgeBase):
    """Replays recorded assessments, looked up by query id.

    The recorded answer must be the answer being assessed (else the verdicts are about
    another text and a JudgeError says so); a record without an answer matches an answer that
    holds each recorded claim (whitespace aside). A claim's recorded evidence must name
    contexts given now (by the ids the file uses). The identity names the file's content
    hash, so new verdicts make a new judge.
    """

    name = "recorded"

    def __init__(self, path: PathLike, *, rubric: str = RUBRIC, model: str | None = None) -> None:
        self.path = resolve(path)
        self._records = read_assessments(self.path)
        self._identity = _file_identity(self.name, self.path, rubric, model)

    def __repr__(self) -> str:
        return f"RecordedJudge({os.fspath(self.path)!r}, {len(self._records)} assessments)"

    def __len__(self) -> int:
        return len(self._records)

    def __iter__(self) -> Iterator[AnswerAssessment]:
        return (a for _, a in self._records.values())

    def identity(self) -> dict[str, Any]:
        """Name, rubric, rubric hash and the verdict file's name and sha256."""
        return dict(self._identity)

    def assessments(self) -> list[AnswerAssessment]:
        """Every recorded assessment, in file order (what ``evaluate_answers`` takes)."""
        return list(self)

    def _assess(self, qid: str, query: str, answer: str, contexts: Contexts) -> AnswerAssessment:
        """The recorded assessment of ``query_id`` (or of the query's default id)."""
        given = {cid for cid, _ in normalise_contexts(contexts)}
        if qid not in self._records:
            raise JudgeError(
                f"{os.fspath(self.path)}: no recorded verdicts for query {qid!r}; record them "
                "or pass the query_id the file uses"
            )
        line, recorded = self._records[qid]
        if recorded.answer and recorded.answer.strip() != answer.strip():
            raise JudgeError(
                f"{os.fspath(self.path)}:{line}: the recorded verdicts for query {qid!r} are "
                f"about another answer ({recorded.answer[:60]!r}, not {answer[:60]!r}); "
                "re-judge the new answer"
            )
        if not recorded.answer:
            _check_claims_in_answer(self.path, line, qid, recorded, answer)
        _check_evidence_given(self.path, line, qid, recorded, given)
        asked = recorded.query.strip()
        if recorded.addresses_question is not None and asked and asked != query.strip():
            # Whether an answer addresses the question is a verdict about that question.
            raise JudgeError(
                f"{os.fspath(self.path)}:{line}: the recorded verdicts for query {qid!r} say "
                f"whether the answer addresses another question ({recorded.query[:60]!r}, not "
                f"{query[:60]!r}); re-judge it for this question"
            )
        judge = dict(recorded.judge) or self._identity
        return AnswerAssessment(
            qid,
            answer,
            recorded.claims,
            recorded.addresses_question,
            recorded.relevance_scale,
            judge,
            recorded.raw,
            recorded.query or query,
        )


def _words(text: str) -> str:
    return " ".join(text.split())


def _check_claims_in_answer(
    path: Path, line: int, qid: str, recorded: AnswerAssessment, answer: str
) -> None:
    """A record without its answer is replayed only for an answer that holds its claims:
    otherwise its verdicts are about another text and nothing would say so. A relevance
    verdict with neither answer nor claims is about no answer anyone can tell."""
    if not recorded.claims and recorded.addresses_question is not None:
        raise JudgeError(
            f"{os.fspath(path)}:{line}: the recorded verdicts for query {qid!r} say whether an "
            "answer addresses the question, but not which answer (no 'answer', no claims): "
            "record the answer they are about"
        )
    said = _words(answer)
    for claim in recorded.claims:
        if _words(claim.text) not in said:
            raise JudgeError(
                f"{os.fspath(path)}:{line}: the recorded claim {claim.text[:60]!r} of query "
                f"{qid!r} is not in the answer being assessed ({answer[:60]!r}); re-judge the "
                "new answer, or record the answer the verdicts are about ('answer')"
            )


def _check_evidence_given(
    path: Path, line: int, qid: str, recorded: AnswerAssessment, given: set[str]
) -> None:
    """A claim recorded as supported by a context that is not among those given now: the
    support was judged against other passages."""
    for claim in recorded.claims:
        missing = [e for e in claim.evidence if e not in given]
        if missing:
            shown = ", ".join(repr(c) for c in sorted(given)) or "none"
            raise JudgeError(
                f"{os.fspath(path)}:{line}: the recorded claim {claim.text[:60]!r} of query "
                f"{qid!r} cites context {missing[0]!r}, which is not among the contexts given "
                f"now ({shown}); re-judge it against these contexts, or pass them with the "
                "ids the file uses (a mapping id -> passage)"
            )


# -- relevance verdicts ----------------------------------------------------------------------

RECORDED_RUBRIC = (
    "Relevance verdicts recorded in a JSONL file (by people filling in a pool file, or an "
    "earlier judge run): query_id, doc_id and relevant true/false/null per line."
)


@dataclass(frozen=True)
class _Recorded:
    line: int
    relevant: bool | None
    verdict: str
    # The question and the passage (title and text, or text alone) the verdict was given
    # about, when the line holds them (a pool file does): a verdict about other texts is
    # not replayed.
    query: str | None = None
    passages: tuple[str, ...] = ()

    def mismatch(self, pair: RelevancePair) -> str:
        """What of ``pair`` the verdict was not given about ('' when it matches)."""
        if self.query is not None and _words(self.query) != _words(pair.query):
            return f"another question ({self.query[:60]!r}, not {pair.query[:60]!r})"
        given = _words(pair.passage)
        if self.passages and not any(_same_passage(_words(p), given) for p in self.passages):
            return f"another passage ({self.passages[0][:60]!r}, not {pair.passage[:60]!r})"
        return ""


def _same_passage(recorded: str, given: str) -> bool:
    """The same passage, or one cut short of the other (a context cut after
    ragmetrics_context_chars characters)."""
    if not recorded or not given:
        return recorded == given
    return recorded.startswith(given) or given.startswith(recorded)


def read_relevance_verdicts(path: PathLike) -> dict[tuple[str, str], _Recorded]:
    """(query id, document id) → recorded verdict, from JSONL lines with ``query_id``,
    ``doc_id`` and ``relevant`` (true, false or null; 1/0 are read as true/false), and the
    ``query``, ``title`` and ``text`` it was given about when the line holds them.

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
        texts = {k: v for k in ("query", "title", "text") if isinstance(v := record.get(k), str)}
        text = texts.get("text")
        # What a judge read: title and text (as a pool gives it), or the text alone.
        passages = () if text is None else (f"{texts.get('title', '')} {text}".strip(), text)
        key: tuple[str, str] = (ids[0], ids[1])
        if key in found:
            raise DataFormatError(
                f"query {key[0]!r}, document {key[1]!r} already appears on line {found[key].line}",
                p,
                line,
            )
        found[key] = _Recorded(line, relevant, verdict or "", texts.get("query"), passages)
    return found


def _read_relevant(value: Any, path: Path, line: int) -> bool | None:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, int) and value in (0, 1):
        return bool(value)
    raise DataFormatError(f"'relevant' must be true, false or null, got {value!r}", path, line)


class RecordedRelevanceJudge:
    """Replays recorded relevance verdicts, looked up by (query id, document id).

    Pairs without ids, or not in the file, are a JudgeError naming the file and the pair; so
    is a verdict recorded with a question or passage other than the pair's (whitespace aside;
    a passage may be cut short of the other). The identity names the file's content hash, so
    new verdicts make a new judge.
    """

    name = "recorded-relevance"

    def __init__(
        self, path: PathLike, *, rubric: str = RECORDED_RUBRIC, model: str | None = None
    ) -> None:
        self.path = resolve(path)
        self._records = read_relevance_verdicts(self.path)
        self._identity = _file_identity(self.name, self.path, rubric, model)

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
            other = recorded.mismatch(pair)
            if other:
                raise JudgeError(
                    f"{os.fspath(self.path)}:{recorded.line}: the recorded verdict for "
                    f"{pair.label} is about {other}; judge the pair again (pool it anew)"
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


__all__ = [
    "RecordedJudge",
    "RecordedRelevanceJudge",
    "read_relevance_verdicts",
]
