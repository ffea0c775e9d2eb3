"""Parallel runs: xdist workers and independent pytest processes share one cache safely.

The suite uses the built-in BM25 retriever, whose run is a real cached computation; a conftest
slows that computation down so that processes really do meet at the cache lock.
"""

from __future__ import annotations

import json
import multiprocessing
import os
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_ragmetrics.cache import Cache
from tests.helpers.plugin_project import UNRELATED_PLUGINS, write_dataset

pytest.importorskip("bm25s")
pytest.importorskip("xdist")

INI = """\
[tool.pytest.ini_options]
ragmetrics_dataset = "data"
ragmetrics_retriever = "bm25"
ragmetrics_k = "3"
ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr map"
"""
# Every process that computes the BM25 run spends half a second doing it.
CONFTEST = """
import time

from pytest_ragmetrics.retrievers.bm25 import BM25Retriever

_search = BM25Retriever._search


def _slow_search(self, queries, k):
    time.sleep(0.5)
    return _search(self, queries, k)


BM25Retriever._search = _slow_search
"""
TESTS = """
import pytest


@pytest.mark.parametrize("name", ["a", "b", "c", "d", "e", "f"])
def test_retrieval(rag_eval, rag_run, name):
    rag_eval.retrieval(rag_run, name=name)


@pytest.mark.rag_threshold(mrr=0.1)
def test_cut(rag_eval, rag_run):
    rag_eval.retrieval(rag_run.truncate(1), name="top1")


def test_query(rag_query):
    assert rag_query.ranking
"""


def make_suite(root: Path) -> None:
    write_dataset(root)
    (root / "pyproject.toml").write_text(INI)
    (root / "conftest.py").write_text(CONFTEST)
    (root / "test_suite.py").write_text(textwrap.dedent(TESTS))


UNUSED_PLUGINS = ("-p", "no:cacheprovider", *UNRELATED_PLUGINS)


def run_pytest(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [sys.executable, "-m", "pytest", "-q", *UNUSED_PLUGINS, *args]
    return subprocess.run(command, cwd=root, env=env, capture_output=True, text=True)


def run_entries(cache_dir: Path) -> list[dict[str, Any]]:
    """The identities of the cached BM25 runs."""
    manifests = sorted((cache_dir / "run").glob("*/manifest.json"))
    return [json.loads(m.read_text())["identity"] for m in manifests]


def report_without_time(path: Path) -> dict[str, Any]:
    report: dict[str, Any] = json.loads(path.read_text())
    assert report.pop("created")
    return report


def test_xdist_with_a_cold_cache_matches_the_serial_run(tmp_path: Path) -> None:
    make_suite(tmp_path)
    cache_dir = tmp_path / ".ragmetrics" / "cache"
    serial = run_pytest(tmp_path, "-p", "no:xdist", "--ragmetrics-json=serial.json")
    assert serial.returncode == 0, serial.stdout + serial.stderr
    expected = report_without_time(tmp_path / "serial.json")
    assert len(expected["evaluations"]) == 7
    for attempt in range(3):
        Cache(cache_dir).clear()
        assert not run_entries(cache_dir)
        done = run_pytest(tmp_path, "-n", "4", f"--ragmetrics-json=n4-{attempt}.json")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "11 passed" in done.stdout
        assert report_without_time(tmp_path / f"n4-{attempt}.json") == expected
        # Four workers needed the run; one computed it, the others waited and read it.
        (identity,) = run_entries(cache_dir)
        assert Cache(cache_dir).computations("run", identity) == 1


def test_two_pytest_processes_share_one_cache_folder(tmp_path: Path) -> None:
    cache_dir = tmp_path / "shared-cache"
    projects = [tmp_path / "one", tmp_path / "two"]
    for root in projects:
        root.mkdir()
        make_suite(root)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        *UNUSED_PLUGINS,
        "-p",
        "no:xdist",
        f"--ragmetrics-cache-dir={cache_dir}",
        "--ragmetrics-json=report.json",
    ]
    processes = [
        subprocess.Popen(command, cwd=root, env=env, stdout=subprocess.PIPE, text=True)
        for root in projects
    ]
    outputs = [process.communicate(timeout=300)[0] for process in processes]
    for process, output in zip(processes, outputs, strict=True):
        assert process.returncode == 0, output
        assert "11 passed" in output
    (identity,) = run_entries(cache_dir)
    assert Cache(cache_dir).computations("run", identity) == 1
    first, second = (report_without_time(root / "report.json") for root in projects)
    assert first == second


