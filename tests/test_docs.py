"""The documentation site: generated pages current, every code block run or marked, the site
built with ``mkdocs build --strict`` and opened in headless Chromium.

The covered pages' blocks run in ``test_readme.py``; here every other page's runnable blocks
must say why they are not run. The browser part checks each built page for console errors
and each internal link for a target (page and anchor), and saves the start page's
screenshot (``RAGMETRICS_DOCS_SCREENSHOT=docs/site-start.png`` writes the committed one).
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from html.parser import HTMLParser
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from tests.helpers.browser import chromium, open_page, screenshot
from tests.helpers.readme_project import ROOT, covered, is_runnable, page_blocks, pages

sys.path.insert(0, str(ROOT / "tools"))
import docs_reference

from pytest_ragmetrics.data import load_dataset
from pytest_ragmetrics.errors import DataFormatError


def test_the_generated_reference_pages_are_current() -> None:
    for path, text in docs_reference.render().items():
        assert path.is_file(), f"{path} is missing: run python tools/docs_reference.py"
        assert path.read_text(encoding="utf-8") == text, (
            f"{path.relative_to(ROOT)} differs from the code: run python tools/docs_reference.py"
        )


def test_the_configuration_page_lists_every_option_and_flag() -> None:
    from pytest_ragmetrics.options import FLAGS, OPTIONS

    text = docs_reference.configuration_markdown()
    for option in OPTIONS:
        assert f"| `{option.name}` | `{option.flag}` " in text
    for flag in FLAGS:
        assert f"| `{flag.flag}` |" in text
    # A pipe in a help text would split its row into more cells.
    rows = [line for line in text.splitlines() if line.startswith("| `ragmetrics_")]
    assert all(line.replace("\\|", "").count("|") == 6 for line in rows)


def test_the_configuration_page_shows_a_value_for_the_flags_pytest_takes_one_for(
    tmp_path: Path,
) -> None:
    """The pytest flag column agrees with ``pytest --help``: ``--ragmetrics-k K`` for a flag
    that takes a value, ``--ragmetrics-strict`` alone for an on/off one (the page said
    ``--ragmetrics-strict VALUE``, and ``--ragmetrics-strict=yes`` is an argparse error)."""
    from tests.helpers.plugin_project import UNRELATED_PLUGINS

    shown = subprocess.run(
        [sys.executable, "-m", "pytest", "--help", *UNRELATED_PLUGINS],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    # argparse writes "--ragmetrics-k=K" for a flag taking a value, the bare flag otherwise.
    takes_value = {
        flag: bool(value)
        for flag, value in re.findall(r"^ +(--ragmetrics-[a-z-]+)(=\S+)?", shown, re.MULTILINE)
    }
    page = (ROOT / "docs" / "reference" / "configuration.md").read_text(encoding="utf-8")
    documented = {
        flag: bool(value)
        for flag, value in re.findall(
            r"^\| (?:`ragmetrics_\w+` \| )?`(--ragmetrics-[a-z-]+)`( \S+)? \|", page, re.MULTILINE
        )
    }
    assert len(documented) > 40
    assert documented == takes_value


def test_the_cli_page_has_every_command() -> None:
    from pytest_ragmetrics.cli import build_parser

    text = docs_reference.cli_markdown()
    commands = docs_reference._subcommands(build_parser())
    assert len(commands) >= 8
    for name in commands:
        assert f"## `ragmetrics {name}`" in text


def test_every_runnable_block_on_every_page_is_run_or_marked() -> None:
    unmarked = [
        block.where
        for page in pages()
        for block in page_blocks(page)
        if is_runnable(block) and not covered(block) and block.illustrative is None
    ]
    assert not unmarked, (
        "run these blocks (a covered page in tests/helpers/readme_project.py) or mark them "
        "<!-- illustrative: why -->: " + ", ".join(unmarked)
    )


def test_every_page_is_in_the_nav() -> None:
    config = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    for page in pages()[1:]:
        relative = str(Path(page).relative_to("docs"))
        assert f": {relative}\n" in config, f"{page} is not in mkdocs.yml's nav"


def _write(folder: Path, name: str, text: str | bytes) -> None:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")


def _beir(folder: Path, corpus: str, queries: str, qrels: str | bytes) -> None:
    _write(folder, "corpus.jsonl", corpus)
    _write(folder, "queries.jsonl", queries)
    _write(folder, "qrels/test.tsv", qrels)


def test_the_errors_the_datasets_page_quotes_are_the_ones_raised(tmp_path: Path) -> None:
    page = (ROOT / "docs" / "guide" / "datasets.md").read_text(encoding="utf-8")
    good_corpus = '{"_id": "d1", "text": "a"}\n{"_id": "d3", "text": "b"}\n'
    good_queries = '{"_id": "q1", "text": "why do cats purr"}\n'
    good_qrels = "query-id\tcorpus-id\tscore\nq1\td1\t1\n"
    duplicated = "".join(f'{{"_id": "d{i}", "text": "x"}}\n' for i in (1, 2, 3, 4, 5, 6, 3))
    ungraded = good_qrels + "".join(f"q1\td{i}\t1\n" for i in range(4, 13)) + "q1\td3\thigh\n"
    cases = {
        "corpus.jsonl:7: document id 'd3' appears twice (first at line 3)": (
            duplicated,
            good_queries,
            good_qrels,
        ),
        "qrels/test.tsv:12: grade 'high' is not an integer": (good_corpus, good_queries, ungraded),
        "queries.jsonl:2: not valid UTF-8 (byte 0xe9 at column 27)": (
            good_corpus,
            None,
            good_qrels,
        ),
    }
    for number, (quoted, (corpus, queries, qrels)) in enumerate(cases.items()):
        assert quoted in page, f"docs/guide/datasets.md no longer quotes {quoted!r}"
        folder = tmp_path / f"case{number}"
        if queries is None:
            _beir(folder, corpus, "", qrels)
            (folder / "queries.jsonl").write_bytes(
                b'{"_id": "q1", "text": "a"}\n{"_id": "q2", "text": "caf\xe9"}\n'
            )
        else:
            _beir(folder, corpus, queries, qrels)
        with pytest.raises(DataFormatError) as caught:
            load_dataset(folder, "test")
        assert str(caught.value) == f"{folder}/{quoted}"


# -- the built site ------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    pytest.importorskip("mkdocs", reason="mkdocs-material is in the dev extra")
    out = tmp_path_factory.mktemp("site")
    result = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, f"mkdocs build --strict failed:\n{result.stderr}"
    return out


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []
        self.ids: set[str] = set()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        values = dict(attrs)
        if values.get("id"):
            self.ids.add(str(values["id"]))
        if tag == "a" and values.get("href"):
            self.hrefs.append(str(values["href"]))


def _parse(path: Path) -> _Links:
    parser = _Links()
    parser.feed(path.read_text(encoding="utf-8"))
    return parser


def _internal_targets(page: Path, href: str) -> tuple[Path, str] | None:
    parts = urlsplit(href)
    if parts.scheme or parts.netloc or href.startswith(("mailto:", "javascript:")):
        return None
    target = (page.parent / unquote(parts.path)).resolve() if parts.path else page
    if target.is_dir():
        target = target / "index.html"
    return target, unquote(parts.fragment)


def test_the_site_builds_and_every_internal_link_has_a_target(site: Path) -> None:
    pages_built = sorted(site.rglob("*.html"))
    assert len(pages_built) >= 25
    anchors = {path: _parse(path) for path in pages_built}
    broken = []
    for page, parsed in anchors.items():
        if page.name == "404.html":
            continue  # served from any depth: its links are absolute by design
        for href in parsed.hrefs:
            found = _internal_targets(page, href)
            if found is None:
                continue
            target, fragment = found
            if not target.exists():
                broken.append(f"{page.relative_to(site)}: {href} (no such file)")
            elif fragment and target.suffix == ".html":
                ids = anchors[target].ids if target in anchors else _parse(target).ids
                if fragment not in ids:
                    broken.append(f"{page.relative_to(site)}: {href} (no such anchor)")
    assert not broken, "broken internal links:\n" + "\n".join(broken)
    # The generated references and the included files are in the site.
    configuration = (site / "reference" / "configuration" / "index.html").read_text("utf-8")
    assert "ragmetrics_dataset" in configuration
    metrics = (site / "reference" / "metrics" / "index.html").read_text("utf-8")
    assert "Ranking order" in metrics


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile"), "docs site") as driver:
        yield driver


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    """The built site over HTTP on 127.0.0.1 (as ``mkdocs serve`` or a host would serve it:
    search runs in a web worker, which file:// pages cannot start)."""
    handler = functools.partial(SimpleHTTPRequestHandler, directory=str(site))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.RequestHandlerClass.log_message = lambda *args: None  # type: ignore[method-assign]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_every_page_opens_in_chromium_without_errors_or_requests_elsewhere(
    site: Path, served: str, browser: Any, tmp_path: Path
) -> None:
    errors, elsewhere = [], []
    for page in sorted(site.rglob("*.html")):
        if page.name == "404.html":
            continue
        url = served + str(page.relative_to(site)).removesuffix("index.html")
        loaded = open_page(browser, url)
        errors += [
            f"{page.relative_to(site)}: {entry['message']}"
            for entry in loaded["console"]
            if entry["level"] == "SEVERE"
        ]
        elsewhere += [f"{page.relative_to(site)}: {r}" for r in loaded["requests"]
                      if not r.startswith((served, "data:"))]  # fmt: skip
        title = browser.title
        assert "pytest-ragmetrics" in title, f"{page}: title {title!r}"
    assert not errors, "console errors:\n" + "\n".join(errors)
    assert not elsewhere, "requests leaving the site (the docs must read offline):\n" + "\n".join(
        elsewhere
    )
    # Search works: the index loads in its worker and finds the datasets page.
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    open_page(browser, served + "?q=FlagEmbedding")
    WebDriverWait(browser, 30).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, ".md-search-result__item a")
    )
    found = [a.get_attribute("href") for a in browser.find_elements(
        By.CSS_SELECTOR, ".md-search-result__item a")]  # fmt: skip
    assert any("guide/datasets" in str(href) for href in found), found
    open_page(browser, served)
    shot = tmp_path / "site-start.png"
    screenshot(browser, shot, full=False)
    assert shot.stat().st_size > 10_000
    wanted = os.environ.get("RAGMETRICS_DOCS_SCREENSHOT")
    if wanted:
        shutil.copy(shot, ROOT / wanted)


def test_the_search_index_covers_every_page(site: Path) -> None:
    index = json.loads((site / "search" / "search_index.json").read_text("utf-8"))
    locations = {doc["location"].split("#")[0] for doc in index["docs"]}
    assert "reference/configuration/" in locations and "guide/datasets/" in locations
