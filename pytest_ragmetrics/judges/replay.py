"""Replaying recorded verdicts: assessments made earlier (by people or another judge), read from
JSONL and looked up by query id (the ``recorded`` judge)."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from pytest_ragmetrics.data.assessments import AnswerAssessment, read_assessments
from pytest_ragmetrics.data.textfile import resolve
from pytest_ragmetrics.errors import DataFormatError, JudgeError
from pytest_ragmetrics.judges.base import Contexts, JudgeBase, make_identity, normalise_contexts

PathLike = str | os.PathLike[str]
RUBRIC = (
    "Verdicts recorded in a file (by human annotators or an earlier judge run); each line is "
    "one answer's assessment: its claims with supported true/false/null and whether it "
    "addresses the question (true/false, or an integer on relevance_scale [lowest, highest])."
)


class RecordedJudge(JudgeBase):
    """Replays recorded assessments, looked up by query id.

    The recorded answer must be the answer being assessed (else the verdicts are about
    another text and a JudgeError says so); a record without an answer matches any. The
    identity names the file's content hash, so new verdicts make a new judge.
    """

    name = "recorded"

    def __init__(self, path: PathLike, *, rubric: str = RUBRIC, model: str | None = None) -> None:
        self.path = resolve(path)
        self._records = read_assessments(self.path)
        try:
            digest = hashlib.sha256(Path(self.path).read_bytes()).hexdigest()
        except OSError as exc:  # pragma: no cover - read_jsonl has just read it
            raise DataFormatError(f"cannot read: {exc}", self.path) from None
        self._identity = make_identity(
            self.name, model, rubric, {"file": Path(self.path).name, "file_sha256": digest}
        )

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
        normalise_contexts(contexts)
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
