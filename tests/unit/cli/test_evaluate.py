"""``ragmetrics evaluate``: output formats, --per-query, options, and exit code 2 on bad input."""

from __future__ import annotations

import json
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest

from pytest_ragmetrics import evaluate, read_qrels, read_run
from pytest_ragmetrics.cli import main
from tests.helpers.paths import TEST_DATA

DATA = TEST_DATA / "trec_eval"
QRELS = str(DATA / "qrels.test")
RUN = str(DATA / "results.test")
TRUNC = str(DATA / "results.trunc")


def run_cli(*args: str) -> tuple[int, str]:
    out = StringIO()
    code = main(["evaluate", *args], out=out)
    return code, out.getvalue()


def test_json_has_means_and_query_count() -> None:
    code, text = run_cli(
        "--qrels", QRELS, "--run", RUN, "-m", "map", "-m", "P_5", "--format", "json"
    )
    assert code == 0
    payload = json.loads(text)
    # The document names itself and carries what 'ragmetrics compare' pairs and checks.
    assert set(payload) == {
        "schema", "version", "plugin_version", "metrics", "num_queries", "run", "dataset", "k",
        "layer", "semantics", "per_query", "details",
    }  # fmt: skip
    assert payload["schema"] == "pytest-ragmetrics/evaluation"
    assert payload["k"] is None  # a run file does not say what k it was made with
    assert payload["dataset"]["fingerprints"] == {"qrels": read_qrels(QRELS).fingerprint}
    assert payload["num_queries"] == 3
    # Same numbers as the library, under our names (P_5 is accepted as precision_at_5).
    expected = evaluate(read_qrels(QRELS), read_run(RUN), ["map", "precision_at_5"]).mean
    assert payload["metrics"] == expected
    assert round(payload["metrics"]["map"], 4) == 0.1785  # trec_eval's out.test


def test_json_per_query() -> None:
    code, text = run_cli(
        "--qrels", QRELS, "--run", TRUNC, "-m", "mrr", "--format", "json", "--per-query"
    )
    assert code == 0
    payload = json.loads(text)
    assert list(payload["per_query"]) == ["301", "302", "303"]
    assert payload["per_query"]["302"] == {"mrr": 0.0}
    assert payload["metrics"]["mrr"] == pytest.approx(
        sum(row["mrr"] for row in payload["per_query"].values()) / 3
    )
    assert payload["num_queries"] == 3
    assert payload["notes"] == [
        "1 of 3 judged queries are missing from the run and score 0 (e.g. 302)"
    ]


def test_table_is_the_default() -> None:
    code, text = run_cli("--qrels", QRELS, "--run", RUN, "-m", "map", "-m", "ndcg_at_10")
    assert code == 0
    lines = text.splitlines()
    assert lines[0].split() == ["query", "map", "ndcg_at_10"]
    assert set(lines[1]) <= {"-", " "}
    assert lines[2].split() == ["all", "0.1785", "0.3016"]  # trec_eval's out.test.aq
    assert "3 queries" in lines


def test_table_per_query_rows() -> None:
    code, text = run_cli("--qrels", QRELS, "--run", RUN, "-m", "P_5", "--per-query")
    assert code == 0
    rows = {line.split()[0]: line.split()[1:] for line in text.splitlines()[2:6]}
    assert rows == {
        "all": ["0.2667"],
        "301": ["0.0000"],
        "302": ["0.8000"],
        "303": ["0.0000"],
    }


def test_markdown_table() -> None:
    code, text = run_cli("--qrels", QRELS, "--run", RUN, "-m", "mrr", "--format", "markdown")
    assert code == 0
    lines = text.splitlines()
    assert lines[0].replace(" ", "") == "|query|mrr|"
    assert set(lines[1]) <= {"|", "-", ":"}
    assert lines[2].replace(" ", "") == "|all|0.4064|"


