"""Fuzzing every file we read, through the CLI and the plugin (RELIABILITY.md, "Fuzzing").

A small project (BEIR dataset, TREC qrels and run, recorded judge verdicts, a blessed baseline
with its dataset digests, a calibration file and a JSON report) is damaged one file at a time:
a JSON value replaced by one of the wrong type, a huge or non-finite number or odd Unicode, a
key removed or added, a byte order mark, CRLF line endings, a truncation, a stray byte. For
every case:

- the exit code is one we document (CLI: 0, 1, 2; pytest: 0, 1, 2, 4), never a crash;
- no traceback and no INTERNALERROR is printed;
- an error (CLI exit 2, pytest usage or collection error, a test error) names the damaged file;
- every file is byte-identical afterwards (the plugin run writes no report and no baseline).

A second part draws hostile strings (terminal controls, bidirectional controls, Markdown
and HTML markup, characters XML cannot hold, lone surrogates) as query ids, evaluation, test
and dataset names, and draws them with every renderer: the terminal summary, Markdown, HTML,
JSON, ``compare`` in every format, and a plugin run's terminal output, JUnit XML and reports
(the checks are ``hostile_renderers``'s: no terminal control, tables keep their columns, no
raw tag, no added line, JUnit parses, JSON keeps the string exactly).

The normal run uses a fast, derandomized profile; ``pytest -m fuzz`` runs the long profile
with fresh random examples.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_ragmetrics.cli import main as cli_main
from tests.helpers.hostile_renderers import (
    HOSTILE,
    check_compare_datasets,
    check_compare_reports,
    check_compare_runs,
    check_renderers,
)
from tests.helpers.hostile_renderers import check_plugin as check_plugin_sinks
from tests.helpers.plugin_project import CONFTEST, UNRELATED_PLUGINS, write_dataset

FAST = settings(
    max_examples=30,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
FAST_PLUGIN = settings(FAST, max_examples=10)
LONG = settings(
    max_examples=600,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
LONG_PLUGIN = settings(LONG, max_examples=120)

TESTS = """
def test_retrieval(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="toy")


def test_per_query(rag_query):
    rag_query.rank_of("d1")


def test_answers(rag_eval, rag_judge):
    assessment = rag_judge.assess("Do cats purr?", "Cats purr. Cats fly.", ["ctx"], query_id="q1")
    rag_eval.answers([assessment], name="judged")
"""
INI = """\
[tool.pytest.ini_options]
ragmetrics_dataset = "data"
ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr groundedness"
ragmetrics_judge = "recorded"
ragmetrics_judge_verdicts = "verdicts.jsonl"
ragmetrics_min_judge_kappa = "0.3"
"""
VERDICTS = (
    '{"query_id": "q1", "answer": "Cats purr. Cats fly.", "claims": ['
    '{"text": "Cats purr.", "supported": true}, {"text": "Cats fly.", "supported": false}]}\n'
)
QRELS_TREC = "q1 0 d1 1\nq2 0 d2 2\nq3 0 d3 1\nq3 0 d4 0\nq4 0 d5 1\n"
RUN_TREC = "q1 Q0 d1 1 3.0 t\nq1 Q0 d2 2 2.0 t\nq2 Q0 d2 1 1.5 t\nq3 Q0 d4 1 1.0 t\n"
ENV = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "HF_HUB_OFFLINE": "1"}
NO_PLUGINS = ("-p", "no:cacheprovider", "-p", "no:xdist", "-p", "no:randomly")
NO_PLUGINS += UNRELATED_PLUGINS

# What an error about each file may call it besides its name (a dataset part, say).
ALSO_NAMED = {
    "corpus.jsonl": ("corpus",),
    "queries.jsonl": ("queries",),
    "test.tsv": ("qrels",),
    "verdicts.jsonl": ("verdicts",),
}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The project after one blessed run, with a report and a calibration of its judge."""
    from pytest_ragmetrics.judges import RecordedJudge
    from pytest_ragmetrics.judges.calibration import CalibrationResult, save_calibration

    root = tmp_path_factory.mktemp("fuzz-template")
    write_dataset(root)
    (root / "pyproject.toml").write_text(INI)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_rag.py").write_text(TESTS)
    (root / "verdicts.jsonl").write_text(VERDICTS)
    (root / "qrels.txt").write_text(QRELS_TREC)
    (root / "run.txt").write_text(RUN_TREC)
    save_calibration(
        root / ".ragmetrics" / "calibration.json",
        CalibrationResult(
            judge=RecordedJudge(root / "verdicts.jsonl").identity(),
            labels={"file": "labels.jsonl", "n": 20},
            n=20,
            accuracy=0.8,
            kappa=0.6,
            confusion={"tp": 8, "fp": 2, "fn": 2, "tn": 8},
        ),
    )
    done = _pytest(root, "--ragmetrics-update-baseline", "--ragmetrics-json=report.json")
    assert done.returncode == 0, done.stdout
    assert (root / ".ragmetrics" / "baseline.json").is_file()
    return root


