"""The HTML report at scale: 10,000 queries x 20 evaluations.

Builds a synthetic JSON report the way the plugin would: a 50,000-document corpus with titles,
10,000 queries with 1-3 graded relevant documents each, and for each of 18 retrieval
evaluations a baseline run and a current run (top 100; about a third of the queries move, more
of them down than up in some evaluations), evaluated with the real engine and compared with the
real paired statistics (1,000 resamples instead of 10,000, to keep the set-up short); plus 2
answer evaluations of 10,000 judged answers each. The optional
per-query fields are filled by ``add_query_details`` (baseline per-query values; records for the
worst queries). Then it measures:

- the JSON report's size and ``add_query_details``' time,
- reading it back as the page's typed records (``report_page``: every field checked, then
  ``Checked.from_dict``), as ``ragmetrics report`` does,
- ``html_report``'s build time (best of 3: the Jinja2 templates drawing the page) and the
  page's size,
- with /usr/bin/chromium and /usr/bin/chromedriver present: the page's load time from
  ``file://`` in headless Chromium (navigation start to the end of the load event, and to the
  first frame painted after it; median of 5 fresh loads), its console errors and the requests
  it attempted other than the page itself (both must be none).

Targets: page under 5 MB, opens in under a second.

Run: .venv/bin/python benchmarks/bench_html.py            (about a minute)
     .venv/bin/python benchmarks/bench_html.py --keep DIR  (also keeps report.json and the page)
     .venv/bin/python benchmarks/bench_html.py --report DIR/report.json  (draws a kept report)
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pytest_ragmetrics import Corpus, Dataset, Qrels, Queries, Run, evaluate, evaluate_answers
from pytest_ragmetrics.baseline.compare import compare_to_baseline
from pytest_ragmetrics.baseline.tolerances import parse_tolerances
from pytest_ragmetrics.data.assessments import AnswerAssessment, Claim
from pytest_ragmetrics.records import EvaluationRecord
from pytest_ragmetrics.report.html import html_report, report_page
from pytest_ragmetrics.report.json_report import build_report
from pytest_ragmetrics.report.outcome import (
    Checked,
    EvaluationOutcome,
    SessionOutcome,
    ThresholdResult,
)
from pytest_ragmetrics.report.query_records import add_query_details

METRICS = ["ndcg_at_10", "recall_at_100", "map_at_100", "mrr_at_10"]
OPTIONAL = ("baseline_per_query", "baseline_details", "queries")  # the page's own fields
DEPTH = 100


def dataset(rng: np.random.Generator, n_docs: int, n_queries: int) -> Dataset:
    doc_ids = [f"doc{i}" for i in range(n_docs)]
    titles = [f"Document {i} about topic {i % 997}" for i in range(n_docs)]
    texts = [f"Text of document {i}." for i in range(n_docs)]
    query_ids = [f"q{i}" for i in range(n_queries)]
    query_texts = [f"what is known about topic {i % 997}, variant {i}" for i in range(n_queries)]
    judgments: dict[str, dict[str, int]] = {}
    for qid in query_ids:
        picked = rng.choice(n_docs, size=int(rng.integers(1, 4)) + 2, replace=False)
        grades = [int(rng.integers(1, 3)) for _ in picked[:-2]] + [0, 0]
        judgments[qid] = {doc_ids[d]: g for d, g in zip(picked, grades, strict=True)}
    return Dataset(
        Corpus(doc_ids, titles, texts),
        Queries(query_ids, query_texts),
        Qrels.from_dict(judgments),
        name="synthetic",
    )


def run_pair(
    rng: np.random.Generator, data: Dataset, worse_share: float, better_share: float
) -> tuple[Run, Run]:
    """A baseline run and a current one in which some queries' relevant documents moved."""
    n_docs, query_ids = len(data.corpus), list(data.queries)
    position = data.corpus.position
    n = len(query_ids)
    base = rng.integers(0, n_docs, size=(n, DEPTH))
    current = base.copy()
    move = rng.random(n)
    for i, qid in enumerate(query_ids):
        relevant = [position[d] for d, g in data.qrels.judgments(qid).items() if g > 0]
        ranks = rng.choice(20, size=len(relevant), replace=False)
        row = base[i]
        row[np.isin(row, relevant)] = (row[np.isin(row, relevant)] + 1) % n_docs
        for doc, rank in zip(relevant, ranks, strict=True):
            row[rank] = doc
        cur = row.copy()
        if move[i] < worse_share:  # the relevant documents fall to ranks 21-60
            for rank in ranks:
                new = int(rng.integers(20, 60))
                cur[[rank, new]] = cur[[new, rank]]
        elif move[i] < worse_share + better_share:
            order = np.argsort(~np.isin(cur[:20], relevant), kind="stable")
            cur[:20] = cur[:20][order]
        current[i] = cur
    for matrix in (base, current):
        for i in range(n):  # make each row's ids unique (random draws may repeat)
            _, first = np.unique(matrix[i], return_index=True)
            dup = np.setdiff1d(np.arange(DEPTH), first)
            matrix[i, dup] = -1
    scores = np.tile(np.arange(DEPTH, 0, -1, dtype=np.float64), (n, 1))
    ids = np.asarray(data.corpus.doc_ids)
    return (
        Run.from_arrays(query_ids, base, scores, ids),
        Run.from_arrays(query_ids, current, scores, ids),
    )


