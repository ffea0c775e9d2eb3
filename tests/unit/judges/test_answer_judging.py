"""Judging generated answers (issue 13 items 2-5): references and their layouts, label
matching, answer_correctness and context_relevance, the HTTP judge's new questions against the
fake server (with cost), judge noise on a stub with a known flip rate, and a baseline drop
within that noise."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import Tolerances
from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.data.answers import (
    GeneratedAnswer,
    Reference,
    References,
    answer_label,
    label_matches,
    load_references,
    normalise_label,
    read_references,
    split_label,
)
from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim, Verdict
from pytest_ragmetrics.errors import BudgetError, DataFormatError, JudgeError
from pytest_ragmetrics.judges import EmbeddingJudge, HttpJudge, RecordedJudge
from pytest_ragmetrics.judges.answers import assess_answers, judge_answers
from pytest_ragmetrics.judges.noise import measure_noise
from pytest_ragmetrics.metrics.answer import evaluate_answers
from pytest_ragmetrics.metrics.semantics import MetricSemantics
from pytest_ragmetrics.plugin.recording import RagEval
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.transport import Budget, Cost, Endpoint, Sampling
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.jsonl import write_jsonl

LABELS = ["SUPPORT", "CONTRADICT", "NOT ENOUGH INFO"]


def words_encoder(texts: list[str]) -> np.ndarray:
    """Bag of words hashed into 64 dimensions: same words, same vector."""
    out = np.zeros((len(texts), 64))
    for row, text in enumerate(texts):
        for word in normalise_label(text).split():
            out[row, int(hashlib.sha256(word.encode()).hexdigest(), 16) % 64] += 1.0
    return out


def embedding_judge(**options: Any) -> EmbeddingJudge:
    return EmbeddingJudge(encoder=words_encoder, model_name="words", **options)


def answer(qid: str, text: str, contexts: Sequence[str], query: str = "") -> GeneratedAnswer:
    return GeneratedAnswer(
        qid, query or f"question {qid}", text, tuple((f"d{i}", c) for i, c in enumerate(contexts))
    )


# -- references -----------------------------------------------------------------------------------


def test_references_in_beir_and_flagembedding_layouts(tmp_path: Path) -> None:
    beir = tmp_path / "beir"
    beir.mkdir()
    write_jsonl(beir / "answers.jsonl", [{"_id": "1", "label": "SUPPORT"}])
    flag = tmp_path / "flag"
    flag.mkdir()
    write_jsonl(flag / "dev_answers.jsonl", [{"query_id": "2", "answer": "Paris."}])
    write_jsonl(flag / "answers.jsonl", [{"query_id": "3", "answer": "other"}])
    assert load_references(beir, "test") == References([Reference("1", None, "SUPPORT")])
    found = load_references(flag, "dev")
    assert found is not None and dict(found) == {"2": Reference("2", "Paris.", None)}
    assert load_references(tmp_path, "test") is None


def test_reference_file_errors_name_file_and_line(tmp_path: Path) -> None:
    path = write_jsonl(tmp_path / "answers.jsonl", [{"query_id": "1", "label": ""}])
    with pytest.raises(DataFormatError, match=r"answers\.jsonl:1: query '1': a reference needs"):
        read_references(path)
    write_jsonl(path, [{"query_id": "1", "label": "A"}, {"query_id": "1", "label": "B"}])
    with pytest.raises(DataFormatError, match=r"answers\.jsonl:2: .*reference on line 1"):
        read_references(path)
    write_jsonl(path, [{"label": "A"}])
    with pytest.raises(DataFormatError, match=r"answers\.jsonl:1: no query id"):
        read_references(path)


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("SUPPORT. The abstract says so.", "SUPPORT"),
        ("support", "SUPPORT"),
        ("  **Contradict**: no", "CONTRADICT"),
        ("Not-enough_info.", "NOT ENOUGH INFO"),
        ("Verdict: NOT ENOUGH INFO, sadly", "NOT ENOUGH INFO"),
        ("SUPPORTS the claim", None),
        ("The abstracts support it", None),
        ("NOT sure", None),
    ],
)
def test_answer_label_after_normalisation(text: str, label: str | None) -> None:
    assert answer_label(text, LABELS) == label
    assert label_matches(text, "SUPPORT", LABELS) == (label == "SUPPORT")


def test_split_label_leaves_the_rationale() -> None:
    assert split_label("SUPPORT. It is shown.", LABELS) == ("SUPPORT", "It is shown.")
    assert split_label("Verdict: NOT ENOUGH INFO - none", LABELS) == ("NOT ENOUGH INFO", "none")
    assert split_label("Maybe.", LABELS) == (None, "Maybe.")


# -- assessing answers ---------------------------------------------------------------------------


def test_all_four_metrics_from_the_embedding_judge() -> None:
    answers = [
        answer("1", "SUPPORT. cats purr loudly", ["cats purr loudly", "dogs bark"], "cats purr"),
        answer("2", "CONTRADICT. birds swim", ["birds sing", "fish swim"], "do birds sing"),
        answer("3", "Paris is the capital", ["the capital is Paris"], "capital of France"),
    ]
    references = References(
        [
            Reference("1", label="SUPPORT"),
            Reference("2", label="SUPPORT"),
            Reference("3", text="the capital is Paris"),
        ]
    )
    judge = embedding_judge(context_threshold=0.5, agreement_threshold=0.7)
    assessments = assess_answers(
        judge, answers, references=references, claims_of=lambda a: split_label(a, LABELS)[1]
    )
    evaluation = evaluate_answers(assessments, ["answer_correctness", "context_relevance"])
    table = evaluation.to_dict(per_query=True)["per_query"]
    assert [table[q]["answer_correctness"] for q in "123"] == [1.0, 0.0, 1.0]
    assert assessments[0].correctness == Verdict(
        "label", True, None, "answer gives 'SUPPORT', reference 'SUPPORT'"
    )
    assert assessments[2].correctness is not None and assessments[2].correctness.score == 1.0
    # cosine("cats purr", "cats purr loudly") = 2/sqrt(6) ≈ 0.82; with "dogs bark" 0.
    assert [v.value for v in assessments[0].context_verdicts] == [True, False]
    assert table["1"]["context_relevance"] == 0.5
    # The verdict label is not a claim: only the rationale is judged.
    assert [c.text for c in assessments[0].claims] == ["cats purr loudly"]
    assert assessments[0].groundedness == 1.0
    again = AnswerAssessment.from_dict(json.loads(json.dumps(assessments[0].to_dict())))
    assert again == assessments[0]


def test_embedding_batch_gives_the_same_verdicts_as_one_by_one() -> None:
    answers = [
        answer(str(i), f"cats {i} purr. dogs bark", ["cats purr", "dogs bark"]) for i in range(5)
    ]
    judge = embedding_judge(relevance_threshold=0.1)
    batched = assess_answers(judge, answers, metrics=["groundedness", "answer_relevance"])
    single = [
        judge.assess(a.query, a.answer, dict(a.contexts), query_id=a.query_id) for a in answers
    ]
    assert batched == single


def test_no_reference_means_not_applicable_and_noted() -> None:
    assessments = assess_answers(
        embedding_judge(), [answer("1", "x", ["y"])], references=References([]),
        metrics=["answer_correctness"],
    )  # fmt: skip
    evaluation = evaluate_answers(assessments, ["answer_correctness"])
    assert math.isnan(evaluation.mean["answer_correctness"])
    assert "1 of 1 answers have no reference (1): answer_correctness" in evaluation.notes[0]


def test_a_judge_without_the_question_is_a_clear_error(tmp_path: Path) -> None:
    path = write_jsonl(
        tmp_path / "verdicts.jsonl", [{"query_id": "1", "answer": "x", "claims": []}]
    )
    judge = RecordedJudge(path)
    with pytest.raises(JudgeError, match="judge 'recorded' cannot judge context_relevance"):
        assess_answers(judge, [answer("1", "x", ["y"])], metrics=["context_relevance"])
    with pytest.raises(JudgeError, match="cannot judge answer_correctness against free-text"):
        assess_answers(
            judge, [answer("1", "x", ["y"])], references=References([Reference("1", "t")]),
            metrics=["answer_correctness"],
        )  # fmt: skip


# -- the HTTP judge's questions -------------------------------------------------------------------


def yes_when(word: str):  # type: ignore[no-untyped-def]
    def reply(prompt: str) -> str:
        return "Yes." if word in prompt else "No."

    return reply


def test_http_judge_agreement_and_context_questions_with_cost(tmp_path: Path) -> None:
    answers = [
        answer("1", "Paris", ["France's capital is Paris", "RELEVANT note"], "capital?"),
        answer("2", "Lyon", ["RELEVANT too"], "capital?"),
    ]
    references = References([Reference("1", "Paris"), Reference("2", "Paris")])

    def reply(prompt: str) -> dict[str, Any]:
        return completion("yes" if ("Answer: Paris" in prompt or "RELEVANT" in prompt) else "no")

    with serve(answer=lambda p: "unused") as server:
        server.answer = lambda p: reply(p)["choices"][0]["message"]["content"]
        judge = HttpJudge(Endpoint(server.url, "tiny", concurrency=2), cache=Cache(tmp_path))
        first = judge_answers(
            judge, answers, references=references,
            metrics=["answer_correctness", "context_relevance"],
        )  # fmt: skip
        second = judge_answers(
            judge, answers, references=references,
            metrics=["answer_correctness", "context_relevance"],
        )  # fmt: skip
        prompts = [r["body"]["messages"][-1]["content"] for r in server.requests]
    assert [a.answer_correctness for a in first.assessments] == [1.0, 0.0]
    assert [a.context_relevance for a in first.assessments] == [0.5, 1.0]
    assert sum("Does the answer agree with the reference answer?" in p for p in prompts) == 2
    assert sum("Is this passage relevant to the question" in p for p in prompts) == 3
    assert first.cost == Cost(calls=5, unmetered=5)
    assert second.cost == Cost(cache_hits=5)
    assert second.assessments == first.assessments


def test_http_judge_counts_tokens_and_stops_at_the_budget(tmp_path: Path) -> None:
    body = completion("yes")
    body["usage"] = {"prompt_tokens": 50, "completion_tokens": 1}
    with serve([Reply(body=body) for _ in range(20)]) as server:
        budget = Budget(120)
        short = "Q: {query}\nP: {passage}\nRelevant? yes or no."
        judge = HttpJudge(Endpoint(server.url, "tiny"), budget=budget, prompts={"context": short})
        items = [("q", f"passage {i}") for i in range(5)]
        # The first reply shows ~50 prompt tokens per question: a second would pass 120.
        with pytest.raises(BudgetError, match=r"HTTP judge .*51 tokens used by 1 call, and"):
            judge.judge_contexts([(q, [p]) for q, p in items])
        assert server.count == 1
    assert budget.spent == 51
    assert judge.cost == Cost(calls=1, prompt_tokens=50, completion_tokens=1)


# -- judge noise ---------------------------------------------------------------------------------


class FlippingJudge:
    """A stub judge: context verdicts are "relevant" except that, with seed s > 0, each verdict
    flips with probability ``rate`` (decided by a hash of seed and item, so reproducible)."""

    name = "flipping"

    def __init__(self, rate: float, seed: int = 0) -> None:
        self.rate = rate
        self.seed = seed

    def identity(self) -> dict[str, Any]:
        return {"name": self.name, "rate": self.rate, "seed": self.seed}

    def with_seed(self, seed: int) -> FlippingJudge:
        return FlippingJudge(self.rate, seed)

    def _flips(self, key: str) -> bool:
        digest = hashlib.sha256(f"{self.seed}/{key}".encode()).digest()
        return self.seed > 0 and int.from_bytes(digest[:8], "big") / 2**64 < self.rate

    def judge_contexts(self, items: Sequence[tuple[str, Any]]) -> list[list[Verdict]]:
        return [
            [Verdict(cid, not self._flips(f"{q}/{cid}")) for cid in contexts]
            for q, contexts in items
        ]


def test_noise_statistics_match_a_known_flip_rate() -> None:
    answers = [answer(str(i), "x", [f"c{j}" for j in range(10)]) for i in range(100)]
    rate, repeats = 0.1, 3
    judged = judge_answers(
        FlippingJudge(rate), answers, metrics=["context_relevance"], repeats=repeats
    )
    noise = judged.noise
    assert noise is not None and noise.repeats == 3 and noise.seeds == (0, 1, 2)
    assert noise.items == 1000
    # An item is unstable when it flips in repeat 1 or 2: probability 1 - 0.9^2 = 0.19.
    expected = 1 - (1 - rate) ** (repeats - 1)
    assert abs(len(noise.unstable) / noise.items - expected) < 0.04  # ~3.1 binomial sd
    # The repeat as configured (seed 0) never flips: the assessments returned are its.
    assert all(a.context_relevance == 1.0 for a in judged.assessments)
    means = noise.metric_means["context_relevance"]
    assert means[0] == 1.0 and abs(means[1] - (1 - rate)) < 0.03
    assert noise.noise["context_relevance"] == pytest.approx(1.0 - min(means))
    assert all(noise.agreement[k] == pytest.approx(2 / 3) for k in noise.unstable)
    assert "verdicts unstable" in noise.describe()


def test_a_deterministic_judge_measures_no_noise() -> None:
    answers = [answer(str(i), "a b", ["a b", "c"]) for i in range(4)]
    judged = judge_answers(embedding_judge(), answers, metrics=["context_relevance"], repeats=3)
    assert judged.noise is not None
    assert judged.noise.unstable == () and judged.noise.noise == {"context_relevance": 0.0}


def test_a_separate_http_context_judge_is_re_seeded_for_each_repeat(tmp_path: Path) -> None:
    """The context question of a relevance judge of its own varies with the repeats' seeds as
    the judge's does: each repeat asks it again with the next seed (not its cache), the dry-run
    plan counts those requests, and the verdicts that changed are unstable."""
    from pytest_ragmetrics.judges import HttpRelevanceJudge
    from pytest_ragmetrics.judges.answers import plan_judging

    answers = [answer("1", "a", ["p1", "p2"], "q one"), answer("2", "b", ["p3", "p4"], "q two")]
    metrics = ["context_relevance"]
    with serve() as server:
        # The first seed's four questions get yes, the next seed's get no.
        server.answer = lambda p: "yes" if server.count <= 4 else "no"
        relevance = HttpRelevanceJudge(
            Endpoint(server.url, "tiny"), cache=Cache(tmp_path), sampling=Sampling(temperature=0.7)
        )
        planned = plan_judging(
            embedding_judge(), answers, metrics=metrics, context_judge=relevance, repeats=2
        )
        judged = judge_answers(
            embedding_judge(), answers, metrics=metrics, context_judge=relevance, repeats=2
        )
        again = plan_judging(
            embedding_judge(), answers, metrics=metrics, context_judge=relevance, repeats=2
        )
        seeds = [r["body"]["seed"] for r in server.requests]
    assert (planned.requests, planned.cached, planned.local) == (4 + 4, 0, False)
    assert (again.requests, again.cached) == (0, 8)
    assert seeds == [0, 0, 0, 0, 1, 1, 1, 1]
    assert [a.context_relevance for a in judged.assessments] == [1.0, 1.0]
    # Its requests are the judging's cost (the embedding judge itself sends none).
    assert (judged.cost.calls, judged.cost.cache_hits) == (8, 0)
    noise = judged.noise
    assert noise is not None and noise.seeds == (0, 1)
    assert len(noise.unstable) == 4 and noise.noise == {"context_relevance": 1.0}
    assert relevance.with_seed(1).identity() != relevance.identity()
    assert relevance.with_seed(0).identity() == relevance.identity()


def test_a_context_judge_on_the_judge_s_own_client_is_counted_once(tmp_path: Path) -> None:
    answers = [answer("1", "Cats purr.", ["cats purr", "dogs bark"], "what do cats do")]
    with serve(answer=lambda p: "yes") as server:
        judge = HttpJudge(Endpoint(server.url, "tiny"), cache=Cache(tmp_path))
        judged = judge_answers(
            judge, answers, metrics=["context_relevance"], context_judge=judge.context_judge
        )
        sent = server.count
    assert sent == judged.cost.calls == 2


def test_noise_needs_two_repeats() -> None:
    with pytest.raises(JudgeError, match="at least 2 repeats"):
        measure_noise([[]], ["groundedness"])


# -- recording, cost notes and the baseline verdict within noise ---------------------------------


def recorder() -> RagEval:
    return RagEval(
        "test_x.py::test_answers",
        metrics=["context_relevance"],
        semantics=MetricSemantics(),
        k=10,
        thresholds={},
        dataset=lambda: None,  # type: ignore[arg-type, return-value]
    )


def test_cost_and_noise_are_recorded_in_notes_and_the_report() -> None:
    answers = [answer(str(i), "x", [f"c{j}" for j in range(10)]) for i in range(20)]
    judged = judge_answers(FlippingJudge(0.3), answers, metrics=["context_relevance"], repeats=2)
    rag_eval = recorder()
    rag_eval.answers(judged, cost={"generator": Cost(calls=3, cache_hits=17, prompt_tokens=900)})
    record = rag_eval.recorded[0]
    data = record.to_dict()
    assert data["cost"]["generator"] == {
        "calls": 3, "cache_hits": 17, "prompt_tokens": 900, "completion_tokens": 0,
        "total_tokens": 900, "unmetered": 0, "replayed": 0,
    }  # fmt: skip
    assert data["cost"]["judge"]["calls"] == 0
    assert data["judge_noise"]["repeats"] == 2 and data["judge_noise"]["unstable_items"] > 0
    assert any(
        n.startswith("cost: generator 3 calls (17 cached), 900 tokens") for n in data["notes"]
    )
    assert any(n.startswith("judge noise over 2 repeats") for n in data["notes"])
    assert "cost" not in record.baseline_entry("0") and "judge_noise" not in record.baseline_entry(
        "0"
    )
    assert EvaluationRecord.from_dict(data).report_fields["judge_noise"] == data["judge_noise"]


def _record(values: list[float], noise: float | None) -> EvaluationRecord:
    assessments = [
        AnswerAssessment(str(i), "x", (Claim("c", v == 1.0),)) for i, v in enumerate(values)
    ]
    evaluation = evaluate_answers(assessments, ["groundedness"])
    fields = {} if noise is None else {"judge_noise": {"noise": {"groundedness": noise}}}
    return EvaluationRecord("t.py::t", "answers", evaluation, report_fields=fields)


@pytest.mark.parametrize(
    ("noise", "status"), [(None, "regressed"), (0.25, "ok"), (0.1, "regressed")]
)
def test_a_drop_within_judge_noise_is_not_a_regression(noise: float | None, status: str) -> None:
    before = _record([1.0] * 10, None).baseline_entry("0")
    now = _record([1.0] * 8 + [0.0] * 2, noise)  # groundedness 1.0 -> 0.8
    verdict = compare_to_baseline(now, before, Tolerances())
    assert verdict.status == status
    if status == "ok":
        assert "within judge noise" in verdict.metrics[0].note
    else:
        from pytest_ragmetrics.baseline.verdicts import failure_message

        # Answer-layer queries have no ranks: the message names them with their Δ only.
        assert [w[2:] for w in verdict.metrics[0].worst] == [(-1, -1), (-1, -1)]
        message = failure_message(now, verdict, "baseline.json")
        assert "most regressed: 8 (Δ -1.000); 9 (Δ -1.000)" in message
        assert "rank" not in message


def test_assessment_verdicts_are_checked() -> None:
    with pytest.raises(JudgeError, match="must be Verdict objects"):
        AnswerAssessment("1", "x", context_verdicts=("yes",))  # type: ignore[arg-type]
    assert (
        dataclasses.replace(
            AnswerAssessment("1", "x"), correctness=Verdict("label", None)
        ).answer_correctness
        != 0.0
    )


def test_dry_run_counts_the_judge_requests_then_none(tmp_path: Path) -> None:
    from pytest_ragmetrics.judges.answers import plan_judging

    answers = [
        answer("1", "Cats purr. Cats fly.", ["cats purr", "dogs bark"], "what do cats do"),
        answer("2", "Cats purr.", ["cats purr"], "what do cats do"),
    ]
    references = References([Reference("1", "Cats purr."), Reference("2", label="SUPPORT")])
    metrics = ["groundedness", "answer_relevance", "answer_correctness", "context_relevance"]
    with serve(answer=lambda p: "yes") as server:
        judge = HttpJudge(Endpoint(server.url, "tiny"), cache=Cache(tmp_path))
        # support: 2 + 1 claims; relevance: 2; agreement: 1 (the label needs none);
        # contexts: 2 + 1, of which "cats purr" for the same question twice: asked once.
        planned = plan_judging(judge, answers, references=references, metrics=metrics)
        assert server.count == 0
        judged = judge_answers(judge, answers, references=references, metrics=metrics)
        sent = server.count
        again = plan_judging(judge, answers, references=references, metrics=metrics)
    assert planned.requests == sent == judged.cost.calls == 8
    assert (planned.cached, again.requests, again.cached) == (0, 0, 8)
    assert "8 requests to send" in planned.describe()
    local = plan_judging(embedding_judge(), answers, metrics=metrics)
    assert local.local and "sends no requests" in local.describe()


def test_judge_answers_passes_claims_of_and_a_relevance_judge() -> None:
    from pytest_ragmetrics.judges import EmbeddingRelevanceJudge

    answers = [
        answer("1", "SUPPORT. cats purr loudly", ["cats purr loudly", "dogs bark"], "cats purr")
    ]
    relevance = EmbeddingRelevanceJudge(encoder=words_encoder, model_name="words", threshold=0.5)
    judged = judge_answers(
        embedding_judge(), answers, metrics=["groundedness", "context_relevance"],
        claims_of=lambda a: split_label(a, LABELS)[1], context_judge=relevance,
    )  # fmt: skip
    found = judged.assessments[0]
    assert [c.text for c in found.claims] == ["cats purr loudly"]
    assert [(v.subject, v.value) for v in found.context_verdicts] == [("d0", True), ("d1", False)]
    assert found.context_verdicts[0].score == pytest.approx(2 / 6**0.5, abs=1e-6)
