"""Pooling: `ragmetrics pool` (unjudged pairs in the runs' top depth), `ragmetrics judge-pool`
(relevance labels, supplementary qrels with the judge in a header), the merge (human judgments
win), `evaluate --supplementary-qrels`, `calibrate --question relevance`, and the plugin's
ragmetrics_supplementary_qrels with and without xdist; bad files name their line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main
from pytest_ragmetrics.data.model import Qrels, Run
from pytest_ragmetrics.errors import DataFormatError
from pytest_ragmetrics.judges.http import ENV_API_KEY, ENV_MODEL, ENV_URL
from pytest_ragmetrics.pooling import (
    HEADER_PREFIX,
    build_pool,
    read_pool,
    read_supplementary_qrels,
    supplement,
)
from pytest_ragmetrics.provenance import DATASET_PREFIX
from tests.helpers.fake_openai import Reply, completion, serve
from tests.helpers.plugin_project import SERIAL_AND_N2, make_project

QRELS = "q1 0 d1 1\nq1 0 d2 0\nq2 0 d2 1\nq2 0 d9 -1\n"
RUN_A = "q1 Q0 d3 1 9.0 A\nq1 Q0 d1 2 8.0 A\nq1 Q0 d4 3 7.0 A\nq2 Q0 d9 1 9.0 A\nq2 Q0 d2 2 8.0 A\n"
RUN_B = "q1 Q0 d4 1 9.0 B\nq1 Q0 d5 2 8.0 B\nq2 Q0 d1 1 9.0 B\nq3 Q0 d1 1 9.0 B\n"


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in (ENV_URL, ENV_MODEL, ENV_API_KEY, "HTTP_PROXY", "http_proxy"):
        monkeypatch.delenv(name, raising=False)


def dataset(root: Path) -> Path:
    """A BEIR folder with the qrels above (and texts: 'purr' is about cats)."""
    data = root / "data"
    (data / "qrels").mkdir(parents=True)
    docs = {
        "d1": "cats purr",
        "d2": "dogs bark",
        "d3": "cats purr loudly",
        "d4": "fish swim",
        "d5": "a cat that purrs",
        "d9": "birds sing",
    }
    (data / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": d, "title": "", "text": t}) + "\n" for d, t in docs.items())
    )
    (data / "queries.jsonl").write_text(
        json.dumps({"_id": "q1", "text": "which animal purrs"})
        + "\n"
        + json.dumps({"_id": "q2", "text": "which animal barks"})
        + "\n"
    )
    rows = [line.split() for line in QRELS.splitlines()]
    (data / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, _, d, g in rows)
    )
    return data


def files(tmp_path: Path) -> dict[str, Path]:
    out = {"qrels": tmp_path / "qrels.txt", "a": tmp_path / "a.trec", "b": tmp_path / "b.trec"}
    out["qrels"].write_text(QRELS)
    out["a"].write_text(RUN_A)
    out["b"].write_text(RUN_B)
    return out


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(args)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_pool_lists_unjudged_pairs_of_judged_queries_in_the_union_of_top_depth() -> None:
    qrels = Qrels.from_dict({"q1": {"d1": 1, "d2": 0}, "q2": {"d2": 1, "d9": -1}})
    a = Run.from_rankings({"q1": ["d3", "d1", "d4"], "q2": ["d9", "d2"]})
    b = Run.from_rankings({"q1": ["d4", "d5"], "q2": ["d1"], "q3": ["d1"]})
    entries = build_pool(qrels, [("A", a), ("B", b)], 2)
    pairs = [(e.query_id, e.doc_id, dict(e.runs)) for e in entries]
    # d1/d2 judged; d4 is 3rd in A (beyond depth 2) but 1st in B; -1 counts as unjudged;
    # q3 is not judged, so not pooled.
    assert pairs == [
        ("q1", "d3", {"A": 1}),
        ("q1", "d4", {"B": 1}),
        ("q1", "d5", {"B": 2}),
        ("q2", "d1", {"B": 1}),
        ("q2", "d9", {"A": 1}),
    ]
    assert all(e.query is None and e.text is None for e in entries)


def test_supplement_human_judgments_win_and_minus_one_gives_way() -> None:
    human = Qrels.from_dict({"q1": {"d1": 1, "d2": 0}, "q2": {"d9": -1}})
    extra = Qrels.from_dict({"q1": {"d1": 0, "d3": 1}, "q2": {"d9": 1}, "q3": {"d1": 1}})
    merged, used = supplement(human, extra)
    assert merged.to_dict() == {"q1": {"d1": 1, "d2": 0, "d3": 1}, "q2": {"d9": 1}}
    assert used == 2


def test_pool_then_judge_pool_then_evaluate_with_labels(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = files(tmp_path)
    data = dataset(tmp_path)
    pool = tmp_path / "pool.jsonl"
    code, out, err = run(
        ["pool", "--dataset", str(data), "--run", str(f["a"]), "--run", str(f["b"]),
         "--depth", "2", "--out", str(pool)],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert "5 unjudged pairs over 2 queries" in out
    rows = [json.loads(line) for line in pool.read_text().splitlines()]
    assert rows[0]["query"] == "which animal purrs" and rows[0]["text"] == "cats purr loudly"
    assert rows[0]["relevant"] is None and rows[0]["runs"] == {"A": 1}
    # A person fills in one row; the judge must keep it.
    rows[1]["relevant"] = False
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))

    usage = {"prompt_tokens": 30, "completion_tokens": 1}
    supplementary = tmp_path / "supp.qrels"
    script = [Reply(body={**completion("yes"), "usage": usage}) for _ in range(4)]
    with serve(script) as server:
        code, out, err = run(
            ["judge-pool", "--pool", str(pool), "--judge", "http", "--url", server.url,
             "--model", "m", "--concurrency", "2", "--qrels-out", str(supplementary),
             "--cache-dir", str(tmp_path / "cache"), "--format", "json"],
            capsys,
        )  # fmt: skip
        assert code == 0, err
        summary = json.loads(out)
        assert server.count == 4  # 5 rows, one filled in by a person
    assert (summary["judged"], summary["kept"], summary["asked"]) == (4, 1, 4)
    assert summary["prompt_tokens"] == 120 and summary["completion_tokens"] == 4
    assert summary["labels_written"] == 5 and summary["relevant"] == 4
    judged = [json.loads(line) for line in pool.read_text().splitlines()]
    assert judged[1]["relevant"] is False and judged[1]["judge"] is None  # the person's
    assert judged[0]["judge"]["name"] == "http-relevance" and judged[0]["verdict"] == "yes"
    text = supplementary.read_text()
    assert text.startswith(HEADER_PREFIX)
    header = json.loads(text.splitlines()[0][len(HEADER_PREFIX) :])
    assert header["name"] == "mixed"  # a person and a judge labelled rows
    labels = read_supplementary_qrels(supplementary).qrels.to_dict()
    assert labels["q1"] == {"d3": 1, "d4": 0, "d5": 1}
    # evaluate beside the human qrels
    code, out, err = run(
        ["evaluate", "--qrels", str(f["qrels"]), "--run", str(f["b"]), "-m", "P_2",
         "--supplementary-qrels", str(supplementary), "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    document = json.loads(out)
    assert document["metrics"]["precision_at_2"] == 0.0  # B's documents are all unjudged
    # with labels: q1 d4 (the person's 0), d5 (1) -> 1/2; q2 d1 (1) alone -> 1/2
    assert document["supplemented"]["metrics"]["precision_at_2"] == 0.5
    assert document["supplemented"]["labels_used"] == 5


def test_judge_pool_with_the_recorded_judge_names_the_judge_in_the_header(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "pool.jsonl"
    row = {"query_id": "q1", "doc_id": "d3", "query": "q", "text": "t", "relevant": None}
    pool.write_text(json.dumps(row) + "\n")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"query_id": "q1", "doc_id": "d3", "relevant": True}) + "\n")
    out_qrels = tmp_path / "s.qrels"
    code, _, err = run(
        ["judge-pool", "--pool", str(pool), "--judge", "recorded", "--verdicts", str(verdicts),
         "--qrels-out", str(out_qrels), "--out", str(tmp_path / "judged.jsonl")],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    read = read_supplementary_qrels(out_qrels)
    assert read.judge is not None and read.judge["name"] == "recorded-relevance"
    assert read.qrels.to_dict() == {"q1": {"d3": 1}}
    assert json.loads(pool.read_text())["relevant"] is None  # --out: the pool is left as is


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{nope", "not valid JSON"),
        ('{"doc_id": "d1"}', "'query_id' must be a non-empty string"),
        ('{"query_id": "q1", "doc_id": "d1", "relevant": "yes"}', "'relevant' must be true"),
        ('{"query_id": "q1", "doc_id": "d1", "runs": {"A": "1"}}', "'runs' must map"),
        ('{"query_id": "q1", "doc_id": "d1", "judge": "me"}', "'judge' must be a judge"),
        ('{"query_id": "q1", "doc_id": "d1", "prompt_tokens": -1}', "'prompt_tokens' must"),
        ('{"query_id": "q0", "doc_id": "d0"}', "already appears on line 1"),
    ],
)
def test_bad_pool_lines_name_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    pool = tmp_path / "pool.jsonl"
    pool.write_text('{"query_id": "q0", "doc_id": "d0", "query": "x", "text": "y"}\n' + line + "\n")
    with pytest.raises(DataFormatError, match=message) as info:
        read_pool(pool)
    assert str(info.value).startswith(f"{pool}:2: ")
    code, _, err = run(
        ["judge-pool", "--pool", str(pool), "--judge", "embedding",
         "--qrels-out", str(tmp_path / "s.qrels")],
        capsys,
    )  # fmt: skip
    assert code == 2 and f"{pool}:2: " in err and "Traceback" not in err


def test_a_pool_without_texts_cannot_be_judged(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = files(tmp_path)
    pool = tmp_path / "pool.jsonl"
    code, out, _ = run(
        ["pool", "--qrels", str(f["qrels"]), "--run", str(f["a"]), "--out", str(pool)], capsys
    )
    assert code == 0 and "carry no texts" in out
    code, _, err = run(
        ["judge-pool", "--pool", str(pool), "--judge", "embedding",
         "--qrels-out", str(tmp_path / "s.qrels")],
        capsys,
    )  # fmt: skip
    assert code == 2
    assert f"{pool}:1: query 'q1', document 'd3' has no query; build the pool with --dataset" in err


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("q1 0 d1 1\n", ":1: supplementary qrels start with a line"),
        (HEADER_PREFIX + "not json\nq1 0 d1 1\n", ":1: the judge in the header is not"),
        (HEADER_PREFIX + "[" * 100_000 + "\nq1 0 d1 1\n", ":1: the judge in the header is not"),
        (HEADER_PREFIX + '{"a": 1, "a": 2}\nq1 0 d1 1\n', ":1: the judge in the header is not"),
        (
            HEADER_PREFIX + '{"name": "j"}\n' + DATASET_PREFIX + "{" * 100_000 + "\n",
            ":2: the dataset in the header must be",
        ),
        (HEADER_PREFIX + '{"name": "j"}\nq1 0 d1\n', ":2: "),
        (HEADER_PREFIX + '{"name": "j"}\nq1 0 d1 x\n', ":2: grade 'x' is not an integer"),
    ],
)
def test_bad_supplementary_qrels_name_file_and_line(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "s.qrels"
    path.write_text(text)
    with pytest.raises(DataFormatError, match=message):
        read_supplementary_qrels(path)


def test_pool_refuses_bad_arguments(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    f = files(tmp_path)
    base = ["pool", "--qrels", str(f["qrels"]), "--run", str(f["a"])]
    code, _, err = run([*base, "--out", str(f["a"])], capsys)
    assert code == 2 and "that is the --run" in err
    code, _, err = run([*base, "--depth", "0", "--out", str(tmp_path / "p.jsonl")], capsys)
    assert code == 2 and "--depth must be a positive integer" in err
    code, _, err = run(["pool", "--run", str(f["a"]), "--out", str(tmp_path / "p")], capsys)
    assert code == 2 and "give --qrels FILE or --dataset DIR" in err


def test_calibrate_relevance_samples_negatives_when_qrels_have_only_positives(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_ragmetrics.judges.calibration import relevance_labels

    data = dataset(tmp_path)
    qrels = Qrels.from_dict({"q1": {"d1": 1}, "q2": {"d2": 1}})
    from pytest_ragmetrics.data.layouts import load_dataset

    loaded = load_dataset(data, "test")
    pairs, how = relevance_labels(qrels, loaded.queries, loaded.corpus, negatives=2, seed=3)
    negatives = [p for p in pairs if not p.relevant]
    assert len(negatives) == 4 and {p.label for p in negatives} == {"SAMPLED_NEGATIVE"}
    assert all(p.doc_id not in qrels.judgments(p.query_id) for p in negatives)
    assert "4 negatives were sampled (2 per positive" in how and "seed 3" in how
    again, _ = relevance_labels(qrels, loaded.queries, loaded.corpus, negatives=2, seed=3)
    assert again == pairs
    # The dataset's own qrels judge d2 non-relevant for q1: those are the negatives.
    judged, how = relevance_labels(loaded.qrels, loaded.queries, loaded.corpus)
    assert [(p.id, p.label) for p in judged if not p.relevant] == [("q1:d2", "JUDGED_NOT_RELEVANT")]
    assert "the 1 judged non-relevant pairs" in how
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(
        "".join(
            json.dumps({"query_id": p.query_id, "doc_id": p.doc_id, "relevant": p.relevant}) + "\n"
            for p in judged
        )
    )
    saved = tmp_path / "calibration.json"
    code, out, err = run(
        ["calibrate", "--question", "relevance", "--judge", "recorded", "--verdicts",
         str(verdicts), "--dataset", str(data), "--save", str(saved), "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    result = json.loads(out)
    assert result["kappa"] == 1.0 and result["n"] == 3
    assert result["labels"]["question"] == "relevance"
    assert "judged non-relevant" in result["labels"]["negatives"]
    code, _, err = run(
        ["calibrate", "--question", "relevance", "--judge", "embedding", "--labels", "x"], capsys
    )
    assert code == 2 and "--dataset DIR: required" in err


# -- the plugin: ragmetrics_supplementary_qrels ----------------------------------------------

CONFTEST = """
import os

