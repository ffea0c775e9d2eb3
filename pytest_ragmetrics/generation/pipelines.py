"""Pipelines: a query in, an answer and the contexts it was generated from out.
:class:`RetrieveThenGenerate` composes a retriever's top-n documents with a generator;
:class:`RecordedAnswers` replays answers recorded earlier (JSONL), without any model; any
callable ``pipeline(query) -> (answer, contexts)`` is one too, identified by the digest of its
code (:class:`FunctionPipeline` adds a name and a ``version``)."""

from __future__ import annotations

import dataclasses
import hashlib
import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_ragmetrics.cache import identity_of
from pytest_ragmetrics.data.answers import GeneratedAnswer
from pytest_ragmetrics.errors import GeneratorError
from pytest_ragmetrics.generation.generators import FunctionGenerator, Generator, NamedFunction
from pytest_ragmetrics.transport.client import ChatReply
from pytest_ragmetrics.values import positive_int

Contexts = Sequence[tuple[str, str]]

Pipeline = Callable[[str], "tuple[str, Sequence[Any]]"]
"""The pipeline under test (the ``rag_pipeline`` fixture): ``pipeline(query) -> (answer,
contexts)``, the contexts as texts or ``(id, text)`` pairs; an ``identity()`` method, when it
has one, keys its cached answers."""


class FunctionPipeline(NamedFunction):
    """Your function ``pipeline(query) -> (answer, contexts)`` with a name and a ``version``;
    identified like :class:`~pytest_ragmetrics.generation.generators.FunctionGenerator` (code
    digest plus version)."""

    role = "pipeline"

    def __call__(self, query: str) -> Any:
        return self.fn(query)


def pipeline_identity(pipeline: Any) -> dict[str, Any]:
    """A pipeline's ``identity()``; a plain function's is its :class:`FunctionPipeline` one."""
    if callable(getattr(pipeline, "identity", None)):
        return identity_of(pipeline)
    return FunctionPipeline(pipeline).identity()


class RetrieveThenGenerate:
    """The configured retriever's top ``top_n`` documents (``title + " " + text``, cut after
    ``max_context_chars`` characters when set) as the contexts of ``generator`` (a
    :class:`Generator` or a function ``fn(query, contexts)``).

    Calling it answers one query; :func:`answer_all` retrieves for every query at once first
    and caches each answer under (pipeline identity, query, contexts)."""

    def __init__(
        self,
        retriever: Any,
        corpus: Any,
        generator: Any,
        *,
        top_n: int = 3,
        max_context_chars: int | None = None,
    ) -> None:
        for label, value in (("top_n", top_n), ("max_context_chars", max_context_chars or 1)):
            positive_int(value, f"pipeline: {label}", GeneratorError)
        self.max_context_chars = max_context_chars
        self.retriever = retriever
        self.corpus = corpus
        self.generator = (
            generator if isinstance(generator, Generator) else FunctionGenerator(generator)
        )
        self.top_n = top_n

    def __repr__(self) -> str:
        return f"RetrieveThenGenerate(top_n={self.top_n}, generator={self.generator!r})"

    @property
    def concurrency(self) -> int:
        """The generator's concurrency (1 for a function)."""
        return int(getattr(self.generator, "concurrency", 1))

    def identity(self) -> dict[str, Any]:
        """Retriever identity, top_n and generator identity."""
        return {
            "pipeline": "retrieve-then-generate",
            "retriever": identity_of(self.retriever),
            "top_n": self.top_n,
            "max_context_chars": self.max_context_chars,
            "generator": self.generator.identity(),
        }

    def contexts_for(self, queries: Mapping[str, str]) -> dict[str, tuple[tuple[str, str], ...]]:
        """The top ``top_n`` (doc id, passage) per query, one search for all of them. A
        retriever with ``passages_for(queries, n)`` (a chunked one) gives its own passages, so
        the generator sees its chunks rather than whole documents."""
        from pytest_ragmetrics.data.model import Queries, Run

        own = getattr(self.retriever, "passages_for", None)
        if callable(own):
            given = own(Queries.from_dict(queries), self.top_n)
            cut = self.max_context_chars
            return {
                qid: tuple((cid, text[:cut] if cut else text) for cid, text in given[qid])
                for qid in queries
            }
        result = self.retriever.search(Queries.from_dict(queries), self.top_n)
        run = Run.from_dict(result)
        found: dict[str, tuple[tuple[str, str], ...]] = {}
        for qid in queries:
            ranked = run.ranking(qid)[: self.top_n] if qid in run else []
            pairs = []
            for doc_id, _ in ranked:
                doc = self.corpus[doc_id]
                text = (doc.title + " " + doc.text).strip()
                if self.max_context_chars is not None:
                    text = text[: self.max_context_chars]
                pairs.append((doc_id, text))
            found[qid] = tuple(pairs)
        return found

    def generate(self, query: str, contexts: Contexts) -> ChatReply:
        """The generator's answer from these contexts."""
        return GenerationStage(self.generator).generate(query, contexts)

    def __call__(self, query: str) -> tuple[str, list[str]]:
        """Answer one query: (answer, context texts)."""
        contexts = self.contexts_for({"q": query})["q"]
        return self.generate(query, contexts).text, [text for _, text in contexts]


