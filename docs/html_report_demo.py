"""Make the README's HTML-report screenshot from a real regression of the toy project.

In a temporary folder: the test suite's toy project (tests/helpers/plugin_project.py: five
documents, four queries, a retriever that RAG_WORSE=1 makes worse) plus an answer-layer test; one
pytest run records the baseline, a second with RAG_WORSE=1 writes ``--ragmetrics-json``. The
optional per-query fields are then filled the way the plugin will fill them (``add_query_details``
with the runs, the dataset and the assessments), the page is built with ``html_report`` and
headless Chromium takes the screenshot.

Run from the repository root (needs /usr/bin/chromium, /usr/bin/chromedriver, selenium):

    .venv/bin/python docs/html_report_demo.py            # writes docs/html-report.png
    .venv/bin/python docs/html_report_demo.py --keep DIR # also keeps the project, JSON and page
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.helpers.plugin_project import CONFTEST, write_dataset  # noqa: E402

ANSWERS = """
from pytest_ragmetrics import AnswerAssessment, Claim

JUDGE = {"name": "toy-judge", "model": "m", "rubric": "r", "rubric_sha256": "x", "parameters": {}}


def assessments(worse):
    second = (
        Claim("Dogs bark at the postman.", True, ("d2",), 0.82),
        Claim("Dogs purr when happy.", not worse, () if worse else ("d1",), 0.31),
    )
    return [
        AnswerAssessment("q1", "Cats purr and sleep all day.",
                         (Claim("Cats purr.", True, ("d1",), 0.91),
                          Claim("Cats sleep all day.", True, ("d1",), 0.77)),
                         addresses_question=True, judge=JUDGE, query="which animal purrs"),
        AnswerAssessment("q2", "Dogs bark at the postman. Dogs purr when happy." if worse
                         else "Dogs bark at the postman.", second if worse else second[:1],
                         addresses_question=True, judge=JUDGE, query="which animal barks"),
    ]
"""

TESTS = """
import os

import pytest

from answers_data import assessments


@pytest.mark.rag_threshold(recall_at_1=0.5)
def test_dense(rag_eval, rag_run):
    rag_eval.retrieval(rag_run, name="toy retriever")


def test_answers(rag_eval):
    rag_eval.answers(assessments(bool(os.environ.get("RAG_WORSE"))), name="toy judge")
"""


def make_reports(project: Path) -> None:
    write_dataset(project)
    (project / "pyproject.toml").write_text(
        "[tool.pytest.ini_options]\n"
        'ragmetrics_dataset = "data"\n'
        'ragmetrics_metrics = "ndcg_at_10 recall_at_1 mrr"\n'
    )
    (project / "conftest.py").write_text(textwrap.dedent(CONFTEST))
    (project / "answers_data.py").write_text(ANSWERS)
    (project / "test_rag.py").write_text(TESTS)
    env = {k: v for k, v in os.environ.items() if k != "RAG_WORSE"}
    pytest = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    subprocess.run(
        [*pytest, "--ragmetrics-update-baseline", "--ragmetrics-json=baseline-run.json"],
        cwd=project,
        env=env,
        check=True,
        capture_output=True,
    )
    worse = subprocess.run(
        [*pytest, "--ragmetrics-json=report.json"],
        cwd=project,
        env={**env, "RAG_WORSE": "1"},
        capture_output=True,
        text=True,
    )
    if worse.returncode != 1:
        raise SystemExit(f"the worse run should fail:\n{worse.stdout}\n{worse.stderr}")
    (project / "terminal.txt").write_text(worse.stdout)


def fill_details(project: Path) -> dict[str, object]:
    """What the integrator's --ragmetrics-html will do: the optional per-query fields."""
    import importlib.util

    from pytest_ragmetrics import Run, load_dataset
    from pytest_ragmetrics.baseline.compare import load_evaluations
    from pytest_ragmetrics.report.query_records import add_query_details

    def module(name: str) -> object:
        spec = importlib.util.spec_from_file_location(name, project / f"{name}.py")
        assert spec is not None and spec.loader is not None
        loaded = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(loaded)
        return loaded

    conftest, answers = module("conftest"), module("answers_data")
    document = json.loads((project / "report.json").read_text())
    baseline = load_evaluations(project / ".ragmetrics" / "baseline.json")
    dataset = load_dataset(project / "data", "test")
    for entry in document["evaluations"]:
        entry_baseline = baseline.get((entry["test"], entry["name"]))
        if entry["layer"] == "retrieval":
            add_query_details(
                entry,
                baseline_entry=entry_baseline,
                run=Run.from_rankings(conftest.WORSE),  # type: ignore[attr-defined]
                baseline_run=Run.from_rankings(conftest.GOOD),  # type: ignore[attr-defined]
                dataset=dataset,
            )
        else:
            add_query_details(
                entry,
                baseline_entry=entry_baseline,
                assessments=answers.assessments(True),  # type: ignore[attr-defined]
                baseline_assessments=answers.assessments(False),  # type: ignore[attr-defined]
            )
    return document


def screenshot(page: Path, target: Path, height: int) -> None:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/bin/chromium"
    with tempfile.TemporaryDirectory() as profile:
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--hide-scrollbars",
            "--force-device-scale-factor=1",
            f"--user-data-dir={profile}",
            f"--window-size=1100,{height}",
        ):
            options.add_argument(flag)
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            driver.execute_cdp_cmd(
                "Emulation.setDeviceMetricsOverride",
                {"width": 1100, "height": height, "deviceScaleFactor": 1, "mobile": False},
            )
            driver.get(page.as_uri())
            driver.save_screenshot(str(target))
        finally:
            driver.quit()
    try:  # a palette PNG is a fraction of the size and looks the same for flat colours
        from PIL import Image

        Image.open(target).convert("RGB").quantize(colors=128).save(target, optimize=True)
    except ImportError:
        pass


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "html-report.png"))
    parser.add_argument("--height", type=int, default=1500, help="screenshot height in pixels")
    parser.add_argument("--keep", metavar="DIR", help="make the project here and keep it")
    args = parser.parse_args()
    from pytest_ragmetrics.fileio import atomic_write_text
    from pytest_ragmetrics.report.html import html_report, report_page

    with tempfile.TemporaryDirectory() as folder:
        project = Path(args.keep or folder)
        project.mkdir(parents=True, exist_ok=True)
        make_reports(project)
        page = project / "report.html"
        atomic_write_text(page, html_report(report_page(fill_details(project), page)))
        screenshot(page, Path(args.out), args.height)
    print(f"wrote {args.out} ({Path(args.out).stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