import pytest

from pytest_ragmetrics import Run

OLD = {"q1": ["d1"], "q2": ["d2"], "q3": ["d3", "d4"], "q4": ["d5"]}
NEW = {"q1": ["d4", "d1"], "q2": ["d5", "d2"], "q3": ["d3", "d4"], "q4": ["d5"]}


class Retriever:
    name = "toy"

    def identity(self):
        return {"name": "toy"}

    def search(self, queries, k):
        table = NEW if os.environ.get("RAG_NEW") else OLD
        return Run.from_rankings({q: table[q][:k] for q in queries})


@pytest.fixture(scope="session")
def rag_retriever():
    return Retriever()
"""
TESTS = """
def test_retrieval(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="toy")
"""
JUDGE: dict[str, object] = {
    "name": "recorded-relevance",
    "model": None,
    "rubric": "r",
    "parameters": {},
}


def write_labels(root: Path, relevant: bool) -> None:
    grade = 1 if relevant else 0
    (root / "supp.qrels").write_text(
        HEADER_PREFIX + json.dumps(JUDGE) + f"\nq1 0 d4 {grade}\nq2 0 d5 {grade}\n"
    )


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_plugin_reports_metrics_with_labels_and_trusted_labels_decide(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, xdist: list[str]
) -> None:
    monkeypatch.delenv("RAG_NEW", raising=False)
    ini = 'ragmetrics_supplementary_qrels = "supp.qrels"\n'
    make_project(pytester, tests=TESTS, conftest=textwrap.dedent(CONFTEST), ini=ini)
    write_labels(pytester.path, relevant=True)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    monkeypatch.setenv("RAG_NEW", "1")
    # The judge says the new documents are relevant: the drop on human qrels is not one.
    result = pytester.runpytest(*xdist, "--ragmetrics-json=report.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(
        ["test_rag.py::test_retrieval [[]toy[]]*0.8155*0.5000*0.7500*ok",
         "*· + judge labels*0.9649*0.7500*1.0000",
         "*· baseline*1.0000*1.0000*1.0000",
         "*with 2 labels of judge 'recorded-relevance' from supp.qrels (kappa not calibrated; "
         "used for pass/fail)*", "*ndcg_at_10 dropped -0.1845 on the human qrels, but not with "
         "the supplementary judge labels*"]
    )  # fmt: skip
    report = json.loads((pytester.path / "report.json").read_text())
    (evaluation,) = report["evaluations"]
    assert evaluation["metrics"]["recall_at_1"] == 0.5  # human qrels
    # + labels: d4 and d5 are relevant too (R grows), the new ranking finds one of two at rank 1
    assert evaluation["supplemented"]["metrics"]["recall_at_1"] == 0.75
    assert evaluation["supplemented"]["labels_used"] == 2
    # Below the kappa bound the labels are shown, not used: the drop fails again (-v: the full
    # message, which has the labels' line).
    gated = pytester.runpytest(*xdist, "-v", "-o", "ragmetrics_min_judge_kappa=0.5")
    gated.assert_outcomes(failed=1)
    gated.stdout.fnmatch_lines(["*· + judge labels*0.9649*0.7500*1.0000*shown only"])
    gated.stdout.fnmatch_lines(
        ["*ndcg_at_10 with the supplementary judge labels: 0.8433 → 0.9649, did not drop "
         "(shown only, not used for pass/fail: judge 'recorded-relevance' has no calibration*"]
    )  # fmt: skip


def test_plugin_bad_supplementary_qrels_fails_naming_file_and_line(
    pytester: pytest.Pytester,
) -> None:
    ini = 'ragmetrics_supplementary_qrels = "supp.qrels"\n'
    make_project(pytester, tests=TESTS, conftest=textwrap.dedent(CONFTEST), ini=ini)
    (pytester.path / "supp.qrels").write_text("q1 0 d4 1\n")
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        ["*ragmetrics_supplementary_qrels: *supp.qrels:1: supplementary qrels start with*"]
    )


@pytest.mark.parametrize(
    ("damage", "message"),
    [
        (b'{"query_id": "q1", "doc_id": "d1", "query": "x", "te', "not valid JSON"),
        (b'{"query_id": "q1", "doc_id": "\xff", "query": "x"}', "not valid UTF-8"),
        (b'{"query_id": "q1", "doc_id": "d\x00"}', "NUL"),
    ],
)
def test_damaged_pool_files_are_named_with_their_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], damage: bytes, message: str
) -> None:
    pool = tmp_path / "pool.jsonl"
    good = b'{"query_id": "q0", "doc_id": "d0", "query": "x", "text": "y"}\n'
    pool.write_bytes(good + damage + b"\n")
    before = pool.read_bytes()
    code, _, err = run(
        ["judge-pool", "--pool", str(pool), "--judge", "embedding",
         "--qrels-out", str(tmp_path / "s.qrels")],
        capsys,
    )  # fmt: skip
    assert code == 2 and f"{pool}:2: " in err and message in err and "Traceback" not in err
    assert pool.read_bytes() == before and not (tmp_path / "s.qrels").exists()


def test_plugin_refuses_supplementary_qrels_with_several_datasets(
    pytester: pytest.Pytester,
) -> None:
    from tests.helpers.plugin_project import write_dataset

    make_project(pytester, tests=TESTS, conftest=textwrap.dedent(CONFTEST))
    write_dataset(pytester.path / "other")
    pytester.makepyprojecttoml(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_dataset = "a=data b=other/data"\n'
        'ragmetrics_metrics = "ndcg_at_10"\n'
        'ragmetrics_supplementary_qrels = "supp.qrels"\n'
    )
    write_labels(pytester.path, relevant=True)
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(
        ["*ragmetrics_supplementary_qrels: several datasets are configured*"]
    )


def test_judge_pool_leaves_rows_with_an_off_script_reply_without_a_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pool = tmp_path / "pool.jsonl"
    rows = [
        {"query_id": "q1", "doc_id": d, "query": "which animal purrs", "text": text}
        for d, text in (("d1", "cats purr"), ("d2", "dogs bark"))
    ]
    pool.write_text("".join(json.dumps(r) + "\n" for r in rows))

    def answer(prompt: str) -> str:
        return "Yes." if "cats" in prompt else "Maybe, who knows."

    with serve(answer=answer) as server:
        code, out, err = run(
            ["judge-pool", "--pool", str(pool), "--judge", "http", "--url", server.url,
             "--model", "m", "--qrels-out", str(tmp_path / "s.qrels"), "--no-cache",
             "--format", "json"],
            capsys,
        )  # fmt: skip
    assert code == 0, err
    summary = json.loads(out)
    assert (summary["judged"], summary["unjudged"], summary["labels_written"]) == (1, 1, 1)
    judged = [json.loads(line) for line in pool.read_text().splitlines()]
    assert judged[1]["relevant"] is None and judged[1]["verdict"] == "Maybe, who knows."
    assert (tmp_path / "s.qrels").read_text().splitlines()[1:] == ["q1 0 d1 1"]


# -- calibrate --question relevance --run: the pairs a retriever handed over -------------------

# q1's top 2: d2 (judged non-relevant), d1 (relevant); q2's: d9 (grade -1: unjudged), d2
# (relevant); q3 is not judged by the qrels (nor among the queries): left out.
RETRIEVED = (
    "q1 Q0 d2 1 9.0 X\nq1 Q0 d1 2 8.0 X\nq1 Q0 d3 3 7.0 X\n"
    "q2 Q0 d9 1 9.0 X\nq2 Q0 d2 2 8.0 X\nq3 Q0 d1 1 9.0 X\n"
)


def test_retrieved_relevance_labels_are_the_top_documents_labelled_by_the_qrels(
    tmp_path: Path,
) -> None:
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.judges.calibration import retrieved_relevance_labels

    loaded = load_dataset(dataset(tmp_path), "test")
    run_ = Run.from_dict({q: dict(r) for q, r in _rankings(RETRIEVED).items()})
    pairs, how = retrieved_relevance_labels(
        run_, loaded.qrels, loaded.queries, loaded.corpus, top=2, max_chars=4, run_name="run X"
    )
    assert [(p.id, p.label, p.relevant) for p in pairs] == [
        ("q1:d2", "JUDGED_NOT_RELEVANT", False),
        ("q1:d1", "RELEVANT", True),
        ("q2:d9", "UNJUDGED", False),
        ("q2:d2", "RELEVANT", True),
    ]
    assert [p.passage for p in pairs] == ["dogs", "cats", "bird", "dogs"]  # cut after 4
    assert pairs[0].query == "which animal purrs"
    assert "the top 2 documents of run X for 2 queries" in how
    assert "left out: 1 of the run's queries, which the qrels do not judge" in how
    assert "1 judged non-relevant, 1 unjudged and presumed non-relevant" in how
    assert "kappa is a lower bound" in how
    whole, _ = retrieved_relevance_labels(run_, loaded.qrels, loaded.queries, loaded.corpus)
    assert len(whole) == 5 and whole[2].passage == "cats purr loudly"  # top 3 by default


def _rankings(text: str) -> dict[str, list[tuple[str, float]]]:
    out: dict[str, list[tuple[str, float]]] = {}
    for line in text.splitlines():
        qid, _, doc, _, score, _ = line.split()
        out.setdefault(qid, []).append((doc, float(score)))
    return out


def test_retrieved_relevance_labels_refuse_what_they_cannot_label(tmp_path: Path) -> None:
    from pytest_ragmetrics.data.layouts import load_dataset
    from pytest_ragmetrics.errors import JudgeError
    from pytest_ragmetrics.judges.calibration import retrieved_relevance_labels

    loaded = load_dataset(dataset(tmp_path), "test")
    args = (loaded.qrels, loaded.queries, loaded.corpus)
    with pytest.raises(JudgeError, match="top must be a positive integer"):
        retrieved_relevance_labels(Run.from_dict({"q1": {"d1": 1.0}}), *args, top=0)
    with pytest.raises(JudgeError, match="max_chars must be a positive integer"):
        retrieved_relevance_labels(Run.from_dict({"q1": {"d1": 1.0}}), *args, max_chars=0)
    with pytest.raises(JudgeError, match=r"run: document 'd7' \(query 'q1'\) is not in the"):
        retrieved_relevance_labels(Run.from_dict({"q1": {"d7": 1.0}}), *args, run_name="run")
    with pytest.raises(JudgeError, match="none of the top 3 documents is relevant"):
        retrieved_relevance_labels(Run.from_dict({"q1": {"d3": 1.0, "d4": 0.5}}), *args)
    with pytest.raises(JudgeError, match="no query of the run is judged"):
        retrieved_relevance_labels(Run.from_dict({"q3": {"d1": 1.0}}), *args)
    qrels = Qrels.from_dict({"q7": {"d1": 1}})
    with pytest.raises(JudgeError, match="query 'q7' is not among the queries"):
        retrieved_relevance_labels(
            Run.from_dict({"q7": {"d1": 1.0}}), qrels, loaded.queries, loaded.corpus
        )


def test_cli_calibrate_relevance_on_a_run(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(tmp_path)
    trec = tmp_path / "x.trec"
    trec.write_text(RETRIEVED)
    verdicts = tmp_path / "v.jsonl"
    # The judge calls the unjudged q2:d9 relevant: counted against it (kappa is a lower bound).
    said = {("q1", "d2"): False, ("q1", "d1"): True, ("q2", "d9"): True, ("q2", "d2"): True}
    verdicts.write_text(
        "".join(
            json.dumps({"query_id": q, "doc_id": d, "relevant": r}) + "\n"
            for (q, d), r in said.items()
        )
    )
    saved = tmp_path / "calibration.json"
    base = ["calibrate", "--question", "relevance", "--judge", "recorded", "--verdicts",
            str(verdicts), "--dataset", str(data), "--run", str(trec), "--top", "2"]  # fmt: skip
    code, out, err = run([*base, "--format", "json", "--save", str(saved)], capsys)
    assert code == 0, err
    result = json.loads(out)
    assert result["labels"]["n"] == 4 and result["labels"]["positives"] == 2
    assert result["confusion"] == {"tp": 2, "fp": 1, "fn": 0, "tn": 1}
    assert "top 2 documents of run x.trec" in result["labels"]["negatives"]
    assert result["labels"]["source"].endswith("run x.trec")
    code, table, err = run(base, capsys)
    assert code == 0, err
    assert f"top 2 of {trec}" in table and "unjudged and presumed non-relevant" in table
    code, _, err = run([*base, "--save", str(trec)], capsys)
    assert code == 2 and "that is the --run" in err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--top", "2"], "--top: only with --run"),
        (["--run", "x.trec", "--negatives", "2"], "--negatives: not with --run"),
        (["--run", "x.trec", "--top", "0"], "--top must be a positive integer"),
        (["--max-chars", "0"], "--max-chars must be a positive integer"),
        (["--labels", "x"], "--labels: only with --question support, answer-relevance or agr"),
    ],
)
def test_cli_calibrate_relevance_usage_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    data = dataset(tmp_path)
    argv = ["calibrate", "--question", "relevance", "--judge", "embedding", "--dataset", str(data)]
    code, _, err = run([*argv, *extra], capsys)
    assert code == 2 and message in err, err
    code, _, err = run(["calibrate", "--judge", "embedding", "--labels", "x", "--run", "x"], capsys)
    assert code == 2 and "--run: only with --question relevance" in err


def test_cli_calibrate_relevance_max_chars_cuts_sampled_pairs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data = dataset(tmp_path)
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(
        json.dumps({"query_id": "q1", "doc_id": "d1", "relevant": True}) + "\n"
        + json.dumps({"query_id": "q1", "doc_id": "d2", "relevant": False}) + "\n"
        + json.dumps({"query_id": "q2", "doc_id": "d2", "relevant": True}) + "\n"
    )  # fmt: skip
    code, out, err = run(
        ["calibrate", "--question", "relevance", "--judge", "recorded", "--verdicts",
         str(verdicts), "--dataset", str(data), "--max-chars", "5", "--format", "json"],
        capsys,
    )  # fmt: skip
    assert code == 0, err
    assert json.loads(out)["labels"]["negatives"].endswith("; passages cut after 5 characters")


def test_a_persons_labels_always_count_and_each_judge_follows_its_own_kappa(
    tmp_path: Path,
) -> None:
    """The κ gate decides per labeller, not per file: in a pool a calibrated judge labelled but
    for one row a person set, the person's label counts under any bound and the judge's follow
    its κ; a file of a person's labels alone counts too."""
    from pytest_ragmetrics.judges.calibration import save_calibration
    from pytest_ragmetrics.pooling import PoolEntry, load_supplement, write_supplementary_qrels
    from tests.helpers.calibration import result_at_kappa

    judge = {"name": "recorded-relevance", "model": None, "parameters": {"file": "v.jsonl"}}
    calibration = tmp_path / "calibration.json"
    save_calibration(calibration, result_at_kappa(judge, 0.4))
    rows = [PoolEntry("q1", "d3", relevant=True, judge=None)]
    rows += [PoolEntry("q1", d, relevant=False, judge=judge) for d in ("d4", "d5")]
    rows += [PoolEntry("q2", "d1", relevant=True, judge=judge)]
    mixed = tmp_path / "mixed.qrels"
    assert write_supplementary_qrels(mixed, rows) == 4
    text = mixed.read_text()
    assert '"name": "mixed"' in text.splitlines()[0]
    assert text.count("labels by: ") == 2 and 'labels by: {"name": "person"}\nq1 0 d3 1\n' in text

    counted = load_supplement(mixed, calibration=calibration, min_kappa=0.3)
    assert counted.used and counted.reason == "" and counted.kappa == pytest.approx(0.4)
    human = Qrels.from_dict({"q1": {"d1": 1}, "q2": {"d2": 1}})
    run = {"q1": {"d3": 3.0, "d1": 2.0}, "q2": {"d1": 3.0, "d2": 2.0}}
    assert counted.evaluate(human, run, ["precision_at_1"]).labels_used == 4

    person_only = load_supplement(mixed, calibration=calibration, min_kappa=0.5)
    assert person_only.used  # the person's label counts; the judge's three do not
    assert person_only.reason.startswith("3 labels left out: judge 'recorded-relevance'")
    found = person_only.evaluate(human, run, ["precision_at_1"])
    assert found.used and found.labels_used == 1
    assert found.metrics["precision_at_1"] == 0.5  # q1's d3 relevant, q2's d1 not a label

    person = tmp_path / "person.qrels"
    write_supplementary_qrels(person, rows[:1])
    assert person.read_text().splitlines()[0] == HEADER_PREFIX + '{"name": "person"}'
    alone = load_supplement(person, calibration=calibration, min_kappa=0.9)
    assert alone.used and alone.reason == ""

    old = tmp_path / "old.qrels"  # several labellers, no record of whose each label is
    old.write_text(HEADER_PREFIX + '{"judges": ["null", "{}"], "name": "mixed"}\nq1 0 d3 1\n')
    unknown = load_supplement(old, calibration=calibration, min_kappa=0.3)
    assert not unknown.used and "run it again on the pool" in unknown.reason
    assert load_supplement(old, calibration=calibration, min_kappa=None).used


def test_supplementary_qrels_sections_are_checked(tmp_path: Path) -> None:
    labels = tmp_path / "s.qrels"
    labels.write_text(
        HEADER_PREFIX
        + '{"name": "mixed"}\nq1 0 d1 1\n# ragmetrics supplementary qrels; labels by: {}\n'
    )
    with pytest.raises(DataFormatError, match=r"s\.qrels:2: a label before the first"):
        read_supplementary_qrels(labels)
    labels.write_text(
        HEADER_PREFIX
        + '{"name": "mixed"}\n# ragmetrics supplementary qrels; labels by: [1]\nq1 0 d1 1\n'
    )
    with pytest.raises(DataFormatError, match=r"s\.qrels:2: the labeller in the line"):
        read_supplementary_qrels(labels)