class GenerationStage:
    """The generation half of a :class:`RetrieveThenGenerate`: what Ray workers receive."""

    def __init__(self, generator: Any) -> None:
        self.generator = generator

    def generate(self, query: str, contexts: Contexts) -> ChatReply:
        reply: ChatReply = self.generator.generate(query, [text for _, text in contexts])
        return reply


class RecordedAnswers:
    """Answers recorded earlier (a JSONL answers file), replayed by query id: no model, no
    retriever. Its identity is the file's content hash.

    ``dataset=(name, split)`` replays the answers recorded for that pair of a file holding
    several (see :mod:`~pytest_ragmetrics.data.recordings`); its identity is then the hash of
    that pair's lines, so recording another pair changes nothing of this one. ``corpus``, the
    fingerprint of the corpus they are replayed on, refuses lines recorded on another."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        dataset: tuple[str, str] | None = None,
        corpus: str | None = None,
    ) -> None:
        self.path = Path(path)
        from pytest_ragmetrics.data.recordings import read_recording

        answers, digest = read_recording(self.path, dataset, corpus)
        self._identity: dict[str, Any] = {"pipeline": "recorded", "file": self.path.name}
        if dataset is None:
            self._identity["file_sha256"] = hashlib.sha256(self.path.read_bytes()).hexdigest()
        else:
            self._identity.update(dataset=dataset[0], split=dataset[1], answers_sha256=digest)
        self._by_id = {a.query_id: a for a in answers}

    def __repr__(self) -> str:
        return f"RecordedAnswers({os.fspath(self.path)!r}, {len(self._by_id)} answers)"

    def __len__(self) -> int:
        return len(self._by_id)

    def identity(self) -> dict[str, Any]:
        """The file's name and sha256."""
        return dict(self._identity)

    def answers_for(self, queries: Mapping[str, str]) -> list[GeneratedAnswer]:
        """The recorded answers of ``queries``; a query without one, or an answer to a query
        not among them, is a GeneratorError naming the file and the query ids."""
        missing = [q for q in queries if q not in self._by_id]
        if missing:
            shown = ", ".join(map(repr, missing[:5])) + (", ..." if len(missing) > 5 else "")
            raise GeneratorError(
                f"{os.fspath(self.path)}: no recorded answer for {len(missing)} of "
                f"{len(queries)} queries ({shown}); regenerate the recording"
            )
        # Answers to queries the dataset does not have: the recording is of another query
        # set (another split, or queries since removed), and the mean would cover fewer
        # queries than it did, unsaid.
        extra = [q for q in self._by_id if q not in queries]
        if extra:
            shown = ", ".join(map(repr, extra[:5])) + (", ..." if len(extra) > 5 else "")
            raise GeneratorError(
                f"{os.fspath(self.path)}: {len(extra)} of {len(self._by_id)} recorded answers "
                f"are to queries the dataset does not have ({shown}): it was recorded for "
                "another query set; regenerate the recording"
            )
        # An answer recorded for another wording of the question answers another question.
        changed = [q for q, text in queries.items() if self._by_id[q].query not in ("", text)]
        if changed:
            first = changed[0]
            raise GeneratorError(
                f"{os.fspath(self.path)}: {len(changed)} of {len(queries)} recorded answers "
                f"were given to another question than the dataset's (first: query {first!r} "
                f"recorded {self._by_id[first].query[:80]!r}, now {queries[first][:80]!r}); "
                "regenerate the recording"
            )
        # A line without its question takes the dataset's (the ids match): the judges ask
        # whether the answer addresses it and whether a context is relevant to it.
        return [
            self._by_id[q] if self._by_id[q].query else dataclasses.replace(self._by_id[q], query=t)
            for q, t in queries.items()
        ]

    def __call__(self, query: str) -> tuple[str, list[str]]:
        for answer in self._by_id.values():
            if answer.query == query:
                return answer.answer, answer.context_texts
        raise GeneratorError(f"{os.fspath(self.path)}: no recorded answer for {query[:80]!r}")


__all__ = [
    "FunctionPipeline",
    "GenerationStage",
    "Pipeline",
    "RecordedAnswers",
    "RetrieveThenGenerate",
    "pipeline_identity",
]
