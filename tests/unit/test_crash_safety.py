"""SIGKILL in the middle of writing a baseline, a report or a cache entry never leaves half a file.

Writes are slowed down (a sleep inside ``os.fsync``, which every atomic write calls before its
rename) so that kills land at many different moments: before, during and after the rename.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest

from pytest_ragmetrics.cache import Cache
from tests.helpers.plugin_project import CONFTEST, make_project

SLOW_FSYNC = """
import os as _os
import time as _time

_real_fsync = _os.fsync


def _slow_fsync(fd):
    _time.sleep(0.15)
    return _real_fsync(fd)


_os.fsync = _slow_fsync
"""


def kill_after(cmd: list[str], cwd: Path, delay: float, env: dict[str, str]) -> None:
    process = subprocess.Popen(
        cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    time.sleep(delay)
    process.send_signal(signal.SIGKILL)
    process.wait()


def test_baseline_and_json_report_survive_sigkill(pytester: pytest.Pytester) -> None:
    make_project(
        pytester,
        conftest=CONFTEST + SLOW_FSYNC,
        tests="""
        def test_retrieval(rag_eval, rag_run):
            rag_eval.retrieval(rag_run, name="toy")
    """,
    )
    env = {k: v for k, v in os.environ.items() if k != "RAG_WORSE"}
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        "-p",
        "no:xdist",
        "--ragmetrics-update-baseline",
        "--ragmetrics-json=report.json",
    ]
    subprocess.run(cmd, cwd=pytester.path, env=env, check=True, capture_output=True)
    baseline = pytester.path / ".ragmetrics" / "baseline.json"
    report = pytester.path / "report.json"
    old_baseline, old_report = baseline.read_text(), json.loads(report.read_text())
    assert old_report["evaluations"]
    worse_env = {**env, "RAG_WORSE": "1"}
    outcomes: list[str] = []
    delay = 0.4
    # Restore the old files, kill ever later, until a run gets to replace the baseline.
    while "new" not in outcomes and delay < 20:
        baseline.write_text(old_baseline)
        report.write_text(json.dumps(old_report))
        kill_after(cmd, pytester.path, delay, worse_env)
        text = baseline.read_text()
        entry = json.loads(text)["entries"]["test_rag.py::test_retrieval"]["toy"]
        if text == old_baseline:
            outcomes.append("old")
        else:
            assert entry["metrics"]["recall_at_1"] == 0.0
            outcomes.append("new")
        current = json.loads(report.read_text())  # always a whole JSON document
        assert current["schema"] == "pytest-ragmetrics/report"
        delay += 0.3
    assert outcomes[0] == "old"
    assert outcomes[-1] == "new", outcomes


def test_cache_entry_survives_sigkill(tmp_path: Path) -> None:
    script = tmp_path / "writer.py"
    script.write_text(
        SLOW_FSYNC
        + textwrap.dedent("""
        import sys
        import numpy as np
        from pytest_ragmetrics.cache import Cache

        cache = Cache(sys.argv[1])
        identity = {"model": "m", "corpus": "c"}
        cache.put_arrays("embeddings", identity,
                         {"vectors": np.arange(60000, dtype=np.float32).reshape(300, 200),
                          "ids": np.arange(300)})
    """)
    )
    root = tmp_path / "cache"
    identity = {"model": "m", "corpus": "c"}
    expected = np.arange(60000, dtype=np.float32).reshape(300, 200)
    seen: set[str] = set()
    for delay in (0.2, 0.35, 0.5, 0.65, 0.8, 1.0, 1.3):
        Cache(root).clear()
        kill_after([sys.executable, str(script), str(root)], tmp_path, delay, dict(os.environ))
        found = Cache(root).get_arrays("embeddings", identity)
        if found is None:
            seen.add("absent")
        else:
            seen.add("complete")
            assert np.array_equal(found["vectors"], expected)
            assert np.array_equal(found["ids"], np.arange(300))
        # Whatever the kill left behind, the next writer succeeds and readers see its entry.
        Cache(root).put_arrays("embeddings", identity, {"vectors": expected, "ids": np.arange(300)})
        assert Cache(root).get_arrays("embeddings", identity) is not None
    assert "absent" in seen


def test_atomic_append_keeps_old_content_on_failure(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ragmetrics import fileio

    target = tmp_path / "summary.md"
    target.write_text("# before\n")

    def broken_fsync(fd: int) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(fileio.os, "fsync", broken_fsync)
    with pytest.raises(OSError, match="disk full"):
        fileio.atomic_append_text(target, "## added\n")
    assert target.read_text() == "# before\n"
    assert [p.name for p in tmp_path.iterdir()] == ["summary.md"]


# --- the other write paths: Markdown append, calibration file, digest sidecars, TREC runs -----
# Each writer rewrites its file in a loop, version after version (fsync slowed as above), and
# is killed at several moments after it is ready; every file left must be a complete version.

WRITERS = {
    "markdown": """
