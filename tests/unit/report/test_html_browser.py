"""The HTML report in a real browser: headless Chromium opens it from file://.

Needs /usr/bin/chromium and /usr/bin/chromedriver (Debian: ``apt-get install chromium
chromium-driver``; .ci/run installs them) and selenium (the dev extra). Without them the tests
skip, saying so, except under CI (``CI`` set), where they fail: CI must run them.

Checked: no console message of level error (a script error or a Content-Security-Policy
violation would be one), no request other than the page itself (Chromium's DevTools network
events), no hostile string executed, the numbers shown equal the JSON report's, sorting, "open
all" and print preparation work, dark mode applies; a screenshot is saved under the test's
tmp_path (and copied to $RAGMETRICS_TEST_ARTIFACTS when set).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_ragmetrics.deltas import delta_text
from pytest_ragmetrics.report.html import html_report, report_page
from tests.helpers.browser import chromium, open_page, screenshot
from tests.helpers.html_documents import HOSTILE_TEST, QUERY_TEXT, hostile_document, wide_document


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with chromium(tmp_path_factory.mktemp("chromium-profile"), "HTML report") as driver:
        yield driver


def test_the_report_in_chromium(browser: Any, tmp_path: Path) -> None:
    document = hostile_document()
    path = tmp_path / "report.html"
    path.write_text(html_report(report_page(document)), encoding="utf-8")
    seen = open_page(browser, path)

    assert [m for m in seen["console"] if m["level"] in ("SEVERE", "WARNING")] == []
    assert seen["requests"] == [path.as_uri()]  # the page itself, nothing else
    assert browser.execute_script("return typeof window.__pwned") == "undefined"

    shown = browser.execute_script(
        """
        const text = s => Array.from(document.querySelectorAll(s), e => e.textContent.trim());
        return {
          title: document.title,
          body: document.body.innerText,
          matrix: text("table.matrix td.cell .v"),
          deltas: text("table.matrix td.cell .d"),
          chips: text("#verdict .chip"),
          worseBars: document.querySelectorAll("#layer-retrieval svg.chart g.worse")[0]
            .querySelectorAll("rect").length,
          chartWidth: document.querySelector("svg.chart").getBoundingClientRect().width,
          open: document.querySelectorAll("details[open]").length,
          all: document.querySelectorAll("details").length,
        };
        """
    )
    retrieval = next(e for e in document["evaluations"] if e["layer"] == "retrieval")
    answers = next(e for e in document["evaluations"] if e["layer"] == "answer")
    expected_values, expected_deltas = [], []
    for entry in (retrieval, answers):
        verdicts = {m["metric"]: m for m in entry["outcome"]["baseline"]["metrics"]}
        for metric in ("ndcg_at_10", "recall_at_1", "mrr", "groundedness", "answer_relevance"):
            if metric in entry["metrics"]:
                mark = {"regressed": "▼ ", "improved": "▲ "}.get(verdicts[metric]["status"], "")
                expected_values.append(f"{mark}{entry['metrics'][metric]:.4f}")
                expected_deltas.append(f"Δ {delta_text(verdicts[metric]['delta'])}")
    assert shown["matrix"] == expected_values
    assert shown["deltas"] == expected_deltas
    assert shown["chips"] == ["▼ 2 regressed", "✗ 1 below threshold"]
    assert shown["title"] == "ragmetrics report"
    assert HOSTILE_TEST in shown["body"]
    worse = sum(
        retrieval["per_query"][q]["ndcg_at_10"] < retrieval["baseline_per_query"][q]["ndcg_at_10"]
        for q in retrieval["per_query"]
    )
    assert shown["worseBars"] == worse == 2
    assert shown["chartWidth"] > 300
    assert 0 < shown["open"] < shown["all"]

    screenshot(browser, tmp_path / "html_report.png")
    assert (tmp_path / "html_report.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # Sorting: open the table of every number and sort it by Δ, both ways.
    browser.execute_script("document.querySelector('details.numbers.table').open = true")
    header = browser.find_element("xpath", "(//table[contains(@class,'summary')])[1]//th[5]")
    values = []
    for _ in range(2):
        header.click()
        values.append(
            browser.execute_script(
                "return Array.from(document.querySelectorAll('table.summary')[0].tBodies[0].rows,"
                " r => parseFloat(r.cells[4].dataset.value))"
            )
        )
    assert values[0] == sorted(values[0]) and values[1] == sorted(values[1], reverse=True)
    assert len(values[0]) == 3

    # "open all", and every section opens before printing.
    browser.find_element("id", "expand").click()
    assert (
        browser.execute_script("return document.querySelectorAll('details:not([open])').length")
        == 0
    )
    browser.execute_script(
        "document.querySelectorAll('details').forEach(d => d.open = false);"
        "window.dispatchEvent(new Event('beforeprint'));"
    )
    assert (
        browser.execute_script("return document.querySelectorAll('details:not([open])').length")
        == 0
    )
    shown_text = browser.execute_script(
        "const p = Array.from(document.querySelectorAll('p.qfull'))"
        ".find(e => e.textContent === arguments[0]);"
        "p.scrollIntoView(); return p.innerText;",
        QUERY_TEXT,
    )
    assert shown_text == QUERY_TEXT  # rendered, as text

    # Dark mode follows the system setting.
    colours = []
    for scheme in ("light", "dark"):
        browser.execute_cdp_cmd(
            "Emulation.setEmulatedMedia",
            {"features": [{"name": "prefers-color-scheme", "value": scheme}]},
        )
        colours.append(
            browser.execute_script("return getComputedStyle(document.body).backgroundColor")
        )
    browser.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    assert colours == ["rgb(255, 255, 255)", "rgb(13, 17, 23)"]
    assert [m for m in browser.get_log("browser") if m["level"] == "SEVERE"] == []


def test_a_wide_report_is_drawn_binned(browser: Any, tmp_path: Path) -> None:
    path = tmp_path / "wide.html"
    path.write_text(html_report(report_page(wide_document(5000))), encoding="utf-8")
    seen = open_page(browser, path)
    assert [m for m in seen["console"] if m["level"] == "SEVERE"] == []
    assert seen["requests"] == [path.as_uri()]
    bars = browser.execute_script(
        "return Array.from(document.querySelectorAll('svg.chart g rect'),"
        " r => r.getBoundingClientRect().width)"
    )
    histogram_bars = 10 * 2
    assert histogram_bars < len(bars) <= 100 + histogram_bars
    assert min(bars) > 0
