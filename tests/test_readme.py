"""The README's and the docs' code runs as written: the blocks of the README's quick start and
of the docs pages on fixtures, CI and the answer layer make a pytest project, and its shell
commands run in it.

Blocks are found by page and section (``## `` headings, with their ``###`` subsections), so
pages and sections added later are covered when listed in ``COVERED``. In a covered section:

- a Python or TOML block whose first line is ``# <path>`` is that file of the project (a path
  named twice is joined: Python appended, TOML tables merged);
- a shell block's lines are commands, run in order in the project (``pytest`` and
  ``ragmetrics`` are this environment's), and each must exit 0;
- a YAML block's ``run:`` steps are commands too, except installs (this environment is the
  installed package);
- any other Python, TOML or shell block must follow ``<!-- illustrative: reason -->`` (on every
  page, covered or not: ``test_docs.py``).

The dataset the quick start's ``ragmetrics_dataset`` names is written by this test: a few
documents and queries the keyword search of the quick start finds.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers.readme_project import (
    COVERED,
    DOCS,
    ROOT,
    Block,
    covered_blocks,
    pages,
    project_from,
    readme_blocks,
    write_project,
)


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return covered_blocks()


def test_the_covered_sections_exist_and_have_code(blocks: list[Block]) -> None:
    for page, headings in COVERED.items():
        for heading in headings:
            found = [b for b in blocks if b.page == page and b.section.startswith(heading)]
            assert found, f"{page} has no code block under a '## {heading}...' section"


def markers_without_reason(text: str) -> list[int]:
    """Lines of ``<!-- illustrative -->`` markers that do not say why."""
    lines = []
    for match in re.finditer(r"<!--\s*illustrative\b(?P<rest>.*?)-->", text, flags=re.DOTALL):
        rest = match.group("rest")
        if not (rest.startswith(":") and rest[1:].strip()):
            lines.append(text.count("\n", 0, match.start()) + 1)
    return lines


def test_every_illustrative_block_says_why() -> None:
    for page in pages():
        missing = markers_without_reason((ROOT / page).read_text(encoding="utf-8"))
        assert not missing, (
            f"{page} lines {missing}: write <!-- illustrative: why this block is not run -->"
        )
    sample = (
        "<!-- illustrative: takes minutes -->\n\n<!-- illustrative -->\n<!--illustrative:  -->\n"
    )
    assert markers_without_reason(sample) == [3, 4]


def test_every_runnable_block_of_the_covered_sections_is_run_or_marked(
    blocks: list[Block],
) -> None:
    project = project_from(blocks)
    assert not project.unmarked, (
        "these blocks are neither a '# <file>' block nor shell, nor marked "
        "<!-- illustrative: reason -->: " + ", ".join(project.unmarked)
    )
    assert "conftest.py" in project.files and "pyproject.toml" in project.toml
    assert any("ragmetrics " in command for _, command in project.commands)


def test_the_parser_finds_sections_markers_and_indented_blocks() -> None:
    text = (
        "## Quick start\n\n<!-- illustrative: needs a GPU -->\n```bash\nnvidia-smi\n```\n\n"
        "```python\nprint(1)\n```\n\n## Other\n\n- item:\n\n  ```toml\n  # pyproject.toml\n"
        "  a = 1\n  ```\n"
    )
    found = readme_blocks(text)
    assert [(b.section, b.language, b.line, b.illustrative) for b in found] == [
        ("Quick start", "bash", 4, "needs a GPU"),
        ("Quick start", "python", 8, None),
        ("Other", "toml", 16, None),
    ]
    assert found[2].text == "# pyproject.toml\na = 1\n"
    assert project_from(found).unmarked == ["README.md:8 (Quick start, python block)"]


def test_the_readme_project_runs_as_written(
    blocks: list[Block], pytester: pytest.Pytester, tmp_path: Path
) -> None:
    project = project_from(blocks)
    root = pytester.path
    write_project(project, root)
    summary = tmp_path / "step-summary.md"
    env = {
        **os.environ,
        "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""),
        "HF_HUB_OFFLINE": "1",
        "GITHUB_STEP_SUMMARY": str(summary),
        "PYTEST_ADDOPTS": "-p no:randomly -p no:cacheprovider",
    }
    for key in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_TESTRUNUID", "PYTEST_CURRENT_TEST"):
        env.pop(key, None)
    outputs: list[str] = []
    for block, command in project.commands:
        result = subprocess.run(
            command,
            shell=True,
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        output = result.stdout + result.stderr
        assert result.returncode == 0, (
            f"{block.where}: `{command}` exited {result.returncode}:\n{output}"
        )
        assert "Warning" not in output, f"{block.where}: `{command}` warned:\n{output}"
        outputs.append(output)
    # What the quick start says happens, happens.
    first = outputs[0]
    assert "ragmetrics: retrieval layer" in first and "ragmetrics: answer layer" in first
    assert re.search(r"\d+ passed", first) and "failed" not in first
    assert (root / ".ragmetrics" / "baseline.json").is_file()
    # The note the docs quote is the one printed.
    notes = DOCS / "guide" / "notes-and-progress.md"
    quoted = re.search(r"`(retriever\s+'my_search' returned[^`]+)`", notes.read_text("utf-8"))
    assert quoted, f"{notes} no longer quotes the short-rankings note of the quick start"
    assert " ".join(quoted.group(1).split()) in first
    assert "### Retrieval layer" in summary.read_text()
    assert (root / "ragmetrics.html").is_file()
