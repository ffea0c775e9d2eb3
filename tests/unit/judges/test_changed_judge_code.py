"""The functions of the user's that judging runs are read again at each judging. An embedding
judge's encoder: a value it reads changed in place since (a setting dict edited, an attribute
of a callable encoder) is judged anew, not served the similarities cached under the old
values. judge_answers' ``claims_of``: such a change is another ``claims_of`` in the recorded
identity. What they change themselves as they run (a counter, a memo) keeps their identity,
so a rerun reads the cache."""

from __future__ import annotations

import zlib
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics.data.answers import GeneratedAnswer
from pytest_ragmetrics.judges import EmbeddingJudge
from pytest_ragmetrics.judges.answers import judge_answers
from pytest_ragmetrics.judges.embedding_relevance import EmbeddingRelevanceJudge
from pytest_ragmetrics.judges.relevance import RelevancePair

#: What :func:`words` reads: the weight of a component every text shares (a large one makes
#: every two texts alike).
SETTINGS = {"shared": 0.0}
#: What :func:`claims_after` reads: the marker after which an answer's claims start.
CLAIMS = {"after": "Verdict:"}
#: What :func:`remembering_claims` fills as it runs.
SEEN: dict[str, int] = {}

CONTEXTS = {"d1": "The Eiffel Tower stands in Paris.", "d2": "Bananas are yellow when ripe."}
CLAIM = "Bananas are blue."


def _vectors(texts: list[str], shared: float) -> np.ndarray:
    out = np.zeros((len(texts), 65))
    for i, text in enumerate(texts):
        for word in text.lower().replace(".", " ").split():
            out[i, zlib.crc32(word.encode()) % 64] += 1.0
    out[:, 64] = shared
    return out


def words(texts: list[str]) -> np.ndarray:
    """A bag of words with the shared component of ``SETTINGS["shared"]``."""
    return _vectors(texts, SETTINGS["shared"])


class Words:
    """:func:`words` as a callable object: its setting in an attribute, and a counter of its
    calls (what it changes itself as it runs)."""

    def __init__(self) -> None:
        self.settings = {"shared": 0.0}
        self.calls = 0

    def __call__(self, texts: list[str]) -> np.ndarray:
        self.calls += 1
        return _vectors(texts, self.settings["shared"])


# Each way of judging with the embedding judge: what it says of CLAIM against CONTEXTS.
JUDGINGS: dict[str, Callable[[EmbeddingJudge], object]] = {
    "judge_claims": lambda j: j.judge_claims([CLAIM], CONTEXTS)[0].supported,
    "assess": lambda j: j.assess("q", CLAIM, CONTEXTS).claims[0].supported,
    "assess_batch": lambda j: j.assess_batch([("q", "q", CLAIM, CONTEXTS)])[0].claims[0].supported,
    "judge_agreement": lambda j: j.judge_agreement([("q", CLAIM, CONTEXTS["d1"])])[0].value,
    "judge_contexts": lambda j: [v.value for v in j.judge_contexts([(CLAIM, CONTEXTS)])[0]],
}


