"""The HTTP generator: questions (and reference answers) written by a model behind any
OpenAI-compatible ``/v1/chat/completions`` endpoint, through
:class:`~pytest_ragmetrics.transport.ChatClient` (only the URL given, the key from an
environment variable, retries, ``concurrency`` in flight, a token budget, dry runs).

Styles, taken in turn over the documents of a seeded order: ``fact`` (a question the passage
answers), ``paraphrase`` (one that avoids the passage's words), ``multi`` (one that needs the
passage and a related document: both are relevant); and two statement styles, not in the default
set, that small models write more reliably than questions: ``claim`` (the passage's main finding
in one sentence, as SciFact's claims are) and ``topic`` (the problem the passage addresses, as
Cranfield's queries ask). Each question is followed by a second request for its reference
answer, from the source passage(s); a statement has none. A statement's lead-in ("This study
finds that ...") is cut. Prompts are templates, one file per role in a prompt folder
(:data:`TESTSET_ROLES`), as the judges' are.

Replies are cached per request (kind ``testset-replies``, keyed by the generator's identity and
the messages): a rerun sends nothing. An empty reply is never cached; its query is dropped and
counted, as is a reply that holds no question.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.data.model import Corpus
from pytest_ragmetrics.errors import GeneratorError
from pytest_ragmetrics.generation import ENV_API_KEY, ENV_MODEL, ENV_URL
from pytest_ragmetrics.prompts import Role, prompt_keywords
from pytest_ragmetrics.testsets.model import (
    HTTP_DEFAULT_STYLES,
    HTTP_STYLES,
    STATEMENT_STYLES,
    Candidate,
    words,
)
from pytest_ragmetrics.testsets.offline import check_styles
from pytest_ragmetrics.testsets.sampling import (
    CorpusText,
    cycle_styles,
    document_order,
    prose_paragraphs,
)
from pytest_ragmetrics.transport import Budget, ChatClient, Cost, Endpoint, Meter, Naming
from pytest_ragmetrics.values import positive_int

NAMING = Naming(
    "test-set generator", GeneratorError, ENV_URL, ENV_MODEL, ENV_API_KEY, timeout=120.0
)
REPLY_CACHE_KIND = "testset-replies"

TESTSET_SYSTEM = Role("system", "system_prompt")
TESTSET_FACT = Role("fact", "fact_template", ("passage",), ("passage", "title"))
TESTSET_PARAPHRASE = Role("paraphrase", "paraphrase_template", ("passage",), ("passage", "title"))
TESTSET_MULTI = Role(
    "multi", "multi_template", ("passage", "other"), ("passage", "title", "other", "other_title")
)
TESTSET_CLAIM = Role("claim", "claim_template", ("passage",), ("passage", "title"))
TESTSET_TOPIC = Role("topic", "topic_template", ("passage",), ("passage", "title"))
TESTSET_STATEMENT_SYSTEM = Role("statement_system", "statement_system_prompt")
TESTSET_ANSWER = Role("answer", "answer_template", ("question", "passage"), ("question", "passage"))
TESTSET_ANSWER_SYSTEM = Role("answer_system", "answer_system_prompt")
TESTSET_ROLES: tuple[Role, ...] = (
    TESTSET_SYSTEM,
    TESTSET_FACT,
    TESTSET_PARAPHRASE,
    TESTSET_MULTI,
    TESTSET_CLAIM,
    TESTSET_TOPIC,
    TESTSET_STATEMENT_SYSTEM,
    TESTSET_ANSWER,
    TESTSET_ANSWER_SYSTEM,
)

SYSTEM_PROMPT = (
    "You write questions for a search test collection. Reply with one question only, on one "
    "line, without an answer."
)
FACT_TEMPLATE = (
    "Passage:\n{passage}\n\nWrite one short question that this passage answers, asking for a "
    "fact it states.\nQuestion:"
)
PARAPHRASE_TEMPLATE = (
    "Passage:\n{passage}\n\nWrite one short question that this passage answers, in your own "
    "words: do not copy phrases from the passage.\nQuestion:"
)
MULTI_TEMPLATE = (
    "Passage 1:\n{passage}\n\nPassage 2:\n{other}\n\nWrite one short question whose answer "
    "needs both passages.\nQuestion:"
)
# Statements: worded as SmolLM2-135M answers best (it repeats a generic question to the
# question prompts; docs/measurements/testsets-tau.md).
STATEMENT_SYSTEM_PROMPT = "You are a helpful assistant."
CLAIM_TEMPLATE = (
    "{passage}\n\nIn one short sentence, what does this study find? Reply with the finding only."
)
TOPIC_TEMPLATE = (
    "{passage}\n\nIn one short sentence, what problem does this study address? Reply with the "
    "problem only."
)
ANSWER_SYSTEM_PROMPT = "You answer questions using only the passage you are given."
ANSWER_TEMPLATE = (
    "Passage:\n{passage}\n\nQuestion: {question}\n\nAnswer the question in one sentence, using "
    "only the passage.\nAnswer:"
)
_LEAD = re.compile(
    r"^\W*(?:(?:question|q|answer|a|claim|finding|problem|title)\s*\d*\s*[:.)-]\s*"
    r"|\d+\s*[.)]\s*)",
    re.I,
)
# "This study finds that", "The main finding of this abstract is that", "This study addresses a
# problem related to": what a statement says before its content.
_STATEMENT_LEAD = re.compile(
    r"^(?:in (?:short|summary|conclusion),?\s+)?(?:the main finding (?:of|in) )?(?:this|the) "
    r"(?:study|paper|abstract|passage|article|review|research|report|work|trial)"
    r"(?:\s+(?:also|here|mainly|primarily))?\s+(?:finds|found|shows|showed|suggests|"
    r"suggested|reports|reported|demonstrates|demonstrated|concludes|concluded|addresses|"
    r"addressed|examines|investigates|discusses|"
    r"is that|was that)"
    r"(?:\s+(?:a|the)(?:\s+\w+)?\s+problem\s+(?:related to|of|concerning|in))?(?:\s+that)?\s+",
    re.I,
)


def clean_reply(text: str, *, statement: bool = False) -> str:
    """A reply's first non-empty line, without a "Question:"/"Answer:" or number lead-in and
    surrounding quotes (and, for a ``statement``, without "This study finds that" and its
    like); "" when no word is left."""
    for line in text.splitlines():
        line = _LEAD.sub("", line.strip(), count=1).strip().strip("\"'`*").strip()
        if statement:
            line = _STATEMENT_LEAD.sub("", line, count=1).strip()
        if line:
            return line if words(line) else ""
    return ""


@dataclass(frozen=True)
class Job:
    """One query to write: its id, style and the corpus rows it reads (source first)."""

    query_id: str
    style: str
    rows: tuple[int, ...]


@dataclass(frozen=True)
class GenerationPlan:
    """What generating would send (a dry run): question and answer requests not cached."""

    jobs: int
    questions: int
    answers: int  # at most: a question not written yet may turn out unusable

    def describe(self) -> str:
        return (
            f"{self.questions + self.answers} requests to send at most ({self.questions} "
            f"questions, {self.answers} reference answers) for {self.jobs} queries; the rest "
            "is in the cache"
        )


@dataclass(frozen=True)
class HttpOutcome:
    """The candidates written, the jobs dropped (and why), and what it cost."""

    candidates: list[Candidate]
    dropped: dict[str, str]  # query id -> "empty reply" / "no question in the reply"
    cost: Cost


class _EmptyReply(Exception):
    """An empty reply: not cached, the query dropped."""


def _is_reply(value: Any) -> bool:
    return isinstance(value, dict) and isinstance(value.get("reply"), str) and value["reply"] != ""


class HttpTestsetGenerator:
    """Questions and reference answers from a chat endpoint (see the module): ``endpoint`` as
    for the chat generator (:class:`~pytest_ragmetrics.transport.endpoint.Endpoint`; the
    RAGMETRICS_GENERATOR_* variables, a deadline of 120 s per request)."""

    name = "http"

    # Long only because it checks and keeps its options, one line each.
    def __init__(
        self,
        endpoint: Endpoint | None = None,
        *,
        styles: Sequence[str] = HTTP_DEFAULT_STYLES,
        prompts: Mapping[str, str] | None = None,
        seed: int = 0,
        temperature: float = 0.0,
        max_tokens: int = 64,
        answers: bool = True,
        max_passage_chars: int = 1500,
        budget: Budget | None = None,
        cache: Cache | None = None,
    ) -> None:
        self.styles = check_styles(styles, HTTP_STYLES, "HTTP test-set generator")
        texts = {role.keyword: _default(role) for role in TESTSET_ROLES}
        texts.update(prompt_keywords(prompts or {}, TESTSET_ROLES))
        for role in TESTSET_ROLES:
            if role.is_template:
                role.check(texts[role.keyword], f"test-set generator: {role.name}", GeneratorError)
        positive_int(max_passage_chars, "test-set generator: max_passage_chars", GeneratorError)
        self.prompts = texts
        self.client = ChatClient(endpoint or Endpoint(), NAMING, meter=Meter(budget))
        self.seed = int(seed)
        self.answers = bool(answers)
        self.max_passage_chars = max_passage_chars
        self.parameters = {
            "temperature": float(temperature),
            "seed": int(seed),
            "max_tokens": int(max_tokens),
        }
        self.cache = cache
        self._lock = threading.Lock()

    def __repr__(self) -> str:
        return f"HttpTestsetGenerator(url={self.client.url!r}, model={self.client.model!r})"

    @property
    def cost(self) -> Cost:
        return self.client.meter.cost

    def identity(self) -> dict[str, Any]:
        """Model, prompts, styles, sampling parameters and, for a completions endpoint, that
        API (the model reads another text); no URL, no key."""
        return {
            "generator": self.name,
            "model": self.client.model,
            "styles": list(self.styles),
            "prompts": dict(sorted(self.prompts.items())),
            "answers": self.answers,
            "max_passage_chars": self.max_passage_chars,
            **self.parameters,
            **self.client.api_identity(),
        }

    # -- what to write ----------------------------------------------------------------------

    def jobs(self, corpus: Corpus, count: int) -> list[Job]:
        """The queries to write, in a seeded order over the documents (deterministic)."""
        stats = CorpusText(corpus) if "multi" in self.styles else None
        found: list[Job] = []
        for row in document_order(corpus, self.seed):
            if len(found) >= count:
                break
            if not self._passage(corpus, row):
                continue
            for style in cycle_styles(self.styles, len(found)):
                rows: tuple[int, ...] = (row,)
                if style == "multi":
                    other = stats.related(row) if stats is not None else None
                    if other is None or not self._passage(corpus, other):
                        continue
                    rows = (row, other)
                found.append(Job(f"gen-{len(found) + 1}", style, rows))
                break
        return found

    def _passage(self, corpus: Corpus, row: int) -> str:
        """Title and text, cut at ``max_passage_chars``. For a completions endpoint, as prose
        (wrapped lines joined): a base model continues the layout it reads, and the first line
        of its reply is the query, so a wrapped passage would get a query cut at a line end."""
        text = f"{corpus.titles[row]} {corpus.texts[row]}".strip()
        if self.client.endpoint.api == "completions":
            text = "\n\n".join(prose_paragraphs(text))
        return text[: self.max_passage_chars]

    def question_messages(self, corpus: Corpus, job: Job) -> list[dict[str, str]]:
        fields = {
            "passage": self._passage(corpus, job.rows[0]),
            "title": corpus.titles[job.rows[0]],
        }
        if job.style == "multi":
            other = job.rows[1]
            fields.update(other=self._passage(corpus, other), other_title=corpus.titles[other])
        prompt = self.prompts[f"{job.style}_template"].format(**fields)
        system = "statement_system_prompt" if job.style in STATEMENT_STYLES else "system_prompt"
        return [
            {"role": "system", "content": self.prompts[system]},
            {"role": "user", "content": prompt},
        ]

    def answer_messages(self, corpus: Corpus, job: Job, question: str) -> list[dict[str, str]]:
        passage = "\n\n".join(self._passage(corpus, row) for row in job.rows)
        prompt = self.prompts["answer_template"].format(question=question, passage=passage)
        return [
            {"role": "system", "content": self.prompts["answer_system_prompt"]},
            {"role": "user", "content": prompt},
        ]

    # -- asking -----------------------------------------------------------------------------

    def _key(self, messages: Sequence[Mapping[str, str]]) -> dict[str, Any]:
        return {"generator": self.identity(), "messages": [dict(m) for m in messages]}

    def _ask(self, messages: list[dict[str, str]]) -> str:
        """The reply to ``messages``, from the cache or the endpoint (an empty one raises
        :class:`_EmptyReply` and is not stored)."""
        asked = [False]

        def compute() -> dict[str, Any]:
            asked[0] = True
            reply = self.client.complete(messages, **self.parameters)
            if not reply.text.strip():
                raise _EmptyReply
            return {"reply": reply.text}

        if self.cache is None or not self.cache.enabled:
            return str(compute()["reply"])
        value = self.cache.json(REPLY_CACHE_KIND, self._key(messages), compute, valid=_is_reply)
        if not asked[0]:
            self.client.meter.hit()
        return str(value["reply"])

    def _cached(self, messages: list[dict[str, str]]) -> str | None:
        if self.cache is None or not self.cache.enabled:
            return None
        value = self.cache.get_json(REPLY_CACHE_KIND, self._key(messages), valid=_is_reply)
        return None if value is None else str(value["reply"])

    def _write(self, corpus: Corpus, job: Job) -> Candidate | str:
        """The candidate of one job, or why it was dropped."""
        statement = job.style in STATEMENT_STYLES
        try:
            reply = self._ask(self.question_messages(corpus, job))
        except _EmptyReply:
            return "empty reply"
        question = clean_reply(reply, statement=statement)
        if len(words(question)) < 3:
            return "no statement in the reply" if statement else "no question in the reply"
        answer = None
        if self.answers and not statement:
            try:
                answer = clean_reply(self._ask(self.answer_messages(corpus, job, question))) or None
            except _EmptyReply:
                answer = None
        relevant = tuple((str(corpus.doc_ids[row]), 1) for row in job.rows)
        return Candidate(job.query_id, question, relevant, job.style, answer)

    def generate(
        self, corpus: Corpus, count: int, *, advance: Callable[[int], None] | None = None
    ) -> HttpOutcome:
        """Write ``count`` queries, ``concurrency`` requests in flight; in job order whatever
        the concurrency (the first failing job's error is raised, naming the query)."""
        jobs = self.jobs(corpus, count)
        before = self.cost

        def one(job: Job) -> Candidate | str:
            try:
                result = self._write(corpus, job)
            except GeneratorError as exc:
                raise GeneratorError(f"writing query {job.query_id}: {exc}") from None
            if advance is not None:
                with self._lock:
                    advance(1)
            return result

        results = self.client.map(one, jobs)
        candidates = [r for r in results if isinstance(r, Candidate)]
        dropped = {j.query_id: r for j, r in zip(jobs, results, strict=True) if isinstance(r, str)}
        return HttpOutcome(candidates, dropped, self.cost - before)

    def plan(self, corpus: Corpus, count: int) -> GenerationPlan:
        """What :meth:`generate` would send: nothing is sent (a dry run)."""
        jobs = self.jobs(corpus, count)
        questions = answers = 0
        for job in jobs:
            reply = self._cached(self.question_messages(corpus, job))
            if reply is None:
                questions += 1
                answers += int(self.answers and job.style not in STATEMENT_STYLES)
                continue
            if not self.answers or job.style in STATEMENT_STYLES:
                continue
            question = clean_reply(reply)
            if len(words(question)) >= 3:
                answers += int(self._cached(self.answer_messages(corpus, job, question)) is None)
        return GenerationPlan(len(jobs), questions, answers)


def _default(role: Role) -> str:
    return {
        "system": SYSTEM_PROMPT,
        "fact": FACT_TEMPLATE,
        "paraphrase": PARAPHRASE_TEMPLATE,
        "multi": MULTI_TEMPLATE,
        "claim": CLAIM_TEMPLATE,
        "topic": TOPIC_TEMPLATE,
        "statement_system": STATEMENT_SYSTEM_PROMPT,
        "answer": ANSWER_TEMPLATE,
        "answer_system": ANSWER_SYSTEM_PROMPT,
    }[role.name]
