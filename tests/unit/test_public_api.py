"""The public API: the top-level names pinned, each one importable and lazy, every error and
warning of ``errors.py`` among them, the README and the docs importing only public names, and
the fixtures annotated with public types, as the fixtures page's table says."""

from __future__ import annotations

import ast
import inspect
import re
import subprocess
import sys
from typing import Protocol

import pytest

import pytest_ragmetrics
from pytest_ragmetrics import errors
from tests.helpers.readme_project import PYTHON, ROOT, page_blocks, pages

# The pinned list, one name a line: a change to the public API is a change to this file.
PUBLIC = (ROOT / "tests" / "data" / "public_api.txt").read_text(encoding="utf-8").split()
PROTOCOLS = ["Generator", "Judge", "RelevanceJudge", "Retriever"]
# The submodules the package docstring names public besides the top level.
PUBLIC_SUBMODULES = (
    "pytest_ragmetrics.integrations.langchain",
    "pytest_ragmetrics.integrations.llama_index",
)
FIXTURES = ROOT / "pytest_ragmetrics" / "plugin" / "fixtures.py"
FIXTURES_PAGE = "docs/guide/fixtures.md"


def test_the_top_level_names_are_pinned() -> None:
    assert pytest_ragmetrics.__all__ == PUBLIC
    assert set(dir(pytest_ragmetrics)) >= set(PUBLIC)
    docstring = " ".join((pytest_ragmetrics.__doc__ or "").split())
    assert all(f"``{module}``" in docstring for module in PUBLIC_SUBMODULES)


def test_every_public_name_imports() -> None:
    namespace: dict[str, object] = {}
    exec("from pytest_ragmetrics import *", namespace)
    assert sorted(n for n in namespace if n != "__builtins__") == sorted(PUBLIC)
    assert all(namespace[name] is not None for name in PUBLIC)


def test_the_protocols_are_protocols() -> None:
    for name in PROTOCOLS:
        value = getattr(pytest_ragmetrics, name)
        assert Protocol in value.__mro__, name


def test_every_error_and_warning_of_errors_py_is_public() -> None:
    defined = [
        value
        for value in vars(errors).values()
        if inspect.isclass(value)
        and issubclass(value, (Exception, Warning))
        and value.__module__ == errors.__name__
    ]
    assert len(defined) >= 19
    missing = [cls.__name__ for cls in defined if cls.__name__ not in pytest_ragmetrics.__all__]
    assert missing == []
    assert all(getattr(pytest_ragmetrics, cls.__name__) is cls for cls in defined)


def test_importing_the_package_loads_none_of_what_it_exports() -> None:
    code = (
        "import sys, pytest_ragmetrics\n"
        "dir(pytest_ragmetrics)\n"
        "print(sorted(m for m in sys.modules if m == 'numpy' or (m.startswith("
        "'pytest_ragmetrics.') and m.split('.')[1] not in ('_lazy', '_version', 'errors', "
        "'controls'))))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    ).stdout
    assert out.strip() == "[]"


FROM_IMPORT = re.compile(r"\bfrom\s+(pytest_ragmetrics[\w.]*)\s+import\s+\(?([\w ,*]+)")
PLAIN_IMPORT = re.compile(r"\bimport\s+(pytest_ragmetrics[\w.]*)")


def non_public_imports(code: str, python: bool = True) -> list[str]:
    """Each import of ``pytest_ragmetrics`` in ``code`` that is not of a public name."""
    imports: list[tuple[str, list[str]]] = []
    try:
        tree = ast.parse(code) if python else None
    except SyntaxError:
        tree = None
    if tree is None:
        for module, names in FROM_IMPORT.findall(code):
            imports.append((module, [n.strip() for n in names.split(",") if n.strip()]))
        imports.extend((module, []) for module in PLAIN_IMPORT.findall(code))
    else:
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module and not node.level:
                imports.append((node.module, [alias.name for alias in node.names]))
            elif isinstance(node, ast.Import):
                imports.extend((alias.name, []) for alias in node.names)
    problems = []
    for module, names in imports:
        if module != "pytest_ragmetrics" and not module.startswith("pytest_ragmetrics."):
            continue
        if module in PUBLIC_SUBMODULES:
            continue
        if module != "pytest_ragmetrics":
            problems.append(f"{module} is not a public module")
            continue
        problems.extend(
            f"pytest_ragmetrics.{name} is not in __all__" for name in names if name not in PUBLIC
        )
    return problems


def test_the_import_check_tells_public_from_private() -> None:
    assert non_public_imports("from pytest_ragmetrics import from_function, Retriever") == []
    assert non_public_imports("from pytest_ragmetrics.integrations.langchain import x") == []
    assert non_public_imports("import pytest_ragmetrics\nimport numpy") == []
    assert non_public_imports("def f():\n    from pytest_ragmetrics.retrievers import x\n") == [
        "pytest_ragmetrics.retrievers is not a public module"
    ]
    assert non_public_imports("import pytest_ragmetrics.data.model") == [
        "pytest_ragmetrics.data.model is not a public module"
    ]
    assert non_public_imports("from pytest_ragmetrics import (\n    Run,\n    Nope,\n)") == [
        "pytest_ragmetrics.Nope is not in __all__"
    ]
    shell = 'python -c "from pytest_ragmetrics.judges.answers import judge_answers"'
    assert non_public_imports(shell, python=False) == [
        "pytest_ragmetrics.judges.answers is not a public module"
    ]


def test_the_readme_and_the_docs_import_only_public_names() -> None:
    problems = [
        f"{block.where}: {problem}"
        for page in pages()
        for block in page_blocks(page)
        for problem in non_public_imports(block.text, python=block.language == PYTHON)
    ]
    assert problems == []


def fixture_types() -> dict[str, str]:
    """Each fixture of ``plugin/fixtures.py`` and its return annotation."""
    tree = ast.parse(FIXTURES.read_text(encoding="utf-8"))
    return {
        node.name: ast.unparse(node.returns) if node.returns else ""
        for node in tree.body
        if isinstance(node, ast.FunctionDef)
        and any("pytest.fixture" in ast.unparse(d) for d in node.decorator_list)
    }


def test_every_fixture_is_annotated_with_a_public_type() -> None:
    types = fixture_types()
    assert len(types) == 15
    assert {name: t for name, t in types.items() if t not in PUBLIC} == {}


@pytest.mark.parametrize("page", [FIXTURES_PAGE])
def test_the_fixtures_table_gives_each_fixture_its_type(page: str) -> None:
    text = (ROOT / page).read_text(encoding="utf-8")
    rows = re.findall(r"^\| `(\w+)` \| (?:session|function) \| `(\w+)` \|", text, re.M)
    assert dict(rows) == fixture_types()


def test_the_glossary_defines_each_word_once_and_names_public_classes() -> None:
    text = (ROOT / "docs" / "reference" / "glossary.md").read_text(encoding="utf-8")
    words = re.findall(r"^\| \*\*(.+?)\*\* \|", text, re.M)
    assert len(words) == len(set(words)) >= 20
    classes = set(re.findall(r"`([A-Z][A-Za-z]+)`", text))
    internal = {"BaselineVerdict", "MetricVerdict"}  # read in reports, not built by users
    assert classes - internal <= set(PUBLIC)
    assert {"Verdict", "BaselineVerdict", "Claim", "Retriever", "Pipeline"} <= classes
