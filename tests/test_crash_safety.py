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
from plugin_project import CONFTEST, make_project

from pytest_ragmetrics.cache import Cache

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
