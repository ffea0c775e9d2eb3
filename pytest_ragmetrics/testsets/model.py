"""What a test-set generator makes: candidate queries, the filters' reports, the test set."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

from pytest_ragmetrics.errors import DataFormatError

if TYPE_CHECKING:
    from pytest_ragmetrics.data.model import Corpus

STYLES = ("sentence", "title", "keyphrase", "fact", "paraphrase", "multi", "claim", "topic")
OFFLINE_STYLES = ("sentence", "title", "keyphrase")
HTTP_STYLES = ("fact", "paraphrase", "multi", "claim", "topic")
# The HTTP styles used unless --styles says otherwise: questions, each with a reference answer.
HTTP_DEFAULT_STYLES = ("fact", "paraphrase", "multi")
# HTTP styles whose query is a statement, not a question: no reference answer is asked for.
STATEMENT_STYLES = ("claim", "topic")
WORD = re.compile(r"\w+")  # a word, as queries and documents are split into them


def words(text: str) -> list[str]:
    """The words of ``text``, NFKC-normalised and case-folded (letters of any script)."""
    return WORD.findall(unicodedata.normalize("NFKC", text).casefold())


def normalised(text: str) -> str:
    """``text`` as duplicates are compared: its words, one space apart."""
    return " ".join(words(text))


@dataclass(frozen=True)
class Candidate:
    """One generated query: its text, the documents it was made from (the relevant ones,
    graded), the style that made it, a reference answer when the generator gives one, the
    text taken out of its source document when the query is that sentence or title and the test
    set's corpus copy lacks it (inverse cloze as Lee et al. 2019 train it), and the sentences
    of the text the copy lacks besides (``echoes``: the one restating the query most);
    ``uncut``: drawn to be cut, the query could not be (cut, nothing of its document's text
    would be left) and stays in it."""

    query_id: str
    text: str
    relevant: tuple[tuple[str, int], ...]
    style: str
    answer: str | None = None
    removed: str | None = None
    echoes: tuple[str, ...] = ()
    uncut: bool = False

    @property
    def source(self) -> str:
        """The document the query was made from (the first relevant one)."""
        return self.relevant[0][0]

    def with_id(self, query_id: str) -> Candidate:
        return replace(self, query_id=query_id)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "query_id": self.query_id,
            "query": self.text,
            "relevant": dict(self.relevant),
            "style": self.style,
            "answer": self.answer,
        }
        if self.removed is not None:
            data["removed_from_source"] = self.removed
        if self.echoes:
            data["echoes_removed_from_source"] = list(self.echoes)
        return data


@dataclass(frozen=True)
class FilterReport:
    """What one filter did: how many candidates it removed (or, not applied, would have
    removed), which, and why it was not applied."""

    name: str
    removed: tuple[str, ...]
    applied: bool = True
    reason: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    checked: int = 0
    details: Mapping[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            "name": self.name,
            "applied": self.applied,
            "checked": self.checked,
            "removed" if self.applied else "would_remove": len(self.removed),
            "query_ids": list(self.removed),
            "parameters": dict(self.parameters),
        }
        if self.reason:
            data["reason"] = self.reason
        if self.details:
            data["details"] = dict(self.details)
        return data

    def describe(self) -> str:
        count = len(self.removed)
        if self.applied:
            return f"{self.name}: removed {count} of {self.checked}"
        return (
            f"{self.name}: not applied ({self.reason}); it would remove {count} of {self.checked}"
        )


@dataclass(frozen=True)
class TestSet:
    """The queries kept, in order, the provenance that ``dataset.json`` records, and the
    corpus the folder carries when it is not the source corpus (a copy without the queries'
    removed sentences; None: the source corpus as it is)."""

    __test__ = False  # not a pytest test class

    queries: tuple[Candidate, ...]
    provenance: Mapping[str, Any]
    corpus: Corpus | None = None

    def __iter__(self) -> Iterator[Candidate]:
        return iter(self.queries)

    def __len__(self) -> int:
        return len(self.queries)

    def summary(self, where: str) -> list[str]:
        """What ``ragmetrics generate`` says of the set it wrote to ``where``: the counts, the
        corpus copy, the queries not cut, the generator's drops, each filter, the review, the
        requests, and a set smaller than asked for."""
        provenance = self.provenance
        references = provenance.get("references") or 0
        lines = [f"wrote {where}: {len(self)} queries"]
        if references:
            lines[0] += f", {references} reference answers"
        copy = (provenance.get("corpus") or {}).get("copy")
        if copy:
            lines.append(
                "  corpus: a copy without the removed queries "
                f"({copy['documents_changed']} documents changed)"
            )
        not_cut = provenance.get("not_cut") or {}
        if not_cut.get("count"):
            lines.append(
                f"  not cut: {not_cut['count']} queries stay in a relevant document "
                f"({', '.join(not_cut.get('query_ids', [])[:5])})"
            )
        dropped = provenance.get("dropped_by_generator") or {}
        if dropped:
            lines.append(f"  generator: dropped {len(dropped)} (empty or unusable replies)")
        lines += [_filter_line(report) for report in provenance.get("filters") or []]
        review = provenance.get("review")
        if review:
            lines.append(
                f"  review: {review['accept']} accepted, {review['edit']} edited, "
                f"{review['reject']} rejected, {review['undecided']} undecided"
            )
            lines += [f"  note: {notice}" for notice in review.get("notices") or []]
        cost = provenance.get("cost") or {}
        if cost.get("calls") or cost.get("cache_hits"):
            lines.append(
                f"  requests: {cost.get('calls', 0)} sent, {cost.get('cache_hits', 0)} cached"
            )
        if len(self) < (provenance.get("requested") or 0):
            lines.append(
                f"  note: fewer than the {provenance['requested']} queries asked for: "
                + shortfall(provenance, len(self))
            )
        return lines


def _filter_line(report: Mapping[str, Any]) -> str:
    """One filter's line of :meth:`TestSet.summary`."""
    if report.get("applied"):
        return f"  {report['name']}: removed {report['removed']} of {report['checked']}"
    return (
        f"  {report['name']}: NOT APPLIED ({report.get('reason')}); it would remove "
        f"{report['would_remove']} of {report['checked']}"
    )