def assessments(rng: np.random.Generator, data: Dataset, p: float) -> list[AnswerAssessment]:
    judge = {"name": "synthetic-judge", "model": "m", "rubric": "r", "rubric_sha256": "x"}
    out = []
    for qid, text in data.queries.items():
        claims = tuple(
            Claim(f"Claim {j} of the answer to {qid}.", bool(rng.random() < p), (f"c{j}",), 0.5)
            for j in range(3)
        )
        out.append(
            AnswerAssessment(
                qid,
                f"An answer to '{text}' in three sentences.",
                claims,
                addresses_question=bool(rng.random() < p + 0.1),
                judge=judge,
                query=text,
            )
        )
    return out


def build_document(
    n_queries: int, n_docs: int, n_retrieval: int, n_answer: int
) -> tuple[dict[str, Any], float]:
    rng = np.random.default_rng(0)
    data = dataset(rng, n_docs, n_queries)
    tolerances = parse_tolerances(["0.01"])
    entries: list[Checked] = []
    details: dict[tuple[str, str], dict[str, Any]] = {}
    fingerprints = data.fingerprints
    info = {"name": data.name, "split": "test", "documents": n_docs, "queries": n_queries}
    for i in range(n_retrieval):
        # Every third evaluation regresses (many queries worse, few better); the rest move
        # both ways about equally.
        worse, better = (0.3, 0.05) if i % 3 == 0 else (0.08, 0.08)
        base_run, run = run_pair(rng, data, worse, better)
        records = []
        for r in (base_run, run):
            records.append(
                EvaluationRecord(
                    f"tests/test_retrieval.py::test_retriever[{i}]",
                    f"retriever-{i}",
                    evaluate(data.qrels, r, METRICS),
                    identity={"retriever": {"name": f"retriever-{i}", "model": "synthetic"}},
                    dataset={**info, "fingerprints": fingerprints},
                    k=DEPTH,
                    thresholds={"ndcg_at_10": 0.3},
                )
            )
        entries.append(finish(records, tolerances))
        details[records[1].key] = {
            "baseline_entry": records[0].to_dict(),
            "run": run,
            "baseline_run": base_run,
            "dataset": data,
        }
    for i in range(n_answer):
        entry, sources = answer_evaluation(rng, data, i, tolerances)
        entries.append(entry)
        details[entry.record.key] = sources
    settings = {"k": DEPTH, "metrics": METRICS, "tolerance": {"default": "0.01"}}
    document = build_report(
        SessionOutcome(entries, METRICS, settings=settings, plugin_version="0.1.0")
    )
    started = time.perf_counter()
    for evaluation in document["evaluations"]:
        add_query_details(evaluation, **details[(evaluation["test"], evaluation["name"])])
    detail_seconds = time.perf_counter() - started
    return document, detail_seconds


