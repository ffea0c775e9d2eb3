"""The README's code runs as written: the blocks of its quick start, fixtures, answer-layer and
CI sections make a pytest project, and its shell commands run in it.

Blocks are found by section (``## `` headings, with their ``###`` subsections), so sections
added later are covered when their heading is listed in ``COVERED``. In a covered section:

- a Python or TOML block whose first line is ``# <path>`` is that file of the project (a path
  named twice is joined: Python appended, TOML tables merged);
- a shell block's lines are commands, run in order in the project (``pytest`` and
  ``ragmetrics`` are this environment's), and each must exit 0;
- a YAML block's ``run:`` steps are commands too, except installs (this environment is the
  installed package);
- any other Python, TOML or shell block must follow ``<!-- illustrative: reason -->``.

The dataset the quick start's ``ragmetrics_dataset`` names is written by this test: a few
documents and queries the keyword search of the quick start finds.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import tomllib

README = Path(__file__).resolve().parent.parent / "README.md"
COVERED = ("Quick start", "Fixtures", "The answer layer", "CI recipe")
PYTHON, TOML, SHELL, YAML = "python", "toml", ("bash", "sh", "shell", "console"), ("yaml", "yml")
ILLUSTRATIVE = re.compile(r"<!--\s*illustrative:(?P<reason>.*?)-->")
FILE_LINE = re.compile(r"#\s*(?P<path>[\w./-]+\.(?:py|toml))\s*$")
INSTALL = re.compile(r"^\s*(?:\S*pip3?|python3? -m pip)\s+install\b")

CORPUS = [
    ("d1", "Cats", "Cats purr when they are content. They sleep most of the day."),
    ("d2", "Dogs", "Dogs bark at strangers. They guard the house."),
    ("d3", "Bread", "Bread needs flour water and yeast. Bake it in a hot oven."),
    ("d4", "Moon", "The moon orbits the earth in about 27 days. It has no light of its own."),
    ("d5", "Tea", "Green tea is brewed with water below boiling."),
]
QUERIES = [
    ("q1", "why do cats purr"),
    ("q2", "what makes dogs bark"),
    ("q3", "how to bake bread"),
    ("q4", "how long does the moon take to orbit the earth"),
]
QRELS = [("q1", "d1", 1), ("q2", "d2", 1), ("q3", "d3", 1), ("q4", "d4", 2), ("q4", "d1", 0)]


@dataclass
class Block:
    section: str  # the ## heading
    language: str
    line: int  # of the opening fence, 1-based
    text: str
    illustrative: str | None = None  # the reason, when marked

    @property
    def where(self) -> str:
        return f"README.md:{self.line} ({self.section}, {self.language} block)"


def readme_blocks(text: str) -> list[Block]:
    """Every fenced block with its ``##`` section and its illustrative marker, if any."""
    blocks: list[Block] = []
    section = ""
    previous = ""  # the last non-blank line before a block
    fence: tuple[str, str, int, list[str]] | None = None  # indent + marker, language, line, body
    for number, line in enumerate(text.splitlines(), start=1):
        if fence is not None:
            opener, language, start, body = fence
            if line.strip() == opener.strip() and line.startswith(opener[: -len("```")]):
                indent = len(opener) - len("```")
                code = "\n".join(row[indent:] for row in body) + "\n"
                marker = ILLUSTRATIVE.search(previous)
                reason = marker.group("reason").strip() if marker else None
                blocks.append(Block(section, language, start, code, reason))
                fence = None
                previous = ""
            else:
                body.append(line)
            continue
        stripped = line.strip()
        if stripped.startswith("```"):
            indent = line[: len(line) - len(line.lstrip())]
            fence = (indent + "```", stripped[3:].strip().lower(), number, [])
            continue
        if line.startswith("## "):
            section = line[3:].strip()
        if stripped:
            previous = stripped
    assert fence is None, f"README.md:{fence[2]}: a code block is never closed"
    return blocks


def covered(block: Block) -> bool:
    return block.section.startswith(COVERED)


def is_runnable(block: Block) -> bool:
    return block.language in (PYTHON, TOML, *SHELL)


@dataclass
class Project:
    files: dict[str, list[str]] = field(default_factory=dict)
    toml: dict[str, dict[str, Any]] = field(default_factory=dict)
    commands: list[tuple[Block, str]] = field(default_factory=list)
    unmarked: list[str] = field(default_factory=list)


