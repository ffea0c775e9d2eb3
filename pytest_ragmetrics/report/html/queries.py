"""The queries that moved: per metric, tables of the most regressed and improved queries (or
the lowest-scoring ones without a baseline) with the first relevant document's rank before →
now, and a card per query shown in detail: its values, and its ranking before and now (or,
when the baseline's ranking was not recorded, what the baseline's per-query data says), or
for answers the answer now and before with its claims."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import TYPE_CHECKING, Any, NamedTuple

from pytest_ragmetrics.report.html.shown import (
    Cell,
    Shown,
    cell,
    delta_cell,
    side,
    value,
)

if TYPE_CHECKING:
    from pytest_ragmetrics.report.html.charts import Deltas
    from pytest_ragmetrics.report.query_records import PerQueryValues

TEXT_PREVIEW = 90
MISSED_SHOWN = 20  # relevant documents named under a ranking


def preview(text: str, limit: int = TEXT_PREVIEW) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


@dataclass
class Queries:
    """An evaluation's per-query facts, for its tables and cards: its values (and its
    baseline's), its records (texts, rankings, answers), first relevant ranks now and in the
    baseline, the relevance level, and the anchor of each query's card."""

    shown: Shown
    values: PerQueryValues
    card_of: dict[str, str] = field(default_factory=dict)

    @property
    def fields(self) -> Mapping[str, Any]:
        return self.shown.checked.record.report_fields

    @property
    def records(self) -> Mapping[str, Mapping[str, Any]]:
        found = self.fields.get("queries")
        return found if isinstance(found, Mapping) else {}

    @property
    def retrieval(self) -> bool:
        return self.shown.layer == "retrieval"

    @cached_property
    def level(self) -> int:
        semantics = self.shown.checked.record.evaluation.semantics
        return 1 if semantics is None else semantics.relevance_level

    @cached_property
    def position(self) -> dict[str, int]:
        return {qid: i for i, qid in enumerate(self.values.ids)}

    def detail_now(self, name: str, qid: str) -> int | None:
        """A per-query detail of this run (``first_relevant_rank``: 0 if none retrieved)."""
        found = self.shown.checked.record.evaluation.details.get(name)
        i = self.position.get(qid)
        return None if found is None or i is None else int(found[i])

    def baseline_detail(self, name: str, qid: str) -> int | None:
        found = (self.fields.get("baseline_details") or {}).get(name) or {}
        rank = found.get(qid)
        return rank if isinstance(rank, int) else None

    def first_before(self, qid: str) -> int | None:
        """The baseline's first relevant rank of ``qid``: from its ranking when recorded,
        else from its per-query details; None when neither is known."""
        record = self.records.get(qid) or {}
        if "baseline_ranking" in record:
            return first_relevant(
                record["baseline_ranking"], record.get("relevant") or {}, self.level
            )
        return self.baseline_detail("first_relevant_rank", qid)

    def now(self, qid: str, metric: str) -> float | None:
        i = self.position.get(qid)
        return None if i is None else value(float(self.values.now(metric)[i]))

    def before(self, qid: str, metric: str) -> float | None:
        base = self.fields.get("baseline_per_query")
        if not isinstance(base, Mapping):
            return None
        number = (base.get(qid) or {}).get(metric)
        return value(number) if isinstance(number, (int, float)) else None


def first_relevant(ranking: Sequence[Any], relevant: Mapping[str, Any], level: int) -> int:
    """The rank of the first relevant document of ``ranking`` (0: none)."""
    for rank, row in enumerate(ranking, start=1):
        doc, grade = row[0], row[2]
        if doc in relevant or (grade is not None and grade >= level):
            return rank
    return 0


def rank_text(rank: int) -> str:
    return "not retrieved" if rank == 0 else str(rank)


def rank_move(before: int | None, after: int | None, *, baseline: bool = True) -> str:
    """'1 → 3' for the first relevant document's rank in the baseline and now; what is known
    when one of them is not; '' when neither is. Without a ``baseline``, the rank now."""
    if not baseline:
        return "" if after is None else rank_text(after)
    if before is not None and after is not None:
        return f"{rank_text(before)} → {rank_text(after)}"
    if after is not None:
        return f"{rank_text(after)} now (the baseline's is not recorded)"
    if before is not None:
        return f"{rank_text(before)} in the baseline (now not recorded)"
    return ""


class QueryRow(NamedTuple):
    qid: str
    card: str | None
    text: str
    before: Cell
    now: Cell
    delta: Cell
    move: str


@dataclass
class QueryTable:
    """A table of queries (their text and rank move columns only when some has one)."""

    title: str
    rows: list[QueryRow]

    @property
    def with_text(self) -> bool:
        return any(row.text for row in self.rows)

    @property
    def with_move(self) -> bool:
        return any(row.move for row in self.rows)


Row = tuple[str, float | None, float | None, float | None]


def query_tables(q: Queries, metric: str, deltas: Deltas, worst: int) -> list[QueryTable]:
    """The most regressed and most improved queries of ``metric`` by per-query Δ; without
    the baseline's values, the comparison's most regressed; without a baseline, the lowest."""
    verdict = q.shown.verdicts.get(metric)
    listed = {w[0]: (w[2], w[3]) for w in (verdict.worst if verdict is not None else [])}
    tables: list[tuple[str, Sequence[Row]]] = []
    rows: list[Row]
    if len(deltas.delta):
        n_worse, n_better = deltas.worse, deltas.better
        rows = [deltas.row(i) for i in range(min(n_worse, worst))]
        best: list[Row] = [
            deltas.row(len(deltas.delta) - 1 - i) for i in range(min(n_better, worst))
        ]
        tables.append((f"Most regressed queries ({len(rows)} of {n_worse:,} worse)", rows))
        if best:
            tables.append((f"Most improved queries ({len(best)} of {n_better:,} better)", best))
    elif listed and verdict is not None:
        rows = [(w[0], None, None, value(w[1])) for w in verdict.worst[:worst]]
        title = "Most regressed queries (from the comparison; per-query baseline values absent)"
        tables.append((title, rows))
    elif q.shown.status in ("", "new"):
        now = q.values.now(metric)
        rows = [
            (q.values.ids[i], None, float(now[i]), None)
            for i in q.values.lowest(metric, worst).tolist()
        ]
        tables.append(("Lowest-scoring queries (no baseline to compare with)", rows))
    return [
        QueryTable(title, [_query_row(q, row, listed) for row in rows])
        for title, rows in tables
        if rows
    ]


def _query_row(q: Queries, row: Row, listed: Mapping[str, tuple[int, int]]) -> QueryRow:
    qid, before, now, delta = row
    text = (q.records.get(qid) or {}).get("text")
    move = ""
    if q.retrieval:
        ranks = listed.get(qid)
        if ranks is None:
            move = rank_move(
                q.first_before(qid),
                q.detail_now("first_relevant_rank", qid),
                baseline=q.shown.status not in ("", "new"),
            )
        elif ranks[0] >= 0 and ranks[1] >= 0:  # -1: no ranks (an answer-layer evaluation)
            move = rank_move(*ranks)
    return QueryRow(
        qid,
        q.card_of.get(qid),
        preview(text) if isinstance(text, str) and text else "",
        cell(before),
        cell(now),
        delta_cell(delta, side(delta)),
        move,
    )
