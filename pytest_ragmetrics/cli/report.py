"""``ragmetrics report``: a JSON report drawn as one self-contained HTML page; the page
helpers ``compare --format html`` shares."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO

from pytest_ragmetrics.cli.common import Subparsers, refuse_overwriting, require_positive
from pytest_ragmetrics.cli.flags import SETTING, add, setting_default
from pytest_ragmetrics.cli.output import write_document

if TYPE_CHECKING:
    from pytest_ragmetrics.report.html import ReportPage


def add_parser(sub: Subparsers) -> None:
    p = sub.add_parser(
        "report",
        help="draw a JSON report as one self-contained HTML page",
        description="Build the HTML report of a JSON report (--ragmetrics-json): per layer a "
        "summary of evaluations x metrics with baseline, delta, CI and status; per metric a "
        "per-query delta chart and a histogram; the most regressed queries in detail. One file "
        "with no external resource: open it from disk or upload it as a CI artifact.",
    )
    add(p, "report", "JSON report (or a baseline file)")
    add(p, "--html", "the page to write", required=True)
    add(p, "--worst", "queries shown in detail per metric (default 10)", default=SETTING)
    p.set_defaults(handler=run)


def run(args: argparse.Namespace, out: TextIO) -> int:
    from pytest_ragmetrics.fileio import atomic_write_text
    from pytest_ragmetrics.report.html import html_report, read_report_page

    require_positive(args, "worst")
    refuse_overwriting(args.html, "--html", kind="html", files={"REPORT.json": args.report})
    page = read_report_page(Path(args.report))
    text = html_report(page, worst=args.worst)
    atomic_write_text(args.html, text)
    size = len(text.encode("utf-8"))
    out.write(f"{len(page.evaluations)} evaluations; wrote {args.html} ({size:,} bytes)\n")
    return 0


def write_page(
    args: argparse.Namespace, out: TextIO, page: ReportPage, path: str, summary: str
) -> None:
    """``--format html``: the page on stdout, or in --out with a one-line summary."""
    from pytest_ragmetrics.report.html import html_report

    text = html_report(page, worst=args.worst or setting_default("--worst"))
    if args.out is None:
        write_document(out, text)
    else:
        from pytest_ragmetrics.fileio import atomic_write_text

        atomic_write_text(args.out, text)
        out.write(f"{summary}; wrote {args.out}\n")


def report_header(path: Any) -> dict[str, Any]:
    """plugin_version, created and settings of a JSON report ({} for a baseline file)."""
    from pytest_ragmetrics.errors import ReportError
    from pytest_ragmetrics.fileio import read_json_file

    data = read_json_file(path, error=ReportError)
    if not isinstance(data, dict) or "evaluations" not in data:
        return {}
    return {k: data[k] for k in ("plugin_version", "created", "settings") if k in data}
