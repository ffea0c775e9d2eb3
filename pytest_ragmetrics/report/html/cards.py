"""A card per query shown in detail: its values before and now, then its ranking before and
now side by side (relevant documents with their grade, unjudged ones marked, where each
document went or came from), or, when the baseline's ranking was not recorded, what the
baseline's per-query data says; for answers, the answer now and before with every claim."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from pytest_ragmetrics.deltas import delta as delta_of
from pytest_ragmetrics.report.html.queries import MISSED_SHOWN, Queries, preview
from pytest_ragmetrics.report.html.shown import Cell, cell, delta_cell, side, value


class Doc(NamedTuple):
    """A ranked document: id, title, its judgment in words, class, score as written."""

    id: str
    title: str
    judgment: str
    cls: str
    score: str
    kind: str = "doc"


class Move(NamedTuple):
    """Where a document went (baseline side) or came from (this run's side)."""

    text: str
    cls: str
    kind: str = "move"


class RankRow(NamedTuple):
    """A rank of the table: (the baseline's document, where it went,) the document now
    (, where it came from); None where a ranking is shorter."""

    rank: int
    cells: list[Doc | Move | None]


class Missed(NamedTuple):
    """A relevant document not retrieved now: id, grade, its rank in the baseline."""

    id: str
    grade: int
    was: int | None


@dataclass
class Ranking:
    """A query's ranking now and, when recorded, in the baseline (``with_before``); else
    ``baseline_facts``, what the baseline's per-query data says (empty when it says
    nothing either)."""

    rows: list[RankRow]
    with_before: bool
    retrieved: int
    missed: list[Missed]
    more_missed: bool
    baseline_facts: str = ""


class ClaimShown(NamedTuple):
    supported: bool | None
    text: str
    evidence: list[str]
    score: str


@dataclass
class Answer:
    answer: str
    claims: list[ClaimShown]


@dataclass
class Card:
    qid: str
    anchor: str
    open: bool
    text: str
    metrics: list[tuple[str, Cell, Cell, Cell]]
    ranking: Ranking | None = None
    answer: Answer | None = None
    baseline_answer: Answer | None = None
    answer_missing: bool = False

    @property
    def preview(self) -> str:
        return preview(self.text) if self.text else ""


def cards(q: Queries, ids: Sequence[str], *, open_first: bool) -> list[Card]:
    """The cards of ``ids`` (the first open when ``open_first``: the evaluation failed)."""
    out = []
    for position, qid in enumerate(ids):
        record = q.records.get(qid) or {}
        text = record.get("text")
        values = []
        for metric in q.shown.metrics:
            now, before = q.now(qid, metric), q.before(qid, metric)
            # Δ by the one rule (deltas.py), as the chart and the verdict count it.
            delta = None if now is None or before is None else delta_of(before, now)
            values.append((metric, cell(before), cell(now), delta_cell(delta, side(delta))))
        card = Card(
            qid,
            q.card_of[qid],
            open_first and position == 0,
            text if isinstance(text, str) else "",
            values,
        )
        if not record:
            pass  # the template says the report has no record of it
        elif q.shown.layer == "answer":
            card.answer = _answer(record.get("answer"), record.get("claims"))
            if "baseline_answer" in record or "baseline_claims" in record:
                card.baseline_answer = _answer(
                    record.get("baseline_answer"), record.get("baseline_claims")
                )
            card.answer_missing = "baseline_answer" not in record
        else:
            card.ranking = ranking(q, qid, record)
        out.append(card)
    return out


def _answer(text: Any, claims: Any) -> Answer:
    shown = []
    for claim in claims if isinstance(claims, list) else []:
        evidence = [str(e) for e in claim.get("evidence") or [] if isinstance(e, (str, int))]
        score = value(claim.get("score"))
        shown.append(
            ClaimShown(
                claim.get("supported"),
                str(claim.get("text", "")),
                evidence,
                "" if score is None else f"{score:.3f}",
            )
        )
    return Answer(text if isinstance(text, str) else "", shown)


def _rows(ranking: Any) -> list[tuple[str, float | None, int | None]]:
    return [(row[0], value(row[1]), row[2]) for row in ranking or []]


def ranking(q: Queries, qid: str, record: Mapping[str, Any]) -> Ranking:
    """The ranking of ``qid`` now and in the baseline, rank by rank."""
    now = _rows(record.get("ranking"))
    before = _rows(record["baseline_ranking"]) if "baseline_ranking" in record else None
    titles = {k: v for k, v in (record.get("titles") or {}).items() if isinstance(v, str)}
    relevant = {k: v for k, v in (record.get("relevant") or {}).items() if isinstance(v, int)}
    grades = {doc: grade for doc, _, grade in (before or []) + now if grade is not None}
    grades.update(relevant)
    rank_before = {doc: i for i, (doc, _, _) in enumerate(before or [], start=1)}
    rank_now = {doc: i for i, (doc, _, _) in enumerate(now, start=1)}
    shown = _Docs(titles, grades, q.level)
    rows = []
    for i in range(max(len(now), len(before or []))):
        new = now[i] if i < len(now) else None
        cells: list[Doc | Move | None] = [shown.doc(new)]
        if before is not None:
            old = before[i] if i < len(before) else None
            went = None if old is None else shown.move(old[0], i + 1, rank_now, forward=True)
            came = None if new is None else shown.move(new[0], i + 1, rank_before, forward=False)
            cells = [shown.doc(old), went, cells[0], came]
        rows.append(RankRow(i + 1, cells))
    missed = [
        Missed(d, g, rank_before.get(d))
        for d, g in relevant.items()
        if g >= q.level and d not in rank_now
    ]
    facts = "" if before is not None else baseline_facts(q, qid)
    return Ranking(
        rows, before is not None, len(now), missed[:MISSED_SHOWN], len(missed) > MISSED_SHOWN, facts
    )


@dataclass
class _Docs:
    titles: Mapping[str, str]
    grades: Mapping[str, int]
    level: int

    def relevant(self, doc: str) -> bool:
        grade = self.grades.get(doc)
        return grade is not None and grade >= self.level

    def doc(self, row: tuple[str, float | None, int | None] | None) -> Doc | None:
        if row is None:
            return None
        doc, score, _ = row
        grade = self.grades.get(doc)
        rel = self.relevant(doc)
        judgment = "unjudged" if grade is None else f"{'✔ ' if rel else ''}grade {grade}"
        cls = "rel" if rel else "unjudged" if grade is None else "judged"
        return Doc(
            doc, self.titles.get(doc, ""), judgment, cls, "" if score is None else f"{score:.3f}"
        )

    def move(self, doc: str, rank: int, other: Mapping[str, int], *, forward: bool) -> Move:
        """Where ``doc`` went (baseline side) or came from (this run's side)."""
        was = other.get(doc)
        if was is None:
            text, sign = ("out of the top" if forward else "new"), (-1 if forward else 1)
        elif was == rank:
            text, sign = "=", 0
        elif forward:
            text, sign = f"→ {was}", (1 if was < rank else -1)
        else:
            arrow = "▲" if was > rank else "▼"
            text, sign = f"{arrow}{abs(was - rank)} (was {was})", (1 if was > rank else -1)
        rel = self.relevant(doc)
        return Move(text, "better" if rel and sign > 0 else "worse" if rel and sign < 0 else "")


def baseline_facts(q: Queries, qid: str) -> str:
    """What the baseline's per-query data says about ``qid`` when its ranking was not
    recorded: where its first relevant document was and is, and how many documents were and
    are retrieved ('' when the baseline has no data on the query)."""
    first = q.baseline_detail("first_relevant_rank", qid)
    if first is None:
        return ""
    text = f"its first relevant document was {_at(first)}"
    now = q.detail_now("first_relevant_rank", qid)
    if now is not None:
        text += f" and is {_at(now)} now"
    before, after = q.baseline_detail("num_retrieved", qid), q.detail_now("num_retrieved", qid)
    if before is not None and after is not None:
        text += f"; documents retrieved: {before:,} then, {after:,} now"
    return text


def _at(rank: int) -> str:
    return "not retrieved" if rank == 0 else f"at rank {rank}"
