"""JSON report documents for the HTML report's tests, built with the real engine.

``hostile_document()`` is a small report with both layers whose test names, query ids, query
texts, document ids, titles and answers carry markup, quotes, script, URLs and right-to-left
overrides; its retrieval evaluation regressed, with per-query records filled by
``add_query_details``. ``wide_document(n)`` has one evaluation of ``n`` queries whose per-query
values move in known proportions (for binning).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from pytest_ragmetrics import AnswerAssessment, Claim, Corpus, Qrels, Queries, Run, evaluate
from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import parse_tolerances
from pytest_ragmetrics.metrics.answer import evaluate_answers
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.report.json_report import build_report
from pytest_ragmetrics.report.outcome import (
    Checked,
    EvaluationOutcome,
    SessionOutcome,
    ThresholdResult,
)
from pytest_ragmetrics.report.query_records import add_query_details

# Each would set window.__pwned if it ever ran as markup.
HOSTILE_TEST = "tests/test_x.py::test_<script>window.__pwned=1</script>[\"'q]"
HOSTILE_NAME = "dense <i>italic</i> & co"
QID_EVIL = 'q"><img src=x onerror="window.__pwned=2">'
QID_RTL = "q\u202eevil\u202c-rtl"
QUERY_TEXT = (
    "what about <b>bold</b> & \"quotes\" 'single' \u202eRTL override and "
    "</style><script>window.__pwned=3</script> see https://evil.example/track.png"
)
DOC_EVIL = "d<svg onload=window.__pwned=4>"
TITLE_EVIL = "Title </title><script>window.__pwned=5</script>"
ANSWER_EVIL = "The answer <iframe src=https://evil.example/></iframe> is 42."
HOSTILE_STRINGS = [
    HOSTILE_TEST,
    HOSTILE_NAME,
    QID_EVIL,
    QID_RTL,
    QUERY_TEXT,
    DOC_EVIL,
    TITLE_EVIL,
    ANSWER_EVIL,
]
METRICS = ["ndcg_at_10", "recall_at_1", "mrr"]

QRELS = {
    QID_EVIL: {DOC_EVIL: 2, "d2": 1},
    QID_RTL: {"d3": 1},
    "q3": {"d4": 1, "d5": 0},
    "q4": {"d5": 1},
    "q5": {"d1": 1},
    "q6": {"d2": 1},
}
QUERIES = {
    QID_EVIL: QUERY_TEXT,
    QID_RTL: "which animal sings",
    "q3": "which animal swims",
    "q4": "which animal gallops",
    "q5": "which animal purrs",
    "q6": "which animal barks",
}
CORPUS = {
    DOC_EVIL: {"title": TITLE_EVIL, "text": "Evil document."},
    "d1": {"title": "Cats", "text": "Cats purr."},
    "d2": {"title": "", "text": "Dogs bark at the postman every single morning."},
    "d3": {"title": "Birds", "text": "Birds sing."},
    "d4": {"title": "Fish", "text": "Fish swim."},
    "d5": {"title": "Horses", "text": "Horses gallop."},
    "d6": {"title": "Cows", "text": "Cows moo."},
}
BASELINE_RUN = {
    QID_EVIL: [DOC_EVIL, "d2", "d6"],
    QID_RTL: ["d3", "d1", "d2"],
    "q3": ["d6", "d4", "d5"],
    "q4": ["d5", "d1", "d2"],
    "q5": ["d1", "d2", "d3"],
    "q6": ["d2", "d1", "d3"],
}
# q-evil: the grade-2 document falls from 1 to 3 (and an unjudged one comes in); q-rtl: its
# relevant document drops out of the ranking; q3 improves; q4-q6 are unchanged.
CURRENT_RUN = {
    QID_EVIL: ["d6", "d2", DOC_EVIL],
    QID_RTL: ["d1", "d2", "d6"],
    "q3": ["d4", "d6", "d5"],
    "q4": ["d5", "d1", "d2"],
    "q5": ["d1", "d2", "d3"],
    "q6": ["d2", "d1", "d3"],
}
JUDGE = {"name": "toy-judge", "model": "m", "rubric": "r", "rubric_sha256": "x", "parameters": {}}


def _assessments(worse: bool) -> list[AnswerAssessment]:
    return [
        AnswerAssessment(
            QID_EVIL,
            ANSWER_EVIL if worse else "The answer is 42.",
            (
                Claim("The answer is 42.", True, ("ctx-1",), 0.91),
                Claim("It is <b>certain</b>.", not worse, ("ctx-2",) if not worse else (), 0.4),
                *((Claim("Maybe.", None),) if worse else ()),
            ),
            addresses_question=True,
            judge=JUDGE,
            query=QUERY_TEXT,
        ),
        AnswerAssessment(
            "q5",
            "Cats purr.",
            (Claim("Cats purr.", True, ("ctx-1",)),),
            addresses_question=True,
            judge=JUDGE,
            query=QUERIES["q5"],
        ),
    ]


def _compared(current: EvaluationRecord, baseline: EvaluationRecord) -> dict[str, Any]:
    """``current``'s report entry with its outcome against ``baseline`` (and thresholds)."""
    verdict = compare_to_baseline(current, baseline.to_dict(), parse_tolerances(["0.01"]))
    results = tuple(
        ThresholdResult.check(metric, current.evaluation.mean[metric], bound)
        for metric, bound in current.thresholds.items()
    )
    return Checked(current, EvaluationOutcome(results, verdict)).to_dict()


