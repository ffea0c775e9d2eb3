"""``ragmetrics compare`` over several datasets (issue 27 item 5): per metric a systems x
pairs table with the mean, ``-`` and no mean for a system that misses a pair, the best of each
column in bold in Markdown; each system against the reference pair by pair."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import main
from tests.plugin.test_datasets import write_beir

ALPHA_ANIMALS = (
    "q1 Q0 d1 1 2.0 alpha\nq1 Q0 d9 2 1.0 alpha\nq2 Q0 d2 1 2.0 alpha\nq2 Q0 d9 2 1.0 alpha\n"
    "q3 Q0 d9 1 2.0 alpha\nq3 Q0 d3 2 1.0 alpha\nq4 Q0 d9 1 2.0 alpha\n"
)  # mrr 1, 1, 0.5, 0 -> 0.625
ALPHA_PLANETS = "m1 Q0 p1 1 2.0 alpha\nm2 Q0 p9 1 2.0 alpha\nm3 Q0 p3 1 2.0 alpha\n"  # 0.6667
BETA_ANIMALS = "".join(f"q{i} Q0 d{i} 1 2.0 beta\n" for i in range(1, 5))  # mrr 1.0


@pytest.fixture
def setup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Two datasets; system alpha has runs on both, beta (better) only on animals."""
    monkeypatch.chdir(tmp_path)
    docs = {"d1": "cats purr", "d2": "dogs bark", "d3": "birds sing", "d4": "fish swim"}
    queries = {"q1": "a", "q2": "b", "q3": "c", "q4": "d"}
    write_beir(tmp_path / "animals", docs, queries, {"test": {q: {f"d{q[1]}": 1} for q in queries}})
    planets = {"m1": {"p1": 1}, "m2": {"p2": 1}, "m3": {"p3": 1}}
    texts = {"p1": "mars", "p2": "venus", "p3": "moons"}
    write_beir(tmp_path / "planets", texts, dict.fromkeys(planets, "x"), {"test": planets})
    for system, runs in {
        "alpha": {"animals-test": ALPHA_ANIMALS, "planets-test": ALPHA_PLANETS},
        "beta": {"animals-test": BETA_ANIMALS},
    }.items():
        (tmp_path / system).mkdir()
        for key, text in runs.items():
            (tmp_path / system / f"{key}.trec").write_text(text)
    return ["compare", "--dataset", "animals=animals", "--dataset", "planets=planets", "-m", "mrr"]


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main(argv)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_table_shows_a_dash_and_no_mean_for_a_missing_pair(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli([*setup, "alpha", "beta"], capsys)
    assert code == 0, err
    lines = out.splitlines()
    header = lines.index(next(line for line in lines if line.startswith("mrr ")))
    assert lines[header].split() == ["mrr", "animals-test", "planets-test", "mean"]
    assert lines[header + 2].split() == ["alpha", "0.6250", "0.6667", "0.6458"]
    # beta: better on animals (Δ against alpha there), no run on planets: no mean at all.
    assert lines[header + 3].split() == ["beta", "1.0000", "(+0.3750)", "-", "-"]
    assert "- means no value on that pair; a row with one has no mean" in out
    verdicts = {line.split()[0]: line.split()[1:] for line in lines if line.startswith("beta ")}
    assert verdicts["beta"] == ["improved", "-"]
    assert out.rstrip().endswith("2 systems on 2 pairs, each against alpha: 0 failed")


def test_markdown_has_the_best_of_each_column_in_bold(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli([*setup, "alpha", "beta", "--format", "markdown"], capsys)
    assert code == 0
    assert "| mrr | animals-test | planets-test | mean |\n|---|---:|---:|---:|\n" in out
    assert "| alpha | 0.6250 | 0.6667 | 0.6458 |" in out
    assert "| beta | **1.0000** (+0.3750) | - | - |" in out
    assert "Best value per column in bold; - means no value on that pair;" in out
    assert "| beta | improved | - |" in out


def test_json_has_the_tables_and_each_pairs_comparison(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli([*setup, "alpha", "beta", "--format", "json"], capsys)
    assert code == 0
    document = json.loads(out)
    assert document["schema"] == "pytest-ragmetrics/comparison-by-dataset"
    assert (document["reference"], document["pairs"]) == ("alpha", ["animals-test", "planets-test"])
    rows = {r["evaluation"]: r for r in document["by_dataset"]["mrr"]["rows"]}
    assert rows["alpha"]["mean"] == pytest.approx((0.625 + 2 / 3) / 2)
    assert rows["beta"]["mean"] is None and rows["beta"]["missing"] == ["planets-test"]
    assert rows["beta"]["deltas"] == {"animals-test": 0.375}
    assert document["status"]["beta"] == {"animals-test": "improved", "planets-test": "-"}
    assert document["comparisons"]["planets-test"] is None  # alpha alone there
    animals = document["comparisons"]["animals-test"]
    assert [c["status"] for c in animals["comparisons"]] == ["improved"]


def test_a_system_worse_on_a_pair_fails_and_says_where(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli([*setup, "beta", "alpha"], capsys)
    assert code == 1
    assert "on animals-test: ragmetrics: alpha is worse than the reference beta:" in out
    assert "planets-test: the reference beta has no run here" in out
    verdicts = [line for line in out.splitlines() if line.startswith("alpha ")][-1]
    assert verdicts.split()[-3:] == ["regressed", "not", "compared"]


def test_runs_given_as_pair_equals_run_are_named_by_their_tag(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    folders = cli([*setup, "alpha", "beta", "--format", "json"], capsys)[1]
    runs = ["animals-test=alpha/animals-test.trec", "planets=alpha/planets-test.trec"]
    given = cli([*setup, *runs, "animals=beta/animals-test.trec", "--format", "json"], capsys)[1]
    expected, found = json.loads(folders), json.loads(given)
    assert found["by_dataset"] == expected["by_dataset"]
    assert found["systems"] == ["alpha", "beta"]


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["alpha", "planets"], "planets: a folder of runs holds one file per pair named by"),
        (["alpha"], "compare needs at least two systems"),
        (["alpha", "beta", "--out", "x.html"], "--out: only with --format html"),
        (
            ["alpha", "beta", "--format", "html", "--out", "beta/animals-test.trec"],
            "--out beta/animals-test.trec: that is the run beta/animals-test.trec file",
        ),
        (["alpha", "animals-test=alpha/animals-test.trec"], "'alpha' already has a run on"),
        (["alpha", "alpha/animals-test.trec"], "alpha/animals-test.trec: with several datasets"),
    ],
)
def test_what_cannot_be_compared_is_named(
    setup: list[str], capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    code, out, err = cli([*setup, *extra], capsys)
    assert (code, out) == (2, "")
    assert message in err


# -- HTML -----------------------------------------------------------------------------------------


def html_tables(page: str) -> list[list[list[str]]]:
    """The page's tables of typed cells (class "grid"): rows of cells as HTML text."""
    import re

    tables = re.findall(r'<table class="grid sortable">(.*?)</table>', page, re.S)
    return [
        [re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row) for row in re.findall(r"<tr>(.*?)</tr>", t)]
        for t in tables
    ]


def test_html_draws_the_systems_by_pairs_table_with_bold_best_and_a_dash(
    setup: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli([*setup, "alpha", "beta", "--format", "html", "--out", "c.html"], capsys)
    assert code == 0, err
    assert out == "2 systems on 2 pairs, 0 failed; wrote c.html\n"
    page = (tmp_path / "c.html").read_text(encoding="utf-8")
    summary, verdicts = html_tables(page)
    bdi = "<bdi>{}</bdi>".format
    assert summary[0] == [bdi(h) for h in ("mrr", "animals-test", "planets-test", "mean")]
    # Bold only where a column has two values; beta has no run on planets: "-", no mean.
    assert summary[1] == [bdi("alpha"), bdi("0.6250"), bdi("0.6667"), bdi("0.6458")]
    assert summary[2] == [bdi("beta"), '<b><bdi>1.0000</bdi></b> <span class="d">(+0.3750)</span>',
                          bdi("-"), bdi("-")]  # fmt: skip
    assert "Best value per column in bold; - means no value on that pair;" in page
    assert verdicts[1:] == [
        [bdi("alpha"), bdi("reference"), bdi("reference")],
        [bdi("beta"), bdi("improved"), bdi("-")],
    ]
    # Every system's evaluation on every pair below, the reference marked on each pair.
    for label in ("alpha [animals-test]", "alpha [planets-test]", "beta [animals-test]"):
        assert f"<bdi>{label}</bdi>" in page.replace("<wbr>", "")
    assert "2 systems compared with alpha on 2 datasets" in page


def test_html_lists_a_system_that_failed_on_a_pair(
    setup: list[str], capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    code, out, err = cli([*setup, "beta", "alpha", "--format", "html"], capsys)
    assert code == 1, err
    verdicts = html_tables(out)[1]
    assert verdicts[2] == ["<bdi>alpha</bdi>", "<bdi>regressed</bdi>", "<bdi>not compared</bdi>"]
    assert "1 failed." in out
    problems = out[out.index('<ul class="problems">') : out.index("</header>")]
    assert "alpha [animals-test]" in problems.replace("<wbr>", "")
    assert "<b>mrr</b> 1.0000 → 0.6250" in problems
    # planets has no run of the reference beta: its systems are shown, not compared.
    assert "planets-test: the reference beta has no run here" in out


@pytest.mark.parametrize("out", ["planets/corpus.jsonl", "animals/qrels/test.tsv", "animals/new"])
def test_the_html_page_is_not_written_over_a_dataset_file(
    setup: list[str], capsys: pytest.CaptureFixture[str], out: str
) -> None:
    before = {p: p.read_bytes() for p in Path().rglob("*") if p.is_file()}
    code, _, err = cli([*setup, "alpha", "beta", "--format", "html", "--out", out], capsys)
    assert code == 2 and f"--out {out}: inside the --dataset " in err, err
    assert {p: p.read_bytes() for p in Path().rglob("*") if p.is_file()} == before


def test_a_run_named_after_no_pair_is_an_error_where_a_pair_lacks_its_run(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """beta's planets run misnamed ``planet-test.trec`` was not read: beta showed ``-`` on
    planets-test, was compared on animals only, exit 0."""
    Path("beta/planet-test.trec").write_text(ALPHA_PLANETS.replace("alpha", "beta"))
    code, out, err = cli([*setup, "alpha", "beta"], capsys)
    assert (code, out) == (2, "")
    assert err == (
        "ragmetrics compare: error: beta: planet-test.trec matches no --dataset pair and there is "
        "no run for planets-test: a misnamed file? A run is named after its pair, e.g. "
        "planets-test.trec (the pairs are animals-test, planets-test)\n"
    )


def test_a_run_named_after_no_pair_is_named_in_a_note_where_every_pair_has_one(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # A folder may hold runs of more pairs than are compared: a note, in every format.
    Path("alpha/moons-test.trec").write_text(ALPHA_PLANETS)
    Path("alpha/README.md").write_text("not a run")
    note = "alpha: moons-test.trec not read: named after no --dataset pair (the pairs are "
    note += "animals-test, planets-test)"
    code, out, err = cli([*setup, "alpha", "beta"], capsys)
    assert code == 0, err
    assert f"note: {note}\n" in out and "README" not in out
    code, out, _ = cli([*setup, "alpha", "beta", "--format", "json"], capsys)
    assert json.loads(out)["notes"][0] == note
    code, out, _ = cli([*setup, "alpha", "beta", "--format", "markdown"], capsys)
    assert f"- {note}\n" in out


def test_two_runs_of_one_pair_in_a_folder_are_refused(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    """Only the first suffix's file was read, the other silently not."""
    Path("beta/animals-test.run").write_text(BETA_ANIMALS)
    code, _, err = cli([*setup, "alpha", "beta"], capsys)
    assert code == 2
    assert (
        "beta: animals-test.trec and animals-test.run are both runs of animals-test; keep one"
        in (err)
    )


def test_a_tolerance_for_a_metric_not_compared_is_refused_over_several_datasets(
    setup: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli([*setup, "alpha", "beta", "--tolerance", "map=0.1"], capsys)
    assert code == 2
    assert "--tolerance: map=0.1 names a metric that is not compared here (the metrics " in err
    assert "compared: mrr)" in err
