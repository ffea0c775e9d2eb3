"""``ragmetrics report``: a JSON report drawn as one self-contained HTML page; the page
helpers ``compare --format html`` shares."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any, TextIO

from pytest_ragmetrics.cli.common import Subparsers, refuse_overwriting, require_positive
from pytest_ragmetrics.cli.flags import SETTING, add, setting_default
from pytest_ragmetrics.cli.output import write_document


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
    from pytest_ragmetrics.baseline.compare import load_evaluations
    from pytest_ragmetrics.fileio import atomic_write_text

    require_positive(args, "worst")
    refuse_overwriting(args.html, "--html", files={"REPORT.json": args.report})
    evaluations = load_evaluations(Path(args.report))
    document = {**report_header(Path(args.report)), "evaluations": list(evaluations.values())}
    page = html_of(document, args.report, worst=args.worst)
    atomic_write_text(args.html, page)
    size = len(page.encode("utf-8"))
    out.write(f"{len(evaluations)} evaluations; wrote {args.html} ({size:,} bytes)\n")
    return 0


def write_page(
    args: argparse.Namespace, out: TextIO, document: dict[str, Any], path: str, summary: str
) -> None:
    """``--format html``: the page on stdout, or in --out with a one-line summary."""
    page = html_of(document, path, worst=args.worst or setting_default("--worst"))
    if args.out is None:
        write_document(out, page)
    else:
        from pytest_ragmetrics.fileio import atomic_write_text

        atomic_write_text(args.out, page)
        out.write(f"{summary}; wrote {args.out}\n")


def html_of(document: dict[str, Any], path: str, *, worst: int) -> str:
    """The page of ``document``; an error names the report it came from."""
    from pytest_ragmetrics.errors import BaselineError
    from pytest_ragmetrics.report.html import html_report

    try:
        return html_report(document, worst=worst)
    except BaselineError as exc:
        raise BaselineError(f"{path}: {exc}") from None


def report_header(path: Any) -> dict[str, Any]:
    """plugin_version, created and settings of a JSON report ({} for a baseline file)."""
    from pytest_ragmetrics.errors import BaselineError
    from pytest_ragmetrics.fileio import read_json_file

    data = read_json_file(path, error=BaselineError)
    if not isinstance(data, dict) or "evaluations" not in data:
        return {}
    return {k: data[k] for k in ("plugin_version", "created", "settings") if k in data}