def answer_evaluation(
    rng: np.random.Generator, data: Dataset, i: int, tolerances: Any
) -> tuple[Checked, dict[str, Any]]:
    """The ``i``-th answer evaluation (the first one worse) and what its details come from."""
    before = assessments(rng, data, 0.8)
    after = assessments(rng, data, 0.7 if i == 0 else 0.8)
    records = [
        EvaluationRecord(
            f"tests/test_answers.py::test_answers[{i}]",
            f"answers-{i}",
            evaluate_answers(items),
            identity={"judge": dict(items[0].judge)},
        )
        for items in (before, after)
    ]
    sources = {
        "baseline_entry": records[0].to_dict(),
        "assessments": after,
        "baseline_assessments": before,
    }
    return finish(records, tolerances), sources


def finish(records: list[EvaluationRecord], tolerances: Any) -> Checked:
    """The current evaluation with its outcome against the baseline one."""
    baseline, current = records
    verdict = compare_to_baseline(current, baseline.to_dict(), tolerances)
    value = current.evaluation.mean.get("ndcg_at_10")
    results: tuple[ThresholdResult, ...] = ()
    if value is not None and "ndcg_at_10" in current.thresholds:
        results = (ThresholdResult.check("ndcg_at_10", value, current.thresholds["ndcg_at_10"]),)
    return Checked(current, EvaluationOutcome(results, verdict))


def made_report(args: argparse.Namespace) -> tuple[dict[str, Any], str]:
    """The report to draw (``--report``, or a synthetic one made here) and, when made here,
    its JSON text."""
    if args.report:
        started = time.perf_counter()
        document = json.loads(Path(args.report).read_text(encoding="utf-8"))
        print(f"report {args.report}: read in {time.perf_counter() - started:.1f} s")
        return document, ""
    fast_statistics()
    started = time.perf_counter()
    document, detail_seconds = build_document(args.queries, args.docs, args.retrieval, args.answers)
    report_json = json.dumps(document, indent=2, sort_keys=True)
    n_eval = len(document["evaluations"])
    print(
        f"synthetic report: {args.queries:,} queries x {n_eval} evaluations "
        f"({args.retrieval} retrieval with {len(METRICS)} metrics, {args.answers} answer); "
        f"made in {time.perf_counter() - started:.1f} s"
    )
    plain = {
        **document,
        "evaluations": [
            {k: v for k, v in e.items() if k not in OPTIONAL} for e in document["evaluations"]
        ],
    }
    full_size = len(report_json.encode())
    optional = full_size - len(json.dumps(plain, indent=2, sort_keys=True).encode())
    print(
        f"JSON report: {full_size / 1e6:.1f} MB, of which the optional {', '.join(OPTIONAL)} "
        f"fields {optional / 1e6:.1f} MB"
    )
    print(f"add_query_details, all evaluations: {detail_seconds:.2f} s")
    return document, report_json


