"""The README and the docs pages as a pytest project: their fenced blocks, by page and section,
made into files and commands.

Used by ``test_readme.py`` (the README's and the docs' code runs as written), ``test_docs.py``
(every block of every page is run or marked) and ``test_install.py`` (the quick start runs from
an installed wheel, a local path and a git URL). The rules for blocks are in
``test_readme.py``'s docstring.
"""

from __future__ import annotations

import json
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.helpers.paths import REPO

ROOT = REPO
README = ROOT / "README.md"
DOCS = ROOT / "docs"
# The pages (and their ``##`` sections; "" is the whole page) whose blocks make the project.
COVERED: dict[str, tuple[str, ...]] = {
    "README.md": ("Quick start",),
    "docs/guide/fixtures.md": ("",),
    "docs/guide/integrations.md": ("",),
    "docs/guide/ci.md": ("",),
    "docs/guide/answer-layer.md": ("",),
}
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
    page: str = "README.md"  # relative to the checkout

    @property
    def where(self) -> str:
        return f"{self.page}:{self.line} ({self.section or 'top'}, {self.language} block)"


def pages() -> list[str]:
    """The README and every docs page, relative to the checkout."""
    found = sorted(str(path.relative_to(ROOT)) for path in DOCS.rglob("*.md"))
    return ["README.md", *found]


def page_blocks(page: str) -> list[Block]:
    """The blocks of one page (``README.md`` or ``docs/...``)."""
    return readme_blocks((ROOT / page).read_text(encoding="utf-8"), page)


def covered_blocks() -> list[Block]:
    """The blocks of every covered page."""
    return [block for page in COVERED for block in page_blocks(page)]


def readme_blocks(text: str, page: str = "README.md") -> list[Block]:
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
                blocks.append(Block(section, language, start, code, reason, page))
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
    assert fence is None, f"{page}:{fence[2]}: a code block is never closed"
    return blocks


def covered(block: Block, sections: tuple[str, ...] | None = None) -> bool:
    """Whether ``block`` is in ``sections`` (default: its page's covered sections)."""
    chosen = COVERED.get(block.page, ()) if sections is None else sections
    return bool(chosen) and block.section.startswith(chosen)


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


def project_from(blocks: list[Block], sections: tuple[str, ...] | None = None) -> Project:
    """The files and commands of the blocks under headings that start with ``sections``
    (default: each page's covered sections)."""
    project = Project()
    for block in blocks:
        if not covered(block, sections) or block.illustrative is not None:
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


def write_project(project: Project, root: Path) -> Path:
    """Write the project's files and its dataset under ``root``; return the dataset folder."""
    for path, parts in project.files.items():
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_text("\n\n".join(parts), encoding="utf-8")
    for path, document in project.toml.items():
        (root / path).write_text(toml_text(document), encoding="utf-8")
    options = project.toml["pyproject.toml"]["tool"]["pytest"]["ini_options"]
    dataset = root / options["ragmetrics_dataset"]
    write_dataset(dataset)
    return dataset
