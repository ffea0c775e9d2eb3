"""Nothing the plugin does may delete or overwrite what it does not own (RELIABILITY.md).

One test per class of loss: clearing the cache, concurrent baseline updates, outputs that
collide with other files, entries of tests that still exist, writes through symlinks.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.errors import CacheError
from pytest_ragmetrics.fileio import atomic_append_text, atomic_write_text, exclusive_lock
from tests.helpers.plugin_project import CONFTEST, SERIAL_AND_N2, make_project, write_dataset

TESTS = """
    def test_retrieval(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""


def snapshot(root: Path, *, skip: tuple[str, ...] = ()) -> dict[str, str]:
    """Relative path -> sha256 of every file under ``root`` (symlinks as their target)."""
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root).as_posix()
        if any(rel == s or rel.startswith(s + "/") for s in skip):
            continue
        if path.is_symlink():
            out[rel] = "-> " + os.readlink(path)
        elif path.is_file():
            out[rel] = hashlib.sha256(path.read_bytes()).hexdigest()
    return out


# -- clearing the cache ------------------------------------------------------------------------


def test_clear_removes_only_recognisable_entries(tmp_path: Path) -> None:
    root = tmp_path / "project"
    cache = Cache(root)
    identity = {"x": 1}
    cache.arrays("embeddings", identity, lambda: {"e": np.ones(3)})
    cache.json("verdicts", identity, lambda: {"v": 1})
    # Things that are not cache entries, some of them made to look like one.
    (root / ".git" / "objects").mkdir(parents=True)
    (root / ".git" / "HEAD").write_text("ref: refs/heads/main\n")
    (root / "data").mkdir()
    (root / "data" / "corpus.jsonl").write_text('{"_id": "d1", "text": "x"}\n')
    (root / "README.md").write_text("hello\n")
    lookalike = root / "embeddings" / ("a" * 64)  # a key-named folder without a manifest
    lookalike.mkdir()
    (lookalike / "notes.txt").write_text("mine\n")
    mixed = root / "verdicts" / ("b" * 64)  # a manifest, but also a file we never write
    mixed.mkdir()
    (mixed / "manifest.json").write_text("{}")
    (mixed / "thesis.docx").write_text("do not delete")
    (root / "embeddings" / ("c" * 64)).write_text("a file named like a key")
    outside = tmp_path / "outside" / ("d" * 64)
    outside.mkdir(parents=True)
    (outside / "manifest.json").write_text("{}")
    (root / "embeddings" / ("d" * 64)).symlink_to(outside, target_is_directory=True)
    datasets = root / "datasets"
    datasets.mkdir()
    (datasets / "corpus-0123456789abcdef.json.gz").write_bytes(b"digests")
    before = snapshot(root, skip=("embeddings", "verdicts"))
    kept = {p: snapshot(p) for p in (lookalike, mixed, outside) if p.exists()}

    report = Cache(root).clear()

    assert report.removed == {"embeddings": 1, "verdicts": 1}
    assert report.kept >= 6
    assert "cleared 2 cache entries (1 embeddings, 1 verdicts)" in report.describe("x")
    assert "not cache entries" in report.describe("x")
    assert snapshot(root, skip=("embeddings", "verdicts")) == before
    assert {p: snapshot(p) for p in kept} == kept
    assert (root / "embeddings" / ("c" * 64)).read_text() == "a file named like a key"
    assert (root / "embeddings" / ("d" * 64)).is_symlink()
    assert Cache(root).get_arrays("embeddings", identity) is None


def test_clear_cache_in_the_plugin_keeps_the_project(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    (pytester.path / ".git").mkdir()
    (pytester.path / ".git" / "config").write_text("[core]\n")
    state = pytester.path / ".ragmetrics"
    digests = sorted((state / "datasets").iterdir())
    assert digests
    before = snapshot(pytester.path, skip=(".ragmetrics/cache",))
    # The cache folder may hold the baseline (it is its parent here): clearing it must keep
    # the baseline and the digests beside it.
    result = pytester.runpytest("--ragmetrics-cache-dir=.ragmetrics", "--ragmetrics-clear-cache")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["ragmetrics: cleared * cache entries*in .ragmetrics*"])
    assert snapshot(pytester.path, skip=(".ragmetrics/cache",)) == before
    # The project folder itself can never be the cache.
    refused = pytester.runpytest("--ragmetrics-cache-dir=.", "--ragmetrics-clear-cache")
    assert refused.ret == pytest.ExitCode.USAGE_ERROR
    refused.stderr.fnmatch_lines(["*ragmetrics_cache_dir: * is the project folder or holds it*"])
    assert snapshot(pytester.path, skip=(".ragmetrics/cache",)) == before


