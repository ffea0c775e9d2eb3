"""Writes the file system refuses (a read-only folder, a full disk): one error naming the path
and what to do, never a traceback; the old file is left as it was; only what was really done
is reported. A cache that cannot be written only costs time: the value is computed, and one
warning says so.

The folders refuse for real: for a normal user by ``chmod``; as root (whom modes do not stop)
by a read-only tmpfs mounted over the folder with its contents, and a full one for ENOSPC. Run
as root, the last test runs this whole module again as an unprivileged user (``setpriv``), so
that the ``chmod`` path runs too.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import subprocess
import tempfile
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_ragmetrics.cache import Cache
from pytest_ragmetrics.cli import EXIT_BAD_INPUT, main
from pytest_ragmetrics.errors import CacheWarning, OutputError
from pytest_ragmetrics.fileio import atomic_write_text, cannot_write, check_writable
from tests.helpers.paths import REPO
from tests.helpers.plugin_project import CONFTEST, make_project

ROOT = os.geteuid() == 0

TESTS = """
    def test_retrieval(rag_eval, rag_run):
        rag_eval.retrieval(rag_run, name="toy")
"""


def _mount(*args: str) -> bool:
    done = subprocess.run(["mount", *args], capture_output=True, check=False)
    return done.returncode == 0


@contextlib.contextmanager
def _tmpfs_over(folder: Path, size: str) -> Iterator[None]:
    """A tmpfs mounted on ``folder`` holding a copy of what it held."""
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as backup:
        shutil.copytree(folder, backup, dirs_exist_ok=True)
        if not _mount("-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)):
            pytest.skip("cannot mount a tmpfs here (root without CAP_SYS_ADMIN)")
        try:
            shutil.copytree(backup, folder, dirs_exist_ok=True)
            yield
        finally:
            subprocess.run(["umount", str(folder)], check=True)


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` and every folder in it refuse new files, renames and removals."""
    if ROOT:
        with _tmpfs_over(folder, "1m"):
            if not _mount("-o", "remount,ro", str(folder)):
                pytest.skip("cannot remount a tmpfs read-only here")
            yield
        return
    folder.mkdir(parents=True, exist_ok=True)
    folders = [folder, *(p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink())]
    for path in folders:
        path.chmod(0o555)
    try:
        yield
    finally:
        for path in folders:
            path.chmod(0o755)


@contextlib.contextmanager
def full(folder: Path) -> Iterator[None]:
    """``folder`` is a file system with no byte left (a real ENOSPC)."""
    if not ROOT:
        pytest.skip("a full file system needs a tmpfs mount (root)")
    with _tmpfs_over(folder, "256k"):
        with open(folder / ".filler", "wb", buffering=0) as filler:
            for size in (65536, 4096, 1):
                with contextlib.suppress(OSError):
                    while True:
                        filler.write(b"\0" * size)
        yield


def no_traceback(text: str) -> None:
    assert "Traceback" not in text and "INTERNALERROR" not in text, text


# -- the one error ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("code", "fix"),
    [
        (errno.EROFS, "make {folder} writable"),
        (errno.EACCES, "make {folder} writable"),
        (errno.EPERM, "make {folder} writable"),
        (errno.ENOSPC, "free space on the file system holding {folder}"),
        (errno.EDQUOT, "free space on the file system holding {folder}"),
    ],
)
def test_a_refusal_names_the_path_the_reason_and_what_to_do(
    tmp_path: Path, code: int, fix: str
) -> None:
    target = tmp_path / "new" / "deeper" / "out.json"  # folders still to create
    error = cannot_write(target, OSError(code, os.strerror(code)), what="report", hint="or X")
    assert isinstance(error, OutputError) and error.errno == code
    assert str(error) == (
        f"{target}: cannot write the report ({os.strerror(code)}); "
        f"{fix.format(folder=tmp_path)} or or X"
    )


