"""`ragmetrics generate`: the folder it writes is read back by the plugin and evaluated (serial
and -n 2 alike), its options, its review, and the HTTP generator against a fake server (faults
as for judges, concurrency, the cache, the budget, --dry-run)."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.layouts import load_dataset
from pytest_ragmetrics.errors import ConfigError, GeneratorError
from pytest_ragmetrics.testsets.http import HttpTestsetGenerator
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.paths import REPO
from tests.helpers.plugin_project import UNRELATED_PLUGINS
from tests.helpers.testset_data import corpus, write_corpus

FILES = ("queries.jsonl", "qrels/test.tsv", "corpus.jsonl")


def run(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = main(list(argv), out=out)
    return code, out.getvalue()


def generate(tmp_path: Path, *extra: str, out: str = "set") -> tuple[int, str]:
    source = write_corpus(tmp_path / "corpus")
    return run("generate", "--corpus", str(source), "--out", str(tmp_path / out), *extra)


def contents(folder: Path, *names: str) -> dict[str, str]:
    return {n: (folder / n).read_text() for n in names if (folder / n).exists()}


# -- offline, end to end ----------------------------------------------------------------------


def test_offline_folder_loads_and_records_provenance(tmp_path: Path) -> None:
    code, text = generate(tmp_path, "--queries", "9", "--seed", "4")
    assert code == 0, text
    assert "wrote" in text and "9 queries" in text
    dataset = load_dataset(tmp_path / "set")
    assert len(dataset.queries) == 9 and dataset.qrels.num_judgments == 9
    provenance = json.loads((tmp_path / "set" / "dataset.json").read_text())["provenance"]
    assert provenance["generator"]["generator"] == "offline" and provenance["seed"] == 4
    assert provenance["corpus"]["fingerprint"] == corpus().fingerprint
    assert [f["name"] for f in provenance["filters"]] == ["exact_duplicates", "answer_leaks"]


def test_the_same_seed_writes_the_same_bytes(tmp_path: Path) -> None:
    assert generate(tmp_path, "--queries", "8", "--seed", "1", out="a")[0] == 0
    assert generate(tmp_path, "--queries", "8", "--seed", "1", out="b")[0] == 0
    assert generate(tmp_path, "--queries", "8", "--seed", "2", out="c")[0] == 0
    a, b, c = (contents(tmp_path / x, *FILES, "review.jsonl") for x in "abc")
    assert a == b
    assert a["queries.jsonl"] != c["queries.jsonl"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--queries", "0"], "--queries must be a positive integer"),
        (["--queries", "5", "--candidates", "3"], "--candidates 3 is below --queries 5"),
        (["--queries", "5", "--url", "http://x"], "--url: an option of --generator http"),
        (["--queries", "5", "--judge-model", "m"], "--judge-model: only with --answerability"),
        (["--queries", "5", "--styles", "fact"], "unknown style 'fact'"),
        (["--queries", "5", "--accepted-only"], "--accepted-only: only with --apply-review"),
        (["--queries", "5", "--generator", "http", "--min-words", "3"], "--min-words: an option"),
    ],
)
def test_bad_options_are_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, _ = generate(tmp_path, *extra)
    assert code == 2
    assert message in capsys.readouterr().err
    assert not (tmp_path / "set").exists()


def test_refuses_a_folder_that_is_not_a_generated_set(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    mine = tmp_path / "set"
    mine.mkdir()
    (mine / "notes.txt").write_text("keep me")
    assert generate(tmp_path, "--queries", "3")[0] == 2
    assert "holds files but no test set" in capsys.readouterr().err
    assert (mine / "notes.txt").read_text() == "keep me" and len(list(mine.iterdir())) == 1
    source = write_corpus(tmp_path / "corpus")
    code, _ = run("generate", "--corpus", str(source), "--out", str(source / "x"), "--queries", "3")
    assert code == 2 and "overlaps the --corpus folder" in capsys.readouterr().err


def test_a_reviewed_file_is_not_overwritten_by_a_new_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate(tmp_path, "--queries", "4")[0] == 0
    review = tmp_path / "set" / "review.jsonl"
    rows = [json.loads(line) for line in review.read_text().splitlines()]
    rows[0]["decision"] = "reject"
    rows[1].update(decision="edit", query="A reworded question about lava?")
    review.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = review.read_text()
    assert generate(tmp_path, "--queries", "4", "--seed", "9")[0] == 2
    assert "2 rows carry a person's decision" in capsys.readouterr().err
    assert review.read_text() == before
    code, text = run("generate", "--out", str(tmp_path / "set"), "--apply-review", str(review))
    assert code == 0, text
    assert "1 rejected" in text and "1 edited" in text
    dataset = load_dataset(tmp_path / "set")
    assert rows[0]["query_id"] not in dataset.queries
    assert dataset.queries[rows[1]["query_id"]] == "A reworded question about lava?"
    code, text = run(
        "generate", "--out", str(tmp_path / "set"), "--apply-review", str(review), "--accepted-only"
    )
    assert code == 0 and list(load_dataset(tmp_path / "set").queries) == [rows[1]["query_id"]]
    provenance = json.loads((tmp_path / "set" / "dataset.json").read_text())["provenance"]
    assert provenance["review"]["accepted_only"] is True and provenance["queries"] == 1


def test_a_review_that_makes_two_queries_twins_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """An edit giving row 2 row 3's words wrote both, with contradicting qrels, while the
    summary still said "exact_duplicates: removed 0"."""
    assert generate(tmp_path, "--queries", "4")[0] == 0
    review = tmp_path / "set" / "review.jsonl"
    rows = [json.loads(line) for line in review.read_text().splitlines()]
    rows[1].update(decision="edit", query=rows[2]["query"].upper() + " ")
    review.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = contents(tmp_path / "set", *FILES)
    code, _ = run("generate", "--out", str(tmp_path / "set"), "--apply-review", str(review))
    err = capsys.readouterr().err
    assert code == 2
    assert f"{review}:3: query {rows[2]['query_id']!r} asks what query" in err
    assert f"{rows[1]['query_id']!r} (line 2) asks" in err
    assert contents(tmp_path / "set", *FILES) == before
    rows[2]["decision"] = "reject"  # one of the twins rejected: accepted
    review.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert run("generate", "--out", str(tmp_path / "set"), "--apply-review", str(review))[0] == 0


def test_a_review_that_keeps_no_query_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert generate(tmp_path, "--queries", "3")[0] == 0
    review = tmp_path / "set" / "review.jsonl"
    rows = [json.loads(line) for line in review.read_text().splitlines()]
    for row in rows:
        row["decision"] = "reject"
    review.write_text("".join(json.dumps(r) + "\n" for r in rows))
    before = contents(tmp_path / "set", *FILES)
    code, _ = run("generate", "--out", str(tmp_path / "set"), "--apply-review", str(review))
    assert code == 2
    assert "the review keeps no query (rejected 3, undecided 0)" in capsys.readouterr().err
    assert contents(tmp_path / "set", *FILES) == before


def test_answerability_judge_is_reported_until_calibrated(tmp_path: Path) -> None:
    assert generate(tmp_path, "--queries", "6", out="plain")[0] == 0
    ids = list(load_dataset(tmp_path / "plain").queries)
    docs = load_dataset(tmp_path / "plain").qrels.to_dict()
    verdicts = tmp_path / "verdicts.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"query_id": q, "doc_id": next(iter(docs[q])), "relevant": q != ids[1]})
            + "\n"
            for q in ids
        )
    )
    judge = ["--answerability-judge", "recorded", "--judge-verdicts", str(verdicts)]
    code, text = generate(tmp_path, "--queries", "6", *judge, out="gated")
    assert code == 0 and "answerability: NOT APPLIED" in text and "would remove 1 of 6" in text
    assert len(load_dataset(tmp_path / "gated").queries) == 6
    from pytest_ragmetrics.judges import RecordedRelevanceJudge
    from pytest_ragmetrics.judges.calibration import CalibrationResult, save_calibration

    calibration = tmp_path / "calibration.json"
    identity = RecordedRelevanceJudge(verdicts).identity()
    # A perfect kappa on 10 items is not trusted; on 20 it is.
    confusion = {"tp": 5, "fn": 0, "fp": 0, "tn": 5}
    save_calibration(calibration, CalibrationResult(identity, {}, 10, 1.0, 1.0, confusion))
    given = ("--calibration", str(calibration))
    code, text = generate(tmp_path, "--queries", "6", *judge, *given, out="few")
    assert code == 0 and "answerability: NOT APPLIED" in text
    assert "has no calibration on at least 20 labelled items, 5 of each class" in text
    confusion = {"tp": 10, "fn": 0, "fp": 0, "tn": 10}
    save_calibration(calibration, CalibrationResult(identity, {}, 20, 1.0, 1.0, confusion))
    code, text = generate(tmp_path, "--queries", "6", *judge, *given, out="applied")
    assert code == 0 and "answerability: removed 1 of 6" in text
    assert ids[1] not in load_dataset(tmp_path / "applied").queries


# -- read back by the plugin ------------------------------------------------------------------

PLUGIN_TESTS = """
import pytest