# -- concurrent baseline updates ---------------------------------------------------------------

WORKER = """
import os, sys, time
import pytest

# Slow the read-modify-write of the baseline down so that the processes really overlap.
from pytest_ragmetrics import baseline as _baseline

_save = _baseline.BaselineStore.save


def _slow_save(self, **options):
    time.sleep(float(os.environ.get("RAG_SAVE_DELAY", "0")))
    _save(self, **options)


_baseline.BaselineStore.save = _slow_save
sys.exit(pytest.main(sys.argv[1:]))
"""


def _start_updates(
    root: Path, groups: list[list[str]], delay: float
) -> list[subprocess.Popen[str]]:
    (root / "run_pytest.py").write_text(WORKER)
    env = {**os.environ, "RAG_SAVE_DELAY": str(delay)}
    env.pop("RAG_WORSE", None)
    return [
        subprocess.Popen(
            [
                sys.executable,
                "run_pytest.py",
                "-q",
                "-p",
                "no:cacheprovider",
                "-p",
                "no:xdist",
                "-p",
                "no:randomly",
                "--ragmetrics-update-baseline",
                *args,
            ],
            cwd=root,
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for args in groups
    ]


def _concurrency_project(root: Path, files: int) -> None:
    write_dataset(root)
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\nragmetrics_dataset = "data"\n'
        'ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr"\n'
    )
    (root / "conftest.py").write_text(CONFTEST)
    for i in range(files):
        (root / f"test_file{i}.py").write_text(
            textwrap.dedent(
                f"""
                def test_a(rag_eval, rag_run):
                    rag_eval.retrieval(rag_run, name="a{i}")

                def test_b(rag_eval, rag_run):
                    rag_eval.retrieval(rag_run, name="b{i}")
                """
            )
        )


@pytest.mark.parametrize("processes", [2, 4])
def test_concurrent_updates_of_different_files_lose_no_entry(
    tmp_path: Path, processes: int
) -> None:
    _concurrency_project(tmp_path, processes)
    procs = _start_updates(tmp_path, [[f"test_file{i}.py"] for i in range(processes)], 0.5)
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
    entries = json.loads((tmp_path / ".ragmetrics" / "baseline.json").read_text())["entries"]
    assert sorted(entries) == sorted(
        f"test_file{i}.py::test_{t}" for i in range(processes) for t in "ab"
    )
    assert not list((tmp_path / ".ragmetrics").glob("*.lock"))  # no lock file stays behind


def test_concurrent_updates_of_the_same_file_keep_every_entry(tmp_path: Path) -> None:
    _concurrency_project(tmp_path, 2)
    groups = [["test_file0.py"], ["test_file0.py"], ["test_file1.py"], ["test_file1.py::test_a"]]
    procs = _start_updates(tmp_path, groups, 0.3)
    for proc in procs:
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
    data = json.loads((tmp_path / ".ragmetrics" / "baseline.json").read_text())
    assert sorted(data["entries"]) == [
        "test_file0.py::test_a",
        "test_file0.py::test_b",
        "test_file1.py::test_a",
        "test_file1.py::test_b",
    ]


def test_updates_through_a_symlink_and_the_real_path_share_one_lock(tmp_path: Path) -> None:
    # One baseline file, two spellings: .ragmetrics/baseline.json links to shared/baseline.json,
    # which half the processes name with --ragmetrics-baseline. A lock beside the path as
    # written gave each spelling its own lock, and overlapping updates dropped entries.
    from pytest_ragmetrics.fileio import lock_beside

    _concurrency_project(tmp_path, 4)
    (tmp_path / "shared").mkdir()
    real = tmp_path / "shared" / "baseline.json"
    real.write_text('{"schema_version": 1, "entries": {}}')
    (tmp_path / ".ragmetrics").mkdir()
    (tmp_path / ".ragmetrics" / "baseline.json").symlink_to(Path("..", "shared", "baseline.json"))
    assert lock_beside(tmp_path / ".ragmetrics" / "baseline.json") == lock_beside(real)
    shared = "--ragmetrics-baseline=shared/baseline.json"
    groups = [[f"test_file{i}.py", *([shared] if i % 2 else [])] for i in range(4)]
    for proc in _start_updates(tmp_path, groups, 0.5):
        out, _ = proc.communicate(timeout=300)
        assert proc.returncode == 0, out
    assert (tmp_path / ".ragmetrics" / "baseline.json").is_symlink()
    entries = json.loads(real.read_text())["entries"]
    assert sorted(entries) == sorted(f"test_file{i}.py::test_{t}" for i in range(4) for t in "ab")


