"""``ragmetrics compare``: plugin verdicts outside pytest."""

from __future__ import annotations

import copy
import io
import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main


def report(per_query: dict[str, float], metric: str = "ndcg_at_10") -> dict:
    values = list(per_query.values())
    return {
        "schema": "pytest-ragmetrics/report",
        "version": 1,
        "evaluations": [
            {
                "test": "tests/test_x.py::test_dense",
                "name": "dense",
                "layer": "retrieval",
                "identity": {"retriever": {"name": "dense"}},
                "dataset": {"fingerprints": {"corpus": "c", "queries": "q", "qrels": "r"}},
                "k": 10,
                "semantics": {"relevance_level": 1, "gain": "linear", "query_set": "qrels"},
                "metrics": {metric: sum(values) / len(values)},
                "num_queries": len(values),
                "per_query": {q: {metric: v} for q, v in per_query.items()},
                "details": {
                    "first_relevant_rank": {q: 1 if v else 0 for q, v in per_query.items()}
                },
            }
        ],
    }


def run(*args: str) -> tuple[int, str]:
    out = io.StringIO()
    return main(list(args), out=out), out.getvalue()


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    before = report({f"q{i}": 1.0 for i in range(30)})
    after = report({f"q{i}": (0.0 if i < 10 else 1.0) for i in range(30)})
    paths = tmp_path / "before.json", tmp_path / "after.json"
    paths[0].write_text(json.dumps(before))
    paths[1].write_text(json.dumps(after))
    return paths


def test_regression_exits_one_with_the_plugin_message(files: tuple[Path, Path]) -> None:
    code, text = run("compare", str(files[0]), str(files[1]))
    assert code == 1
    row = next(line for line in text.splitlines() if "[dense]" in line)
    assert row.split()[-5:] == ["ndcg_at_10", "1.0000", "0.6667", "-0.3333", "regressed"]
    assert "regressed against the baseline in" in text
    assert "queries: 10 worse, 0 better, 20 unchanged" in text
    assert "most regressed: q0: rank 1 → not retrieved (Δ -1.000)" in text
    assert text.rstrip().endswith("1 evaluations, 1 failed")


def test_same_numbers_exit_zero_and_json_format(files: tuple[Path, Path]) -> None:
    code, text = run("compare", str(files[0]), str(files[0]), "--format", "json")
    assert code == 0
    data = json.loads(text)
    assert data["failed"] == 0
    assert data["evaluations"][0]["status"] == "ok"
    assert data["evaluations"][0]["metrics"][0]["delta"] == 0.0


def test_tolerance_and_markdown(files: tuple[Path, Path]) -> None:
    code, text = run(
        "compare", str(files[0]), str(files[1]), "--tolerance", "50%", "--format", "markdown"
    )
    assert code == 0
    assert "| tests/test_x.py::test_dense [dense] | ndcg_at_10 |" in text


def test_baseline_file_as_before(tmp_path: Path, files: tuple[Path, Path]) -> None:
    entry = copy.deepcopy(report({f"q{i}": 1.0 for i in range(30)})["evaluations"][0])
    test, name = entry.pop("test"), entry.pop("name")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"schema_version": 1, "entries": {test: {name: entry}}}))
    code, _ = run("compare", str(baseline), str(files[1]))
    assert code == 1


def _drop_dataset(entry: dict) -> None:
    del entry["dataset"]


def _drop_fingerprints(entry: dict) -> None:
    del entry["dataset"]["fingerprints"]


def _empty_fingerprints(entry: dict) -> None:
    entry["dataset"]["fingerprints"] = {}


def _drop_qrels_fingerprint(entry: dict) -> None:
    del entry["dataset"]["fingerprints"]["qrels"]


@pytest.mark.parametrize(
    ("edit", "field"),
    [
        (_drop_dataset, "'dataset' is missing"),
        (_drop_fingerprints, "'dataset.fingerprints' is missing"),
        (_empty_fingerprints, "'dataset.fingerprints' is missing"),
        (_drop_qrels_fingerprint, "'dataset.fingerprints.qrels' is missing"),
    ],
)
def test_a_baseline_entry_without_its_fingerprints_is_malformed_not_another_dataset(
    tmp_path: Path,
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    edit: object,
    field: str,
) -> None:
    """A hand edit that drops what the entry was scored on is named, not read as a change of
    dataset (the run's dataset is the same)."""
    entry = copy.deepcopy(report({f"q{i}": 1.0 for i in range(30)})["evaluations"][0])
    test, name = entry.pop("test"), entry.pop("name")
    edit(entry)  # type: ignore[operator]
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"schema_version": 1, "entries": {test: {name: entry}}}))
    code, text = run("compare", str(baseline), str(files[1]))
    err = capsys.readouterr().err
    assert code == 2, text
    assert f"{baseline}: entry 'tests/test_x.py::test_dense' [dense]: {field}" in err
    assert "different datasets" not in text + err


def test_not_comparable_exits_one(tmp_path: Path, files: tuple[Path, Path]) -> None:
    other = json.loads(files[1].read_text())
    other["evaluations"][0]["dataset"]["fingerprints"]["qrels"] = "changed"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    code, text = run("compare", str(files[0]), str(path))
    assert code == 1
    assert "is not comparable" in text
    assert "qrels: contents differ" in text