def _document(entries: list[dict[str, Any]], settings: dict[str, Any]) -> dict[str, Any]:
    """The report of these evaluation entries (which may carry the optional per-query fields
    the HTML page reads), as the plugin would write it."""
    outcome = SessionOutcome(
        [Checked.from_dict(e) for e in entries],
        settings.get("metrics", []),
        settings=settings,
        plugin_version="0.1.0",
    )
    document = build_report(outcome)
    document["evaluations"] = sorted(entries, key=lambda e: (e["test"], e["name"]))
    return document


def hostile_document(*, details: bool = True) -> dict[str, Any]:
    """A two-layer report full of hostile strings (see the module docstring)."""
    qrels = Qrels.from_dict(QRELS)
    corpus = Corpus.from_dict(CORPUS)
    queries = Queries.from_dict(QUERIES)
    recorded = []
    for table in (BASELINE_RUN, CURRENT_RUN):
        recorded.append(
            EvaluationRecord(
                HOSTILE_TEST,
                HOSTILE_NAME,
                evaluate(qrels, Run.from_rankings(table), METRICS),
                identity={"retriever": {"name": "toy <b>", "worse": table is CURRENT_RUN}},
                dataset={
                    "name": "toy",
                    "split": "test",
                    "documents": len(corpus),
                    "queries": len(queries),
                    "fingerprints": {"corpus": "c" * 64, "queries": "q" * 64, "qrels": "r" * 64},
                },
                k=3,
                thresholds={"recall_at_1": 0.7},
            )
        )
    retrieval = _compared(recorded[1], recorded[0])
    answers_before, answers_now = _assessments(False), _assessments(True)
    answer_records = [
        EvaluationRecord(
            "tests/test_answers.py::test_answers",
            "answers",
            evaluate_answers(items),
            identity={"judge": JUDGE},
        )
        for items in (answers_before, answers_now)
    ]
    answers = _compared(answer_records[1], answer_records[0])
    if details:
        add_query_details(
            retrieval,
            baseline_entry=recorded[0].to_dict(),
            run=Run.from_rankings(CURRENT_RUN),
            baseline_run=Run.from_rankings(BASELINE_RUN),
            qrels=qrels,
            queries=queries,
            corpus=corpus,
        )
        add_query_details(
            answers,
            baseline_entry=answer_records[0].to_dict(),
            assessments=answers_now,
            baseline_assessments=answers_before,
        )
    settings = {"k": 3, "metrics": METRICS, "tolerance": {"default": "0.01"}, "alpha": None}
    return _document([retrieval, answers], settings)