def test_default_metrics() -> None:
    code, text = run_cli("--qrels", QRELS, "--run", RUN, "--format", "json")
    assert code == 0
    assert list(json.loads(text)["metrics"]) == [
        "ndcg_at_10",
        "recall_at_100",
        "map_at_100",
        "mrr_at_10",
    ]


def test_options_reach_the_engine() -> None:
    rel_level = str(DATA / "qrels.rel_level")
    _, linear = run_cli("--qrels", rel_level, "--run", RUN, "-m", "ndcg_at_10", "--format", "json")
    _, exponential = run_cli(
        "--qrels", rel_level, "--run", RUN, "-m", "ndcg_at_10", "--format", "json",
        "--gain", "exponential",
    )  # fmt: skip
    assert json.loads(linear)["metrics"] != json.loads(exponential)["metrics"]
    _, level2 = run_cli(
        "--qrels", rel_level, "--run", RUN, "-m", "map", "--format", "json",
        "--relevance-level", "2",
    )  # fmt: skip
    assert round(json.loads(level2)["metrics"]["map"], 4) == 0.1667  # out.test.aql, -l2
    _, both = run_cli(
        "--qrels", QRELS, "--run", TRUNC, "-m", "map", "--format", "json",
        "--query-set", "intersection",
    )  # fmt: skip
    assert json.loads(both)["num_queries"] == 2


@pytest.mark.parametrize("flag", ["-J", "--judged-docs-only"])
def test_judged_docs_only_evaluates_every_metric_judged_only(flag: str) -> None:
    """-J, like trec_eval's: every metric on the rankings with unjudged (and -1) docs removed."""
    rel_level = str(DATA / "qrels.rel_level")
    args = ["--qrels", rel_level, "--run", RUN, "--relevance-level", "2", "--format", "json"]
    metrics = ["-m", "map", "-m", "P_5", "-m", "bpref", "-m", "ndcg_at_10_judged"]
    code, text = run_cli(*args, *metrics, flag)
    assert code == 0
    judged = json.loads(text)["metrics"]
    names = ["map_judged", "precision_at_5_judged", "bpref_judged", "ndcg_at_10_judged"]
    assert list(judged) == names
    expected = evaluate(read_qrels(rel_level), read_run(RUN), names, relevance_level=2).mean
    assert judged == expected
    _, text = run_cli(*args, *metrics)
    assert json.loads(text)["metrics"]["map"] < judged["map_judged"]


def test_judged_docs_only_refuses_metrics_without_a_judged_form(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code, text = run_cli("--qrels", QRELS, "--run", RUN, "-m", "map", "-m", "judged_at_5", "-J")
    assert (code, text) == (2, "")
    err = capsys.readouterr().err
    assert err.startswith(
        "ragmetrics evaluate: error: -J: metric 'judged_at_5_judged': judged_at_K has no "
        "judged-only form"
    )
    assert err.endswith("valid forms: judged_at_K\n")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--run", RUN, "-m", "mapp"], "unknown metric 'mapp'; valid metrics: precision_at_K"),
        (["--run", RUN, "-m", "ndcg_at_0"], "cutoff '0' must be a positive integer"),
        (["--run", RUN, "-m", "groundedness"], "answer-layer metrics"),
        (["--run", RUN, "-m", "bpref_at_10"], "'bpref' takes no cutoff; write bpref (valid forms"),
        (["--run", str(DATA / "missing.txt")], "missing.txt: file not found"),
        (["--run", QRELS], "qrels.test:1: expected 'qid Q0 docno rank score tag', got 4"),
    ],
)
def test_bad_input_exits_2_with_one_line(
    capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, text = run_cli("--qrels", QRELS, *args)
    assert code == 2
    assert text == ""
    err = capsys.readouterr().err
    assert err.startswith("ragmetrics evaluate: error: ")
    assert err.endswith("\n") and err.count("\n") == 1
    assert message in err


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("q1 Q0 d1 1 nan tag\n", "run.txt:2: score 'nan' is not a finite number"),
        ("q1 Q0 d0 2 0.5 tag\n", "run.txt:2: document 'd0' appears twice for query 'q1'"),
        ("q1 Q0 d1\n", "run.txt:2: expected 'qid Q0 docno rank score tag', got 3 columns"),
        ("q1 Q0 d1 2 0.5\n", "run.txt:2: expected 'qid Q0 docno rank score tag', got 5 columns"),
        ("q2 Q0 d1 1 0.5 other\n", "run.txt:2: run tag 'other' where line 1 has 'tag'"),
    ],
)
def test_malformed_run_names_file_and_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], line: str, message: str
) -> None:
    path = tmp_path / "run.txt"
    path.write_text("q1 Q0 d0 1 1.0 tag\n" + line)
    assert run_cli("--qrels", QRELS, "--run", str(path)) == (2, "")
    assert message in capsys.readouterr().err


