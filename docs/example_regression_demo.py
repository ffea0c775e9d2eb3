"""Make the README's screenshot of the example suite's regression demo.

Runs the demo exactly as the README shows it (``RAGMETRICS_EXAMPLE_REGRESSION=1 pytest
example_suite -k dense --ragmetrics-html=...``: the dense retriever searches the top 5 instead of
the top 100 and fails against the committed baseline on SciFact and Cranfield), then opens the
page the plugin wrote in headless Chromium and saves a screenshot.

Run from the repository root after the main job (a warm cache makes the demo take seconds;
needs /usr/bin/chromium, /usr/bin/chromedriver and selenium):

    .venv/bin/python docs/example_regression_demo.py    # writes docs/example-regression.png
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "docs"))

from html_report_demo import screenshot  # noqa: E402


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "example-regression.png"))
    parser.add_argument("--height", type=int, default=1500, help="screenshot height in pixels")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        page = Path(folder) / "regression.html"
        result = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-k", "dense", f"--ragmetrics-html={page}"],
            cwd=ROOT / "example_suite",
            env={**os.environ, "RAGMETRICS_EXAMPLE_REGRESSION": "1", "HF_HUB_OFFLINE": "1"},
            capture_output=True,
            text=True,
            check=False,
        )
        if result.returncode != 1 or not page.is_file():
            sys.exit(f"the demo should fail with a page written:\n{result.stdout[-3000:]}")
        screenshot(page, Path(args.out), args.height)
        size = page.stat().st_size
    print(f"wrote {args.out} ({Path(args.out).stat().st_size:,} bytes; the page: {size:,} bytes)")


if __name__ == "__main__":
    main()
