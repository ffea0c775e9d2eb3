"""The HTML report: one self-contained page per run, drawn from Jinja2 templates.

``html_report(page)`` draws a :class:`~pytest_ragmetrics.report.html.page.ReportPage`: the
checked evaluations (:class:`~pytest_ragmetrics.report.outcome.Checked`, the records every
report renders) of a session (:meth:`ReportPage.of_outcome`, what ``--ragmetrics-html``
writes), of a JSON report or baseline file (:func:`read_report_page`, ``ragmetrics report``;
a malformed one is a ReportError naming the file and the field), or of a comparison
(:func:`comparison_page`, :func:`systems_page`: ``ragmetrics compare --format html``).

The page has no external resource: inline CSS, inline SVG charts and a few lines of inline
JavaScript (table sorting, opening every section before printing), locked down by a
Content-Security-Policy that allows nothing else, so it opens from ``file://`` or as a CI
artifact and never touches the network. Per layer (retrieval, answers), kept apart, it shows:

- the problems in words (what regressed, fell below a threshold or is not comparable, with Δ,
  CI, p and queries worse), then a matrix of evaluations x metrics (value, Δ, the 95%
  bootstrap CI of Δ drawn against zero, threshold) and every number in a sortable table
  (current, baseline, Δ, CI, p-value, queries worse/unchanged/better, tolerance, threshold,
  status);
- per evaluation: identity (retriever or judge, dataset and fingerprints, k, semantics), notes
  (configuration changes, κ gate, not-comparable reasons, the evaluation's notes), and per
  metric a chart of per-query Δ (queries sorted by Δ; binned when there are more than
  ``max_bars``) and a histogram of per-query values now vs the baseline, each with a table of
  its numbers;
- the ``worst`` most regressed (and improved) queries per metric with the first relevant
  document's rank before → now, each with a card: the ranking before and now (relevant
  documents highlighted, unjudged marked, rank moves) or, when the baseline's ranking was not
  recorded, what the baseline's per-query data says; for answers the answer now and before
  with the claims, verdicts and evidence.

The drill-down reads optional per-query fields of an evaluation (its record's
``report_fields``; in the JSON report, fields of the evaluation; filled by
:func:`pytest_ragmetrics.report.query_records.add_query_details`; the page says what is
missing and draws what it can without them)::

    "baseline_per_query": {query_id: {metric: value | null}}   # the baseline's per-query values
    "baseline_details": {name: {query_id: int}}   # its per-query details (first_relevant_rank)
    "queries": {query_id: {
        "text": str,                                     # the query (or question)
        # retrieval evaluations:
        "ranking": [[doc_id, score, grade | null], ...],          # top of this run, best first;
        "baseline_ranking": [[doc_id, score, grade | null], ...], # grade null = unjudged
        "relevant": {doc_id: grade},                     # judged relevant (grade ≥ level)
        "titles": {doc_id: title},
        # answer evaluations:
        "answer": str, "baseline_answer": str,
        "claims": [{"text": str, "supported": bool | null, "evidence": [context_id],
                    "score": number | null}],
        "baseline_claims": [...same...]
    }}
"""

from __future__ import annotations

from pytest_ragmetrics.errors import ConfigError
from pytest_ragmetrics.report.html.page import (
    Compared,
    ReportPage,
    comparison_page,
    read_report_page,
    report_page,
    systems_page,
)
from pytest_ragmetrics.values import positive_int

DEFAULT_WORST = 10
DEFAULT_MAX_BARS = 100

__all__ = [
    "DEFAULT_MAX_BARS",
    "DEFAULT_WORST",
    "Compared",
    "ReportPage",
    "comparison_page",
    "html_report",
    "read_report_page",
    "report_page",
    "systems_page",
]


def html_report(
    page: ReportPage, *, worst: int = DEFAULT_WORST, max_bars: int = DEFAULT_MAX_BARS
) -> str:
    """The HTML page of ``page`` (see the module docstring).

    ``worst``: queries shown in detail per metric; ``max_bars``: the most bars a per-query Δ
    chart draws (more queries are grouped).
    """
    from pytest_ragmetrics.report.html.render import render
    from pytest_ragmetrics.report.html.view import page_view

    positive_int(worst, "worst (the queries shown in detail per metric)")
    if isinstance(max_bars, bool) or not isinstance(max_bars, int) or max_bars < 10:
        raise ConfigError(f"max_bars={max_bars!r}: give an integer of at least 10")
    return render("page.html.j2", view=page_view(page, worst=worst, max_bars=max_bars))
