"""The pipeline under test: a query in, an answer and the contexts it was generated from out
(loaded on first use).

- ``generators``: a **generator** turns (query, contexts) into an answer:
  :class:`FunctionGenerator` (your function) or :class:`ChatGenerator` (any OpenAI-compatible
  chat endpoint, through :class:`~pytest_ragmetrics.transport.client.ChatClient`);
- ``pipelines``: :class:`RetrieveThenGenerate` composes a retriever's top-n documents with a
  generator; :class:`RecordedAnswers` replays answers recorded earlier (JSONL), without any
  model;
- ``answering``: :func:`answer_all` answers every query once, through the content-addressed
  cache (keyed by the pipeline's identity, the query and the contexts: a rerun generates
  nothing), several at a time for HTTP generators, with progress; :func:`plan_answers` counts
  what it would call.

Any callable ``pipeline(query) -> (answer, contexts)`` is a pipeline too. Its answers are
cached under its identity: its ``identity()`` when it has one, else (a plain function) the
digest of its code (:mod:`pytest_ragmetrics.code_identity`), so that an edit of the function
generates anew; :class:`FunctionPipeline` adds a name and a ``version`` to bump when what the
digest cannot see changes (data files, a model behind an endpoint).
"""

from typing import TYPE_CHECKING

from pytest_ragmetrics._lazy import lazy_exports

if TYPE_CHECKING:
    from pytest_ragmetrics.generation.answering import (
        ANSWER_CACHE_KIND,
        AnswerPlan,
        AnswerSet,
        answer_all,
        plan_answers,
    )
    from pytest_ragmetrics.generation.generators import (
        ENV_API_KEY,
        ENV_MODEL,
        ENV_URL,
        NAMING,
        ChatGenerator,
        FunctionGenerator,
        Generator,
        number_contexts,
    )
    from pytest_ragmetrics.generation.pipelines import (
        FunctionPipeline,
        RecordedAnswers,
        RetrieveThenGenerate,
        pipeline_identity,
    )

_ANSWERING = "pytest_ragmetrics.generation.answering"
_GENERATORS = "pytest_ragmetrics.generation.generators"
_PIPELINES = "pytest_ragmetrics.generation.pipelines"
_EXPORTS = {
    "ANSWER_CACHE_KIND": _ANSWERING,
    "AnswerPlan": _ANSWERING,
    "AnswerSet": _ANSWERING,
    "answer_all": _ANSWERING,
    "plan_answers": _ANSWERING,
    "ENV_API_KEY": _GENERATORS,
    "ENV_MODEL": _GENERATORS,
    "ENV_URL": _GENERATORS,
    "NAMING": _GENERATORS,
    "ChatGenerator": _GENERATORS,
    "FunctionGenerator": _GENERATORS,
    "Generator": _GENERATORS,
    "number_contexts": _GENERATORS,
    "FunctionPipeline": _PIPELINES,
    "RecordedAnswers": _PIPELINES,
    "RetrieveThenGenerate": _PIPELINES,
    "pipeline_identity": _PIPELINES,
}
__all__ = [
    "ANSWER_CACHE_KIND",
    "ENV_API_KEY",
    "ENV_MODEL",
    "ENV_URL",
    "NAMING",
    "AnswerPlan",
    "AnswerSet",
    "ChatGenerator",
    "FunctionGenerator",
    "FunctionPipeline",
    "Generator",
    "RecordedAnswers",
    "RetrieveThenGenerate",
    "answer_all",
    "number_contexts",
    "pipeline_identity",
    "plan_answers",
]
__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS)