def test_exclusive_lock_is_exclusive_and_leaves_no_file(tmp_path: Path) -> None:
    lock = tmp_path / "x.lock"
    script = textwrap.dedent(
        f"""
        import sys, time
        from pytest_ragmetrics.fileio import exclusive_lock
        for _ in range(40):
            with exclusive_lock({str(lock)!r}):
                with open({str(tmp_path / "log")!r}, "a") as f:
                    f.write("in\\n"); f.flush(); time.sleep(0.002); f.write("out\\n")
        """
    )
    procs = [subprocess.Popen([sys.executable, "-c", script]) for _ in range(3)]
    for proc in procs:
        assert proc.wait(timeout=120) == 0
    lines = (tmp_path / "log").read_text().split()
    assert lines == ["in", "out"] * 120  # never two holders at once
    assert not lock.exists()
    with (
        exclusive_lock(lock),
        pytest.raises(CacheError, match="waited 0 s for the lock"),
        exclusive_lock(lock, timeout=0.05, error=CacheError),
    ):
        pass


# -- outputs that would overwrite something else -----------------------------------------------


@pytest.mark.parametrize(
    ("option", "message"),
    [
        ("--ragmetrics-json=.ragmetrics/baseline.json", "ragmetrics_json and ragmetrics_baseline"),
        ("--ragmetrics-markdown=data/corpus.jsonl", "inside the folder of ragmetrics_dataset"),
        ("--ragmetrics-json=data/new.json", "inside the folder of ragmetrics_dataset"),
        ("--ragmetrics-baseline=data/qrels/test.tsv", "inside the folder of ragmetrics_dataset"),
        ("--ragmetrics-json=.ragmetrics/calibration.json", "is the file ragmetrics_calibration"),
        ("--ragmetrics-json=labels.jsonl", "is the file ragmetrics_judged_rankings"),
        ("--ragmetrics-json=.ragmetrics/cache/run/x.json", "inside the cache folder's entries"),
        ("--ragmetrics-json=.ragmetrics/datasets/x.json", "inside the dataset digests folder"),
        ("--ragmetrics-markdown=r.md --ragmetrics-json=r.md", "are the same file"),
        ("--ragmetrics-json=link.json", "are the same file"),
        ("--ragmetrics-cache-dir=data/cache", "overlaps the folder of ragmetrics_dataset"),
        ("--ragmetrics-cache-dir=..", "is the project folder or holds it"),
    ],
)
def test_outputs_that_overwrite_other_files_are_refused_at_startup(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, option: str, message: str
) -> None:
    make_project(
        pytester,
        tests=TESTS,
        ini='ragmetrics_judged_rankings = "labels.jsonl"\nragmetrics_markdown = "report.md"\n',
    )
    (pytester.path / "labels.jsonl").write_text("")
    (pytester.path / "report.md").write_text("old summary\n")
    (pytester.path / "link.json").symlink_to("report.md")
    (pytester.path / "sub").mkdir()
    before = snapshot(pytester.path)
    if option.endswith("=.."):
        monkeypatch.chdir(pytester.path / "sub")  # '..' from a subfolder is the project
    result = pytester.runpytest(*option.split())
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str()
    assert message in result.stderr.str()
    assert snapshot(pytester.path) == before


def test_cli_outputs_never_overwrite_their_inputs(tmp_path: Path) -> None:
    from pytest_ragmetrics.cli import main

    data = write_dataset(tmp_path)
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "1", "claim": "c", "context_sentences": ["s"], "label": "SUPPORT"}\n')
    before = snapshot(tmp_path)
    out = str(data / "corpus.jsonl")
    assert main(["retrieve", "--dataset", str(data), "--retriever", "bm25", "--out", out]) == 2
    calibrate = ["calibrate", "--judge", "recorded", "--labels", str(labels)]
    assert main([*calibrate, "--verdicts", str(labels), "--save", str(labels)]) == 2
    assert snapshot(tmp_path) == before


# -- entries of tests that still exist ---------------------------------------------------------

FILTERING_CONFTEST = (
    CONFTEST
    + """

def pytest_collection_modifyitems(config, items):
    # Drops tests without telling pytest (no pytest_deselected), as some plugins do.
    if os.environ.get("RAG_ONLY_A"):
        items[:] = [item for item in items if item.name == "test_a"]
"""
)