def wide_document(n: int, *, seed: int = 0) -> dict[str, Any]:
    """One retrieval evaluation of ``n`` queries: 30% worse, 50% unchanged, 20% better."""
    rng = np.random.default_rng(seed)
    before = rng.uniform(0.3, 0.7, n).round(6)
    kind = np.array(["worse"] * (3 * n // 10) + ["same"] * (n // 2))
    kind = np.concatenate([kind, ["better"] * (n - len(kind))])
    change = rng.uniform(0.05, 0.3, n).round(6)
    now = np.where(
        kind == "worse", before - change, np.where(kind == "better", before + change, before)
    )
    ids = [f"q{i:05d}" for i in range(n)]
    per_query = {q: {"ndcg_at_10": float(v)} for q, v in zip(ids, now, strict=True)}
    base = {q: {"ndcg_at_10": float(v)} for q, v in zip(ids, before, strict=True)}
    entry = {
        "test": "tests/test_wide.py::test_wide",
        "name": "wide",
        "layer": "retrieval",
        "identity": {},
        "dataset": None,
        "k": 10,
        "semantics": {"relevance_level": 1, "gain": "linear", "query_set": "qrels"},
        "metrics": {"ndcg_at_10": float(now.mean())},
        "num_queries": n,
        "per_query": per_query,
        "baseline_per_query": base,
        "details": {},
        "notes": [],
        "thresholds": {},
        "outcome": {"baseline": {"status": "regressed", "metrics": []}},
    }
    return _document([entry], {"metrics": ["ndcg_at_10"]})


def against_baseline_document(current: dict[str, list[str]]) -> dict[str, Any]:
    """A report of ``current`` against a baseline file made from ``BASELINE_RUN``, as the
    plugin writes it: the baseline keeps per-query values and details, never rankings."""
    qrels = Qrels.from_dict(QRELS)
    recorded = [
        EvaluationRecord(
            HOSTILE_TEST,
            HOSTILE_NAME,
            evaluate(qrels, Run.from_rankings(table), METRICS),
            identity={"retriever": {"name": "toy"}},
            k=3,
        )
        for table in (BASELINE_RUN, current)
    ]
    entry = _compared(recorded[1], recorded[0])
    add_query_details(
        entry,
        baseline_entry=recorded[0].baseline_entry("0.1.0"),
        run=Run.from_rankings(current),
        qrels=qrels,
        queries=Queries.from_dict(QUERIES),
        corpus=Corpus.from_dict(CORPUS),
    )
    return _document([entry], {"metrics": METRICS})


def run_document(table: dict[str, list[str]], *, test: str = HOSTILE_TEST) -> dict[str, Any]:
    """A report of one run of the hostile retrieval set-up, with no baseline (every query's
    record filled), as ``--ragmetrics-json`` would write it after a first run."""
    qrels = Qrels.from_dict(QRELS)
    recorded = EvaluationRecord(
        test,
        HOSTILE_NAME,
        evaluate(qrels, Run.from_rankings(table), METRICS),
        identity={"retriever": {"name": "toy <b>", "worse": table is CURRENT_RUN}},
        k=3,
    )
    entry = Checked(
        recorded, EvaluationOutcome.from_dict({"baseline": {"status": "new"}})
    ).to_dict()
    add_query_details(
        entry,
        run=Run.from_rankings(table),
        qrels=qrels,
        queries=Queries.from_dict(QUERIES),
        corpus=Corpus.from_dict(CORPUS),
    )
    return _document([entry], {"metrics": METRICS})


class ParsedPage:
    """A page read with the standard library's HTML parser: elements with their attributes
    and ancestors, text nodes with their ancestors, and the raw script and style text."""

    def __init__(self, page: str) -> None:
        from html.parser import HTMLParser

        self.source = page
        self.elements: list[tuple[str, dict[str, str | None], tuple[str, ...]]] = []
        self.texts: list[tuple[str, tuple[str, ...]]] = []
        self.scripts: list[str] = []
        self.styles: list[str] = []
        void = {"meta", "br", "wbr", "rect", "line", "circle", "input", "img", "link"}
        outer = self

        class Parser(HTMLParser):
            def __init__(self) -> None:
                super().__init__(convert_charrefs=True)
                self.stack: list[str] = []

            def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                outer.elements.append((tag, dict(attrs), tuple(self.stack)))
                if tag not in void:
                    self.stack.append(tag)

            def handle_startendtag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
                outer.elements.append((tag, dict(attrs), tuple(self.stack)))

            def handle_endtag(self, tag: str) -> None:
                if tag in void:
                    return
                assert self.stack and self.stack[-1] == tag, (tag, self.stack[-5:])
                self.stack.pop()

            def handle_data(self, data: str) -> None:
                if self.stack and self.stack[-1] == "script":
                    outer.scripts.append(data)
                elif self.stack and self.stack[-1] == "style":
                    outer.styles.append(data)
                else:
                    outer.texts.append((data, tuple(self.stack)))

        parser = Parser()
        parser.feed(page)
        parser.close()
        assert parser.stack == [], parser.stack

    @property
    def text(self) -> str:
        return "".join(t for t, _ in self.texts)

    def tags(self, name: str) -> list[dict[str, str | None]]:
        return [attrs for tag, attrs, _ in self.elements if tag == name]


def cell_texts(page: ParsedPage, table_class: str) -> list[list[str]]:
    """Row by row, the text of each top-level cell of the tables with ``table_class``."""
    html_rows: list[list[str]] = []
    depth_of_cell: int | None = None
    events = _events(page)
    table_open = 0
    for kind, tag, attrs, depth, text in events:
        if kind == "start" and tag == "table" and table_class in (attrs.get("class") or ""):
            table_open = depth
        if not table_open:
            continue
        if kind == "end" and tag == "table" and depth == table_open:
            table_open = 0
        elif kind == "start" and tag == "tr":
            html_rows.append([])
        elif kind == "start" and tag == "td" and depth_of_cell is None:
            depth_of_cell = depth
            html_rows[-1].append("")
        elif kind == "end" and tag == "td" and depth == depth_of_cell:
            depth_of_cell = None
        elif kind == "text" and depth_of_cell is not None:
            html_rows[-1][-1] += text
    return [[c.strip() for c in row] for row in html_rows if row]


def _events(page: ParsedPage) -> list[tuple[str, str, dict[str, Any], int, str]]:
    """The page as a flat event list, re-parsed (ParsedPage keeps no end tags)."""
    from html.parser import HTMLParser

    events: list[tuple[str, str, dict[str, Any], int, str]] = []
    void = {"meta", "br", "wbr", "rect", "line", "circle"}

    class Parser(HTMLParser):
        depth = 0

        def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
            if tag in void:
                return
            self.depth += 1
            events.append(("start", tag, dict(attrs), self.depth, ""))

        def handle_endtag(self, tag: str) -> None:
            if tag in void:
                return
            events.append(("end", tag, {}, self.depth, ""))
            self.depth -= 1

        def handle_data(self, data: str) -> None:
            events.append(("text", "", {}, self.depth, data))

    parser = Parser()
    parser.feed(page.source)
    return events