def test_a_refused_atomic_write_keeps_the_old_file(tmp_path: Path) -> None:
    target = tmp_path / "ro" / "report.json"
    target.parent.mkdir()
    target.write_text("old\n")
    with read_only(target.parent):
        with pytest.raises(OutputError, match=r"report\.json: cannot write the report \(") as e:
            atomic_write_text(target, "new\n", what="report", hint="pass --x")
        assert f"make {target.parent} writable or pass --x" in str(e.value)
        with pytest.raises(OutputError, match="cannot write the report"):
            check_writable(target, what="report")
        assert target.read_text() == "old\n"
        assert sorted(os.listdir(target.parent)) == ["report.json"]


def test_a_full_disk_keeps_the_old_file(tmp_path: Path) -> None:
    folder = tmp_path / "small"
    folder.mkdir()
    (folder / "report.json").write_text("old\n")
    with full(folder):
        with pytest.raises(OutputError, match=r"No space left on device.*free space"):
            atomic_write_text(folder / "report.json", "new\n" * 100_000)
        assert (folder / "report.json").read_text() == "old\n"
        assert sorted(os.listdir(folder)) == [".filler", "report.json"]


# -- the cache ----------------------------------------------------------------------------------


def test_a_read_only_cache_computes_on_a_miss_and_warns_once(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    with read_only(root):
        cache = Cache(root)
        with pytest.warns(CacheWarning, match="the cache cannot be written") as caught:
            assert cache.json("verdicts", {"q": 1}, lambda: [1, 2]) == [1, 2]
            assert cache.json("verdicts", {"q": 2}, lambda: [3]) == [3]
            arrays = cache.arrays(
                "embeddings", {"q": 1}, lambda: {"x": __import__("numpy").ones(2)}
            )
            assert arrays["x"].tolist() == [1.0, 1.0]
        assert len(caught) == 1
        assert str(root) in str(caught[0].message) and "--ragmetrics-cache-dir" in str(
            caught[0].message
        )
        assert "Read-only file system" in cache.unwritable or "Permission" in cache.unwritable
        cache.put_json("verdicts", {"q": 3}, [1])  # an explicit write: nothing stored either
        assert "cannot write the cache entry" in cache.unwritable
        assert os.listdir(root) == []


def test_a_full_cache_computes_and_warns(tmp_path: Path) -> None:
    import numpy as np

    root = tmp_path / "cache"
    with full(root):
        cache = Cache(root)
        with pytest.warns(CacheWarning, match="No space left on device"):
            value = cache.arrays("embeddings", {"q": 1}, lambda: {"x": np.ones(100_000)})
        assert value["x"].shape == (100_000,)
        assert Cache(root).get_arrays("embeddings", {"q": 1}) is None  # nothing half-written


def test_clear_counts_only_what_it_removed_and_names_the_rest(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    cache = Cache(root)
    for i in range(4):
        cache.put_json("verdicts", {"q": i}, [i])
    with read_only(root):
        report = Cache(root).clear()
        assert report.total == 0 and len(report.failed) == 4
        text = report.describe("cache")
        assert text.startswith("cleared 0 cache entries in cache; could not remove 4 cache entries")
        assert f"make {root} and the folders in it writable" in text
    assert sum(1 for _ in (root / "verdicts").iterdir()) == 4  # all four still there
    assert Cache(root).clear().total == 4  # writable again: really cleared


# -- the plugin ---------------------------------------------------------------------------------


@pytest.fixture
def project(pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(pytester, tests=TESTS)
    return pytester


def test_baseline_update_into_a_read_only_folder_is_one_error_and_keeps_the_file(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    state = project.path / ".ragmetrics"
    before = (state / "baseline.json").read_bytes()
    monkeypatch.setenv("RAG_WORSE", "1")  # different numbers to write
    with read_only(state):
        result = project.runpytest(
            "--ragmetrics-update-baseline",
            "--ragmetrics-cache-dir=elsewhere",
            "-p",
            "no:cacheprovider",
        )
        after = (state / "baseline.json").read_bytes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    output = result.stdout.str() + result.stderr.str()
    no_traceback(output)
    errors = [line for line in result.stdout.lines if line.startswith("ragmetrics: error:")]
    assert len(errors) == 1, output
    assert "cannot write the lock file of the baseline" in errors[0]
    assert f"make {state} writable or pass --ragmetrics-baseline=FILE" in errors[0]
    assert after == before
    assert "ragmetrics baseline " not in output and "commit:" not in output  # nothing claimed


def test_baseline_update_on_a_full_disk_is_one_error_and_keeps_the_file(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    state = project.path / ".ragmetrics"
    shutil.rmtree(state / "cache", ignore_errors=True)
    before = (state / "baseline.json").read_bytes()
    monkeypatch.setenv("RAG_WORSE", "1")
    with full(state):
        result = project.runpytest(
            "--ragmetrics-update-baseline",
            "--ragmetrics-cache-dir=elsewhere",
            "-p",
            "no:cacheprovider",
        )
        after = (state / "baseline.json").read_bytes()
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    no_traceback(result.stdout.str() + result.stderr.str())
    result.stdout.fnmatch_lines(["ragmetrics: error: *No space left on device*free space*"])
    assert after == before


def test_dataset_digests_refused_keep_the_baseline_as_it_was(
    project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The baseline's folder is writable, the digests folder beside it is not: one error,
    and the baseline is not updated without the digests that explain its next change."""
    project.runpytest("--ragmetrics-update-baseline").assert_outcomes(passed=1)
    state = project.path / ".ragmetrics"
    before = (state / "baseline.json").read_bytes()
    monkeypatch.setenv("RAG_WORSE", "1")
    shutil.rmtree(state / "datasets")  # digests to write again
    with read_only(state / "datasets"):
        result = project.runpytest("--ragmetrics-update-baseline", "--ragmetrics-cache-dir=c")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    no_traceback(result.stdout.str() + result.stderr.str())
    errors = [line for line in result.stdout.lines if line.startswith("ragmetrics: error:")]
    assert len(errors) == 1 and "datasets" in errors[0] and "writable" in errors[0], errors
    assert (state / "baseline.json").read_bytes() == before
    assert "commit:" not in result.stdout.str()


@pytest.fixture
def bm25_project(pytester: pytest.Pytester) -> pytest.Pytester:
    """The built-in BM25 retriever, whose runs are cached."""
    make_project(pytester, ini='ragmetrics_retriever = "bm25"', conftest="", tests=TESTS)
    return pytester


def test_a_read_only_cache_on_a_miss_passes_with_one_warning(
    bm25_project: pytest.Pytester,
) -> None:
    project = bm25_project
    cache = project.path / "cache"
    with read_only(cache):
        result = project.runpytest(
            "--ragmetrics-cache-dir=cache", "-W", f"always::{CacheWarning.__module__}.CacheWarning"
        )
    result.assert_outcomes(passed=1)  # (other plugins may warn too: count ours)
    no_traceback(result.stdout.str() + result.stderr.str())
    assert result.stdout.str().count("CacheWarning: the cache cannot be written") == 1
    result.stdout.fnmatch_lines(["*cache/run/*: cannot write the lock file of the cache entry*"])


def test_clear_cache_on_a_read_only_cache_says_what_it_could_not_remove(
    bm25_project: pytest.Pytester,
) -> None:
    project = bm25_project
    project.runpytest("--ragmetrics-cache-dir=cache").assert_outcomes(passed=1)
    cache = project.path / "cache"
    entries = sorted(p for kind in cache.iterdir() for p in kind.iterdir() if p.is_dir())
    assert entries
    with read_only(cache):
        result = project.runpytest("--ragmetrics-cache-dir=cache", "--ragmetrics-clear-cache")
        still = sorted(p for kind in cache.iterdir() for p in kind.iterdir() if p.is_dir())
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    no_traceback(result.stdout.str() + result.stderr.str())
    result.stderr.fnmatch_lines(
        [f"*--ragmetrics-clear-cache: cleared 0 cache entries in cache; could not remove "
         f"{len(entries)} cache entr*Read-only file system*writable*"
         if ROOT else f"*{len(entries)} cache entr*Permission denied*writable*"]
    )  # fmt: skip
    assert still == entries


def test_unwritable_reports_are_errors_and_the_others_are_written(
    project: pytest.Pytester,
) -> None:
    locked = project.path / "locked"
    with read_only(locked):
        result = project.runpytest(
            "--ragmetrics-json=locked/r.json",
            "--ragmetrics-html=locked/r.html",
            "--ragmetrics-markdown=r.md",
        )
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    no_traceback(result.stdout.str() + result.stderr.str())
    result.stdout.fnmatch_lines_random(
        [
            "ragmetrics: error: *locked/r.json: cannot write the JSON report (*); make *locked "
            "writable or pass --ragmetrics-json=FILE to write it elsewhere",
            "ragmetrics: error: *locked/r.html: cannot write the HTML report (*--ragmetrics-html*",
            "ragmetrics: wrote r.md",
        ]
    )
    assert "wrote locked" not in result.stdout.str()
    assert (project.path / "r.md").exists() and not (locked / "r.json").exists()


def test_an_old_report_is_not_claimed_as_written(project: pytest.Pytester) -> None:
    project.runpytest("--ragmetrics-json=out/r.json").assert_outcomes(passed=1)
    old = (project.path / "out" / "r.json").read_bytes()
    with read_only(project.path / "out"):
        result = project.runpytest("--ragmetrics-json=out/r.json")
        assert (project.path / "out" / "r.json").read_bytes() == old
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    assert "ragmetrics: wrote" not in result.stdout.str()
    result.stdout.fnmatch_lines(["ragmetrics: error: *r.json: cannot write the JSON report*"])


GENERATOR = """

from pytest_ragmetrics.generation import FunctionGenerator


@pytest.fixture(scope="session")
def rag_generator():
    return FunctionGenerator(lambda query, contexts: "an answer", name="fixed", version="1")
"""

RECORDING_TESTS = """
    def test_answers(rag_answers):
        assert len(rag_answers) == 4
"""


def test_recording_answers_into_a_read_only_folder_fails_the_test_with_one_line(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("RAG_WORSE", raising=False)
    make_project(
        pytester,
        ini='ragmetrics_answers = "rec/answers.jsonl"',
        conftest=CONFTEST + GENERATOR,
        tests=RECORDING_TESTS,
    )
    with read_only(pytester.path / "rec"):
        result = pytester.runpytest("--ragmetrics-record-answers", "--ragmetrics-cache-dir=c")
    result.assert_outcomes(errors=1)  # rag_answers is a fixture: its setup fails
    output = result.stdout.str()
    assert "Traceback" not in output and "INTERNALERROR" not in output
    result.stdout.fnmatch_lines(
        ["*rec/answers.jsonl: cannot write the recorded answers (*)*pass --ragmetrics-answers*"]
    )


# -- the command line ---------------------------------------------------------------------------


def _pool(tmp_path: Path) -> tuple[Path, Path]:
    pool = tmp_path / "pool.jsonl"
    row = {"query_id": "q1", "doc_id": "d3", "query": "q", "text": "t", "relevant": None}
    pool.write_text(json.dumps(row) + "\n")
    verdicts = tmp_path / "v.jsonl"
    verdicts.write_text(json.dumps({"query_id": "q1", "doc_id": "d3", "relevant": True}) + "\n")
    return pool, verdicts


@pytest.mark.parametrize("output", ["--out", "--qrels-out"])
def test_judge_pool_into_a_read_only_folder_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], output: str
) -> None:
    pool, verdicts = _pool(tmp_path)
    locked = tmp_path / "locked"
    paths = {"--out": tmp_path / "judged.jsonl", "--qrels-out": tmp_path / "s.qrels"}
    paths[output] = locked / "file"
    with read_only(locked):
        code = main(
            ["judge-pool", "--pool", str(pool), "--judge", "recorded", "--verdicts",
             str(verdicts), "--no-cache", *(a for k, v in paths.items() for a in (k, str(v)))]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    no_traceback(err)
    assert err.count("\n") == 1, err
    assert f"{locked}/file: cannot write the " in err
    assert f"make {locked} writable or pass {output} FILE to write it elsewhere" in err
    assert not any(p.exists() for p in paths.values())  # refused before judging anything


def test_pool_into_a_read_only_folder_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "qrels.txt").write_text("q1 0 d1 1\n")
    (tmp_path / "a.trec").write_text("q1 Q0 d3 1 9.0 A\n")
    locked = tmp_path / "locked"
    with read_only(locked):
        code = main(
            ["pool", "--qrels", str(tmp_path / "qrels.txt"), "--run", str(tmp_path / "a.trec"),
             "--out", str(locked / "pool.jsonl")]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    no_traceback(err)
    assert ".pool.jsonl.lock: cannot write the lock file of the pool file" in err


def test_calibrate_save_into_a_read_only_folder_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    labels = tmp_path / "labels.jsonl"
    verdicts = tmp_path / "v.jsonl"
    rows, answers = [], []
    for i in range(6):
        rows.append(
            {"id": f"i{i}", "claim": f"c{i}", "context_sentences": ["s."], "label": i % 2 == 0}
        )
        answers.append(
            {
                "query_id": f"i{i}",
                "answer": f"c{i}",
                "claims": [{"text": f"c{i}", "supported": i % 2 == 0}],
            }
        )
    labels.write_text("".join(json.dumps(r) + "\n" for r in rows))
    verdicts.write_text("".join(json.dumps(r) + "\n" for r in answers))
    locked = tmp_path / "locked"
    with read_only(locked):
        code = main(
            ["calibrate", "--judge", "recorded", "--labels", str(labels), "--verdicts",
             str(verdicts), "--no-cache", "--save", str(locked / "calibration.json")]
        )  # fmt: skip
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    no_traceback(err)
    assert "calibration.json: cannot write the calibration file (" in err
    assert "pass --save FILE to write it elsewhere" in err


def test_generate_into_a_read_only_folder_is_a_user_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "a.txt").write_text(
        textwrap.dedent(
            """\
            Cats purr when they are content. They sleep for most of the day.
            Dogs bark at strangers. They were bred to guard houses and herds.
            """
        )
    )
    locked = tmp_path / "locked"
    with read_only(locked):
        code = main(
            ["generate", "--corpus", str(corpus), "--out", str(locked / "set"), "--queries", "2"]
        )
    err = capsys.readouterr().err
    assert code == EXIT_BAD_INPUT, err
    no_traceback(err)
    assert "cannot write the test-set folder" in err


# -- the chmod path, as an unprivileged user ----------------------------------------------------

UNPRIVILEGED = 65534  # nobody


@pytest.mark.skipif(not ROOT, reason="run as a normal user, this module takes the chmod path")
def test_every_refusal_holds_for_an_unprivileged_user_on_chmod_folders() -> None:
    """As root every folder above refuses through a read-only tmpfs; modes never stop root.
    This runs the module again as uid 65534, where ``read_only`` is ``chmod 0555``: baseline
    update, cache miss, clear-cache, reports, recordings, pool, judge-pool, calibrate --save
    and generate --out must refuse the same way (only the full-disk tests need root)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("setpriv (util-linux) is not installed")
    # Not under pytest's basetemp, which only root may enter.
    with tempfile.TemporaryDirectory(prefix="ragmetrics-unprivileged-") as folder:
        home = Path(folder)
        os.chown(home, UNPRIVILEGED, UNPRIVILEGED)
        done = _run_unprivileged(setpriv, home)
    output = done.stdout + done.stderr
    if done.returncode != 0 and "Permission denied" in output and "import" in output.lower():
        pytest.skip(f"this Python cannot run as uid {UNPRIVILEGED}: {output[-300:]}")
    assert done.returncode == 0, output
    skipped = [line for line in done.stdout.splitlines() if line.startswith("SKIPPED")]
    assert all("a full file system needs a tmpfs mount" in line for line in skipped), output
    assert " passed" in done.stdout and "failed" not in done.stdout, output


def _run_unprivileged(setpriv: str, home: Path) -> subprocess.CompletedProcess[str]:
    """This module but the test above, as uid 65534 in ``home``."""
    import sys

    root = REPO
    env = {
        **os.environ,
        "HOME": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("PYTEST_XDIST_WORKER", None)
    return subprocess.run(
        [setpriv, f"--reuid={UNPRIVILEGED}", f"--regid={UNPRIVILEGED}", "--clear-groups",
         sys.executable, "-m", "pytest", __file__, "-q", "-p", "no:cacheprovider",
         "-p", "no:randomly", f"--basetemp={home / 'tmp'}", "-k", "not unprivileged", "-rs"],
        cwd=home, env=env, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
