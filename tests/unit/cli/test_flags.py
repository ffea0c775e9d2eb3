"""The ``ragmetrics`` command's flags (issue 26 item 3): each defined once, the ones with an
ini key declared through options.py, repeats that add up or are refused (never the last value
kept silently), and the help of every command pinned to the committed reference page."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from pytest_ragmetrics.cli import build_parser, main
from tests.helpers.paths import REPO
from tests.unit.cli.test_datasets import animals_and_planets

ROOT = REPO
CLI = ROOT / "pytest_ragmetrics" / "cli"


def commands() -> dict[str, argparse.ArgumentParser]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def flag_actions() -> list[tuple[str, argparse.Action]]:
    return [
        (name, action)
        for name, parser in commands().items()
        for action in parser._actions
        if not isinstance(action, argparse._HelpAction)
    ]


def test_each_flag_is_defined_in_one_place() -> None:
    """The issue counted --format defined 6 times, --dataset 5, --split 5, --out 4."""
    calls = {
        path.name: len(re.findall(r"\badd_argument\(", path.read_text(encoding="utf-8")))
        for path in CLI.glob("*.py")
    }
    assert {name: n for name, n in calls.items() if n} == {"flags.py": 1}
    # Every flag of every command reads its value the same way wherever it appears.
    shapes: dict[str, set[tuple[object, ...]]] = {}
    for _, action in flag_actions():
        for spelling in action.option_strings or [action.dest]:
            shape = (type(action), action.nargs, action.const, action.type)
            shapes.setdefault(spelling, set()).add(shape)
    assert {s: v for s, v in shapes.items() if len(v) > 1} == {}
    assert shapes["--format"] and shapes["--dataset"] and shapes["--out"]


def test_every_action_comes_from_the_flag_table() -> None:
    from pytest_ragmetrics.cli.flags import FLAGS

    spellings = [s for flag in FLAGS.values() for s in flag.spellings]
    assert len(spellings) == len(set(spellings))  # one entry per spelling
    for command, action in flag_actions():
        flag = getattr(action, "flag", None)
        assert flag is not None, (command, action.option_strings)
        assert flag is FLAGS[action.option_strings[-1] if action.option_strings else action.dest]


def test_flags_with_an_ini_key_are_declared_through_options() -> None:
    from pytest_ragmetrics.cli.flags import FLAGS
    from pytest_ragmetrics.options import OPTION, OPTIONS

    declared = {option.cli for option in OPTIONS if option.cli}
    used = {s for _, action in flag_actions() for s in action.option_strings}
    assert declared <= used  # options.py names no flag the command lacks
    for option in OPTIONS:
        if option.cli is None:
            continue
        flag = FLAGS[option.cli]
        assert flag.setting is not None, option.cli
        # A spelling two settings share (--model: the retriever's, the judge's) reads them alike.
        assert OPTION[flag.setting].parse is option.parse, option.name
    # A value the setting refuses is refused on the command line with the setting's message.
    with pytest.raises(SystemExit):
        build_parser().parse_args(["compare", "a", "b", "--gain", "cubic"])


@pytest.fixture
def animals_planets(tmp_path: Path) -> dict[str, str]:
    animals, planets = animals_and_planets(tmp_path)
    run = tmp_path / "run.trec"
    run.write_text(
        "q1 Q0 d1 1 2.0 sys\nq2 Q0 d1 1 2.0 sys\nq3 Q0 d3 1 2.0 sys\n"
        "m1 Q0 p1 1 2.0 sys\nm2 Q0 p2 1 2.0 sys\n"
    )
    return {"animals": animals, "planets": planets, "run": str(run)}


def test_repeated_split_flags_add_up(
    animals_planets: dict[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's command: the second --split used to replace the first (dev was dropped,
    exit 0)."""
    f = animals_planets
    args = ["evaluate", "--dataset", f["animals"], "--dataset", f["planets"], "-m", "recall_at_1"]
    args += ["--split", "animals=test,dev", "--split", "planets=test", "--format", "json"]
    runs = [f"{pair}={f['run']}" for pair in ("animals-test", "animals-dev", "planets-test")]
    assert main([*args, *(x for r in runs for x in ("--run", r))]) == 0
    table = json.loads(capsys.readouterr().out)["by_dataset"]["recall_at_1"]
    assert table["columns"] == ["animals-test", "animals-dev", "planets-test"]
    [row] = table["rows"]
    assert row["values"] == {"animals-test": 0.5, "animals-dev": 1.0, "planets-test": 1.0}
    # The same dataset named in two --split values: both splits.
    args = ["evaluate", "--dataset", f["animals"], "--split", "animals=test"]
    args += ["--split", "animals=dev", "--run", f"animals-dev={f['run']}", "--format", "json"]
    assert main([*args, "--run", f"animals-test={f['run']}", "-m", "recall_at_1"]) == 0
    columns = json.loads(capsys.readouterr().out)["by_dataset"]["recall_at_1"]["columns"]
    assert columns == ["animals-test", "animals-dev"]


