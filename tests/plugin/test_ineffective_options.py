"""A setting that has no effect in the configuration it is in says so (issue 24, class 10):
one note per such setting in the terminal summary, instead of silently doing nothing."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_ragmetrics.plugin.ineffective import ineffective_options
from pytest_ragmetrics.plugin.settings import Settings
from tests.helpers.plugin_project import make_project

ROOT = Path(".")


@pytest.mark.parametrize(
    ("settings", "notes"),
    [
        (Settings(ROOT), []),
        (Settings(ROOT, judge="http", judge_url="http://h", judge_budget=9), []),
        (
            Settings(ROOT, judge_url="http://h", judge_seed=1),
            [
                "ragmetrics_judge_url has no effect: ragmetrics_judge is not set, so no built-in "
                "judge reads it",
                "ragmetrics_judge_seed has no effect: ragmetrics_judge is not set, so no "
                "built-in judge reads it",
            ],
        ),
        (
            Settings(ROOT, judge="http", judge_verdicts=Path("v.jsonl")),
            [
                "ragmetrics_judge_verdicts has no effect: ragmetrics_judge = http does not read "
                "it (only recorded)"
            ],
        ),
        (
            Settings(ROOT, judge="embedding", judge_budget=100, generator_max_tokens=8),
            [
                "ragmetrics_generator_max_tokens has no effect: no generator endpoint is "
                "configured (ragmetrics_generator_url or RAGMETRICS_GENERATOR_URL)",
                "ragmetrics_judge_budget has no effect: nothing remote spends tokens (neither "
                "ragmetrics_judge = http nor a generator endpoint is configured)",
            ],
        ),
        (Settings(ROOT, generator_url="http://g", judge_budget=100, generator_seed=2), []),
        (
            Settings(ROOT, judge_attempt_timeout=5.0, generator_timeout=30.0),
            [
                "ragmetrics_judge_attempt_timeout has no effect: ragmetrics_judge is not set, so "
                "no built-in judge reads it",
                "ragmetrics_generator_timeout has no effect: no generator endpoint is configured "
                "(ragmetrics_generator_url or RAGMETRICS_GENERATOR_URL)",
            ],
        ),
        (
            Settings(
                ROOT,
                judge="http",
                judge_timeout=9.0,
                generator_url="http://g",
                generator_attempt_timeout=3.0,
            ),
            [],
        ),
    ],
)
def test_notes_name_each_setting_that_does_nothing(settings: Settings, notes: list[str]) -> None:
    assert ineffective_options(settings, {}) == notes


def test_the_environment_counts_as_a_generator_endpoint() -> None:
    settings = Settings(ROOT, judge_budget=100)
    assert ineffective_options(settings, {"RAGMETRICS_GENERATOR_URL": "http://g"}) == []


def test_the_terminal_summary_shows_the_note(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        ini='ragmetrics_judge_url = "http://127.0.0.1:9"\nragmetrics_judge_budget = "100"\n',
        tests="def test_run(rag_eval, rag_run):\n    rag_eval.retrieval(rag_run)\n",
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", "-p", "no:xdist")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        [
            "ragmetrics: note: ragmetrics_judge_url has no effect: ragmetrics_judge is not set*",
            "ragmetrics: note: ragmetrics_judge_budget has no effect: nothing remote*",
        ]
    )


def test_a_replayed_recording_says_the_generator_makes_none_of_its_answers(
    tmp_path: Path,
) -> None:
    # A changed generator model beside an existing recording replayed the old answers silently.
    answers = tmp_path / "answers.jsonl"
    settings = Settings(
        tmp_path, generator_url="http://g", generator_model="gen-B", answers=answers
    )
    assert ineffective_options(settings, {}) == []  # no recording yet: answers are generated
    answers.write_text("")
    assert ineffective_options(settings, {}) == [
        "rag_pipeline replays the recorded answers in answers.jsonl: the generator "
        "(ragmetrics_generator_url, ragmetrics_generator_model) makes none of them; "
        "--ragmetrics-record-answers regenerates them with it"
    ]
    recording = dataclasses.replace(settings, record_answers=True)
    assert ineffective_options(recording, {}) == []
    by_environment = Settings(tmp_path, answers=answers)
    assert ineffective_options(by_environment, {"RAGMETRICS_GENERATOR_URL": "http://g"}) == [
        "rag_pipeline replays the recorded answers in answers.jsonl: the generator "
        "(RAGMETRICS_GENERATOR_URL) makes none of them; --ragmetrics-record-answers "
        "regenerates them with it"
    ]