def test_tests_dropped_by_a_conftest_keep_their_entries(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    tests = """
        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="a")

        def test_b(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="b")
    """
    make_project(pytester, tests=tests, conftest=FILTERING_CONFTEST)
    monkeypatch.delenv("RAG_WORSE", raising=False)
    monkeypatch.delenv("RAG_ONLY_A", raising=False)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    monkeypatch.setenv("RAG_ONLY_A", "1")
    for extra in ([], ["-n", "2"]):
        result = pytester.runpytest("--ragmetrics-update-baseline", *extra)
        result.assert_outcomes(passed=1)
        result.stdout.fnmatch_lines(["*0 removed*"])
        entries = json.loads((pytester.path / ".ragmetrics" / "baseline.json").read_text())
        assert sorted(entries["entries"]) == ["test_rag.py::test_a", "test_rag.py::test_b"]


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
@pytest.mark.parametrize("rerun", [["--lf"], ["--lf", "--ragmetrics-update-baseline"]])
def test_tests_last_failed_leaves_out_keep_their_entries(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, rerun: list[str], xdist: list[str]
) -> None:
    """--lf drops the passed tests of a file with a failure while collecting it (they are
    neither reported collected nor deselected): they still exist."""
    tests = """
        import os

        def test_a(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)
            assert not os.environ.get("FAIL_A")

        def test_b(rag_eval, rag_run):
            rag_eval.retrieval(rag_run)

        def test_each(rag_eval, rag_query, rag_run):
            rag_eval.retrieval(rag_run)
    """
    make_project(pytester, tests=tests)
    pytester.makepyfile(test_other=TESTS)
    monkeypatch.delenv("RAG_WORSE", raising=False)
    monkeypatch.delenv("FAIL_A", raising=False)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=7)
    baseline = pytester.path / ".ragmetrics" / "baseline.json"
    before = baseline.read_bytes()
    monkeypatch.setenv("FAIL_A", "1")
    pytester.runpytest().assert_outcomes(failed=1, passed=6)
    monkeypatch.delenv("FAIL_A")
    result = pytester.runpytest(*rerun, *xdist)
    result.assert_outcomes(passed=1)
    assert result.ret == 0
    assert "no longer exist" not in result.stdout.str()
    assert baseline.read_bytes() == before


def test_entries_of_removed_tests_and_files_go_only_in_a_whole_run(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    pytester.makepyfile(test_other=TESTS)
    pytester.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=2)
    baseline = pytester.path / ".ragmetrics" / "baseline.json"
    (pytester.path / "test_other.py").unlink()
    # Only test_rag.py named: the deleted file is not judged.
    pytester.runpytest("test_rag.py", "--ragmetrics-update-baseline").assert_outcomes(passed=1)
    assert "test_other.py::test_retrieval" in json.loads(baseline.read_text())["entries"]
    # The whole suite: the deleted file's entry is stale and goes.
    result = pytester.runpytest("--ragmetrics-update-baseline")
    result.stdout.fnmatch_lines(["*0 updated, 0 added, 1 removed*"])
    assert list(json.loads(baseline.read_text())["entries"]) == ["test_rag.py::test_retrieval"]


# -- writing through symlinks and to special files ---------------------------------------------


def test_writes_follow_symlinks_and_keep_them(tmp_path: Path) -> None:
    real = tmp_path / "real.json"
    real.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(real)
    atomic_write_text(link, "new")
    assert link.is_symlink() and real.read_text() == "new"
    atomic_append_text(link, "more\n")
    assert link.is_symlink() and real.read_text() == "new\nmore\n"


def test_reports_can_be_written_to_a_pipe_or_dev_stdout(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    (pytester.path / "out.md").symlink_to("/dev/stdout")
    fifo = pytester.path / "report.fifo"
    os.mkfifo(fifo)
    reader = subprocess.Popen(["cat", str(fifo)], stdout=subprocess.PIPE, text=True)
    result = pytester.runpytest_subprocess(
        "--ragmetrics-markdown=out.md", f"--ragmetrics-json={fifo}", "-p", "no:xdist"
    )
    assert result.ret == 0, result.stdout.str()
    assert (pytester.path / "out.md").is_symlink()
    assert os.readlink(pytester.path / "out.md") == "/dev/stdout"
    assert "## pytest-ragmetrics" in result.stdout.lines  # the report, on pytest's stdout
    result.stdout.fnmatch_lines(["*1 passed*"])
    piped, _ = reader.communicate(timeout=60)
    assert json.loads(piped)["evaluations"][0]["name"] == "toy"