# --- readers never see half an entry ----------------------------------------------------------

KIND = "embeddings"
ENTRIES = 40
ROUNDS = 3


def _content(i: int) -> dict[str, np.ndarray[Any, Any]]:
    """What entry ``i`` holds, whoever computes it (the cache is content-addressed)."""
    return {
        "vectors": np.full((200, 64), i, dtype=np.float32),
        "ids": np.arange(200, dtype=np.int64) + i,
    }


def _identity(i: int, round_: int) -> dict[str, int]:
    return {"entry": i, "round": round_}


def _writer(root: str, start: Any) -> None:
    cache = Cache(root)
    start.wait()
    for round_ in range(ROUNDS):
        for i in range(ENTRIES):
            # put_arrays, not arrays(): no lock, so the writers race on the same entries.
            cache.put_arrays(KIND, _identity(i, round_), _content(i))


def _clearer(root: str, start: Any, done: Any) -> None:
    """Empties the cache now and then, as --ragmetrics-clear-cache in another run would."""
    cache = Cache(root)
    start.wait()
    while not done.wait(0.05):
        cache.clear()


def _reader(root: str, start: Any, done: Any, results: Any) -> None:
    warnings.simplefilter("error")  # an "unreadable entry" warning would be a torn read
    cache = Cache(root)
    hits = misses = 0
    start.wait()
    try:
        while not done.is_set():
            for round_ in range(ROUNDS):
                for i in range(ENTRIES):
                    found = cache.get_arrays(KIND, _identity(i, round_))
                    if found is None:
                        misses += 1
                        continue
                    expected = _content(i)
                    assert found.keys() == expected.keys()
                    for name, array in expected.items():
                        assert np.array_equal(found[name], array), (i, name)
                    hits += 1
    except BaseException as exc:
        results.put(repr(exc))
        raise
    results.put((hits, misses))


def test_cache_readers_never_see_half_written_entries(tmp_path: Path) -> None:
    """Two writers publish the same entries, a third process keeps clearing the cache, and two
    readers poll every entry: each read is a miss or the complete entry, never a warning."""
    ctx = multiprocessing.get_context("spawn")
    start, writing, done = ctx.Event(), ctx.Event(), ctx.Event()
    results = ctx.Queue()
    root = str(tmp_path)
    writers = [ctx.Process(target=_writer, args=(root, start)) for _ in range(2)]
    clearer = ctx.Process(target=_clearer, args=(root, start, writing))
    readers = [ctx.Process(target=_reader, args=(root, start, done, results)) for _ in range(2)]
    for process in [*writers, clearer, *readers]:
        process.start()
    start.set()
    for process in writers:
        process.join(timeout=120)
        assert process.exitcode == 0
    writing.set()
    clearer.join(timeout=60)
    assert clearer.exitcode == 0
    # The clearer may have emptied the cache last; publish one round again so the readers surely
    # see complete entries (not only misses) before they stop, however busy the machine is.
    cache = Cache(tmp_path)
    for i in range(ENTRIES):
        cache.put_arrays(KIND, _identity(i, 0), _content(i))
    time.sleep(3)
    done.set()
    outcomes = [results.get(timeout=60) for _ in readers]
    for process in readers:
        process.join(timeout=60)
    assert all(isinstance(o, tuple) for o in outcomes), outcomes
    assert all(p.exitcode == 0 for p in readers)
    assert all(hits > 0 and misses > 0 for hits, misses in outcomes), outcomes
    # No staging or trash folders are left behind, and what is left is complete.
    assert not [p.name for p in (tmp_path / KIND).iterdir() if p.name.startswith(".")]
    for round_ in range(ROUNDS):
        for i in range(ENTRIES):
            found = cache.get_arrays(KIND, _identity(i, round_))
            assert found is None or np.array_equal(found["ids"], _content(i)["ids"])