def _merge(into: dict[str, Any], more: dict[str, Any]) -> None:
    for key, value in more.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        else:
            into[key] = value


def project_from(blocks: list[Block]) -> Project:
    project = Project()
    for block in blocks:
        if not covered(block) or block.illustrative is not None:
            continue
        first = block.text.splitlines()[0] if block.text.strip() else ""
        named = FILE_LINE.fullmatch(first.strip())
        if block.language in (PYTHON, TOML) and named:
            path = named.group("path")
            if block.language == TOML:
                _merge(project.toml.setdefault(path, {}), tomllib.loads(block.text))
            else:
                project.files.setdefault(path, []).append(block.text)
        elif block.language in SHELL:
            for line in block.text.splitlines():
                if line.strip() and not line.lstrip().startswith("#"):
                    project.commands.append((block, line))
        elif block.language in YAML:
            for step in re.findall(r"^\s*-?\s*run:\s*(.+)$", block.text, flags=re.MULTILINE):
                if not INSTALL.match(step):
                    project.commands.append((block, step))
        elif is_runnable(block):
            project.unmarked.append(block.where)
    return project


def toml_text(document: dict[str, Any], prefix: str = "") -> str:
    """A TOML document from nested tables of strings, numbers, booleans and lists of them."""
    scalars = {k: v for k, v in document.items() if not isinstance(v, dict)}
    lines = [f"[{prefix}]"] if prefix and scalars else []
    lines += [f"{key} = {json.dumps(value)}" for key, value in scalars.items()]
    text = "\n".join(lines) + ("\n\n" if lines else "")
    for key, value in document.items():
        if isinstance(value, dict):
            text += toml_text(value, f"{prefix}.{key}" if prefix else key)
    return text


def write_dataset(folder: Path) -> None:
    (folder / "qrels").mkdir(parents=True)
    (folder / "corpus.jsonl").write_text(
        "".join(json.dumps({"_id": i, "title": t, "text": x}) + "\n" for i, t, x in CORPUS)
    )
    (folder / "queries.jsonl").write_text(
        "".join(json.dumps({"_id": i, "text": x}) + "\n" for i, x in QUERIES)
    )
    (folder / "qrels" / "test.tsv").write_text(
        "query-id\tcorpus-id\tscore\n" + "".join(f"{q}\t{d}\t{g}\n" for q, d, g in QRELS)
    )


@pytest.fixture(scope="module")
def blocks() -> list[Block]:
    return readme_blocks(README.read_text(encoding="utf-8"))


def test_the_covered_sections_exist_and_have_code(blocks: list[Block]) -> None:
    for heading in COVERED:
        found = [b for b in blocks if b.section.startswith(heading)]
        assert found, f"README.md has no code block under a '## {heading}...' section"


def markers_without_reason(text: str) -> list[int]:
    """Lines of ``<!-- illustrative -->`` markers that do not say why."""
    lines = []
    for match in re.finditer(r"<!--\s*illustrative\b(?P<rest>.*?)-->", text, flags=re.DOTALL):
        rest = match.group("rest")
        if not (rest.startswith(":") and rest[1:].strip()):
            lines.append(text.count("\n", 0, match.start()) + 1)
    return lines


def test_every_illustrative_block_says_why() -> None:
    missing = markers_without_reason(README.read_text(encoding="utf-8"))
    assert not missing, (
        f"README.md lines {missing}: write <!-- illustrative: why this block is not run -->"
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
    for path, parts in project.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("\n\n".join(parts), encoding="utf-8")
    for path, document in project.toml.items():
        (root / path).write_text(toml_text(document), encoding="utf-8")
    dataset = project.toml["pyproject.toml"]["tool"]["pytest"]["ini_options"]["ragmetrics_dataset"]
    write_dataset(root / dataset)
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
    # The note the README quotes is the one printed.
    quoted = re.search(r"`(retriever\s+'my_search' returned[^`]+)`", README.read_text("utf-8"))
    assert quoted, "README.md no longer quotes the short-rankings note of its quick start"
    assert " ".join(quoted.group(1).split()) in first
    assert "### Retrieval layer" in summary.read_text()
    assert (root / "ragmetrics.html").is_file()
