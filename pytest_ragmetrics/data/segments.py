"""Rows keyed by query id, and per query a segment of document entries (CSR)."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt

from pytest_ragmetrics.data.arrays import (
    Entries,
    IntArray,
    StrArray,
    offsets_from_counts,
    segment_ids,
)


class QueryKeyed:
    """Rows keyed by unique query ids, in order: its length, iteration over the ids, membership
    and the row of an id (what :class:`Queries`, :class:`Qrels` and :class:`Run` share)."""

    __slots__ = ("__dict__", "query_ids")

    query_ids: StrArray

    def __len__(self) -> int:
        return len(self.query_ids)

    def __iter__(self) -> Iterator[str]:
        return iter(self.query_ids.tolist())

    def __contains__(self, query_id: object) -> bool:
        return query_id in self._position

    @cached_property
    def _position(self) -> dict[str, int]:
        return {qid: i for i, qid in enumerate(self.query_ids.tolist())}


class QuerySegments(QueryKeyed):
    """Stored :class:`~pytest_ragmetrics.data.arrays.Entries`, with the lookups and selections
    :class:`Qrels` and :class:`Run` share; each adds one value per entry (grades, scores)."""

    __slots__ = ("doc_codes", "doc_ids", "offsets")

    offsets: IntArray
    doc_ids: StrArray
    doc_codes: IntArray

    def __init__(self, entries: Entries) -> None:
        self.query_ids, self.offsets, self.doc_ids, self.doc_codes = entries

    @property
    def entries(self) -> Entries:
        """The four CSR arrays, to build another Qrels or Run from (shared, not copied)."""
        return Entries(self.query_ids, self.offsets, self.doc_ids, self.doc_codes)

    def _entries(self, query_id: str, values: npt.NDArray[Any]) -> Iterator[tuple[str, Any]]:
        """(doc id, value) of one query's entries in stored order; none for an unknown query."""
        i = self._position.get(query_id)
        if i is None:
            return iter(())
        lo, hi = int(self.offsets[i]), int(self.offsets[i + 1])
        return zip(
            self.doc_ids[self.doc_codes[lo:hi]].tolist(), values[lo:hi].tolist(), strict=True
        )

    def _rows(self, values: npt.NDArray[Any]) -> Iterator[tuple[str, str, Any]]:
        """(query id, doc id, value) of every entry in stored order (what fingerprints hash)."""
        seg = segment_ids(self.offsets)
        return zip(
            self.query_ids[seg].tolist(),
            self.doc_ids[self.doc_codes].tolist(),
            values.tolist(),
            strict=True,
        )

    def _select(self, query_ids: Iterable[str]) -> tuple[list[int], IntArray, IntArray]:
        """The rows of the known ``query_ids`` (in that order, unknown ones ignored), the
        offsets of their segments once taken out, and the entries they hold."""
        keep = [self._position[q] for q in query_ids if q in self._position]
        lo, hi = self.offsets[keep], self.offsets[np.asarray(keep, dtype=np.int64) + 1]
        take = (
            np.concatenate([np.arange(a, b) for a, b in zip(lo, hi, strict=True)])
            if keep
            else np.empty(0, dtype=np.int64)
        )
        return keep, offsets_from_counts(hi - lo), take
