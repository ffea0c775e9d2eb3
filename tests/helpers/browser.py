"""Headless Chromium for the tests that open a page: the HTML report, the docs site.

Needs /usr/bin/chromium and /usr/bin/chromedriver (Debian: ``apt-get install chromium
chromium-driver``; .ci/run installs them) and selenium (the dev extra). Without them a test
skips, saying so, except under CI (``CI`` set), where it fails: CI must run it.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = (
    "--headless=new",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1280,900",
)


def require_browser(what: str) -> None:
    """Skip (fail under CI) when Chromium, its driver or selenium is missing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.exists()]
    try:
        import selenium  # noqa: F401
    except ImportError:
        missing.append("selenium (pip install -e '.[dev]')")
    if not missing:
        return
    reason = (
        f"no browser for the {what} test: {', '.join(missing)} missing (apt-get install "
        "chromium chromium-driver)"
    )
    if os.environ.get("CI"):
        pytest.fail(f"CI must run the browser test; {reason}")
    pytest.skip(reason)


@contextmanager
def chromium(profile: Path, what: str) -> Iterator[Any]:
    """A headless Chromium driven by selenium, logging console messages and requests."""
    require_browser(what)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in (*FLAGS, f"--user-data-dir={profile}"):
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    driver = webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(120)
    try:
        yield driver
    finally:
        driver.quit()


def open_page(browser: Any, path: Path | str) -> dict[str, Any]:
    """Load ``path`` from file:// (or a URL); the console messages and the requests made
    meanwhile."""
    browser.get("about:blank")  # leave the browser's own start page, then forget its requests
    browser.get_log("browser")
    browser.get_log("performance")
    browser.get(path if isinstance(path, str) else path.as_uri())
    requests = []
    for entry in browser.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            requests.append(message["params"]["request"]["url"])
    return {"console": browser.get_log("browser"), "requests": requests}


def screenshot(browser: Any, target: Path, *, full: bool = True) -> None:
    """Save the page (all of it when ``full``, up to 8000 px) to ``target``; copied to
    $RAGMETRICS_TEST_ARTIFACTS when set."""
    if full:
        height = browser.execute_script("return document.documentElement.scrollHeight")
        browser.set_window_size(1280, min(int(height), 8000))
    browser.save_screenshot(str(target))
    browser.set_window_size(1280, 900)
    artifacts = os.environ.get("RAGMETRICS_TEST_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(target, Path(artifacts) / target.name)
