"""A judge's prompts, temperature and seed outside pytest: build_judge / build_relevance_judge
take a prompt folder's texts, and `ragmetrics calibrate` and `ragmetrics judge-pool` take
--prompts DIR, --temperature and --judge-seed, so that a judge calibrated from the command line
has exactly the identity of the plugin's configured judge (the calibration file is keyed by
it)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.errors import JudgeError
from pytest_ragmetrics.judges.calibration import load_calibration
from pytest_ragmetrics.judges.factory import build_judge, build_relevance_judge
from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL
from pytest_ragmetrics.plugin.fixtures import configured_judge
from pytest_ragmetrics.plugin.settings import Settings
from pytest_ragmetrics.prompts import JUDGE_ROLES, read_prompts
from tests.helpers.fake_openai import serve
from tests.helpers.plugin_project import write_dataset

URL = "http://127.0.0.1:9"  # never contacted
PROMPTS = {
    "system.txt": "SYSTEM: yes or no.\n",
    "support.txt": "Claim: {claim}\nContext: {context}\nSupported?\n",
    "relevance.txt": "Q {query} A {answer}\n",
    "agreement.txt": "A {answer} R {reference}\n",
    "context.txt": "Question: {query}\nPassage: {passage}\nRelevant?\n",
    "context_system.txt": "You grade passages.\n",
}


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY):
        monkeypatch.delenv(name, raising=False)


def prompt_folder(tmp_path: Path, files: dict[str, str] = PROMPTS) -> Path:
    root = tmp_path / "judge-prompts"
    root.mkdir()
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def plugin_judge(url: str, folder: Path, **settings: Any) -> Any:
    """The judge ragmetrics_judge = http with these ragmetrics_judge_* settings builds."""
    return configured_judge(
        Settings(
            rootdir=folder.parent,
            judge="http",
            judge_url=url,
            judge_model="m",
            judge_prompts=folder,
            judge_prompt_texts=read_prompts(folder, JUDGE_ROLES),
            **settings,
        )
    )


def test_build_judge_takes_every_role_and_the_relevance_judge_the_context_ones(
    tmp_path: Path,
) -> None:
    prompts = read_prompts(prompt_folder(tmp_path), JUDGE_ROLES)
    judge: Any = build_judge("http", url=URL, model="m", prompts=prompts, seed=3, temperature=0.4)
    identity = judge.identity()
    assert identity["rubric"].startswith("system: SYSTEM: yes or no.\n\nclaim question: Claim:")
    assert "relevance question: Q {query} A {answer}" in identity["rubric"]
    assert identity["parameters"]["seed"] == 3 and identity["parameters"]["temperature"] == 0.4
    assert (
        "agreement question: A {answer} R {reference}"
        in (judge.question_identity("agreement")["rubric"])
    )
    relevance = build_relevance_judge("http", url=URL, model="m", prompts=prompts, seed=3,
                                      temperature=0.4)  # fmt: skip
    assert relevance.identity() == judge.question_identity("context")
    assert relevance.identity()["rubric"].startswith(
        "system: You grade passages.\n\nrelevance question: Question: {query}\nPassage:"
    )
    with pytest.raises(JudgeError, match="prompts are only used by the http judge, not embed"):
        build_judge("embedding", prompts=prompts)
    with pytest.raises(JudgeError, match="only used by the http relevance judge, not recorded"):
        build_relevance_judge("recorded", verdicts="v.jsonl", prompts=prompts)


def calibrate(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(["calibrate", *argv], out=out)
    return code, out.getvalue()


def test_calibrate_with_prompts_has_the_plugin_judge_identity(tmp_path: Path) -> None:
    folder = prompt_folder(tmp_path)
    labels = tmp_path / "labels.jsonl"
    rows = [
        {"id": "a", "claim": "SUPPORTED one", "context_sentences": ["s"], "label": "SUPPORT"},
        {"id": "b", "claim": "other", "context_sentences": ["s"], "label": "NOINFO"},
    ]
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    store = tmp_path / "calibration.json"
    with serve() as server:
        code, out = calibrate(
            "--judge", "http", "--url", server.url, "--model", "m", "--labels", str(labels),
            "--prompts", str(folder), "--temperature", "0.3", "--judge-seed", "4",
            "--save", str(store), "--no-cache", "--format", "json",
        )  # fmt: skip
        assert code == 0, out
        bodies = [r["body"] for r in server.requests]
        judge = plugin_judge(server.url, folder, judge_temperature=0.3, judge_seed=4)
    assert [b["messages"][0]["content"] for b in bodies] == ["SYSTEM: yes or no."] * 2
    assert bodies[0]["messages"][1]["content"] == "Claim: SUPPORTED one\nContext: s\nSupported?"
    assert {(b["temperature"], b["seed"]) for b in bodies} == {(0.3, 4)}
    assert json.loads(out)["judge"] == judge.identity()
    assert load_calibration(store, judge.identity()) is not None
    # without the same seed the plugin's judge is another judge: not calibrated
    other = plugin_judge(URL, folder, judge_temperature=0.3)
    assert load_calibration(store, other.identity()) is None


def test_calibrate_relevance_with_prompts_calibrates_the_context_question(
    tmp_path: Path,
) -> None:
    folder = prompt_folder(tmp_path)
    data = write_dataset(tmp_path)
    store = tmp_path / "calibration.json"
    with serve(answer=lambda prompt: "yes") as server:
        code, out = calibrate(
            "--judge", "http", "--question", "relevance", "--dataset", str(data),
            "--url", server.url, "--model", "m", "--prompts", str(folder), "--judge-seed", "2",
            "--save", str(store), "--no-cache", "--format", "json",
        )  # fmt: skip
        assert code == 0, out
        systems = {r["body"]["messages"][0]["content"] for r in server.requests}
        first = server.requests[0]["body"]["messages"][1]["content"]
    assert systems == {"You grade passages."}
    assert first.startswith("Question: which animal ") and first.endswith("\nRelevant?")
    judge = plugin_judge(URL, folder, judge_seed=2)
    assert load_calibration(store, judge.question_identity("context")) is not None


def test_judge_pool_with_prompts_asks_the_context_question(tmp_path: Path) -> None:
    folder = prompt_folder(tmp_path)
    pool = tmp_path / "pool.jsonl"
    rows = [
        {"query_id": "q1", "doc_id": "d2", "query": "which animal purrs", "text": "Dogs bark."},
        {"query_id": "q2", "doc_id": "d1", "query": "which animal barks", "text": "Cats purr."},
    ]
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = io.StringIO()
    with serve(answer=lambda prompt: "no") as server:
        code = main(
            ["judge-pool", "--pool", str(pool), "--judge", "http", "--url", server.url,
             "--model", "m", "--prompts", str(folder), "--temperature", "0.5",
             "--qrels-out", str(tmp_path / "supp.qrels"), "--no-cache", "--format", "json"],
            out=out,
        )  # fmt: skip
        assert code == 0
        asked = [r["body"]["messages"] for r in server.requests]
    assert [m[0]["content"] for m in asked] == ["You grade passages."] * 2
    assert asked[0][1]["content"] == "Question: which animal purrs\nPassage: Dogs bark.\nRelevant?"
    judge = plugin_judge(URL, folder, judge_temperature=0.5)
    assert json.loads(out.getvalue())["judge"] == judge.question_identity("context")


@pytest.mark.parametrize(
    ("argv", "files", "message"),
    [
        (["--judge", "embedding", "--prompts", "{folder}"], PROMPTS,
         "ragmetrics calibrate: error: --prompts: not an option of --judge embedding"),
        (["--judge", "recorded", "--verdicts", "v.jsonl", "--judge-seed", "1"], PROMPTS,
         "ragmetrics calibrate: error: --judge-seed: not an option of --judge recorded"),
        (["--judge", "http", "--url", URL, "--prompts", "{folder}"],
         {"support.txt": "{claim}\n{context} {evidence}"},
         "ragmetrics calibrate: error: --prompts {folder}/support.txt, line 2: unknown field "
         "{evidence}; the fields are {claim} and {context}; to write a literal brace, double "
         "it: {{ or }}"),
        (["--judge", "http", "--url", URL, "--prompts", "{folder}"], {"judge.txt": "x"},
         "ragmetrics calibrate: error: --prompts {folder}/judge.txt: not a prompt file"),
        (["--judge", "http", "--url", URL, "--prompts", "{folder}/none"], PROMPTS,
         "ragmetrics calibrate: error: --prompts {folder}/none: no such folder"),
        (["--judge", "http", "--url", URL, "--temperature", "-1"], PROMPTS,
         "ragmetrics calibrate: error: argument --temperature: '-1' must be at least 0"),
        (["--judge", "http", "--url", URL, "--judge-seed", "x"], PROMPTS,
         "ragmetrics calibrate: error: argument --judge-seed: 'x' must be an integer"),
    ],
)  # fmt: skip
def test_calibrate_prompt_errors_name_the_flag_and_file(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    files: dict[str, str],
    message: str,
) -> None:
    folder = prompt_folder(tmp_path, files)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"claim": "c", "context_sentences": ["s"], "label": "SUPPORT"}) + "\n"
    )
    argv = [a.replace("{folder}", str(folder)) for a in argv]
    # argparse refuses a bad number itself (exit 2 too)
    with pytest.raises(SystemExit) if "argument" in message else contextlib.nullcontext():
        assert calibrate(*argv, "--labels", str(labels), "--no-cache")[0] == 2
    err = capsys.readouterr().err
    assert message.replace("{folder}", str(folder)) in err


@pytest.mark.parametrize(
    ("command", "flag"),
    [
        (["calibrate", "--labels", "{labels}", "--save"], "--save"),
        (["judge-pool", "--pool", "{pool}", "--qrels-out"], "--qrels-out"),
        (["judge-pool", "--pool", "{pool}", "--qrels-out", "{tmp}/s.qrels", "--out"], "--out"),
    ],
)
def test_an_output_inside_the_prompts_folder_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: list[str], flag: str
) -> None:
    """Writing a result into the --prompts folder could replace a prompt (system.txt): the
    command stops before anything is asked or written, naming the flag and the folder."""
    folder = prompt_folder(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text(
        json.dumps({"claim": "c", "context_sentences": ["s"], "label": "SUPPORT"}) + "\n"
    )
    pool = tmp_path / "pool.jsonl"
    pool.write_text(json.dumps({"query_id": "q", "doc_id": "d", "query": "q", "text": "t"}) + "\n")
    names = {"{labels}": str(labels), "{pool}": str(pool), "{tmp}": str(tmp_path)}
    argv = [names.get(a, a).replace("{tmp}", str(tmp_path)) for a in command]
    target = folder / "system.txt"
    with serve(answer=lambda prompt: "yes") as server:
        code = main(
            [*argv, str(target), "--judge", "http", "--url", server.url, "--model", "m",
             "--prompts", str(folder), "--no-cache"],
            out=io.StringIO(),
        )  # fmt: skip
        assert server.count == 0
    assert code == 2
    err = capsys.readouterr().err
    assert f"{flag} {target}: inside the --prompts folder {folder}" in err
    assert target.read_text() == PROMPTS["system.txt"]
