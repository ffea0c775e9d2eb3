"""The documents a retriever searches, the queries, and a dataset of both with qrels."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from pytest_ragmetrics.data.arrays import StrArray, as_str_array, check_unique_ids, sha256_lines
from pytest_ragmetrics.data.qrels import Qrels
from pytest_ragmetrics.data.segments import QueryKeyed
from pytest_ragmetrics.errors import DataFormatError


def _row(position: Mapping[str, int], item_id: str, what: str) -> int:
    row = position.get(item_id)
    if row is None:
        raise DataFormatError(f"unknown {what} id {item_id!r}")
    return row


@dataclass(frozen=True)
class Document:
    """One corpus document."""

    id: str
    title: str
    text: str


class Corpus:
    """The documents a retriever searches: ids, titles and texts in file order."""

    __slots__ = ("__dict__", "doc_ids", "texts", "titles")

    def __init__(
        self,
        doc_ids: Sequence[str] | StrArray,
        titles: Sequence[str],
        texts: Sequence[str],
        *,
        source: str = "corpus",
    ) -> None:
        ids = doc_ids if isinstance(doc_ids, np.ndarray) else as_str_array(list(doc_ids))
        if not len(ids) == len(titles) == len(texts):
            raise DataFormatError(f"{source}: ids, titles and texts differ in length")
        check_unique_ids(ids, source, "document")
        self.doc_ids = ids
        self.titles = list(titles)
        self.texts = list(texts)

    @classmethod
    def from_dict(cls, documents: Mapping[str, str | Mapping[str, str]]) -> Corpus:
        """Build from ``{doc_id: text}`` or ``{doc_id: {"title": ..., "text": ...}}``."""
        ids, titles, texts = [], [], []
        for doc_id, value in documents.items():
            ids.append(str(doc_id))
            if isinstance(value, str):
                titles.append("")
                texts.append(value)
            else:
                titles.append(str(value.get("title", "") or ""))
                texts.append(str(value.get("text", "") or ""))
        return cls(ids, titles, texts)

    def __len__(self) -> int:
        return len(self.doc_ids)

    def __iter__(self) -> Iterator[Document]:
        for doc_id, title, text in zip(self.doc_ids.tolist(), self.titles, self.texts, strict=True):
            yield Document(doc_id, title, text)

    def __contains__(self, doc_id: object) -> bool:
        return doc_id in self.position

    def __getitem__(self, doc_id: str) -> Document:
        i = self.position[doc_id]
        return Document(doc_id, self.titles[i], self.texts[i])

    def __repr__(self) -> str:
        return f"Corpus({len(self)} documents)"

    @cached_property
    def position(self) -> dict[str, int]:
        """doc id -> row in this corpus (and in its embedding matrix)."""
        return {doc_id: i for i, doc_id in enumerate(self.doc_ids.tolist())}

    def passages(self, separator: str = " ") -> list[str]:
        """``title + separator + text`` per document, stripped (MTEB's convention)."""
        return [
            (title + separator + text).strip() if title else text.strip()
            for title, text in zip(self.titles, self.texts, strict=True)
        ]

    def subset(self, doc_ids: Iterable[str]) -> Corpus:
        """A corpus of the given documents (in the given order); unknown ids are an error."""
        rows = [_row(self.position, d, "document") for d in doc_ids]
        return Corpus(
            self.doc_ids[rows], [self.titles[i] for i in rows], [self.texts[i] for i in rows]
        )

    @cached_property
    def doc_digests(self) -> dict[str, str]:
        """doc id -> short digest of its title and text, to say which documents changed."""
        return {
            doc_id: hashlib.blake2b(
                f"{title}\x00{text}".encode("utf-8", "surrogatepass"), digest_size=8
            ).hexdigest()
            for doc_id, title, text in zip(
                self.doc_ids.tolist(), self.titles, self.texts, strict=True
            )
        }

    @cached_property
    def fingerprint(self) -> str:
        """sha256 over documents sorted by id: the same texts give the same fingerprint."""
        digests = self.doc_digests
        return sha256_lines(f"{d}\t{digests[d]}" for d in sorted(digests))

    @cached_property
    def text_fingerprint(self) -> str:
        """sha256 of the exact texts in corpus order (what an embedding matrix depends on)."""
        return sha256_lines(
            f"{d}\x00{t}\x00{x}"
            for d, t, x in zip(self.doc_ids.tolist(), self.titles, self.texts, strict=True)
        )


class Queries(QueryKeyed):
    """Query ids and texts in file order."""

    __slots__ = ("texts",)

    def __init__(
        self, query_ids: Sequence[str] | StrArray, texts: Sequence[str], *, source: str = "queries"
    ) -> None:
        ids = query_ids if isinstance(query_ids, np.ndarray) else as_str_array(list(query_ids))
        if len(ids) != len(texts):
            raise DataFormatError(f"{source}: ids and texts differ in length")
        check_unique_ids(ids, source)
        self.query_ids = ids
        self.texts = list(texts)

    @classmethod
    def from_dict(cls, queries: Mapping[str, str]) -> Queries:
        """Build from ``{query_id: text}``."""
        return cls([str(q) for q in queries], [str(t) for t in queries.values()])

    def __getitem__(self, query_id: str) -> str:
        return self.texts[self.position[query_id]]

    def __repr__(self) -> str:
        return f"Queries({len(self)} queries)"

    def items(self) -> Iterator[tuple[str, str]]:
        return zip(self.query_ids.tolist(), self.texts, strict=True)

    @property
    def position(self) -> dict[str, int]:
        """query id -> row (in ``query_ids`` and ``texts``)."""
        return self._position

    def subset(self, query_ids: Iterable[str]) -> Queries:
        """The given queries, in the given order (unknown ids are an error)."""
        rows = [_row(self.position, q, "query") for q in query_ids]
        return Queries(self.query_ids[rows], [self.texts[i] for i in rows])

    @cached_property
    def fingerprint(self) -> str:
        return sha256_lines(f"{q}\t{t}" for q, t in sorted(self.items()))


@dataclass
class Dataset:
    """A corpus, its queries and their relevance judgments, plus where they came from."""

    corpus: Corpus
    queries: Queries
    qrels: Qrels
    name: str = "dataset"
    split: str = "test"
    source: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def fingerprints(self) -> dict[str, str]:
        """Separate fingerprints of corpus, queries and qrels."""
        return {
            "corpus": self.corpus.fingerprint,
            "queries": self.queries.fingerprint,
            "qrels": self.qrels.fingerprint,
        }

    @property
    def fingerprint(self) -> str:
        """One fingerprint over all three parts."""
        parts = self.fingerprints
        return sha256_lines(f"{k}\t{parts[k]}" for k in sorted(parts))

    def describe(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "split": self.split,
            "documents": len(self.corpus),
            "queries": len(self.queries),
            "judgments": self.qrels.num_judgments,
            **{f"{k}_fingerprint": v for k, v in self.fingerprints.items()},
        }
