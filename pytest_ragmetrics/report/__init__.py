"""Reports: terminal tables, JSON and Markdown; retrieval and answer layers kept apart."""

from pytest_ragmetrics.report.json_report import REPORT_SCHEMA, REPORT_VERSION, build_report
from pytest_ragmetrics.report.markdown import markdown_report
from pytest_ragmetrics.report.terminal import summary_lines

__all__ = ["REPORT_SCHEMA", "REPORT_VERSION", "build_report", "markdown_report", "summary_lines"]