def test_bad_input_exits_two(
    tmp_path: Path, files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    broken = tmp_path / "broken.json"
    broken.write_text('{"evaluations": [')
    assert run("compare", str(broken), str(files[1]))[0] == 2
    assert "broken.json:1: not valid JSON" in capsys.readouterr().err
    assert run("compare", str(tmp_path / "missing.json"), str(files[1]))[0] == 2
    assert "missing.json: file not found" in capsys.readouterr().err
    assert run("compare", str(files[0]), str(files[1]), "--tolerance", "x")[0] == 2
    assert "--tolerance: 'x' is not a tolerance" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("tolerances", "message"),
    [
        (["0.5", "0.01"], "0.5 and 0.01 both set the tolerance of every metric"),
        (["0.01 2%"], "0.01 and 2% both set the tolerance of every metric"),
        (["mrr=0.1", "0.2", "mrr=0.3"], "mrr=0.1 and mrr=0.3 set the tolerance of mrr twice"),
    ],
)
def test_a_tolerance_given_twice_is_refused_not_the_last_kept(
    files: tuple[Path, Path],
    capsys: pytest.CaptureFixture[str],
    tolerances: list[str],
    message: str,
) -> None:
    """The last value won, so a loose tolerance after a strict one passed a drop."""
    flags = [arg for value in tolerances for arg in ("--tolerance", value)]
    assert run("compare", str(files[0]), str(files[1]), *flags) == (2, "")
    assert message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("tolerance", "message"),
    [
        ("2 %", "--tolerance: '2 %': a % goes right after its number, no space between (write 2%)"),
        ("ndcg_at_10=5 %", "'ndcg_at_10=5 %': a % goes right after its number, no space between "
         "(write ndcg_at_10=5%)"),
    ],
)  # fmt: skip
def test_a_percent_apart_from_its_number_is_named(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str], tolerance: str, message: str
) -> None:
    """``--tolerance "2 %"`` said "an absolute tolerance of '2' lets a metric in [0, 1] fall to 0
    unchecked; did you mean 2% (relative) or 0.02?", about a value the user did not write."""
    assert run("compare", str(files[0]), str(files[1]), "--tolerance", tolerance) == (2, "")
    err = capsys.readouterr().err
    assert message in err and "absolute" not in err


