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


def test_no_estimate_before_the_first_unit_then_time_left_at_the_rate_so_far() -> None:
    reporter, clock, written = bar()
    reporter.start("encoding 100 passages", 100)
    assert lines(written)[-1].endswith("0/100 0 s elapsed, estimating time left")
    assert "0 s left" not in "".join(written)
    clock.now += 6.0
    reporter.advance(10)  # 10 units in 6 s: 90 more take 54 s
    assert lines(written)[-1].endswith("10/100 6 s elapsed, 54 s left")
    clock.now += 54.0
    reporter.advance(40)  # 50 in 60 s: 50 more take 60 s
    assert lines(written)[-1].endswith("50/100 1 min 00 s elapsed, 1 min 00 s left")


def test_redrawn_on_each_advance_unless_advances_come_faster_than_the_redraw_limit() -> None:
    reporter, clock, written = bar()
    reporter.start("judging 4 answers", 4)
    clock.now += 0.01
    reporter.advance(1)  # too soon after the last drawing: not redrawn
    assert len(written) == 1
    clock.now += 2.0
    reporter.advance(1)
    assert lines(written)[-1].endswith("2/4 2 s elapsed, 2 s left")
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
    assert not any("not cached" in text for text in written)  # no estimate yet
    clock.now += 1.5
    reporter.advance(32)
    notes = [text for text in lines(written) if "not cached" in text]
    assert notes == [
        "encoding 5,183 passages with all-MiniLM-L6-v2 on this machine: not cached; "
        "about 4 min 03 s in all"
    ]
    assert lines(written)[-1].endswith("32/5183 2 s elapsed, 4 min 01 s left")
    assert sum("32/5183" in text for text in written) == 1  # drawn once, under the note
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
    reporter.advance(399)
    reporter.finish()
    assert written == ["judging 400 answers: not cached; about 20 min 00 s in all", "\n"]