def tsv_id_problem(value: str) -> str | None:
    """Why a qrels TSV cannot hold the id ``value`` (None: it can)."""
    if not value:
        return "is empty; a qrels TSV cannot hold it"
    if any(ch in "\t\r\n" for ch in value):
        return "holds a tab or line break; a qrels TSV cannot hold it"
    return None


def check_candidates(candidates: Sequence[Candidate], where: str) -> None:
    """Candidates a writer can store: unique ids, non-empty texts, judged documents."""
    seen: set[str] = set()
    for c in candidates:
        if c.query_id in seen:
            raise DataFormatError(f"{where}: query id {c.query_id!r} appears twice")
        seen.add(c.query_id)
        if not c.text.strip():
            raise DataFormatError(f"{where}: query {c.query_id!r} has no text")
        if not c.relevant:
            raise DataFormatError(f"{where}: query {c.query_id!r} names no relevant document")


def shortfall(provenance: Mapping[str, Any], queries: int) -> str:
    """Why a test set holds fewer queries than were asked for, from its provenance."""
    candidates = int(provenance.get("candidates") or 0)
    after = int(provenance.get("after_filters") or 0)
    if provenance.get("review") and queries < min(after, int(provenance["requested"])):
        return "the review rejected, deleted or left out rows"
    if candidates < int(provenance["requested"]):
        return (
            f"the generator made only {candidates} candidates from this corpus (the offline one "
            "makes at most one query per document and style: add documents or --styles)"
        )
    return (
        f"the filters kept {after} of {candidates} candidates; raise --candidates to leave "
        "room for them"
    )
