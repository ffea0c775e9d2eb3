"""Hostile input to the answer layer end to end (issue 13): text that is not Unicode from a
generator or a model, context ids given twice, recordings of another question, labels that
differ only in spelling or hold no word, and judges that return the wrong number of verdicts.
Each gets a clear error naming the file and line, the query or the judge, or is repaired
where nothing is lost; none ends in a bare traceback or a silently wrong verdict."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.data.answers import (
    GeneratedAnswer,
    Reference,
    References,
    read_answers,
    read_references,
)
from pytest_ragmetrics.data.assessments import Verdict
from pytest_ragmetrics.errors import DataFormatError, GeneratorError, JudgeError
from pytest_ragmetrics.generation import ChatGenerator, RecordedAnswers, answer_all
from pytest_ragmetrics.judges import RecordedJudge
from pytest_ragmetrics.judges.answers import assess_answers, judge_answers, label_verdict
from pytest_ragmetrics.transport import Endpoint
from tests.helpers.fake_openai import Reply, serve
from tests.helpers.reimport import second_import


class Lonely:
    """A pipeline whose answers and contexts hold lone surrogates (as JSON "\\ud800" gives)."""

    def __call__(self, query: str) -> tuple[str, list[str]]:
        return "bad \ud800 answer", ["a context \udfff"]

    def identity(self) -> dict[str, Any]:
        return {"pipeline": "lonely"}


def test_lone_surrogates_from_a_pipeline_are_repaired_cached_and_recorded(
    tmp_path: Path,
) -> None:
    cache = Cache(tmp_path / "cache")
    answers = answer_all(Lonely(), {"q1": "what?"}, cache=cache)
    assert answers["q1"].answer == "bad \ufffd answer"
    assert answers["q1"].contexts == (("0", "a context \ufffd"),)
    answers.write(tmp_path / "answers.jsonl")
    assert read_answers(tmp_path / "answers.jsonl")[0].answer == "bad \ufffd answer"
    assert answer_all(Lonely(), {"q1": "what?"}, cache=cache).cost.cache_hits == 1


def test_lone_surrogates_from_an_endpoint_are_repaired(tmp_path: Path) -> None:
    raw = '{"choices": [{"message": {"role": "assistant", "content": "yes \\ud800 no"}}]}'
    with serve([Reply(body=raw)]) as server:
        reply = ChatGenerator(Endpoint(server.url, "tiny")).generate("q", ["c"])
    assert reply.text == "yes \ufffd no"


def test_a_query_that_is_not_unicode_is_named(tmp_path: Path) -> None:
    with pytest.raises(GeneratorError, match=r"query 'q7' holds a lone surrogate"):
        answer_all(Lonely(), {"q7": "bad \ud800"}, cache=Cache(tmp_path))


def line(**fields: Any) -> str:
    return json.dumps(fields) + "\n"


def test_a_context_id_given_twice_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(
        line(query_id="q1", query="x", answer="a", contexts=[{"id": "d1", "text": "t"}])
        + line(
            query_id="q2",
            query="y",
            answer="b",
            contexts=[{"id": "d1", "text": "t"}, {"id": "d1", "text": "u"}],
        )
    )
    with pytest.raises(DataFormatError, match=r"answers\.jsonl:2: query 'q2': context id 'd1'"):
        read_answers(path)
    with pytest.raises(DataFormatError, match="appears twice"):
        GeneratedAnswer("q1", "x", "a", (("d1", "t"), ("d1", "u")))


def test_a_recorded_answer_without_its_question_takes_the_datasets(tmp_path: Path) -> None:
    # The judges were asked about an empty question ("Question: \n\nPassage: ..."): context
    # relevance 0 for every query, answer relevance silently not judged.
    path = tmp_path / "answers.jsonl"
    path.write_text(
        line(query_id="q1", answer="Cats purr.", contexts=[{"id": "d1", "text": "t"}])
        + line(query_id="q2", query="Do dogs bark?", answer="yes", contexts=[])
    )
    found = answer_all(RecordedAnswers(path), {"q1": "Do cats purr?", "q2": "Do dogs bark?"})
    assert [(a.query_id, a.query) for a in found.answers] == [
        ("q1", "Do cats purr?"),
        ("q2", "Do dogs bark?"),
    ]
    assert found.answers[0].answer == "Cats purr." and found.answers[0].contexts == (("d1", "t"),)


def test_a_recording_of_another_question_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(
        line(query_id="q1", query="Do cats purr?", answer="yes", contexts=[])
        + line(query_id="q2", query="Do dogs bark?", answer="yes", contexts=[])
    )
    recorded = RecordedAnswers(path)
    assert len(recorded.answers_for({"q1": "Do cats purr?", "q2": "Do dogs bark?"})) == 2
    with pytest.raises(
        GeneratorError,
        match=r"answers\.jsonl: 1 of 2 recorded answers were given to another question .*"
        r"query 'q2' recorded 'Do dogs bark\?', now 'Do dogs meow\?'.*regenerate",
    ):
        answer_all(recorded, {"q1": "Do cats purr?", "q2": "Do dogs meow?"})


@pytest.mark.parametrize("queries", [{"q1": "Do cats purr?"}, {"q2": "Do dogs bark?"}])
def test_a_recording_of_more_queries_than_the_dataset_is_refused(
    tmp_path: Path, queries: dict[str, str]
) -> None:
    """Answers to queries the dataset lacks were ignored: the recording is of another query
    set, and the means covered fewer queries than it recorded, unsaid."""
    path = tmp_path / "answers.jsonl"
    path.write_text(
        line(query_id="q1", query="Do cats purr?", answer="yes", contexts=[])
        + line(query_id="q2", query="Do dogs bark?", answer="yes", contexts=[])
    )
    with pytest.raises(
        GeneratorError,
        match=r"answers\.jsonl: 1 of 2 recorded answers are to queries the dataset does not "
        r"have \('q[12]'\): it was recorded for another query set",
    ):
        answer_all(RecordedAnswers(path), queries)


def test_labels_spelt_differently_are_one_label() -> None:
    labels = ["Not enough info", "SUPPORT"]
    verdict = label_verdict(
        "NOT ENOUGH INFO. Nothing.", Reference("1", label="Not-Enough-Info"), labels
    )
    assert verdict.value is True
    assert label_verdict("SUPPORT.", Reference("1", label="support"), labels).value is True
    assert label_verdict("SUPPORT.", Reference("1", label="Not enough info"), labels).value is False


def test_a_label_without_a_word_is_an_error_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "answers.jsonl"
    path.write_text(line(query_id="1", label="SUPPORT") + line(query_id="2", label="???"))
    with pytest.raises(DataFormatError, match=r"answers\.jsonl:2: query '2': label '\?\?\?'"):
        read_references(path)


class Miscounting:
    """A context judge that drops the last verdict of every answer."""

    name = "miscounting"

    def identity(self) -> dict[str, Any]:
        return {"name": self.name}

    def judge_contexts(self, items: Sequence[tuple[str, Any]]) -> list[list[Verdict]]:
        return [[Verdict(str(i), True) for i, _ in enumerate(c)][:-1] for _, c in items]


def test_a_judge_returning_too_few_verdicts_is_named() -> None:
    answers = [GeneratedAnswer("q1", "x", "a", (("d1", "t"), ("d2", "u")))]
    with pytest.raises(
        JudgeError,
        match=r"judge 'miscounting': judge_contexts returned 1 verdicts for the 2 "
        r"contexts of query 'q1'",
    ):
        assess_answers(
            Miscounting(),  # type: ignore[arg-type]
            answers,
            metrics=["context_relevance"],
            references=References([]),
        )


@pytest.mark.parametrize("blank", ["", " ", "\t\n", "\u3000"])
def test_a_blank_label_is_no_label(tmp_path: Path, blank: str) -> None:
    """A blank label beside free text was kept as an exact label that no answer gives, so
    every answer scored 0 for correctness; it is no label, and the text decides."""
    path = tmp_path / "answers.jsonl"
    path.write_text(
        line(query_id="1", answer="Paris is in France.", label=blank)
        + line(query_id="2", answer=blank, label="SUPPORT")
    )
    references = read_references(path)
    assert references["1"] == Reference("1", "Paris is in France.", None)
    assert references["2"] == Reference("2", None, "SUPPORT")
    assert references.labels == ["SUPPORT"]
    assert Reference("3", "text", blank).label is None
    path.write_text(line(query_id="1", answer=blank, label=blank))
    with pytest.raises(DataFormatError, match=r"answers\.jsonl:1: query '1': a reference needs"):
        read_references(path)


ONE = GeneratedAnswer("q1", "Where is Paris?", "Paris is in France.", (("d1", "Paris, France."),))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"answers": [("q1", "Where?", "Paris.", ())]}, r"answers\[0\] is a tuple, not a Generat"),
        ({"answers": [ONE, {"query_id": "q2"}]}, r"answers\[1\] is a dict, not a GeneratedAn"),
        ({"answers": "Paris is in France."}, "answers must be an iterable of GeneratedAnswer"),
        ({"references": {"q1": "Paris."}}, r"references\['q1'\] is a str, not a Reference"),
        ({"references": [Reference("q1", "Paris.")]}, "references must map query id"),
        ({"references": {"q1": Reference("q2", "x")}}, r"\['q1'\] is the reference of query 'q2'"),
        ({"metrics": "groundedness"}, "metrics must be a list of answer-layer metric names"),
        ({"metrics": ["groundedness", "fluency"]}, r"unknown answer-layer metrics \['fluency'\]"),
        ({"claims_of": lambda text: None}, r"claims_of \(<lambda>\) returned a NoneType for qu"),
    ],
)
def test_wrong_arguments_to_judging_are_named(
    tmp_path: Path, arguments: dict[str, Any], message: str
) -> None:
    """A tuple for an answer, a string for a reference, a metric name as a bare string (read
    letter by letter before) or a claims_of returning None: each names the argument."""
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(line(query_id="q1", claims=[{"text": ONE.answer, "supported": True}]))
    asked: dict[str, Any] = {"answers": [ONE], **arguments}
    answers = asked.pop("answers")
    for judging in (judge_answers, assess_answers):
        with pytest.raises(JudgeError, match=message):
            judging(RecordedJudge(verdicts), answers, **asked)


def test_metrics_as_any_collection_of_names(tmp_path: Path) -> None:
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(line(query_id="q1", claims=[{"text": ONE.answer, "supported": True}]))
    judged = judge_answers(RecordedJudge(verdicts), [ONE], metrics=("groundedness",))
    assert judged.assessments[0].groundedness == 1.0
    kept = judge_answers(RecordedJudge(verdicts), iter([ONE]), metrics={"groundedness"})
    assert kept.assessments[0].groundedness == 1.0


def test_records_from_a_second_import_of_their_module_are_judged(tmp_path: Path) -> None:
    """An answer made by a generator module loaded before a re-import was refused as "a
    GeneratedAnswer, not a GeneratedAnswer" (seen in pytester runs after a CLI test)."""
    twin = second_import("pytest_ragmetrics.data.answers")
    assert twin.GeneratedAnswer is not GeneratedAnswer
    answer = twin.GeneratedAnswer(ONE.query_id, ONE.query, ONE.answer, ONE.contexts)
    reference = twin.Reference("q1", text="Paris is in France.")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(line(query_id="q1", claims=[{"text": ONE.answer, "supported": True}]))
    judged = judge_answers(
        RecordedJudge(verdicts), [answer], references={"q1": reference}, metrics=["groundedness"]
    )
    assert judged.assessments[0].groundedness == 1.0

    # The same name from another module is still refused, and named in full.
    lookalike = type("GeneratedAnswer", (), {"__module__": "my_project.answers"})

    with pytest.raises(
        JudgeError, match=r"answers\[0\] is a my_project\.answers\.GeneratedAnswer, not a Gen"
    ):
        judge_answers(RecordedJudge(verdicts), [lookalike()], metrics=["groundedness"])