def browser_load(page: Path, rounds: int) -> dict[str, Any] | None:
    """Load times of ``page`` in headless Chromium, or None without a browser."""
    if not (Path("/usr/bin/chromium").exists() and Path("/usr/bin/chromedriver").exists()):
        return None
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    loads, painted, errors, requests = [], [], [], set()
    for _ in range(rounds):
        profile = tempfile.mkdtemp(prefix="bench-html-")
        options = webdriver.ChromeOptions()
        options.binary_location = "/usr/bin/chromium"
        for flag in (
            "--headless=new",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-dev-shm-usage",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            f"--user-data-dir={profile}",
            "--window-size=1280,900",
        ):
            options.add_argument(flag)
        options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
        driver = webdriver.Chrome(service=Service("/usr/bin/chromedriver"), options=options)
        try:
            # The browser opens its own new-tab page first: leave it, then forget its requests.
            driver.get("about:blank")
            driver.get_log("performance")
            driver.get(page.as_uri())
            timing = driver.execute_async_script(
                "var done = arguments[0];"
                "requestAnimationFrame(function(){ requestAnimationFrame(function(){"
                "var t = performance.getEntriesByType('navigation')[0];"
                "done({load: t.loadEventEnd, painted: performance.now()}); }); });"
            )
            loads.append(timing["load"])
            painted.append(timing["painted"])
            errors += [e["message"] for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            for entry in driver.get_log("performance"):
                message = json.loads(entry["message"])["message"]
                if message["method"] == "Network.requestWillBeSent":
                    url = message["params"]["request"]["url"]
                    if url != page.as_uri():
                        requests.add(url)
        finally:
            driver.quit()
            shutil.rmtree(profile, ignore_errors=True)
    return {
        "load_ms": statistics.median(loads),
        "painted_ms": statistics.median(painted),
        "errors": errors,
        "requests": sorted(requests),
    }


def fast_statistics() -> None:
    """The comparison's CI and p-value with 1,000 resamples instead of 10,000: the set-up's
    paired statistics on 10,000 queries would otherwise take minutes, and the page does not
    depend on how precise they are."""
    import functools

    import pytest_ragmetrics.baseline.compare as regression
    from pytest_ragmetrics.stats import compare_paired

    regression.compare_paired = functools.partial(compare_paired, resamples=1000)  # type: ignore[assignment]


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--docs", type=int, default=50_000)
    parser.add_argument("--retrieval", type=int, default=18)
    parser.add_argument("--answers", type=int, default=2)
    parser.add_argument("--worst", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5, help="browser loads (median)")
    parser.add_argument("--keep", metavar="DIR", help="also write report.json and report.html here")
    parser.add_argument("--report", metavar="JSON", help="draw this report instead of making one")
    args = parser.parse_args()

    document, report_json = made_report(args)
    started = time.perf_counter()
    page_input = report_page(document, args.report or "the synthetic report")
    print(f"read back as typed records (checked): {time.perf_counter() - started:.2f} s")
    builds = []
    page = ""
    for _ in range(3):
        t0 = time.perf_counter()
        page = html_report(page_input, worst=args.worst)
        builds.append(time.perf_counter() - t0)
    size = len(page.encode("utf-8"))
    print(f"html_report: {min(builds):.2f} s (best of 3; worst={args.worst})")
    print(f"page: {size / 1e6:.2f} MB ({size:,} bytes; target < 5 MB)")
    print(
        f"page elements: {page.count('<rect'):,} SVG rects, {page.count('<tr'):,} table rows, "
        f"{page.count('<details'):,} details"
    )
    with tempfile.TemporaryDirectory() as folder:
        target = Path(args.keep or folder)
        target.mkdir(parents=True, exist_ok=True)
        (target / "report.html").write_text(page, encoding="utf-8")
        if args.keep and report_json:
            (target / "report.json").write_text(report_json, encoding="utf-8")
        measured = browser_load(target / "report.html", args.rounds)
    if measured is None:
        print("browser: /usr/bin/chromium or /usr/bin/chromedriver not found; load time skipped")
        return
    print(
        f"browser (headless Chromium, file://, median of {args.rounds}): load event end "
        f"{measured['load_ms']:.0f} ms, first frame after it {measured['painted_ms']:.0f} ms "
        "(target < 1000 ms)"
    )
    print(
        f"console errors: {len(measured['errors'])}; requests other than the page: "
        f"{len(measured['requests'])}"
    )
    if measured["errors"] or measured["requests"]:
        print(measured["errors"], measured["requests"])
        sys.exit(1)


if __name__ == "__main__":
    main()