from pytest_ragmetrics.fileio import atomic_append_text

def write(i):
    atomic_append_text(target, report(i))
""",
    "calibration": """
from pytest_ragmetrics.judges.calibration import CalibrationResult, save_calibration

def write(i):
    result = CalibrationResult(
        judge={"name": f"judge-{i}"}, labels={"file": "labels.jsonl"}, n=i + 1,
        accuracy=0.5, kappa=0.25, confusion={"tp": i, "fp": 0, "fn": 0, "tn": 1},
    )
    save_calibration(target, result)
""",
    "digests": """
from pathlib import Path
from pytest_ragmetrics.baseline.changes import save_digests

def write(i):
    digests = {f"doc-{j}": f"{i:08x}{j:08x}" for j in range(2000)}
    save_digests(Path(target), "corpus", f"{i:016x}", digests)
""",
    "trec-run": """
from pytest_ragmetrics import Run, write_run

def write(i):
    rankings = {f"q{q}": [f"d{d}" for d in range(300)] for q in range(20)}
    write_run(Run.from_rankings(rankings), target, tag=f"v{i}")
""",
}
WRITER_MAIN = """
import sys
target = sys.argv[1]

def report(i):
    return f"## run {i}\\n" + "| metric | value |\\n" * 300 + f"end of run {i}\\n"

{body}
print("ready", flush=True)
i = 0
while True:
    write(i)
    i += 1
"""


def _report(i: int) -> str:
    return f"## run {i}\n" + "| metric | value |\n" * 300 + f"end of run {i}\n"


def _versions_left(kind: str, target: Path) -> int:
    """How many versions the file holds; fails unless it is a complete version."""
    import gzip

    from pytest_ragmetrics import read_run
    from pytest_ragmetrics.judges.calibration import CalibrationResult

    if kind == "digests":
        folder = target.parent / "datasets"
        files = sorted(p for p in folder.glob("*.json.gz")) if folder.exists() else []
        for path in files:  # temporary files start with '.', so the glob skips them
            data = json.loads(gzip.decompress(path.read_bytes()))
            i = int(path.name.split("-")[1].split(".")[0], 16)
            assert data == {f"doc-{j}": f"{i:08x}{j:08x}" for j in range(2000)}
        return len(files)
    if not target.exists():
        return 0
    if kind == "markdown":
        # Each writer process numbers its reports from 0; every one must be whole.
        chunks = ["## run " + c for c in target.read_text().split("## run ")[1:]]
        assert "".join(chunks) == target.read_text()
        for chunk in chunks:
            assert chunk == _report(int(chunk.split()[2])), chunk[:40]
        return len(chunks)
    if kind == "calibration":
        data = json.loads(target.read_text())
        records = [CalibrationResult.from_dict(r) for r in data["judges"].values()]
        assert sorted(r.n for r in records) == list(range(1, len(records) + 1))
        return len(records)
    run = read_run(target)
    assert run.depths().tolist() == [300] * 20
    tags = {line.rsplit(" ", 1)[1] for line in target.read_text().splitlines()}
    assert len(tags) == 1
    return int(tags.pop()[1:]) + 1


@pytest.mark.parametrize("kind", list(WRITERS))
def test_other_write_paths_survive_sigkill(tmp_path: Path, kind: str) -> None:
    script = tmp_path / "writer.py"
    script.write_text(SLOW_FSYNC + WRITER_MAIN.replace("{body}", textwrap.dedent(WRITERS[kind])))
    target = tmp_path / "out" / "file"
    seen = []
    for delay in (0.05, 0.15, 0.3, 0.45, 0.6):
        process = subprocess.Popen(
            [sys.executable, str(script), str(target)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdout is not None
        assert process.stdout.readline() == "ready\n"
        time.sleep(delay)
        process.send_signal(signal.SIGKILL)
        process.wait()
        process.stdout.close()
        seen.append(_versions_left(kind, target))
    assert max(seen) > 0, seen  # some writes completed, so kills landed at different moments
