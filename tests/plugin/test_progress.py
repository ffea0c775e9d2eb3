"""Progress bars from library code reach the terminal under pytest, and only there."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from tests.helpers.plugin_project import CONFTEST, SERIAL_AND_N2, make_project

SLOW_RETRIEVER = (
    CONFTEST
    + """

from pytest_ragmetrics.progress import progress


class Encoding(ToyRetriever):
    def search(self, queries, k):
        with progress("encoding corpus", 5) as advance:
            for _ in range(5):
                advance(1)
        return super().search(queries, k)


@pytest.fixture(scope="session")
def rag_retriever():
    return Encoding(False)
"""
)
TESTS = "def test_it(rag_run):\n    pass\n"


def run_in_tty(pytester: pytest.Pytester, *args: str) -> str:
    command = " ".join([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args])
    result = subprocess.run(
        ["script", "-qec", command, "/dev/null"],
        cwd=pytester.path,
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "COLUMNS": "120"},
    )
    return result.stdout


@pytest.mark.skipif(shutil.which("script") is None, reason="needs util-linux `script` for a pty")
def test_bar_shows_on_a_terminal_and_not_with_quiet(pytester: pytest.Pytester) -> None:
    make_project(pytester, conftest=SLOW_RETRIEVER, tests=TESTS)
    shown = run_in_tty(pytester)
    assert "encoding corpus [" in shown
    assert "5/5" in shown
    assert "1 passed" in shown
    quiet = run_in_tty(pytester, "-q")
    assert "1 passed" in quiet
    assert "encoding corpus" not in quiet
    workers = run_in_tty(pytester, "-n", "2")
    assert "1 passed" in workers
    # The worker draws on the controlling terminal, naming itself.
    assert re.search(r"\[gw[01]\] encoding corpus \[#+\] 5/5", workers), workers
    quiet_workers = run_in_tty(pytester, "-n", "2", "-q")
    assert "1 passed" in quiet_workers
    assert "encoding corpus" not in quiet_workers


@pytest.mark.parametrize("xdist", SERIAL_AND_N2)
def test_bar_is_silent_when_not_a_terminal(pytester: pytest.Pytester, xdist: list[str]) -> None:
    make_project(pytester, conftest=SLOW_RETRIEVER, tests=TESTS)
    result = pytester.runpytest_subprocess(*xdist)
    result.assert_outcomes(passed=1)
    assert "encoding corpus" not in result.stdout.str() + result.stderr.str()


def test_worker_bar_goes_to_the_terminal_only_when_allowed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pytest_ragmetrics import progress as library
    from pytest_ragmetrics.plugin import progress as module

    tty = tmp_path / "tty"
    monkeypatch.setattr(module, "TTY_PATH", str(tty))
    config = SimpleNamespace(workerinput={"workerid": "gw3", module.WORKER_TTY_KEY: False})
    assert module.pytest_terminal_reporter(config) is None
    config.workerinput[module.WORKER_TTY_KEY] = True
    reporter = module.pytest_terminal_reporter(config)
    with library.use_reporter(reporter), library.progress("encoding corpus", 4) as advance:
        advance(4)
    text = tty.read_bytes().decode()  # read_text() would turn the \r into \n
    assert text.startswith("\n\r[gw3] encoding corpus [")
    assert "4/4" in text and text.endswith("\n")
    monkeypatch.setattr(module, "TTY_PATH", str(tmp_path / "missing" / "tty"))
    reporter = module.pytest_terminal_reporter(config)
    with library.use_reporter(reporter), library.progress("encoding corpus", 1) as advance:
        advance(1)  # no terminal to open: silent, no error


def test_a_long_steps_note_reaches_a_log_that_is_not_a_terminal(pytester: pytest.Pytester) -> None:
    conftest = SLOW_RETRIEVER.replace(
        'with progress("encoding corpus", 5) as advance:',
        'with progress("encoding corpus", 5, note="encoding 5 passages: not cached") as advance:',
    ).replace(
        "from pytest_ragmetrics.progress import progress",
        # Every step counts as long here, so that the test need not take 10 s.
        "import pytest_ragmetrics.progress as library\n"
        "from pytest_ragmetrics.progress import progress\n\nlibrary.NOTE_AFTER = 0.0",
    )
    make_project(pytester, conftest=conftest, tests=TESTS)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    text = result.stdout.str()
    # The first batch gives no rate (it may hold a model load): the note, then the estimate.
    assert re.search(r"^encoding 5 passages: not cached; estimating how long$", text, re.M), text
    assert re.search(r"^encoding corpus: about \d+ s in all$", text, re.M), text
    assert "encoding corpus [" not in text  # no bar in a log
    quiet = pytester.runpytest_subprocess("-q")
    assert "not cached" not in quiet.stdout.str()


def test_a_steps_description_and_note_are_shown_with_their_controls_escaped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A description or note quoting a hostile name (ESC, CR, an RTL override, a newline) is
    shown, not obeyed: only the bar's own carriage returns reach the terminal."""
    from pytest_ragmetrics import progress as library
    from pytest_ragmetrics.plugin import progress as module

    tty = tmp_path / "tty"
    monkeypatch.setattr(module, "TTY_PATH", str(tty))
    monkeypatch.setattr(library, "NOTE_AFTER", 0.0)
    config = SimpleNamespace(workerinput={"workerid": "gw0", module.WORKER_TTY_KEY: True})
    reporter = module.pytest_terminal_reporter(config)
    hostile = "x\x1b[2K\rall passed\u202e\nmore"
    with (
        library.use_reporter(reporter),
        library.progress(f"encoding {hostile}", 3, note=f"note {hostile}") as advance,
    ):
        advance(1)
        advance(2)
        advance(3)
    text = tty.read_bytes().decode()
    assert "\x1b" not in text and "\u202e" not in text
    assert "encoding x\\x1b[2K\\x0dall passed\\u202e\\x0amore" in text
    assert "note x\\x1b[2K" in text
    assert all(part.startswith(("[gw0]", "\n")) or not part for part in text.split("\r")[1:])