@pytest.mark.rag_threshold(recall_at_10=0.5)
def test_bm25(rag_eval, rag_run):
    rag_eval.retrieval(rag_run)


def test_each_query(rag_query):
    assert rag_query.ranking
"""


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": os.pathsep.join(sys.path)}
    plugins = ("-p", "no:cacheprovider", *UNRELATED_PLUGINS)
    command = [sys.executable, "-m", "pytest", "-q", *plugins, *args]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)


def _report(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    report.pop("created")
    return report


def test_the_plugin_evaluates_the_folder_serial_and_n2_alike(tmp_path: Path) -> None:
    assert generate(tmp_path, "--queries", "12", "--seed", "5", out="project/gen")[0] == 0
    root = tmp_path / "project"
    (root / "pyproject.toml").write_text(
        textwrap.dedent("""
        [tool.pytest.ini_options]
        ragmetrics_dataset = "gen"
        ragmetrics_retriever = "bm25"
        ragmetrics_metrics = "ndcg_at_10 recall_at_10"
        ragmetrics_cache_dir = ".ragmetrics/cache"
        """)
    )
    (root / "test_gen.py").write_text(textwrap.dedent(PLUGIN_TESTS))
    serial = _pytest(root, "-p", "no:xdist", "--ragmetrics-json=serial.json")
    assert serial.returncode == 0, serial.stdout + serial.stderr
    queries = len(load_dataset(root / "gen").queries)
    assert f"{queries + 1} passed" in serial.stdout  # one evaluation and one test per query
    parallel = _pytest(root, "-n", "2", "--ragmetrics-json=n2.json")
    assert parallel.returncode == 0, parallel.stdout + parallel.stderr
    assert _report(root / "serial.json") == _report(root / "n2.json")
    means = json.dumps(_report(root / "serial.json"))
    assert re.search(r'"recall_at_10": (0\.[5-9]|1\.0)', means)


def test_holes_pool_the_generated_folder(tmp_path: Path) -> None:
    assert generate(tmp_path, "--queries", "6")[0] == 0
    folder, run_file = tmp_path / "set", tmp_path / "bm25.trec"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    code, text = run("retrieve", "--dataset", str(folder), "--retriever", "bm25", "--out",
                     str(run_file), *cache)  # fmt: skip
    assert code == 0, text
    pool = tmp_path / "pool.jsonl"
    code, text = run("pool", "--dataset", str(folder), "--run", str(run_file), "--depth", "3",
                     "--out", str(pool))  # fmt: skip
    assert code == 0, text
    rows = [json.loads(line) for line in pool.read_text().splitlines()]
    judged = load_dataset(folder).qrels.to_dict()
    assert rows and all(r["doc_id"] not in judged[r["query_id"]] for r in rows)
    assert all(r["query"] and r["text"] for r in rows)  # what a person or judge reads


SUPPLEMENTED_TESTS = """
def test_bm25(rag_eval, rag_run):
    rag_eval.retrieval(rag_run)