@pytest.mark.parametrize("judging", JUDGINGS.values(), ids=JUDGINGS.keys())
def test_an_encoder_setting_edited_in_place_is_judged_anew(
    judging: Callable[[EmbeddingJudge], object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The encoder's code digest was taken when the judge was built: a dict it reads edited
    in place since was served the similarities cached under the old setting, by the same
    judge and by a new one, and recorded under the old identity."""
    judge = EmbeddingJudge(encoder=words, model_name="words", cache=tmp_path)
    before = judging(judge)
    identity = judge.identity()
    assert before in (False, [False, False])
    monkeypatch.setitem(SETTINGS, "shared", 100.0)  # in place: SETTINGS is the same dict
    assert judging(judge) in (True, [True, True])
    assert judge.identity() != identity
    fresh = EmbeddingJudge(encoder=words, model_name="words", cache=tmp_path)
    assert judging(fresh) in (True, [True, True])
    monkeypatch.setitem(SETTINGS, "shared", 0.0)  # back: the first similarities, cached
    assert judging(judge) == before
    assert judge.identity() == identity


def test_a_callable_encoder_whose_attribute_changes_is_judged_anew(tmp_path: Path) -> None:
    encoder = Words()
    judge = EmbeddingRelevanceJudge(encoder=encoder, model_name="words", cache=tmp_path)
    pairs = [RelevancePair("Bananas are blue.", CONTEXTS["d1"], "q", "d1")]
    first = judge.judge_relevance(pairs)[0]
    identity = judge.identity()
    assert (first.relevant, first.cached) == (False, False)
    encoder.settings["shared"] = 100.0
    second = judge.judge_relevance(pairs)[0]
    assert (second.relevant, second.cached) == (True, False)
    assert judge.identity() != identity
    assert judge.identity()["parameters"]["threshold"] == identity["parameters"]["threshold"]


def test_what_an_encoder_changes_itself_keeps_its_identity(tmp_path: Path) -> None:
    """Its counter moves with every call: judged again (by the same judge, a copy with another
    threshold, or its context judge) the similarities come from the cache."""
    encoder = Words()
    judge = EmbeddingJudge(encoder=encoder, model_name="words", cache=tmp_path)
    identity = judge.identity()
    for judging in JUDGINGS.values():
        judging(judge)
    calls = encoder.calls
    assert calls == len(JUDGINGS) - 1  # assess_batch reads judge_claims' similarities
    for judging in JUDGINGS.values():
        judging(judge)
        judging(judge.with_threshold(0.5))
    relevance = judge.context_judge.judge_relevance([RelevancePair("q", CLAIM, "q", "d")])
    assert encoder.calls == calls + 1 and not relevance[0].cached  # a new pair, then cached
    assert judge.context_judge.judge_relevance([RelevancePair("q", CLAIM, "q", "d")])[0].cached
    assert encoder.calls == calls + 1
    assert judge.identity() == identity


def test_judged_pool_rows_carry_the_identity_they_were_judged_under() -> None:
    """judge_pool labelled the rows with the judge's identity read before judging: an encoder
    setting edited in place since the judge was built judged them under another identity
    than the one they name (and the κ gate looks their calibration up by it)."""
    from pytest_ragmetrics.pooling import PoolEntry, judge_pool

    encoder = Words()
    judge = EmbeddingRelevanceJudge(encoder=encoder, model_name="words")
    built = judge.identity()
    encoder.settings["shared"] = 1.0
    pool = judge_pool([PoolEntry("q1", "d1", query="a question", text="a passage")], judge)
    assert pool.entries[0].judge == judge.identity() != built


def test_judgings_in_threads_share_one_identity(tmp_path: Path) -> None:
    """assess_many judges answers in threads, each a judging of its own: those that overlap
    run under one digest of the encoder, and its counter, moved by all of them, keeps it."""
    from pytest_ragmetrics.judges.many import assess_many

    encoder = Words()
    judge = EmbeddingJudge(encoder=encoder, model_name="words", cache=tmp_path)
    answers = [("q", f"Bananas are blue {i}.", CONTEXTS, f"q{i}") for i in range(16)]
    first = assess_many(judge, answers, concurrency=4)
    calls = encoder.calls
    again = assess_many(judge, answers, concurrency=4)
    assert calls == 16 and encoder.calls == calls  # the second time, all from the cache
    assert {str(a.judge) for a in [*first, *again]} == {str(judge.identity())}


def test_a_calibration_names_the_encoder_it_judged_with() -> None:
    """The κ gate looks a calibration up by the judge's identity: one measured after a setting
    of the encoder was edited in place names the encoder as it judged, not as it was built."""
    from pytest_ragmetrics.judges.calibration import LabelledPair, calibrate_relevance

    encoder = Words()
    judge = EmbeddingRelevanceJudge(encoder=encoder, model_name="words")
    built = judge.identity()
    encoder.settings["shared"] = 1.0
    pairs = [
        LabelledPair("q1", "d1", "bananas", "Bananas are yellow.", True, "R"),
        LabelledPair("q1", "d2", "bananas", "The Eiffel Tower.", False, "N"),
    ]
    result = calibrate_relevance(judge, pairs, tune=False)
    assert result.judge == judge.identity() != built


def claims_after(answer: str) -> str:
    """The part of ``answer`` after the marker ``CLAIMS["after"]``."""
    return answer.partition(CLAIMS["after"])[2] or answer


def remembering_claims(answer: str) -> str:
    """All of ``answer``, counting the answers seen in a memo of its own."""
    SEEN[answer] = SEEN.get(answer, 0) + 1
    return answer


ANSWERS = [GeneratedAnswer("q", "q", "Verdict: Bananas are blue.", (("d2", CONTEXTS["d2"]),))]


def _claims_of(claims_of: Callable[[str], str]) -> str | None:
    judge = EmbeddingJudge(encoder=words, model_name="words")
    return judge_answers(judge, ANSWERS, metrics=["groundedness"], claims_of=claims_of).claims_of


def test_a_claims_of_setting_edited_in_place_is_another_claims_of(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The function that picks what groundedness judges is recorded by its digest: a setting
    it reads edited in place kept the digest, so a baseline saw no configuration change."""
    first = _claims_of(claims_after)
    assert first is not None and first.startswith(f"{__name__}.claims_after@")
    monkeypatch.setitem(CLAIMS, "after", "Answer:")
    assert _claims_of(claims_after) != first
    monkeypatch.setitem(CLAIMS, "after", "Verdict:")
    assert _claims_of(claims_after) == first


def test_a_claims_of_memo_keeps_its_name() -> None:
    first = _claims_of(remembering_claims)
    seen = dict(SEEN)
    assert _claims_of(remembering_claims) == first
    assert sum(SEEN.values()) > sum(seen.values())  # it ran again, filling its memo
