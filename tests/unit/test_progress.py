"""The progress reporter: an honest estimate from the start, redrawn as work advances, a note
for long steps only; judging many answers moves the bar. A fake clock, no timing."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_ragmetrics.data.assessments import AnswerAssessment
from pytest_ragmetrics.judges import assess_many
from pytest_ragmetrics.progress import LineProgress, format_duration, progress, use_reporter


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def bar() -> tuple[LineProgress, Clock, list[str]]:
    clock = Clock()
    written: list[str] = []
    return LineProgress(written.append, clock=clock), clock, written


def lines(written: list[str]) -> list[str]:
    """What each write drew, without the carriage returns and padding."""
    return [text.strip("\r").rstrip() for text in written if text.strip()]


def test_no_estimate_before_a_second_advance_then_time_left_at_the_rate_since_the_first() -> None:
    reporter, clock, written = bar()
    reporter.start("encoding 100 passages", 100)
    assert lines(written)[-1].endswith("0/100 0 s elapsed, estimating time left")
    assert "0 s left" not in "".join(written)
    clock.now += 6.0
    reporter.advance(10)  # the first batch: it may hold a model load, no rate from it
    assert lines(written)[-1].endswith("10/100 6 s elapsed, estimating time left")
    clock.now += 6.0
    reporter.advance(10)  # 10 units in 6 s since the first advance: 80 more take 48 s
    assert lines(written)[-1].endswith("20/100 12 s elapsed, 48 s left")
    clock.now += 48.0
    reporter.advance(40)  # 50 in 54 s since the first: 40 more take 43 s
    assert lines(written)[-1].endswith("60/100 1 min 00 s elapsed, 43 s left")


def test_redrawn_on_each_advance_unless_advances_come_faster_than_the_redraw_limit() -> None:
    reporter, clock, written = bar()
    reporter.start("judging 4 answers", 4)
    clock.now += 0.01
    reporter.advance(1)  # too soon after the last drawing: not redrawn
    assert len(written) == 1
    clock.now += 2.0
    reporter.advance(1)
    assert lines(written)[-1].endswith("2/4 2 s elapsed, 4 s left")  # 2 s a unit since the first
    clock.now += 0.01
    reporter.advance(2)  # the last unit is always drawn
    assert lines(written)[-1].startswith("judging 4 answers [" + "#" * 30 + "] 4/4")
    reporter.finish()
    assert lines(written)[-1].endswith("4/4, done in 2 s")
    assert written[-1] == "\n"


def test_a_note_appears_once_with_the_estimate_when_the_step_is_long() -> None:
    reporter, clock, written = bar()
    reporter.explain("encoding 5,183 passages with all-MiniLM-L6-v2 on this machine: not cached")
    reporter.start("encoding 5183 passages", 5183)
    clock.now += 1.5
    reporter.advance(32)
    assert not any("not cached" in text for text in written)  # no estimate yet
    clock.now += 1.5
    reporter.advance(32)
    notes = [text for text in lines(written) if "not cached" in text]
    assert notes == [
        "encoding 5,183 passages with all-MiniLM-L6-v2 on this machine: not cached; "
        "about 4 min 03 s in all"
    ]
    assert lines(written)[-1].endswith("64/5183 3 s elapsed, 4 min 00 s left")
    assert sum("64/5183" in text for text in written) == 1  # drawn once, under the note
    clock.now += 1.5
    reporter.advance(32)
    assert len([text for text in lines(written) if "not cached" in text]) == 1


def test_no_note_when_the_step_is_quick() -> None:
    reporter, clock, written = bar()
    reporter.explain("judging 8 answers: not cached")
    reporter.start("judging 8 answers", 8)
    clock.now += 0.5
    reporter.advance(1)  # 8 answers at 0.5 s: 4 s in all, not worth a note
    clock.now += 3.5
    reporter.advance(7)
    reporter.finish()
    assert not any("not cached" in text for text in written)


def test_a_shorter_line_blanks_what_the_longer_one_left() -> None:
    reporter, clock, written = bar()
    reporter.start("x", 1000)
    clock.now += 4000.0
    reporter.advance(1)  # a long estimate
    long_line = written[-1]
    clock.now += 1.0
    reporter.finish()
    assert len(written[-2]) >= len(long_line)


@pytest.mark.parametrize(
    ("seconds", "shown"),
    [(0, "0 s"), (59.4, "59 s"), (60, "1 min 00 s"), (605, "10 min 05 s"), (3725, "1 h 02 min")],
)
def test_durations_read_like_people_write_them(seconds: float, shown: str) -> None:
    assert format_duration(seconds) == shown


class Recording:
    def __init__(self) -> None:
        self.events: list[tuple[str, Any]] = []

    def explain(self, note: str) -> None:
        self.events.append(("explain", note))

    def start(self, description: str, total: int) -> None:
        self.events.append(("start", (description, total)))

    def advance(self, done: int) -> None:
        self.events.append(("advance", done))

    def finish(self) -> None:
        self.events.append(("finish", None))


def test_a_reporter_without_explain_still_works() -> None:
    events: list[Any] = []

    class Plain:
        def start(self, description: str, total: int) -> None:
            events.append((description, total))

        def advance(self, done: int) -> None:
            events.append(done)

        def finish(self) -> None:
            events.append("finish")

    with use_reporter(Plain()), progress("step", 2, note="why") as advance:
        advance(2)
    assert events == [("step", 2), 2, "finish"]


class CountingJudge:
    def identity(self) -> dict[str, Any]:
        return {"name": "counting", "model": "toy"}

    def assess(
        self, query: str, answer: str, contexts: Any, *, query_id: str | None = None
    ) -> AnswerAssessment:
        return AnswerAssessment(query_id=query_id or query, answer=answer, claims=())


@pytest.mark.parametrize("concurrency", [1, 3])
def test_judging_many_answers_moves_the_bar_per_answer(concurrency: int) -> None:
    reporter = Recording()
    answers = [(f"q{i}", "an answer.", ["a context."], f"q{i}") for i in range(5)]
    with use_reporter(reporter):
        assessments = assess_many(CountingJudge(), answers, concurrency=concurrency)
    assert [a.query_id for a in assessments] == [f"q{i}" for i in range(5)]
    kind, note = reporter.events[0]
    assert kind == "explain" and note.startswith(
        "judging 5 answers with the counting judge (toy): claims not in its cache are judged now"
    )
    assert reporter.events[1] == ("start", ("judging 5 answers (counting judge (toy))", 5))
    assert list(reporter.events[2:-1]) == [("advance", 1)] * 5
    assert reporter.events[-1] == ("finish", None)


def test_without_a_terminal_only_the_note_is_written() -> None:
    clock = Clock()
    written: list[str] = []
    reporter = LineProgress(written.append, clock=clock, bar=False)
    reporter.explain("judging 400 answers: not cached")
    reporter.start("judging 400 answers", 400)
    clock.now += 3.0
    reporter.advance(1)
    clock.now += 3.0
    reporter.advance(1)  # 3 s an answer since the first: 398 more take 19 min 54 s
    reporter.advance(398)
    reporter.finish()
    assert written == ["judging 400 answers: not cached; about 20 min 00 s in all", "\n"]


@pytest.mark.parametrize("startup", [0.0, 9.0, 60.0, 600.0])
def test_the_first_figure_is_within_twice_the_actual_time_despite_a_slow_first_item(
    startup: float,
) -> None:
    """A model load before the first item (``startup`` s), then 1 s an item: every estimate,
    from the first one shown, is within 2x of the time the step really takes."""
    reporter, clock, written = bar()
    reporter.explain("judging 100 answers: not cached")
    reporter.start("judging 100 answers", 100)
    figures: list[tuple[int, float]] = []  # (units done, seconds left as shown)
    for done in range(1, 101):
        clock.now += 1.0 + (startup if done == 1 else 0.0)
        reporter.advance(1)
        shown = lines(written)[-1]
        if shown.endswith(" left") and "estimating" not in shown and done < 100:
            figures.append((done, _seconds(shown.rsplit(", ", 1)[1].removesuffix(" left"))))
    assert figures and figures[0][0] == 2  # the first figure comes with the second item
    for done, left in figures:
        actual = 100 - done
        assert actual / 2 <= left <= actual * 2, (done, left, actual)
    (note,) = [line for line in lines(written) if " in all" in line]
    in_all = _seconds(note.rsplit("about ", 1)[1].removesuffix(" in all"))
    assert (startup + 100) / 2 <= in_all <= (startup + 100) * 2, note
    # A start-up over NOTE_AFTER seconds: the note at once, the estimate on a line of its own.
    said = [line for line in lines(written) if "not cached" in line]
    assert (
        said == [note]
        if startup < 9
        else said == ["judging 100 answers: not cached; estimating how long"]
    )


def _figures_of_a_longest_first_encoding(startup: float, *, weighed: bool) -> list[float]:
    """Estimate / time really left, for every figure a bar shows while 1,000 texts of mixed
    length are encoded longest first in batches of 20 (sentence-transformers' order), each
    batch taking time in proportion to its characters plus a cost per text (not the one
    ``text_weights`` assumes), the first batch ``startup`` s more."""
    import random

    from pytest_ragmetrics.encoders import text_weights

    rng = random.Random(0)
    lengths = sorted(
        (rng.choice([20, 40, 80, 150, 300, 600, 1500]) for _ in range(1000)), reverse=True
    )
    cost = [0.002 * (n + 60) for n in lengths]  # seconds per text
    reporter, clock, written = bar()
    if weighed:
        reporter.weigh(text_weights(lengths))
    reporter.start("encoding 1,000 texts", 1000)
    drawn: list[tuple[float, float]] = []  # (seconds left as shown, when)
    for start in range(0, 1000, 20):
        clock.now += sum(cost[start : start + 20]) + (startup if start == 0 else 0.0)
        reporter.advance(20)
        shown = lines(written)[-1]
        if shown.endswith(" left") and "estimating" not in shown and start + 20 < 1000:
            drawn.append((_seconds(shown.rsplit(", ", 1)[1].removesuffix(" left")), clock.now))
    return [left / (clock.now - at) for left, at in drawn]


@pytest.mark.parametrize("startup", [0.0, 60.0])
def test_texts_encoded_longest_first_are_weighed_and_the_estimate_holds(startup: float) -> None:
    """Counting texts alone, the first figures of an encoding were several times too high (the
    longest texts come first: benchmarks/bench_progress.py showed 149 s left for 22 s). Weighed
    by length, every figure from the first is within 2x of the time really left, after a slow
    first batch too."""
    counted = _figures_of_a_longest_first_encoding(startup, weighed=False)
    assert max(counted) > 2.5  # the case the weights are for
    ratios = _figures_of_a_longest_first_encoding(startup, weighed=True)
    assert ratios and all(0.5 <= r <= 2.0 for r in ratios), ratios


def test_text_weights_count_what_the_model_reads() -> None:
    from pytest_ragmetrics.encoders import TEXT_OVERHEAD, text_weights

    assert text_weights([10, 5000]) == [10 + TEXT_OVERHEAD, 5000 + TEXT_OVERHEAD]
    # 256 tokens: about 1,024 characters read
    assert text_weights([10, 5000], 256) == [10 + TEXT_OVERHEAD, 1024 + TEXT_OVERHEAD]
    # Weights that do not fit the task (a unit count that differs) are not used.
    reporter, clock, written = bar()
    reporter.weigh([1.0, 100.0])
    reporter.start("step", 3)
    for _ in range(3):
        clock.now += 1.0
        reporter.advance(1)
    assert "1 s left" in lines(written)[-2]


def test_a_slow_start_without_a_rate_yet_still_gets_its_note() -> None:
    """Two batches, the first after a long model load: the note says so before any estimate."""
    clock = Clock()
    written: list[str] = []
    reporter = LineProgress(written.append, clock=clock, bar=False)
    reporter.explain("encoding 2 batches: not cached")
    reporter.start("encoding", 2)
    clock.now += 30.0
    reporter.advance(1)
    assert written == ["encoding 2 batches: not cached; estimating how long", "\n"]
    clock.now += 1.0
    reporter.advance(1)
    reporter.finish()
    assert len(written) == 2  # done: no estimate line is due any more


def _seconds(shown: str) -> float:
    """The inverse of format_duration, to the second."""
    units = {"h": 3600, "min": 60, "s": 1}
    parts = shown.split()
    return float(sum(int(n) * units[u] for n, u in zip(parts[::2], parts[1::2], strict=True)))


class Letters:
    """A toy encoder: a text's letter counts."""

    def __call__(self, texts: list[str]) -> Any:
        import numpy as np

        return np.array([[t.count(c) + 1 for c in "abcdefghij"] for t in texts], dtype=float)


def test_an_embedding_judging_of_many_texts_shows_a_bar_and_its_note() -> None:
    """Judging recorded answers embeds every claim and context sentence at once: that is a long
    step, and it says so (it printed nothing when 300 answers took minutes)."""
    from pytest_ragmetrics.judges import EmbeddingJudge

    judge = EmbeddingJudge(encoder=Letters(), model_name="letters")
    requests = [([f"claim number {i}."], {"c": f"context sentence {i}."}) for i in range(200)]
    reporter = Recording()
    with use_reporter(reporter):
        judge.judge_claims_many(requests)
    kinds = [kind for kind, _ in reporter.events]
    assert kinds == ["explain", "start", "advance", "finish"]
    assert reporter.events[1] == ("start", ("embedding 400 texts (embedding judge, letters)", 400))
    assert "reruns read the cache" in reporter.events[0][1]
    few = Recording()
    with use_reporter(few):  # a handful of texts: no bar
        judge.judge_claims_many(requests[:3])
    assert few.events == []


def test_the_embedding_judge_weighs_its_texts_longest_first() -> None:
    """The judge's texts go to the model longest first, so the weights it hands the bar are
    their lengths in that order (plus the cost per text), one per text of the step."""
    from pytest_ragmetrics.encoders import TEXT_OVERHEAD
    from pytest_ragmetrics.judges import EmbeddingJudge

    class Weighing(Recording):
        def weigh(self, weights: Any) -> None:
            self.events.append(("weigh", list(weights)))

    judge = EmbeddingJudge(encoder=Letters(), model_name="letters")
    requests = [([f"claim {'x' * i}."], {"c": "a context sentence."}) for i in range(300)]
    reporter = Weighing()
    with use_reporter(reporter):
        judge.judge_claims_many(requests)
    (weights,) = [args for kind, args in reporter.events if kind == "weigh"]
    texts = {f"claim {'x' * i}." for i in range(300)} | {"a context sentence."}
    assert weights == sorted((len(t) + TEXT_OVERHEAD for t in texts), reverse=True)
    assert ("start", ("embedding 301 texts (embedding judge, letters)", 301)) in reporter.events


def test_http_judges_show_a_bar_over_their_questions() -> None:
    """Judging recorded answers with an HTTP judge was a long step with no bar: the agreement
    and relevance questions now advance one per reply, each distinct question counted once."""
    from pytest_ragmetrics.judges import HttpRelevanceJudge, RelevancePair
    from pytest_ragmetrics.judges.http import HttpJudge
    from pytest_ragmetrics.transport import Endpoint
    from tests.helpers.fake_openai import serve

    pairs = [RelevancePair("q", f"passage {i}", "q", f"d{i}") for i in range(4)]
    with serve(answer=lambda prompt: "Yes.") as server:
        relevance = Recording()
        with use_reporter(relevance):
            HttpRelevanceJudge(
                Endpoint(server.url, "m", backoff=0.0, concurrency=2)
            ).judge_relevance(pairs)
        agreement = Recording()
        items = [("q1", "yes", "yes"), ("q2", "no", "no"), ("q1", "yes", "yes")]
        with use_reporter(agreement):
            HttpJudge(Endpoint(server.url, "m", backoff=0.0)).judge_agreement(items)
    assert relevance.events[1] == ("start", ("judging 4 passages for relevance (m)", 4))
    assert (
        relevance.events[0][0] == "explain"
        and "4 relevance questions of m" in relevance.events[0][1]
    )
    assert relevance.events[2:] == [("advance", 1)] * 4 + [("finish", None)]
    assert agreement.events[1] == ("start", ("judging 2 reference agreement questions (m)", 2))
    assert agreement.events[2:] == [("advance", 1)] * 2 + [("finish", None)]


def test_a_step_inside_another_moves_only_the_outer_bar() -> None:
    reporter = Recording()
    with use_reporter(reporter), progress("calibrating", 2) as outer:
        for _ in range(2):
            with progress("judging 3 passages", 3) as inner:
                inner(3)
            outer(1)
    assert reporter.events == [
        ("start", ("calibrating", 2)),
        ("advance", 1),
        ("advance", 1),
        ("finish", None),
    ]