"""


def test_pooled_labels_supplement_a_generated_set_in_the_plugin(tmp_path: Path) -> None:
    """Holes: generate -> retrieve -> pool -> judge-pool -> the plugin reports the metrics with
    the supplementary labels beside those on the generated qrels."""
    root = tmp_path / "project"
    assert generate(tmp_path, "--queries", "8", "--seed", "2", out="project/gen")[0] == 0
    folder, run_file, pool = root / "gen", tmp_path / "bm25.trec", tmp_path / "pool.jsonl"
    cache = ["--cache-dir", str(tmp_path / "cache")]
    code, text = run("retrieve", "--dataset", str(folder), "--retriever", "bm25", "--out",
                     str(run_file), *cache)  # fmt: skip
    assert code == 0, text
    code, text = run("pool", "--dataset", str(folder), "--run", str(run_file), "--depth", "5",
                     "--out", str(pool))  # fmt: skip
    assert code == 0, text
    # A person (or a judge) labels the pool: a document of the source's topic is relevant.
    rows = [json.loads(line) for line in pool.read_text().splitlines()]
    source = {q: next(iter(docs)) for q, docs in load_dataset(folder).qrels.to_dict().items()}
    for row in rows:
        row["relevant"] = row["doc_id"].split("-")[0] == source[row["query_id"]].split("-")[0]
    assert any(r["relevant"] for r in rows) and not all(r["relevant"] for r in rows)
    labelled = tmp_path / "labelled.jsonl"
    labelled.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, text = run("judge-pool", "--pool", str(pool), "--judge", "recorded", "--verdicts",
                     str(labelled), "--qrels-out", str(root / "supp.qrels"), *cache)  # fmt: skip
    assert code == 0, text
    (root / "pyproject.toml").write_text(
        textwrap.dedent("""
        [tool.pytest.ini_options]
        ragmetrics_dataset = "gen"
        ragmetrics_retriever = "bm25"
        ragmetrics_metrics = "precision_at_5 recall_at_10"
        ragmetrics_supplementary_qrels = "supp.qrels"
        """)
    )
    (root / "test_gen.py").write_text(textwrap.dedent(SUPPLEMENTED_TESTS))
    result = _pytest(root, "-p", "no:xdist", "--ragmetrics-json=report.json")
    assert result.returncode == 0, result.stdout + result.stderr
    (evaluation,) = _report(root / "report.json")["evaluations"]
    supplemented = evaluation["supplemented"]
    assert supplemented["labels_used"] == len(rows)
    # The generated qrels hold one relevant document a query; the labels add its neighbours.
    assert evaluation["metrics"]["precision_at_5"] <= 0.2
    assert supplemented["metrics"]["precision_at_5"] > evaluation["metrics"]["precision_at_5"]


# -- the HTTP generator -----------------------------------------------------------------------


def answer(prompt: str) -> str:
    """Questions quote the passage's first word; answers say "An answer."."""
    if prompt.rstrip().endswith("Question:"):
        passage = prompt.split("\n", 2)[1]
        return f"Question: What does the study of {passage.split()[0].lower()} find?"
    return "An answer from the passage."