@pytest.mark.parametrize(
    "argv",
    [
        ["evaluate", "--qrels", "A", "--qrels", "B", "--run", "R"],
        ["compare", "--gain", "linear", "--gain", "exponential", "a", "b"],
        ["retrieve", "--dataset", "d", "--retriever", "bm25", "--out", "o", "--k", "5", "--k", "9"],
        ["pool", "--qrels", "q", "--run", "r", "--out", "a.jsonl", "--out", "b.jsonl"],
    ],
    ids=["qrels", "gain", "k", "out"],
)
def test_a_one_value_flag_given_twice_is_refused(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    flag = next(a for a in argv if argv.count(a) > 1 and a.startswith("--"))
    err = capsys.readouterr().err
    assert f"argument {flag}: given twice" in err and "give it once" in err


def test_a_command_that_reads_one_dataset_refuses_several(
    animals_planets: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    f = animals_planets
    out = str(tmp_path / "pool.jsonl")
    argv = ["pool", "--dataset", f["animals"], "--dataset", f["planets"], "--run", f["run"]]
    assert main([*argv, "--out", out]) == 2
    err = capsys.readouterr().err
    assert "one (dataset, split) pair here; got animals-test, planets-test" in err
    argv = ["pool", "--dataset", f["animals"], "--split", "test,dev", "--run", f["run"]]
    assert main([*argv, "--out", out]) == 2
    assert "got animals-test, animals-dev" in capsys.readouterr().err
    assert not Path(out).exists()


def _help(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 0
    return capsys.readouterr().out.rstrip()


def test_the_help_of_every_command_is_pinned(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``ragmetrics --help`` and each command's ``--help``, as the console script prints them,
    are the blocks of docs/reference/cli.md: a change to any flag shows in review as a change
    of that page (python tools/docs_reference.py rewrites it)."""
    monkeypatch.setenv("COLUMNS", "100")
    page = (ROOT / "docs" / "reference" / "cli.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```text\n(.*?)\n```", page, flags=re.S)
    names = ["", *commands()]
    assert len(blocks) == len(names) == 9
    for name, block in zip(names, blocks, strict=True):
        argv = [name, "--help"] if name else ["--help"]
        assert _help(argv, capsys) == block, f"ragmetrics {name} --help"
    top = blocks[0]
    for name in names[1:]:
        assert f"\n    {name}" in top


def test_version_prints_the_package_version(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_ragmetrics import __version__

    assert _help(["--version"], capsys) == f"ragmetrics {__version__}"


def _value_flags() -> list[tuple[str, str]]:
    """(command, spelling) of every flag of every command that takes a value."""
    return [
        (command, action.option_strings[-1])
        for command, action in flag_actions()
        if action.option_strings and action.nargs != 0 and action.dest != "version"
    ]


@pytest.mark.parametrize("value", ["", " "], ids=["empty", "blank"])
def test_an_empty_value_of_any_flag_is_a_usage_error_naming_it(
    value: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``compare --out ''`` said ": cannot write (Is a directory)", ``--tag ''`` wrote the
    retriever's name as the tag and ``--metric=`` said "unknown metric ''": an unset variable
    (``--out=$VAR``) must not become a default or the current folder."""
    flags = _value_flags()
    assert ("compare", "--out") in flags and ("retrieve", "--ray") in flags
    assert len(flags) > 80
    for command, flag in flags:
        with pytest.raises(SystemExit) as exit_:
            build_parser().parse_args([command, f"{flag}={value}"])
        assert exit_.value.code == 2, (command, flag)
        err = capsys.readouterr().err
        assert f"{flag}: the value is empty (an unset variable, as in {flag}=$VAR?)" in err, err
    # The positional arguments too.
    for argv in (["compare", "a.run", value], ["report", value]):
        with pytest.raises(SystemExit):
            build_parser().parse_args(argv)
        assert ": the value is empty (an unset variable?); give a value" in capsys.readouterr().err


def test_ray_alone_still_means_ray_address_or_a_local_cluster() -> None:
    base = ["retrieve", "--dataset", "d", "--retriever", "dense", "--out", "o"]
    assert build_parser().parse_args([*base, "--ray"]).ray is True
    assert build_parser().parse_args([*base, "--ray", "auto"]).ray == "auto"
    assert build_parser().parse_args(base).ray is None


def test_metrics_take_commas_as_the_ini_key_does_in_every_command(
    animals_planets: dict[str, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """``-m ndcg_at_10,map`` said "cutoff '10,map' must be a positive integer" while
    ragmetrics_metrics = "ndcg_at_10,map" is two metrics."""
    from tests.helpers.paths import TEST_DATA

    qrels, run = (str(TEST_DATA / "trec_eval" / name) for name in ("qrels.test", "results.test"))
    other = tmp_path / "other.run"
    other.write_text(Path(run).read_text().replace("STANDARD", "OTHER"))
    for command in (["evaluate", "--run", run], ["compare", run, str(other)]):
        outputs = []
        for metrics in (["-m", "ndcg_at_10,map"], ["-m", "ndcg_at_10", "-m", "map"]):
            assert main([*command, "--qrels", qrels, *metrics, "--format", "json"]) == 0
            outputs.append(json.loads(capsys.readouterr().out))
        assert outputs[0] == outputs[1]
        assert list(outputs[0]["metrics"]) == ["ndcg_at_10", "map"], command
    f = animals_planets
    retrieve = ["retrieve", "--dataset", f["animals"], "--retriever", "bm25", "--out", "o"]
    assert build_parser().parse_args([*retrieve, "-m", "mrr, map", "-m", "P_5"]).metrics == [
        "mrr",
        "map",
        "P_5",
    ]
    # Commas alone name nothing: a usage error, not the default metrics.
    with pytest.raises(SystemExit):
        main(["evaluate", "--qrels", qrels, "--run", run, "-m", ","])
    assert "argument -m/--metric: ',' names nothing; give names separated by commas" in (
        capsys.readouterr().err
    )


@pytest.mark.parametrize("tag", ["a b", "a\tb"])
def test_a_run_tag_with_whitespace_is_refused(tag: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``retrieve --tag 'a b'`` silently wrote the tag a_b (a tab made a seventh column)."""
    with pytest.raises(SystemExit) as exit_:
        main(["retrieve", "--dataset", "d", "--retriever", "bm25", "--out", "o", "--tag", tag])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert (
        f"argument --tag: {tag!r} holds whitespace, which a TREC run's tag column cannot; " in err
    )
    assert err.endswith("write 'a_b'\n")
