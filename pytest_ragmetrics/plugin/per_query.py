"""The ``rag_query`` view: one query of the dataset with its judgments, ranking and metrics."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_ragmetrics.plugin.session import RagSession


@dataclass
class RagQuery:
    """One query of the dataset, with its judgments, ranking and metric values (rag_query)."""

    id: str
    text: str
    relevant: dict[str, int]
    ranking: list[tuple[str, float]]
    metrics: dict[str, float]
    _ranks: dict[str, int] = field(default_factory=dict, repr=False)

    def rank_of(self, doc_id: str) -> int | None:
        """1-based rank of ``doc_id`` in this query's ranking, None when not retrieved."""
        if not self._ranks:
            self._ranks = {doc: i for i, (doc, _) in enumerate(self.ranking, start=1)}
        return self._ranks.get(doc_id)


def rag_query_of(
    session: RagSession, run: object, query_id: str, key: str | None = None
) -> RagQuery:
    """The view of ``query_id``: its text and judgments, its ranking in ``run``, its metrics.

    The run is evaluated once per session (all queries at once), not once per query. ``run``
    may also be a ``{query_id: {doc_id: score}}`` dict (an overridden ``rag_run``).
    """
    from collections.abc import Mapping

    from pytest_ragmetrics.data.model import Run
    from pytest_ragmetrics.errors import ConfigError
    from pytest_ragmetrics.twins import same_class

    if not (isinstance(run, Mapping) or same_class(run, Run)):
        raise ConfigError(
            f"rag_query: rag_run is {type(run).__name__}; it must be a Run or a dict "
            "{query_id: {doc_id: score}}"
        )
    run = Run.from_dict(run)
    dataset = session.dataset(key)
    evaluation = session.run_evaluation(run, key)
    return RagQuery(
        query_id,
        dataset.queries[query_id],
        dataset.qrels.judgments(query_id),
        run.ranking(query_id),
        evaluation.per_query.get(query_id, {}),
    )