def http_args(url: str, *extra: str) -> list[str]:
    return ["--generator", "http", "--url", url, "--model", "fake", *extra]


def test_http_writes_questions_answers_and_caches_them(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    with serve(answer=answer) as server:
        code, text = generate(tmp_path, "--queries", "6", *http_args(server.url), *cache)
        assert code == 0, text
        assert server.count == 12  # a question and a reference answer per query
        code, text = generate(tmp_path, "--queries", "6", *http_args(server.url), *cache, out="b")
        assert code == 0 and server.count == 12  # all from the cache
        assert "0 sent, 12 cached" in text
    dataset = load_dataset(tmp_path / "set")
    assert all(t.startswith("What does the study of") for t in dataset.queries.texts)
    multi = [q for q, docs in dataset.qrels.to_dict().items() if len(docs) == 2]
    assert multi  # the multi style names two related documents
    references = json.loads((tmp_path / "set" / "answers.jsonl").read_text().splitlines()[0])
    assert references["answer"] == "An answer from the passage."
    assert contents(tmp_path / "set", *FILES) == contents(tmp_path / "b", *FILES)
    body = server.requests[0]["body"]
    assert body["model"] == "fake" and body["temperature"] == 0.0 and body["seed"] == 0


def test_http_concurrency_gives_the_serial_result(tmp_path: Path) -> None:
    with serve(answer=answer) as server:
        for label, n in (("serial", "1"), ("four", "4")):
            extra = http_args(server.url, "--concurrency", n)
            assert generate(tmp_path, "--queries", "8", *extra, "--no-cache", out=label)[0] == 0
    assert contents(tmp_path / "serial", *FILES, "answers.jsonl") == contents(
        tmp_path / "four", *FILES, "answers.jsonl"
    )


def test_dry_run_counts_requests_and_sends_nothing(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    with serve(answer=answer) as server:
        code, text = generate(
            tmp_path, "--queries", "5", *http_args(server.url), *cache, "--dry-run"
        )
        assert code == 0 and server.count == 0 and not (tmp_path / "set").exists()
        assert "10 requests to send at most (5 questions, 5 reference answers)" in text
        assert generate(tmp_path, "--queries", "3", *http_args(server.url), *cache)[0] == 0
        code, text = generate(
            tmp_path, "--queries", "5", *http_args(server.url), *cache, "--dry-run"
        )
        assert "4 requests to send at most (2 questions, 2 reference answers)" in text
        assert server.count == 6


def _generator(url: str, cache: Path | None = None, **options: Any) -> HttpTestsetGenerator:
    from pytest_ragmetrics.cache import Cache
    from pytest_ragmetrics.transport import Endpoint

    given = {"url": url, "model": "fake", "backoff": 0, **options}
    return HttpTestsetGenerator(
        Endpoint.take(given), cache=None if cache is None else Cache(cache), answers=False,
        **given,
    )  # fmt: skip


def test_server_errors_are_retried(tmp_path: Path) -> None:
    script = [Reply(500, {"error": "busy"}), Reply(503, "overloaded")]
    with serve(script, answer=answer) as server:
        outcome = _generator(server.url).generate(corpus(), 2)
        assert len(outcome.candidates) == 2 and server.count == 4


def test_a_malformed_reply_names_the_query_and_is_not_cached(tmp_path: Path) -> None:
    with serve([Reply(200, "<html>not json</html>")], answer=answer) as server:
        generator = _generator(server.url, tmp_path / "cache")
        with pytest.raises(GeneratorError, match=r"writing query gen-1: .*not JSON"):
            generator.generate(corpus(), 1)
        outcome = _generator(server.url, tmp_path / "cache").generate(corpus(), 1)
        assert len(outcome.candidates) == 1 and server.count == 2


def test_empty_replies_drop_their_query_and_are_never_cached(tmp_path: Path) -> None:
    script = [Reply(body=completion("")), Reply(body=completion("   \n"))]
    with serve(script, answer=answer) as server:
        outcome = _generator(server.url, tmp_path / "cache").generate(corpus(), 3)
        assert outcome.dropped == {"gen-1": "empty reply", "gen-2": "empty reply"}
        assert [c.query_id for c in outcome.candidates] == ["gen-3"]
        again = _generator(server.url, tmp_path / "cache").generate(corpus(), 3)
        assert len(again.candidates) == 3 and server.count == 3 + 2  # only the empty ones asked


def test_a_reply_without_a_question_drops_its_query(tmp_path: Path) -> None:
    with serve([Reply(body=completion("Question: ?"))], answer=answer) as server:
        outcome = _generator(server.url).generate(corpus(), 2)
    assert outcome.dropped == {"gen-1": "no question in the reply"}


def test_the_budget_stops_before_it_is_exceeded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serve(answer=answer) as server:
        code, _ = generate(tmp_path, "--queries", "5", *http_args(server.url), "--budget", "200")
        assert code == 2 and server.count == 0
    assert "token budget (--budget = 200)" in capsys.readouterr().err
    assert not (tmp_path / "set").exists()


def test_a_bad_prompt_folder_names_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    prompts = tmp_path / "prompts"
    prompts.mkdir()
    (prompts / "fact.txt").write_text("Write a question about {passag}.")
    code, _ = generate(
        tmp_path, "--queries", "2", *http_args("http://127.0.0.1:9", "--prompts", str(prompts))
    )
    assert code == 2
    assert re.search(
        r"--prompts .*fact\.txt, line 1: unknown field \{passag\}", capsys.readouterr().err
    )


def statement(prompt: str) -> str:
    """Statements name the passage's first word after a lead-in the generator cuts."""
    word = prompt.split()[0].lower()
    if "what does this study find" in prompt:
        return f"This study finds that {word} levels rose over ten years."
    if "what problem does this study address" in prompt:
        return f"This study addresses a problem related to measuring {word} in regions."
    return "Question: What is the answer to this question?"


def test_claim_and_topic_styles_write_statements_without_answers(tmp_path: Path) -> None:
    cache = ["--cache-dir", str(tmp_path / "cache")]
    styles = ["--styles", "claim,topic"]
    with serve(answer=statement) as server:
        code, text = generate(tmp_path, "--queries", "6", *http_args(server.url), *styles, *cache)
        assert code == 0, text
        assert server.count == 6  # one request a query: a statement has no reference answer
        systems = {r["body"]["messages"][0]["content"] for r in server.requests}
        assert systems == {"You are a helpful assistant."}
        code, text = generate(
            tmp_path, "--queries", "8", *http_args(server.url), *styles, *cache, "--dry-run"
        )
        assert "2 requests to send at most (2 questions, 0 reference answers)" in text
    dataset = load_dataset(tmp_path / "set")
    texts = dataset.queries.texts
    assert all(not t.lower().startswith("this study") for t in texts)
    assert any(t.endswith("levels rose over ten years.") for t in texts)
    assert any(t.startswith("measuring ") for t in texts)
    assert not (tmp_path / "set" / "answers.jsonl").exists()
    styles_kept = json.loads((tmp_path / "set" / "dataset.json").read_text())["provenance"]
    assert styles_kept["styles"] == {"claim": 3, "topic": 3}


def test_the_completions_api_sends_one_text_and_keys_its_cache_apart(tmp_path: Path) -> None:
    """A base model (benchmarks/prompts/base-model, the folder the τ study's Gemma run uses):
    each request is one prompt (statement system prompt, blank line, the few-shot template),
    sent to /v1/completions; its replies are not the chat API's in the cache."""
    cache = ["--cache-dir", str(tmp_path / "cache")]
    claim = ["--styles", "claim", "--prompts", str(REPO / "benchmarks/prompts/base-model")]

    def finding(prompt: str) -> str:
        first = prompt.split("Abstract: ")[-1].split()[0]  # the passage's first word
        return f" {first} is what it finds.\nAbstract: a continuation"

    with serve(answer=finding) as server:
        extra = http_args(server.url, "--api", "completions", *claim, *cache)
        code, text = generate(tmp_path, "--queries", "3", *extra)
        assert code == 0, text
        assert {r["path"] for r in server.requests} == {"/v1/completions"}
        prompt = server.requests[0]["body"]["prompt"]
        system = (REPO / "benchmarks/prompts/base-model/statement_system.txt").read_text()
        assert prompt.startswith(system.strip() + "\n\nAbstract: ")
        assert prompt.count("\nClaim:") == 3  # two worked examples, then this passage's
        assert prompt.rstrip().endswith("Claim:") and "messages" not in server.requests[0]["body"]
        code, text = generate(tmp_path, "--queries", "3", *http_args(server.url, *claim, *cache),
                              out="chat")  # fmt: skip
        assert code == 0 and "3 sent, 0 cached" in text  # the chat API's replies are other keys
    texts = load_dataset(tmp_path / "set").queries.texts
    assert len(texts) == 3 and all(t.endswith(" is what it finds.") for t in texts)
    generator = json.loads((tmp_path / "set" / "dataset.json").read_text())["provenance"]
    assert generator["generator"]["api"] == "completions"
    code, _ = generate(tmp_path, "--queries", "2", "--api", "completions", out="offline")
    assert code == 2


def test_a_base_model_reads_wrapped_passages_as_prose() -> None:
    """Through /v1/completions the passage's wrapped lines are joined (its paragraphs kept), so
    the model does not copy a line end into the query's first line; chat sends it as it is."""
    from pytest_ragmetrics.data.model import Corpus

    wrapped = Corpus(
        ["d1"],
        ["Flutter of wings"],
        ["thin wings flutter\nat low speed .\n\n  a tip\n mass helps ."],
    )
    job = HttpTestsetGenerator(_endpoint("completions"), styles=["topic"]).jobs(wrapped, 1)[0]

    def passage(api: str) -> str:
        generator = HttpTestsetGenerator(_endpoint(api), styles=["topic"])
        return generator.question_messages(wrapped, job)[1]["content"].split("\n\nIn one")[0]

    assert passage("completions") == (
        "Flutter of wings thin wings flutter at low speed .\n\na tip mass helps ."
    )
    assert passage("chat") == "Flutter of wings " + wrapped.texts[0]


def _endpoint(api: str) -> Any:
    from pytest_ragmetrics.transport import Endpoint

    return Endpoint("http://127.0.0.1:9", "m", api=api)


def test_a_statement_reply_without_content_drops_its_query(tmp_path: Path) -> None:
    with serve([Reply(body=completion("This study finds that"))], answer=statement) as server:
        outcome = _generator(server.url, styles=["claim"]).generate(corpus(), 2)
    assert outcome.dropped == {"gen-1": "no statement in the reply"}
    assert len(outcome.candidates) == 1


def test_offline_remove_query_writes_the_corpus_copy(tmp_path: Path) -> None:
    code, text = generate(
        tmp_path, "--queries", "5", "--styles", "sentence", "--remove-query", "1",
        "--sentence-pick", "conclusion", "--seed", "3",
    )  # fmt: skip
    assert code == 0, text
    assert "corpus: a copy without the removed queries (5 documents changed)" in text
    dataset = load_dataset(tmp_path / "set")
    for qid, query in dataset.queries.items():
        (doc,) = dataset.qrels.to_dict()[qid]
        assert query not in dataset.corpus[doc].text and query in corpus()[doc].text
    provenance = json.loads((tmp_path / "set" / "dataset.json").read_text())["provenance"]
    generator = provenance["generator"]
    assert (generator["remove_query"], generator["sentence_pick"]) == (1.0, "conclusion")


def test_bad_remove_query_is_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert generate(tmp_path, "--queries", "3", "--remove-query", "1.5")[0] == 2
    assert "remove_query is a share in [0, 1], got 1.5" in capsys.readouterr().err
    assert generate(tmp_path, "--queries", "3", "--cut-echo", "1")[0] == 2
    assert "cut_echo cuts more of a cut query's document; give remove_query" in (
        capsys.readouterr().err
    )


def test_cut_echo_cuts_the_restating_sentence_in_the_copy(tmp_path: Path) -> None:
    extra = ("--queries", "4", "--styles", "title", "--remove-query", "1", "--cut-echo", "1",
             "--echo-overlap", "0.5")  # fmt: skip
    code, text = generate(tmp_path, *extra)
    assert code == 0, text
    dataset = load_dataset(tmp_path / "set")
    for row in map(json.loads, (tmp_path / "set" / "review.jsonl").read_text().splitlines()):
        (echo,) = row["echoes_removed_from_source"]
        (doc,) = row["relevant"]
        assert echo in corpus()[doc].text and echo not in dataset.corpus[doc].text
    provenance = json.loads((tmp_path / "set" / "dataset.json").read_text())["provenance"]
    assert (provenance["generator"]["cut_echo"], provenance["generator"]["echo_overlap"]) == (
        1,
        0.5,
    )
    code, _ = generate(tmp_path, "--queries", "2", "--remove-query", "1", "--echo-overlap", "0.5",
                       out="again")  # fmt: skip
    assert code == 2  # a threshold for echoes that --cut-echo does not cut


@pytest.mark.parametrize("split", ["../../victim/qrels/test", "a/b", "..", ".hidden", "-x"])
def test_a_split_is_a_name_never_a_path(
    tmp_path: Path, split: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # --split ../../victim/qrels/test replaced another dataset's qrels, exit 0.
    victim = tmp_path / "victim" / "qrels" / "test.tsv"
    victim.parent.mkdir(parents=True)
    victim.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    before = victim.read_bytes()
    code, text = generate(tmp_path, "--queries", "3", f"--split={split}", out="x/y")
    assert code == 2, text
    assert f"--split: split {split!r} must be letters, digits" in capsys.readouterr().err
    assert victim.read_bytes() == before and not (tmp_path / "x").exists()
    # Read the same way: load_dataset and the commands build qrels/<split>.tsv from it too.
    assert generate(tmp_path, "--queries", "3")[0] == 0
    with pytest.raises(ConfigError, match=r"load_dataset\(.*split .* must be letters"):
        load_dataset(tmp_path / "set", split)
    code, text = run(
        "evaluate", "--dataset", str(tmp_path / "set"), f"--split={split}", "--run", "r"
    )
    assert code == 2 and "must be letters, digits" in capsys.readouterr().err, text


@pytest.mark.parametrize(
    "argv",
    [
        ["generate", "--corpus", "c", "--out", "o", "--seed", "1_000"],
        ["generate", "--corpus", "c", "--out", "o", "--queries", "\u0663"],
        ["generate", "--corpus", "c", "--out", "o", "--remove-query", "1_0"],
        ["pool", "--qrels", "q", "--run", "r", "--out", "o", "--depth", "1_0"],
    ],
)
def test_number_flags_refuse_what_only_python_reads(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # int("1_000") is 1000 and int("\u0663") is 3; options.py's settings and the data readers
    # refuse both, and so does every flag now: a usage error naming the flag.
    with pytest.raises(SystemExit) as exit_info:
        main(argv, out=io.StringIO())
    assert exit_info.value.code == 2
    assert f"argument {argv[-2]}: invalid" in capsys.readouterr().err


def test_no_query_is_an_error_and_a_short_set_names_its_cause(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    (empty / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"d{i}", "title": "", "text": ""}) + "\n" for i in range(3))
    )
    code, _ = run(
        "generate", "--corpus", str(empty), "--out", str(tmp_path / "none"), "--queries", "5"
    )
    assert code == 2 and not (tmp_path / "none").exists()
    err = capsys.readouterr().err
    assert "no query to write, nothing was written: the generator made only 0 candidates" in err
    # The corpus used up: more candidates would not help, and the note does not say they would.
    code, out = generate(tmp_path, "--queries", "1000", "--candidates", "5000")
    assert code == 0 and "the generator made only" in out and "raise --candidates" not in out
