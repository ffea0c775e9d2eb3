"""The README's install lines work in a new project: each one in a fresh virtual environment,
then the quick start from what it installed — tests, a blessed baseline, a regression caught.

The git line is run against a clone of this checkout (no network: ``git+file://``), the path
line against this checkout, the wheel line against a wheel built from it. Slow: each line
creates a virtual environment and installs pytest and numpy into it.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.readme_project import README, project_from, readme_blocks, write_project

pytestmark = pytest.mark.slow

CHECKOUT = README.parent
GIT_URL = "git+https://github.com/pytest-ragmetrics/pytest-ragmetrics"
INSTALL_MARKER = "<!-- install-lines -->"


def install_lines() -> list[str]:
    """The commands of the fenced block after the README's install marker."""
    text = README.read_text(encoding="utf-8")
    assert INSTALL_MARKER in text, "README.md lost its <!-- install-lines --> block"
    block = text.split(INSTALL_MARKER, 1)[1].split("```", 2)[1]
    return [line for line in block.splitlines()[1:] if line.strip()]


def clean_env(venv: Path) -> dict[str, str]:
    """This environment without the development install: the venv's scripts come first."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("PYTEST_", "PYTHON", "VIRTUAL_ENV", "COV_"))
    }
    env["PATH"] = str(venv / "bin") + os.pathsep + os.environ.get("PATH", "")
    env["HF_HUB_OFFLINE"] = "1"
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def run(command: str, cwd: Path, env: dict[str, str], timeout: int = 600) -> tuple[int, str]:
    done = subprocess.run(
        command,
        shell=True,
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    return done.returncode, done.stdout + done.stderr


@pytest.fixture(scope="module")
def copy(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """This checkout's files (tracked, and new ones git does not ignore) in ``pytest-ragmetrics/``.

    Installing from a path builds in the source tree (``build/``, ``*.egg-info``): a copy keeps
    the checkout clean.
    """
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=CHECKOUT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    root = tmp_path_factory.mktemp("source") / "pytest-ragmetrics"
    for name in filter(None, listed.split("\0")):
        source = CHECKOUT / name
        if source.is_file():
            (root / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, root / name)
    return root


@pytest.fixture(scope="module")
def wheel(copy: Path) -> Path:
    """The wheel ``python -m build`` writes from the copy, in its ``dist/``.

    ``RAGMETRICS_WHEEL`` names one .ci/run built already (it is copied there).
    """
    given = os.environ.get("RAGMETRICS_WHEEL")
    if given:
        (copy / "dist").mkdir(exist_ok=True)
        return Path(shutil.copy2(given, copy / "dist"))
    code, output = run(f"{sys.executable} -m build --wheel {copy}", copy, dict(os.environ))
    assert code == 0, output
    (built,) = (copy / "dist").glob("*.whl")
    return built


def test_the_readme_has_one_line_per_source() -> None:
    lines = install_lines()
    assert len(lines) == 3, lines
    assert GIT_URL in lines[0]
    assert lines[1].split()[-1] == "./pytest-ragmetrics"
    assert lines[2].split()[-1].startswith("./pytest-ragmetrics/dist/")


@pytest.mark.parametrize("source", ["git", "path", "wheel"])
def test_an_install_line_then_the_quick_start_bless_and_regress(
    source: str, copy: Path, wheel: Path, tmp_path: Path
) -> None:
    line = install_lines()[["git", "path", "wheel"].index(source)]
    if source == "wheel":
        # The README names the file `python -m build` writes for this version.
        assert Path(line.split()[-1]).name == wheel.name, (line, wheel.name)
    elif source == "git":
        line = line.replace(GIT_URL, f"git+file://{CHECKOUT}")  # the commit checked out here
    cwd = copy.parent  # where ./pytest-ragmetrics is the copy
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    env = clean_env(venv)
    code, output = run(line, cwd, env)
    assert code == 0, f"`{line}` exited {code}:\n{output}"
    code, where = run(
        "python -c 'import pytest_ragmetrics; print(pytest_ragmetrics.__file__)'", tmp_path, env
    )
    assert code == 0 and where.strip().startswith(str(venv)), where

    root = tmp_path / "project"
    root.mkdir()
    project = project_from(readme_blocks(README.read_text(encoding="utf-8")), ("Quick start",))
    write_project(project, root)
    commands = [command.split("#")[0].strip() for _, command in project.commands]
    assert commands == ["pytest", "pytest --ragmetrics-update-baseline"], commands
    for block, command in project.commands:
        code, output = run(command, root, env, timeout=300)
        assert code == 0, f"{block.where}: `{command}` exited {code}:\n{output}"
        assert re.search(r"\d+ passed", output) and "Warning" not in output, output
    assert (root / ".ragmetrics" / "baseline.json").is_file()

    # A worse retriever (the best hit of every query dropped) fails against the blessed baseline.
    conftest = root / "conftest.py"
    text = conftest.read_text(encoding="utf-8")
    worse = re.sub(r"(key=lambda p: -p\[1\]\))", r"\1[1:]", text)
    assert worse != text, "the quick start's search no longer sorts with key=lambda p: -p[1]"
    conftest.write_text(worse, encoding="utf-8")
    code, output = run("pytest", root, env, timeout=300)
    assert code == 1, output
    assert "regressed against the baseline" in output and "1 failed" in output, output