def test_empty_and_non_utf8_qrels(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "empty.txt").write_text("")
    assert run_cli("--qrels", str(tmp_path / "empty.txt"), "--run", RUN)[0] == 2
    assert "empty.txt: no judgments in qrels file" in capsys.readouterr().err
    (tmp_path / "latin1.txt").write_bytes(b"301 0 caf\xe9 1\n")
    assert run_cli("--qrels", str(tmp_path / "latin1.txt"), "--run", RUN)[0] == 2
    assert "latin1.txt:1: not valid UTF-8" in capsys.readouterr().err


def test_usage_errors_are_argparse_exit_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        main(["evaluate", "--qrels", QRELS], out=StringIO())
    assert info.value.code == 2
    assert "the following arguments are required: --run" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["evaluate", "--qrels", QRELS, "--run", RUN, "--format", "xml"], out=StringIO())


def _console_script() -> str:
    script = Path(sys.executable).with_name("ragmetrics")
    if not script.exists():
        pytest.skip("the ragmetrics console script is not installed next to this Python")
    return str(script)


def test_console_script_end_to_end(tmp_path: Path) -> None:
    script = _console_script()
    ok = subprocess.run(
        [script, "evaluate", "--qrels", QRELS, "--run", RUN, "-m", "map", "--format", "json"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert round(json.loads(ok.stdout)["metrics"]["map"], 4) == 0.1785
    bad_run = tmp_path / "bad.txt"
    bad_run.write_text("301 Q0 d1 1 inf tag\n")
    bad = subprocess.run(
        [script, "evaluate", "--qrels", QRELS, "--run", str(bad_run)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert bad.returncode == 2
    assert bad.stdout == ""
    assert bad.stderr == (
        f"ragmetrics evaluate: error: {bad_run}:1: score 'inf' is not a finite number\n"
    )


def test_a_reader_that_goes_away_ends_the_output_quietly(tmp_path: Path) -> None:
    """`ragmetrics evaluate ... | head -1`: the closed pipe is no internal error; the command
    finishes and exits with its own code."""
    run = tmp_path / "r.run"
    qrels = tmp_path / "q.qrels"
    run.write_text("".join(f"q{i} Q0 d{i} 1 1.0 r\n" for i in range(3000)))
    qrels.write_text("".join(f"q{i} 0 d{i} 1\n" for i in range(3000)))
    command = [sys.executable, "-m", "pytest_ragmetrics.cli", "evaluate"]
    with subprocess.Popen(
        [*command, "--qrels", str(qrels), "--run", str(run), "--per-query"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    ) as process:
        assert process.stdout is not None and process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()  # the reader goes away after one line
        stderr = process.stderr.read().decode()
        code = process.wait(timeout=120)
    assert code == 0, stderr
    assert first.startswith(b"query")
    assert "internal error" not in stderr and "Traceback" not in stderr


# -- --supplementary-qrels without --dataset (issue 24 class 8) ---------------------------------


def test_supplementary_qrels_beside_qrels_alone_say_what_cannot_be_checked(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Labels record the corpus they were made for; --qrels names no corpus, so that cannot
    be checked: a note on stderr says so (and how to check it), the numbers still come."""
    from tests.unit.test_pooling import dataset, files
    from tests.unit.test_provenance import judged_labels

    labels = judged_labels(tmp_path, dataset(tmp_path), capsys)
    f = files(tmp_path)
    args = ["--qrels", str(f["qrels"]), "--run", str(f["a"]), "--supplementary-qrels", str(labels)]
    code, text = run_cli(*args, "--format", "json")
    assert code == 0
    assert json.loads(text)["supplemented"]["labels_used"] == 3
    err = capsys.readouterr().err
    assert err.startswith(f"ragmetrics evaluate: note: --supplementary-qrels {labels}: made for ")
    assert "--qrels names no corpus, so whether the labels are for the documents this run" in err
    assert "give --dataset DIR instead of --qrels to check it" in err
    assert err.count("\n") == 1


def test_supplementary_labels_for_none_of_the_judged_queries_get_a_note(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A check that needs no corpus: labels on queries these qrels do not judge add nothing,
    so they were made for other qrels."""
    from pytest_ragmetrics.pooling import HEADER_PREFIX
    from tests.unit.test_pooling import JUDGE, files

    labels = tmp_path / "other.qrels"
    labels.write_text(HEADER_PREFIX + json.dumps(JUDGE) + "\nx1 0 d1 1\nx2 0 d3 1\n")
    f = files(tmp_path)
    args = ["--qrels", str(f["qrels"]), "--run", str(f["a"]), "--supplementary-qrels", str(labels)]
    code, text = run_cli(*args)
    assert code == 0
    assert (
        f"note: {labels}: none of its labels is for a query these qrels judge (2 queries, e.g. "
        "x1): they were made for other qrels and add nothing"
    ) in text
    err = capsys.readouterr().err
    assert "the file does not say which corpus its labels were made for" in err


@pytest.mark.parametrize("second_tag", ["same", None], ids=["same-tag", "same-file"])
def test_two_runs_that_would_share_a_row_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], second_tag: str | None
) -> None:
    """Rows are named by tag: the second run's numbers replaced the first's, exit 0."""
    first = tmp_path / "a.txt"
    first.write_text("301 Q0 d0 1 1.0 same\n")
    second = tmp_path / "b.txt"
    second.write_text("301 Q0 d1 1 1.0 same\n")
    runs = [str(first), str(second) if second_tag else str(first)]
    code, text = run_cli("--qrels", QRELS, "--run", runs[0], "--run", runs[1])
    assert (code, text) == (2, "")
    err = capsys.readouterr().err
    assert f"{runs[1]}: the run 'same' on qrels is already given ({runs[0]})" in err
    second.write_text("301 Q0 d1 1 1.0 other\n")
    code, text = run_cli("--qrels", QRELS, "--run", str(first), "--run", str(second))
    assert code == 0 and "same" in text and "other" in text


def test_a_dataset_folder_with_a_space_is_one_value(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each --dataset value is one folder: 'my data' was split into 'my' and 'data'."""
    from tests.helpers.plugin_project import write_dataset

    folder = write_dataset(tmp_path / "two words")
    run = tmp_path / "run.txt"
    run.write_text("q1 Q0 d1 1 1.0 t\nq2 Q0 d2 1 1.0 t\n")
    code, text = run_cli("--dataset", f"animals={folder}", "--run", str(run), "-m", "P_1")
    assert code == 0 and "0.5000" in text
    monkeypatch.chdir(folder)
    assert run_cli("--dataset", ".", "--run", str(run)) == (2, "")
    err = capsys.readouterr().err
    assert "--dataset: '.' has no folder name to name the dataset after; write NAME=." in err
    code, text = run_cli("--dataset", "here=.", "--run", str(run), "-m", "P_1")
    assert code == 0 and "0.5000" in text