def _pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", *NO_PLUGINS, *args],
        cwd=root,
        env=ENV,
        capture_output=True,
        text=True,
        timeout=300,
    )


@contextlib.contextmanager
def project_copy(template: Path) -> Iterator[Path]:
    folder = Path(tempfile.mkdtemp(prefix="fuzz-"))
    try:
        root = folder / "p"
        shutil.copytree(template, root, symlinks=True)
        yield root
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and "__pycache__" not in p.parts
    }


# -- damage ------------------------------------------------------------------------------------

ODD_VALUES: list[Any] = [
    None,
    True,
    0,
    -1,
    2**31,
    10**400,
    1e308,
    math.inf,
    -math.inf,
    math.nan,
    "",
    "\u00a0",
    "\u202eevil",
    "\u200b",
    "\ud800",
    "😀",
    "x" * 5000,
    [],
    {},
    [1, "a", None],
    {"a": {"b": [1]}},
]


def _paths(value: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [here]
    if isinstance(value, dict):
        for key in value:
            out += _paths(value[key], (*here, key))
    elif isinstance(value, list):
        for index, item in enumerate(value[:5]):
            out += _paths(item, (*here, index))
    return out


def _replace(value: Any, path: tuple[Any, ...], new: Callable[[Any], Any]) -> Any:
    if not path:
        return new(value)
    copy = dict(value) if isinstance(value, dict) else list(value)
    copy[path[0]] = _replace(value[path[0]], path[1:], new)  # type: ignore[index]
    return copy


@st.composite
def json_damage(draw: st.DrawFn, value: Any) -> Any:
    paths = _paths(value)
    path = draw(st.sampled_from(paths))
    op = draw(st.sampled_from(["replace", "drop", "add", "wrap", "stringify"]))
    if op == "drop" and path:
        parent = path[:-1]

        def drop(container: Any) -> Any:
            copy = dict(container) if isinstance(container, dict) else list(container)
            del copy[path[-1]]
            return copy

        return _replace(value, parent, drop)
    if op == "add":
        extra = draw(st.sampled_from(ODD_VALUES))
        return _replace(
            value,
            path,
            lambda v: {**v, "newer_key": extra} if isinstance(v, dict) else [v, extra],
        )
    if op == "wrap":
        return _replace(value, path, lambda v: [v])
    if op == "stringify":
        return _replace(value, path, lambda v: json.dumps(v))
    odd = draw(st.sampled_from(ODD_VALUES))
    return _replace(value, path, lambda v: odd)


def _dump(value: Any) -> str:
    # allow_nan: Infinity and NaN literals, as a hand edit or another tool might write.
    return json.dumps(value, allow_nan=True)


@st.composite
def text_damage(draw: st.DrawFn, data: bytes) -> bytes:
    op = draw(st.sampled_from(["bom", "crlf", "truncate", "byte", "drop-line", "dup-line", "nul"]))
    if op == "bom":
        return b"\xef\xbb\xbf" + data
    if op == "crlf":
        return data.replace(b"\n", b"\r\n")
    if op == "truncate":
        return data[: draw(st.integers(0, max(len(data) - 1, 0)))]
    at = draw(st.integers(0, len(data)))
    if op == "byte":
        return data[:at] + bytes([draw(st.integers(0, 255))]) + data[at:]
    if op == "nul":
        return data[:at] + b"\x00" + data[at:]
    lines = data.splitlines(keepends=True)
    if not lines:
        return data
    i = draw(st.integers(0, len(lines) - 1))
    if op == "drop-line":
        return b"".join(lines[:i] + lines[i + 1 :])
    return b"".join(lines[: i + 1] + lines[i:])


@st.composite
def damage(draw: st.DrawFn, root: Path, files: list[str]) -> tuple[str, bytes]:
    """(file, new bytes): one file of ``files`` damaged."""
    name = draw(st.sampled_from(files))
    data = (root / name).read_bytes()
    if draw(st.booleans()):
        return name, draw(text_damage(data))
    if name.endswith(".jsonl"):
        lines = data.decode().splitlines()
        i = draw(st.integers(0, len(lines) - 1))
        lines[i] = _dump(draw(json_damage(json.loads(lines[i]))))
        return name, ("\n".join(lines) + "\n").encode()
    if name.endswith(".json"):
        return name, _dump(draw(json_damage(json.loads(data)))).encode()
    lines = data.decode().splitlines()
    i = draw(st.integers(0, len(lines) - 1))
    fields = lines[i].split("\t") if "\t" in lines[i] else lines[i].split(" ")
    j = draw(st.integers(0, len(fields) - 1))
    odd = draw(st.sampled_from(["", "1e999", "nan", "-1", "9" * 30, "d\u00a0x", "\u0661", "x y"]))
    fields[j] = odd
    lines[i] = ("\t" if "\t" in lines[i] else " ").join(fields)
    return name, ("\n".join(lines) + "\n").encode()


def _mentions(text: str, name: str) -> bool:
    base = Path(name).name
    return base in text or any(alias in text for alias in ALSO_NAMED.get(base, ()))


# -- the CLI -----------------------------------------------------------------------------------

CLI_FILES = [
    "qrels.txt",
    "run.txt",
    "data/corpus.jsonl",
    "data/queries.jsonl",
    "data/qrels/test.tsv",
    ".ragmetrics/baseline.json",
    "report.json",
]
CLI_COMMANDS = [
    (["evaluate", "--qrels", "qrels.txt", "--run", "run.txt"], {0}),
    (["evaluate", "--dataset", "data", "--run", "run.txt"], {0}),
    (["compare", ".ragmetrics/baseline.json", "report.json"], {0, 1}),
    (["compare", "report.json", "report.json"], {0}),
    (["compare", "--qrels", "qrels.txt", "run.txt", "run.txt"], {0}),
    (["compare", ".ragmetrics/baseline.json", "report.json", "--format", "html"], {0, 1}),
    (["report", "report.json", "--html", "/dev/null"], {0}),
]


def _cli(root: Path, args: list[str]) -> tuple[int, str]:
    out, err = io.StringIO(), io.StringIO()
    cwd = os.getcwd()
    os.chdir(root)
    try:
        with contextlib.redirect_stderr(err):
            code = cli_main(args, out=out)
    finally:
        os.chdir(cwd)
    return code, err.getvalue()


def check_cli(template: Path, case: tuple[str, bytes]) -> None:
    name, data = case
    with project_copy(template) as root:
        (root / name).write_bytes(data)
        before = snapshot(root)
        for args, clean_codes in CLI_COMMANDS:
            code, err = _cli(root, args)
            where = f"{args} with {name} damaged: exit {code}\n{err}"
            assert code in (0, 1, 2), where
            assert "Traceback" not in err, where
            if code == 2:
                error = err.strip().splitlines()[-1]  # warnings may come first, one line each
                assert error.startswith(f"ragmetrics {args[0]}: error: "), where
                assert _mentions(error, name), where
            elif name not in " ".join(args) and not (name.startswith("data/") and "data" in args):
                assert code in clean_codes, where  # an unrelated file cannot matter
        assert snapshot(root) == before


@FAST
@given(data=st.data())
def test_fuzz_cli(template: Path, data: st.DataObject) -> None:
    check_cli(template, data.draw(damage(template, CLI_FILES)))


@pytest.mark.fuzz
@LONG
@given(data=st.data())
def test_fuzz_cli_long(template: Path, data: st.DataObject) -> None:
    check_cli(template, data.draw(damage(template, CLI_FILES)))


# -- the plugin --------------------------------------------------------------------------------

PLUGIN_FILES = [
    "data/corpus.jsonl",
    "data/queries.jsonl",
    "data/qrels/test.tsv",
    ".ragmetrics/baseline.json",
    ".ragmetrics/calibration.json",
    "verdicts.jsonl",
]


def check_plugin(template: Path, case: tuple[str, bytes]) -> None:
    name, data = case
    with project_copy(template) as root:
        (root / name).write_bytes(data)
        before = snapshot(root)
        done = _pytest(root, "-rfE")
        text = done.stdout + done.stderr
        where = f"{name} damaged: exit {done.returncode}\n{text[-3000:]}"
        assert done.returncode in (0, 1, 2, 4), where
        assert "Traceback" not in text and "INTERNALERROR" not in text, where
        # Test bodies assert nothing: a line of pytest's own traceback display means an
        # exception escaped from our code.
        assert not any(line.startswith("E   ") for line in text.splitlines()), where
        errored = done.returncode in (2, 4) or " error" in text.splitlines()[-1]
        if errored:
            assert _mentions(text, name), where
        assert snapshot(root) == before, f"{name} damaged: a file changed"


@FAST_PLUGIN
@given(data=st.data())
def test_fuzz_plugin(template: Path, data: st.DataObject) -> None:
    check_plugin(template, data.draw(damage(template, PLUGIN_FILES)))


@pytest.mark.fuzz
@LONG_PLUGIN
@given(data=st.data())
def test_fuzz_plugin_long(template: Path, data: st.DataObject) -> None:
    check_plugin(template, data.draw(damage(template, PLUGIN_FILES)))


# -- hostile strings through every renderer ----------------------------------------------------

# What a display sink must neutralise, and ordinary text around it.
HOSTILE_CHARS = (
    "\x1b\x1b[8m\x1b[2K\x1b]8;;\x07\r\n\t\x00\x07\x08\x0b\x0c\x7f\x85\x9b"
    "\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u2028\u2029"
    "\ud800\udfff\ufffe\uffff\ufeff\u00a0"
    "|\\`*_~<>&#=-+[]()!/'\" ;:."
    "aq1 é日😀"
)
hostile_text = st.one_of(
    st.sampled_from(list(HOSTILE.values())),
    st.text(st.sampled_from(HOSTILE_CHARS), min_size=1, max_size=24),
    st.builds(lambda a, b: a + b, st.sampled_from(list(HOSTILE.values())), st.text(max_size=8)),
)
FORMATS = ["table", "markdown", "json", "html"]


@FAST
@given(text=hostile_text)
def test_fuzz_renderers(text: str) -> None:
    check_renderers(text)


@FAST
@given(text=hostile_text, fmt=st.sampled_from(FORMATS))
def test_fuzz_compare(text: str, fmt: str) -> None:
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        check_compare_reports(Path(folder), text, fmt)
        check_compare_runs(Path(folder), text, fmt)
        check_compare_datasets(Path(folder), text, fmt)


@settings(FAST, max_examples=3)
@given(names=st.lists(hostile_text, min_size=1, max_size=4, unique=True))
def test_fuzz_plugin_sinks(pytester: pytest.Pytester, names: list[str]) -> None:
    check_plugin_sinks(pytester, names)


@pytest.mark.fuzz
@LONG
@given(text=hostile_text, fmt=st.sampled_from(FORMATS))
def test_fuzz_renderers_long(text: str, fmt: str) -> None:
    check_renderers(text)
    with tempfile.TemporaryDirectory(prefix="fuzz-") as folder:
        check_compare_reports(Path(folder), text, fmt)
        check_compare_runs(Path(folder), text, fmt)
        check_compare_datasets(Path(folder), text, fmt)


@pytest.mark.fuzz
@settings(LONG, max_examples=40)
@given(names=st.lists(hostile_text, min_size=1, max_size=8, unique=True))
def test_fuzz_plugin_sinks_long(pytester: pytest.Pytester, names: list[str]) -> None:
    check_plugin_sinks(pytester, names)


def test_the_template_itself_is_clean(template: Path) -> None:
    """Without damage every command succeeds: the checks above are about the damage."""
    with project_copy(template) as root:
        for args, codes in CLI_COMMANDS:
            assert _cli(root, args)[0] in codes
        done = _pytest(root)
        assert done.returncode == 0, done.stdout
        assert textwrap.dedent(done.stdout).count("passed") == 1
