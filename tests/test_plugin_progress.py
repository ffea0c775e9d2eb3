"""Progress bars from library code reach the terminal under pytest, and only there."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from plugin_project import CONFTEST, make_project

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
    assert "encoding corpus" not in workers


def test_bar_is_silent_when_not_a_terminal(pytester: pytest.Pytester) -> None:
    make_project(pytester, conftest=SLOW_RETRIEVER, tests=TESTS)
    result = pytester.runpytest_subprocess()
    result.assert_outcomes(passed=1)
    assert "encoding corpus" not in result.stdout.str() + result.stderr.str()