def test_a_tolerance_for_a_metric_not_compared_is_refused(
    files: tuple[Path, Path], runs: dict[str, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    """``--tolerance map_at_100=0.5`` comparing map alone was silently unused (exit 0)."""
    tolerances = ["--tolerance", "mrr=0.5", "--tolerance", "0.02"]
    assert run("compare", *map(str, files), *tolerances) == (2, "")
    assert capsys.readouterr().err == (
        "ragmetrics compare: error: --tolerance: mrr=0.5 names a metric that is not compared "
        "here (the metrics compared: ndcg_at_10); drop it, or compare that metric\n"
    )
    code, _ = cli("compare --qrels {qrels} {a} {b} -m mrr --tolerance map_at_100=5%", runs)
    assert code == 2
    assert "map_at_100=5% names a metric that is not compared here (the metrics compared: mrr)" in (
        capsys.readouterr().err
    )
    # -J compares judged-only forms: a tolerance for the plain metric would go unused.
    assert cli("compare --qrels {qrels} {a} {b} -m mrr -J --tolerance mrr=0.1", runs)[0] == 2
    assert "(the metrics compared: mrr_judged)" in capsys.readouterr().err
    # Named and compared: used.
    assert cli("compare --qrels {qrels} {a} {b} -m mrr,map --tolerance map=0.1", runs)[0] == 0
    assert run("compare", *map(str, files), "--tolerance", "ndcg_at_10=50%")[0] == 0


# --------------------------------------------------------------------------------------------
# Comparing runs: ragmetrics compare --qrels Q RUN_A RUN_B [RUN_C ...]

# Six queries, one relevant document each (r1..r6). The rank of that document in run A and B:
# A: 1, 1, 2, 1, 3, not retrieved -> reciprocal ranks 1, 1, 1/2, 1, 1/3, 0
# B: 1, 2, 1, 1, 1, 1             -> reciprocal ranks 1, 1/2, 1, 1, 1, 1
# B against A: wins q3, q5, q6; ties q1, q4; loses q2. Run C retrieves nothing relevant.
RANKS_A = {"q1": 1, "q2": 1, "q3": 2, "q4": 1, "q5": 3, "q6": 0}
RANKS_B = {"q1": 1, "q2": 2, "q3": 1, "q4": 1, "q5": 1, "q6": 1}
MRR_A = [1.0, 1.0, 0.5, 1.0, 0.333333, 0.0]  # as compared: rounded to 6 digits
MRR_B = [1.0, 0.5, 1.0, 1.0, 1.0, 1.0]


def _run_file(path: Path, ranks: dict[str, int], depth: int = 3) -> Path:
    """A TREC run: for each query, ``depth`` documents with its relevant one at ``ranks[q]``."""
    lines = []
    for q, rank in ranks.items():
        docs = [f"{q}-other{i}" for i in range(depth)]
        if rank:
            docs[rank - 1] = f"r{q[1:]}"
        lines += [f"{q} Q0 {d} {i} {depth - i}.0 sys" for i, d in enumerate(docs, start=1)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def runs(tmp_path: Path) -> dict[str, Path]:
    """qrels, runs a (3 deep), b (10 deep) and c, and where evaluate outputs may go."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"q{i} 0 r{i} 1\n" for i in range(1, 7)))
    return {
        "qrels": qrels,
        "a": _run_file(tmp_path / "a.run", RANKS_A),
        "b": _run_file(tmp_path / "b.run", RANKS_B, depth=10),
        "c": _run_file(tmp_path / "c.run", dict.fromkeys(RANKS_A, 0)),
        "tmp": tmp_path,
    }


def cli(template: str, paths: dict[str, Path]) -> tuple[int, str]:
    """``ragmetrics`` with the arguments of ``template``, {name} standing for a path."""
    return run(*template.format(**paths).split())


def cli_json(template: str, paths: dict[str, Path]) -> tuple[int, dict]:
    code, text = cli(template + " --format json", paths)
    return code, json.loads(text)


def evaluate_output(name: str, template: str, paths: dict[str, Path]) -> Path:
    """The file of ``ragmetrics evaluate ... --format json``."""
    code, text = cli(f"evaluate {template} --format json", paths)
    assert code == 0
    path = paths["tmp"] / name
    path.write_text(text)
    return path


def test_the_html_page_is_not_written_over_the_qrels_or_the_dataset(
    runs: dict[str, Path], tmp_path: Path
) -> None:
    # The qrels (and a dataset folder's files) are read as much as the runs: an --out naming
    # one of them would replace the judgments with the page.
    kept = runs["qrels"].read_bytes()
    html = "compare --qrels {qrels} {a} {b} --format html --out "
    assert cli(html + "{qrels}", runs)[0] == 2
    assert runs["qrels"].read_bytes() == kept
    folder = tmp_path / "beir"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text('{"_id": "r1", "text": "x"}\n')
    (folder / "queries.jsonl").write_text('{"_id": "q1", "text": "y"}\n')
    (folder / "qrels" / "test.tsv").write_text("query-id\tcorpus-id\tscore\nq1\tr1\t1\n")
    files = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    for target in ("corpus.jsonl", "qrels/test.tsv"):
        code, _ = run("compare", "--dataset", str(folder), str(runs["a"]), str(runs["b"]),
                      "--format", "html", "--out", str(folder / target))  # fmt: skip
        assert code == 2
    assert {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()} == files


def test_two_runs_paired_statistics_equal_stats_on_the_hand_built_example(runs) -> None:
    from pytest_ragmetrics.stats import compare_paired

    code, data = cli_json("compare --qrels {qrels} {a} {b} -m mrr", runs)
    assert code == 0  # B is better: nothing regressed against the reference
    assert data["schema"] == "pytest-ragmetrics/comparison"
    assert [r["label"] for r in data["runs"]] == [str(runs["a"]), str(runs["b"])]
    assert data["runs"][0]["metrics"] == {"mrr": round(sum(MRR_A) / 6, 6)}
    (versus,) = data["comparisons"]
    assert versus["reference"] == str(runs["a"]) and versus["status"] == "improved"
    (mrr,) = versus["metrics"]
    expected = compare_paired(MRR_A, MRR_B)
    assert mrr["ci95"] == [round(expected.ci_low, 6), round(expected.ci_high, 6)]
    assert mrr["p_value"] == round(expected.p_value, 6)
    assert mrr["delta"] == round(sum(MRR_B) / 6 - sum(MRR_A) / 6, 6)
    # wins / ties / losses by hand
    assert (mrr["queries_better"], mrr["queries_same"], mrr["queries_worse"]) == (3, 2, 1)
    changed = versus["most_changed"]["mrr"]
    assert [c["query"] for c in changed] == ["q6", "q5", "q2", "q3"]  # by |Δ|, then id
    assert changed[0] == {
        "query": "q6", "reference": 0.0, "value": 1.0, "delta": 1.0,
        "rank_reference": 0, "rank_value": 1,
    }  # fmt: skip


def test_two_runs_table(runs) -> None:
    code, text = cli("compare --qrels {qrels} {a} {b} -m mrr", runs)
    assert code == 0
    assert f"reference: {runs['a']} (TREC run)\njudgments: {runs['qrels']}\n" in text
    row = next(line for line in text.splitlines() if line.startswith(str(runs["b"]) + " "))
    # The same cells as the Markdown table's: the mean, its Δ against the reference, the marks.
    assert row.split() == [
        str(runs["b"]), "TREC", "run", "unknown", "0.9167", "(+0.2778", "▲)", "improved"
    ]  # fmt: skip
    pair = next(line for line in text.splitlines() if line.startswith("mrr "))
    assert pair.split()[:4] == ["mrr", "0.6389", "0.9167", "+0.2778"]
    assert pair.split()[-4:] == ["3", "2", "1", "improved"]  # wins ties losses
    assert "q6            0.0000  1.0000  +1.0000  none → 1" in text
    assert text.rstrip().endswith(f"2 runs, each against {runs['a']}: 1 improved; 0 failed")


def test_a_later_run_that_regressed_exits_one_with_advice_for_runs(runs) -> None:
    code, text = cli("compare --qrels {qrels} {b} {a} -m mrr", runs)
    assert code == 1
    assert f"ragmetrics: {runs['a']} is worse than the reference {runs['b']}:" in text
    assert "  mrr: Δ -0.2778 (allowed drop 0.0100; p = " in text
    assert "raise --tolerance, or give --alpha" in text
    assert "--ragmetrics-update-baseline" not in text  # a run is not a baseline
    # Not significant at alpha 0.01 with six queries, or within the tolerance: it passes.
    assert cli("compare --qrels {qrels} {b} {a} -m mrr --alpha 0.01", runs)[0] == 0
    assert cli("compare --qrels {qrels} {b} {a} -m mrr --tolerance 0.3", runs)[0] == 0


def test_k_is_never_guessed_from_a_run_files_depth(runs) -> None:
    # a.run is 3 deep, b.run 10 deep: neither says what k it was retrieved with.
    _, data = cli_json("compare --qrels {qrels} {a} {b}", runs)
    assert [r["k"] for r in data["runs"]] == [None, None]
    assert "identity_change" not in data["comparisons"][0]
    _, text = cli("compare --qrels {qrels} {a} {b}", runs)
    assert "configuration changed" not in text and "k:" not in text
    rows = [line.split() for line in text.splitlines() if line.startswith(str(runs["a"]))]
    assert rows[0][3] == "unknown"


def test_three_runs_each_against_the_first(runs) -> None:
    code, data = cli_json("compare --qrels {qrels} {a} {b} {c} -m mrr", runs)
    assert code == 1  # c retrieves nothing relevant
    statuses = {c["run"]: c["status"] for c in data["comparisons"]}
    assert statuses == {str(runs["b"]): "improved", str(runs["c"]): "regressed"}
    assert {c["reference"] for c in data["comparisons"]} == {str(runs["a"])}
    assert data["failed"] == 1
    c = next(c for c in data["comparisons"] if c["run"] == str(runs["c"]))["metrics"][0]
    assert (c["queries_better"], c["queries_same"], c["queries_worse"]) == (0, 1, 5)


def test_a_run_against_an_evaluate_output(runs) -> None:
    runs["b_json"] = evaluate_output("b.json", "--qrels {qrels} --run {b} -m mrr", runs)
    _, expected = cli_json("compare --qrels {qrels} {a} {b} -m mrr", runs)
    code, data = cli_json("compare --qrels {qrels} {a} {b_json} -m mrr", runs)
    assert code == 0
    assert data["runs"][1]["kind"] == "evaluation" and data["runs"][1]["k"] is None
    assert data["comparisons"][0]["metrics"] == expected["comparisons"][0]["metrics"]
    # Two evaluate outputs need no qrels: they carry their per-query values and fingerprint.
    runs["a_json"] = evaluate_output("a.json", "--qrels {qrels} --run {a} -m mrr", runs)
    code, data = cli_json("compare {a_json} {b_json}", runs)
    assert code == 0
    assert data["comparisons"][0]["metrics"] == expected["comparisons"][0]["metrics"]
    assert data["judgments"] is None


def test_an_evaluate_output_with_other_scoring_rules_is_not_comparable(runs) -> None:
    template = "--qrels {qrels} --run {b} -m mrr --relevance-level 2"
    runs["b_json"] = evaluate_output("b.json", template, runs)
    code, text = cli("compare --qrels {qrels} {a} {b_json} -m mrr", runs)
    assert code == 1
    assert f"ragmetrics: {runs['b_json']} is not comparable with the reference {runs['a']}:" in text
    assert "metric semantics:" in text
    assert "--relevance-level, --gain, --query-set" in text
    assert "--ragmetrics-update-baseline" not in text
    # Given the rules it was written with, the run is scored alike.
    assert cli("compare --qrels {qrels} {a} {b_json} -m mrr --relevance-level 2", runs)[0] == 0


def test_evaluations_of_reports_are_systems_too(runs) -> None:
    two = report({"q1": 1.0, "q2": 0.5})
    second = copy.deepcopy(two["evaluations"][0])
    second.update(
        name="bm25",
        per_query={"q1": {"ndcg_at_10": 0.0}, "q2": {"ndcg_at_10": 0.5}},
        metrics={"ndcg_at_10": 0.25},
    )
    two["evaluations"].append(second)
    path = runs["report"] = runs["tmp"] / "report.json"
    path.write_text(json.dumps(two))
    code, data = cli_json("compare {report} {report} {report} --evaluation bm25", runs)
    assert [r["label"] for r in data["runs"]] == [f"{path}", f"{path} #2", f"{path} #3"]
    assert code == 0
    code, data = cli_json("compare --evaluation dense --evaluation bm25 {report} {report}", runs)
    labels = [f"{path} [dense]", f"{path} [bm25]"]
    assert [r["label"] for r in data["runs"]] == [*labels, *(f"{x} #2" for x in labels)]
    assert data["runs"][0]["k"] == 10  # what the report recorded
    assert data["runs"][0]["test"] == "tests/test_x.py::test_dense"
    statuses = [c["status"] for c in data["comparisons"]]
    assert statuses == ["regressed", "ok", "regressed"]  # bm25 is worse than dense
    assert code == 1


def test_a_run_against_an_evaluation_of_a_report(runs) -> None:
    from pytest_ragmetrics import read_qrels

    fingerprint = read_qrels(runs["qrels"]).fingerprint
    data = report(dict(zip(RANKS_B, MRR_B, strict=True)), metric="mrr")
    data["evaluations"][0]["dataset"]["fingerprints"]["qrels"] = fingerprint
    runs["report"] = runs["tmp"] / "report.json"
    runs["report"].write_text(json.dumps(data))
    _, expected = cli_json("compare --qrels {qrels} {a} {b} -m mrr", runs)
    code, data = cli_json("compare --qrels {qrels} {a} {report}", runs)  # -m: the report's
    assert code == 0
    assert data["metrics"] == ["mrr"]
    assert [(r["kind"], r["k"]) for r in data["runs"]] == [("run", None), ("report", 10)]
    assert data["comparisons"][0]["metrics"] == expected["comparisons"][0]["metrics"]
    assert "notes" not in data["comparisons"][0]  # the qrels fingerprints were compared
    # Without a qrels fingerprint the judgments cannot be checked: the comparison says so.
    plain = report(dict(zip(RANKS_B, MRR_B, strict=True)), metric="mrr")
    plain["evaluations"][0]["dataset"] = None
    runs["report"].write_text(json.dumps(plain))
    code, data = cli_json("compare --qrels {qrels} {a} {report}", runs)
    assert code == 0
    assert data["comparisons"][0]["notes"] == [
        f"{runs['report']}: cannot check that it was evaluated on the reference's judgments "
        "(a qrels fingerprint is missing from one of them)"
    ]


def test_a_dataset_folder_gives_the_judgments_and_the_query_texts(runs) -> None:
    folder = runs["dataset"] = runs["tmp"] / "toy"
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": f"r{i}", "text": f"doc {i}"}) + "\n" for i in range(1, 7))
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": f"q{i}", "text": f"question {i}"}) + "\n" for i in range(1, 7))
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"q{i}\tr{i}\t1\n" for i in range(1, 7))
    )
    _, expected = cli_json("compare --qrels {qrels} {a} {b} -m mrr", runs)
    code, data = cli_json("compare --dataset {dataset} {a} {b} -m mrr", runs)
    assert code == 0
    assert data["judgments"] == f"{folder} (toy, test)"
    assert data["comparisons"][0]["metrics"] == expected["comparisons"][0]["metrics"]
    runs["out"] = runs["tmp"] / "toy.html"
    assert cli("compare --dataset {dataset} {a} {b} -m mrr --format html --out {out}", runs)[0] == 0
    assert "question 6" in runs["out"].read_text()


BAD_RUNS = {
    "runs-without-qrels": (
        "{a} {b}",
        "a.run: a TREC run; comparing runs needs their judgments: give --qrels FILE or "
        "--dataset DIR",
    ),
    "one-input": ("--qrels {qrels} {a}", "a.run: compare needs at least two inputs"),
    "not-a-run": (
        "--qrels {qrels} {a} {qrels}",
        "qrels.txt:1: expected 'qid Q0 docno rank score tag', got 4 columns",
    ),
    "bad-metric": ("--qrels {qrels} {a} {b} -m nope", "unknown metric 'nope'"),
    "split-without-dataset": (
        "--qrels {qrels} --split dev {a} {b}",
        "--split: only with --dataset",
    ),
    "most-changed-zero": (
        "--qrels {qrels} {a} {b} --most-changed 0",
        "--most-changed must be a positive integer, got 0",
    ),
    "out-without-html": ("--qrels {qrels} {a} {b} --out x.html", "--out: only with --format html"),
    "evaluation-without-report": (
        "--qrels {qrels} {a} {b} --evaluation dense",
        "--evaluation: only picks evaluations of JSON reports and baselines",
    ),
}


@pytest.mark.parametrize(("argv", "message"), BAD_RUNS.values(), ids=BAD_RUNS)
def test_bad_input_when_comparing_runs_exits_two_naming_it(
    runs, capsys: pytest.CaptureFixture[str], argv: str, message: str
) -> None:
    code, _ = cli("compare " + argv, runs)
    err = capsys.readouterr().err
    assert code == 2, err
    assert err.startswith("ragmetrics compare: error: ")
    assert message in err


def test_json_files_that_cannot_be_compared_are_named(
    runs, capsys: pytest.CaptureFixture[str]
) -> None:
    def error(template: str) -> str:
        assert cli(template, runs)[0] == 2
        return capsys.readouterr().err

    old = runs["old"] = runs["tmp"] / "old.json"
    old.write_text(json.dumps({"metrics": {"mrr": 0.5}, "num_queries": 6}))
    assert f"{old}: written by an earlier 'ragmetrics evaluate --format json'" in error(
        "compare --qrels {qrels} {a} {old}"
    )
    other = runs["other"] = runs["tmp"] / "other.json"
    other.write_text(json.dumps({"hello": 1}))
    assert f"{other}: not a TREC run, a 'ragmetrics evaluate --format json' output" in error(
        "compare --qrels {qrels} {a} {other}"
    )
    mrr = runs["mrr"] = evaluate_output("mrr.json", "--qrels {qrels} --run {b} -m mrr", runs)
    assert f"{mrr}: has no per-query values of ndcg_at_10 (it has mrr)" in error(
        "compare --qrels {qrels} {a} {mrr} -m ndcg_at_10"
    )
    runs["other_qrels"] = runs["tmp"] / "other-qrels.txt"
    runs["other_qrels"].write_text("q1 0 r1 1\n")
    assert f"{mrr}: was evaluated on other judgments than {runs['other_qrels']}" in error(
        "compare --qrels {other_qrels} {a} {mrr}"
    )
    newer = json.loads(mrr.read_text())
    newer["version"] = 99
    mrr.write_text(json.dumps(newer))
    assert "upgrade pytest-ragmetrics" in error("compare {a} {mrr} --qrels {qrels}")


def test_runs_options_in_the_two_argument_form_are_refused(
    files: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    assert run("compare", str(files[0]), str(files[1]), "-m", "mrr")[0] == 2
    assert "-m: only when comparing runs (give --qrels or --dataset)" in capsys.readouterr().err


def test_scoring_options_apply_to_runs_only(runs, capsys: pytest.CaptureFixture[str]) -> None:
    runs["a_json"] = evaluate_output("a.json", "--qrels {qrels} --run {a}", runs)
    assert cli("compare {a_json} {a_json} {a_json} --gain exponential", runs)[0] == 2
    assert "--gain: only for TREC runs" in capsys.readouterr().err


# -- the advice fits what was compared ------------------------------------------------------


def test_two_reports_are_not_advised_to_bless_a_baseline(files: tuple[Path, Path]) -> None:
    code, text = run("compare", str(files[0]), str(files[1]))
    assert code == 1
    assert f"regressed against the baseline in {files[0]}, a JSON report:" in text
    assert "  ndcg_at_10: baseline 1.0000 → current 0.6667, Δ -0.3333" in text
    assert "--ragmetrics-update-baseline" not in text
    assert "a report records one run, it is not a baseline" in text


def test_a_baseline_and_a_report_are_advised_to_bless(
    tmp_path: Path, files: tuple[Path, Path]
) -> None:
    entry = copy.deepcopy(report({f"q{i}": 1.0 for i in range(30)})["evaluations"][0])
    test, name = entry.pop("test"), entry.pop("name")
    baseline = tmp_path / "baseline.json"
    baseline.write_text(json.dumps({"schema_version": 1, "entries": {test: {name: entry}}}))
    code, text = run("compare", str(baseline), str(files[1]))
    assert code == 1
    assert f"regressed against the baseline in {baseline}:" in text
    assert (
        f"bless them with --ragmetrics-update-baseline and commit what it lists ({baseline} "
        "and the dataset digests beside it)." in text
    )


def test_two_not_comparable_reports_are_not_advised_to_bless(
    tmp_path: Path, files: tuple[Path, Path]
) -> None:
    other = json.loads(files[1].read_text())
    other["evaluations"][0]["semantics"]["gain"] = "exponential"
    path = tmp_path / "other.json"
    path.write_text(json.dumps(other))
    code, text = run("compare", str(files[0]), str(path))
    assert code == 1
    assert f"is not comparable with its baseline in {files[0]}, a JSON report:" in text
    assert "--ragmetrics-update-baseline" not in text


def test_a_recorded_k_is_reported_an_unknown_one_is_not_a_change(tmp_path: Path) -> None:
    def with_k(k: int | None) -> Path:
        data = report({f"q{i}": (0.0 if i < 10 else 1.0) for i in range(30)})
        data["evaluations"][0]["k"] = k
        path = tmp_path / f"k{k}.json"
        path.write_text(json.dumps(data))
        return path

    before = tmp_path / "before.json"
    before.write_text(json.dumps(report({f"q{i}": 1.0 for i in range(30)})))
    assert "configuration changed: k: 10 → 5" in run("compare", str(before), str(with_k(5)))[1]
    text = run("compare", str(before), str(with_k(None)))[1]
    assert "regressed against" in text and "configuration changed" not in text


# -- Markdown and HTML ----------------------------------------------------------------------


def test_markdown_details_are_a_list(files: tuple[Path, Path]) -> None:
    code, text = run("compare", str(files[0]), str(files[1]), "--format", "markdown")
    assert code == 1
    assert "| tests/test_x.py::test_dense [dense] | ndcg_at_10 |" in text
    assert "### What failed" in text
    assert (
        "\n**ragmetrics: 'dense' (tests/test_x.py::test_dense) regressed against the baseline "
        f"in {files[0]}, a JSON report:**\n\n"
    ) in text
    assert "\n- ndcg_at_10: baseline 1.0000 → current 0.6667, Δ -0.3333" in text
    assert "\n  - queries: 10 worse, 0 better, 20 unchanged\n" in text
    assert "\n\nWhat to do: fix the regression;" in text


def test_markdown_of_runs(runs) -> None:
    code, text = cli("compare --qrels {qrels} {b} {a} -m mrr --format markdown", runs)
    assert code == 1
    assert "| run | input | k | mrr | status |" in text
    assert f"| {runs['b']} | TREC run | unknown | **0.9167** | reference |" in text
    assert f"| {runs['a']} | TREC run | unknown | 0.6389 (-0.2778 ▼) | regressed |" in text
    assert "| mrr | 0.9167 | 0.6389 | -0.2778 | [" in text
    assert "| 1 | 2 | 3 | regressed |" in text  # wins ties losses of A against B
    assert "### What failed" in text and "\n- mrr: Δ -0.2778" in text


def test_html_of_runs(runs) -> None:
    from tests.helpers.html_documents import ParsedPage

    runs["out"] = runs["tmp"] / "runs.html"
    code, text = cli("compare --qrels {qrels} {a} {b} {c} -m mrr --format html --out {out}", runs)
    assert code == 1
    assert text == f"3 runs, 1 failed; wrote {runs['out']}\n"
    page = ParsedPage(runs["out"].read_text())
    assert f"ragmetrics: 3 runs compared with {runs['a']}" in page.text
    assert "◆ reference" in page.text and "▼ regressed" in page.text
    assert "▲ improved" in page.text
    assert "unknown (not recorded" in page.text  # k of a TREC run
    # Per query, the reference's values and rankings are the baseline's: q1 lost its hit.
    assert "q11.00000.0000-1.00001 → not retrieved" in page.text


# --------------------------------------------------------------------------------------------
# One rule for Δ (pytest_ragmetrics/deltas.py): better / worse / tied and how a Δ is written.

# Values as a JSON report holds them: full precision, so only rounding digits could differ.
UNROUNDED = {f"q{i}": (i * 0.1234567891) % 1 for i in range(20)}


@pytest.fixture
def unrounded(tmp_path: Path) -> Path:
    path = tmp_path / "report.json"
    path.write_text(json.dumps(report(UNROUNDED)))
    return path


def test_a_report_against_itself_is_tied_everywhere(unrounded: Path, tmp_path: Path) -> None:
    both = (str(unrounded), str(unrounded))
    code, text = run("compare", *both)
    assert code == 0
    row = next(line for line in text.splitlines() if "[dense]" in line)
    assert row.split()[-2:] == ["0.0000", "ok"]
    code, markdown = run("compare", *both, "--format", "markdown")
    assert "| 0.4728   | 0.4728  | 0.0000 | ok       |" in markdown
    code, text = run("compare", *both, "--format", "json")
    m = json.loads(text)["evaluations"][0]["metrics"][0]
    assert (m["queries_better"], m["queries_worse"], m["queries_same"]) == (0, 0, 20)
    assert m["delta"] == 0.0 and str(m["delta"]) == "0.0"  # not -0.0
    assert [str(x) for x in m["ci95"]] == ["0.0", "0.0"] and m["p_value"] == 1.0
    out = tmp_path / "page.html"
    code, _ = run("compare", *both, "--format", "html", "--out", str(out))
    page = out.read_text()
    assert "0 / 20 / 0" in page  # worse / unchanged / better
    assert "All 20 queries unchanged." in page
    for shown in (row, markdown, page):
        assert "-0.0000" not in shown and "+0.0000" not in shown


def test_runs_form_of_a_report_against_itself_is_tied(unrounded: Path) -> None:
    code, text = run("compare", "--evaluation", "dense", str(unrounded), str(unrounded))
    assert code == 0
    row = next(line for line in text.splitlines() if line.startswith("ndcg_at_10"))
    assert row.split()[3:10] == ["0.0000", "[0.0000,", "0.0000]", "1.0000", "0", "20", "0"]
    assert "most changed" not in text
    code, markdown = run(
        "compare", "--evaluation", "dense", "--format", "markdown", *[str(unrounded)] * 2
    )
    assert "| 0.0000 | [0.0000, 0.0000] | 1.0000 | 0 | 20 | 0 | ok |" in markdown


def test_delta_rule_counts_and_writes_alike() -> None:
    from pytest_ragmetrics.deltas import change, delta, delta_text, tally

    assert delta(0.1234564, 0.1234561) == 0.0  # equal at the stored precision: tied
    assert change(delta(0.1234564, 0.1234561)) == "tied" and delta_text(-1e-9) == "0.0000"
    assert delta_text(-0.0) == "0.0000" and delta_text(0.25) == "+0.2500"
    # A real change below four digits is counted, and written so that it shows.
    assert change(-0.00003) == "worse" and delta_text(-0.00003) == "-0.00003"
    assert tally([-0.00003, 0.0, 4e-7, 0.5, float("nan")]) == (1, 2, 1)
    assert delta_text(None) == delta_text(float("nan")) == "n/a"


# --------------------------------------------------------------------------------------------
# What the baseline holds and the report lacks is named, and fails with --strict.


@pytest.fixture
def renamed(tmp_path: Path, files: tuple[Path, Path]) -> tuple[Path, Path]:
    """The regressed report with its test id renamed: nothing of the baseline is compared."""
    after = json.loads(files[1].read_text())
    after["evaluations"][0]["test"] = "tests/test_y.py::test_dense"
    path = tmp_path / "renamed.json"
    path.write_text(json.dumps(after))
    return files[0], path


def test_baseline_evaluations_missing_from_the_report_are_named(
    renamed: tuple[Path, Path], tmp_path: Path
) -> None:
    before, after = (str(p) for p in renamed)
    missing = "tests/test_x.py::test_dense [dense]"
    headline = f"not compared: 1 evaluation of {before} is missing from {after}:"
    code, text = run("compare", before, after)
    assert code == 0  # named, not failed, without --strict
    assert f"{headline}\n  {missing}\n" in text
    assert "give --strict to fail" in text
    assert text.rstrip().endswith(
        f"1 evaluations (1 new: not in {before}), 0 failed; 1 evaluation of {before} not in "
        f"{after}: not compared"
    )
    code, text = run("compare", before, after, "--format", "markdown")
    assert "### Not compared" in text and f"- {headline}\n  - {missing}\n" in text
    code, text = run("compare", before, after, "--format", "json")
    data = json.loads(text)
    assert data["missing"] == 1 and data["new"] == 1 and data["strict_failed"] is False
    assert data["not_compared"]["evaluations"] == [
        {"test": "tests/test_x.py::test_dense", "name": "dense", "layer": "retrieval"}
    ]
    out = tmp_path / "page.html"
    code, text = run("compare", before, after, "--format", "html", "--out", str(out))
    assert "1 evaluation of" in text and "not compared" in text
    page = out.read_text()
    assert 'id="not-compared"' in page and headline in page and missing in page


def test_strict_fails_on_what_was_not_compared(
    renamed: tuple[Path, Path], files: tuple[Path, Path]
) -> None:
    before, after = (str(p) for p in renamed)
    code, text = run("compare", before, after, "--strict")
    assert code == 1
    assert "--strict: what was not compared fails the comparison (exit code 1)" in text
    assert text.rstrip().endswith("(--strict: failed)")
    code, text = run("compare", before, after, "--strict", "--format", "json")
    assert code == 1 and json.loads(text)["strict_failed"] is True
    # Everything compared: --strict changes nothing.
    assert run("compare", str(files[0]), str(files[0]), "--strict")[0] == 0


def test_metrics_and_queries_the_report_lacks_are_named(tmp_path: Path) -> None:
    before = report({f"q{i}": 1.0 for i in range(10)})
    entry = before["evaluations"][0]
    entry["metrics"]["mrr"] = 1.0
    for values in entry["per_query"].values():
        values["mrr"] = 1.0
    after = report({f"q{i}": 1.0 for i in range(2, 10)})  # no mrr, q0 and q1 gone
    paths = tmp_path / "before.json", tmp_path / "after.json"
    for path, data in zip(paths, (before, after), strict=True):
        path.write_text(json.dumps(data))
    code, text = run("compare", *map(str, paths))
    assert code == 1  # the queries that left had values: lost, a regression of its own kind
    assert "ndcg_at_10: lost: 2 of 10 queries had a value in the baseline" in text
    where = "tests/test_x.py::test_dense [dense]"
    assert f"  {where}: metrics not in the report: mrr\n" in text
    assert f"  {where}: 2 queries not in the report (their values count as lost): q0, q1\n" in text
    assert "1 compared without some metrics or queries" in text
    code, text = run("compare", *map(str, paths), "--format", "json", "--strict")
    assert code == 1
    data = json.loads(text)
    assert data["evaluations"][0]["metrics_not_compared"] == ["mrr"]
    assert data["not_compared"]["queries"][0]["queries"] == ["q0", "q1"]


def test_strict_is_refused_when_comparing_runs(runs, capsys: pytest.CaptureFixture[str]) -> None:
    code, _ = cli("compare --qrels {qrels} {a} {b} --strict", runs)
    assert code == 2
    assert "--strict: only in the two-argument form" in capsys.readouterr().err


def test_runs_form_names_the_reference_queries_a_run_lacks(tmp_path: Path) -> None:
    paths = tmp_path / "ref.json", tmp_path / "run.json"
    paths[0].write_text(json.dumps(report({f"q{i}": 1.0 for i in range(10)})))
    paths[1].write_text(json.dumps(report({f"q{i}": 1.0 for i in range(2, 10)})))
    args = ("compare", "--evaluation", "dense", *map(str, paths))
    code, text = run(*args)
    assert code == 1  # values the reference had and the run lacks are lost
    note = (
        f"{paths[1]}: 2 queries of the reference not in this run (their values count as lost): "
        "q0, q1"
    )
    assert f"note: {note}\n" in text
    code, text = run(*args, "--format", "json")
    assert note in json.loads(text)["comparisons"][0]["notes"]


def test_a_delta_over_other_queries_than_the_means_shown_is_marked(runs) -> None:
    """The grid showed the reference's mean over all queries and a Δ paired over fewer, so
    a run could look higher than the reference and be flagged as a drop."""
    lines = runs["b"].read_text().splitlines(keepends=True)
    fewer = runs["tmp"] / "fewer.run"
    fewer.write_text("".join(line for line in lines if line.split()[0] in ("q1", "q2", "q3")))
    runs["fewer"] = fewer
    code, text = cli("compare --qrels {qrels} {a} {fewer} -m mrr --query-set intersection", runs)
    assert code == 1  # a query of the reference is lost
    row = next(line for line in text.splitlines() if "fewer.run " in line and "TREC run" in line)
    assert "†)" in row
    assert "† Δ over the queries both runs have, not those of the means shown" in text
    code, text = cli("compare --qrels {qrels} {a} {b} -m mrr", runs)
    assert code == 0
    assert "†" not in text  # the same queries: the Δ is the difference of the means shown
    _, text = cli(
        "compare --qrels {qrels} {a} {fewer} -m mrr --query-set intersection --format markdown",
        runs,
    )
    assert "†)" in text and "† Δ over the queries both runs have" in text
